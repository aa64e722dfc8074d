//! Issue 33: a topic recreated where no topic id is known. The new log's leader epoch is below
//! the stored one while the stored offset is inside the new log; the plan used to resume at the
//! stored offset with no anomaly, and `merge_commit` refused its commit as "leader epoch
//! backwards" — the same records re-read every batch.

use offset_engine::{
    commits_for, merge_commit, plan, Anomaly, AnomalyKind, CommitDecision, FromReason, LeaderEpoch, LogState,
    LogView, Offset, OutOfRangePolicy, Outcome, PartitionInput, Plan, PlanRequest, Stored, TopicId,
    TopicPartition,
};

fn tp() -> TopicPartition {
    TopicPartition::new("t", 0)
}

/// Stored 5 at epoch 2 (and the id given); the log `[0, end)` at `epoch` with the id given.
fn input(stored_id: Option<TopicId>, end: i64, epoch: i32, log_id: Option<TopicId>) -> PartitionInput {
    let stored = Stored { leader_epoch: Some(LeaderEpoch(2)), topic_id: stored_id, ..Stored::at(5) };
    let mut view = LogView::new(0, end);
    view.leader_epoch = Some(LeaderEpoch(epoch));
    view.topic_id = log_id;
    PartitionInput::new(tp(), Some(stored), LogState::Found(view))
}

fn plan_one(input: PartitionInput, policy: OutOfRangePolicy) -> Plan {
    plan(&PlanRequest { out_of_range: policy, partitions: vec![input], ..PlanRequest::default() })
}

/// Merges the plan's commits into `stored`; every one must be accepted.
fn commit(plan: &Plan, stored: Option<Stored>) -> Option<Stored> {
    let mut stored = stored;
    for c in commits_for(plan) {
        match merge_commit(stored.as_ref(), &c, 1) {
            CommitDecision::Write(s) => stored = Some(s),
            CommitDecision::Unchanged => {}
            CommitDecision::Rejected(r) => panic!("the plan's own commit {c:?} was refused: {r}"),
        }
    }
    stored
}

/// The anomaly of the reproduction, with the numbers of the range planned.
fn expected(skipped: u64, reread: u64) -> Anomaly {
    Anomaly::LeaderEpochBackwards {
        stored: Offset(5),
        stored_leader_epoch: LeaderEpoch(2),
        leader_epoch: LeaderEpoch(0),
        log_start: Offset(0),
        end: Offset(18),
        skipped,
        reread,
    }
}

#[test]
fn the_reproduction_is_named_and_the_second_plan_moves_on() {
    let first = input(None, 18, 0, None);
    let p = plan_one(first.clone(), OutOfRangePolicy::Clamp);
    let e = &p.entries[0];
    assert_eq!(e.anomaly.as_deref(), Some(&expected(0, 5)), "{e:?}");
    let r = e.range().expect("clamp plans a range");
    assert_eq!(
        (r.from, r.until, r.from_reason),
        (Offset(0), Offset(18), FromReason::OutOfRange(OutOfRangePolicy::Clamp))
    );
    assert_eq!(e.leader_epoch, Some(LeaderEpoch(0)), "the new log's epoch is committed");
    assert!(commits_for(&p)[0].reset, "a recreation's commit is a reset");
    let stored = commit(&p, first.stored).expect("written");
    assert_eq!((stored.offset, stored.leader_epoch), (Offset(18), Some(LeaderEpoch(0))));

    // The log grew to 20: the second plan goes on from 18, not from 5 again.
    let mut second = input(None, 20, 0, None);
    second.stored = Some(stored);
    let p = plan_one(second, OutOfRangePolicy::Clamp);
    let r = p.entries[0].range().expect("a range");
    assert_eq!((r.from, r.until, r.from_reason), (Offset(18), Offset(20), FromReason::Stored));
    assert_eq!(p.entries[0].anomaly, None);
    commit(&p, Some(stored));
}

