//! What a stream reads and how: topics, the two policies, limits, isolation, timeouts.

use std::time::Duration;

use kafka_client::FetchOptions;
use offset_engine::{Isolation, Limits, OutOfRangePolicy, StartPolicy};

pub use crate::memory_budget::MemoryBudget;

/// How a [`crate::DirectStream`] plans, fetches and waits.
#[derive(Debug, Clone)]
pub struct StreamConfig {
    /// The group whose offsets the store keeps. No group membership is ever taken.
    pub group: String,
    /// The topics to read (every partition of each, including partitions added later).
    pub topics: Vec<String>,
    /// Where a partition with nothing stored starts (default: earliest).
    pub start: StartPolicy,
    /// What to do when a stored offset is unusable (default: fail loudly).
    pub out_of_range: OutOfRangePolicy,
    /// read_uncommitted (default) or read_committed.
    pub isolation: Isolation,
    /// Per-partition, per-batch and time-budget caps (default: unlimited).
    pub limits: Limits,
    /// Fetch sizes and the fetch deadline. Its isolation is replaced by [`Self::isolation`].
    pub fetch: FetchOptions,
    /// Deadline for each metadata, ListOffsets and OffsetForLeaderEpoch call.
    pub request_timeout: Duration,
    /// When a partition's end is below the previous batch's `until` (KAFKA-7703): how many
    /// times to look again, and how long to wait before each look, before classifying it.
    pub end_requery: Requery,
    /// How many times one `next_batch` plans again when the fetch finds an offset out of range
    /// (the log start moved after planning) or a retriable broker error.
    pub fetch_attempts: u32,
    /// How long [`crate::DirectStream::run`] waits after a batch with nothing to read.
    pub poll_interval: Duration,
    /// Size batches so they are processed within a time budget, from the measured processing
    /// rate (seed 003; none by default).
    pub processing_budget: Option<ProcessingBudget>,
    /// Size batches so their records fit in a number of bytes, from the mean record size of
    /// the last batch read (none by default).
    pub memory_budget: Option<MemoryBudget>,
    /// Read the next batch while the application processes one (default: on), with
    /// [`DirectStream::run`](crate::DirectStream::run) and with
    /// [`next_batch`](crate::DirectStream::next_batch)/[`commit`](crate::DirectStream::commit)
    /// by hand: it is handed out only when the store holds exactly the positions it was planned
    /// from. At most one batch is read ahead, planned with the same limits, so at most two
    /// batches' records are held at once; it is planned from the log as it was while the
    /// previous batch was processed, and with the processing rate measured before that batch.
    pub prefetch: bool,
}

/// Batches capped at `rate × budget × safety` records, where `rate` is the application's
/// processing rate as measured by [`crate::DirectStream::run`] (or reported with
/// [`crate::DirectStream::observe`]); `initial_rate` until the first measurement (SPARK-18580).
/// This is the fix for seed 003: a backlog batch that takes longer than the job's deadline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessingBudget {
    /// How long one batch may take to process (e.g. the batch interval).
    pub budget: Duration,
    /// Records per second assumed before anything was measured; finite and above 0.
    pub initial_rate: f64,
    /// The share of the budget to plan for, in `(0, 1]`.
    pub safety: f64,
}

/// A bounded re-query (rule R3): Spark's `fetchOffset.numRetries` (3) and
/// `fetchOffset.retryIntervalMs` (1 s) by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requery {
    /// How many times to ask again before giving up.
    pub attempts: u32,
    /// How long to wait between two asks.
    pub backoff: Duration,
}

impl Default for Requery {
    fn default() -> Self {
        Self { attempts: 3, backoff: Duration::from_secs(1) }
    }
}

