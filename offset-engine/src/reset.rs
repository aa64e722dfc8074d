//! Reset planning with kafka-consumer-groups semantics (rule R13): a target per partition,
//! clamped into `[log_start, end]` with the reason shown, before/after/lag per partition.
//!
//! Times are resolved by the caller (ListOffsets with a timestamp) and passed in; the engine
//! has no clock. Whether the group may be reset (state Empty or Dead) is the caller's check.

use std::error::Error;
use std::fmt;

use crate::lag::{lag, Lag};
use crate::model::{InvalidInput, Isolation, LogState, Offset, Stored, TopicPartition};
use crate::policy::TimeLookup;

/// Where to move the group (kafka-consumer-groups `--to-*` / `--shift-by` / `--by-duration` /
/// `--from-file`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResetTarget {
    /// `--to-earliest`: the log start.
    Earliest,
    /// `--to-latest`: the end (per isolation).
    Latest,
    /// `--to-current`: the committed offset, clamped.
    Current,
    /// `--to-offset N`, the same for every partition.
    Offset(Offset),
    /// `--shift-by N`: committed + N (negative moves back). An error where nothing is committed.
    ShiftBy(i64),
    /// `--to-datetime`: the offset resolved per partition in [`ResetInput::time_lookup`].
    Timestamp {
        /// The time to reset to, milliseconds since the Unix epoch.
        timestamp_ms: i64,
    },
    /// `--by-duration`: like `Timestamp`, for `now − duration` (see
    /// [`crate::policy::timestamp_before`]).
    Duration {
        /// How far back from now, milliseconds.
        duration_ms: u64,
    },
    /// `--from-file`: the offset per partition in [`ResetInput::file_offset`].
    FromFile,
}

/// One partition to reset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResetInput {
    /// Which partition to reset; its [`ResetEntry`] carries the same value.
    pub tp: TopicPartition,
    /// The group's committed position; `None` when nothing is committed.
    pub committed: Option<Stored>,
    /// What the broker said about the partition's log (or that it does not exist).
    pub log: LogState,
    /// For `Timestamp` and `Duration`.
    pub time_lookup: Option<TimeLookup>,
    /// For `FromFile`.
    pub file_offset: Option<Offset>,
}

impl ResetInput {
    /// A partition without a resolved time or file offset (both `None`).
    pub fn new(tp: TopicPartition, committed: Option<Stored>, log: LogState) -> Self {
        ResetInput { tp, committed, log, time_lookup: None, file_offset: None }
    }
}

/// The reset decided for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResetEntry {
    /// The partition, as in its input.
    pub tp: TopicPartition,
    /// The committed offset before the reset.
    pub before: Option<Offset>,
    /// The new position, or why there is none (then nothing is to be written).
    pub outcome: Result<ResetTo, ResetError>,
}

/// A new committed offset and why it is that value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResetTo {
    /// Inside `[log_start, end]`.
    pub offset: Offset,
    /// Whether `offset` is the target or the target clamped into the log.
    pub reason: ResetReason,
    /// Lag after the reset.
    pub lag: Lag,
}

/// Why a reset's new offset is what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResetReason {
    /// The target was inside the log.
    AsRequested,
    /// The target was below the log start ("New offset (X) is lower than earliest offset").
    ClampedToLogStart {
        /// The target offset before clamping (may be negative after a shift).
        requested: i64,
    },
    /// The target was beyond the end ("New offset (X) is higher than latest offset").
    ClampedToEnd {
        /// The target offset before clamping.
        requested: i64,
    },
    /// No record at or after the time: the end ("Falling back to latest known offset").
    NoRecordAtOrAfterTimestamp,
}

/// Why a partition cannot be reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResetError {
    /// `ShiftBy` with nothing committed.
    ShiftWithoutCommit,
    /// `committed + shift` does not fit in 64 bits.
    ShiftOverflow {
        /// The committed offset the shift was added to.
        committed: Offset,
        /// The `N` of `--shift-by N`.
        shift: i64,
    },
    /// `Current` with nothing committed.
    NothingCommitted,
    /// `Timestamp`/`Duration` without a [`ResetInput::time_lookup`].
    TimeNotResolved,
    /// `FromFile` without a [`ResetInput::file_offset`] (the file does not list the partition).
    NotInFile,
    /// The topic exists but has no such partition.
    PartitionNotFound,
    /// The topic does not exist.
    TopicNotFound,
    /// The partition's input is inconsistent (log view, committed offset or time lookup).
    InvalidInput(InvalidInput),
}

