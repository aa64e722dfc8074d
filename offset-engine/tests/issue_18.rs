//! Issue 18: each finding with the issue's own inputs. Every test here failed (or aborted the
//! process) before the fix; see the issue for the numbers.

use std::collections::HashMap;

use offset_engine::formats::{from_csv, to_csv, CsvErrorKind};
use offset_engine::rate::{share, NOT_WAITING};
use offset_engine::split::MAX_PIECES;
use offset_engine::{
    merge_commit, merge_commits, plan, plan_reset, split_range, split_ranges, stored_lag, Anomaly,
    AnomalyKind, Commit, CommitDecision, CommitRejection, FromReason, Isolation, Lag, LeaderEpoch, Limits,
    LogState, LogView, Offset, OutOfRangePolicy, Outcome, PartitionInput, PlanRequest, RateCarry, RateError,
    ResetInput, ResetReason, ResetTarget, SkipReason, Split, SplitError, StartPolicy, Stored, TimeLookup,
    TopicId, TopicIdParseError, TopicPartition, TopicRange,
};

fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("t", p)
}

/// Finding 1: three partitions with log `[0, 1_000_000)`, `max_per_batch = 1`, the carry fed
/// from each plan into the next; partition 2 is left out of every other batch (`stale =
/// false`) or is in it with `previous_until` above its end (`stale = true`). Returns, per
/// partition, the batches in which it had a planned range and whether it got records.
fn interleaved(stale: bool) -> [Vec<bool>; 3] {
    let mut stored = [0i64; 3];
    let mut carry = RateCarry::default();
    let mut served: [Vec<bool>; 3] = Default::default();
    for batch in 0..40 {
        let odd = batch % 2 == 1;
        let partitions = (0..3)
            .filter(|&i| stale || !(i == 2 && odd))
            .map(|i| {
                let mut input = PartitionInput::new(
                    tp(i),
                    Some(Stored::at(stored[i as usize])),
                    LogState::Found(LogView::new(0, 1_000_000)),
                );
                if i == 2 && odd {
                    // A lagging replica answered: the end is below the last until.
                    input.previous_until = Some(Offset(1_000_001));
                }
                input
            })
            .collect();
        let p = plan(&PlanRequest {
            limits: Limits { max_per_batch: Some(1), ..Limits::default() },
            carry,
            partitions,
            ..PlanRequest::default()
        });
        assert_eq!(p.records, 1, "the cap is used every batch");
        for e in &p.entries {
            let i = e.tp.partition as usize;
            match e.range() {
                Some(r) => {
                    served[i].push(r.records() > 0);
                    stored[i] = r.until.0;
                }
                None => assert_eq!(e.outcome, Outcome::Skipped { reason: SkipReason::EndWentBackwards }),
            }
        }
        carry = p.carry;
    }
    served
}

/// The stated bound (`RateCarry`): with `n` partitions, records within any `n` batches in
/// which the partition has a non-empty range under a total cap of at least one record.
fn assert_within_bound(served: &[Vec<bool>; 3]) {
    for (i, s) in served.iter().enumerate() {
        assert!(s.iter().any(|&b| b), "partition {i} starved: {s:?}");
        for window in s.windows(3) {
            assert!(window.iter().any(|&b| b), "partition {i} waited more than 3 of its batches: {s:?}");
        }
    }
}

#[test]
fn finding_1_a_partition_absent_every_other_batch_is_not_starved() {
    let served = interleaved(false);
    assert_eq!(served[2].len(), 20);
    assert_within_bound(&served);
}

#[test]
fn finding_1_a_partition_with_a_stale_end_every_other_batch_is_not_starved() {
    let served = interleaved(true);
    assert_within_bound(&served);
}

