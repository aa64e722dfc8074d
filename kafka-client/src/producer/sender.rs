//! The producer's background task: gets a producer id (and bumps its epoch when a sequence
//! error asks for it), expires batches past their delivery timeout, takes sendable batches
//! per leader — at most one per partition per request, as many as fit `max_request_size`, at
//! most `max_in_flight` requests per broker — seals them (header and CRC; compressed on a
//! blocking thread) and queues each request on its broker's connection in the order built, so
//! one partition's batches reach the broker in sequence order. Each answer is handled on its
//! own task, through the one retry decision ([`batch_recovery`]).

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::cluster::client::{retire_on_decode_error, Client};
use crate::cluster::retry::{batch_backoff, batch_recovery, BatchRecovery};
use crate::cluster::router::TopicPartition;
use crate::error::{BrokerRef, ClientError};
use crate::kafka_release::PRODUCE_RECORD_BATCHES;
use crate::producer::accumulator::{Batch, PartitionQueue};
use crate::producer::produce::{produce_request, topic_ids_of, topic_name, Acks, Produced};
use crate::producer::shared::{complete, fail, Shared, State};
use crate::sync::lock;
use kafka_wire::protocol::messages::{InitProducerIdRequest, ProduceRequest, ProduceResponse};
use kafka_wire::protocol::{ApiKey, ErrorCode, TaggedFields, Uuid};

/// How long the sender waits before asking again for metadata or a producer id that the
/// cluster could not give.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Batches for one broker, one per partition.
struct Request {
    broker: BrokerRef,
    node: i32,
    batches: Vec<(TopicPartition, Batch)>,
    /// The batches' bytes as counted against `max_request_size`.
    bytes: usize,
}

/// Runs until the producer is closed (or dropped) and everything it held is done.
pub(crate) async fn run(shared: Arc<Shared>) {
    loop {
        let mut pause = None;
        if shared.config.idempotence && !producer_id_ready(&shared).await {
            pause = Some(Instant::now() + RETRY_PAUSE);
        }
        if !crate::producer::transaction::sender_add_pending(&shared).await {
            pause = Some(Instant::now() + RETRY_PAUSE);
        }
        expire(&shared);
        let wants_refresh = std::mem::take(&mut lock(&shared.state).refresh_metadata);
        if wants_refresh {
            let topics: Vec<String> = {
                let state = lock(&shared.state);
                let mut topics: Vec<String> =
                    state.partitions.keys().map(|tp| tp.topic.to_string()).collect();
                topics.sort();
                topics.dedup();
                topics
            };
            if shared.client.refresh_metadata(&topics).await.is_err() {
                lock(&shared.state).refresh_metadata = true;
            }
        }
        let (requests, next_due, finished) = drain(&shared);
        if lock(&shared.state).refresh_metadata {
            // A leader is unknown: ask again soon, not in a tight loop.
            pause = Some(pause.unwrap_or_else(|| Instant::now() + RETRY_PAUSE));
        }
        for request in requests {
            send(&shared, request).await;
        }
        if finished {
            return;
        }
        let wake = shared.wake.notified();
        match [pause, next_due].into_iter().flatten().min() {
            Some(at) => {
                tokio::select! {
                    () = wake => {}
                    () = tokio::time::sleep_until(tokio::time::Instant::from_std(at)) => {}
                }
            }
            None => wake.await,
        }
    }
}

/// Makes sure a producer id is in hand (and the epoch bumped when asked, once nothing is in
/// flight); `false` when sending must wait.
async fn producer_id_ready(shared: &Arc<Shared>) -> bool {
    if shared.config.transactional_id.is_some() {
        return crate::producer::transaction::sender_may_send(shared);
    }
    let current = {
        let state = lock(&shared.state);
        let has_work = state.unfinished > 0;
        match (state.producer, state.bump_epoch) {
            (Some(_), false) => return true,
            (None, _) if !has_work => return true,
            (Some(p), true) => {
                if state.in_flight.values().any(|n| *n > 0) {
                    return false;
                }
                Some(p)
            }
            (None, _) => None,
        }
    };
    match init_producer_id(&shared.client, current).await {
        Ok(producer) => {
            let mut state = lock(&shared.state);
            for queue in state.partitions.values_mut() {
                queue.reset_sequences();
            }
            state.producer = Some(producer);
            state.bump_epoch = false;
            true
        }
        Err(e) if e.is_retriable() => false,
        Err(e) => {
            fail_everything(shared, e);
            false
        }
    }
}

