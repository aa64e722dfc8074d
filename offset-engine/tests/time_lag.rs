//! Properties of lag in time: never negative, 0 exactly when caught up, exact on a log
//! produced at a constant rate, more behind never younger, and no panic on any numbers.

use offset_engine::{catch_up, estimate_time_lag, time_lag_of_record, CatchUp, Sample, TimeLag};
use proptest::prelude::*;

/// Samples of a log produced at `rate` records per second from `start_end`, every `step_ms`.
fn linear(start_ms: i64, start_end: i64, rate: i64, step_ms: i64, n: usize) -> Vec<Sample> {
    (0..n as i64)
        .map(|i| Sample {
            at_ms: start_ms + i * step_ms,
            end: start_end + rate * i * step_ms / 1000,
            committed: None,
        })
        .collect()
}

proptest! {
    #[test]
    fn no_numbers_make_it_panic_or_go_negative(
        raw in proptest::collection::vec((any::<i64>(), any::<i64>(), proptest::option::of(any::<i64>())), 0..8),
        committed in proptest::option::of(any::<i64>()),
        now in any::<i64>(),
        consumable in proptest::option::of(any::<i64>()),
        ts in proptest::option::of(any::<i64>()),
        nothing in any::<bool>(),
    ) {
        let samples: Vec<Sample> = raw.iter().map(|&(at_ms, end, committed)| Sample { at_ms, end, committed }).collect();
        // `ms()` is unsigned, so "never negative" is that these return at all.
        let _ = estimate_time_lag(&samples, committed, now).ms();
        let _ = catch_up(&samples).ms();
        let _ = time_lag_of_record(now, consumable, nothing, ts).ms();
    }

    #[test]
    fn a_constant_rate_log_is_estimated_exactly(
        start_ms in 1_600_000_000_000i64..1_900_000_000_000,
        start_end in 0i64..1_000_000_000,
        rate in 1i64..10_000,
        n in 2usize..10,
        back_ms in 0i64..600_000,
    ) {
        let samples = linear(start_ms, start_end, rate * 1000, 1000, n);
        let newest = samples[n - 1];
        // The end was `committed` exactly `back_ms` (a whole number of records' time) before
        // the newest sample.
        let back_ms = back_ms - back_ms % 1000;
        let committed = newest.end - rate * back_ms;
        let lag = estimate_time_lag(&samples, Some(committed), newest.at_ms);
        if back_ms == 0 {
            prop_assert_eq!(lag, TimeLag::CaughtUp);
        } else {
            prop_assert_eq!(lag, TimeLag::Behind { ms: back_ms as u64 });
        }
    }

    #[test]
    fn further_behind_is_never_younger(
        raw in proptest::collection::vec((0i64..100_000, 0i64..100_000), 2..8),
        a in 0i64..100_000,
        b in 0i64..100_000,
        now in 0i64..200_000,
    ) {
        let samples: Vec<Sample> = raw.iter().map(|&(at_ms, end)| Sample { at_ms, end, committed: None }).collect();
        let (low, high) = (a.min(b), a.max(b));
        if let (Some(x), Some(y)) = (
            estimate_time_lag(&samples, Some(low), now).ms(),
            estimate_time_lag(&samples, Some(high), now).ms(),
        ) {
            prop_assert!(x >= y, "{low} -> {x} ms, {high} -> {y} ms");
        }
    }

    #[test]
    fn caught_up_is_zero_and_behind_is_the_records_age(
        now in any::<i64>(),
        consumable in -5i64..5,
        ts in 0i64..i64::MAX,
    ) {
        let lag = time_lag_of_record(now, Some(consumable), false, Some(ts));
        if consumable <= 0 {
            prop_assert_eq!(lag, TimeLag::CaughtUp);
        } else {
            let expected = u64::try_from(i128::from(now) - i128::from(ts)).unwrap_or(0);
            prop_assert_eq!(lag.ms(), Some(expected));
        }
    }

    #[test]
    fn catching_up_at_a_net_rate_takes_lag_over_that_rate(
        lag in 1i64..1_000_000,
        produce in 0i64..1000,
        net in 1i64..1000,
    ) {
        // Over one second the end moved `produce` and the committed offset `produce + net`.
        let samples = [
            Sample { at_ms: 0, end: 10_000_000, committed: Some(10_000_000 - lag - net) },
            Sample { at_ms: 1000, end: 10_000_000 + produce, committed: Some(10_000_000 + produce - lag) },
        ];
        prop_assert_eq!(catch_up(&samples), CatchUp::In { ms: (lag * 1000 / net) as u64 });
    }
}
