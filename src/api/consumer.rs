//! A consumer-group member for an embedding (the Python package's `kwire.Consumer`): records
//! handed out one at a time, as confluent-kafka's `poll` does, over [`kafka_client::Consumer`]
//! (chunk by chunk, from starts offset-engine checked). Commits are of what was handed out,
//! never of what is still buffered: by [`GroupConsumer::commit`], every
//! `auto.commit.interval.ms` when `enable.auto.commit` is on (the default, as in librdkafka),
//! before a partition is revoked, and at [`GroupConsumer::close`]. The records of a partition
//! revoked or lost are dropped from the buffer: its next owner reads them from the commit.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_client::{
    apply_consumer_properties, Consumer, ConsumerConfig, ConsumerError, FetchedRecord, RebalanceListener,
    RevokeCommits, StartPosition, Subscription, TopicPartition,
};
use offset_engine::{Anomaly, StartPolicy};

use super::{context_of, Settings};
use crate::exit::{Exit, Failure};
use crate::handed_out::HandedOut;

/// One record handed out, with its partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumedRecord {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    /// Milliseconds since the epoch; `None` for magic-0 messages.
    pub timestamp: Option<i64>,
    /// Whether the producer (create time) or the broker (log append time) set it.
    pub log_append_time: bool,
    /// `None` for a null key.
    pub key: Option<Bytes>,
    /// `None` for a null value (a tombstone).
    pub value: Option<Bytes>,
    /// In the order written; a header's value may be null.
    pub headers: Vec<(String, Option<Bytes>)>,
}

/// Records polled but not handed out yet, and what the listener told since the last poll.
#[derive(Debug, Default)]
struct Buffer {
    records: VecDeque<(TopicPartition, FetchedRecord)>,
    /// One line per partition that started on an anomaly (its numbers; a new group's start at
    /// the log start is none), or was lost, or whose commit failed.
    notices: Vec<String>,
}

type SharedBuffer = Arc<Mutex<Buffer>>;

fn lock(buffer: &SharedBuffer) -> MutexGuard<'_, Buffer> {
    buffer.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Commits what was handed out of revoked partitions and drops what was not.
struct Listener {
    handed: HandedOut,
    buffer: SharedBuffer,
}

impl Listener {
    fn drop_buffered(&self, partitions: &[TopicPartition]) {
        lock(&self.buffer).records.retain(|(tp, _)| !partitions.contains(tp));
    }
}

impl RebalanceListener for Listener {
    fn on_assigned(&mut self, started: &[StartPosition]) {
        self.handed.started(started.iter().map(|s| s.partition.clone()));
        let mut buffer = lock(&self.buffer);
        for s in started {
            // A partition with nothing committed that starts at its log start is a new group's
            // ordinary start, not worth a warning; one that skips records (`latest`) is.
            let worth_telling = |a: &&Anomaly| !matches!(a, Anomaly::NewPartition { .. }) || a.skipped() > 0;
            if let Some(anomaly) = s.anomaly.as_ref().filter(worth_telling) {
                buffer.notices.push(format!("{} starts at offset {}: {anomaly}", s.partition, s.offset));
            }
        }
    }

    fn on_revoked(&mut self, partitions: &[TopicPartition], commits: &mut RevokeCommits) {
        self.handed.commit_revoked(partitions, commits);
        self.drop_buffered(partitions);
    }

    fn on_lost(&mut self, partitions: &[TopicPartition]) {
        self.handed.forget(partitions);
        self.drop_buffered(partitions);
        let mut buffer = lock(&self.buffer);
        for tp in partitions {
            buffer.notices.push(format!(
                "{tp} was lost (fenced, or the session expired): nothing more is committed for it"
            ));
        }
    }
}

/// A group member whose calls block their thread until done. Not for several threads at once:
/// each call takes the member for its duration.
#[derive(Debug)]
pub struct GroupConsumer {
    runtime: tokio::runtime::Runtime,
    consumer: Consumer,
    handed: HandedOut,
    buffer: SharedBuffer,
    /// `auto.commit.interval.ms` when `enable.auto.commit` is on.
    auto_commit: Option<Duration>,
    last_commit: Instant,
}

