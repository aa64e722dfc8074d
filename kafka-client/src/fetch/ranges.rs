//! Fetch exact offset ranges from the partition leaders: `[from, until)` per partition, in as
//! many rounds as it takes, one Fetch request per leader broker per round.
//!
//! A range is complete when the fetch position reaches `until`, or when the log says there is
//! nothing more to read now: the position reached the high watermark (read_uncommitted) or
//! the last stable offset (read_committed). Offsets missing inside a range (compacted away,
//! or taken by transaction markers) are skipped, not waited for; records at or past `until`
//! are never returned, even when the broker sends them.
//!
//! read_committed drops the records of aborted transactions the way the Java consumer does:
//! the response lists each aborted transaction's producer id and first offset; a
//! transactional batch is dropped when its producer has an aborted transaction that started
//! at or before the batch's last offset and whose ABORT marker has not yet been passed.
//! Control batches (the markers themselves) are never returned, in either isolation.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::cluster::client::Client;
use crate::cluster::fetch_session::{FetchSession, PartitionFetch, SessionRequest};
use crate::cluster::metadata::{ClusterMetadata, PartitionInfo};
use crate::cluster::router::{LeaderAnswer, LeaderBatch, PartitionResults, TopicPartition};
use crate::deadline::deadline_after;
use crate::error::{BrokerRef, ClientError};
use crate::producer::produce::{topic_ids_of, topic_name};
use kafka_vocab::Isolation;
use kafka_wire::protocol::messages::fetch::{self, AbortedTransaction, READ_COMMITTED, READ_UNCOMMITTED};
use kafka_wire::protocol::messages::{
    FetchPartition, FetchPartitionResponse, FetchRequest, FetchTopic, ForgottenTopic,
};
use kafka_wire::protocol::records::{
    legacy, BatchHeader, BatchView, Budget, ControlRecordKey, ControlRecordType, DecodeOptions, Entries,
    Entry, StreamedBatch,
};

use super::fetched::{FetchedPartition, FetchedRecord};
use super::streamed::{chunk_size, take_streamed, Taken};
use kafka_wire::protocol::{DecodeError, DecodeErrorKind, ErrorCode, TaggedFields, Uuid};

/// One partition's offsets to read: `from` inclusive, `until` exclusive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRange {
    /// The partition to read; the request goes to its leader.
    pub partition: TopicPartition,
    /// First offset to return (inclusive); must be `>= 0`.
    pub from: i64,
    /// Offset to stop before (exclusive); must be `>= from`. `from == until` reads nothing.
    pub until: i64,
}

impl FetchRange {
    /// The range `[from, until)` of `partition`; checked when fetched, not here.
    pub fn new(partition: TopicPartition, from: i64, until: i64) -> Self {
        Self { partition, from, until }
    }
}

/// How to fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchOptions {
    /// How long a broker may hold a request while it has fewer than `min_bytes` to send.
    pub max_wait: Duration,
    /// Bytes a broker waits for (up to `max_wait`) before answering.
    pub min_bytes: i32,
    /// Cap on one response's record bytes (Fetch v3+); a first batch larger than it is still
    /// sent whole, so progress is always possible.
    pub max_bytes: i32,
    /// Cap on one partition's record bytes per response (`max.partition.fetch.bytes`); only a
    /// partition sent a batch cut short (a batch above the cap, from a broker before Fetch v3)
    /// asks for double the next round.
    pub partition_max_bytes: i32,
    /// Which records are visible: read_committed stops at the last stable offset and drops
    /// aborted transactions' records (Fetch v4+, Kafka 0.11+; an older broker fails the call with
    /// [`ClientError::NotSupported`]).
    pub isolation: Isolation,
    /// Overall deadline for the call, every round and retry included.
    pub timeout: Duration,
    /// The most decompressed record bytes a [`Fetcher`](crate::Fetcher) holds at once, across
    /// its brokers (`kwire.fetch.max.decompressed.bytes`): the bound on memory that the
    /// compressed limits above cannot give, since one compressed byte may hold hundreds. Each
    /// response held decoded gets its share; a response whose batches unpack past it is read up
    /// to there (the rest comes in the next round, which asks for fewer bytes of those
    /// partitions), except that a response always yields its first batch. Uncompressed records
    /// are slices of the response and do not count. Default 16 MiB.
    pub max_decompressed_bytes: usize,
    /// Limits for decoding the record data (among them the absolute cap on what one batch may
    /// decompress to).
    pub decode: DecodeOptions,
}

impl FetchOptions {
    /// [`FetchOptions::max_decompressed_bytes`]'s default: 16 MiB.
    pub const DEFAULT_MAX_DECOMPRESSED_BYTES: usize = 16 * 1024 * 1024;
}

impl Default for FetchOptions {
    fn default() -> Self {
        Self {
            max_wait: Duration::from_millis(500),
            min_bytes: 1,
            max_bytes: 50 * 1024 * 1024,
            partition_max_bytes: 1024 * 1024,
            isolation: Isolation::ReadUncommitted,
            timeout: Duration::from_secs(30),
            max_decompressed_bytes: FetchOptions::DEFAULT_MAX_DECOMPRESSED_BYTES,
            decode: DecodeOptions::default(),
        }
    }
}

/// A leader's answer for one partition, decoded after the merge so a bad record set fails
/// only its own partition.
#[derive(Debug)]
pub(super) struct LeaderData {
    pub(super) broker: BrokerRef,
    pub(super) version: i16,
    /// `None`: nothing new — an incremental session response left the partition out, or its
    /// preferred read replica answered an error and the leader is asked next.
    pub(super) response: Option<FetchPartitionResponse>,
    /// `broker` is the partition's preferred read replica, not its leader.
    pub(super) from_replica: bool,
}

/// What one round asks of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Want {
    pub(super) position: i64,
    pub(super) max_bytes: i32,
    /// Rounds in a row this partition made no progress.
    pub(super) stalls: u32,
}

/// A range being read.
#[derive(Debug)]
pub(super) struct Progress {
    pub(super) from: i64,
    pub(super) until: i64,
    pub(super) position: i64,
    pub(super) max_bytes: i32,
    /// Rounds in a row without progress; such partitions go first in the next request.
    pub(super) stalls: u32,
    /// The preferred read replica whose answer gave the log bounds in `fetched`; `None` when
    /// the leader gave them. A replica's end of the log does not end a range: see
    /// [`Progress::at_replica_end`].
    pub(super) bounds_from: Option<i32>,
    pub(super) fetched: FetchedPartition,
    /// Reading goes on past the log's end (a consumer's partition): only `until` completes it.
    pub(super) follows: bool,
    /// The base offset of a batch found too large to unpack whole, still being read as it
    /// decompresses: the next rounds stream it without trying to unpack it first.
    pub(super) streaming: Option<i64>,
}

impl Progress {
    pub(super) fn new(range: &FetchRange, max_bytes: i32) -> Self {
        Self {
            from: range.from,
            until: range.until,
            position: range.from,
            max_bytes,
            stalls: 0,
            bounds_from: None,
            follows: false,
            streaming: None,
            fetched: FetchedPartition {
                records: Vec::new(),
                next_offset: range.from,
                log_start: None,
                high_watermark: -1,
                last_stable: None,
            },
        }
    }

    /// The range is complete: `until` reached, or — unless it follows the log
    /// ([`Fetcher::follow`](crate::Fetcher::follow)) — the end of the log as its leader reported it.
    pub(super) fn done(&self, isolation: Isolation) -> bool {
        self.position >= self.until
            || (!self.follows && self.bounds_from.is_none() && self.at_log_end(isolation))
    }

