//! Lag in time: how old the oldest record a group has not consumed is, and how long it will
//! take to catch up. Pure arithmetic on numbers the caller measured: the time is an argument,
//! nothing here reads a clock or the cluster.
//!
//! Two ways to a time lag:
//!
//! - **measured** ([`time_lag_of_record`]): the timestamp of the first unconsumed record (the
//!   caller fetched it at `max(committed, log_start)`), `time_lag = now − timestamp`;
//! - **estimated** ([`estimate_time_lag`]): kafka-lag-exporter's interpolation. Samples of the
//!   log end over time say when the end was at the committed offset; `time_lag = now − that
//!   time`. Between two samples the end is taken to have moved linearly; before the oldest
//!   sample the line through the oldest and newest samples is extended.
//!
//! A caught-up partition has a time lag of 0, always, whichever way. A clock that is behind the
//! producer's (a record timestamp in the future) gives 0, never a negative age. What cannot be
//! known is [`TimeLag::Unknown`] with the reason, never a made-up 0.

/// A partition's lag in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeLag {
    /// Nothing left to consume: 0 ms.
    CaughtUp,
    /// The first unconsumed record is this old (ms, at least 0).
    Behind {
        /// `now − timestamp of the first unconsumed record`, in milliseconds.
        ms: u64,
    },
    /// Not known, and why.
    Unknown(TimeLagUnknown),
}

impl TimeLag {
    /// The lag in milliseconds (`0` when caught up); `None` when unknown.
    pub const fn ms(&self) -> Option<u64> {
        match *self {
            TimeLag::CaughtUp => Some(0),
            TimeLag::Behind { ms } => Some(ms),
            TimeLag::Unknown(_) => None,
        }
    }
}

/// Why a time lag is not known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeLagUnknown {
    /// Nothing is committed, so there is no "first unconsumed record".
    NothingCommitted,
    /// The log is not known (partition or topic gone, end not read).
    NoLog,
    /// No record was found where one should be (compacted away, a transaction marker, or the
    /// fetch failed).
    NoRecord,
    /// The record has no timestamp (magic 0) or a negative one.
    NoTimestamp,
    /// Not asked for (`--time-lag off`).
    NotMeasured,
    /// An estimate needs end offsets that moved over at least two samples.
    TooFewSamples,
}

impl TimeLagUnknown {
    /// A short snake_case name, for JSON and text output.
    pub const fn as_str(&self) -> &'static str {
        match self {
            TimeLagUnknown::NothingCommitted => "nothing_committed",
            TimeLagUnknown::NoLog => "no_log",
            TimeLagUnknown::NoRecord => "no_record",
            TimeLagUnknown::NoTimestamp => "no_timestamp",
            TimeLagUnknown::NotMeasured => "not_measured",
            TimeLagUnknown::TooFewSamples => "too_few_samples",
        }
    }
}

/// The time lag from the first unconsumed record: `consumable` records are left to read
/// (`end − max(committed, log_start)`; `None` when nothing is committed or the log is unknown),
/// and `first_unconsumed_timestamp_ms` is that record's timestamp as fetched (`None` when no
/// record came back). Records deleted before they were read (lost) do not count: the oldest
/// record that can still be consumed is the one at `log_start`.
pub fn time_lag_of_record(
    now_ms: i64,
    consumable: Option<i64>,
    nothing_committed: bool,
    first_unconsumed_timestamp_ms: Option<i64>,
) -> TimeLag {
    if nothing_committed {
        return TimeLag::Unknown(TimeLagUnknown::NothingCommitted);
    }
    match consumable {
        None => TimeLag::Unknown(TimeLagUnknown::NoLog),
        // A committed offset at or beyond the end has nothing to wait for.
        Some(c) if c <= 0 => TimeLag::CaughtUp,
        Some(_) => match first_unconsumed_timestamp_ms {
            None => TimeLag::Unknown(TimeLagUnknown::NoRecord),
            Some(ts) if ts < 0 => TimeLag::Unknown(TimeLagUnknown::NoTimestamp),
            Some(ts) => TimeLag::Behind { ms: age(now_ms, ts) },
        },
    }
}

/// `now − then` in ms, 0 when `then` is in the future.
fn age(now_ms: i64, then_ms: i64) -> u64 {
    u64::try_from(i128::from(now_ms) - i128::from(then_ms)).unwrap_or(0)
}

/// One observation of a partition: when, the log end then, and the committed offset then.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sample {
    /// Milliseconds since the epoch.
    pub at_ms: i64,
    /// The log end (isolation's end) at `at_ms`.
    pub end: i64,
    /// The committed offset at `at_ms`; `None` when nothing was committed.
    pub committed: Option<i64>,
}