#[test]
fn finding_1_a_waiting_partition_keeps_its_place_while_absent() {
    let input =
        |i: i32| PartitionInput::new(tp(i), Some(Stored::at(0)), LogState::Found(LogView::new(0, 100)));
    let limits = Limits { max_per_batch: Some(1), ..Limits::default() };
    let first = plan(&PlanRequest { limits, partitions: vec![input(0), input(1)], ..PlanRequest::default() });
    assert_eq!(first.carry.waiting_since(&tp(1)), Some(0), "passed over in batch 0");
    let absent = plan(&PlanRequest {
        limits,
        carry: first.carry,
        partitions: vec![input(0)],
        ..PlanRequest::default()
    });
    assert_eq!(absent.carry.waiting_since(&tp(1)), Some(0), "kept while absent");
    let back = plan(&PlanRequest {
        limits,
        carry: absent.carry,
        partitions: vec![input(0), input(1)],
        ..PlanRequest::default()
    });
    assert_eq!(
        back.entries[1].range().map(offset_engine::PlannedRange::records),
        Some(1),
        "served first when back"
    );
    assert_eq!(back.carry.waiting_since(&tp(1)), None);
    // A gone partition leaves the queue.
    let gone = plan(&PlanRequest {
        limits,
        carry: first_carry_with_1_waiting(),
        partitions: vec![PartitionInput::new(tp(1), Some(Stored::at(0)), LogState::PartitionNotFound)],
        ..PlanRequest::default()
    });
    assert!(gone.carry.is_empty());
}

fn first_carry_with_1_waiting() -> RateCarry {
    let input =
        |i: i32| PartitionInput::new(tp(i), Some(Stored::at(0)), LogState::Found(LogView::new(0, 100)));
    let limits = Limits { max_per_batch: Some(1), ..Limits::default() };
    plan(&PlanRequest { limits, partitions: vec![input(0), input(1)], ..PlanRequest::default() }).carry
}

fn commit(offset: i64, topic_id: Option<TopicId>) -> Commit {
    Commit { tp: tp(0), offset: Offset(offset), leader_epoch: None, topic_id, reset: false }
}

#[test]
fn finding_2_a_commit_without_a_topic_id_keeps_the_stored_one() {
    let (x, y) = (TopicId([1; 16]), TopicId([2; 16]));
    let stored: HashMap<_, _> = [(tp(0), Stored { topic_id: Some(x), ..Stored::at(10) })].into();
    let (next, decisions) = merge_commits(&stored, &[commit(11, None), commit(12, Some(y))], 0);
    assert_eq!(
        decisions[0],
        CommitDecision::Write(Stored { topic_id: Some(x), commit_timestamp_ms: Some(0), ..Stored::at(11) })
    );
    assert_eq!(
        decisions[1],
        CommitDecision::Rejected(CommitRejection::TopicIdChanged { stored: x, proposed: y })
    );
    assert_eq!(next[&tp(0)].topic_id, Some(x), "X → X, never X → none → Y");
    assert_eq!(next[&tp(0)].offset, Offset(11));
}