    /// The preferred read replica that reported the position at its end of the log, short of
    /// `until`. A follower's high watermark may lag the leader's, so only the leader's word
    /// ends a range: the caller sends the next fetch to the leader (which names the replica
    /// again if the range goes on).
    pub(super) fn at_replica_end(&self, isolation: Isolation) -> Option<i32> {
        self.bounds_from.filter(|_| self.position < self.until && self.at_log_end(isolation))
    }

    fn at_log_end(&self, isolation: Isolation) -> bool {
        let end = match isolation {
            Isolation::ReadUncommitted => Some(self.fetched.high_watermark),
            Isolation::ReadCommitted => self.fetched.last_stable.or(Some(self.fetched.high_watermark)),
        };
        end.is_some_and(|end| end >= 0 && self.position >= end)
    }
}

impl Client {
    /// Reads each range `[from, until)` from its partition's leader, round after round, until
    /// every range is complete or `options.timeout` passes. One result per partition: its
    /// records, or why it failed (an offset outside the log is
    /// [`ClientError::OffsetOutOfRange`], naming the offset, the range and the log's bounds).
    ///
    /// Each round sends one Fetch request per leader broker. A range is complete when the fetch
    /// position reaches `until`, or when the log says there is nothing more to read now: the
    /// position reached the high watermark (read_uncommitted) or the last stable offset
    /// (read_committed); [`FetchedPartition::next_offset`] says where it stopped. Offsets missing
    /// inside a range (compacted away, or taken by transaction markers) are skipped, not waited
    /// for; records at or past `until` are never returned. read_committed drops the records of
    /// aborted transactions the way the Java consumer does; control batches are never returned.
    ///
    /// Retried until the deadline: leader changes (after a metadata refresh), lost connections
    /// and retriable Kafka errors. A negative `from`, `until < from` or a partition given twice
    /// fails that partition with [`ClientError::InvalidArgument`] before anything is sent.
    pub async fn fetch_range(
        &self,
        ranges: &[FetchRange],
        options: &FetchOptions,
    ) -> PartitionResults<FetchedPartition> {
        let deadline = deadline_after(options.timeout);
        let mut results: PartitionResults<FetchedPartition> = BTreeMap::new();
        let mut progress: BTreeMap<TopicPartition, Progress> = BTreeMap::new();
        for range in ranges {
            let tp = &range.partition;
            let invalid = if range.from < 0 || range.until < range.from {
                Some(format!("[{}, {}) is not a range of offsets of {tp}", range.from, range.until))
            } else if progress.contains_key(tp) || results.contains_key(tp) {
                Some(format!("{tp} is given more than one range"))
            } else {
                None
            };
            if let Some(message) = invalid {
                progress.remove(tp);
                results.insert(tp.clone(), Err(ClientError::InvalidArgument { message }));
                continue;
            }
            let p = Progress::new(range, options.partition_max_bytes.max(1));
            if p.position >= p.until {
                results.insert(tp.clone(), Ok(p.fetched));
            } else {
                progress.insert(tp.clone(), p);
            }
        }

        let mut out_of_range: Vec<(TopicPartition, i64, (i64, i64))> = Vec::new();
        while !progress.is_empty() {
            let now = Instant::now();
            if now >= deadline {
                for (tp, p) in std::mem::take(&mut progress) {
                    results.insert(tp.clone(), Err(stalled(&tp, &p)));
                }
                break;
            }
            let requested: HashMap<TopicPartition, Want> = progress
                .iter()
                .map(|(tp, p)| {
                    (tp.clone(), Want { position: p.position, max_bytes: p.max_bytes, stalls: p.stalls })
                })
                .collect();
            let partitions: Vec<TopicPartition> = progress.keys().cloned().collect();
            let round = self.fetch_round(&partitions, &requested, options, deadline - now).await;
            for (tp, answer) in round {
                let Some(p) = progress.get_mut(&tp) else { continue };
                // Every record of the range is kept until the end anyway: no budget.
                let outcome =
                    answer.and_then(|data| apply_answer(&tp, p, data, options, &mut Unpacked::unbounded()));
                if outcome.is_ok() {
                    self.leader_confirms_end(&tp, p, options.isolation);
                }
                match outcome {
                    Ok(()) if p.done(options.isolation) => {
                        if let Some(mut p) = progress.remove(&tp) {
                            p.fetched.next_offset = p.position;
                            results.insert(tp, Ok(p.fetched));
                        }
                    }
                    Ok(()) => {}
                    Err(ClientError::Kafka { code: ErrorCode::OFFSET_OUT_OF_RANGE, .. }) => {
                        out_of_range.push((tp.clone(), p.position, (p.from, p.until)));
                        progress.remove(&tp);
                    }
                    Err(e) => {
                        progress.remove(&tp);
                        results.insert(tp, Err(e));
                    }
                }
            }
        }

        if !out_of_range.is_empty() {
            let tps: Vec<TopicPartition> = out_of_range.iter().map(|(tp, _, _)| tp.clone()).collect();
            let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(1));
            let ranges = self.log_ranges(&tps, left).await;
            for (tp, offset, requested) in out_of_range {
                let log = ranges.get(&tp).and_then(|r| r.as_ref().ok());
                results.insert(
                    tp.clone(),
                    Err(ClientError::OffsetOutOfRange {
                        partition: tp,
                        offset,
                        requested,
                        log_start: log.map(|r| r.log_start),
                        high_watermark: log.map(|r| r.high_watermark),
                    }),
                );
            }
        }
        results
    }

    /// The node to fetch `tp` from now: the preferred read replica its leader named while that
    /// choice holds (see [`ReadReplicas`](crate::cluster::read_replica::ReadReplicas)), else its leader.
    pub(super) fn fetch_target(
        &self,
        tp: &TopicPartition,
        partition: &PartitionInfo,
        metadata: &ClusterMetadata,
    ) -> Option<i32> {
        self.read_replicas().target(tp, partition, metadata, Instant::now())
    }

    /// After `p` took an answer: a preferred read replica's end of the log short of the
    /// range's end is for the leader to confirm, so the next fetch of `tp` goes to the leader.
    pub(super) fn leader_confirms_end(&self, tp: &TopicPartition, p: &Progress, isolation: Isolation) {
        if let Some(node) = p.at_replica_end(isolation) {
            self.read_replicas().back_to_leader(tp, Some(node));
        }
    }

    /// One Fetch request per broker for `partitions`, at the positions in `requested`, inside
    /// that broker's incremental fetch session (v7+): the first request to a broker lists every
    /// partition, the next ones only those whose position or size changed (and forget the
    /// ones no longer read). A partition an incremental response leaves out has nothing new
    /// (its [`LeaderData::response`] is `None`).
    ///
    /// Each partition goes to [`Client::fetch_target`]: its leader, or the preferred read
    /// replica its leader named (KIP-392, with `client.rack` set). An error code from that
    /// replica, or the replica's connection failing, sends the partition back to its leader
    /// (the error code itself becomes "nothing new", the leader's answer follows in the next
    /// round; a failed connection is retried at the leader within the round), which is then
    /// asked without the rack id for a while so that it serves the records itself.
    pub(super) async fn fetch_round(
        &self,
        partitions: &[TopicPartition],
        requested: &HashMap<TopicPartition, Want>,
        options: &FetchOptions,
        timeout: Duration,
    ) -> PartitionResults<LeaderData> {
        let api = fetch::SPEC.key;
        let choose = |tp: &TopicPartition, partition: &PartitionInfo, metadata: &ClusterMetadata| {
            self.fetch_target(tp, partition, metadata)
        };
        self.route_to(api, partitions, timeout, choose, |target, batch| async move {
            let wanted = wanted_in_order(&batch, requested);
            let mut ids = topic_ids_of(self, wanted.iter().map(|(tp, _)| &*tp.topic));
            let addr = target.broker.addr.clone();
            let node = target.broker.node_id;
            let rack_allowed =
                self.read_replicas().rack_allowed(batch.iter().map(|(tp, _)| tp), Instant::now());
            let rack = self.config().client_rack.as_deref().filter(|_| rack_allowed);
            let mut session = self.take_fetch_session(&addr);
            if session.ids_changed(wanted.iter().map(|(tp, _)| &*tp.topic), &ids) {
                session = FetchSession::default();
            }
            let plan = session.next_request(&wanted);
            session.add_forgotten_ids(&plan, &mut ids);
            // Not given back on an error: the broker may or may not have applied the epoch, so
            // the next request starts a new session.
            let sent = self
                .send_built(&target.broker, |version| {
                    build_request(&wanted, &plan, &ids, options, rack, version)
                })
                .await;
            let (version, response) = match sent {
                Ok(answer) => answer,
                Err(e) => {
                    // A replica that cannot be reached: its partitions' retry goes to their leaders.
                    let mut replicas = self.read_replicas();
                    let now = Instant::now();
                    for (tp, _) in &batch {
                        replicas.replica_failed(tp, node, now);
                    }
                    return Err(e);
                }
            };
            if options.isolation == Isolation::ReadCommitted {
                crate::kafka_release::READ_COMMITTED_FETCH.check(version, &target.broker)?;
            }
            if let Some(code) = response.error_code.filter(|c| !c.is_ok()) {
                return Err(ClientError::Kafka {
                    broker: target.broker.clone(),
                    api,
                    code,
                    context: "the whole fetch".to_owned(),
                });
            }
            let incremental = version >= SESSIONS_FROM && !plan.is_full();
            if version >= SESSIONS_FROM {
                session.answered(&plan, response.session_id.unwrap_or(0));
                session.remember_ids(&plan, &ids);
                self.put_fetch_session(&addr, session);
            }
            let mut answers: Vec<(TopicPartition, LeaderAnswer<LeaderData>)> = Vec::new();
            let epochs: HashMap<&TopicPartition, Option<i32>> =
                batch.iter().map(|(tp, e)| (tp, *e)).collect();
            let now = Instant::now();
            let mut replicas = self.read_replicas();
            for topic in response.responses {
                let Some(name) = topic_name(topic.topic, topic.topic_id, &ids) else { continue };
                for p in topic.partitions {
                    let tp = TopicPartition::new(name.clone(), p.partition_index);
                    let from_replica = replicas.reads_from(&tp, node);
                    let answer = if p.error_code.is_ok() {
                        if let Some(replica) = p.preferred_read_replica.filter(|r| Some(*r) != node) {
                            let epoch = epochs.get(&tp).copied().flatten();
                            replicas.preferred(&tp, replica, epoch, now);
                        }
                        Ok(LeaderData {
                            broker: target.broker.clone(),
                            version,
                            response: Some(p),
                            from_replica,
                        })
                    } else if replicas.replica_failed(&tp, node, now) {
                        // Whatever the replica's error (not a follower any more, an offset it
                        // does not have yet, ...), the leader answers for the partition next.
                        Ok(LeaderData {
                            broker: target.broker.clone(),
                            version,
                            response: None,
                            from_replica,
                        })
                    } else {
                        Err(p.error_code)
                    };
                    answers.push((tp, answer));
                }
            }
            drop(replicas);
            if incremental {
                let answered: HashSet<TopicPartition> = answers.iter().map(|(tp, _)| tp.clone()).collect();
                for (tp, _) in wanted {
                    if !answered.contains(&tp) {
                        answers.push((
                            tp,
                            Ok(LeaderData {
                                broker: target.broker.clone(),
                                version,
                                response: None,
                                from_replica: false,
                            }),
                        ));
                    }
                }
            }
            Ok(answers)
        })
        .await
    }
}

