//! A batch: its offset ranges as plain data (seed 002: no cast can fail), its records, the
//! events found while planning it, and — kept private so the application cannot alter it — what
//! committing it will store.

use std::fmt;

use kafka_client::FetchedRecord;
use offset_engine::{Anomaly, Commit, FromReason, Offset, OutOfRangePolicy, TopicId, TopicPartition};

/// One partition's `[from, until)`: what a Spark `OffsetRange` is, without a cast.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OffsetRange {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// First offset of the range.
    pub from: i64,
    /// One past the last offset of the range; what is committed for this partition.
    pub until: i64,
}

impl OffsetRange {
    /// Offsets in the range (not records: compaction and transaction markers leave gaps).
    pub fn len(&self) -> u64 {
        Offset(self.from).records_until(Offset(self.until))
    }

    /// Whether the range holds no offset (`from == until`).
    pub fn is_empty(&self) -> bool {
        self.until <= self.from
    }
}

impl fmt::Display for OffsetRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{} [{}, {})", self.topic, self.partition, self.from, self.until)
    }
}

/// One partition of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionBatch {
    /// The partition's `[from, until)` in this batch.
    pub range: OffsetRange,
    /// The records of `[from, until)` in offset order. Fewer than `until − from` when offsets
    /// were compacted away or hold transaction markers (or aborted records under
    /// read_committed): that is not data loss.
    pub records: Vec<FetchedRecord>,
    /// Why reading starts at `from` (the stored offset, a start policy, or the out-of-range
    /// policy moving away from an unusable stored offset).
    pub from_reason: FromReason,
    /// The log's topic id when planned.
    pub topic_id: Option<TopicId>,
    /// The leader epoch committed with `until`: the last record's, else the leader's when planned.
    pub leader_epoch: Option<i32>,
}

impl PartitionBatch {
    /// Whether this partition's start was moved by the out-of-range policy (its commit is then
    /// a reset).
    pub fn is_reset(&self) -> bool {
        matches!(self.from_reason, FromReason::OutOfRange(_))
    }
}

/// What the driver did with an anomaly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// The policy chose where to resume; the batch reads from `from`.
    Resumed {
        /// The offset the partition resumes at.
        from: i64,
        /// Why it resumes there.
        policy: Resume,
    },
    /// Not read this batch; the stored offset is kept (a gone partition or topic, an end that
    /// went backwards and is being looked at again).
    Skipped,
    /// The out-of-range or start policy is `Fail`: no batch is produced until the application
    /// changes the policy or the stored offsets.
    Failed,
}

/// Which policy chose the resume position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resume {
    /// The start policy (nothing stored).
    Start,
    /// The out-of-range policy.
    OutOfRange(OutOfRangePolicy),
}