#[test]
fn finding_3_the_all_zero_topic_id_is_unknown() {
    let mut view = LogView::new(0, 100);
    view.topic_id = Some(TopicId([9; 16]));
    let stored = Stored { topic_id: Some(TopicId([0; 16])), ..Stored::at(50) };
    let p = plan(&PlanRequest {
        partitions: vec![PartitionInput::new(tp(0), Some(stored), LogState::Found(view))],
        ..PlanRequest::default()
    });
    let e = &p.entries[0];
    assert_eq!(e.anomaly.as_deref().copied(), None, "a healthy partition, not topic_recreated");
    assert_eq!(e.range().map(|r| (r.from, r.until)), Some((Offset(50), Offset(100))));
    // Its commit is accepted, and records the id the log has.
    let (next, decisions) = merge_commits(&[(tp(0), stored)].into(), &offset_engine::commits_for(&p), 0);
    assert!(matches!(decisions[0], CommitDecision::Write(_)), "{decisions:?}");
    assert_eq!(next[&tp(0)].topic_id, Some(TopicId([9; 16])));
    // A later commit of the same topic is accepted too (it was rejected as an id change).
    let later = merge_commit(Some(&next[&tp(0)]), &commit(120, Some(TopicId([9; 16]))), 0);
    assert!(matches!(later, CommitDecision::Write(_)), "{later:?}");
    // The text form and the wire form agree: zero is unknown.
    assert_eq!("AAAAAAAAAAAAAAAAAAAAAA".parse::<TopicId>(), Err(TopicIdParseError::Zero));
    assert_eq!(TopicId::parse_wire("AAAAAAAAAAAAAAAAAAAAAA"), Ok(None));
    assert_eq!(TopicId::from_wire([0; 16]), None);
    // A zero id in the log view is unknown as well: no recreation against it, never committed.
    let mut zero_log = LogView::new(0, 100);
    zero_log.topic_id = Some(TopicId([0; 16]));
    let stored = Stored { topic_id: Some(TopicId([9; 16])), ..Stored::at(50) };
    let p = plan(&PlanRequest {
        partitions: vec![PartitionInput::new(tp(0), Some(stored), LogState::Found(zero_log))],
        ..PlanRequest::default()
    });
    assert_eq!((p.entries[0].anomaly.as_deref().copied(), p.entries[0].topic_id), (None, None));
}

#[test]
fn finding_4_an_unknown_epoch_end_is_no_evidence_of_truncation() {
    let mut input = PartitionInput::new(tp(0), Some(Stored::at(0)), LogState::Found(LogView::new(0, 100)));
    input.end_offset_for_stored_epoch = Some(Offset(-1));
    let p = plan(&PlanRequest { partitions: vec![input], ..PlanRequest::default() });
    assert_eq!(p.entries[0].anomaly.as_deref().copied(), None, "not truncated with lost: 1");
    assert_eq!(p.entries[0].range().map(|r| (r.from, r.until)), Some((Offset(0), Offset(100))));
}

#[test]
fn finding_4_a_timestamp_looked_up_as_minus_one_starts_at_the_end() {
    let mut input = PartitionInput::new(tp(0), None, LogState::Found(LogView::new(0, 100)));
    input.timestamp_offset = Some(TimeLookup::Offset(Offset(-1)));
    let request = PlanRequest {
        start: StartPolicy::Timestamp { timestamp_ms: 1_700_000_000_000 },
        partitions: vec![input.clone()],
        ..PlanRequest::default()
    };
    let r = *plan(&request).entries[0].range().expect("a range");
    assert_eq!((r.from, r.from_reason), (Offset(100), FromReason::NoRecordAtOrAfterTimestamp));
    assert_eq!(TimeLookup::from_wire(-1), TimeLookup::NoRecordAtOrAfter);
    // Below -1 is not Kafka's "none": refused, not guessed.
    input.timestamp_offset = Some(TimeLookup::Offset(Offset(-2)));
    let p = plan(&PlanRequest { partitions: vec![input], ..request });
    assert!(matches!(p.entries[0].outcome, Outcome::Skipped { reason: SkipReason::InvalidInput(_) }));
}

#[test]
fn finding_4_a_reset_to_a_time_looked_up_as_minus_one_goes_to_the_end() {
    let mut input = ResetInput::new(tp(0), Some(Stored::at(5)), LogState::Found(LogView::new(0, 100)));
    input.time_lookup = Some(TimeLookup::Offset(Offset(-1)));
    let r = plan_reset(
        ResetTarget::Timestamp { timestamp_ms: 1_700_000_000_000 },
        Isolation::ReadUncommitted,
        &[input],
    );
    let to = r[0].outcome.expect("a reset");
    assert_eq!((to.offset, to.reason), (Offset(100), ResetReason::NoRecordAtOrAfterTimestamp));
}