/// Asks any broker for a producer id; with `current` (and InitProducerId v3+, Kafka 2.5) the
/// same id with the next epoch (KIP-360), else a new id.
async fn init_producer_id(client: &Client, current: Option<(i64, i16)>) -> Result<(i64, i16), ClientError> {
    let (_, response) = client
        .send_any_built(|version| InitProducerIdRequest {
            transactional_id: None,
            transaction_timeout_ms: i32::MAX,
            producer_id: (version >= 3).then(|| current.map_or(-1, |c| c.0)),
            producer_epoch: (version >= 3).then(|| current.map_or(-1, |c| c.1)),
            tagged_fields: TaggedFields::default(),
        })
        .await?;
    if !response.error_code.is_ok() {
        return Err(ClientError::Kafka {
            broker: BrokerRef { node_id: None, addr: "cluster".to_owned() },
            api: ApiKey::INIT_PRODUCER_ID,
            code: response.error_code,
            context: String::new(),
        });
    }
    Ok((response.producer_id, response.producer_epoch))
}

/// Fails every buffered batch with `error` and stops the producer taking records.
fn fail_everything(shared: &Shared, error: ClientError) {
    let mut state = lock(&shared.state);
    let batches: Vec<Batch> = state.partitions.values_mut().flat_map(PartitionQueue::take_all).collect();
    for batch in batches {
        complete(shared, &mut state, batch, Err(error.clone()));
    }
    state.fatal = Some(error);
}

/// Fails the batches whose delivery timeout passed while they waited.
fn expire(shared: &Shared) {
    let now = Instant::now();
    let mut state = lock(&shared.state);
    let mut expired = Vec::new();
    for (tp, queue) in &mut state.partitions {
        for batch in queue.expire(now, shared.config.delivery_timeout) {
            expired.push((tp.clone(), batch));
        }
    }
    for (tp, batch) in expired {
        let error = ClientError::DeadlineExceeded {
            what: format!("producing to {tp}"),
            last_error: Box::new(ClientError::InvalidArgument {
                message: format!(
                    "not delivered within delivery_timeout ({} ms)",
                    shared.config.delivery_timeout.as_millis()
                ),
            }),
        };
        fail(shared, &mut state, batch, error);
    }
}

