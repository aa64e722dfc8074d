//! Fetch exact offset ranges from the partition leaders: `[from, until)` per partition, in as
//! many rounds as it takes, one Fetch request per leader broker per round.
//!
//! A range is complete when the fetch position reaches `until`, or when the log says there is
//! nothing more to read now: the position reached the high watermark (read_uncommitted) or
//! the last stable offset (read_committed). Offsets missing inside a range (compacted away,
//! or taken by transaction markers) are skipped, not waited for; records at or past `until`
//! are never returned, even when the broker sends them. read_committed drops the records of
//! aborted transactions the way the Java consumer does; control batches (the markers) are
//! never returned, in either isolation.
//!
//! Owns the public [`FetchRange`] and [`FetchOptions`] and the IO: the round loop of
//! [`Client::fetch_range`] and the round itself (`fetch_round`, also the
//! [`Fetcher`](crate::Fetcher)'s), which routes the partitions to their leaders or preferred
//! read replicas, keeps each broker's fetch session and sends the request. What a round
//! decides is sans-IO, in the files it drives: the range's state (`progress.rs`), the request
//! (`request.rs`), and each partition's answer taken in (`answer.rs`, `unpack.rs`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::cluster::client::Client;
use crate::cluster::fetch_session::FetchSession;
use crate::cluster::metadata::{ClusterMetadata, PartitionInfo};
use crate::cluster::router::{LeaderAnswer, PartitionResults, TopicPartition};
use crate::deadline::deadline_after;
use crate::error::ClientError;
use crate::producer::produce::{topic_ids_of, topic_name};
use kafka_vocab::Isolation;
use kafka_wire::protocol::messages::fetch;
use kafka_wire::protocol::records::DecodeOptions;
use kafka_wire::protocol::ErrorCode;

use super::answer::{apply_answer, LeaderData};
use super::fetched::FetchedPartition;
use super::offsets::LogRange;
use super::progress::{stalled, Progress, Want};
use super::request::{build_request, wanted_in_order, RequestFields, SESSIONS_FROM};
use super::unpack::Unpacked;

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

    /// What every Fetch request of these options says besides its partitions, from a client
    /// in `rack` (`None`: no rack is sent).
    pub(super) fn request_fields<'a>(&self, rack: Option<&'a str>) -> RequestFields<'a> {
        RequestFields {
            max_wait: self.max_wait,
            min_bytes: self.min_bytes,
            max_bytes: self.max_bytes,
            isolation: self.isolation,
            rack,
        }
    }
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
            let p = Progress::new(range.from, range.until, options.partition_max_bytes);
            if p.position >= p.until {
                results.insert(tp.clone(), Ok(p.fetched));
            } else {
                progress.insert(tp.clone(), p);
            }
        }

        let mut out_of_range: Vec<TopicPartition> = Vec::new();
        while !progress.is_empty() {
            let now = Instant::now();
            if now >= deadline {
                for (tp, p) in std::mem::take(&mut progress) {
                    results.insert(tp.clone(), Err(stalled(&tp, &p)));
                }
                break;
            }
            // A partition waiting out a refetch's backoff sits the round out; with nothing else
            // to ask, the loop waits for the first of them.
            let requested: HashMap<TopicPartition, Want> = progress
                .iter()
                .filter(|(_, p)| p.fetchable(now))
                .map(|(tp, p)| (tp.clone(), p.want()))
                .collect();
            if requested.is_empty() {
                let wake = progress.values().filter_map(|p| p.backoff_until(now)).min().unwrap_or(now);
                tokio::time::sleep_until(tokio::time::Instant::from_std(wake.min(deadline))).await;
                continue;
            }
            let partitions: Vec<TopicPartition> = requested.keys().cloned().collect();
            let round = self.fetch_round(&partitions, &requested, options, deadline - now).await;
            for (tp, answer) in round {
                let Some(p) = progress.get_mut(&tp) else { continue };
                // Every record of the range is kept until the end anyway: no budget.
                let outcome = answer.and_then(|data| {
                    apply_answer(&tp, p, data, options.isolation, &options.decode, &mut Unpacked::unbounded())
                });
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
                        out_of_range.push(tp.clone());
                    }
                    // Read again from the failed batch, the records before it kept.
                    Err(e) if e.is_checksum_mismatch() && p.retry_corrupt_batch(Instant::now()) => {}
                    Err(e) => {
                        progress.remove(&tp);
                        results.insert(tp, Err(e));
                    }
                }
            }
            if out_of_range.is_empty() {
                continue;
            }
            // The log's bounds say whether the answer was stale (read on) or true (the error).
            let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(1));
            let ranges = self.log_ranges(&out_of_range, left).await;
            for tp in out_of_range.drain(..) {
                let log = ranges.get(&tp).and_then(|r| r.as_ref().ok()).map(LogRange::bounds);
                let Some(p) = progress.get_mut(&tp) else { continue };
                if p.retry_out_of_range(log, Instant::now()) {
                    continue;
                }
                let e = p.out_of_range_error(&tp, log);
                progress.remove(&tp);
                results.insert(tp, Err(e));
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
            let fields = options.request_fields(rack);
            let mut session = self.take_fetch_session(&addr);
            if session.ids_changed(wanted.iter().map(|(tp, _)| &*tp.topic), &ids) {
                session = FetchSession::default();
            }
            let plan = session.next_request(&wanted);
            session.add_forgotten_ids(&plan, &mut ids);
            // Not given back on an error: the broker may or may not have applied the epoch, so
            // the next request starts a new session.
            let sent = self
                .send_built(&target.broker, |version| build_request(&wanted, &plan, &ids, &fields, version))
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
