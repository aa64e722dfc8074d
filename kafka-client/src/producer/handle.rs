//! [`Producer`]: records accumulated per partition and sent by a background task — batches
//! closed by `batch_size` or `linger`, each record encoded into its batch's buffer by `send`,
//! up to `max_in_flight` requests per broker, compression on a blocking thread — with bounded
//! memory (`send` waits while `buffer_memory` is used up) and a delivery result per record.
//! Idempotent by default (KIP-98): a producer id and epoch from
//! InitProducerId, sequence numbers per partition, so a batch sent again after a lost answer
//! is written once and in order even with five requests in flight.
//!
//! For bulk loads, [`Producer::send_all`] takes a run of records at once: one lock, one clock
//! reading and one result handle ([`Deliveries`]) per run of records in a batch, instead of
//! one of each per record.
//!
//! ```no_run
//! use std::sync::Arc;
//! use bytes::Bytes;
//! use kafka_client::{Client, ClientConfig, Producer, ProducerConfig, ProduceRecord};
//!
//! # async fn run() -> Result<(), kafka_client::ClientError> {
//! let client = Arc::new(Client::connect(ClientConfig::new("localhost:9092")?).await?);
//! let producer = Producer::new(client, ProducerConfig::default())?;
//! let delivery = producer
//!     .send("orders", ProduceRecord::new(Some(Bytes::from("k")), Some(Bytes::from("v"))))
//!     .await?;
//! producer.flush().await;
//! let written = delivery.wait().await?;
//! println!("{} at offset {:?}", written.partition, written.offset);
//! producer.close().await;
//! # Ok(())
//! # }
//! ```

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};

use crate::cluster::client::Client;
use crate::cluster::retry::Backoff;
use crate::cluster::router::TopicPartition;
use crate::deadline::deadline_after;
use crate::error::ClientError;
use crate::producer::accumulator::{record_size, AppendTime, BatchOutcome, BatchShape, PartitionQueue};
use crate::producer::config::ProducerConfig;
use crate::producer::deliveries::{Deliveries, DeliveryFuture};
use crate::producer::produce::{AsRecordRef, RecordRef};
use crate::producer::sender;
use crate::producer::shared::{Shared, State, TopicState, Transactions};
use crate::sync::lock;
use kafka_wire::protocol::names::validate_topic;
use kafka_wire::protocol::records::compression::compressor_memory;

/// Most records [`Producer::send_all`] appends under one hold of the producer's lock (the
/// sender task waits for the lock meanwhile: about 0.1 ms for 1 KB records).
const RECORDS_PER_LOCK: usize = 256;

/// Where [`Producer::send_all`] puts records.
#[derive(Debug, Clone, Copy)]
enum Target<'a> {
    /// Each record's partition as `send` chooses it.
    Topic(&'a str),
    Partition(&'a TopicPartition),
}

/// What [`Producer::append_locked`] did.
enum Locked<T> {
    Appended(Appended<T>),
    /// Appending costs `cost` bytes of buffer memory and fewer are free: nothing was appended,
    /// and the memory the caller brought is still the caller's.
    Short {
        cost: usize,
    },
}

/// What appending one record did.
struct Appended<T> {
    /// What the caller made of the record's batch outcome and index.
    delivered: T,
    /// Wake the sender: a batch filled, or the partition had nothing buffered.
    wake: bool,
}

/// The partition of `topic` (`None` while the topic is unknown) for a record of `size` bytes
/// with `key`: the Java client's key partitioner, or the sticky partition for a null key. When
/// the sticky partition's open batch cannot take the record, that batch is closed (it goes out
/// now, as full as it gets) and the record goes to the next partition, as with Java's producer:
/// appending it there would start a batch of that one record, left to linger alone until the
/// sticky partition comes round again and then sent as a request of its own. `last` holds the
/// caller's last partition, so a run of records to one partition shares its name; the flag
/// says whether a batch was closed (the sender is to be woken).
fn partition_for_record<'a>(
    state: &mut State,
    topic: &str,
    key: Option<&[u8]>,
    size: usize,
    last: &'a mut Option<TopicPartition>,
) -> Option<(&'a TopicPartition, bool)> {
    let State { topics, partitions, .. } = state;
    let known = topics.get_mut(topic)?;
    let mut partition = known.partition_for(key);
    let mut closed = false;
    if key.is_none() {
        let sticky = reuse_or_name(last, &known.name, partition);
        if partitions.get_mut(sticky).is_some_and(|queue| queue.close_if_cannot_take(size)) {
            known.batch_filled(partition);
            partition = known.partition_for(None);
            closed = true;
        }
    }
    Some((reuse_or_name(last, &known.name, partition), closed))
}