impl fmt::Display for ResetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ShiftWithoutCommit => f.write_str("cannot shift: nothing is committed"),
            Self::ShiftOverflow { committed, shift } => {
                write!(f, "committed {committed} shifted by {shift} overflows")
            }
            Self::NothingCommitted => f.write_str("nothing is committed"),
            Self::TimeNotResolved => f.write_str("no offset was resolved for the time"),
            Self::NotInFile => f.write_str("partition is not in the file"),
            Self::PartitionNotFound => f.write_str("partition not found"),
            Self::TopicNotFound => f.write_str("topic not found"),
            Self::InvalidInput(e) => e.fmt(f),
        }
    }
}

impl Error for ResetError {}

/// Plans a reset: one entry per input, in input order.
pub fn plan_reset(target: ResetTarget, isolation: Isolation, inputs: &[ResetInput]) -> Vec<ResetEntry> {
    inputs
        .iter()
        .map(|i| ResetEntry {
            tp: i.tp.clone(),
            before: i.committed.map(|c| c.offset),
            outcome: reset_one(target, isolation, i),
        })
        .collect()
}

fn reset_one(target: ResetTarget, isolation: Isolation, i: &ResetInput) -> Result<ResetTo, ResetError> {
    let view = match i.log {
        LogState::Found(v) => v,
        LogState::PartitionNotFound => return Err(ResetError::PartitionNotFound),
        LogState::TopicNotFound => return Err(ResetError::TopicNotFound),
    };
    let view = view.normalized();
    view.validate().map_err(ResetError::InvalidInput)?;
    if let Some(c) = i.committed {
        c.validate().map_err(ResetError::InvalidInput)?;
    }
    let (start, end) = (view.log_start, view.end(isolation));
    let committed = i.committed.map(|c| c.offset);
    let requested: i64 = match target {
        ResetTarget::Earliest => start.0,
        ResetTarget::Latest => end.0,
        ResetTarget::Current => committed.ok_or(ResetError::NothingCommitted)?.0,
        ResetTarget::Offset(o) => o.0,
        ResetTarget::ShiftBy(n) => {
            let c = committed.ok_or(ResetError::ShiftWithoutCommit)?;
            c.0.checked_add(n).ok_or(ResetError::ShiftOverflow { committed: c, shift: n })?
        }
        ResetTarget::Timestamp { .. } | ResetTarget::Duration { .. } => {
            // ListOffsets' `-1` is "no record at or after the time", not an offset to clamp.
            let lookup = i.time_lookup.ok_or(ResetError::TimeNotResolved)?;
            match lookup.normalized().map_err(ResetError::InvalidInput)? {
                TimeLookup::Offset(o) => o.0,
                TimeLookup::NoRecordAtOrAfter => {
                    return Ok(ResetTo {
                        offset: end,
                        reason: ResetReason::NoRecordAtOrAfterTimestamp,
                        lag: lag(Some(end), &view, isolation),
                    })
                }
            }
        }
        ResetTarget::FromFile => i.file_offset.ok_or(ResetError::NotInFile)?.0,
    };
    let (offset, reason) = if requested < start.0 {
        (start, ResetReason::ClampedToLogStart { requested })
    } else if requested > end.0 {
        (end, ResetReason::ClampedToEnd { requested })
    } else {
        (Offset(requested), ResetReason::AsRequested)
    };
    Ok(ResetTo { offset, reason, lag: lag(Some(offset), &view, isolation) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LogView;

    fn input(committed: Option<i64>, log_start: i64, end: i64) -> ResetInput {
        ResetInput::new(
            TopicPartition::new("t", 0),
            committed.map(Stored::at),
            LogState::Found(LogView::new(log_start, end)),
        )
    }

    fn one(target: ResetTarget, i: &ResetInput) -> Result<ResetTo, ResetError> {
        plan_reset(target, Isolation::ReadUncommitted, std::slice::from_ref(i)).remove(0).outcome
    }

    #[test]
    fn shift_with_nothing_committed_is_an_error() {
        assert_eq!(one(ResetTarget::ShiftBy(-10), &input(None, 0, 100)), Err(ResetError::ShiftWithoutCommit));
        assert_eq!(
            one(ResetTarget::ShiftBy(i64::MAX), &input(Some(5), 0, 100)),
            Err(ResetError::ShiftOverflow { committed: Offset(5), shift: i64::MAX })
        );
    }

    #[test]
    fn shift_below_log_start_is_clamped_with_the_requested_offset() {
        let r = one(ResetTarget::ShiftBy(-50), &input(Some(80), 40, 100)).unwrap();
        assert_eq!(r.offset, Offset(40));
        assert_eq!(r.reason, ResetReason::ClampedToLogStart { requested: 30 });
        assert_eq!(r.lag.lag(), Some(60));
    }

    #[test]
    fn to_offset_beyond_end_is_clamped_to_end() {
        let r = one(ResetTarget::Offset(Offset(500)), &input(Some(80), 40, 100)).unwrap();
        assert_eq!(r.offset, Offset(100));
        assert_eq!(r.reason, ResetReason::ClampedToEnd { requested: 500 });
    }

    #[test]
    fn datetime_without_a_record_falls_back_to_latest() {
        let mut i = input(Some(80), 40, 100);
        assert_eq!(one(ResetTarget::Timestamp { timestamp_ms: 0 }, &i), Err(ResetError::TimeNotResolved));
        i.time_lookup = Some(TimeLookup::NoRecordAtOrAfter);
        let r = one(ResetTarget::Duration { duration_ms: 1 }, &i).unwrap();
        assert_eq!((r.offset, r.reason), (Offset(100), ResetReason::NoRecordAtOrAfterTimestamp));
        i.time_lookup = Some(TimeLookup::Offset(Offset(55)));
        let r = one(ResetTarget::Timestamp { timestamp_ms: 0 }, &i).unwrap();
        assert_eq!((r.offset, r.reason), (Offset(55), ResetReason::AsRequested));
        // Issue 18: ListOffsets' -1 is "no record", not an offset below the log start.
        i.time_lookup = Some(TimeLookup::Offset(Offset(-1)));
        let r = one(ResetTarget::Timestamp { timestamp_ms: 0 }, &i).unwrap();
        assert_eq!((r.offset, r.reason), (Offset(100), ResetReason::NoRecordAtOrAfterTimestamp));
        i.time_lookup = Some(TimeLookup::Offset(Offset(-2)));
        assert_eq!(
            one(ResetTarget::Timestamp { timestamp_ms: 0 }, &i),
            Err(ResetError::InvalidInput(InvalidInput::NegativeTimestampOffset { offset: Offset(-2) }))
        );
    }

    #[test]
    fn earliest_latest_current_and_file() {
        let mut i = input(Some(80), 40, 100);
        assert_eq!(one(ResetTarget::Earliest, &i).unwrap().offset, Offset(40));
        assert_eq!(one(ResetTarget::Latest, &i).unwrap().offset, Offset(100));
        assert_eq!(one(ResetTarget::Current, &i).unwrap().offset, Offset(80));
        assert_eq!(one(ResetTarget::FromFile, &i), Err(ResetError::NotInFile));
        i.file_offset = Some(Offset(10));
        assert_eq!(
            one(ResetTarget::FromFile, &i).unwrap().reason,
            ResetReason::ClampedToLogStart { requested: 10 }
        );
        assert_eq!(one(ResetTarget::Current, &input(None, 0, 1)), Err(ResetError::NothingCommitted));
        let gone = ResetInput::new(TopicPartition::new("t", 9), None, LogState::PartitionNotFound);
        assert_eq!(one(ResetTarget::Earliest, &gone), Err(ResetError::PartitionNotFound));
    }
}