/// Something the application may want to act on. The policies already decided the default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A named situation from the engine, with its numbers, and what was done about it.
    Anomaly {
        /// The partition.
        tp: TopicPartition,
        /// What the engine found.
        anomaly: Anomaly,
        /// What the stream did about it.
        action: Action,
    },
    /// The partition's end stayed below the previous batch's `until` through every re-query;
    /// it was then planned without that bound (and classified by the stored offset).
    EndStayedBackwards {
        /// The partition.
        tp: TopicPartition,
        /// The `until` of the last batch for this partition.
        previous_until: i64,
        /// The end the broker reported, below it.
        end: i64,
        /// How many times the end was asked again.
        requeries: u32,
    },
    /// The partition's log range could not be read (no leader during an election, ...): it
    /// is left out of this batch and tried again with the next one.
    PartitionUnavailable {
        /// The partition.
        tp: TopicPartition,
        /// What went wrong, as text.
        error: String,
    },
    /// A configured topic does not exist and nothing is stored for it.
    TopicNotFound {
        /// The topic.
        topic: String,
    },
    /// The fetch stopped before the planned `until` (the log ended first): the batch's range
    /// ends where reading stopped, and the rest comes with a later batch.
    RangeShortened {
        /// The partition.
        tp: TopicPartition,
        /// The `until` the plan had.
        planned_until: i64,
        /// The `until` the batch ends at instead.
        until: i64,
    },
    /// Member mode: the group gave this member these partitions; from this batch on they are
    /// read from the group's committed offsets (checked by the engine like any stored offset).
    Assigned {
        /// The partitions.
        partitions: Vec<TopicPartition>,
    },
    /// Member mode: the group took these partitions away, after the previous batch was
    /// committed (or given up: then their next owner reads it again). Not read any more.
    Revoked {
        /// The partitions.
        partitions: Vec<TopicPartition>,
    },
    /// Member mode: these were lost at once (the member was fenced, its session expired, or it
    /// left after `max.poll.interval.ms`): nothing more is committed for them, and their next
    /// owner reads again what this member had not committed.
    Lost {
        /// The partitions.
        partitions: Vec<TopicPartition>,
    },
    /// Member mode: the application did not ask for a batch for longer than
    /// `max.poll.interval.ms`, so the member left the group (its partitions were lost; an
    /// [`Event::Lost`] names them) and joins again now.
    PollIntervalExceeded {
        /// Time since the previous batch was asked for, in milliseconds.
        elapsed_ms: u64,
        /// `max.poll.interval.ms`.
        limit_ms: u64,
    },
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Anomaly { tp, anomaly, action } => {
                write!(f, "{tp}: {} ({anomaly}); ", anomaly.kind())?;
                match action {
                    Action::Resumed { from, policy: Resume::Start } => {
                        write!(f, "start policy: reading from {from}")
                    }
                    Action::Resumed { from, policy: Resume::OutOfRange(p) } => {
                        write!(f, "out-of-range policy {p:?}: resuming at {from}")
                    }
                    Action::Skipped => f.write_str("skipped, stored offset kept"),
                    Action::Failed => f.write_str("policy is fail"),
                }
            }
            Self::EndStayedBackwards { tp, previous_until, end, requeries } => write!(
                f,
                "{tp}: end {end} stayed below the previous until {previous_until} after {requeries} \
                 re-queries; planned without it"
            ),
            Self::PartitionUnavailable { tp, error } => write!(f, "{tp}: unavailable this batch: {error}"),
            Self::TopicNotFound { topic } => write!(f, "topic `{topic}` not found and nothing stored"),
            Self::RangeShortened { tp, planned_until, until } => {
                write!(f, "{tp}: fetch stopped at {until}, before the planned {planned_until}")
            }
            Self::Assigned { partitions } => write!(f, "assigned {}", list(partitions)),
            Self::Revoked { partitions } => write!(f, "revoked {}", list(partitions)),
            Self::Lost { partitions } => write!(f, "lost {} (nothing more committed for them)", list(partitions)),
            Self::PollIntervalExceeded { elapsed_ms, limit_ms } => write!(
                f,
                "no batch asked for in {elapsed_ms} ms, over max.poll.interval.ms {limit_ms}: the member left \
                 the group and joins again"
            ),
        }
    }
}

/// `t-0, t-1, u-3`, or `nothing`.
fn list(partitions: &[TopicPartition]) -> String {
    if partitions.is_empty() {
        return "nothing".to_owned();
    }
    partitions.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// One batch: exact offset ranges with their records. Commit it (or return `Ok` from the
/// closure given to [`crate::DirectStream::run`]) after its output succeeded.
#[derive(Debug, Clone)]
pub struct Batch {
    pub(crate) id: u64,
    pub(crate) partitions: Vec<PartitionBatch>,
    pub(crate) events: Vec<Event>,
    pub(crate) commits: Vec<Commit>,
}

impl Batch {
    /// Increases by one per batch of a stream (a redelivered range gets a new id).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Every planned partition, in plan order, including empty ranges.
    pub fn partitions(&self) -> &[PartitionBatch] {
        &self.partitions
    }

    /// Takes the partitions (with their records) out; the batch still commits the same
    /// offsets.
    pub fn take_partitions(&mut self) -> Vec<PartitionBatch> {
        std::mem::take(&mut self.partitions)
    }

    /// The offset ranges as data.
    pub fn offset_ranges(&self) -> Vec<OffsetRange> {
        self.partitions.iter().map(|p| p.range.clone()).collect()
    }

    /// What was found while planning this batch.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Records in the batch.
    pub fn record_count(&self) -> usize {
        self.partitions.iter().map(|p| p.records.len()).sum()
    }

    /// `(topic, partition, offset, record)` for every record, partition by partition.
    pub fn records(&self) -> impl Iterator<Item = (&str, i32, &FetchedRecord)> {
        self.partitions
            .iter()
            .flat_map(|p| p.records.iter().map(move |r| (p.range.topic.as_str(), p.range.partition, r)))
    }

    /// No offsets to read and nothing to report. Committing it stores nothing new.
    pub fn is_idle(&self) -> bool {
        self.events.is_empty() && self.partitions.iter().all(|p| p.range.is_empty() && !p.is_reset())
    }

    /// The positions committing this batch will propose (merged so that none moves backwards
    /// unless it is a policy reset).
    pub fn commits(&self) -> &[Commit] {
        &self.commits
    }
}