/// What one response may still decompress, across its partitions: its share of
/// [`FetchOptions::max_decompressed_bytes`]. Spent, it stops the decoding at the next
/// compressed batch — once the response has yielded a batch, so that reading always moves on.
/// A single batch larger than the whole budget (`batch_limit`) is read as it decompresses,
/// a budget's worth per round.
#[derive(Debug)]
pub(super) struct Unpacked {
    left: usize,
    yielded: bool,
    /// The most one batch may decompress to and still be unpacked whole.
    batch_limit: usize,
}

impl Unpacked {
    /// A response's share (`share` decompressed bytes) of a budget of `budget` bytes.
    pub(super) fn new(share: usize, budget: usize) -> Self {
        Self { left: share, yielded: false, batch_limit: budget }
    }

    /// No bound but [`DecodeOptions`]' (a caller that keeps every record anyway).
    pub(super) fn unbounded() -> Self {
        Self::new(usize::MAX, usize::MAX)
    }

    fn spent(&self) -> bool {
        self.yielded && self.left == 0
    }

    /// A batch was read that decompressed to `bytes` (0 when it was not compressed).
    fn charge(&mut self, bytes: usize) {
        self.left = self.left.saturating_sub(bytes);
        self.yielded = true;
    }
}

/// The smallest per-partition request the decompressed budget shrinks a partition to: a
/// broker sends a first batch whole whatever the limit, so smaller only costs rounds.
const MIN_PARTITION_BYTES: i32 = 4 * 1024;

/// Takes one leader's answer for `p` into it: its records and log bounds, the position moved
/// past every complete batch read. A partition that made no progress goes first next round,
/// with double the bytes if what it got was a batch cut short; a record set that does not
/// decode is the partition's error. A partition `unpacked` stopped asks next round for about
/// the bytes that fitted; one that moved on grows back to `max.partition.fetch.bytes`.
pub(super) fn apply_answer(
    tp: &TopicPartition,
    p: &mut Progress,
    data: LeaderData,
    options: &FetchOptions,
    unpacked: &mut Unpacked,
) -> Result<(), ClientError> {
    let before = p.position;
    let Some(response) = &data.response else { return Ok(()) };
    p.bounds_from = if data.from_replica { data.broker.node_id } else { None };
    let cut = apply_response(p, response, options.isolation, &options.decode, unpacked).map_err(|e| {
        ClientError::Records {
            partition: tp.clone(),
            offset: e.offset,
            broker: data.broker,
            version: data.version,
            source: Box::new(e.source),
        }
    })?;
    if let Some(read) = cut {
        // The records unpack to more than the response could hold: ask for about as many
        // compressed bytes as fitted (nothing fitted: the budget went to the partitions before
        // it, and it goes first next round with what it asked for).
        if read > 0 {
            p.max_bytes = i32::try_from(read).unwrap_or(i32::MAX).max(MIN_PARTITION_BYTES);
        }
        p.stalls = if p.position == before { p.stalls + 1 } else { 0 };
        return Ok(());
    }
    if p.position == before {
        p.stalls += 1;
        // Only a batch cut short (larger than the limit: brokers before Fetch v3 send a
        // partial one) needs more bytes; a partition left empty because the response was full
        // keeps `max.partition.fetch.bytes` and goes first next round.
        if response.records.as_ref().is_some_and(|r| !r.is_empty()) {
            p.max_bytes = p.max_bytes.saturating_mul(2).min(i32::MAX / 2);
        }
    } else {
        p.stalls = 0;
        // Back towards `max.partition.fetch.bytes` after the budget shrank it.
        if p.max_bytes < options.partition_max_bytes {
            p.max_bytes = p.max_bytes.saturating_mul(2).min(options.partition_max_bytes);
        }
    }
    Ok(())
}

