//! Properties of health over a window: an idle partition is never STOP, a step back is
//! REWIND, steady consumption is OK, the order samples come in does not matter, and no numbers
//! make it panic.

use offset_engine::{evaluate_health, Health, HealthConfig, HealthFacts, Sample};
use proptest::prelude::*;

fn window() -> impl Strategy<Value = Vec<Sample>> {
    proptest::collection::vec((0i64..100_000, 0i64..1000, proptest::option::of(0i64..1000)), 0..8).prop_map(
        |raw| raw.into_iter().map(|(at_ms, end, committed)| Sample { at_ms, end, committed }).collect(),
    )
}

/// Distinct, increasing times.
fn timed(points: &[(i64, i64)]) -> Vec<Sample> {
    points
        .iter()
        .enumerate()
        .map(|(i, &(end, committed))| Sample { at_ms: i as i64 * 1000, end, committed: Some(committed) })
        .collect()
}

proptest! {
    #[test]
    fn no_numbers_make_it_panic(
        raw in proptest::collection::vec((any::<i64>(), any::<i64>(), proptest::option::of(any::<i64>())), 0..8),
        log_start in any::<i64>(),
        anomaly in any::<bool>(),
        last_commit_ms in proptest::option::of(any::<i64>()),
        now in any::<i64>(),
        stop_after_ms in any::<u64>(),
    ) {
        let samples: Vec<Sample> = raw.into_iter().map(|(at_ms, end, committed)| Sample { at_ms, end, committed }).collect();
        let facts = HealthFacts { log_start, anomaly, last_commit_ms };
        let _ = evaluate_health(&samples, facts, now, HealthConfig { stop_after_ms });
    }

    #[test]
    fn an_idle_partition_is_ok_never_stop(
        ends in proptest::collection::vec(0i64..1000, 1..8),
        ahead in 0i64..10,
        last_commit_ms in proptest::option::of(any::<i64>()),
        now in any::<i64>(),
    ) {
        // Committed at (or past) the end in the newest sample, and never stepping back.
        let end = *ends.iter().max().unwrap();
        let points: Vec<(i64, i64)> = ends.iter().map(|_| (end, end + ahead)).collect();
        let facts = HealthFacts { last_commit_ms, ..HealthFacts::default() };
        prop_assert_eq!(evaluate_health(&timed(&points), facts, now, HealthConfig::default()), Some(Health::Ok));
    }

    #[test]
    fn a_step_back_of_the_committed_offset_is_rewind(
        start in 0i64..1000,
        back in 1i64..100,
        end in 1000i64..2000,
    ) {
        let points = [(end, start + back), (end, start), (end, start + 1)];
        prop_assert_eq!(
            evaluate_health(&timed(&points), HealthFacts::default(), 0, HealthConfig::default()),
            Some(Health::Rewind)
        );
    }

    #[test]
    fn consuming_as_fast_as_records_arrive_is_ok(
        start in 0i64..1000,
        lag in 1i64..1000,
        steps in proptest::collection::vec(1i64..100, 1..7),
    ) {
        let mut committed = start;
        let mut points = vec![(start + lag, start)];
        for step in steps {
            committed += step;
            points.push((committed + lag, committed));
        }
        prop_assert_eq!(
            evaluate_health(&timed(&points), HealthFacts::default(), 0, HealthConfig::default()),
            Some(Health::Ok)
        );
    }

    #[test]
    fn the_order_of_the_samples_does_not_matter(samples in window(), seed in any::<u64>()) {
        // Distinct times, so no sample replaces another.
        let mut samples = samples;
        for (i, s) in samples.iter_mut().enumerate() {
            s.at_ms = s.at_ms * 16 + i as i64;
        }
        let mut shuffled = samples.clone();
        let n = shuffled.len();
        for i in 0..n {
            shuffled.swap(i, (seed as usize).wrapping_add(i * 7) % n);
        }
        let facts = HealthFacts::default();
        prop_assert_eq!(
            evaluate_health(&samples, facts, 0, HealthConfig::default()),
            evaluate_health(&shuffled, facts, 0, HealthConfig::default())
        );
    }
}