impl GroupConsumer {
    /// Connects with `settings`, whose properties hold the client's keys and the consumer's
    /// (`group.id` required; `auto.offset.reset`, `group.protocol`, `enable.auto.commit`,
    /// `kwire.offset.out.of.range`, ...). Returns the warnings the CLI prints (unknown keys).
    pub fn open(settings: Settings) -> Result<(Self, Vec<String>), Failure> {
        let properties = settings.properties.clone();
        let (ctx, mut warnings) = context_of(settings)?;
        // librdkafka's and Java's default: a partition with nothing committed starts at latest.
        let mut config = ConsumerConfig {
            enable_auto_commit: true,
            start: StartPolicy::Latest,
            ..ConsumerConfig::default()
        };
        let consumer_warnings = apply_consumer_properties(&mut config, properties)
            .map_err(|e| Failure::new(Exit::USAGE, e.to_string()))?;
        warnings.extend(consumer_warnings.iter().map(ToString::to_string));
        if config.group_id.is_none() {
            return Err(Failure::new(Exit::USAGE, "group.id is required: the consumer joins a group"));
        }
        // The consumer's own positions run ahead of what was handed out: commits are this
        // module's (of handed-out positions), never the library's auto-commit.
        let auto_commit = config.enable_auto_commit.then_some(config.auto_commit_interval);
        config.enable_auto_commit = false;
        config.request_timeout = ctx.global.timeout;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| Failure::new(Exit::CLUSTER, format!("cannot start the async runtime: {e}")))?;
        let client = runtime.block_on(ctx.client())?;
        let handed = HandedOut::default();
        let buffer = SharedBuffer::default();
        // The consumer and its member task are spawned on this runtime.
        let _inside = runtime.enter();
        let mut consumer = Consumer::new(client, config);
        consumer.set_listener(Listener { handed: handed.clone(), buffer: Arc::clone(&buffer) });
        let consumer = Self { runtime, consumer, handed, buffer, auto_commit, last_commit: Instant::now() };
        Ok((consumer, warnings))
    }

    /// Joins the group reading `topics`; a name starting with `^` is a regular expression over
    /// topic names (confluent-kafka's rule; only one pattern, and not mixed with names).
    pub fn subscribe(&mut self, topics: &[String]) -> Result<(), Failure> {
        let subscription = match topics {
            [pattern] if pattern.starts_with('^') => Subscription::Pattern(pattern.clone()),
            _ if topics.iter().any(|t| t.starts_with('^')) => {
                return Err(Failure::new(
                    Exit::USAGE,
                    "a pattern (a topic starting with ^) is subscribed alone, not with other topics",
                ))
            }
            _ => Subscription::Topics(topics.to_vec()),
        };
        let _inside = self.runtime.enter();
        self.consumer.subscribe(subscription).map_err(Failure::from)
    }

    /// The next record, waiting up to `timeout` for one; `None` when none came. Also returns
    /// (and clears) the notices since the last call: partitions that started on an anomaly,
    /// partitions lost. A start the out-of-range policy refuses is an [`Exit::ANOMALY`] failure.
    pub fn poll(&mut self, timeout: Duration) -> Result<(Option<ConsumedRecord>, Vec<String>), Failure> {
        let (mut records, notices) = self.consume(1, timeout)?;
        Ok((records.pop(), notices))
    }

    /// Up to `max` records, waiting up to `timeout` for the first; returned as soon as some
    /// are at hand. Notices as for [`poll`](Self::poll).
    pub fn consume(
        &mut self,
        max: usize,
        timeout: Duration,
    ) -> Result<(Vec<ConsumedRecord>, Vec<String>), Failure> {
        let deadline = Instant::now() + timeout;
        loop {
            let out = self.take_buffered(max);
            if !out.is_empty() {
                self.auto_commit_due();
                let notices = std::mem::take(&mut lock(&self.buffer).notices);
                return Ok((out, notices));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            // One poll even with no time left: a zero timeout still hands out what has come.
            let polled = self.runtime.block_on(self.consumer.poll(left.min(Duration::from_millis(500))));
            match polled {
                Ok(Some(chunk)) => {
                    let mut buffer = lock(&self.buffer);
                    buffer.records.extend(chunk.records.into_iter().map(|r| (chunk.partition.clone(), r)));
                }
                Ok(None) => {}
                // The member rejoins and the partition is read again: reported, not raised.
                Err(e @ (ConsumerError::Partition { .. } | ConsumerError::PollIntervalExceeded { .. })) => {
                    lock(&self.buffer).notices.push(e.to_string());
                }
                Err(e) => return Err(Failure::from(e)),
            }
            self.auto_commit_due();
            if Instant::now() >= deadline && lock(&self.buffer).records.is_empty() {
                let notices = std::mem::take(&mut lock(&self.buffer).notices);
                return Ok((Vec::new(), notices));
            }
        }
    }

    fn take_buffered(&mut self, max: usize) -> Vec<ConsumedRecord> {
        let mut buffer = lock(&self.buffer);
        let n = max.min(buffer.records.len());
        let taken: Vec<(TopicPartition, FetchedRecord)> = buffer.records.drain(..n).collect();
        drop(buffer);
        taken
            .into_iter()
            .map(|(tp, r)| {
                self.handed.handed(&tp, r.offset);
                ConsumedRecord {
                    topic: tp.topic.to_string(),
                    partition: tp.partition,
                    offset: r.offset,
                    timestamp: r.timestamp,
                    log_append_time: matches!(
                        r.timestamp_type,
                        kafka_wire::protocol::records::TimestampType::LogAppendTime
                    ),
                    key: r.key,
                    value: r.value,
                    headers: r.headers.into_iter().map(|h| (h.key, h.value)).collect(),
                }
            })
            .collect()
    }

    fn auto_commit_due(&mut self) {
        if let Some(every) = self.auto_commit {
            if self.last_commit.elapsed() >= every {
                self.last_commit = Instant::now();
                let failed = self.runtime.block_on(self.handed.commit(&mut self.consumer));
                lock(&self.buffer).notices.extend(failed);
            }
        }
    }

    /// Commits `offsets` (topic, partition, next offset to read), or with `None` what was
    /// handed out of every partition still owned; waits for the coordinator. A partition the
    /// member does not own is refused before anything is sent.
    pub fn commit(&mut self, offsets: Option<&[(String, i32, i64)]>) -> Result<(), Failure> {
        let failed = match offsets {
            None => self.runtime.block_on(self.handed.commit(&mut self.consumer)),
            Some(offsets) => {
                let offsets: Vec<(TopicPartition, i64)> =
                    offsets.iter().map(|(t, p, o)| (TopicPartition::new(t.as_str(), *p), *o)).collect();
                let results = self.runtime.block_on(self.consumer.commit(&offsets)).map_err(Failure::from)?;
                results
                    .into_iter()
                    .filter_map(|(tp, r)| r.err().map(|e| format!("commit of {tp} failed: {e}")))
                    .collect()
            }
        };
        if failed.is_empty() {
            Ok(())
        } else {
            Err(Failure::new(Exit::CLUSTER, failed.join("; ")))
        }
    }

    /// The partitions the member owns now, sorted.
    pub fn assignment(&self) -> Vec<(String, i32)> {
        self.consumer.assignment().into_iter().map(|tp| (tp.topic.to_string(), tp.partition)).collect()
    }

    /// Commits what was handed out (with auto-commit on), then leaves the group at once; the
    /// buffered records are dropped. Later calls fail.
    pub fn close(&mut self) -> Result<(), Failure> {
        if self.auto_commit.is_some() {
            let failed = self.runtime.block_on(self.handed.commit(&mut self.consumer));
            lock(&self.buffer).notices.extend(failed);
        }
        lock(&self.buffer).records.clear();
        self.runtime.block_on(self.consumer.close()).map_err(Failure::from)
    }
}
