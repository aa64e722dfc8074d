//! One offset range being read, sans-IO: where reading stands in `[from, until)` (`from`
//! inclusive, `until` exclusive), the records taken so far with the log bounds the last answer
//! reported, how many bytes the next Fetch asks for, and when the range is complete. No
//! socket, and no clock of its own (a refetch is given the time it is decided at):
//! [`Client::fetch_range`](crate::Client::fetch_range) and the
//! [`Fetcher`](crate::Fetcher) keep one per partition and move it with each answer
//! (`answer.rs`, `unpack.rs`).
//!
//! Offsets are Kafka offsets; byte counts are compressed bytes on the wire, as a Fetch
//! request's `partition_max_bytes` counts them.
//!
//! Imports of `fetch/`: `fetched.rs`, `offsets.rs` (the log's bounds) and `streamed.rs` (a
//! batch kept between rounds).

use std::time::{Duration, Instant};

use crate::cluster::retry::Backoff;
use crate::error::{BrokerRef, ClientError};
use kafka_vocab::{Isolation, TopicPartition};

use super::fetched::FetchedPartition;
use super::offsets::LogBounds;
use super::streamed::HeldBatch;

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
    /// The bytes the next request asks for (`partition_max_bytes`), at least 1.
    pub(super) max_bytes: i32,
    /// `max.partition.fetch.bytes` as configured: what `max_bytes` grows back to after the
    /// decompressed budget shrank it.
    pub(super) partition_max_bytes: i32,
    /// Rounds in a row without progress; such partitions go first in the next request.
    pub(super) stalls: u32,
    /// The preferred read replica whose answer gave the log bounds in `fetched`; `None` when
    /// the leader gave them. A replica's end of the log does not end a range: see
    /// [`Progress::at_replica_end`].
    pub(super) bounds_from: Option<i32>,
    pub(super) fetched: FetchedPartition,
    /// Reading goes on past the log's end (a consumer's partition): only `until` completes it.
    pub(super) follows: bool,
    /// A batch found too large to unpack whole, read as it decompresses and stopped inside:
    /// the next round reads on from where it stopped (see `streamed.rs`).
    pub(super) streaming: Option<HeldBatch>,
    /// Answers in a row at one position that were fetched again — `(position, answers)`: see
    /// [`Progress::retry_out_of_range`] and [`Progress::retry_corrupt_batch`].
    pub(super) refetches: (i64, u32),
    /// Not to be fetched before this (`None`: at once): a refetch waits out its backoff.
    not_before: Option<Instant>,
}

/// Answers at one position a range is fetched again after (an OFFSET_OUT_OF_RANGE the log's
/// bounds contradict, a batch whose checksum fails); one more at the same position is the
/// partition's error ([`ClientError::OffsetOutOfRange`], [`ClientError::Records`]).
pub(super) const REFETCHES_AT_ONE_POSITION: u32 = 3;

/// The wait before the first refetch at a position (Java's `retry.backoff.ms`); each next one
/// waits twice as long, up to [`REFETCH_BACKOFF_MAX`] (`retry.backoff.max.ms`), each drawn
/// between half and all of its step. A broker whose view lags (a new leader catching up) gets
/// that long to catch up, and partitions answered alike do not all come back at once.
pub(super) const REFETCH_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait between two refetches at one position.
pub(super) const REFETCH_BACKOFF_MAX: Duration = Duration::from_secs(1);

impl Progress {
    /// The range `[from, until)` at its start, asking `partition_max_bytes`
    /// (`max.partition.fetch.bytes`, at least 1) per round.
    pub(super) fn new(from: i64, until: i64, partition_max_bytes: i32) -> Self {
        Self {
            from,
            until,
            position: from,
            max_bytes: partition_max_bytes.max(1),
            partition_max_bytes,
            stalls: 0,
            bounds_from: None,
            follows: false,
            streaming: None,
            refetches: (from, 0),
            not_before: None,
            fetched: FetchedPartition {
                records: Vec::new(),
                next_offset: from,
                log_start: None,
                high_watermark: -1,
                last_stable: None,
            },
        }
    }

