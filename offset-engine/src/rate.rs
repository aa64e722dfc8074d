//! How many records a batch may take: per-partition and total caps (R6, R7), a cap from a time
//! budget and a measured processing rate (R16, seed 003), and Spark's PID rate estimator with
//! its state carried explicitly between calls.
//!
//! No limit is expressed as `None`; `Some(0)` means zero records, never "unlimited"
//! (SPARK-18371).

use std::collections::HashMap;
use std::error::Error;
use std::fmt;

use crate::model::TopicPartition;

/// Caps for one batch. All counts are records.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Limits {
    /// At most this many records from one partition in one batch.
    pub max_per_partition: Option<u64>,
    /// At most this many records in the whole batch, shared in proportion to backlog.
    pub max_per_batch: Option<u64>,
    /// Keep the batch's expected processing time under a budget.
    pub time_budget: Option<TimeBudget>,
}

/// A processing-time budget: the batch may hold at most
/// `floor(records_per_sec × budget_ms / 1000 × safety)` records.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeBudget {
    budget_ms: u64,
    records_per_sec: f64,
    safety: f64,
}

/// A [`TimeBudget`] that cannot be used.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum RateError {
    /// The measured rate must be finite and above 0 records/s.
    InvalidRate {
        /// The rate as given, records/s.
        records_per_sec: f64,
    },
    /// The safety factor must be in `(0, 1]`.
    InvalidSafety {
        /// The factor as given.
        safety: f64,
    },
    /// A PID gain or the minimum rate is negative or not finite.
    InvalidPidConfig,
    /// [`share`] needs one `waiting_since` per backlog.
    LengthMismatch {
        /// How many backlogs were given.
        backlogs: usize,
        /// How many `waiting_since` values were given.
        waiting_since: usize,
    },
}

impl fmt::Display for RateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidRate { records_per_sec } => {
                write!(f, "processing rate {records_per_sec} records/s must be finite and above 0")
            }
            Self::InvalidSafety { safety } => {
                write!(f, "safety factor {safety} must be in (0, 1]")
            }
            Self::InvalidPidConfig => f.write_str("PID gains and minimum rate must be finite and >= 0"),
            Self::LengthMismatch { backlogs, waiting_since } => {
                write!(f, "{backlogs} backlogs but {waiting_since} waiting_since values: one per partition")
            }
        }
    }
}

impl Error for RateError {}

impl TimeBudget {
    /// `budget_ms`: the time one batch may take (e.g. `max.poll.interval.ms`, or the batch
    /// interval); `records_per_sec`: the measured processing rate (or the configured initial rate
    /// for the first batch, SPARK-18580); `safety`: the share of the budget to plan for, in
    /// `(0, 1]` (0.8 leaves 20% headroom).
    pub fn new(budget_ms: u64, records_per_sec: f64, safety: f64) -> Result<Self, RateError> {
        if !(records_per_sec.is_finite() && records_per_sec > 0.0) {
            return Err(RateError::InvalidRate { records_per_sec });
        }
        if !(safety > 0.0 && safety <= 1.0) {
            return Err(RateError::InvalidSafety { safety });
        }
        Ok(TimeBudget { budget_ms, records_per_sec, safety })
    }

    /// The time one batch may take, milliseconds.
    pub const fn budget_ms(&self) -> u64 {
        self.budget_ms
    }

    /// The processing rate planned with, records/s; finite and above 0.
    pub const fn records_per_sec(&self) -> f64 {
        self.records_per_sec
    }

    /// The share of the budget planned for, in `(0, 1]`.
    pub const fn safety(&self) -> f64 {
        self.safety
    }

    /// The most records a batch may hold under this budget.
    pub fn max_records(&self) -> u64 {
        // Float to int `as` saturates (and the inputs are validated finite and positive).
        (self.records_per_sec * (self.budget_ms as f64 / 1000.0) * self.safety).floor() as u64
    }

    /// Expected processing time of `records`, in milliseconds (rounded up).
    pub fn expected_ms(&self, records: u64) -> u64 {
        (records as f64 * 1000.0 / self.records_per_sec).ceil() as u64
    }
}

