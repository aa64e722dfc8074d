//! The situations of the seed posts (`shared/seeds/`), with their numbers.

use offset_engine::{
    plan, Anomaly, AnomalyKind, FromReason, Isolation, Lag, Limits, LogState, LogView, Offset,
    OutOfRangePolicy, Outcome, PartitionInput, PlanRequest, PlannedRange, Stored, TimeBudget, TopicId,
    TopicPartition, UntilReason,
};

fn tp(topic: &str, p: i32) -> TopicPartition {
    TopicPartition::new(topic, p)
}

/// Seed 000: the topic was deleted and recreated; ZooKeeper still holds offset 3,500 for the old
/// topic while the new one has 120 records. Spark computed `until − from = 120 − 3500 < 0`
/// ("numRecords must not be negative").
#[test]
fn seed_000_topic_recreated_with_fewer_records_than_stored_offset() {
    let old = TopicId([1; 16]);
    let new = TopicId([2; 16]);
    let mut view = LogView::new(0, 120);
    view.topic_id = Some(new);
    let stored = Stored { topic_id: Some(old), ..Stored::at(3_500) };
    let input = PartitionInput::new(tp("ys", 0), Some(stored), LogState::Found(view));

    // Default policy: fail loudly, with the numbers.
    let req = PlanRequest { partitions: vec![input.clone()], ..PlanRequest::default() };
    let p = plan(&req);
    assert_eq!(p.entries[0].outcome, Outcome::Failed { kind: AnomalyKind::TopicRecreated });
    assert_eq!(
        p.entries[0].anomaly.as_deref().copied(),
        Some(Anomaly::TopicRecreated {
            stored_topic_id: old,
            topic_id: new,
            stored: Offset(3_500),
            log_start: Offset(0),
            end: Offset(120),
            skipped: 0,
        })
    );
    // The stored 3,500 belongs to the old topic: nothing of the new one is committed, so its
    // lag is all of it (not 120 − 3,500, issue 18).
    assert_eq!(p.entries[0].lag, Lag::NothingCommitted { consumable: 120 });

    // Clamp: read all of the new topic, [0, 120).
    let req = PlanRequest {
        out_of_range: OutOfRangePolicy::Clamp,
        partitions: vec![input.clone()],
        ..PlanRequest::default()
    };
    let r = *plan(&req).entries[0].range().expect("a range");
    assert_eq!((r.from, r.until), (Offset(0), Offset(120)));

    // Without topic ids (an old store) the same numbers are OffsetAheadOfLog, and after retention
    // the resume point is the real log start, not 0.
    let mut view = LogView::new(40, 120);
    view.topic_id = None;
    let req = PlanRequest {
        out_of_range: OutOfRangePolicy::Earliest,
        partitions: vec![PartitionInput::new(tp("ys", 0), Some(Stored::at(3_500)), LogState::Found(view))],
        ..PlanRequest::default()
    };
    let e = &plan(&req).entries[0];
    assert_eq!(
        e.anomaly.as_deref().copied(),
        Some(Anomaly::OffsetAheadOfLog {
            stored: Offset(3_500),
            log_start: Offset(40),
            high_watermark: Offset(120)
        })
    );
    assert_eq!(e.range().map(|r| (r.from, r.until)), Some((Offset(40), Offset(120))));
}

/// Seed 001: latest offsets overlaid with what ZooKeeper holds; partitions without a stored
/// offset silently started at latest. Here: 4 partitions, ZooKeeper has 0 and 2 only.
#[test]
fn seed_001_offsets_merged_from_a_store_where_some_partitions_have_none() {
    let stored = [Some(500), None, Some(1_000), None];
    let views = [(0, 800), (0, 700), (100, 1_200), (300, 900)];
    let partitions = (0..4)
        .map(|i| {
            PartitionInput::new(
                tp("kafka_direct", i as i32),
                stored[i].map(Stored::at),
                LogState::Found(LogView::new(views[i].0, views[i].1)),
            )
        })
        .collect();
    let p = plan(&PlanRequest { partitions, ..PlanRequest::default() });
    assert_eq!(p.entries.len(), 4);
    let ranges: Vec<(i64, i64)> = p
        .entries
        .iter()
        .map(|e| {
            let r = e.range().expect("every partition is planned");
            (r.from.0, r.until.0)
        })
        .collect();
    // Stored where stored; the log start (not latest) where nothing is.
    assert_eq!(ranges, [(500, 800), (0, 700), (1_000, 1_200), (300, 900)]);
    assert_eq!(p.entries[1].anomaly.as_deref().copied().map(|a| a.kind()), Some(AnomalyKind::NewPartition));
    assert_eq!(
        p.entries[3].anomaly.as_deref().copied(),
        Some(Anomaly::NewPartition { log_start: Offset(300), end: Offset(900), skipped: 300 })
    );
    assert_eq!(p.entries[3].anomaly.as_deref().copied().and_then(|a| a.lost()), Some(300));
    assert_eq!(p.entries[3].lag, Lag::NothingCommitted { consumable: 600 });
    assert_eq!(p.entries[0].anomaly.as_deref().copied(), None);
    assert_eq!(p.records, 300 + 700 + 200 + 600);
}