#[test]
fn finding_4_unknown_epochs_and_ids_are_none_from_the_wire() {
    assert_eq!(LeaderEpoch::from_wire(-1), None);
    assert_eq!(Offset::from_wire(-1), None);
    assert_eq!(Stored::from_wire(-1, None, None, None), None, "OffsetFetch's -1 is nothing stored");
    // An epoch -1 handed in directly is unknown too: no epoch is stored, none compared.
    let stored = Stored { leader_epoch: Some(LeaderEpoch(-1)), ..Stored::at(10) };
    let c = Commit { leader_epoch: Some(LeaderEpoch(4)), ..commit(11, None) };
    let CommitDecision::Write(next) = merge_commit(Some(&stored), &c, 0) else { panic!("forward commit") };
    assert_eq!(next.leader_epoch, Some(LeaderEpoch(4)));
}

#[test]
fn finding_5_records_after_a_divergence_below_the_log_start_are_counted() {
    // Stored 100, the stored epoch ends at 50, retention moved the log start to 80, clamp.
    let mut input = PartitionInput::new(
        tp(0),
        Some(Stored { leader_epoch: Some(LeaderEpoch(3)), ..Stored::at(100) }),
        LogState::Found(LogView::new(80, 200)),
    );
    input.end_offset_for_stored_epoch = Some(Offset(50));
    let p = plan(&PlanRequest {
        out_of_range: OutOfRangePolicy::Clamp,
        partitions: vec![input],
        ..PlanRequest::default()
    });
    let e = &p.entries[0];
    assert_eq!(e.range().map(|r| r.from), Some(Offset(80)));
    let a = e.anomaly.as_deref().copied().expect("truncated");
    assert_eq!(
        a,
        Anomaly::Truncated { stored: Offset(100), divergence: Offset(50), lost: 50, skipped: 30 },
        "[50, 80) of the new log are never read: 30"
    );
    assert_eq!(a.skipped(), 30);
}

#[test]
fn finding_6_zero_pieces_is_an_error_not_nothing() {
    assert_eq!(split_range(Offset(0), Offset(10), 0), Err(SplitError::Zero));
}

#[test]
fn finding_6_huge_piece_counts_are_errors_not_panics() {
    let all = [TopicRange { tp: tp(0), from: Offset(0), until: Offset(i64::MAX) }];
    assert!(matches!(
        split_range(Offset(0), Offset(i64::MAX), u64::MAX),
        Err(SplitError::TooManyPieces { .. })
    ));
    assert!(matches!(split_ranges(&all, Split::Pieces(u64::MAX)), Err(SplitError::TooManyPieces { .. })));
    assert!(matches!(split_ranges(&all, Split::MaxRecords(1)), Err(SplitError::TooManyPieces { .. })));
}

#[test]
fn finding_6_one_record_pieces_of_2_pow_40_records_are_refused_before_allocating() {
    // This aborted the whole process (a 16 TiB allocation).
    let r = [TopicRange { tp: tp(0), from: Offset(0), until: Offset(1 << 40) }];
    assert_eq!(
        split_ranges(&r, Split::MaxRecords(1)),
        Err(SplitError::TooManyPieces { pieces: 1 << 40, max: MAX_PIECES })
    );
}

#[test]
fn finding_7_read_committed_waiting_for_a_transaction_has_no_negative_lag() {
    let mut v = LogView::new(0, 100);
    v.last_stable = Offset(90);
    let p = plan(&PlanRequest {
        isolation: Isolation::ReadCommitted,
        partitions: vec![PartitionInput::new(tp(0), Some(Stored::at(100)), LogState::Found(v))],
        ..PlanRequest::default()
    });
    let e = &p.entries[0];
    assert_eq!(
        e.outcome,
        Outcome::Skipped {
            reason: SkipReason::AwaitingStable { stored: Offset(100), last_stable: Offset(90) }
        }
    );
    assert_eq!(e.lag, Lag::Committed { lag: 0, consumable: 0 }, "not −10 without an anomaly");
    assert_eq!(stored_lag(Some(&Stored::at(100)), &LogState::Found(v), Isolation::ReadCommitted), e.lag);
}