    /// Whether to fetch the position again after an OFFSET_OUT_OF_RANGE answer, given the
    /// log's bounds read right after it (`None`: unknown): yes when
    /// they hold the position (`log_start ≤ position ≤ high_watermark`, the end included since
    /// a fetch there waits for records) and [`Progress::refetch`] allows it. A broker whose view
    /// lags answers so for a moment (a new leader not caught up, KIP-320's case); resetting
    /// then, as Java's `auto.offset.reset` does, would re-read or skip records for nothing.
    /// A yes sets [`Progress::not_before`] after `now`.
    pub(super) fn retry_out_of_range(&mut self, log: Option<LogBounds>, now: Instant) -> bool {
        let inside = log.is_some_and(|l| l.log_start <= self.position && self.position <= l.high_watermark);
        inside && self.refetch(now)
    }

    /// The partition's error after an OFFSET_OUT_OF_RANGE answer that
    /// [`Progress::retry_out_of_range`] refused: the position, the range and the log's bounds
    /// as read right after it (`None`: unknown).
    pub(super) fn out_of_range_error(&self, tp: &TopicPartition, log: Option<LogBounds>) -> ClientError {
        ClientError::OffsetOutOfRange {
            partition: tp.clone(),
            offset: self.position,
            requested: (self.from, self.until),
            log_start: log.map(|l| l.log_start),
            high_watermark: log.map(|l| l.high_watermark),
        }
    }

    /// Whether to fetch the position again after a batch there failed its checksum: bytes
    /// changed on the way (a proxy, a bad link) read right the next time, while a batch
    /// corrupt in the broker's log fails every time and ends the range with the error once
    /// [`Progress::refetch`] refuses. No record of a failed batch is ever handed out. A yes
    /// sets [`Progress::not_before`] after `now`.
    pub(super) fn retry_corrupt_batch(&mut self, now: Instant) -> bool {
        self.refetch(now)
    }

    /// Counts a refetch at the position: allowed while fewer than
    /// [`REFETCHES_AT_ONE_POSITION`] came before at this position (a read that moved on
    /// starts the count again), after the backoff's next wait from `now`.
    fn refetch(&mut self, now: Instant) -> bool {
        let (at, answers) = self.refetches;
        let answers = if at == self.position { answers } else { 0 };
        if answers >= REFETCHES_AT_ONE_POSITION {
            return false;
        }
        // The step doubles with each refetch at the position; a backoff of that one step draws
        // the wait within it (its deadline is only a bound nothing reaches here).
        let step = REFETCH_BACKOFF.saturating_mul(1 << answers.min(16)).min(REFETCH_BACKOFF_MAX);
        let wait = Backoff::new(step, step, now + 2 * REFETCH_BACKOFF_MAX).next_wait().unwrap_or(step);
        self.not_before = Some(now + wait);
        self.refetches = (self.position, answers + 1);
        true
    }

    /// When a refetch's backoff still running at `now` ends; `None`: the partition may be
    /// fetched.
    pub(super) fn backoff_until(&self, now: Instant) -> Option<Instant> {
        self.not_before.filter(|t| *t > now)
    }

    /// Whether the partition may be fetched at `now` (no refetch backoff left to wait out).
    pub(super) fn fetchable(&self, now: Instant) -> bool {
        self.backoff_until(now).is_none()
    }