/// Seed 003: 600,000 msg/s into 64 partitions, 300 s batches, maxRatePerPartition 50,000 →
/// 960,000,000 records in one batch after a restart with backlog. Processing took 11 minutes
/// (≈1,454,545 records/s), over max.poll.interval.ms = 600,000. With the time budget the batch
/// fits.
#[test]
fn seed_003_backlog_of_64_partitions_at_600k_per_s_fits_the_600s_poll_budget() {
    let per_partition_rate = 50_000u64;
    let interval_s = 300u64;
    let measured_rate = 960_000_000.0 / 660.0;
    let partitions: Vec<PartitionInput> = (0..64)
        .map(|i| {
            // Hours of backlog: 600,000/64 msg/s for 4 hours, per partition.
            PartitionInput::new(
                tp("events", i),
                Some(Stored::at(0)),
                LogState::Found(LogView::new(0, 600_000 / 64 * 4 * 3_600)),
            )
        })
        .collect();
    let without_budget = PlanRequest {
        limits: Limits { max_per_partition: Some(per_partition_rate * interval_s), ..Limits::default() },
        partitions: partitions.clone(),
        ..PlanRequest::default()
    };
    let p = plan(&without_budget);
    assert_eq!(p.records, 960_000_000, "the seed's batch");
    let budget = TimeBudget::new(600_000, measured_rate, 0.8).unwrap();
    assert!(budget.expected_ms(p.records) > 600_000, "the seed's failure");

    let with_budget = PlanRequest {
        limits: Limits { time_budget: Some(budget), ..without_budget.limits },
        ..without_budget
    };
    let p = plan(&with_budget);
    assert!(budget.expected_ms(p.records) <= 600_000);
    assert_eq!(p.records, budget.max_records());
    assert_eq!(p.records, 698_181_818);
    // Shared evenly: equal backlogs, no partition starved.
    for e in &p.entries {
        let r = e.range().unwrap();
        assert!(r.records() >= 698_181_818 / 64);
        assert!(r.records() <= 698_181_818 / 64 + 1);
        assert_eq!(r.until_reason, UntilReason::BatchCap);
    }
}

/// Seed 004: a restart from a file of stored offsets. The post's loop kept only the last
/// partition; here every partition of the batch is exported and the restart resumes each one
/// exactly at its `until`.
#[test]
fn seed_004_restart_from_a_stored_file_resumes_every_partition() {
    use offset_engine::formats::{from_csv, to_csv};
    let views: Vec<LogView> = (0..3).map(|i| LogView::new(0, 1_000 + i * 100)).collect();
    let first = plan(&PlanRequest {
        limits: Limits { max_per_partition: Some(250), ..Limits::default() },
        partitions: (0..3)
            .map(|i| {
                PartitionInput::new(tp("logs", i), Some(Stored::at(100)), LogState::Found(views[i as usize]))
            })
            .collect(),
        ..PlanRequest::default()
    });
    let file = to_csv(&first.ending_offsets());
    assert_eq!(file, "logs,0,350\nlogs,1,350\nlogs,2,350\n");

    // Restart: read the file back, plan again.
    let restored = from_csv(&file).expect("file parses");
    assert_eq!(restored.len(), 3);
    let second = plan(&PlanRequest {
        isolation: Isolation::ReadUncommitted,
        partitions: restored
            .iter()
            .map(|(tp, offset)| {
                PartitionInput::new(
                    tp.clone(),
                    Some(Stored::at(offset.0)),
                    LogState::Found(views[tp.partition as usize]),
                )
            })
            .collect(),
        ..PlanRequest::default()
    });
    for (e, until) in second.entries.iter().zip(first.ending_offsets()) {
        assert_eq!(
            e.range().copied(),
            Some(PlannedRange {
                from: until.1,
                until: Offset(1_000 + i64::from(e.tp.partition) * 100),
                from_reason: FromReason::Stored,
                until_reason: UntilReason::End,
            })
        );
    }
}