/// The first Fetch version with sessions (KIP-227).
const SESSIONS_FROM: i16 = 7;

/// The partitions of one leader's batch with what to ask of each. Partitions that made no
/// progress last round go first: a broker always sends the first batch of the first partition
/// with data, however large.
fn wanted_in_order(
    batch: &LeaderBatch,
    requested: &HashMap<TopicPartition, Want>,
) -> Vec<(TopicPartition, PartitionFetch)> {
    let mut parts: Vec<(&TopicPartition, Option<i32>, Want)> =
        batch.iter().filter_map(|(tp, epoch)| Some((tp, *epoch, *requested.get(tp)?))).collect();
    parts.sort_by_key(|(tp, _, want)| (Reverse(want.stalls), (*tp).clone()));
    parts
        .into_iter()
        .map(|(tp, leader_epoch, want)| {
            (
                tp.clone(),
                PartitionFetch { fetch_offset: want.position, max_bytes: want.max_bytes, leader_epoch },
            )
        })
        .collect()
}

pub(super) fn stalled(tp: &TopicPartition, p: &Progress) -> ClientError {
    ClientError::DeadlineExceeded {
        what: format!("Fetch of {tp} [{}, {})", p.from, p.until),
        last_error: Box::new(ClientError::Protocol {
            broker: BrokerRef { node_id: None, addr: "leader".to_owned() },
            message: format!(
                "reading stopped at offset {} (high watermark {}, last stable {:?})",
                p.position, p.fetched.high_watermark, p.fetched.last_stable
            ),
        }),
    }
}

/// The Fetch request at `version`: below v7 every wanted partition, sessionless; from v7 the
/// session's request (`plan`) — its partitions and forgotten partitions, id and epoch.
fn build_request(
    wanted: &[(TopicPartition, PartitionFetch)],
    plan: &SessionRequest,
    ids: &HashMap<String, Uuid>,
    options: &FetchOptions,
    rack: Option<&str>,
    version: i16,
) -> FetchRequest {
    let sessions = version >= SESSIONS_FROM;
    let send = if sessions { plan.send.as_slice() } else { wanted };
    let mut topics: Vec<FetchTopic> = Vec::new();
    for (tp, want) in send {
        let partition = FetchPartition {
            partition: tp.partition,
            current_leader_epoch: (version >= 9).then_some(want.leader_epoch.unwrap_or(-1)),
            fetch_offset: want.fetch_offset,
            last_fetched_epoch: (version >= 12).then_some(-1),
            log_start_offset: (version >= 5).then_some(-1),
            partition_max_bytes: want.max_bytes,
            replica_directory_id: None,
            high_watermark: None,
            tagged_fields: TaggedFields::default(),
        };
        match topics.last_mut() {
            Some(last) if last.topic.as_deref() == Some(&*tp.topic) => last.partitions.push(partition),
            _ => topics.push(FetchTopic {
                topic: Some(tp.topic.to_string()),
                topic_id: ids.get(&*tp.topic).copied(),
                partitions: vec![partition],
                tagged_fields: TaggedFields::default(),
            }),
        }
    }
    let mut forgotten: Vec<ForgottenTopic> = Vec::new();
    if sessions {
        for tp in &plan.forget {
            match forgotten.last_mut() {
                Some(last) if last.topic.as_deref() == Some(&*tp.topic) => {
                    last.partitions.push(tp.partition);
                }
                _ => forgotten.push(ForgottenTopic {
                    topic: Some(tp.topic.to_string()),
                    topic_id: ids.get(&*tp.topic).copied(),
                    partitions: vec![tp.partition],
                    tagged_fields: TaggedFields::default(),
                }),
            }
        }
    }
    FetchRequest {
        cluster_id: None,
        replica_id: Some(fetch::CONSUMER_REPLICA_ID),
        replica_state: None,
        max_wait_ms: i32::try_from(options.max_wait.as_millis()).unwrap_or(i32::MAX),
        min_bytes: options.min_bytes,
        max_bytes: Some(options.max_bytes),
        isolation_level: Some(match options.isolation {
            Isolation::ReadUncommitted => READ_UNCOMMITTED,
            Isolation::ReadCommitted => READ_COMMITTED,
        }),
        session_id: Some(if sessions { plan.session_id } else { 0 }),
        session_epoch: Some(if sessions { plan.session_epoch } else { -1 }),
        topics,
        forgotten_topics_data: Some(forgotten),
        rack_id: Some(rack.unwrap_or_default().to_owned()),
        tagged_fields: TaggedFields::default(),
    }
}

/// Adds one response's records in `[position, until)` to `p` and moves the position past
/// every complete batch read (data, aborted or control). Log bounds are taken from the
/// response.
///
/// Batches are read through [`BatchView`]: an aborted or control batch, or one wholly before
/// the position, costs its CRC check and nothing per record; records before the position are
/// skipped without being copied out; reading stops at `until`.
///
/// [`DecodeOptions::max_decompressed_size`] bounds what one response may decompress for the
/// partition: when the next batch would pass it after the position moved, reading stops at
/// that batch (the next fetch starts there with a fresh budget), so a highly compressible
/// topic is read in several rounds instead of failing. Only a single batch that alone
/// decompresses past the limit is an error.
///
/// `unpacked`, the response's share of [`FetchOptions::max_decompressed_bytes`], stops the
/// reading the same way across partitions: `Some(bytes)` says it stopped this one, after
/// `bytes` of its record data. A batch that alone decompresses past the whole of
/// `max_decompressed_bytes` is not unpacked at once but streamed (`super::streamed`), a
/// budget's worth of records per round.
pub(super) fn apply_response(
    p: &mut Progress,
    response: &FetchPartitionResponse,
    isolation: Isolation,
    decode: &DecodeOptions,
    unpacked: &mut Unpacked,
) -> Result<Option<usize>, Unreadable> {
    p.fetched.high_watermark = response.high_watermark;
    p.fetched.log_start = response.log_start_offset.filter(|o| *o >= 0);
    p.fetched.last_stable = response.last_stable_offset.filter(|o| *o >= 0);
    let Some(records) = &response.records else { return Ok(None) };
    let mut aborted = Aborted::new(response.aborted_transactions.as_deref().unwrap_or_default());
    let mut budget = Budget::new(decode);
    let mut entries = Entries::new(records);
    let start = p.position;
    while let Some(entry) = entries.next_entry().map_err(|e| Unreadable::at(p.position, e))? {
        if p.position >= p.until {
            break;
        }
        let after_progress = p.position > start;
        let budget_spent = |e: &DecodeError| after_progress && too_large(e);
        if unpacked.spent() {
            return Ok(Some(entry.at));
        }
        if entry.magic != 2 {
            let unpacked_before = budget.spent();
            match take_legacy(p, &entry, records, decode, &mut budget) {
                Ok(()) => {}
                Err(e) if budget_spent(&e) => break,
                Err(e) => return Err(Unreadable::at(p.position, e)),
            }
            unpacked.charge(budget.spent() - unpacked_before);
            continue;
        }
        let base_offset = entry_base_offset(&entry);
        let unreadable = |e| Unreadable::at(base_offset, e);
        if p.streaming != Some(base_offset) {
            let mut part = budget.part(unpacked.batch_limit);
            match BatchView::parse_entry(entry.bytes, entry.at, decode, &mut part) {
                Ok(batch) => {
                    unpacked.charge(part.spent());
                    budget.absorb(&part);
                    take_whole(p, &batch, records, isolation, &mut aborted).map_err(unreadable)?;
                    continue;
                }
                // Larger than the whole decompressed budget: read as it decompresses, below.
                Err(e) if too_large(&e) && unpacked.batch_limit < budget.left() => {}
                Err(e) if budget_spent(&e) => break,
                Err(e) => return Err(unreadable(e)),
            }
        }
        p.streaming = Some(base_offset);
        let limit = unpacked.batch_limit;
        let batch = StreamedBatch::parse_entry(entry.bytes, entry.at, decode, chunk_size(limit))
            .map_err(unreadable)?;
        let control = || streamed_control_type(&entry, decode);
        let dropped = match isolation {
            Isolation::ReadCommitted => aborted.drops(&batch.header, control),
            Isolation::ReadUncommitted => false,
        };
        let next = batch.header.next_offset();
        if dropped || batch.header.attributes.is_control || next <= p.position {
            p.position = p.position.max(next.min(p.until));
            p.streaming = None;
            continue;
        }
        let (taken, held) = take_streamed(batch, &mut p.position, p.until, &mut p.fetched.records, limit)
            .map_err(unreadable)?;
        unpacked.charge(held);
        match taken {
            Taken::Whole => p.streaming = None,
            Taken::Part => return Ok(Some(entry.at)),
        }
    }
    Ok(None)
}

