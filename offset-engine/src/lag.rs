//! Lag as three well-defined numbers (rule R11).
//!
//! With `end` the isolation's end (high watermark, or last stable offset under read_committed):
//!
//! | number       | definition                         | meaning                                   |
//! |--------------|------------------------------------|-------------------------------------------|
//! | `lag`        | `end − committed`                  | what kafka-consumer-groups prints         |
//! | `consumable` | `end − max(committed, log_start)`  | records still there to be read            |
//! | `lost`       | `max(0, log_start − committed)`    | records deleted before they were read     |
//!
//! so `lag = consumable + lost` whenever `committed <= end`. A `committed` beyond `end` gives a
//! negative `lag` and `consumable`; they are reported as they are (never clamped to 0), because
//! that is the `OffsetAheadOfLog` anomaly and hiding it is how phantom lag starts.
//! Nothing committed is its own state: there is no `lag` then, only what could be consumed.

use crate::model::{Isolation, LogState, LogView, Offset};

/// The lag of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lag {
    /// Something is committed. See the module docs for the definitions.
    Committed { lag: i64, consumable: i64, lost: u64 },
    /// Nothing is committed: `consumable = end − log_start`, all of the log.
    NothingCommitted { consumable: i64 },
    /// No log to compare against (partition or topic not found, or an invalid view).
    Unknown,
}

impl Lag {
    /// `end − committed`; `None` when nothing is committed or the log is unknown.
    pub const fn lag(&self) -> Option<i64> {
        match *self {
            Lag::Committed { lag, .. } => Some(lag),
            _ => None,
        }
    }

    /// Records that can still be read; `None` when the log is unknown.
    pub const fn consumable(&self) -> Option<i64> {
        match *self {
            Lag::Committed { consumable, .. } | Lag::NothingCommitted { consumable } => Some(consumable),
            Lag::Unknown => None,
        }
    }

    /// Records deleted before they were read; `None` when nothing is committed or unknown.
    pub const fn lost(&self) -> Option<u64> {
        match *self {
            Lag::Committed { lost, .. } => Some(lost),
            _ => None,
        }
    }
}

/// Lag of a committed offset against a log view (for `group describe`). An invalid view
/// (see [`LogView::validate`]) or a negative committed offset gives [`Lag::Unknown`].
pub fn lag(committed: Option<Offset>, view: &LogView, isolation: Isolation) -> Lag {
    if view.validate().is_err() {
        return Lag::Unknown;
    }
    let end = view.end(isolation);
    match committed {
        None => Lag::NothingCommitted { consumable: end.0.saturating_sub(view.log_start.0) },
        Some(c) if c.0 < 0 => Lag::Unknown,
        Some(c) => Lag::Committed {
            lag: end.0.saturating_sub(c.0),
            consumable: end.0.saturating_sub(c.0.max(view.log_start.0)),
            lost: c.records_until(view.log_start),
        },
    }
}

/// [`lag`] for a looked-up partition: [`Lag::Unknown`] when it was not found.
pub fn lag_of(committed: Option<Offset>, log: &LogState, isolation: Isolation) -> Lag {
    match log {
        LogState::Found(view) => lag(committed, view, isolation),
        LogState::PartitionNotFound | LogState::TopicNotFound => Lag::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_below_log_start_splits_lag_into_consumable_and_lost() {
        // Retention moved the log start to 250 while the group sat at 100; end 1000.
        let l = lag(Some(Offset(100)), &LogView::new(250, 1000), Isolation::ReadUncommitted);
        assert_eq!(l, Lag::Committed { lag: 900, consumable: 750, lost: 150 });
    }

    #[test]
    fn nothing_committed_is_not_lag_of_end_plus_one() {
        let l = lag(None, &LogView::new(40, 100), Isolation::ReadUncommitted);
        assert_eq!(l, Lag::NothingCommitted { consumable: 60 });
        assert_eq!(l.lag(), None);
    }

    #[test]
    fn commit_ahead_of_end_is_negative_not_clamped() {
        let l = lag(Some(Offset(120)), &LogView::new(0, 100), Isolation::ReadUncommitted);
        assert_eq!(l.lag(), Some(-20));
        assert_eq!(l.consumable(), Some(-20));
        assert_eq!(l.lost(), Some(0));
    }

    #[test]
    fn read_committed_lag_stops_at_last_stable() {
        let mut v = LogView::new(0, 100);
        v.last_stable = Offset(90);
        assert_eq!(lag(Some(Offset(80)), &v, Isolation::ReadCommitted).lag(), Some(10));
        assert_eq!(lag(Some(Offset(80)), &v, Isolation::ReadUncommitted).lag(), Some(20));
    }

    #[test]
    fn unknown_log_or_invalid_input_has_no_numbers() {
        assert_eq!(
            lag_of(Some(Offset(1)), &LogState::TopicNotFound, Isolation::ReadUncommitted),
            Lag::Unknown
        );
        assert_eq!(lag(Some(Offset(-1)), &LogView::new(0, 5), Isolation::ReadUncommitted), Lag::Unknown);
        assert_eq!(lag(None, &LogView::new(9, 5), Isolation::ReadUncommitted), Lag::Unknown);
    }
}
