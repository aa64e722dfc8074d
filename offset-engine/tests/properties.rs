//! Properties over generated clusters: many topics and partitions, stored offsets around and
//! outside the log ranges, topic-id changes, leader epochs, policies and limits.

use std::collections::HashMap;

use offset_engine::formats::{from_csv, from_spark_json, to_csv, to_spark_json, SparkOffset};
use offset_engine::{
    commits_for, lag, merge_commit, merge_commits, plan, plan_into, plan_reset, split_ranges, AnomalyKind,
    Commit, CommitDecision, Isolation, Limits, LogState, LogView, Offset, OutOfRangePolicy, Outcome,
    PartitionInput, PlanRequest, RateCarry, ResetInput, ResetTarget, SkipReason, Split, StartPolicy, Stored,
    TimeBudget, TimeLookup, TopicId, TopicPartition, TopicRange,
};
use proptest::prelude::*;

/// What a generated partition is built to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    InRange,
    BelowLogStart,
    AheadOfLog,
    Recreated,
    Truncated,
    NothingStored,
    PartitionGone,
    TopicGone,
    EndBackwards,
}

impl Case {
    /// The anomaly the construction implies.
    fn expected(self) -> Option<AnomalyKind> {
        match self {
            Case::InRange => None,
            Case::BelowLogStart => Some(AnomalyKind::DataLoss),
            Case::AheadOfLog => Some(AnomalyKind::OffsetAheadOfLog),
            Case::Recreated => Some(AnomalyKind::TopicRecreated),
            Case::Truncated => Some(AnomalyKind::Truncated),
            Case::NothingStored => Some(AnomalyKind::NewPartition),
            Case::PartitionGone => Some(AnomalyKind::PartitionGone),
            Case::TopicGone => Some(AnomalyKind::TopicGone),
            Case::EndBackwards => Some(AnomalyKind::EndWentBackwards),
        }
    }
}

fn case() -> impl Strategy<Value = Case> {
    prop_oneof![
        3 => Just(Case::InRange),
        1 => Just(Case::BelowLogStart),
        1 => Just(Case::AheadOfLog),
        1 => Just(Case::Recreated),
        1 => Just(Case::Truncated),
        1 => Just(Case::NothingStored),
        1 => Just(Case::PartitionGone),
        1 => Just(Case::TopicGone),
        1 => Just(Case::EndBackwards),
    ]
}

/// Offsets near 0 and near `i64::MAX`, where overflow would show.
fn scale() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => 0i64..2_000,
        1 => (i64::MAX - 2_000)..=i64::MAX,
    ]
}

#[derive(Debug, Clone)]
struct Generated {
    input: PartitionInput,
    case: Case,
}