/// A partition's record data that did not decode, and where.
#[derive(Debug)]
pub(super) struct Unreadable {
    /// The base offset of the batch that did not decode; the fetch position when the data
    /// cannot be split into batches, or for a legacy message set.
    pub(super) offset: i64,
    pub(super) source: DecodeError,
}

impl Unreadable {
    fn at(offset: i64, source: DecodeError) -> Self {
        Self { offset, source }
    }
}

fn too_large(e: &DecodeError) -> bool {
    matches!(e.kind, DecodeErrorKind::DecompressedTooLarge { .. })
}

/// An entry's first field: a batch's base offset (a legacy wrapper's last offset). [`Entries`]
/// yields only entries longer than their 12-byte log overhead.
fn entry_base_offset(entry: &Entry<'_>) -> i64 {
    entry.bytes.first_chunk::<8>().map_or(-1, |b| i64::from_be_bytes(*b))
}

/// Takes a batch unpacked whole: its records in `[position, until)` unless read_committed
/// drops it; the position moves past it either way.
fn take_whole(
    p: &mut Progress,
    batch: &BatchView<'_>,
    records: &Bytes,
    isolation: Isolation,
    aborted: &mut Aborted,
) -> Result<(), DecodeError> {
    // A batch's offsets are spoken for even when compaction removed its records.
    let next = batch.header.next_offset();
    let dropped = match isolation {
        Isolation::ReadCommitted => aborted.drops(&batch.header, || batch.control_type()),
        Isolation::ReadUncommitted => false,
    };
    if !dropped && !batch.header.attributes.is_control && next > p.position {
        take_v2(p, batch, records)?;
    }
    p.position = p.position.max(next.min(p.until));
    Ok(())
}

/// A streamed control batch's marker type, read from its first record's key.
fn streamed_control_type(entry: &Entry<'_>, decode: &DecodeOptions) -> Option<ControlRecordType> {
    let mut batch = StreamedBatch::parse_entry(entry.bytes, entry.at, decode, 4096).ok()?;
    let (first, _) = batch.next_record()?.ok()?;
    ControlRecordKey::parse(first.key?).ok().map(|k| k.kind)
}

/// Takes a legacy (magic 0/1) entry's messages in `[position, until)`.
fn take_legacy(
    p: &mut Progress,
    entry: &Entry<'_>,
    records: &Bytes,
    decode: &DecodeOptions,
    budget: &mut Budget,
) -> Result<(), DecodeError> {
    let mut messages = Vec::new();
    legacy::read_entry(&records.slice_ref(entry.bytes), entry.at, decode, budget, 0, &mut messages)?;
    for m in messages {
        if m.offset < p.position {
            continue;
        }
        if m.offset >= p.until {
            p.position = p.until;
            break;
        }
        p.position = m.offset.saturating_add(1);
        p.fetched.records.push(FetchedRecord {
            offset: m.offset,
            timestamp: m.timestamp.filter(|t| *t >= 0),
            timestamp_type: m.timestamp_type(),
            key: m.key,
            value: m.value,
            headers: Vec::new(),
            leader_epoch: None,
        });
    }
    Ok(())
}

/// Adds a data batch's records in `[position, until)`; `input` is the `records` field the
/// batch was read from (its keys and values become slices of it, or of the batch's
/// decompressed buffer).
fn take_v2(p: &mut Progress, batch: &BatchView<'_>, input: &Bytes) -> Result<(), DecodeError> {
    let h = &batch.header;
    let owner = batch.records_owner(input);
    let leader_epoch = (h.partition_leader_epoch >= 0).then_some(h.partition_leader_epoch);
    for r in batch.records() {
        let r = r?;
        let offset = h.offset_of(&r);
        if offset < p.position {
            continue;
        }
        if offset >= p.until {
            break;
        }
        let record = r.to_record_in(&owner);
        p.fetched.records.push(FetchedRecord {
            offset,
            timestamp: Some(h.timestamp_of(&r)),
            timestamp_type: h.attributes.timestamp_type,
            key: record.key,
            value: record.value,
            headers: record.headers,
            leader_epoch,
        });
    }
    Ok(())
}

/// read_committed bookkeeping over one response, as the Java consumer keeps it: aborted
/// transactions not yet reached (by first offset), and producers inside an aborted
/// transaction whose ABORT marker is still ahead.
#[derive(Debug)]
struct Aborted {
    /// `(first_offset, producer_id)`, highest first offset first, so the next is `last()`.
    ahead: Vec<(i64, i64)>,
    open: HashSet<i64>,
}

impl Aborted {
    fn new(list: &[AbortedTransaction]) -> Self {
        let mut ahead: Vec<(i64, i64)> = list.iter().map(|t| (t.first_offset, t.producer_id)).collect();
        ahead.sort_unstable_by_key(|&(first, pid)| Reverse((first, pid)));
        Self { ahead, open: HashSet::new() }
    }