#[test]
fn finding_7_a_recreated_topic_has_no_lag_against_the_old_offset() {
    let mut view = LogView::new(0, 120);
    view.topic_id = Some(TopicId([2; 16]));
    let stored = Stored { topic_id: Some(TopicId([1; 16])), ..Stored::at(3_500) };
    let p = plan(&PlanRequest {
        partitions: vec![PartitionInput::new(tp(0), Some(stored), LogState::Found(view))],
        ..PlanRequest::default()
    });
    assert_eq!(p.entries[0].outcome, Outcome::Failed { kind: AnomalyKind::TopicRecreated });
    assert_eq!(p.entries[0].lag, Lag::NothingCommitted { consumable: 120 });
    assert_eq!(
        stored_lag(Some(&stored), &LogState::Found(view), Isolation::ReadUncommitted),
        p.entries[0].lag
    );
}

#[test]
fn finding_7_a_leader_epoch_going_backwards_is_refused() {
    let stored = Stored { leader_epoch: Some(LeaderEpoch(7)), ..Stored::at(10) };
    let back = Commit { leader_epoch: Some(LeaderEpoch(3)), ..commit(11, None) };
    assert_eq!(
        merge_commit(Some(&stored), &back, 0),
        CommitDecision::Rejected(CommitRejection::LeaderEpochBackwards {
            stored: LeaderEpoch(7),
            proposed: LeaderEpoch(3)
        })
    );
    assert!(matches!(
        merge_commit(Some(&stored), &Commit { reset: true, ..back }, 0),
        CommitDecision::Write(_)
    ));
}

#[test]
fn finding_7_csv_quotes_names_with_commas_newlines_and_quotes() {
    let entries = vec![
        (TopicPartition::new("a,b", 0), Offset(1)),
        (TopicPartition::new("x\ny", 1), Offset(2)),
        (TopicPartition::new("q\"t", 0), Offset(3)),
    ];
    let text = to_csv(&entries);
    assert_eq!(text, "\"a,b\",0,1\n\"x\ny\",1,2\n\"q\"\"t\",0,3\n");
    assert_eq!(from_csv(&text), Ok(entries));
}

#[test]
fn finding_7_share_with_short_debts_is_an_error() {
    assert_eq!(
        share(&[10, 20, 30], 5, &[0]),
        Err(RateError::LengthMismatch { backlogs: 3, waiting_since: 1 })
    );
    assert_eq!(share(&[10, 20, 30], 5, &[NOT_WAITING; 3]).map(|g| g.iter().sum::<u64>()), Ok(5));
}

#[test]
fn finding_7_csv_keeps_unicode_whitespace_in_topic_names() {
    assert_eq!(
        from_csv("orders\u{2003},0,1\n").map_err(|e| e.kind),
        Err(CsvErrorKind::InvalidTopic { topic: "orders\u{2003}".into() }),
        "not read as `orders`"
    );
    let entries = vec![(TopicPartition::new("orders\u{2003}", 0), Offset(1))];
    assert_eq!(from_csv(&to_csv(&entries)), Ok(entries));
}

// Trying to break the fixes: extremes the findings did not cover.

#[test]
fn logs_as_long_as_an_offset_allows_share_one_record_without_starving() {
    // Σ backlogs exceeds u64: the 128-bit path, with the queue.
    let input = |i: i32, stored: i64| {
        PartitionInput::new(tp(i), Some(Stored::at(stored)), LogState::Found(LogView::new(0, i64::MAX)))
    };
    let mut stored = [0i64; 3];
    let mut carry = RateCarry::default();
    let mut last_served = [0usize; 3];
    for batch in 1..=30 {
        let p = plan(&PlanRequest {
            limits: Limits { max_per_batch: Some(1), ..Limits::default() },
            carry,
            partitions: (0..3).map(|i| input(i, stored[i as usize])).collect(),
            ..PlanRequest::default()
        });
        assert_eq!(p.records, 1);
        for e in &p.entries {
            let r = e.range().expect("in range");
            let i = e.tp.partition as usize;
            if r.records() > 0 {
                assert!(
                    batch - last_served[i] <= 3,
                    "partition {i} waited {} batches",
                    batch - last_served[i]
                );
                last_served[i] = batch;
            }
            stored[i] = r.until.0;
        }
        carry = p.carry;
    }
}