impl StreamConfig {
    /// Reads `topics` for `group` with the engine's default policies (earliest for new
    /// partitions, fail on unusable stored offsets), no limits, read_uncommitted.
    pub fn new(group: impl Into<String>, topics: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            group: group.into(),
            topics: topics.into_iter().map(Into::into).collect(),
            start: StartPolicy::default(),
            out_of_range: OutOfRangePolicy::default(),
            isolation: Isolation::default(),
            limits: Limits::default(),
            fetch: FetchOptions::default(),
            request_timeout: Duration::from_secs(30),
            end_requery: Requery::default(),
            fetch_attempts: 3,
            poll_interval: Duration::from_millis(500),
            processing_budget: None,
            memory_budget: None,
            prefetch: true,
        }
    }

    #[must_use]
    /// Caps each batch so processing it fits this budget (seed 003).
    pub fn processing_budget(mut self, budget: ProcessingBudget) -> Self {
        self.processing_budget = Some(budget);
        self
    }

    #[must_use]
    /// Caps each batch so its records fit in the budget's bytes (issue 37).
    pub fn memory_budget(mut self, budget: MemoryBudget) -> Self {
        self.memory_budget = Some(budget);
        self
    }

    #[must_use]
    /// Whether the next batch is read while the application processes one (default: on).
    pub fn prefetch(mut self, prefetch: bool) -> Self {
        self.prefetch = prefetch;
        self
    }

    #[must_use]
    /// Where a partition with nothing stored starts (default: earliest).
    pub fn start(mut self, start: StartPolicy) -> Self {
        self.start = start;
        self
    }

    #[must_use]
    /// What to do when a stored offset is outside the log (default: fail).
    pub fn out_of_range(mut self, policy: OutOfRangePolicy) -> Self {
        self.out_of_range = policy;
        self
    }

    #[must_use]
    /// Read committed records only (`ReadCommitted`), or every record.
    pub fn isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = isolation;
        self
    }

    #[must_use]
    /// Caps per partition and per batch.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    #[must_use]
    /// How long to wait before planning again when a batch was empty.
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    #[must_use]
    /// How an end that went backwards is asked again (KAFKA-7703).
    pub fn end_requery(mut self, requery: Requery) -> Self {
        self.end_requery = requery;
        self
    }

    /// Checks what the engine and the client cannot: a group and at least one topic, each
    /// named.
    pub fn validate(&self) -> Result<(), String> {
        if self.group.is_empty() {
            return Err("the group id is empty".to_owned());
        }
        if self.topics.is_empty() {
            return Err("no topics to read".to_owned());
        }
        if let Some(i) = self.topics.iter().position(String::is_empty) {
            return Err(format!("topic {i} has an empty name"));
        }
        if let Some(b) = self.processing_budget {
            let budget_ms = u64::try_from(b.budget.as_millis()).unwrap_or(u64::MAX);
            offset_engine::TimeBudget::new(budget_ms, b.initial_rate, b.safety)
                .map_err(|e| format!("processing budget: {e}"))?;
        }
        if let Some(b) = self.memory_budget {
            b.validate()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_without_group_or_topics_is_refused() {
        assert!(StreamConfig::new("g", ["t"]).validate().is_ok());
        assert!(StreamConfig::new("", ["t"]).validate().unwrap_err().contains("group"));
        assert!(StreamConfig::new("g", Vec::<String>::new()).validate().unwrap_err().contains("no topics"));
        assert!(StreamConfig::new("g", ["t", ""]).validate().unwrap_err().contains("topic 1"));
        let budget = ProcessingBudget { budget: Duration::from_secs(1), initial_rate: 0.0, safety: 0.8 };
        let err = StreamConfig::new("g", ["t"]).processing_budget(budget).validate().unwrap_err();
        assert!(err.contains("processing budget"), "{err}");
        let empty = MemoryBudget { bytes: 0, initial_record_bytes: 1_000 };
        let err = StreamConfig::new("g", ["t"]).memory_budget(empty).validate().unwrap_err();
        assert!(err.contains("memory budget"), "{err}");
    }
}