/// Records a rate allows in an interval: `floor(records_per_sec × interval_ms / 1000)`, 0 for a
/// rate that is not finite and positive. Use it to turn an estimator's rate into
/// [`Limits::max_per_batch`].
pub fn records_for(records_per_sec: f64, interval_ms: u64) -> u64 {
    if records_per_sec.is_finite() && records_per_sec > 0.0 {
        (records_per_sec * interval_ms as f64 / 1000.0).floor() as u64
    } else {
        0
    }
}

/// Which limit set a batch's total cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BatchCapSource {
    /// [`Limits::max_per_batch`] (also when it equals the time budget's cap).
    MaxPerBatch,
    /// [`Limits::time_budget`]: [`TimeBudget::max_records`] was the smaller.
    TimeBudget,
}

/// The effective total cap of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BatchCap {
    /// The most records the whole batch may hold.
    pub records: u64,
    /// Which limit gave that number.
    pub source: BatchCapSource,
}

impl Limits {
    /// The smaller of `max_per_batch` and the time budget's cap; `None` when neither is set.
    pub fn batch_cap(&self) -> Option<BatchCap> {
        let budget = self
            .time_budget
            .map(|b| BatchCap { records: b.max_records(), source: BatchCapSource::TimeBudget });
        let batch =
            self.max_per_batch.map(|records| BatchCap { records, source: BatchCapSource::MaxPerBatch });
        match (batch, budget) {
            (Some(a), Some(b)) => Some(if b.records < a.records { b } else { a }),
            (a, b) => a.or(b),
        }
    }
}

/// What one plan tells the next about sharing a total cap, so that no partition with backlog
/// starves. Pass the previous plan's [`crate::Plan::carry`] into the next request; an empty
/// carry is a valid start.
///
/// It is a queue: a partition that had backlog in a batch under a total cap and got no record
/// waits, with the number of the batch it started waiting in, until it gets one; the records
/// left over after the proportional shares go to waiting partitions oldest first. A waiting
/// partition keeps its place through batches in which it is absent from the request, skipped
/// (an end that went backwards, a transaction in the way, invalid input) or failed; it leaves
/// the queue when it gets a record, when its range is empty (caught up), or when its partition
/// or topic is gone.
///
/// **Bound.** With `n` partitions, a partition gets at least one record within any `n` batches
/// in which it has a non-empty planned range (after the per-partition cap) under a total cap
/// of at least one record — whatever happens in the batches in between. (Each such batch in
/// which it gets nothing serves a partition that waits longer than it, and none can overtake
/// it twice; see [`share`].) Entries of partitions that are never planned again stay in the
/// carry: it holds at most one entry per partition ever passed over.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RateCarry {
    /// Waiting partitions and the batch each started waiting in.
    waiting: HashMap<TopicPartition, u64>,
    /// The number of the next batch planned with this carry.
    batch: u64,
}

impl RateCarry {
    /// Whether no partition is waiting.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// How many partitions are waiting.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// The batch number `tp` has been waiting since (lower waits longer), if it waits.
    pub fn waiting_since(&self, tp: &TopicPartition) -> Option<u64> {
        self.waiting.get(tp).copied()
    }

    /// Every waiting partition with the batch it has waited since, in no particular order.
    pub fn waiting(&self) -> impl Iterator<Item = (&TopicPartition, u64)> {
        self.waiting.iter().map(|(tp, &since)| (tp, since))
    }

    /// How many batches were planned with this carry chain (the next batch's number).
    pub const fn batches(&self) -> u64 {
        self.batch
    }

    /// The carry a plan starts from: the waiting partitions of `self`, the batch number after.
    pub(crate) fn following(&self) -> RateCarry {
        RateCarry { waiting: self.waiting.clone(), batch: self.batch.saturating_add(1) }
    }

    /// Takes `tp` out of the queue, returning since when it waited.
    pub(crate) fn take(&mut self, tp: &TopicPartition) -> Option<u64> {
        if self.waiting.is_empty() {
            return None;
        }
        self.waiting.remove(tp)
    }