    /// What the next round asks of the partition.
    pub(super) fn want(&self) -> Want {
        Want { position: self.position, max_bytes: self.max_bytes, stalls: self.stalls }
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

/// The error of a range the deadline stopped short of complete: where reading stood, and the
/// log bounds last reported.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetch::test_support::{data, mixed_log, progress, read_into, response};

    /// A log read as `[log_start, high_watermark)`.
    fn bounds(log_start: i64, high_watermark: i64) -> LogBounds {
        LogBounds { log_start, high_watermark }
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
    fn an_out_of_range_answer_the_log_contradicts_is_asked_again_a_few_times_and_a_true_one_never() {
        let now = Instant::now();
        let mut p = progress(10, 100);
        p.position = 40;
        // The log holds 40 (its end included: a fetch at the end waits for records).
        for _ in 0..REFETCHES_AT_ONE_POSITION {
            assert!(p.retry_out_of_range(Some(bounds(0, 40)), now));
        }
        assert!(!p.retry_out_of_range(Some(bounds(0, 40)), now), "a broker that keeps saying so is believed");
        // Records read since: the count starts again at the new position.
        p.position = 41;
        assert!(p.retry_out_of_range(Some(bounds(0, 41)), now));
        let mut p = progress(10, 100);
        p.position = 40;
        assert!(!p.retry_out_of_range(Some(bounds(41, 90)), now), "below the log start: deleted records");
        assert!(!p.retry_out_of_range(Some(bounds(0, 39)), now), "past the end: a truncated log");
        assert!(!p.retry_out_of_range(None, now), "bounds unknown");
        assert_eq!(p.refetches.1, 0);
        let tp = TopicPartition::new("t", 3);
        let ClientError::OffsetOutOfRange { partition, offset, requested, log_start, high_watermark } =
            p.out_of_range_error(&tp, Some(bounds(41, 90)))
        else {
            panic!("not the out-of-range error");
        };
        assert_eq!(
            (partition, offset, requested, log_start, high_watermark),
            (tp, 40, (10, 100), Some(41), Some(90))
        );
    }

    #[test]
    fn a_batch_failing_its_checksum_is_fetched_again_a_few_times_at_one_position() {
        let now = Instant::now();
        let mut p = progress(0, 100);
        p.position = 7;
        for _ in 0..REFETCHES_AT_ONE_POSITION {
            assert!(p.retry_corrupt_batch(now));
        }
        assert!(!p.retry_corrupt_batch(now), "a batch corrupt in the log fails every time: the error");
        assert!(
            !p.retry_out_of_range(Some(bounds(0, 9)), now),
            "one count per position, whatever the answer"
        );
        p.position = 12;
        assert!(p.retry_corrupt_batch(now), "the next batch has its own count");
    }

    #[test]
    fn each_refetch_at_a_position_waits_longer_and_a_new_position_starts_short_again() {
        let now = Instant::now();
        let mut p = progress(0, 100);
        p.position = 7;
        assert!(p.fetchable(now), "nothing to wait for before a refetch");
        let mut waits = Vec::new();
        for _ in 0..REFETCHES_AT_ONE_POSITION {
            assert!(p.retry_corrupt_batch(now));
            let wait = p.not_before.unwrap() - now;
            assert!(!p.fetchable(now) && p.fetchable(now + wait));
            waits.push(wait);
        }
        // Steps of 100, 200 and 400 ms, each drawn between half and all of its step.
        for (wait, step) in waits.iter().zip([100u64, 200, 400]) {
            let step = Duration::from_millis(step);
            assert!(*wait >= step / 2 && *wait <= step, "{waits:?}");
        }
        p.position = 8;
        assert!(p.retry_out_of_range(Some(bounds(0, 9)), now));
        assert!(p.not_before.unwrap() - now <= REFETCH_BACKOFF, "a new position waits the first step");
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
    fn read_committed_stops_at_the_last_stable_offset() {
        let mut p = progress(0, 10);
        let mut r = response(&[data(0, 2, -1, false)], &[], 5);
        r.last_stable_offset = Some(2);
        read_into(&mut p, &r, Isolation::ReadCommitted).unwrap();
        assert!(p.done(Isolation::ReadCommitted));
        assert!(!p.done(Isolation::ReadUncommitted));
        assert_eq!(p.fetched.last_stable, Some(2));
    }
}