/// Takes what can be sent now; returns the requests, when to look again, and whether the
/// producer is closed with nothing left.
fn drain(shared: &Shared) -> (Vec<Request>, Option<Instant>, bool) {
    let config = &shared.config;
    let metadata = shared.client.cached_metadata();
    let now = Instant::now();
    let mut state = lock(&shared.state);
    if state.closed && state.unfinished == 0 {
        return (Vec::new(), None, true);
    }
    let producer = if config.idempotence {
        match (state.producer, state.bump_epoch) {
            (Some(p), false) => Some(p),
            _ => return (Vec::new(), None, false),
        }
    } else {
        None
    };
    let drain_all = state.flushing > 0 || state.closed;
    let State { partitions, in_flight, refresh_metadata, txn_added, drain_start, .. } = &mut *state;
    let transactional = config.transactional_id.is_some();
    let mut took_transactional = false;
    let mut next_due: Option<Instant> = None;
    let mut by_node: BTreeMap<i32, Request> = BTreeMap::new();
    let mut consider = |tp: &TopicPartition, queue: &mut PartitionQueue| {
        if transactional && !txn_added.contains(tp) {
            // Sent once the transaction has it (AddPartitionsToTxn, see `transaction.rs`).
            return;
        }
        if !queue.sendable(now, config.linger, drain_all) {
            if let Some(due) = queue.next_due(config.linger) {
                next_due = Some(next_due.map_or(due, |d| d.min(due)));
            }
            return;
        }
        // One batch at a time while a retry is being resolved, and — for an idempotent
        // producer — until the broker has acknowledged one of this partition's batches under
        // the current producer id and epoch: a broker without state for the producer accepts
        // any first sequence, so a batch sent behind one that fails (NOT_LEADER_OR_FOLLOWER)
        // could be written first, and the failed one, sent again, would be refused as out of
        // order after the later one was acknowledged (or taken as written: lost).
        let held = if queue.retrying || (producer.is_some() && !queue.has_acknowledged()) {
            1
        } else {
            config.max_in_flight
        };
        if queue.in_flight >= held {
            return;
        }
        let leader = metadata.as_ref().and_then(|m| {
            let partition = m.topic(&tp.topic)?.partitions.iter().find(|p| p.partition == tp.partition)?;
            let id = partition.leader?;
            Some((id, m.broker(id)?.addr()))
        });
        let Some((node, addr)) = leader else {
            *refresh_metadata = true;
            return;
        };
        let request = match by_node.entry(node) {
            Entry::Occupied(request) => request.into_mut(),
            Entry::Vacant(slot) => {
                if in_flight.get(&node).copied().unwrap_or(0) >= config.max_in_flight {
                    return;
                }
                let broker = BrokerRef { node_id: Some(node), addr };
                slot.insert(Request { broker, node, batches: Vec::new(), bytes: 0 })
            }
        };
        let bytes = queue.next_batch_bytes();
        if !request.batches.is_empty() && request.bytes + bytes > config.max_request_size {
            // The next request to this broker takes it, at once if one more may be in flight.
            next_due = Some(now);
            return;
        }
        if let Some(mut batch) = queue.take(producer) {
            batch.stamp.transactional = transactional;
            request.bytes += bytes;
            request.batches.push((tp.clone(), batch));
            took_transactional |= transactional;
        }
    };
    // Fairness when requests fill up (Java's drain index): each look starts one partition
    // further on, so a partition passed over for want of room goes first in a later request.
    // Two passes over the map, whose order holds while nothing is inserted: no allocation.
    *drain_start = if partitions.is_empty() { 0 } else { (*drain_start + 1) % partitions.len() };
    for (tp, queue) in partitions.iter_mut().skip(*drain_start) {
        consider(tp, queue);
    }
    for (tp, queue) in partitions.iter_mut().take(*drain_start) {
        consider(tp, queue);
    }
    if took_transactional {
        crate::producer::transaction::note_batch_sent(shared);
    }
    for node in by_node.keys() {
        *in_flight.entry(*node).or_default() += 1;
    }
    (by_node.into_values().collect(), next_due, false)
}