#[test]
fn under_the_default_policy_the_plan_fails_with_the_numbers() {
    let p = plan_one(input(None, 18, 0, None), OutOfRangePolicy::Fail);
    let e = &p.entries[0];
    assert_eq!(e.outcome, Outcome::Failed { kind: AnomalyKind::LeaderEpochBackwards });
    let a = e.anomaly.as_deref().copied().expect("named");
    assert_eq!(a, expected(0, 0), "nothing planned, nothing re-read");
    let text = a.to_string();
    assert!(text.contains("leader epoch went from 2 to 0") && text.contains("[0, 18)"), "{text}");
    assert_eq!(a.kind().as_str(), "leader_epoch_backwards");
    assert!(commits_for(&p).is_empty());
}

#[test]
fn the_epoch_lookup_answering_minus_one_changes_nothing() {
    // OffsetForLeaderEpoch for an epoch above the log's answers -1 (no evidence), as Kafka does.
    let mut i = input(None, 18, 0, None);
    i.end_offset_for_stored_epoch = Some(Offset(-1));
    let p = plan_one(i.clone(), OutOfRangePolicy::Clamp);
    assert_eq!(p.entries[0].anomaly.as_deref(), Some(&expected(0, 5)));
    commit(&p, i.stored);
}

#[test]
fn one_id_missing_is_no_proof_of_the_same_log() {
    // Kafka's group store keeps no id while the broker reports one; or the reverse.
    for (stored_id, log_id) in [(None, Some(TopicId([9; 16]))), (Some(TopicId([9; 16])), None)] {
        let i = input(stored_id, 18, 0, log_id);
        let p = plan_one(i.clone(), OutOfRangePolicy::Earliest);
        assert_eq!(
            p.entries[0].anomaly.as_deref().map(Anomaly::kind),
            Some(AnomalyKind::LeaderEpochBackwards)
        );
        commit(&p, i.stored);
    }
}

#[test]
fn latest_counts_the_whole_new_log_as_skipped() {
    let p = plan_one(input(None, 18, 0, None), OutOfRangePolicy::Latest);
    let a = p.entries[0].anomaly.as_deref().copied().expect("named");
    assert_eq!((a.skipped(), p.entries[0].range().map(|r| r.from)), (18, Some(Offset(18))));
    assert_eq!(a, expected(18, 0));
}

#[test]
fn with_the_same_id_known_a_lower_epoch_is_a_stale_answer_and_its_commit_is_accepted() {
    // Ids prove it is the same log: resume at the stored offset, nothing skipped or re-read, and
    // commit no epoch rather than the stale one (refused) or the stored one (maybe older than
    // the records read, a false truncation later).
    let id = Some(TopicId([3; 16]));
    let i = input(id, 18, 1, id);
    let p = plan_one(i.clone(), OutOfRangePolicy::Fail);
    let e = &p.entries[0];
    assert_eq!(e.anomaly, None, "{e:?}");
    let r = e.range().expect("a range");
    assert_eq!((r.from, r.until, r.from_reason), (Offset(5), Offset(18), FromReason::Stored));
    assert_eq!(e.leader_epoch, None);
    let stored = commit(&p, i.stored).expect("written");
    assert_eq!((stored.offset, stored.leader_epoch, stored.topic_id), (Offset(18), None, id));
}

#[test]
fn an_epoch_at_or_above_the_stored_one_is_no_evidence() {
    for epoch in [2, 3] {
        let i = input(None, 18, epoch, None);
        let p = plan_one(i.clone(), OutOfRangePolicy::Fail);
        assert_eq!(p.entries[0].anomaly, None);
        assert_eq!(p.entries[0].range().map(|r| r.from), Some(Offset(5)));
        commit(&p, i.stored);
    }
    // Unknown on either side (-1 from the wire, or none stored) is never compared.
    let mut i = input(None, 18, -1, None);
    let p = plan_one(i.clone(), OutOfRangePolicy::Fail);
    assert_eq!(p.entries[0].anomaly, None);
    i.stored = i.stored.map(|s| Stored { leader_epoch: Some(LeaderEpoch(-1)), ..s });
    assert_eq!(plan_one(i, OutOfRangePolicy::Fail).entries[0].anomaly, None);
}