prop_compose! {
    fn partition(index: usize)(
        case in case(),
        mut bounds in [scale(), scale(), scale()],
        pick in any::<u64>(),
        ids in 0u8..3,
        epoch in proptest::option::of(0i32..10),
        ts in proptest::option::of(any::<u8>()),
    ) -> Generated {
        bounds.sort_unstable();
        let [mut log_start, mut last_stable, mut hw] = bounds;
        // Room below the log start and above the end where the case needs it.
        if case == Case::BelowLogStart && log_start == 0 {
            log_start = 1;
            last_stable = last_stable.max(1);
            hw = hw.max(1);
        }
        if matches!(case, Case::AheadOfLog | Case::EndBackwards) && hw == i64::MAX {
            hw -= 1;
            last_stable = last_stable.min(hw);
            log_start = log_start.min(last_stable);
        }
        let within = |lo: i64, hi: i64| -> i64 {
            // A value in [lo, hi], lo <= hi.
            let span = hi.abs_diff(lo);
            lo.saturating_add_unsigned(if span == u64::MAX { pick } else { pick % (span + 1) })
        };
        let same = TopicId([7; 16]);
        let (stored_id, log_id) = match (case, ids) {
            (Case::Recreated, _) => (Some(same), Some(TopicId([8; 16]))),
            (_, 0) => (Some(same), Some(same)),
            (_, 1) => (None, Some(same)),
            _ => (None, None),
        };
        let mut view = LogView::new(log_start, hw);
        view.last_stable = Offset(last_stable);
        view.topic_id = log_id;
        view.leader_epoch = epoch.map(offset_engine::LeaderEpoch);
        let stored_at = match case {
            Case::InRange | Case::EndBackwards => Some(within(log_start, hw)),
            Case::BelowLogStart => Some(within(0, log_start - 1)),
            Case::AheadOfLog => Some(within(hw + 1, i64::MAX)),
            Case::Recreated | Case::PartitionGone | Case::TopicGone => Some(within(0, i64::MAX)),
            Case::Truncated => Some(within(1, i64::MAX)),
            Case::NothingStored => None,
        };
        let stored = stored_at.map(|o| Stored {
            offset: Offset(o),
            leader_epoch: epoch.map(offset_engine::LeaderEpoch),
            topic_id: stored_id,
            commit_timestamp_ms: None,
        });
        let log = match case {
            Case::PartitionGone => LogState::PartitionNotFound,
            Case::TopicGone => LogState::TopicNotFound,
            _ => LogState::Found(view),
        };
        let tp = TopicPartition::new(format!("topic-{}", index % 3), index as i32);
        let mut input = PartitionInput::new(tp, stored, log);
        if case == Case::Truncated {
            let s = stored_at.unwrap_or(1);
            input.end_offset_for_stored_epoch = Some(Offset(within(0, s - 1)));
        } else if case != Case::NothingStored && pick % 2 == 0 {
            // Epoch evidence of no divergence: the epoch ends at or after the stored offset.
            input.end_offset_for_stored_epoch = stored_at.map(Offset);
        }
        if case == Case::EndBackwards {
            // Above both ends, so it went backwards whatever the isolation.
            input.previous_until = Some(Offset(within(hw + 1, i64::MAX)));
        }
        input.timestamp_offset = ts.map(|t| {
            if t < 40 { TimeLookup::NoRecordAtOrAfter } else { TimeLookup::Offset(Offset(within(0, i64::MAX))) }
        });
        Generated { input, case }
    }
}

fn cluster() -> impl Strategy<Value = Vec<Generated>> {
    (1usize..40).prop_flat_map(|n| (0..n).map(partition).collect::<Vec<_>>())
}

fn limits() -> impl Strategy<Value = Limits> {
    (
        proptest::option::of(0u64..3_000),
        proptest::option::of(0u64..10_000),
        proptest::option::of((0u64..5_000, 1.0f64..5_000.0, 0.1f64..=1.0)),
    )
        .prop_map(|(per, batch, budget)| Limits {
            max_per_partition: per,
            max_per_batch: batch,
            time_budget: budget.and_then(|(ms, rate, safety)| TimeBudget::new(ms, rate, safety).ok()),
        })
}

fn request() -> impl Strategy<Value = (PlanRequest, Vec<Case>)> {
    (
        cluster(),
        prop_oneof![
            Just(StartPolicy::Earliest),
            Just(StartPolicy::Latest),
            Just(StartPolicy::Timestamp { timestamp_ms: 1_700_000_000_000 }),
            Just(StartPolicy::Fail),
        ],
        prop_oneof![
            Just(OutOfRangePolicy::Fail),
            Just(OutOfRangePolicy::Earliest),
            Just(OutOfRangePolicy::Latest),
            Just(OutOfRangePolicy::Clamp),
        ],
        prop_oneof![Just(Isolation::ReadUncommitted), Just(Isolation::ReadCommitted)],
        limits(),
    )
        .prop_map(|(gen, start, out_of_range, isolation, limits)| {
            let cases = gen.iter().map(|g| g.case).collect();
            let req = PlanRequest {
                start,
                out_of_range,
                isolation,
                limits,
                carry: RateCarry::default(),
                partitions: gen.into_iter().map(|g| g.input).collect(),
            };
            (req, cases)
        })
}