/// Encodes, queues on the broker's connection, and leaves the answer to a task of its own.
async fn send(shared: &Arc<Shared>, request: Request) {
    let Request { broker, node, batches, .. } = request;
    let compression = shared.config.compression;
    let (encoded, freed) = if batches.iter().any(|(_, b)| b.needs_compression(compression)) {
        // Compression is CPU work: off the runtime's threads, so the connections' reads and
        // writes and the answers keep flowing.
        match tokio::task::spawn_blocking(move || encode(batches)).await {
            Ok(encoded) => encoded,
            Err(e) => {
                // The batches went down with the encoding thread; nothing can be retried.
                encoding_lost(shared, node, &e.to_string());
                return;
            }
        }
    } else {
        // The records are encoded already: sealing writes a header and a CRC (restamping a
        // retried batch copies it once).
        encode(batches)
    };
    shared.memory.add_permits(freed);
    let mut batches = Vec::with_capacity(encoded.len());
    let mut bytes = Vec::with_capacity(encoded.len());
    let mut failed = Vec::new();
    for (tp, batch, result) in encoded {
        match result {
            Ok(b) => {
                bytes.push(b);
                batches.push((tp, batch));
            }
            Err(e) => failed.push((tp, batch, e)),
        }
    }
    if !failed.is_empty() {
        let mut state = lock(&shared.state);
        for (tp, batch, source) in failed {
            if let Some(queue) = state.partitions.get_mut(&tp) {
                queue.in_flight -= 1;
            }
            fail(shared, &mut state, batch, ClientError::RecordEncode { context: tp.to_string(), source });
        }
    }
    if batches.is_empty() {
        answer(shared, node, batches, &HashMap::new(), &Err(no_batches(&broker)));
        return;
    }
    let conn = match shared.client.connection(&broker).await {
        Ok(conn) => conn,
        Err(e) => return answer(shared, node, batches, &HashMap::new(), &Err(e)),
    };
    let version = match conn.versions.choose(&crate::producer::transaction::produce_spec(shared), &broker) {
        Ok(v) => v,
        Err(e) => return answer(shared, node, batches, &HashMap::new(), &Err(e)),
    };
    if let Err(e) = PRODUCE_RECORD_BATCHES.check(version, &broker) {
        return answer(shared, node, batches, &HashMap::new(), &Err(e));
    }
    // The request names its topics by these ids (Produce v13+) and its answer is read with the
    // same ones: the cached metadata may have changed (or been refreshed without these topics)
    // by then.
    let ids = topic_ids_of(&shared.client, batches.iter().map(|(tp, _)| &*tp.topic));
    let request = build_request(&shared.client, &shared.config, &batches, bytes, &ids);
    shared.client.wait_out_throttle(&broker.addr).await;
    let pending = match shared.client.submit_on(&conn.connection, &request, version) {
        Ok(pending) => pending,
        Err(e) => return answer(shared, node, batches, &HashMap::new(), &Err(e)),
    };
    if shared.config.acks == Acks::NoResponse {
        // Nobody answers acks=0: the records are done once queued.
        drop(pending);
        return answer(shared, node, batches, &HashMap::new(), &Ok((version, ProduceResponse::default())));
    }
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        let timeout = request_timeout(&shared.client, &shared.config);
        let response =
            shared.client.finish_within::<ProduceRequest>(&broker, version, pending, timeout).await;
        let response = retire_on_decode_error(&conn, response);
        answer(&shared, node, batches, &ids, &response.map(|r| (version, r)));
    });
}

/// How long a Produce request waits for its answer: the producer's own, else the client's.
fn request_timeout(client: &Client, config: &crate::producer::config::ProducerConfig) -> std::time::Duration {
    config.request_timeout.unwrap_or(client.config().request_timeout)
}

/// A request whose every batch failed to encode still counted as in flight.
fn no_batches(broker: &BrokerRef) -> ClientError {
    ClientError::Protocol {
        broker: broker.clone(),
        message: "no batch of the request could be encoded".into(),
    }
}

/// The encoding thread panicked: the broker's in-flight slot is given back.
fn encoding_lost(shared: &Shared, node: i32, why: &str) {
    let mut state = lock(&shared.state);
    if let Some(n) = state.in_flight.get_mut(&node) {
        *n = n.saturating_sub(1);
    }
    state.fatal = Some(ClientError::InvalidArgument { message: format!("batch encoding failed: {why}") });
    drop(state);
    shared.wake.notify_one();
}

type Encoded = Vec<(TopicPartition, Batch, Result<Bytes, kafka_wire::protocol::records::RecordEncodeError>)>;

/// Seals each batch; returns them with the buffer memory sealing freed (a compressed batch's
/// buffer and the room its copy did not take), which the caller gives back.
fn encode(batches: Vec<(TopicPartition, Batch)>) -> (Encoded, usize) {
    let mut freed = 0;
    let encoded = batches
        .into_iter()
        .map(|(tp, mut batch)| {
            let bytes = batch.seal().map(|(bytes, gave_up)| {
                freed += gave_up;
                bytes
            });
            (tp, batch, bytes)
        })
        .collect();
    (encoded, freed)
}

