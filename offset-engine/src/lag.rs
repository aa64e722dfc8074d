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
//! so `lag = consumable + lost` whenever `committed <= end`. [`lag`] is that arithmetic: a
//! `committed` beyond `end` gives a negative `lag` and `consumable`, reported as they are
//! (never clamped to 0).
//! Nothing committed is its own state: there is no `lag` then, only what could be consumed.
//!
//! [`stored_lag`] is what plans and `group describe` report for a stored position. It differs
//! from [`lag`] in the two cases where the arithmetic would describe the wrong log:
//!
//! - a position stored for another incarnation of the topic (both topic ids known and
//!   different) is not committed in this log: [`Lag::NothingCommitted`], never the new log's end
//!   minus the old topic's offset;
//! - under read_committed, a position in `(last_stable, high_watermark]` is not ahead of the
//!   log — it waits for an open transaction to close (the plan skips it as `AwaitingStable`):
//!   `lag = consumable = lost = 0`, nothing readable yet.
//!
//! So a negative [`stored_lag`] means the position is beyond the high watermark: in a plan that
//! is always reported as an anomaly (`offset_ahead_of_log`, `truncated`, or
//! `end_went_backwards` for a stale end); hiding it is how phantom lag starts.

use crate::model::{Isolation, LogState, LogView, Offset, Stored, TopicId};

/// The lag of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lag {
    /// Something is committed. See the module docs for the definitions. The third number,
    /// `lost` ([`Lag::lost`]), is always `lag − consumable` (`max(committed, log_start) −
    /// committed`), so it is not stored: a plan of a million partitions holds a million of these.
    Committed {
        /// `end − committed`, in records; negative when the committed offset is beyond the end.
        lag: i64,
        /// `end − max(committed, log_start)`, in records: what is still in the log to be read.
        consumable: i64,
    },
    /// Nothing is committed: `consumable = end − log_start`, all of the log.
    NothingCommitted {
        /// `end − log_start`, in records.
        consumable: i64,
    },
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

    /// Records deleted before they were read, `max(0, log_start − committed)`; `None` when
    /// nothing is committed or unknown.
    pub const fn lost(&self) -> Option<u64> {
        match *self {
            // lag − consumable = max(committed, log_start) − committed, in [0, i64::MAX].
            Lag::Committed { lag, consumable } => Some(lag.abs_diff(consumable)),
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

/// The lag of a stored position (see the module docs): [`lag_of`], except that a position
/// stored for another incarnation of the topic (both ids known and different; the all-zero id
/// is unknown) is [`Lag::NothingCommitted`], and a read_committed position waiting for an open
/// transaction (`last_stable < committed <= high_watermark`) has lag 0, not a negative one.
pub fn stored_lag(stored: Option<&Stored>, log: &LogState, isolation: Isolation) -> Lag {
    let LogState::Found(view) = log else { return Lag::Unknown };
    let Some(stored) = stored else { return lag(None, view, isolation) };
    if let (Some(old), Some(new)) = (TopicId::known(stored.topic_id), TopicId::known(view.topic_id)) {
        if old != new {
            return lag(None, view, isolation);
        }
    }
    if view.validate().is_err() || stored.offset.0 < 0 {
        return Lag::Unknown;
    }
    validated_lag(Some(stored.offset), view, isolation)
}

/// The lag of a position in a log that plans report ([`stored_lag`] without the id check),
/// for a view that passed [`LogView::validate`] and a committed offset `>= 0`: a read_committed
/// position waiting for an open transaction has lag 0.
pub(crate) fn validated_lag(committed: Option<Offset>, view: &LogView, isolation: Isolation) -> Lag {
    let end = view.end(isolation);
    match committed {
        None => Lag::NothingCommitted { consumable: end.0.saturating_sub(view.log_start.0) },
        Some(c) if c > end && c <= view.high_watermark => Lag::Committed { lag: 0, consumable: 0 },
        Some(c) => Lag::Committed {
            lag: end.0.saturating_sub(c.0),
            consumable: end.0.saturating_sub(c.0.max(view.log_start.0)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_below_log_start_splits_lag_into_consumable_and_lost() {
        // Retention moved the log start to 250 while the group sat at 100; end 1000.
        let l = lag(Some(Offset(100)), &LogView::new(250, 1000), Isolation::ReadUncommitted);
        assert_eq!(l, Lag::Committed { lag: 900, consumable: 750 });
        assert_eq!(l.lost(), Some(150));
    }

    #[test]
    fn lost_is_what_was_deleted_before_being_read_for_every_position() {
        for log_start in 0..12 {
            for end in log_start..12 {
                for committed in 0..15 {
                    let l = lag(
                        Some(Offset(committed)),
                        &LogView::new(log_start, end),
                        Isolation::ReadUncommitted,
                    );
                    assert_eq!(l.lost(), Some((log_start - committed).max(0) as u64), "{l:?}");
                }
            }
        }
        let far = lag(Some(Offset(0)), &LogView::new(i64::MAX, i64::MAX), Isolation::ReadUncommitted);
        assert_eq!(
            (far.lag(), far.consumable(), far.lost()),
            (Some(i64::MAX), Some(0), Some(i64::MAX as u64))
        );
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
    fn read_committed_waiting_for_a_transaction_is_not_negative_lag() {
        // Issue 18: last stable 90, high watermark 100, stored 100 gave lag −10 with no anomaly.
        let mut v = LogView::new(0, 100);
        v.last_stable = Offset(90);
        let log = LogState::Found(v);
        let l = stored_lag(Some(&Stored::at(100)), &log, Isolation::ReadCommitted);
        assert_eq!(l, Lag::Committed { lag: 0, consumable: 0 });
        assert_eq!(l.lost(), Some(0));
        // The arithmetic itself stays as defined.
        assert_eq!(lag(Some(Offset(100)), &v, Isolation::ReadCommitted).lag(), Some(-10));
        // Beyond the high watermark it is ahead of the log whatever the isolation.
        assert_eq!(stored_lag(Some(&Stored::at(101)), &log, Isolation::ReadCommitted).lag(), Some(-11));
    }

    #[test]
    fn a_position_of_a_recreated_topic_has_no_lag_in_the_new_one() {
        let mut v = LogView::new(0, 120);
        v.topic_id = Some(TopicId([2; 16]));
        let old = Stored { topic_id: Some(TopicId([1; 16])), ..Stored::at(3_500) };
        let log = LogState::Found(v);
        assert_eq!(
            stored_lag(Some(&old), &log, Isolation::ReadUncommitted),
            Lag::NothingCommitted { consumable: 120 }
        );
        let same = Stored { topic_id: Some(TopicId([2; 16])), ..Stored::at(100) };
        assert_eq!(stored_lag(Some(&same), &log, Isolation::ReadUncommitted).lag(), Some(20));
        let zero = Stored { topic_id: Some(TopicId([0; 16])), ..Stored::at(100) };
        assert_eq!(
            stored_lag(Some(&zero), &log, Isolation::ReadUncommitted).lag(),
            Some(20),
            "zero id is unknown"
        );
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