    /// Puts `tp` in the queue, since `since` (or earlier, if it already waits: a partition
    /// given twice in one request keeps its older place).
    pub(crate) fn wait(&mut self, tp: TopicPartition, since: u64) {
        self.waiting.entry(tp).and_modify(|s| *s = (*s).min(since)).or_insert(since);
    }
}

/// `waiting_since` of a partition that is not waiting.
pub const NOT_WAITING: u64 = u64::MAX;

/// Shares `cap` among partitions in proportion to `backlogs`, never more than a partition's
/// backlog, never more than `cap` in total, and exactly `min(cap, Σ backlogs)` in total.
///
/// Each partition gets `floor(cap × backlog / Σ backlog)`; the records left over (fewer than the
/// number of partitions) go one each to the partitions waiting longest — lowest
/// `waiting_since[i]`, [`NOT_WAITING`] for a partition that is not waiting — then the largest
/// fractional remainder, then the lowest index. Returns the grants, index-aligned with
/// `backlogs`, or [`RateError::LengthMismatch`] unless there is one `waiting_since` per backlog.
///
/// Why nobody starves: a partition with backlog that gets no record had a share below one
/// record, so its remainder is positive and at least one record is left over; every leftover
/// record it did not get went to a partition waiting at least as long. [`crate::plan()`] queues
/// the partitions passed over ([`RateCarry`]) with the batch number, so a partition waiting
/// since batch `b` can only be served ahead of by partitions waiting since `b` or earlier, each
/// of which leaves the queue when served and can only come back with a later number.
pub fn share(backlogs: &[u64], cap: u64, waiting_since: &[u64]) -> Result<Vec<u64>, RateError> {
    if backlogs.len() != waiting_since.len() {
        return Err(RateError::LengthMismatch {
            backlogs: backlogs.len(),
            waiting_since: waiting_since.len(),
        });
    }
    Ok(share_in_order(backlogs, cap, Some(waiting_since)))
}

/// [`share`] with the lengths known to match; `None` is nobody waiting.
pub(crate) fn share_in_order(backlogs: &[u64], cap: u64, waiting_since: Option<&[u64]>) -> Vec<u64> {
    let total: u128 = backlogs.iter().map(|&b| u128::from(b)).sum();
    if total <= u128::from(cap) {
        return backlogs.to_vec();
    }
    // The same exact arithmetic in 64 bits when every `cap × backlog` and the total fit: a
    // hardware division instead of a 128-bit one per partition, and half the remainder memory.
    let max = backlogs.iter().copied().max().unwrap_or(0);
    match (u64::try_from(total), cap.checked_mul(max)) {
        (Ok(total), Some(_)) => share_exact(backlogs, cap, total, waiting_since),
        _ => share_exact(backlogs, u128::from(cap), total, waiting_since),
    }
}

/// Unsigned integers wide enough for `cap × backlog` (see [`share`]).
trait Wide:
    Copy
    + Ord
    + From<u64>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Rem<Output = Self>
{
    const ZERO: Self;
    /// Callers only narrow values they know are at most a `u64` backlog.
    fn narrow(self) -> u64;
}

impl Wide for u64 {
    const ZERO: Self = 0;
    fn narrow(self) -> u64 {
        self
    }
}

impl Wide for u128 {
    const ZERO: Self = 0;
    fn narrow(self) -> u64 {
        self as u64
    }
}