#[test]
fn a_zero_cap_in_between_keeps_every_place_in_the_queue() {
    let partitions: Vec<PartitionInput> = (0..3)
        .map(|i| PartitionInput::new(tp(i), Some(Stored::at(0)), LogState::Found(LogView::new(0, 10))))
        .collect();
    let with_cap = |cap, carry| {
        plan(&PlanRequest {
            limits: Limits { max_per_batch: Some(cap), ..Limits::default() },
            carry,
            partitions: partitions.clone(),
            ..PlanRequest::default()
        })
    };
    let first = with_cap(1, RateCarry::default());
    let waiting: Vec<Option<u64>> = (0..3).map(|i| first.carry.waiting_since(&tp(i))).collect();
    assert_eq!(waiting, [None, Some(0), Some(0)]);
    let zero = with_cap(0, first.carry);
    assert_eq!(zero.records, 0);
    let still: Vec<Option<u64>> = (0..3).map(|i| zero.carry.waiting_since(&tp(i))).collect();
    assert_eq!(still, waiting, "under a zero cap nobody was owed anything, and nobody loses a place");
    let next = with_cap(1, zero.carry);
    assert_eq!(next.entries[1].range().map(offset_engine::PlannedRange::records), Some(1));
}

#[test]
fn empty_logs_are_never_queued() {
    let p = plan(&PlanRequest {
        limits: Limits { max_per_batch: Some(1), max_per_partition: Some(0), time_budget: None },
        partitions: (0..3)
            .map(|i| {
                PartitionInput::new(
                    tp(i),
                    Some(Stored::at(5)),
                    LogState::Found(LogView::new(5, 5 + i64::from(i))),
                )
            })
            .collect(),
        ..PlanRequest::default()
    });
    assert_eq!(p.records, 0);
    assert!(p.carry.is_empty(), "no backlog after the per-partition cap: nothing is owed");
}

#[test]
fn skips_as_large_as_an_offset_allows_are_counted_exactly() {
    // Retention took everything up to i64::MAX; the latest policy resumes at the end.
    let input =
        PartitionInput::new(tp(0), Some(Stored::at(0)), LogState::Found(LogView::new(i64::MAX, i64::MAX)));
    let p = plan(&PlanRequest {
        out_of_range: OutOfRangePolicy::Latest,
        partitions: vec![input],
        ..PlanRequest::default()
    });
    let a = p.entries[0].anomaly.as_deref().copied().expect("data loss");
    assert_eq!((a.lost(), a.skipped()), (Some(i64::MAX as u64), i64::MAX as u64));
    // A recreated topic whose every record was deleted before anyone looked.
    let mut view = LogView::new(i64::MAX, i64::MAX);
    view.topic_id = Some(TopicId([2; 16]));
    let stored = Stored { topic_id: Some(TopicId([1; 16])), ..Stored::at(i64::MAX) };
    let p = plan(&PlanRequest {
        out_of_range: OutOfRangePolicy::Clamp,
        partitions: vec![PartitionInput::new(tp(0), Some(stored), LogState::Found(view))],
        ..PlanRequest::default()
    });
    assert_eq!(p.entries[0].anomaly.as_deref().copied().map(|a| a.skipped()), Some(i64::MAX as u64));
    assert_eq!(p.entries[0].lag, Lag::NothingCommitted { consumable: 0 });
}