fn build_request(
    client: &Client,
    config: &crate::producer::config::ProducerConfig,
    batches: &[(TopicPartition, Batch)],
    bytes: Vec<Bytes>,
    ids: &HashMap<String, Uuid>,
) -> ProduceRequest {
    let timeout_ms = i32::try_from(request_timeout(client, config).as_millis()).unwrap_or(i32::MAX);
    let parts = batches.iter().map(|(tp, _)| tp).zip(bytes.into_iter().map(Some));
    let mut request = produce_request(parts, ids, config.acks, timeout_ms);
    request.transactional_id.clone_from(&config.transactional_id);
    request
}

/// Handles a request's answer (or failure) for each of its batches; `ids` are the topic ids
/// the request was sent with.
fn answer(
    shared: &Shared,
    node: i32,
    batches: Vec<(TopicPartition, Batch)>,
    ids: &HashMap<String, Uuid>,
    response: &Result<(i16, ProduceResponse), ClientError>,
) {
    let mut by_partition: HashMap<TopicPartition, (ErrorCode, Produced)> = HashMap::new();
    if let Ok((version, response)) = response {
        for topic in &response.responses {
            let Some(name) = topic_name(topic.name.clone(), topic.topic_id, ids) else { continue };
            for p in &topic.partition_responses {
                let produced = Produced {
                    base_offset: Some(p.base_offset),
                    log_append_time: p.log_append_time_ms.filter(|t| *t >= 0),
                    log_start_offset: p.log_start_offset.filter(|o| *o >= 0 && *version >= 5),
                };
                by_partition.insert(TopicPartition::new(name.clone(), p.index), (p.error_code, produced));
            }
        }
    }
    let acks_none = shared.config.acks == Acks::NoResponse;
    let now = Instant::now();
    let mut state = lock(&shared.state);
    if let Some(n) = state.in_flight.get_mut(&node) {
        *n = n.saturating_sub(1);
    }
    for (tp, batch) in batches {
        let (code, produced) = match (response, by_partition.remove(&tp)) {
            (Ok(_), Some(answer)) => (Ok(answer.0), answer.1),
            (Ok(_), None) if acks_none => (Ok(ErrorCode::NONE), Produced::default()),
            (Ok(_), None) => {
                let missing = ClientError::Protocol {
                    broker: BrokerRef { node_id: Some(node), addr: String::new() },
                    message: format!("no answer for {tp}"),
                };
                (Err(missing), Produced::default())
            }
            (Err(e), _) => (Err(e.clone()), Produced::default()),
        };
        let Some(queue) = state.partitions.get_mut(&tp) else { continue };
        queue.in_flight = queue.in_flight.saturating_sub(1);
        let idempotent = batch.has_sequence();
        let recovery = batch_recovery(code.as_ref().map(|c| *c), idempotent, queue.place_of(&batch));
        let error = || match &code {
            Ok(code) => ClientError::Kafka {
                broker: BrokerRef { node_id: Some(node), addr: String::new() },
                api: ApiKey::PRODUCE,
                code: *code,
                context: tp.to_string(),
            },
            Err(e) => e.clone(),
        };
        match recovery {
            BatchRecovery::Done => {
                queue.acknowledged(&batch);
                let produced = if matches!(code, Ok(ErrorCode::DUPLICATE_SEQUENCE_NUMBER)) {
                    Produced::default()
                } else {
                    produced
                };
                complete(shared, &mut state, batch, Ok(produced));
            }
            BatchRecovery::Retry { refresh_metadata } => {
                if now.duration_since(batch.created) >= shared.config.delivery_timeout {
                    let e = ClientError::DeadlineExceeded {
                        what: format!("producing to {tp}"),
                        last_error: Box::new(error()),
                    };
                    fail(shared, &mut state, batch, e);
                } else {
                    let at = now + batch_backoff(batch.attempts);
                    queue.requeue(batch, at);
                    state.refresh_metadata |= refresh_metadata;
                }
            }
            BatchRecovery::BumpEpochAndRetry => {
                queue.requeue(batch, now);
                state.bump_epoch = true;
            }
            BatchRecovery::Fail => fail(shared, &mut state, batch, error()),
        }
    }
    drop(state);
    shared.wake.notify_one();
}
