//! A partition's health from a sliding window of samples, Burrow's states without its false
//! alarms: an idle partition (nothing to consume) is `Ok`, never `Stop`, however long ago the
//! last commit was. Pure: the samples and the time are arguments.
//!
//! The rules, first match wins (each sample is `(at_ms, end, committed)`; `lag = end −
//! committed` of the newest sample):
//!
//! | state     | when |
//! |-----------|------|
//! | `Anomaly` | the caller says the engine named an anomaly for the partition (topic recreated, offset ahead of the log, ...) |
//! | `Lost`    | the newest committed offset is below the log start: records were deleted before they were read |
//! | `Rewind`  | the committed offset moved backwards between two samples of the window |
//! | `Ok`      | nothing to consume (`lag <= 0`), or nothing committed |
//! | `Stop`    | the last commit is known to be older than `stop_after_ms`; or, with no commit time known, the committed offset did not move over the window while `lag > 0` and no records arrived |
//! | `Stall`   | the committed offset did not move over the window while `lag > 0` and records arrived |
//! | `Warn`    | the committed offset moves, but the lag grew at every step of the window |
//! | `Ok`      | otherwise |
//!
//! With one sample only `Anomaly`, `Lost`, `Stop` (from a known commit time) and the idle `Ok`
//! can be told; anything else is `None` (not enough samples).

use crate::time_lag::Sample;

/// A partition's health.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Health {
    /// Consuming, or nothing to consume.
    Ok,
    /// Committing, but falling further behind at every step.
    Warn,
    /// Committing nothing new while records arrive.
    Stall,
    /// Not consuming: no commit for too long while there is something to read.
    Stop,
    /// The committed offset went backwards (a reset, or a consumer restarting from old offsets).
    Rewind,
    /// The committed offset is below the log start: records were deleted before they were read.
    Lost,
    /// The engine named an anomaly (topic recreated, offset ahead of the log, truncation, ...).
    Anomaly,
}

impl Health {
    /// Every state, best first.
    pub const ALL: [Health; 7] = [
        Health::Ok,
        Health::Warn,
        Health::Stall,
        Health::Stop,
        Health::Rewind,
        Health::Lost,
        Health::Anomaly,
    ];

    /// `OK`, `WARN`, `STALL`, `STOP`, `REWIND`, `LOST`, `ANOMALY`.
    pub const fn as_str(&self) -> &'static str {
        match self {
            Health::Ok => "OK",
            Health::Warn => "WARN",
            Health::Stall => "STALL",
            Health::Stop => "STOP",
            Health::Rewind => "REWIND",
            Health::Lost => "LOST",
            Health::Anomaly => "ANOMALY",
        }
    }
}

/// Thresholds of [`evaluate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthConfig {
    /// A last commit known to be older than this, with something to consume, is `Stop`.
    pub stop_after_ms: u64,
}

impl Default for HealthConfig {
    fn default() -> Self {
        Self { stop_after_ms: 5 * 60 * 1000 }
    }
}

/// What [`evaluate`] knows about a partition besides its samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HealthFacts {
    /// The log start at the newest sample.
    pub log_start: i64,
    /// Whether the engine named an anomaly for the partition.
    pub anomaly: bool,
    /// When the newest committed offset was committed, if the store keeps it.
    pub last_commit_ms: Option<i64>,
}