/// `last` when it is `partition` of the topic `name`, else a new [`TopicPartition`] put there.
fn reuse_or_name<'a>(
    last: &'a mut Option<TopicPartition>,
    name: &Arc<str>,
    partition: i32,
) -> &'a TopicPartition {
    if !matches!(last, Some(tp) if tp.partition == partition && Arc::ptr_eq(&tp.topic, name)) {
        *last = None;
    }
    last.get_or_insert_with(|| TopicPartition::new(Arc::clone(name), partition))
}

/// An asynchronous, batching, idempotent-by-default producer over a shared [`Client`].
///
/// `send` puts a record in its partition's batch and returns at once (or waits for buffer
/// memory); a background task sends batches as they fill or linger. Records of one partition
/// are written in `send` order. [`flush`](Self::flush) waits for everything sent so far;
/// [`close`](Self::close) flushes and stops the task. Dropping the producer without `close`
/// still sends what it holds, without waiting.
#[derive(Debug)]
pub struct Producer {
    pub(crate) shared: Arc<Shared>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Producer {
    /// A producer sending through `client`; starts its sender task (on the current tokio
    /// runtime). Fails on a configuration that cannot work (see [`ProducerConfig`]).
    pub fn new(client: Arc<Client>, config: ProducerConfig) -> Result<Self, ClientError> {
        config.check()?;
        holds_a_full_batch(&config)?;
        let transactions = Transactions::from_config(&config);
        let permits = batch_memory(&config);
        let shared = Arc::new(Shared {
            client,
            config,
            state: Mutex::new(State::default()),
            memory: Semaphore::new(permits),
            wake: Notify::new(),
            progress: Notify::new(),
            transactions,
        });
        let task = tokio::spawn(sender::run(Arc::clone(&shared)));
        Ok(Self { shared, task: Mutex::new(Some(task)) })
    }

    /// The configuration this producer was made with.
    pub fn config(&self) -> &ProducerConfig {
        &self.shared.config
    }

    /// Puts `record` on the partition the Java client's partitioner picks for its key (null
    /// keys: one partition until its batch fills, then the next — Java's sticky partitioner).
    /// The record is copied into its batch: a borrowed [`RecordRef`] does as well as an owned
    /// [`ProduceRecord`](crate::ProduceRecord).
    pub async fn send(&self, topic: &str, record: impl AsRecordRef) -> Result<DeliveryFuture, ClientError> {
        let record = record.as_record_ref();
        if self.shared.transactions.is_none() {
            // The common case in one lock: a known topic and buffer memory at hand.
            let mut state = lock(&self.shared.state);
            let quick = self.append_quick(
                &mut state,
                Target::Topic(topic),
                &record,
                &mut None,
                &AppendTime::now(),
                |tp, outcome, index| DeliveryFuture {
                    partition: tp.clone(),
                    outcome: Arc::clone(outcome),
                    index,
                },
            );
            drop(state);
            if let Some(Appended { delivered, wake }) = quick? {
                self.wake_sender(wake);
                return Ok(delivered);
            }
        }
        let known = {
            let mut state = lock(&self.shared.state);
            let size = record_size(&record);
            let mut chosen = None;
            let closed = partition_for_record(&mut state, topic, record.key, size, &mut chosen)
                .is_some_and(|(_, closed)| closed);
            drop(state);
            self.wake_sender(closed);
            chosen
        };
        let tp = match known {
            Some(tp) => tp,
            None => {
                let (name, partition) = self.learn_topic(topic, record.key).await?;
                TopicPartition::new(name, partition)
            }
        };
        self.send_to(tp, record).await
    }

    /// Puts `record` on partition `tp`. Waits while the buffer is full; fails when the
    /// producer is closed or failed, or the record alone is larger than `buffer_memory` or
    /// `max_request_size`. A
    /// transactional producer fails outside a transaction; a partition new to the transaction
    /// is added to it by the sender, with the others new by then, before its first batch.
    pub async fn send_to(
        &self,
        tp: TopicPartition,
        record: impl AsRecordRef,
    ) -> Result<DeliveryFuture, ClientError> {
        let record = record.as_record_ref();
        if let Some(transactions) = &self.shared.transactions {
            transactions.note_partition(&self.shared, &tp).await?;
        }
        let size = record_size(&record);
        let config = &self.shared.config;
        let alone = self.shape().alone_cost(&record);
        let too_large = if size > config.max_request_size {
            Some(format!("is larger than max_request_size ({} bytes)", config.max_request_size))
        } else if alone > config.buffer_memory {
            Some(format!(
                "needs {alone} bytes of buffer memory (its batch's buffer, and room to compress it), more \
                 than buffer_memory ({} bytes)",
                config.buffer_memory
            ))
        } else {
            None
        };
        if let Some(why) = too_large {
            validate_topic(&tp.topic)?;
            return Err(ClientError::InvalidArgument {
                message: format!("a {size}-byte record for {tp} {why}"),
            });
        }
        // Memory is taken whole or not at all (never part of it held while waiting for the
        // rest, which two senders could each do until neither gets enough); what the append
        // costs is known only under the lock, so after a wait it is asked again.
        let mut paid = 0;
        loop {
            let locked = {
                let mut state = lock(&self.shared.state);
                let at = AppendTime::now();
                self.append_locked(&mut state, &tp, &record, paid, &at, |outcome, index| {
                    (Arc::clone(outcome), index)
                })
            };
            match locked? {
                Locked::Appended(Appended { delivered: (outcome, index), wake }) => {
                    self.wake_sender(wake);
                    return Ok(DeliveryFuture { partition: tp, outcome, index });
                }
                Locked::Short { cost } => {
                    self.shared.memory.add_permits(paid);
                    validate_topic(&tp.topic)?;
                    self.check_open()?;
                    let permits = u32::try_from(cost).unwrap_or(u32::MAX);
                    match self.shared.memory.acquire_many(permits).await {
                        Ok(permit) => permit.forget(),
                        Err(_) => return Err(closed_error()),
                    }
                    paid = cost;
                }
            }
        }
    }

    /// The shape of every batch this producer builds.
    fn shape(&self) -> BatchShape {
        BatchShape { batch_size: self.shared.config.batch_size, compression: self.shared.config.compression }
    }

    /// The quick way of `send` and `send_all`, under the lock the caller holds: a record for a
    /// known topic (or a given partition) whose buffer memory is at hand is appended, and
    /// `appended` is handed its partition, batch outcome and index in the batch. `Ok(None)`:
    /// the record is left to the slow way (waiting for memory, asking for metadata, joining
    /// the transaction, or failing with the reason). `last` keeps the partition of the
    /// caller's last record, so a run of records to one partition shares its name.
    fn append_quick<T>(
        &self,
        state: &mut State,
        target: Target<'_>,
        record: &RecordRef<'_>,
        last: &mut Option<TopicPartition>,
        at: &AppendTime,
        appended: impl FnOnce(&TopicPartition, &Arc<BatchOutcome>, i32) -> T,
    ) -> Result<Option<Appended<T>>, ClientError> {
        let size = record_size(record);
        if size > self.shared.config.max_request_size {
            return Ok(None);
        }
        let (tp, closed) = match target {
            Target::Partition(tp) => (tp, false),
            Target::Topic(topic) => match partition_for_record(state, topic, record.key, size, last) {
                Some(chosen) => chosen,
                None => return Ok(None),
            },
        };
        match self.append_locked(state, tp, record, 0, at, |outcome, index| appended(tp, outcome, index))? {
            Locked::Appended(mut done) => {
                done.wake |= closed;
                Ok(Some(done))
            }
            Locked::Short { .. } => {
                // The batch closed for this record is sendable now, whoever sends the record.
                self.wake_sender(closed);
                Ok(None)
            }
        }
    }

    /// Appends `record` to `tp`'s queue under the lock the caller holds, with `at` as the time
    /// of a record without one, and hands `appended` its batch outcome and index. `paid`
    /// bytes of buffer memory the caller took are used first; what the append costs beyond
    /// them is taken without waiting, or the answer is [`Locked::Short`] (nothing appended,
    /// `paid` still the caller's). Otherwise what was not needed is given back, and all of it
    /// when the producer is closed or the record cannot be encoded. The caller wakes the
    /// sender when told to.
    fn append_locked<T>(
        &self,
        state: &mut State,
        tp: &TopicPartition,
        record: &RecordRef<'_>,
        paid: usize,
        at: &AppendTime,
        appended: impl FnOnce(&Arc<BatchOutcome>, i32) -> T,
    ) -> Result<Locked<T>, ClientError> {
        if let Err(e) = state_open(state) {
            self.shared.memory.add_permits(paid);
            return Err(e);
        }
        let State { partitions, topics, unfinished, .. } = state;
        let queue = match partitions.get_mut(tp) {
            Some(queue) => queue,
            None => {
                // Checked once per partition: the name never changes after.
                if let Err(e) = validate_topic(&tp.topic) {
                    self.shared.memory.add_permits(paid);
                    return Err(e.into());
                }
                partitions.entry(tp.clone()).or_insert_with(|| PartitionQueue::new(self.shape()))
            }
        };
        let cost = queue.append_cost(record);
        if cost > paid {
            match self.shared.memory.try_acquire_many(u32::try_from(cost - paid).unwrap_or(u32::MAX)) {
                Ok(permit) => permit.forget(),
                Err(_) => return Ok(Locked::Short { cost }),
            }
        } else {
            self.shared.memory.add_permits(paid - cost);
        }
        let was_idle = queue.is_idle();
        let before = queue.batches();
        let closed_before = queue.closed_batches();
        let delivered = queue.append(record, at, appended);
        *unfinished += queue.batches() - before;
        let delivered = match delivered {
            Ok((delivered, charged)) => {
                debug_assert_eq!(charged, cost, "append charges what append_cost said");
                delivered
            }
            Err(source) => {
                self.shared.memory.add_permits(cost);
                return Err(ClientError::RecordEncode { context: tp.to_string(), source });
            }
        };
        // A batch became sendable by its size just now: the sender is woken once for it
        // (not for every record while a backlog waits) and a sticky partition moves on.
        let full = queue.open_is_full() || queue.closed_batches() > closed_before;
        if full {
            if let Some(topic) = topics.get_mut(&*tp.topic) {
                topic.batch_filled(tp.partition);
            }
        }
        Ok(Locked::Appended(Appended { delivered, wake: was_idle || full }))
    }

    fn wake_sender(&self, wake: bool) {
        if wake {
            self.shared.wake.notify_one();
        }
    }

    /// Sends `records` to `topic` in order, each as [`send`](Self::send) would, adding their
    /// results to `deliveries`. For bulk loads: while the topic is known and buffer memory
    /// is at hand, up to 256 records are appended under one hold of the
    /// producer's lock, with one clock reading (the create time of the records without one)
    /// and one result handle per run of records in a batch, instead of one per record.
    /// Records are copied into their batches: borrowed ones ([`RecordRef`]) need no
    /// [`Bytes`](bytes::Bytes) of their own.
    /// Waits while the buffer is full. On an error, the records before the failing one were
    /// sent (their results are in `deliveries`); the failing one is dropped, and the rest
    /// stay in `records` when it is passed by reference (`iter.by_ref()`). The iterator is
    /// advanced while the producer's lock is held: give it records at hand (a `Vec`'s
    /// `drain(..)`, lines of a buffer), not one that waits for them.
    pub async fn send_all<I>(
        &self,
        topic: &str,
        records: I,
        deliveries: &mut Deliveries,
    ) -> Result<(), ClientError>
    where
        I: IntoIterator,
        I::Item: AsRecordRef,
    {
        self.send_all_where(Target::Topic(topic), records.into_iter(), deliveries).await
    }

    /// [`send_all`](Self::send_all) to one partition, as [`send_to`](Self::send_to) would.
    pub async fn send_all_to<I>(
        &self,
        tp: &TopicPartition,
        records: I,
        deliveries: &mut Deliveries,
    ) -> Result<(), ClientError>
    where
        I: IntoIterator,
        I::Item: AsRecordRef,
    {
        self.send_all_where(Target::Partition(tp), records.into_iter(), deliveries).await
    }

    async fn send_all_where<R: AsRecordRef>(
        &self,
        target: Target<'_>,
        mut records: impl Iterator<Item = R>,
        deliveries: &mut Deliveries,
    ) -> Result<(), ClientError> {
        while let Some(first) = records.next() {
            let Some(record) = self.append_run(target, first, &mut records, deliveries)? else {
                continue;
            };
            // The record the quick way could not take: it waits for memory, asks for the
            // topic's metadata, joins the transaction, or fails with the reason.
            let delivery = match target {
                Target::Topic(topic) => self.send(topic, record).await?,
                Target::Partition(tp) => self.send_to(tp.clone(), record).await?,
            };
            deliveries.push_future(&delivery);
        }
        Ok(())
    }

    /// Appends `first`, then the records after it, under one lock while the quick way can take
    /// them (see [`send_all`](Self::send_all)), at most [`RECORDS_PER_LOCK`]; returns the
    /// record it could not take, to be sent the slow way.
    fn append_run<R: AsRecordRef>(
        &self,
        target: Target<'_>,
        first: R,
        rest: &mut impl Iterator<Item = R>,
        deliveries: &mut Deliveries,
    ) -> Result<Option<R>, ClientError> {
        if self.shared.transactions.is_some() {
            return Ok(Some(first));
        }
        let mut state = lock(&self.shared.state);
        let at = AppendTime::now();
        let mut wake = false;
        let mut last = None;
        let mut record = first;
        let mut taken = 0;
        let result = loop {
            let quick = self.append_quick(
                &mut state,
                target,
                &record.as_record_ref(),
                &mut last,
                &at,
                |tp, outcome, index| deliveries.push(tp, outcome, index),
            );
            match quick {
                Ok(Some(appended)) => wake |= appended.wake,
                Ok(None) => break Ok(Some(record)),
                Err(e) => break Err(e),
            }
            taken += 1;
            if taken == RECORDS_PER_LOCK {
                break Ok(None);
            }
            match rest.next() {
                Some(next) => record = next,
                None => break Ok(None),
            }
        };
        drop(state);
        self.wake_sender(wake);
        result
    }

    /// Waits until every record sent before (and during) the call has its result; batches do
    /// not linger meanwhile.
    pub async fn flush(&self) {
        lock(&self.shared.state).flushing += 1;
        self.shared.wake.notify_one();
        loop {
            let progress = self.shared.progress.notified();
            tokio::pin!(progress);
            progress.as_mut().enable();
            if lock(&self.shared.state).unfinished == 0 {
                break;
            }
            progress.await;
        }
        lock(&self.shared.state).flushing -= 1;
    }

    /// Flushes, then stops the sender task; later sends fail.
    pub async fn close(&self) {
        self.flush().await;
        lock(&self.shared.state).closed = true;
        self.shared.wake.notify_one();
        let task = lock(&self.task).take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    /// Bytes of buffer memory batches use now: open batches' buffers (with room to compress
    /// them), and sealed batches buffered or in flight. At most `buffer_memory` less the
    /// compressor's working memory set aside in it.
    pub fn buffered_bytes(&self) -> usize {
        batch_memory(&self.shared.config) - self.shared.memory.available_permits()
    }

    /// The producer id and epoch in use, once the first batch asked for them (idempotence).
    pub fn producer_id_and_epoch(&self) -> Option<(i64, i16)> {
        lock(&self.shared.state).producer
    }

    fn check_open(&self) -> Result<(), ClientError> {
        state_open(&lock(&self.shared.state))
    }

    /// The topic's shared name and the partition for a record with `key`, from metadata asked
    /// for once per topic; a metadata request that fails in a way a retry can help is retried
    /// until `delivery_timeout`.
    async fn learn_topic(&self, topic: &str, key: Option<&[u8]>) -> Result<(Arc<str>, i32), ClientError> {
        let deadline = deadline_after(self.shared.config.delivery_timeout);
        let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(1), deadline);
        let metadata = loop {
            let topics = [topic.to_owned()];
            match self
                .shared
                .client
                .refresh_metadata_awaiting_topics(&topics, self.shared.config.topic_propagation)
                .await
            {
                Ok(metadata) => break metadata,
                Err(e) if e.is_retriable() => match backoff.next_wait() {
                    Some(wait) => tokio::time::sleep(wait).await,
                    None => {
                        return Err(ClientError::DeadlineExceeded {
                            what: format!("Metadata for {topic}"),
                            last_error: Box::new(e),
                        })
                    }
                },
                Err(e) => return Err(e),
            }
        };
        let count = metadata.partition_count(topic)?;
        let mut state = lock(&self.shared.state);
        let known =
            state.topics.entry(topic.to_owned()).or_insert_with(|| TopicState::new(Arc::from(topic), count));
        Ok((Arc::clone(&known.name), known.partition_for(key)))
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        lock(&self.shared.state).closed = true;
        self.shared.wake.notify_one();
    }
}

fn state_open(state: &State) -> Result<(), ClientError> {
    if let Some(fatal) = &state.fatal {
        return Err(fatal.clone());
    }
    if state.closed {
        return Err(closed_error());
    }
    Ok(())
}

/// The part of `buffer_memory` batches may use: the rest is the compressor's working memory,
/// set aside once (the sender compresses one request's batches at a time).
fn batch_memory(config: &ProducerConfig) -> usize {
    config.buffer_memory.saturating_sub(compressor_memory(config.compression)).min(Semaphore::MAX_PERMITS)
}

/// Refuses a `buffer_memory` that cannot hold the compressor's working memory and one full
/// batch with room to compress it: a batch growing to `batch_size` would wait for memory that
/// can never be free.
fn holds_a_full_batch(config: &ProducerConfig) -> Result<(), ClientError> {
    let batch = BatchShape { batch_size: config.batch_size, compression: config.compression }.full_cost();
    let compressor = compressor_memory(config.compression);
    let needs = batch.saturating_add(compressor);
    if needs <= config.buffer_memory {
        return Ok(());
    }
    Err(ClientError::InvalidArgument {
        message: format!(
            "buffer_memory ({} bytes) cannot hold one full batch: batch_size {} with {} compression \
             takes up to {needs} bytes while it is sealed ({batch} for the batch, {compressor} for \
             the compressor)",
            config.buffer_memory, config.batch_size, config.compression
        ),
    })
}

fn closed_error() -> ClientError {
    ClientError::InvalidArgument { message: "the producer is closed".to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::producer::partitioner::partition_for_key;
    use kafka_wire::protocol::records::Compression;

    /// Null-key records over 6 partitions, each batch filling in turn: every partition gets the
    /// same share, round after round (the sticky partition once stuck on partition 0 after the
    /// first round, sending nearly everything there).
    #[test]
    fn null_key_batches_go_round_every_partition() {
        let mut topic = TopicState::new(Arc::from("t"), 6);
        let mut batches = [0_u32; 6];
        for _ in 0..600 {
            let partition = topic.partition_for(None);
            batches[usize::try_from(partition).unwrap()] += 1;
            topic.batch_filled(partition);
        }
        assert_eq!(batches, [100; 6]);
    }

    #[test]
    fn a_full_batch_of_a_keyed_partition_leaves_the_sticky_one_alone() {
        let mut topic = TopicState::new(Arc::from("t"), 3);
        topic.batch_filled(2);
        assert_eq!(topic.partition_for(None), 0);
        topic.batch_filled(0);
        topic.batch_filled(2);
        assert_eq!(topic.partition_for(None), 1);
        assert_eq!(topic.partition_for(Some(b"key-2")), 2, "a key's partition is the Java partitioner's");
    }

    /// A null-key record that the sticky partition's open batch cannot take closes that batch
    /// (it can go now) and goes to the next partition, instead of starting a batch of its own
    /// there; a keyed record goes by its key and leaves its full batch to `append`.
    #[test]
    fn a_null_key_record_the_sticky_batch_cannot_take_moves_on_and_closes_it() {
        let mut state = State::default();
        state.topics.insert("t".to_owned(), TopicState::new(Arc::from("t"), 3));
        let value = [b'v'; 100];
        let record = RecordRef { key: None, value: Some(&value), headers: &[], timestamp: None };
        let size = record_size(&record);
        let batch_size = 3 * size;
        let append = |state: &mut State, key: Option<&[u8]>| {
            let mut last = None;
            let (tp, closed) = partition_for_record(state, "t", key, size, &mut last).unwrap();
            let tp = tp.clone();
            let record = RecordRef { key, ..record };
            let shape = BatchShape { batch_size, compression: Compression::None };
            let queue = state.partitions.entry(tp.clone()).or_insert_with(|| PartitionQueue::new(shape));
            queue.append(&record, &AppendTime::now(), |_, _| ()).unwrap();
            (tp.partition, closed)
        };
        for _ in 0..3 {
            assert_eq!(append(&mut state, None), (0, false));
        }
        // Partition 0's batch holds batch_size: the fourth record goes on.
        assert_eq!(append(&mut state, None), (1, true));
        assert_eq!(state.partitions[&TopicPartition::new("t", 0)].closed_batches(), 1);
        assert_eq!(append(&mut state, None), (1, false));

        let keyed = partition_for_key(b"key-2", 3).unwrap();
        for _ in 0..3 {
            assert_eq!(append(&mut state, Some(b"key-2")), (keyed, false));
        }
        assert_eq!(append(&mut state, Some(b"key-2")), (keyed, false));
        let queue = &state.partitions[&TopicPartition::new("t", keyed)];
        assert_eq!((queue.closed_batches(), queue.batches()), (1, 2), "the keyed record started a batch");

        let mut last = None;
        assert!(partition_for_record(&mut state, "unknown", None, size, &mut last).is_none());
    }

    #[test]
    fn a_buffer_that_cannot_hold_one_full_batch_with_its_compressed_copy_is_refused() {
        let config = |batch_size, buffer_memory, compression| ProducerConfig {
            compression,
            batch_size,
            buffer_memory,
            ..ProducerConfig::default()
        };
        assert!(holds_a_full_batch(&ProducerConfig::default()).is_ok());
        assert!(holds_a_full_batch(&config(1 << 20, 2 << 20, Compression::None)).is_ok());
        let e = holds_a_full_batch(&config(1 << 20, 1 << 20, Compression::None)).unwrap_err();
        assert!(e.to_string().contains("buffer_memory (1048576 bytes) cannot hold one full batch"), "{e}");
        if Compression::Lz4.is_available() {
            // 1 MiB of records and their compressed copy's worst case: more than 2 MiB.
            let e = holds_a_full_batch(&config(1 << 20, 2 << 20, Compression::Lz4)).unwrap_err();
            assert!(e.to_string().contains("lz4 compression takes up to"), "{e}");
            assert!(holds_a_full_batch(&config(1 << 20, 3 << 20, Compression::Lz4)).is_ok());
        }
        if Compression::Zstd.is_available() {
            // A small batch, but zstd's context is set aside too.
            let e = holds_a_full_batch(&config(16 << 10, 1 << 20, Compression::Zstd)).unwrap_err();
            let compressor = compressor_memory(Compression::Zstd);
            assert!(e.to_string().contains(&format!("{compressor} for the compressor")), "{e}");
            let fits = config(16 << 10, 3 << 20, Compression::Zstd);
            assert!(holds_a_full_batch(&fits).is_ok());
            assert_eq!(batch_memory(&fits), (3 << 20) - compressor);
        }
    }

    #[test]
    fn one_partition_stays_sticky_on_it() {
        let mut topic = TopicState::new(Arc::from("t"), 1);
        topic.batch_filled(0);
        topic.batch_filled(0);
        assert_eq!(topic.partition_for(None), 0);
    }
}