/// [`share`] once `Σ backlogs > cap`, in a type `W` that holds `cap × backlog` and the total.
fn share_exact<W: Wide>(backlogs: &[u64], cap: W, total: W, waiting_since: Option<&[u64]>) -> Vec<u64> {
    let mut grants = Vec::with_capacity(backlogs.len());
    // (waiting since, remainder, index) of every partition owed a fraction of a record: the
    // ranking key side by side, so choosing who gets the leftover records reads no other memory.
    let mut candidates: Vec<(u64, W, usize)> = Vec::with_capacity(backlogs.len());
    let mut given: u128 = 0;
    for (i, &b) in backlogs.iter().enumerate() {
        let scaled = cap * W::from(b);
        // floor(cap × b / total) <= b because cap < total, so it fits u64.
        let g = (scaled / total).narrow();
        given += u128::from(g);
        grants.push(g);
        let remainder = scaled % total;
        if remainder > W::ZERO {
            let since = waiting_since.map_or(NOT_WAITING, |w| w[i]);
            candidates.push((since, remainder, i));
        }
    }
    // Σ exact shares = cap, so leftover < number of partitions with a remainder.
    let leftover = (u128::from(cap.narrow()) - given) as usize;
    // Waiting longest, then largest remainder, then lowest index: a total order, so the set of
    // the first `leftover` is the same whichever way it is selected.
    let order =
        |a: &(u64, W, usize), b: &(u64, W, usize)| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2));
    if leftover > 0 && leftover < candidates.len() {
        candidates.select_nth_unstable_by(leftover - 1, order);
    }
    let served = leftover.min(candidates.len());
    for &(_, _, i) in &candidates[..served] {
        grants[i] += 1;
    }
    grants
}

/// Gains and floor of the PID estimator; defaults are Spark's (`p = 1`, `i = 0.2`, `d = 0`,
/// minimum rate 100 records/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PidConfig {
    /// The batch interval the scheduling delay is measured against, in milliseconds.
    pub batch_interval_ms: u64,
    /// Gain `p` on the error between the latest rate and the measured processing rate.
    pub proportional: f64,
    /// Gain `i` on the historical error, `scheduling_delay × processing_rate / batch_interval`
    /// (records/s).
    pub integral: f64,
    /// Gain `d` on the error's change per second since the last update.
    pub derivative: f64,
    /// The estimate never goes below this many records/s.
    pub min_rate: f64,
}

impl PidConfig {
    /// Spark's defaults (`p = 1`, `i = 0.2`, `d = 0`, minimum 100 records/s) for batches
    /// `batch_interval_ms` milliseconds apart.
    pub fn new(batch_interval_ms: u64) -> Self {
        PidConfig { batch_interval_ms, proportional: 1.0, integral: 0.2, derivative: 0.0, min_rate: 100.0 }
    }

    fn validate(&self) -> Result<(), RateError> {
        let ok = [self.proportional, self.integral, self.derivative, self.min_rate]
            .iter()
            .all(|v| v.is_finite() && *v >= 0.0);
        if ok {
            Ok(())
        } else {
            Err(RateError::InvalidPidConfig)
        }
    }
}

/// The estimator's memory between batches. Start from `PidState::default()`; store the returned
/// state with the stream's checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PidState {
    /// `None` until the first completed batch.
    pub latest_time_ms: Option<i64>,
    /// Records/s of the last estimate.
    pub latest_rate: f64,
    /// Records/s by which the previous estimate exceeded the measured processing rate (0 after
    /// the first batch); the derivative term's reference.
    pub latest_error: f64,
}

/// What one completed batch measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchObservation {
    /// When the batch completed, milliseconds since the epoch (passed in; no clock here).
    pub time_ms: i64,
    /// Records the batch processed; a batch of 0 records is ignored.
    pub records: u64,
    /// How long processing took, milliseconds.
    pub processing_ms: u64,
    /// How long the batch waited before processing started, milliseconds.
    pub scheduling_delay_ms: u64,
}