/// kafka-lag-exporter's estimate of the time lag of `committed` at `now_ms` from `samples` of
/// the log end (any order; later samples win for equal times). `committed >= ` the newest end
/// is caught up. Otherwise the time the end passed `committed` is interpolated between the two
/// samples around it, or extrapolated back along the line through the oldest and newest
/// samples when `committed` is below every sample; with no movement of the end to go by it is
/// [`TimeLagUnknown::TooFewSamples`]. An end that went backwards between samples (a recreated
/// topic, a truncation) makes the samples before it meaningless: only the samples after the
/// last step back are used.
pub fn estimate_time_lag(samples: &[Sample], committed: Option<i64>, now_ms: i64) -> TimeLag {
    let Some(committed) = committed else { return TimeLag::Unknown(TimeLagUnknown::NothingCommitted) };
    let mut points: Vec<(i64, i64)> = samples.iter().map(|s| (s.at_ms, s.end)).collect();
    points.sort_by_key(|p| p.0);
    points.dedup_by(|later, earlier| {
        if later.0 == earlier.0 {
            *earlier = *later;
            true
        } else {
            false
        }
    });
    if let Some(back) = points.windows(2).rposition(|w| w[1].1 < w[0].1) {
        points.drain(..=back);
    }
    let Some(&(_, newest_end)) = points.last() else {
        return TimeLag::Unknown(TimeLagUnknown::TooFewSamples);
    };
    if committed >= newest_end {
        return TimeLag::CaughtUp;
    }
    // The end passed `committed` between two samples: interpolate.
    for w in points.windows(2) {
        let ((t0, e0), (t1, e1)) = (w[0], w[1]);
        if e0 <= committed && committed < e1 {
            return TimeLag::Behind { ms: age(now_ms, interpolate(t0, e0, t1, e1, committed)) };
        }
    }
    // Below every sample: extend the overall line back.
    let (t0, e0) = points[0];
    let (t1, e1) = points[points.len() - 1];
    if e1 <= e0 || t1 <= t0 {
        return TimeLag::Unknown(TimeLagUnknown::TooFewSamples);
    }
    TimeLag::Behind { ms: age(now_ms, interpolate(t0, e0, t1, e1, committed)) }
}

/// The time at which the line through `(t0, e0)` and `(t1, e1)` (with `e1 > e0`) is at
/// `offset`, saturated to `i64`.
fn interpolate(t0: i64, e0: i64, t1: i64, e1: i64, offset: i64) -> i64 {
    let dt = i128::from(t1) - i128::from(t0);
    let de = i128::from(e1) - i128::from(e0);
    let moved = i128::from(offset) - i128::from(e0);
    let t = match moved.checked_mul(dt) {
        Some(product) => i128::from(t0) + product / de,
        // Only for offsets and times near the ends of i64: the same line in floating point
        // (the cast saturates).
        None => (t0 as f64 + moved as f64 * dt as f64 / de as f64) as i128,
    };
    i64::try_from(t).unwrap_or(if t < 0 { i64::MIN } else { i64::MAX })
}

/// When a partition will have caught up, from its samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CatchUp {
    /// Nothing left to consume now.
    Now,
    /// At the measured rates, in this many milliseconds.
    In {
        /// `lag / (consume rate − produce rate)`, in milliseconds.
        ms: u64,
    },
    /// The group consumes no faster than records arrive: it is not catching up.
    NotCatchingUp,
    /// Needs two samples with committed offsets, at different times.
    Unknown,
}

impl CatchUp {
    /// The estimate in ms (`0` when caught up); `None` when not catching up or unknown.
    pub const fn ms(&self) -> Option<u64> {
        match *self {
            CatchUp::Now => Some(0),
            CatchUp::In { ms } => Some(ms),
            CatchUp::NotCatchingUp | CatchUp::Unknown => None,
        }
    }
}