    /// Whether read_committed drops this data batch. Must see every batch in offset order,
    /// control batches included (an ABORT marker closes its producer's aborted transaction).
    fn drops(&mut self, h: &BatchHeader, control_type: impl FnOnce() -> Option<ControlRecordType>) -> bool {
        if h.producer_id < 0 {
            return false;
        }
        while let Some(&(first, pid)) = self.ahead.last() {
            if first > h.last_offset() {
                break;
            }
            self.open.insert(pid);
            self.ahead.pop();
        }
        if h.attributes.is_control {
            if control_type() == Some(ControlRecordType::Abort) {
                self.open.remove(&h.producer_id);
            }
            return true;
        }
        h.attributes.is_transactional && self.open.contains(&h.producer_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::fetch_session::FetchSession;
    use kafka_wire::protocol::records::{
        BatchAttributes, Compression, ControlRecordKey, EndTransactionMarker, Header, Record, RecordBatch,
        TimestampType,
    };

    fn data(base: i64, n: i32, producer_id: i64, transactional: bool) -> RecordBatch {
        let records = (0..n)
            .map(|i| Record {
                offset_delta: i,
                timestamp_delta: i64::from(i),
                ..Record::new(None, Some(Bytes::from(format!("v{}", base + i64::from(i)))))
            })
            .collect();
        let mut b = RecordBatch::new(base, 1_000, Compression::None, records);
        b.producer_id = producer_id;
        b.producer_epoch = 0;
        b.attributes.is_transactional = transactional;
        b
    }

    fn marker(offset: i64, producer_id: i64, kind: ControlRecordType) -> RecordBatch {
        let key = ControlRecordKey { version: 0, kind }.to_bytes();
        let value = EndTransactionMarker { version: 0, coordinator_epoch: 0 }.to_bytes();
        let mut b =
            RecordBatch::new(offset, 1_000, Compression::None, vec![Record::new(Some(key), Some(value))]);
        b.producer_id = producer_id;
        b.producer_epoch = 0;
        b.attributes = BatchAttributes { is_control: true, is_transactional: true, ..b.attributes };
        b
    }

    fn response(
        batches: &[RecordBatch],
        aborted: &[(i64, i64)],
        high_watermark: i64,
    ) -> FetchPartitionResponse {
        let mut records = Vec::new();
        for b in batches {
            b.encode(&mut records).unwrap();
        }
        FetchPartitionResponse {
            high_watermark,
            last_stable_offset: Some(high_watermark),
            log_start_offset: Some(0),
            aborted_transactions: Some(
                aborted
                    .iter()
                    .map(|&(producer_id, first_offset)| AbortedTransaction {
                        producer_id,
                        first_offset,
                        tagged_fields: TaggedFields::default(),
                    })
                    .collect(),
            ),
            records: Some(Bytes::from(records)),
            ..FetchPartitionResponse::default()
        }
    }

    /// `response` applied to `p` with the default decode limits and no decompressed budget.
    fn read_into(
        p: &mut Progress,
        response: &FetchPartitionResponse,
        isolation: Isolation,
    ) -> Result<Option<usize>, DecodeError> {
        apply_response(p, response, isolation, &DecodeOptions::default(), &mut Unpacked::unbounded())
            .map_err(|e| e.source)
    }

    fn tp() -> TopicPartition {
        TopicPartition::new("t", 0)
    }

    fn progress(from: i64, until: i64) -> Progress {
        Progress::new(&FetchRange::new(TopicPartition::new("t", 0), from, until), 1 << 20)
    }

    fn offsets(p: &Progress) -> Vec<i64> {
        p.fetched.records.iter().map(|r| r.offset).collect()
    }

    /// 0–2 plain; 3–4 producer 7, aborted at 5; 6–7 producer 8, committed at 8; 9 plain;
    /// 10–11 producer 7 again, committed at 12.
    fn mixed_log() -> FetchPartitionResponse {
        response(
            &[
                data(0, 3, -1, false),
                data(3, 2, 7, true),
                marker(5, 7, ControlRecordType::Abort),
                data(6, 2, 8, true),
                marker(8, 8, ControlRecordType::Commit),
                data(9, 1, -1, false),
                data(10, 2, 7, true),
                marker(12, 7, ControlRecordType::Commit),
            ],
            &[(7, 3)],
            13,
        )
    }

    #[test]
    fn read_committed_drops_an_aborted_transaction_and_every_marker() {
        let mut p = progress(0, 13);
        read_into(&mut p, &mixed_log(), Isolation::ReadCommitted).unwrap();
        assert_eq!(offsets(&p), vec![0, 1, 2, 6, 7, 9, 10, 11]);
        assert_eq!(p.position, 13);
        assert!(p.done(Isolation::ReadCommitted));
    }

    /// `fetch_range` with `until = i64::MAX` ("up to whatever is there") once never completed:
    /// that value also meant "follow the log". Only a followed partition reads past the end.
    #[test]
    fn a_range_to_i64_max_ends_at_the_log_end_and_only_a_followed_one_goes_on() {
        let mut read = progress(0, i64::MAX);
        read_into(&mut read, &mixed_log(), Isolation::ReadUncommitted).unwrap();
        assert_eq!(read.position, 13);
        assert!(read.done(Isolation::ReadUncommitted));

        let mut followed = progress(0, i64::MAX);
        followed.follows = true;
        read_into(&mut followed, &mixed_log(), Isolation::ReadUncommitted).unwrap();
        assert_eq!(followed.position, 13);
        assert!(!followed.done(Isolation::ReadUncommitted));
    }

    #[test]
    fn read_uncommitted_keeps_aborted_records_but_not_markers() {
        let mut p = progress(0, 13);
        read_into(&mut p, &mixed_log(), Isolation::ReadUncommitted).unwrap();
        assert_eq!(offsets(&p), vec![0, 1, 2, 3, 4, 6, 7, 9, 10, 11]);
    }

    #[test]
    fn records_outside_the_range_are_never_returned() {
        let mut p = progress(4, 7);
        read_into(&mut p, &mixed_log(), Isolation::ReadUncommitted).unwrap();
        assert_eq!(offsets(&p), vec![4, 6]);
        assert_eq!(p.position, 7);
        assert!(p.done(Isolation::ReadUncommitted));
    }

    #[test]
    fn an_abort_marker_before_the_range_still_closes_the_transaction() {
        // Reading from 10: producer 7's aborted transaction ended at 5; its new one counts.
        let mut p = progress(10, 13);
        read_into(&mut p, &mixed_log(), Isolation::ReadCommitted).unwrap();
        assert_eq!(offsets(&p), vec![10, 11]);
    }

    #[test]
    fn offsets_compacted_away_are_skipped_not_waited_for() {
        // Offsets 0 and 3 survive of a batch that spanned 0–5; the next batch starts at 8.
        let mut gappy = data(0, 2, -1, false);
        gappy.records[1].offset_delta = 3;
        gappy.last_offset_delta = 5;
        let mut p = progress(0, 10);
        let r = response(&[gappy, data(8, 2, -1, false)], &[], 10);
        read_into(&mut p, &r, Isolation::ReadUncommitted).unwrap();
        assert_eq!(offsets(&p), vec![0, 3, 8, 9]);
        assert_eq!(p.position, 10);
    }

    #[test]
    fn a_batch_cut_short_by_the_broker_is_read_next_round() {
        let full = response(&[data(0, 2, -1, false), data(2, 2, -1, false)], &[], 4);
        let mut cut = full.clone();
        let records = full.records.clone().unwrap();
        cut.records = Some(records.slice(..records.len() - 3));
        let mut p = progress(0, 4);
        read_into(&mut p, &cut, Isolation::ReadUncommitted).unwrap();
        assert_eq!(offsets(&p), vec![0, 1]);
        assert_eq!(p.position, 2);
        assert!(!p.done(Isolation::ReadUncommitted));
    }

    #[test]
    fn a_range_past_the_high_watermark_ends_at_the_high_watermark() {
        let mut p = progress(0, 100);
        let r = response(&[data(0, 3, -1, false)], &[], 3);
        read_into(&mut p, &r, Isolation::ReadUncommitted).unwrap();
        assert!(p.done(Isolation::ReadUncommitted));
        assert_eq!(p.position, 3);
    }

    #[test]
    fn a_follower_at_its_high_watermark_short_of_the_range_does_not_end_it() {
        let r = response(&[data(0, 3, -1, false)], &[], 3);
        let replica = |from_replica| LeaderData {
            broker: BrokerRef { node_id: Some(3), addr: "127.0.0.1:9003".to_owned() },
            version: 12,
            response: Some(r.clone()),
            from_replica,
        };
        let mut p = progress(0, 10);
        apply_answer(&tp(), &mut p, replica(true), &FetchOptions::default(), &mut Unpacked::unbounded())
            .unwrap();
        assert_eq!(p.position, 3);
        assert!(!p.done(Isolation::ReadUncommitted));
        assert_eq!(p.at_replica_end(Isolation::ReadUncommitted), Some(3));
        // The same bounds from the leader end the range.
        let mut p = progress(0, 10);
        apply_answer(&tp(), &mut p, replica(false), &FetchOptions::default(), &mut Unpacked::unbounded())
            .unwrap();
        assert!(p.done(Isolation::ReadUncommitted));
        assert_eq!(p.at_replica_end(Isolation::ReadUncommitted), None);
        // `until` reached through a follower is the end.
        let mut p = progress(0, 3);
        apply_answer(&tp(), &mut p, replica(true), &FetchOptions::default(), &mut Unpacked::unbounded())
            .unwrap();
        assert!(p.done(Isolation::ReadUncommitted));
        assert_eq!(p.at_replica_end(Isolation::ReadUncommitted), None);
    }

    #[test]
    fn read_committed_stops_at_the_last_stable_offset() {
        let mut p = progress(0, 10);
        let mut r = response(&[data(0, 2, -1, false)], &[], 5);
        r.last_stable_offset = Some(2);
        read_into(&mut p, &r, Isolation::ReadCommitted).unwrap();
        assert!(p.done(Isolation::ReadCommitted));
        assert!(!p.done(Isolation::ReadUncommitted));
        assert_eq!(p.fetched.last_stable, Some(2));
    }

    #[test]
    fn record_fields_and_timestamps_come_through() {
        let mut b = data(0, 2, -1, false);
        b.records[0].key = Some(Bytes::from_static(b"k"));
        b.records[0].headers = vec![Header { key: "h".to_owned(), value: None }];
        b.partition_leader_epoch = 4;
        let mut appended = data(2, 1, -1, false);
        appended.attributes.timestamp_type = TimestampType::LogAppendTime;
        appended.max_timestamp = 9_999;
        let mut p = progress(0, 3);
        let r = response(&[b, appended], &[], 3);
        read_into(&mut p, &r, Isolation::ReadUncommitted).unwrap();
        let recs = &p.fetched.records;
        assert_eq!(recs[0].key.as_deref(), Some(&b"k"[..]));
        assert_eq!(recs[0].headers.len(), 1);
        assert_eq!(recs[0].leader_epoch, Some(4));
        assert_eq!((recs[0].timestamp, recs[1].timestamp), (Some(1_000), Some(1_001)));
        assert_eq!(recs[2].timestamp, Some(9_999));
        assert_eq!(recs[2].timestamp_type, TimestampType::LogAppendTime);
        assert_eq!(recs[2].leader_epoch, None);
    }

    #[test]
    fn garbage_record_data_is_a_decode_error_not_a_panic() {
        let mut r = response(&[data(0, 2, -1, false)], &[], 2);
        let mut bytes = r.records.clone().unwrap().to_vec();
        bytes[30] ^= 0xff;
        r.records = Some(Bytes::from(bytes));
        let mut p = progress(0, 2);
        assert!(read_into(&mut p, &r, Isolation::ReadUncommitted).is_err());
        assert!(p.fetched.records.is_empty());
    }

    /// An lz4 batch of `n` records of 10,000 `x` each: ≈ 100 bytes on the wire per 10 KB.
    #[cfg(feature = "lz4")]
    fn compressible(base: i64, n: i32) -> RecordBatch {
        let mut b = data(base, n, -1, false);
        for r in &mut b.records {
            r.value = Some(Bytes::from(vec![b'x'; 10_000]));
        }
        b.attributes.compression = Compression::Lz4;
        b
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn a_response_that_decompresses_past_the_limit_is_read_up_to_the_batch_that_passes_it() {
        // Three batches of ≈ 30 KB decompressed each, 70 KB allowed per response: the first two
        // are read, the third waits for the next round (its own fresh budget), nothing fails.
        let r = response(&[compressible(0, 3), compressible(3, 3), compressible(6, 3)], &[], 9);
        let opts = DecodeOptions { max_decompressed_size: 70_000, ..DecodeOptions::default() };
        let mut p = progress(0, 9);
        apply_response(&mut p, &r, Isolation::ReadUncommitted, &opts, &mut Unpacked::unbounded()).unwrap();
        assert_eq!(offsets(&p), vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(p.position, 6);
        assert!(!p.done(Isolation::ReadUncommitted));

        let rest = response(&[compressible(6, 3)], &[], 9);
        apply_response(&mut p, &rest, Isolation::ReadUncommitted, &opts, &mut Unpacked::unbounded()).unwrap();
        assert_eq!(p.position, 9);
        assert_eq!(p.fetched.records.len(), 9);
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn a_single_batch_that_decompresses_past_the_limit_is_an_error_naming_it() {
        let r = response(&[compressible(0, 3)], &[], 3);
        let opts = DecodeOptions { max_decompressed_size: 20_000, ..DecodeOptions::default() };
        let mut p = progress(0, 3);
        let err = apply_response(&mut p, &r, Isolation::ReadUncommitted, &opts, &mut Unpacked::unbounded())
            .unwrap_err();
        assert_eq!(err.offset, 0, "the batch's base offset");
        let err = err.source;
        assert!(matches!(err.kind, DecodeErrorKind::DecompressedTooLarge { max: 20_000 }), "{err}");
        assert!(p.fetched.records.is_empty());
        assert_eq!(p.position, 0);
    }

    /// One partition's answer in a leader's response.
    #[cfg(feature = "lz4")]
    fn answer(response: FetchPartitionResponse) -> LeaderData {
        LeaderData {
            broker: BrokerRef { node_id: Some(1), addr: "b1".to_owned() },
            version: 12,
            response: Some(response),
            from_replica: false,
        }
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn a_response_is_unpacked_up_to_its_share_and_the_partition_then_asks_for_what_fitted() {
        // Four batches of ≈ 30 KB decompressed each (≈ 100 bytes on the wire); the response's
        // share is 50 KB: two batches are read (the second passes the share), the rest waits.
        let r = response(
            &[compressible(0, 3), compressible(3, 3), compressible(6, 3), compressible(9, 3)],
            &[],
            12,
        );
        let wire_two: usize = {
            let mut buf = Vec::new();
            compressible(0, 3).encode(&mut buf).unwrap();
            compressible(3, 3).encode(&mut buf).unwrap();
            buf.len()
        };
        let options = FetchOptions::default();
        let mut p = progress(0, 12);
        let mut share = Unpacked::new(50_000, usize::MAX);
        apply_answer(&tp(), &mut p, answer(r), &options, &mut share).unwrap();
        assert_eq!(offsets(&p), vec![0, 1, 2, 3, 4, 5]);
        assert_eq!((p.position, p.stalls), (6, 0));
        assert_eq!(
            p.max_bytes,
            i32::try_from(wire_two).unwrap().max(MIN_PARTITION_BYTES),
            "asks for what fitted"
        );

        // A second partition of the same response gets nothing: no progress, it goes first next
        // round, and keeps what it asked for (no doubling: nothing was cut short by the broker).
        let mut q = progress(0, 12);
        let asked = q.max_bytes;
        apply_answer(&tp(), &mut q, answer(response(&[compressible(0, 3)], &[], 12)), &options, &mut share)
            .unwrap();
        assert!(q.fetched.records.is_empty());
        assert_eq!((q.position, q.stalls, q.max_bytes), (0, 1, asked));

        // The next response, with a fresh share, reads on; the request grows back towards
        // max.partition.fetch.bytes once a response fits.
        let shrunk = p.max_bytes;
        let rest = response(&[compressible(6, 3), compressible(9, 3)], &[], 12);
        apply_answer(&tp(), &mut p, answer(rest), &options, &mut Unpacked::new(1 << 20, usize::MAX)).unwrap();
        assert_eq!(p.position, 12);
        assert_eq!(p.max_bytes, (shrunk * 2).min(options.partition_max_bytes));
    }

    /// Rounds of `batch` (the broker sends it whole each time the position is inside it) until
    /// the range is read or an error: the offsets each round added, and the error.
    #[cfg(feature = "lz4")]
    fn rounds_of(
        batch: &RecordBatch,
        options: &FetchOptions,
        budget: usize,
    ) -> (Vec<Vec<i64>>, Option<ClientError>) {
        let until = batch.next_offset();
        let mut p = progress(0, until);
        let mut rounds = Vec::new();
        while p.position < until && rounds.len() < 100 {
            let r = response(std::slice::from_ref(batch), &[], until);
            let result =
                apply_answer(&tp(), &mut p, answer(r), options, &mut Unpacked::new(budget / 2, budget));
            rounds.push(p.fetched.records.drain(..).map(|r| r.offset).collect());
            if let Err(e) = result {
                return (rounds, Some(e));
            }
        }
        (rounds, None)
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn a_batch_larger_than_the_whole_budget_is_streamed_a_budget_per_round_every_record_once() {
        // 40 records of 10 KB: ≈ 400 KB decompressed, ≈ 4 KB on the wire; a 100 KB budget.
        let batch = compressible(0, 40);
        let (rounds, error) = rounds_of(&batch, &FetchOptions::default(), 100_000);
        assert!(error.is_none(), "{error:?}");
        let read: Vec<i64> = rounds.concat();
        assert_eq!(read, (0..40).collect::<Vec<_>>(), "every record once, in order");
        // A budget's worth per round (ten 10 KB records, at most a chunk more), not all at once.
        assert!(rounds.len() >= 4, "{} rounds", rounds.len());
        for round in &rounds {
            assert!(round.len() <= 12, "a round kept {} records of 10 KB under a 100 KB budget", round.len());
        }
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn a_streamed_batch_past_the_absolute_cap_is_an_error_naming_partition_and_offset() {
        let batch = compressible(700, 40);
        let options = FetchOptions {
            decode: DecodeOptions { max_decompressed_size: 150_000, ..DecodeOptions::default() },
            ..FetchOptions::default()
        };
        let (rounds, error) = rounds_of(&batch, &options, 100_000);
        let error = error.expect("the batch passes the 150 KB cap");
        let ClientError::Records { partition, offset, source, .. } = &error else { panic!("{error}") };
        assert_eq!((partition, *offset), (&tp(), 700));
        assert_eq!(source.kind, DecodeErrorKind::DecompressedTooLarge { max: 150_000 });
        let text = error.to_string();
        assert!(text.contains("t-0") && text.contains("offset 700") && text.contains("150000"), "{text}");
        // What came before the cap was passed came once, in order.
        let read: Vec<i64> = rounds.concat();
        assert_eq!(read, (700..700 + read.len() as i64).collect::<Vec<_>>());
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn a_batch_within_the_budget_is_unpacked_whole_not_streamed() {
        let batch = compressible(0, 5);
        let (rounds, error) = rounds_of(&batch, &FetchOptions::default(), 100_000);
        assert!(error.is_none());
        assert_eq!(rounds, vec![vec![0, 1, 2, 3, 4]]);
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn a_response_always_yields_its_first_batch_whatever_its_share() {
        let r = response(&[compressible(0, 3), compressible(3, 3)], &[], 6);
        let mut p = progress(0, 6);
        apply_answer(&tp(), &mut p, answer(r), &FetchOptions::default(), &mut Unpacked::new(1, usize::MAX))
            .unwrap();
        assert_eq!(offsets(&p), vec![0, 1, 2], "one batch, ≈ 30 KB over a 1-byte share");
        assert_eq!(p.stalls, 0);
    }

    type Shape<'a> = Vec<(Option<&'a str>, Vec<(i32, i64, i32, Option<i32>)>)>;

    #[test]
    fn stalled_partitions_go_first_and_topics_stay_grouped() {
        let a0 = TopicPartition::new("a", 0);
        let a1 = TopicPartition::new("a", 1);
        let b0 = TopicPartition::new("b", 0);
        let batch: LeaderBatch = vec![(a0.clone(), Some(3)), (a1.clone(), None), (b0.clone(), Some(1))];
        let requested: HashMap<TopicPartition, Want> = [
            (a0, Want { position: 5, max_bytes: 100, stalls: 0 }),
            (a1, Want { position: 6, max_bytes: 200, stalls: 0 }),
            (b0, Want { position: 7, max_bytes: 400, stalls: 2 }),
        ]
        .into_iter()
        .collect();
        let wanted = wanted_in_order(&batch, &requested);
        let plan = FetchSession::default().next_request(&wanted);
        let r = build_request(&wanted, &plan, &HashMap::new(), &FetchOptions::default(), None, 12);
        assert_eq!((r.session_id, r.session_epoch), (Some(0), Some(0)));
        let shape: Shape<'_> = r
            .topics
            .iter()
            .map(|t| {
                let ps = t
                    .partitions
                    .iter()
                    .map(|p| (p.partition, p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch))
                    .collect();
                (t.topic.as_deref(), ps)
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                (Some("b"), vec![(0, 7, 400, Some(1))]),
                (Some("a"), vec![(0, 5, 100, Some(3)), (1, 6, 200, Some(-1))]),
            ]
        );
        assert_eq!(r.isolation_level, Some(READ_UNCOMMITTED));
    }

    fn want(p: i32, position: i64) -> (TopicPartition, PartitionFetch) {
        (
            TopicPartition::new("t", p),
            PartitionFetch { fetch_offset: position, max_bytes: 100, leader_epoch: None },
        )
    }

    #[test]
    fn an_incremental_fetch_lists_only_moved_partitions_and_forgets_finished_ones() {
        let mut session = FetchSession::default();
        let first = session.next_request(&[want(0, 5), want(1, 6), want(2, 7)]);
        session.answered(&first, 77);
        // Partition 0 moved on, 1 did not, 2 is finished.
        let wanted = [want(0, 9), want(1, 6)];
        let plan = session.next_request(&wanted);
        let r = build_request(&wanted, &plan, &HashMap::new(), &FetchOptions::default(), None, 12);
        assert_eq!((r.session_id, r.session_epoch), (Some(77), Some(1)));
        let sent: Vec<(i32, i64)> = r
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| (p.partition, p.fetch_offset)))
            .collect();
        assert_eq!(sent, [(0, 9)]);
        let forgotten = r.forgotten_topics_data.unwrap_or_default();
        assert_eq!(forgotten.len(), 1);
        assert_eq!(
            (forgotten[0].topic.as_deref(), forgotten[0].partitions.as_slice()),
            (Some("t"), &[2][..])
        );
    }

    #[test]
    fn a_broker_below_fetch_v7_gets_every_partition_without_a_session() {
        let mut session = FetchSession::default();
        let first = session.next_request(&[want(0, 5), want(1, 6)]);
        session.answered(&first, 77);
        let wanted = [want(0, 9), want(1, 6)];
        let plan = session.next_request(&wanted);
        let r = build_request(&wanted, &plan, &HashMap::new(), &FetchOptions::default(), None, 6);
        assert_eq!((r.session_id, r.session_epoch), (Some(0), Some(-1)));
        assert_eq!(r.topics.iter().map(|t| t.partitions.len()).sum::<usize>(), 2);
        assert_eq!(r.forgotten_topics_data, Some(Vec::new()));
    }
}