/// The health of a partition from `samples` (any order; a later sample wins for equal times)
/// at `now_ms`; `None` when the window is too short to tell (see the module docs).
pub fn evaluate(samples: &[Sample], facts: HealthFacts, now_ms: i64, config: HealthConfig) -> Option<Health> {
    let mut window: Vec<Sample> = samples.to_vec();
    window.sort_by_key(|s| s.at_ms);
    window.dedup_by(|later, earlier| {
        if later.at_ms == earlier.at_ms {
            *earlier = *later;
            true
        } else {
            false
        }
    });
    let newest = *window.last()?;
    if facts.anomaly {
        return Some(Health::Anomaly);
    }
    let Some(committed) = newest.committed else { return Some(Health::Ok) };
    if committed < facts.log_start {
        return Some(Health::Lost);
    }
    let rewound =
        window.windows(2).any(|w| matches!((w[0].committed, w[1].committed), (Some(a), Some(b)) if b < a));
    if rewound {
        return Some(Health::Rewind);
    }
    let lag = i128::from(newest.end) - i128::from(committed);
    if lag <= 0 {
        return Some(Health::Ok);
    }
    if let Some(at) = facts.last_commit_ms {
        if u64::try_from(i128::from(now_ms) - i128::from(at)).is_ok_and(|age| age > config.stop_after_ms) {
            return Some(Health::Stop);
        }
    }
    let oldest = window[0];
    if window.len() < 2 {
        return None;
    }
    let committed_moved = oldest.committed != Some(committed);
    if !committed_moved {
        let records_arrived = newest.end > oldest.end;
        return Some(if records_arrived { Health::Stall } else { Health::Stop });
    }
    let lags: Vec<Option<i128>> =
        window.iter().map(|s| s.committed.map(|c| i128::from(s.end) - i128::from(c))).collect();
    let grew_every_step = lags.windows(2).all(|w| matches!((w[0], w[1]), (Some(a), Some(b)) if b > a));
    Some(if grew_every_step { Health::Warn } else { Health::Ok })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(at_ms: i64, end: i64, committed: i64) -> Sample {
        Sample { at_ms, end, committed: Some(committed) }
    }

    fn eval(samples: &[Sample]) -> Option<Health> {
        evaluate(samples, HealthFacts::default(), 10_000, HealthConfig::default())
    }

    #[test]
    fn burrows_states_from_the_window() {
        assert_eq!(eval(&[s(0, 100, 10), s(1000, 110, 20), s(2000, 120, 30)]), Some(Health::Ok));
        assert_eq!(eval(&[s(0, 100, 10), s(1000, 200, 20), s(2000, 300, 30)]), Some(Health::Warn));
        assert_eq!(eval(&[s(0, 100, 10), s(1000, 200, 10), s(2000, 300, 10)]), Some(Health::Stall));
        assert_eq!(eval(&[s(0, 100, 10), s(1000, 100, 10), s(2000, 100, 10)]), Some(Health::Stop));
        assert_eq!(eval(&[s(0, 100, 50), s(1000, 100, 10), s(2000, 100, 20)]), Some(Health::Rewind));
    }

    #[test]
    fn an_idle_partition_is_ok_however_old_its_last_commit() {
        let facts = HealthFacts { last_commit_ms: Some(0), ..HealthFacts::default() };
        let idle = [s(0, 100, 100), s(1000, 100, 100)];
        assert_eq!(evaluate(&idle, facts, 1 << 40, HealthConfig::default()), Some(Health::Ok));
        assert_eq!(evaluate(&idle[..1], facts, 1 << 40, HealthConfig::default()), Some(Health::Ok));
    }

    #[test]
    fn lost_and_anomaly_come_first_and_need_one_sample() {
        let facts = HealthFacts { log_start: 50, ..HealthFacts::default() };
        assert_eq!(evaluate(&[s(0, 100, 10)], facts, 0, HealthConfig::default()), Some(Health::Lost));
        let facts = HealthFacts { anomaly: true, ..facts };
        assert_eq!(evaluate(&[s(0, 100, 10)], facts, 0, HealthConfig::default()), Some(Health::Anomaly));
        assert_eq!(eval(&[s(0, 100, 10)]), None);
        assert_eq!(eval(&[]), None);
    }

    #[test]
    fn a_known_old_commit_with_records_waiting_is_stop() {
        let facts = HealthFacts { last_commit_ms: Some(0), ..HealthFacts::default() };
        let config = HealthConfig { stop_after_ms: 60_000 };
        assert_eq!(evaluate(&[s(0, 100, 10)], facts, 60_001, config), Some(Health::Stop));
        assert_eq!(evaluate(&[s(0, 100, 10)], facts, 60_000, config), None);
    }
}
