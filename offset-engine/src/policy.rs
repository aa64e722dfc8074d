//! The two separate decisions a caller makes up front (rule R15): where to start when nothing is
//! stored, and what to do when a stored offset is outside the log. Plus the checks on the times
//! a caller resolves to offsets (rule R10).

use std::error::Error;
use std::fmt;

use crate::model::{InvalidInput, Offset};

/// Where to begin a partition that has nothing stored ([`crate::Anomaly::NewPartition`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum StartPolicy {
    /// At the log start: nothing written before discovery is missed (R4).
    #[default]
    Earliest,
    /// At the end: only records written from now on. Everything already in the log is skipped,
    /// and the plan says so.
    Latest,
    /// At the offset the caller resolved for this time (ListOffsets with a timestamp) and passed
    /// in [`crate::PartitionInput::timestamp_offset`]. With no record at or after the time, at the
    /// end (as Flink and kafka-consumer-groups do), reported as
    /// [`crate::FromReason::NoRecordAtOrAfterTimestamp`].
    Timestamp {
        /// Milliseconds since the Unix epoch; informational, the offsets come per partition.
        timestamp_ms: i64,
    },
    /// Do not start: the partition's outcome is a failure carrying `NewPartition`.
    Fail,
}

/// What to do with a stored offset that cannot be used as it is: outside `[log_start, end]`,
/// committed against a recreated topic, or past a truncation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OutOfRangePolicy {
    /// Fail the partition loudly with the anomaly (the default: resets are explicit choices).
    #[default]
    Fail,
    /// Resume at the log start.
    Earliest,
    /// Resume at the end.
    Latest,
    /// Resume at the nearest valid position: the log start for `DataLoss`, the end for
    /// `OffsetAheadOfLog`, the divergence offset for `Truncated`, and the new log start for
    /// `TopicRecreated` and `LeaderEpochBackwards` (the stored offset means nothing in the new
    /// topic).
    Clamp,
}

/// The caller's answer to "which offset has the first record at or after time T?"
/// (ListOffsets with a timestamp).
///
/// `Offset(Offset(-1))` is read as [`TimeLookup::NoRecordAtOrAfter`] wherever the engine takes a
/// lookup (it is how ListOffsets says it), never as an offset below the log start; an offset
/// below `-1` is invalid input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeLookup {
    /// The first offset whose record timestamp is `>= T`.
    Offset(Offset),
    /// No record at or after `T` (ListOffsets answered `-1`).
    NoRecordAtOrAfter,
}

impl TimeLookup {
    /// ListOffsets' answer as it comes off the wire: `-1` is "no record at or after the time".
    pub const fn from_wire(offset: i64) -> TimeLookup {
        if offset == -1 {
            TimeLookup::NoRecordAtOrAfter
        } else {
            TimeLookup::Offset(Offset(offset))
        }
    }

    /// `-1` read as "no record", any other negative offset refused.
    pub(crate) fn normalized(self) -> Result<TimeLookup, InvalidInput> {
        match self {
            TimeLookup::Offset(Offset(-1)) => Ok(TimeLookup::NoRecordAtOrAfter),
            TimeLookup::Offset(offset) if offset.0 < 0 => {
                Err(InvalidInput::NegativeTimestampOffset { offset })
            }
            other => Ok(other),
        }
    }
}

/// A time that cannot be a millisecond timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TimeError {
    /// Below 0: negative values are ListOffsets' special codes, not times.
    Negative {
        /// The value as given.
        value: i64,
    },
    /// Below 10^11 ms (March 1973), but in range for seconds: almost certainly seconds.
    LooksLikeSeconds {
        /// The value as given.
        value: i64,
    },
    /// `now − duration` does not fit or is before the epoch.
    DurationTooLong {
        /// The current time passed in, milliseconds since the Unix epoch.
        now_ms: i64,
        /// The duration to go back, milliseconds.
        duration_ms: u64,
    },
}

impl fmt::Display for TimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Negative { value } => write!(f, "timestamp {value} is negative"),
            Self::LooksLikeSeconds { value } => {
                write!(f, "timestamp {value} looks like seconds; timestamps are milliseconds since the epoch")
            }
            Self::DurationTooLong { now_ms, duration_ms } => {
                write!(f, "duration {duration_ms} ms before {now_ms} ms is before the epoch")
            }
        }
    }
}

impl Error for TimeError {}

/// Millisecond timestamps below this are rejected as probably seconds (1973-03-03 in ms;
/// 5138 AD in seconds).
pub const MIN_PLAUSIBLE_TIMESTAMP_MS: i64 = 100_000_000_000;

/// Checks that `timestamp_ms` is plausibly milliseconds since the epoch.
pub fn check_timestamp_ms(timestamp_ms: i64) -> Result<i64, TimeError> {
    if timestamp_ms < 0 {
        Err(TimeError::Negative { value: timestamp_ms })
    } else if timestamp_ms < MIN_PLAUSIBLE_TIMESTAMP_MS {
        Err(TimeError::LooksLikeSeconds { value: timestamp_ms })
    } else {
        Ok(timestamp_ms)
    }
}

/// The timestamp `duration_ms` before `now_ms` (kafka-consumer-groups `--by-duration`,
/// auto.offset.reset `by_duration`). The caller supplies `now_ms`; the engine has no clock.
pub fn timestamp_before(now_ms: i64, duration_ms: u64) -> Result<i64, TimeError> {
    let now = check_timestamp_ms(now_ms)?;
    i64::try_from(duration_ms)
        .ok()
        .and_then(|d| now.checked_sub(d))
        .filter(|t| *t >= 0)
        .ok_or(TimeError::DurationTooLong { now_ms, duration_ms })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_passed_as_milliseconds_are_rejected() {
        assert_eq!(
            check_timestamp_ms(1_700_000_000),
            Err(TimeError::LooksLikeSeconds { value: 1_700_000_000 })
        );
        assert_eq!(check_timestamp_ms(1_700_000_000_000), Ok(1_700_000_000_000));
        assert_eq!(check_timestamp_ms(-2), Err(TimeError::Negative { value: -2 }));
    }

    #[test]
    fn duration_is_subtracted_from_the_given_now() {
        assert_eq!(timestamp_before(1_700_000_000_000, 3_600_000), Ok(1_699_996_400_000));
        assert!(timestamp_before(1_700_000_000_000, u64::MAX).is_err());
        assert!(timestamp_before(1_700_000_000_000, 1_700_000_000_001).is_err());
    }
}