fn view_of(input: &PartitionInput) -> Option<LogView> {
    match input.log {
        LogState::Found(v) => Some(v),
        _ => None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn never_until_below_from((req, _) in request()) {
        for e in &plan(&req).entries {
            if let Some(r) = e.range() {
                prop_assert!(r.from <= r.until, "{e:?}");
            }
        }
    }

    #[test]
    fn planned_ranges_stay_inside_log_start_and_end((req, _) in request()) {
        let p = plan(&req);
        for (e, input) in p.entries.iter().zip(&req.partitions) {
            if let Some(r) = e.range() {
                let v = view_of(input).expect("a range needs a log");
                prop_assert!(v.log_start <= r.from, "{e:?} {v:?}");
                prop_assert!(r.until <= v.end(req.isolation), "{e:?} {v:?}");
            }
        }
    }

    #[test]
    fn every_input_partition_appears_exactly_once((req, _) in request()) {
        let p = plan(&req);
        prop_assert_eq!(p.entries.len(), req.partitions.len());
        for (e, input) in p.entries.iter().zip(&req.partitions) {
            prop_assert_eq!(&e.tp, &input.tp);
        }
    }

    #[test]
    fn per_partition_and_total_caps_hold_exactly((req, _) in request()) {
        let capped = plan(&req);
        let uncapped = plan(&PlanRequest { limits: Limits::default(), ..req.clone() });
        let per = req.limits.max_per_partition.unwrap_or(u64::MAX);
        let mut wanted: u128 = 0;
        let mut got: u128 = 0;
        for (c, u) in capped.entries.iter().zip(&uncapped.entries) {
            match (c.range(), u.range()) {
                (Some(c), Some(u)) => {
                    prop_assert_eq!(c.from, u.from);
                    prop_assert!(c.until <= u.until);
                    prop_assert!(c.records() <= per);
                    wanted += u128::from(u.records().min(per));
                    got += u128::from(c.records());
                }
                (None, None) => prop_assert_eq!(c.outcome, u.outcome),
                _ => prop_assert!(false, "caps changed an outcome: {c:?} vs {u:?}"),
            }
        }
        let cap = req.limits.batch_cap().map_or(u128::MAX, |c| u128::from(c.records));
        prop_assert!(got <= cap);
        prop_assert_eq!(got, wanted.min(cap), "the cap is used fully, never exceeded");
        // `Plan::records` saturates at u64::MAX (documented).
        prop_assert_eq!(u128::from(capped.records), got.min(u128::from(u64::MAX)));
    }

    #[test]
    fn no_partition_with_backlog_starves_over_repeated_batches(
        backlogs in proptest::collection::vec(1i64..5_000, 1..24),
        cap in 1u64..50,
        per in proptest::option::of(1u64..100),
    ) {
        let n = backlogs.len();
        let mut stored: Vec<i64> = vec![0; n];
        let mut served = vec![false; n];
        let mut carry = RateCarry::default();
        for _batch in 0..n {
            let req = PlanRequest {
                limits: Limits { max_per_partition: per, max_per_batch: Some(cap), time_budget: None },
                carry: carry.clone(),
                partitions: (0..n)
                    .map(|i| PartitionInput::new(
                        TopicPartition::new("t", i as i32),
                        Some(Stored::at(stored[i])),
                        LogState::Found(LogView::new(0, backlogs[i])),
                    ))
                    .collect(),
                ..PlanRequest::default()
            };
            let p = plan(&req);
            for (i, e) in p.entries.iter().enumerate() {
                let r = e.range().expect("in range");
                if r.records() > 0 || r.from.0 == backlogs[i] {
                    served[i] = true;
                }
                stored[i] = r.until.0;
            }
            carry = p.carry;
        }
        prop_assert!(served.iter().all(|s| *s), "starved: {served:?}");
    }

    #[test]
    fn commits_never_go_backwards_without_an_explicit_reset(
        steps in proptest::collection::vec((0i64..1_000, any::<bool>(), 0u8..3), 1..60),
    ) {
        let mut stored: Option<Stored> = None;
        for (offset, reset, id) in steps {
            let c = Commit {
                tp: TopicPartition::new("t", 0),
                offset: Offset(offset),
                leader_epoch: None,
                topic_id: match id { 0 => None, n => Some(TopicId([n; 16])) },
                reset,
            };
            match merge_commit(stored.as_ref(), &c, 0) {
                CommitDecision::Write(next) => {
                    if let Some(prev) = stored {
                        prop_assert!(next.offset >= prev.offset || reset);
                        let id_changed = matches!((prev.topic_id, next.topic_id), (Some(a), Some(b)) if a != b);
                        prop_assert!(!id_changed || reset);
                    }
                    stored = Some(next);
                }
                CommitDecision::Unchanged => prop_assert_eq!(stored.map(|s| s.offset), Some(c.offset)),
                CommitDecision::Rejected(_) => prop_assert!(!reset),
            }
        }
    }

    #[test]
    fn commits_of_a_plan_merge_forward_or_as_resets((req, _) in request()) {
        let p = plan(&req);
        let current: HashMap<TopicPartition, Stored> = req
            .partitions
            .iter()
            .filter_map(|i| i.stored.map(|s| (i.tp.clone(), s)))
            .collect();
        let commits = commits_for(&p);
        let (next, decisions) = merge_commits(&current, &commits, 1);
        for (c, d) in commits.iter().zip(decisions) {
            if let (Some(before), CommitDecision::Write(after)) = (current.get(&c.tp), d) {
                prop_assert!(after.offset >= before.offset || c.reset);
            }
            if let CommitDecision::Rejected(_) = d {
                prop_assert_eq!(next.get(&c.tp), current.get(&c.tp));
            }
        }
    }

    #[test]
    fn same_input_gives_same_output((req, _) in request()) {
        prop_assert_eq!(plan(&req), plan(&req.clone()));
    }

    /// A streaming loop keeps one `Plan` and plans each batch into it: whatever the previous
    /// plan held (more or fewer entries, a carry, a binding total cap), the result is `plan`'s.
    #[test]
    fn planning_into_a_previous_plan_gives_the_same_plan_as_a_fresh_one(
        (first, _) in request(),
        (second, _) in request(),
    ) {
        let mut reused = plan(&first);
        plan_into(&second, &mut reused);
        prop_assert_eq!(&reused, &plan(&second));
        plan_into(&first, &mut reused);
        prop_assert_eq!(reused, plan(&first));
    }

    #[test]
    fn split_pieces_are_contiguous_and_cover_each_range(
        ranges in proptest::collection::vec((scale(), 0u64..5_000), 0..20),
        split in prop_oneof![(1u64..700).prop_map(Split::MaxRecords), (1u64..100).prop_map(Split::Pieces)],
    ) {
        let ranges: Vec<TopicRange> = ranges
            .iter()
            .enumerate()
            .map(|(i, &(from, len))| TopicRange {
                tp: TopicPartition::new("t", i as i32),
                from: Offset(from),
                until: Offset(from).saturating_add(len),
            })
            .collect();
        let pieces = split_ranges(&ranges, split).expect("non-zero split");
        let non_empty = ranges.iter().filter(|r| r.records() > 0).count() as u64;
        if let Split::Pieces(n) = split {
            prop_assert!(pieces.len() as u64 <= n.max(non_empty));
        }
        for r in &ranges {
            let mine: Vec<&TopicRange> = pieces.iter().filter(|p| p.tp == r.tp).collect();
            if r.records() == 0 {
                prop_assert!(mine.is_empty());
                continue;
            }
            prop_assert_eq!(mine[0].from, r.from);
            prop_assert_eq!(mine[mine.len() - 1].until, r.until);
            for w in mine.windows(2) {
                prop_assert_eq!(w[0].until, w[1].from);
            }
            for p in &mine {
                prop_assert!(p.from < p.until);
                if let Split::MaxRecords(m) = split {
                    prop_assert!(p.records() <= m);
                }
            }
        }
    }

    #[test]
    fn lag_is_consumable_plus_lost_whenever_stored_is_within_end(
        mut bounds in [scale(), scale(), scale()],
        stored in scale(),
        committed in any::<bool>(),
        isolation in prop_oneof![Just(Isolation::ReadUncommitted), Just(Isolation::ReadCommitted)],
    ) {
        bounds.sort_unstable();
        let mut v = LogView::new(bounds[0], bounds[2]);
        v.last_stable = Offset(bounds[1]);
        let end = v.end(isolation);
        let l = lag(committed.then_some(Offset(stored)), &v, isolation);
        if !committed {
            prop_assert_eq!(l.lag(), None);
            prop_assert_eq!(l.consumable(), Some(end.0 - v.log_start.0));
        } else if stored <= end.0 {
            let (lag, consumable, lost) = (l.lag().unwrap(), l.consumable().unwrap(), l.lost().unwrap());
            prop_assert!(consumable >= 0);
            prop_assert_eq!(i128::from(lag), i128::from(consumable) + i128::from(lost));
        } else {
            prop_assert!(l.lag().unwrap() < 0, "ahead of end is negative, not clamped");
        }
    }

    /// A negative lag means the stored position is beyond the log: the plan always says so
    /// with an anomaly (issue 18: read_committed gave −10 with none).
    #[test]
    fn a_negative_lag_always_comes_with_an_anomaly((req, _) in request()) {
        for e in &plan(&req).entries {
            if e.lag.lag().is_some_and(|l| l < 0) || e.lag.consumable().is_some_and(|c| c < 0) {
                prop_assert!(e.anomaly.is_some(), "negative lag without an anomaly: {e:?}");
            }
        }
    }

    /// Kafka's "unknown" values (the all-zero topic id, leader epoch −1, OffsetForLeaderEpoch's
    /// −1, ListOffsets' −1 for a time) plan exactly as if the value were absent.
    #[test]
    fn unknown_wire_values_plan_as_absent_ones((req, _) in request(), mask in any::<u64>()) {
        let zero = Some(TopicId([0; 16]));
        let unknown_epoch = Some(offset_engine::LeaderEpoch(-1));
        let mut spelled = req.clone();
        for (i, p) in spelled.partitions.iter_mut().enumerate() {
            let bit = |k: usize| mask >> ((i * 5 + k) % 64) & 1 == 1;
            if let Some(s) = &mut p.stored {
                if s.topic_id.is_none() && bit(0) { s.topic_id = zero; }
                if s.leader_epoch.is_none() && bit(1) { s.leader_epoch = unknown_epoch; }
            }
            if let LogState::Found(v) = &mut p.log {
                if v.topic_id.is_none() && bit(2) { v.topic_id = zero; }
                if v.leader_epoch.is_none() && bit(3) { v.leader_epoch = unknown_epoch; }
            }
            if p.end_offset_for_stored_epoch.is_none() && bit(4) {
                p.end_offset_for_stored_epoch = Some(Offset(-1));
            }
            if p.timestamp_offset == Some(TimeLookup::NoRecordAtOrAfter) && bit(0) {
                p.timestamp_offset = Some(TimeLookup::Offset(Offset(-1)));
            }
        }
        prop_assert_eq!(plan(&spelled), plan(&req));
    }

    #[test]
    fn each_out_of_range_case_gets_the_anomaly_its_construction_implies((req, cases) in request()) {
        let p = plan(&req);
        for ((e, case), input) in p.entries.iter().zip(&cases).zip(&req.partitions) {
            prop_assert_eq!(e.anomaly.as_deref().copied().map(|a| a.kind()), case.expected(), "{:?} {:?}", e, input);
            match e.outcome {
                Outcome::Failed { kind } => {
                    prop_assert_eq!(Some(kind), case.expected());
                    let policy_fails = if *case == Case::NothingStored {
                        req.start == StartPolicy::Fail
                    } else {
                        req.out_of_range == OutOfRangePolicy::Fail
                    };
                    prop_assert!(policy_fails);
                }
                Outcome::Skipped { reason } => prop_assert!(matches!(
                    (reason, case),
                    (SkipReason::PartitionGone, Case::PartitionGone)
                        | (SkipReason::TopicGone, Case::TopicGone)
                        | (SkipReason::EndWentBackwards, Case::EndBackwards)
                        | (SkipReason::AwaitingStable { .. }, Case::InRange)
                        | (SkipReason::TimestampNotResolved, Case::NothingStored)
                ), "{:?} {:?}", reason, case),
                Outcome::Range(_) => prop_assert!(!matches!(
                    case,
                    Case::PartitionGone | Case::TopicGone | Case::EndBackwards
                )),
            }
        }
    }

    #[test]
    fn reset_offsets_stay_inside_the_log(
        mut bounds in [scale(), scale()],
        committed in proptest::option::of(scale()),
        target in prop_oneof![
            Just(ResetTarget::Earliest),
            Just(ResetTarget::Latest),
            Just(ResetTarget::Current),
            any::<i64>().prop_map(|o| ResetTarget::Offset(Offset(o))),
            any::<i64>().prop_map(ResetTarget::ShiftBy),
            Just(ResetTarget::FromFile),
        ],
        file in proptest::option::of(any::<i64>()),
    ) {
        bounds.sort_unstable();
        let view = LogView::new(bounds[0], bounds[1]);
        let mut input = ResetInput::new(TopicPartition::new("t", 0), committed.map(Stored::at), LogState::Found(view));
        input.file_offset = file.map(Offset);
        let entry = plan_reset(target, Isolation::ReadUncommitted, &[input]).remove(0);
        if let Ok(to) = entry.outcome {
            prop_assert!(view.log_start <= to.offset && to.offset <= view.high_watermark);
        } else {
            prop_assert!(matches!(target, ResetTarget::ShiftBy(_) | ResetTarget::Current | ResetTarget::FromFile));
        }
    }

    #[test]
    fn parsers_never_panic_on_any_input(text in any::<String>(), bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = from_csv(&text);
        let _ = from_spark_json(&text);
        let lossy = String::from_utf8_lossy(&bytes);
        let _ = from_csv(&lossy);
        let _ = from_spark_json(&lossy);
        // Near-misses of the real syntax.
        let _ = from_spark_json(&format!("{{\"t\":{{\"0\":{text}}}}}"));
        let _ = from_spark_json(&format!("{{\"{text}\":{{}}}}"));
    }

    #[test]
    fn csv_and_spark_json_round_trip(
        entries in proptest::collection::btree_map(
            ("[a-zA-Z0-9._-]{1,12}".prop_filter("not . or ..", |t| t != "." && t != ".."), 0i32..=i32::MAX),
            -2i64..=i64::MAX,
            0..30,
        ),
    ) {
        let spark: Vec<(TopicPartition, SparkOffset)> = entries
            .iter()
            .map(|((t, p), o)| (
                TopicPartition::new(t.as_str(), *p),
                match *o { -2 => SparkOffset::Earliest, -1 => SparkOffset::Latest, o => SparkOffset::At(Offset(o)) },
            ))
            .collect();
        let json = to_spark_json(&spark);
        let mut back = from_spark_json(&json).expect("own output parses");
        back.sort_by(|a, b| a.0.cmp(&b.0));
        let mut sorted = spark.clone();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        prop_assert_eq!(back, sorted);

        let csv_entries: Vec<(TopicPartition, Offset)> = spark
            .iter()
            .filter_map(|(tp, o)| match o { SparkOffset::At(o) => Some((tp.clone(), *o)), _ => None })
            .collect();
        prop_assert_eq!(from_csv(&to_csv(&csv_entries)).expect("own output parses"), csv_entries);
    }
}