/// The catch-up estimate from the oldest and newest of `samples` (any order): with `lag` the
/// newest `end − committed`, the consume rate `Δcommitted / Δt` and the produce rate `Δend /
/// Δt`, it is `lag / (consume − produce)` when that is positive.
pub fn catch_up(samples: &[Sample]) -> CatchUp {
    let committed: Vec<(i64, i64, i64)> =
        samples.iter().filter_map(|s| s.committed.map(|c| (s.at_ms, s.end, c))).collect();
    let (Some(first), Some(last)) =
        (committed.iter().min_by_key(|s| s.0).copied(), committed.iter().max_by_key(|s| s.0).copied())
    else {
        return CatchUp::Unknown;
    };
    let lag = i128::from(last.1) - i128::from(last.2);
    if lag <= 0 {
        return CatchUp::Now;
    }
    let dt = i128::from(last.0) - i128::from(first.0);
    if dt <= 0 {
        return CatchUp::Unknown;
    }
    // Net records consumed per dt, beyond what arrived.
    let net = (i128::from(last.2) - i128::from(first.2)) - (i128::from(last.1) - i128::from(first.1));
    if net <= 0 {
        return CatchUp::NotCatchingUp;
    }
    let ms = lag.checked_mul(dt).map_or(u64::MAX, |product| u64::try_from(product / net).unwrap_or(u64::MAX));
    CatchUp::In { ms }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(at_ms: i64, end: i64, committed: i64) -> Sample {
        Sample { at_ms, end, committed: Some(committed) }
    }

    #[test]
    fn a_record_ten_minutes_old_is_ten_minutes_of_lag() {
        let now = 1_800_000_000_000;
        assert_eq!(
            time_lag_of_record(now, Some(5), false, Some(now - 600_000)),
            TimeLag::Behind { ms: 600_000 }
        );
    }

    #[test]
    fn caught_up_is_zero_without_a_record_and_a_future_timestamp_is_zero() {
        assert_eq!(time_lag_of_record(10, Some(0), false, None).ms(), Some(0));
        assert_eq!(time_lag_of_record(10, Some(-3), false, None).ms(), Some(0));
        assert_eq!(time_lag_of_record(10, Some(1), false, Some(50)).ms(), Some(0));
        assert_eq!(time_lag_of_record(10, Some(1), false, None), TimeLag::Unknown(TimeLagUnknown::NoRecord));
        assert_eq!(
            time_lag_of_record(10, Some(1), true, Some(1)),
            TimeLag::Unknown(TimeLagUnknown::NothingCommitted)
        );
        assert_eq!(
            time_lag_of_record(10, Some(1), false, Some(-1)),
            TimeLag::Unknown(TimeLagUnknown::NoTimestamp)
        );
    }

    #[test]
    fn the_end_passing_the_committed_offset_between_samples_is_interpolated() {
        // 100 records/s: the end was at 150 at t = 1500.
        let samples = [s(1000, 100, 0), s(2000, 200, 0)];
        assert_eq!(estimate_time_lag(&samples, Some(150), 3000), TimeLag::Behind { ms: 1500 });
        assert_eq!(estimate_time_lag(&samples, Some(200), 3000), TimeLag::CaughtUp);
        // Below every sample: the same line extended back, end 50 at t = 500.
        assert_eq!(estimate_time_lag(&samples, Some(50), 3000), TimeLag::Behind { ms: 2500 });
    }

    #[test]
    fn an_idle_log_cannot_be_estimated_and_one_sample_is_too_few() {
        let idle = [s(1000, 100, 0), s(2000, 100, 0)];
        assert_eq!(estimate_time_lag(&idle, Some(10), 3000), TimeLag::Unknown(TimeLagUnknown::TooFewSamples));
        assert_eq!(
            estimate_time_lag(&idle[..1], Some(10), 3000),
            TimeLag::Unknown(TimeLagUnknown::TooFewSamples)
        );
        assert_eq!(estimate_time_lag(&[], Some(10), 3000), TimeLag::Unknown(TimeLagUnknown::TooFewSamples));
    }

    #[test]
    fn an_end_that_went_backwards_drops_the_samples_before_it() {
        let samples = [s(0, 1000, 0), s(1000, 10, 0), s(2000, 110, 0)];
        assert_eq!(estimate_time_lag(&samples, Some(60), 2000), TimeLag::Behind { ms: 500 });
    }

    #[test]
    fn catch_up_is_lag_over_the_net_consume_rate() {
        // Consumes 300/s, 100/s arrive, 400 behind: 2 s.
        assert_eq!(catch_up(&[s(0, 1000, 400), s(1000, 1100, 700)]), CatchUp::In { ms: 2000 });
        assert_eq!(catch_up(&[s(0, 1000, 400), s(1000, 1100, 500)]), CatchUp::NotCatchingUp);
        assert_eq!(catch_up(&[s(0, 1000, 400), s(1000, 1100, 1100)]), CatchUp::Now);
        assert_eq!(catch_up(&[s(0, 1000, 400)]), CatchUp::Unknown);
    }
}