/// Spark's `PIDRateEstimator.compute`: returns the new state and, from the second valid
/// observation on, a new rate in records/s. Observations that are out of order (not later than
/// the last), empty, or took no time leave the state unchanged and return `None`.
///
/// `new = max(latest − p·error − i·historical_error − d·d_error, min_rate)` where
/// `error = latest − processing_rate`,
/// `historical_error = scheduling_delay × processing_rate / batch_interval`,
/// `d_error = (error − latest_error) / seconds since the last update`.
pub fn pid_update(
    config: &PidConfig,
    state: PidState,
    obs: BatchObservation,
) -> Result<(PidState, Option<f64>), RateError> {
    config.validate()?;
    let later = state.latest_time_ms.is_none_or(|t| obs.time_ms > t);
    if !later || obs.records == 0 || obs.processing_ms == 0 {
        return Ok((state, None));
    }
    let processing_rate = obs.records as f64 / obs.processing_ms as f64 * 1000.0;
    let Some(latest_time) = state.latest_time_ms else {
        // First batch: adopt the measured rate, no estimate yet (as Spark).
        return Ok((
            PidState { latest_time_ms: Some(obs.time_ms), latest_rate: processing_rate, latest_error: 0.0 },
            None,
        ));
    };
    let since_update_s = obs.time_ms.abs_diff(latest_time) as f64 / 1000.0;
    let error = state.latest_rate - processing_rate;
    let interval = config.batch_interval_ms.max(1) as f64;
    let historical_error = obs.scheduling_delay_ms as f64 * processing_rate / interval;
    let d_error = (error - state.latest_error) / since_update_s;
    let new_rate = (state.latest_rate
        - config.proportional * error
        - config.integral * historical_error
        - config.derivative * d_error)
        .max(config.min_rate);
    let new_rate = if new_rate.is_finite() { new_rate } else { config.min_rate };
    Ok((
        PidState { latest_time_ms: Some(obs.time_ms), latest_rate: new_rate, latest_error: error },
        Some(new_rate),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_64_bit_share_agrees_with_the_128_bit_one() {
        // A small deterministic generator: backlogs and waiting partitions of every size, caps
        // below the total.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for round in 0..2_000 {
            let n = 1 + next(64) as usize;
            let scale = [10, 1_000, 1 << 20, 1 << 40][round % 4];
            let backlogs: Vec<u64> = (0..n).map(|_| next(scale)).collect();
            let total: u64 = backlogs.iter().sum();
            let cap = next(total.max(1));
            let since: Vec<u64> = (0..n).map(|_| [NOT_WAITING, 0, 1][next(3) as usize]).collect();
            let fast = share(&backlogs, cap, &since).unwrap();
            let slow = if total <= cap {
                share(&backlogs, cap, &since).unwrap()
            } else {
                share_exact(&backlogs, u128::from(cap), u128::from(total), Some(&since))
            };
            assert_eq!(&fast, &slow, "backlogs {backlogs:?} cap {cap}");
            let reference = share_by_sorting(&backlogs, cap, &since);
            assert_eq!(fast, reference, "backlogs {backlogs:?} cap {cap}");
            if since.iter().all(|&s| s == NOT_WAITING) {
                assert_eq!(share_in_order(&backlogs, cap, None), reference);
            }
        }
    }

    /// `share` written the obvious way: 128-bit shares, a full sort of the candidates.
    fn share_by_sorting(backlogs: &[u64], cap: u64, since: &[u64]) -> Vec<u64> {
        let total: u128 = backlogs.iter().map(|&b| u128::from(b)).sum();
        if total <= u128::from(cap) {
            return backlogs.to_vec();
        }
        let cap128 = u128::from(cap);
        let grants: Vec<u64> = backlogs.iter().map(|&b| (cap128 * u128::from(b) / total) as u64).collect();
        let remainders: Vec<u128> = backlogs.iter().map(|&b| cap128 * u128::from(b) % total).collect();
        let leftover = (cap128 - grants.iter().map(|&g| u128::from(g)).sum::<u128>()) as usize;
        let mut candidates: Vec<usize> = (0..backlogs.len()).filter(|&i| remainders[i] > 0).collect();
        candidates.sort_by(|&a, &b| {
            since[a].cmp(&since[b]).then(remainders[b].cmp(&remainders[a])).then(a.cmp(&b))
        });
        let mut grants = grants;
        for &i in candidates.iter().take(leftover) {
            grants[i] += 1;
        }
        grants
    }

    #[test]
    fn zero_cap_means_zero_not_unlimited() {
        assert_eq!(share(&[10, 20, 30], 0, &[NOT_WAITING; 3]), Ok(vec![0, 0, 0]));
        let limits = Limits { max_per_batch: Some(0), ..Limits::default() };
        assert_eq!(limits.batch_cap().map(|c| c.records), Some(0));
    }

    #[test]
    fn share_refuses_a_waiting_list_of_another_length() {
        // Issue 18: this panicked (an index out of bounds) instead of answering.
        assert_eq!(
            share(&[10, 20, 30], 5, &[0]),
            Err(RateError::LengthMismatch { backlogs: 3, waiting_since: 1 })
        );
        assert!(share(&[], 5, &[]).unwrap().is_empty());
    }

    #[test]
    fn proportional_share_uses_the_whole_cap_and_no_more() {
        let g = share(&[1000, 10, 1], 100, &[NOT_WAITING; 3]).unwrap();
        assert_eq!(g.iter().sum::<u64>(), 100);
        assert_eq!(g, vec![99, 1, 0]);
        // The partition passed over is served first next time, whatever its remainder.
        let g = share(&[901, 9, 1], 100, &[NOT_WAITING, NOT_WAITING, 0]).unwrap();
        assert_eq!(g.iter().sum::<u64>(), 100);
        assert_eq!(g[2], 1);
        // Among waiting partitions, the one waiting longest first.
        assert_eq!(share(&[5, 5, 5], 1, &[4, 2, 3]).unwrap(), vec![0, 1, 0]);
    }

    #[test]
    fn budget_cap_is_rate_times_budget_times_safety() {
        let b = TimeBudget::new(600_000, 1000.0, 0.5).unwrap();
        assert_eq!(b.max_records(), 300_000);
        assert_eq!(b.expected_ms(300_000), 300_000);
        assert!(TimeBudget::new(1, f64::NAN, 0.5).is_err());
        assert!(TimeBudget::new(1, 0.0, 0.5).is_err());
        assert!(TimeBudget::new(1, 10.0, 1.5).is_err());
        let limits = Limits { max_per_batch: Some(1_000_000), time_budget: Some(b), ..Limits::default() };
        assert_eq!(
            limits.batch_cap(),
            Some(BatchCap { records: 300_000, source: BatchCapSource::TimeBudget })
        );
    }

    #[test]
    fn pid_first_batch_adopts_measured_rate_then_corrects_toward_it() {
        let cfg = PidConfig::new(10_000);
        let obs = |t: i64, records: u64| BatchObservation {
            time_ms: t,
            records,
            processing_ms: 10_000,
            scheduling_delay_ms: 0,
        };
        let (s, r) = pid_update(&cfg, PidState::default(), obs(1_000, 50_000)).unwrap();
        assert_eq!(r, None);
        assert!((s.latest_rate - 5_000.0).abs() < 1e-9);
        // Processing got slower: 2,000 records/s. With p = 1 the estimate drops to it.
        let (s2, r2) = pid_update(&cfg, s, obs(11_000, 20_000)).unwrap();
        assert!((r2.unwrap() - 2_000.0).abs() < 1e-9);
        // An observation from the past changes nothing.
        assert_eq!(pid_update(&cfg, s2, obs(5_000, 1)).unwrap(), (s2, None));
    }

    #[test]
    fn pid_never_goes_below_min_rate() {
        let cfg = PidConfig::new(1_000);
        let s = PidState { latest_time_ms: Some(0), latest_rate: 10_000.0, latest_error: 0.0 };
        let obs = BatchObservation {
            time_ms: 1_000,
            records: 1,
            processing_ms: 1_000,
            scheduling_delay_ms: 1_000_000,
        };
        let (_, r) = pid_update(&cfg, s, obs).unwrap();
        assert_eq!(r, Some(100.0));
    }

    #[test]
    fn rate_to_records() {
        assert_eq!(records_for(1500.0, 2_000), 3_000);
        assert_eq!(records_for(f64::NAN, 2_000), 0);
        assert_eq!(records_for(-1.0, 2_000), 0);
    }
}
