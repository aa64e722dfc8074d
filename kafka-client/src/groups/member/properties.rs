//! Properties of both machines under random coordinators: random answers (errors, member ids,
//! generations, epochs, assignments), lost connections, stray answers, time passing, and an
//! application that polls, finishes revocations, subscribes and closes when it likes.
//!
//! After every step a checker that sees only the events and the requests holds the machine
//! to the model of `model.rs`:
//! - events are consistent: `Assigned` only for partitions not owned and in the latest
//!   assignment the coordinator gave; `Revoking` only for owned ones not already being revoked;
//!   `Lost` only for owned ones; nothing after `Fatal` or `Left`; `PollIntervalExceeded` is
//!   followed by the `Lost` of everything owned;
//! - the machine's owned set is the one the events describe, and `commit_allowed` is `Ok`
//!   exactly for it (revoking ones included), with the right reason otherwise;
//! - no request reports as owned a partition that is not (after `revocation_done` or a loss):
//!   a classic JoinGroup's owned partitions, a KIP-848 heartbeat's owned set, which, when left
//!   out as unchanged, is indeed what the previous heartbeat said;
//! - it never gets stuck: `poll_timeout` is `Some` unless it is Left, Failed or waiting for the
//!   application to poll; while stable the next heartbeat is due within the interval;
//! - a close, with the application finishing its revocations and a coordinator answering,
//!   ends in `Left` (or `Failed`) within a bounded number of steps.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use kafka_vocab::{TopicPartition, Uuid};
use kafka_wire::protocol::ErrorCode;
use proptest::prelude::*;

use super::broker_assigned::{
    BrokerAssignedConfig, BrokerAssignedMember, BrokerAssignedRequest, ConsumerHeartbeatAnswer,
    TopicSubscription,
};
use super::classic::{
    ClassicConfig, ClassicMember, ClassicRequest, JoinGroupAnswer, RebalanceProtocol, SyncGroupAnswer,
};
use super::model::{
    CloseMode, GroupMemberSubscription, MemberEvent, MemberPhase, NotOwnedReason, Owned, Subscription,
};

/// t-0..3 and u-0..3: bit `i` of a mask is `UNIVERSE[i]`.
fn universe() -> Vec<TopicPartition> {
    ["t", "u"].iter().flat_map(|t| (0..4).map(move |p| TopicPartition::new(*t, p))).collect()
}

fn from_mask(mask: u8) -> Vec<TopicPartition> {
    universe().into_iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, tp)| tp).collect()
}

/// What the application (and the driver) may do between two looks at the machine.
#[derive(Debug, Clone)]
enum Step {
    /// Time passes.
    Wait(u64),
    /// The coordinator answers the request in flight; `pick` chooses the error (0: success
    /// mostly), `data` the answer's contents.
    Answer {
        pick: u8,
        data: u32,
    },
    /// The connection breaks.
    SendFailed,
    /// An answer of another request kind arrives.
    Stray(u8),
    /// The application asks for records.
    Poll,
    /// The application finishes these of the partitions being revoked.
    RevocationDone(u8),
    /// The leader's assignment (per member: a mask).
    LeaderAssign(u8, u8),
    Subscribe(u8),
    Rejoin,
    LearnNames(u8),
    /// The application closes (placed by the property, not drawn with the others: a close
    /// ends the interesting part of a run).
    Close(u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0u64..4_000).prop_map(Step::Wait),
        1 => (20_000u64..400_000).prop_map(Step::Wait),
        10 => (any::<u8>(), any::<u32>()).prop_map(|(pick, data)| Step::Answer { pick, data }),
        2 => Just(Step::SendFailed),
        1 => any::<u8>().prop_map(Step::Stray),
        5 => Just(Step::Poll),
        4 => any::<u8>().prop_map(Step::RevocationDone),
        2 => (any::<u8>(), any::<u8>()).prop_map(|(a, b)| Step::LeaderAssign(a, b)),
        1 => any::<u8>().prop_map(Step::Subscribe),
        1 => Just(Step::Rejoin),
        2 => any::<u8>().prop_map(Step::LearnNames),
    ]
}

fn close_mode(n: u8) -> CloseMode {
    match n % 3 {
        0 => CloseMode::Default,
        1 => CloseMode::LeaveGroup,
        _ => CloseMode::RemainInGroup,
    }
}

/// What the events say the member owns, and the rules they must keep.
#[derive(Debug, Default)]
struct Checker {
    owned: BTreeSet<TopicPartition>,
    revoking: BTreeSet<TopicPartition>,
    released: BTreeMap<TopicPartition, NotOwnedReason>,
    /// The latest assignment the coordinator gave (by name).
    assignment: BTreeSet<TopicPartition>,
    ended: bool,
    expect_lost_next: Option<BTreeSet<TopicPartition>>,
    /// KIP-848: nothing is assigned while a revocation is unfinished.
    revoke_before_assign: bool,
}

impl Checker {
    fn event(&mut self, e: &MemberEvent) {
        assert!(!self.ended, "an event after Fatal or Left: {e:?}");
        if let Some(all) = self.expect_lost_next.take() {
            assert_eq!(
                e,
                &MemberEvent::Lost(all.into_iter().collect()),
                "PollIntervalExceeded, then Lost(all)"
            );
        }
        match e {
            MemberEvent::Assigned(ps) => {
                assert!(!ps.is_empty());
                assert!(
                    !self.revoke_before_assign || self.revoking.is_empty(),
                    "Assigned {ps:?} before the revocation of {:?} is done",
                    self.revoking
                );
                for p in ps {
                    assert!(!self.owned.contains(p), "Assigned {p} while owned");
                    assert!(self.assignment.contains(p), "Assigned {p}, which the coordinator did not give");
                    self.owned.insert(p.clone());
                    self.released.remove(p);
                }
            }
            MemberEvent::Revoking(ps) => {
                assert!(!ps.is_empty());
                for p in ps {
                    assert!(self.owned.contains(p), "Revoking {p}, not owned");
                    assert!(self.revoking.insert(p.clone()), "Revoking {p} twice");
                }
            }
            MemberEvent::Lost(ps) => {
                assert!(!ps.is_empty());
                for p in ps {
                    assert!(self.owned.remove(p), "Lost {p}, not owned");
                    self.revoking.remove(p);
                    self.released.insert(p.clone(), NotOwnedReason::Lost(super::model::LostCause::Fatal));
                }
            }
            MemberEvent::PollIntervalExceeded { .. } => {
                if !self.owned.is_empty() {
                    self.expect_lost_next = Some(self.owned.clone());
                }
            }
            MemberEvent::Fatal(_) | MemberEvent::Left => self.ended = true,
            MemberEvent::AssignAsLeader { .. } | MemberEvent::NeedTopicNames(_) => {}
        }
    }

    fn revocation_done(&mut self, mask: u8) -> Vec<TopicPartition> {
        let pending: Vec<TopicPartition> = self.revoking.iter().cloned().collect();
        let done: Vec<TopicPartition> = pending
            .into_iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << (i % 8)) != 0)
            .map(|(_, p)| p)
            .collect();
        for p in &done {
            self.revoking.remove(p);
            self.owned.remove(p);
            self.released.insert(p.clone(), NotOwnedReason::Revoked);
        }
        done
    }

    /// The machine's view of ownership is the events' view.
    fn agrees(&self, owned: &Owned, allowed: impl Fn(&TopicPartition) -> Result<(), NotOwnedReason>) {
        assert!(self.expect_lost_next.is_none(), "PollIntervalExceeded without the Lost after it");
        assert_eq!(owned.partitions(), &self.owned);
        assert_eq!(owned.revoking(), &self.revoking);
        for p in universe().into_iter().chain([TopicPartition::new("a", 0), TopicPartition::new("b", 1)]) {
            match (allowed(&p), self.owned.contains(&p)) {
                (Ok(()), true) => {}
                (Ok(()), false) => panic!("a commit for {p} is allowed, but it is not owned"),
                (Err(why), true) => panic!("a commit for owned {p} is refused: {why:?}"),
                (Err(why), false) => match (why, self.released.get(&p)) {
                    (NotOwnedReason::Revoked, Some(NotOwnedReason::Revoked))
                    | (NotOwnedReason::Lost(_), Some(NotOwnedReason::Lost(_)))
                    | (NotOwnedReason::NeverAssigned, None) => {}
                    (why, was) => panic!("{p} refused as {why:?}, but its history says {was:?}"),
                },
            }
        }
    }
}

fn live(phase: MemberPhase, timeout: Option<Instant>) {
    assert!(
        timeout.is_some()
            || matches!(phase, MemberPhase::Left | MemberPhase::Failed | MemberPhase::WaitingForPoll),
        "stuck: no timer in {phase:?}"
    );
}

// ---- the classic machine ----

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Out {
    Find,
    Join,
    Sync,
    Heartbeat,
    Leave,
}

struct ClassicRun {
    m: ClassicMember,
    now: Instant,
    out: Option<Out>,
    out_deadline: Instant,
    check: Checker,
    eager: bool,
    interval: Duration,
    closed: bool,
}

impl ClassicRun {
    fn new(static_member: bool, cooperative: bool) -> Self {
        let mut config = ClassicConfig::new(
            vec!["range".into(), "roundrobin".into()],
            if cooperative { RebalanceProtocol::Cooperative } else { RebalanceProtocol::Eager },
        );
        config.instance_id = static_member.then(|| "instance-1".to_owned());
        config.max_poll_interval = Duration::from_secs(60);
        let interval = config.heartbeat_interval;
        let now = Instant::now();
        ClassicRun {
            m: ClassicMember::new(config, vec!["t".into(), "u".into()], now),
            now,
            out: None,
            out_deadline: now,
            check: Checker::default(),
            eager: !cooperative,
            interval,
            closed: false,
        }
    }

    /// Drains the events, then looks at the machine.
    fn settle(&mut self) {
        while let Some(e) = self.m.poll_event() {
            self.check.event(&e);
        }
        self.check.agrees(self.m.owned(), |p| self.m.commit_allowed(p).map(|_| ()).map_err(|e| e.reason));
        let phase = self.m.phase();
        live(phase, self.m.poll_timeout());
        if self.check.ended {
            assert!(matches!(phase, MemberPhase::Left | MemberPhase::Failed), "{phase:?} after the end");
            assert_eq!(self.m.poll_timeout(), None);
        }
        if matches!(phase, MemberPhase::Stable | MemberPhase::Rebalancing) && self.out.is_none() {
            let due = self.m.poll_timeout().expect("members heartbeat");
            assert!(
                due <= self.now + self.interval,
                "nothing due within the heartbeat interval in {phase:?}"
            );
        }
    }

    /// The driver's turn: it calls `poll_request` on every wake-up; a request given while
    /// another is in flight replaces it (the machine abandoned that one).
    fn drive(&mut self) {
        let Some(request) = self.m.poll_request(self.now) else {
            if self.out.is_some() && self.now >= self.out_deadline {
                // The machine counted it failed at its deadline: a later answer is stray.
                self.out = None;
            }
            self.settle();
            return;
        };
        assert!(!self.check.ended, "a request after the end: {request:?}");
        let wait = if matches!(request, ClassicRequest::JoinGroup(_)) { 65 } else { 30 };
        self.out_deadline = self.now + Duration::from_secs(wait);
        self.out = Some(match request {
            ClassicRequest::FindCoordinator => Out::Find,
            ClassicRequest::JoinGroup(j) => {
                assert!(!self.closed, "a JoinGroup while closing");
                for (_, s) in &j.protocols {
                    let owned: BTreeSet<TopicPartition> = s.owned_partitions.iter().cloned().collect();
                    assert_eq!(owned, self.check.owned, "JoinGroup reports what is owned, and only that");
                    if self.eager {
                        assert!(owned.is_empty(), "eager: everything is revoked before a JoinGroup");
                    }
                }
                Out::Join
            }
            ClassicRequest::SyncGroup(_) => Out::Sync,
            ClassicRequest::Heartbeat(_) => Out::Heartbeat,
            ClassicRequest::LeaveGroup(_) => Out::Leave,
        });
        self.settle();
    }

    fn answer(&mut self, pick: u8, data: u32) {
        let Some(out) = self.out.take() else { return };
        let member_id = format!("m-{}", data % 3);
        match out {
            Out::Find if pick % 5 == 4 => self.m.handle_send_failed(self.now),
            Out::Find => self.m.coordinator_found(self.now),
            Out::Join => {
                let error = pick_error(
                    pick,
                    &[
                        ErrorCode::MEMBER_ID_REQUIRED,
                        ErrorCode::UNKNOWN_MEMBER_ID,
                        ErrorCode::ILLEGAL_GENERATION,
                        ErrorCode::NOT_COORDINATOR,
                        ErrorCode::COORDINATOR_NOT_AVAILABLE,
                        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
                        ErrorCode::REBALANCE_IN_PROGRESS,
                    ],
                    &[ErrorCode::FENCED_INSTANCE_ID, ErrorCode::GROUP_MAX_SIZE_REACHED, ErrorCode(-7)],
                );
                let leader = if data & 8 != 0 { member_id.clone() } else { "other".to_owned() };
                let members = vec![
                    GroupMemberSubscription {
                        member_id: member_id.clone(),
                        instance_id: None,
                        subscription: Ok(Subscription {
                            topics: vec!["t".into()],
                            ..Subscription::default()
                        }),
                    },
                    GroupMemberSubscription {
                        member_id: "other".into(),
                        instance_id: None,
                        subscription: Err("did not decode".into()),
                    },
                ];
                let protocol = match data % 211 {
                    0 => None,
                    1 => Some("sticky".to_owned()),
                    2..=40 => Some("roundrobin".to_owned()),
                    _ => Some("range".to_owned()),
                };
                let answer = JoinGroupAnswer {
                    error,
                    generation: if data.is_multiple_of(223) { -1 } else { (data % 50) as i32 + 1 },
                    protocol_name: protocol,
                    leader,
                    member_id,
                    skip_assignment: data & 16 != 0,
                    members,
                };
                self.m.handle_join(self.now, answer);
            }
            Out::Sync => {
                let error = pick_error(
                    pick,
                    &[
                        ErrorCode::REBALANCE_IN_PROGRESS,
                        ErrorCode::UNKNOWN_MEMBER_ID,
                        ErrorCode::ILLEGAL_GENERATION,
                        ErrorCode::NOT_COORDINATOR,
                        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
                    ],
                    &[ErrorCode::FENCED_INSTANCE_ID, ErrorCode(-3)],
                );
                let assigned = from_mask((data >> 8) as u8);
                if error == ErrorCode::NONE {
                    self.check.assignment = assigned.iter().cloned().collect();
                }
                let assignment =
                    if data.is_multiple_of(227) { Err("short".to_owned()) } else { Ok(assigned) };
                let protocol_name = (data.is_multiple_of(229)).then(|| "sticky".to_owned());
                self.m.handle_sync(self.now, SyncGroupAnswer { error, protocol_name, assignment });
                self.settle();
                if error == ErrorCode::NONE && self.m.phase() != MemberPhase::Failed {
                    // Whatever the new assignment leaves out is being revoked.
                    for p in self.check.owned.difference(&self.check.assignment) {
                        assert!(self.check.revoking.contains(p), "{p} is owned, not assigned, not revoked");
                    }
                }
            }
            Out::Heartbeat => {
                let error = pick_error(
                    pick,
                    &[
                        ErrorCode::REBALANCE_IN_PROGRESS,
                        ErrorCode::REBALANCE_IN_PROGRESS,
                        ErrorCode::ILLEGAL_GENERATION,
                        ErrorCode::UNKNOWN_MEMBER_ID,
                        ErrorCode::NOT_COORDINATOR,
                        ErrorCode::COORDINATOR_NOT_AVAILABLE,
                        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
                        ErrorCode(-11),
                    ],
                    &[ErrorCode::FENCED_INSTANCE_ID, ErrorCode::GROUP_AUTHORIZATION_FAILED],
                );
                self.m.handle_heartbeat(self.now, error);
            }
            Out::Leave => self.m.handle_leave(self.now, ErrorCode(i16::from(pick % 3))),
        }
    }

    fn stray(&mut self, n: u8) {
        match n % 5 {
            0 => self.m.coordinator_found(self.now),
            1 => self.m.handle_join(
                self.now,
                JoinGroupAnswer {
                    error: ErrorCode::NONE,
                    generation: 99,
                    protocol_name: Some("range".into()),
                    leader: "x".into(),
                    member_id: "x".into(),
                    skip_assignment: false,
                    members: vec![],
                },
            ),
            2 => self.m.handle_sync(
                self.now,
                SyncGroupAnswer { error: ErrorCode::NONE, protocol_name: None, assignment: Ok(universe()) },
            ),
            3 => self.m.handle_heartbeat(self.now, ErrorCode::UNKNOWN_MEMBER_ID),
            _ => self.m.handle_leave(self.now, ErrorCode::NONE),
        }
    }

    /// A stray answer counts only if nothing of its kind is in flight.
    fn stray_allowed(&self, n: u8) -> bool {
        let kind = match n % 5 {
            0 => Out::Find,
            1 => Out::Join,
            2 => Out::Sync,
            3 => Out::Heartbeat,
            _ => Out::Leave,
        };
        self.out != Some(kind)
    }

    fn apply(&mut self, step: &Step) {
        self.drive();
        match *step {
            Step::Wait(ms) => self.now += Duration::from_millis(ms),
            Step::Answer { pick, data } => self.answer(pick, data),
            Step::SendFailed => {
                if self.out.take().is_some() {
                    self.m.handle_send_failed(self.now);
                }
            }
            Step::Stray(n) => {
                if self.stray_allowed(n) {
                    let before = self.m.owned().partitions().clone();
                    self.stray(n);
                    assert_eq!(self.m.owned().partitions(), &before, "a stray answer changed ownership");
                    assert!(self.m.poll_event().is_none(), "a stray answer made an event");
                }
            }
            Step::Poll => self.m.application_polled(self.now),
            Step::RevocationDone(mask) => {
                let done = self.check.revocation_done(mask);
                self.m.revocation_done(&done);
            }
            Step::LeaderAssign(a, b) => {
                let assignment = BTreeMap::from([
                    ("m-0".to_owned(), from_mask(a)),
                    ("m-1".to_owned(), from_mask(b)),
                    ("m-2".to_owned(), vec![]),
                ]);
                self.m.leader_assignment(assignment);
            }
            Step::Subscribe(mask) => {
                let topics = [("t", 1), ("u", 2)]
                    .iter()
                    .filter(|(_, bit)| mask & bit != 0)
                    .map(|(t, _)| (*t).to_owned());
                self.m.subscribe(topics.collect());
            }
            Step::Rejoin => self.m.request_rejoin("metadata changed"),
            Step::LearnNames(_) => {}
            Step::Close(mode) => {
                self.closed = true;
                self.m.close(self.now, close_mode(mode));
            }
        }
        // A request the machine counted failed on its own (its deadline) is no longer in flight.
        self.settle();
        self.drive();
    }

    /// Close, answer everything, finish every revocation: the member must reach the end.
    fn close_to_the_end(&mut self) {
        self.closed = true;
        self.m.close(self.now, CloseMode::Default);
        self.settle();
        for _ in 0..40 {
            if self.check.ended {
                return;
            }
            let done = self.check.revocation_done(0xff);
            self.m.revocation_done(&done);
            // A leader finishing its round before it revokes (a cooperative member closing
            // mid-rebalance) is owed its assignment, as the member task gives it.
            self.m.leader_assignment(BTreeMap::new());
            self.settle();
            self.drive();
            if self.out.is_some() {
                self.answer(0, 0);
            } else if let Some(at) = self.m.poll_timeout() {
                self.now = self.now.max(at);
            }
            self.settle();
        }
        panic!("close did not end: {:?}", self.m.phase());
    }
}

// ---- the KIP-848 machine ----

const IDS: [Uuid; 4] = [Uuid([1; 16]), Uuid([2; 16]), Uuid([3; 16]), Uuid([4; 16])];

/// The names the coordinator's topic ids have: the fourth is "a" recreated under a new id.
fn name_of(id: Uuid) -> &'static str {
    match id.0[0] {
        2 => "b",
        3 => "c",
        _ => "a",
    }
}

struct Kip848Run {
    m: BrokerAssignedMember,
    now: Instant,
    out: Option<bool>,
    out_deadline: Instant,
    check: Checker,
    interval: Duration,
    /// The owned set (by name) the last non-leave heartbeat reported.
    reported: Option<BTreeSet<TopicPartition>>,
    learned: BTreeSet<Uuid>,
    target: BTreeMap<Uuid, BTreeSet<i32>>,
    backoff_max: Duration,
    closed: bool,
}

impl Kip848Run {
    fn new(static_member: bool, pattern: bool) -> Self {
        let mut config = BrokerAssignedConfig::new("member-1".into());
        config.instance_id = static_member.then(|| "instance-1".to_owned());
        config.max_poll_interval = Duration::from_secs(60);
        let backoff_max = config.retry_backoff_max;
        let subscription = if pattern {
            TopicSubscription::Pattern("a|b|c".into())
        } else {
            TopicSubscription::Topics(vec!["a".into(), "b".into(), "c".into()])
        };
        let now = Instant::now();
        Kip848Run {
            m: BrokerAssignedMember::new(config, subscription, now),
            now,
            out: None,
            out_deadline: now,
            check: Checker { revoke_before_assign: true, ..Checker::default() },
            interval: Duration::from_secs(5),
            reported: None,
            learned: BTreeSet::new(),
            target: BTreeMap::new(),
            backoff_max,
            closed: false,
        }
    }

    fn resolved_target(&self) -> BTreeSet<TopicPartition> {
        self.target
            .iter()
            .filter(|(id, _)| self.learned.contains(*id))
            .flat_map(|(id, ps)| ps.iter().map(|p| TopicPartition::new(name_of(*id), *p)))
            .collect()
    }

    fn settle(&mut self) {
        while let Some(e) = self.m.poll_event() {
            if let MemberEvent::PollIntervalExceeded { .. } = e {
                self.target.clear();
            }
            self.check.assignment = self.resolved_target();
            self.check.event(&e);
        }
        self.check.agrees(self.m.owned(), |p| self.m.commit_allowed(p).map(|_| ()).map_err(|e| e.reason));
        let phase = self.m.phase();
        live(phase, self.m.poll_timeout());
        if self.check.ended {
            assert!(matches!(phase, MemberPhase::Left | MemberPhase::Failed), "{phase:?} after the end");
            assert_eq!(self.m.poll_timeout(), None);
        }
        if matches!(phase, MemberPhase::Stable | MemberPhase::Rebalancing) && self.out.is_none() {
            let due = self.m.poll_timeout().expect("members heartbeat");
            assert!(
                due <= self.now + self.interval.max(self.backoff_max),
                "nothing due within the heartbeat interval in {phase:?}"
            );
        }
    }

    fn drive(&mut self) {
        let Some(request) = self.m.poll_request(self.now) else {
            if self.out.is_some() && self.now >= self.out_deadline {
                self.out = None;
            }
            self.settle();
            return;
        };
        assert!(!self.check.ended, "a request after the end: {request:?}");
        self.out_deadline = self.now + Duration::from_secs(30);
        self.out = Some(match request {
            BrokerAssignedRequest::FindCoordinator => false,
            BrokerAssignedRequest::Heartbeat(h) => {
                assert_eq!(h.member_id, "member-1", "the member id is the client's for life");
                if !h.is_leave() {
                    if h.member_epoch == 0 {
                        assert!(h.rebalance_timeout.is_some() && h.subscribed_topic_names.is_some());
                        assert!(h.owned.is_some(), "the join heartbeat says what is owned");
                    }
                    let owned: BTreeSet<TopicPartition> = match &h.owned {
                        Some(owned) => owned
                            .iter()
                            .flat_map(|(id, ps)| ps.iter().map(|p| TopicPartition::new(name_of(*id), *p)))
                            .collect(),
                        None => self.reported.clone().expect("\"unchanged\" needs a heartbeat before"),
                    };
                    assert_eq!(owned, self.check.owned, "the heartbeat reports what is owned, and only that");
                    self.reported = Some(owned);
                }
                true
            }
        });
        self.settle();
    }

    fn answer(&mut self, pick: u8, data: u32) {
        let Some(heartbeat) = self.out.take() else { return };
        if !heartbeat {
            if pick % 5 == 4 {
                self.m.handle_send_failed(self.now);
            } else {
                self.m.coordinator_found(self.now);
            }
            return;
        }
        let error = pick_error(
            pick,
            &[
                ErrorCode::NOT_COORDINATOR,
                ErrorCode::COORDINATOR_NOT_AVAILABLE,
                ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
                ErrorCode::FENCED_MEMBER_EPOCH,
                ErrorCode::UNKNOWN_MEMBER_ID,
            ],
            &[ErrorCode::UNRELEASED_INSTANCE_ID, ErrorCode::UNSUPPORTED_VERSION, ErrorCode(-5)],
        );
        if matches!(error, ErrorCode::FENCED_MEMBER_EPOCH | ErrorCode::UNKNOWN_MEMBER_ID) {
            self.target.clear();
        }
        let assignment = (data & 1 != 0).then(|| {
            IDS.iter()
                .enumerate()
                .map(|(i, id)| {
                    (*id, (0..3).filter(|p| data & (1 << (2 + i * 3 + *p as usize)) != 0).collect())
                })
                .collect::<Vec<(Uuid, Vec<i32>)>>()
        });
        if error == ErrorCode::NONE {
            if let Some(a) = &assignment {
                self.target = a.iter().map(|(id, ps)| (*id, ps.iter().copied().collect())).collect();
                self.target.retain(|_, ps: &mut BTreeSet<i32>| !ps.is_empty());
            }
            let ms = u64::from(data >> 16) % 6_000;
            self.interval = if ms == 0 { Duration::from_millis(100) } else { Duration::from_millis(ms) };
        }
        let reconciling = error == ErrorCode::NONE
            && assignment.is_some()
            && !self.closed
            && self.check.revoking.is_empty()
            && matches!(
                self.m.phase(),
                MemberPhase::Joining | MemberPhase::Stable | MemberPhase::Rebalancing
            );
        let answer = ConsumerHeartbeatAnswer {
            error,
            member_id: (data & 2 != 0).then(String::new),
            member_epoch: if data.is_multiple_of(233) { 0 } else { (data % 40) as i32 + 1 },
            heartbeat_interval: self.interval,
            assignment,
        };
        self.m.handle_heartbeat(self.now, answer);
        self.settle();
        if reconciling && self.m.phase() != MemberPhase::Failed {
            // A new target starts revoking whatever it leaves out (nothing else was pending).
            let target = self.resolved_target();
            for p in self.check.owned.difference(&target) {
                assert!(self.check.revoking.contains(p), "{p} is owned, not in the target, not revoked");
            }
        }
    }

    fn apply(&mut self, step: &Step) {
        self.drive();
        match *step {
            Step::Wait(ms) => self.now += Duration::from_millis(ms),
            Step::Answer { pick, data } => self.answer(pick, data),
            Step::SendFailed => {
                if self.out.take().is_some() {
                    self.m.handle_send_failed(self.now);
                }
            }
            Step::Stray(n) => {
                if self.out.is_none() {
                    let before = self.m.owned().partitions().clone();
                    if n % 2 == 0 {
                        self.m.coordinator_found(self.now);
                    } else {
                        let answer = ConsumerHeartbeatAnswer {
                            error: ErrorCode::FENCED_MEMBER_EPOCH,
                            member_id: None,
                            member_epoch: 0,
                            heartbeat_interval: Duration::ZERO,
                            assignment: None,
                        };
                        self.m.handle_heartbeat(self.now, answer);
                    }
                    assert_eq!(self.m.owned().partitions(), &before, "a stray answer changed ownership");
                    assert!(self.m.poll_event().is_none(), "a stray answer made an event");
                }
            }
            Step::Poll => self.m.application_polled(self.now),
            Step::RevocationDone(mask) => {
                let done = self.check.revocation_done(mask);
                self.m.revocation_done(&done);
            }
            Step::LeaderAssign(..) | Step::Rejoin => {}
            Step::Subscribe(mask) => self.m.subscribe(match mask % 3 {
                0 => TopicSubscription::Pattern("a|b".into()),
                1 => TopicSubscription::Topics(vec!["a".into(), "b".into()]),
                _ => TopicSubscription::Topics(vec!["c".into()]),
            }),
            Step::LearnNames(mask) => {
                let names: Vec<(Uuid, String)> = IDS
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| mask & (1 << i) != 0)
                    .map(|(_, id)| (*id, name_of(*id).to_owned()))
                    .collect();
                self.learned.extend(names.iter().map(|(id, _)| *id));
                self.check.assignment = self.resolved_target();
                self.m.learn_topic_names(names);
            }
            Step::Close(mode) => {
                self.closed = true;
                self.m.close(self.now, close_mode(mode));
            }
        }
        self.settle();
        self.drive();
    }

    fn close_to_the_end(&mut self) {
        self.closed = true;
        self.m.close(self.now, CloseMode::Default);
        self.settle();
        for _ in 0..40 {
            if self.check.ended {
                return;
            }
            let done = self.check.revocation_done(0xff);
            self.m.revocation_done(&done);
            self.settle();
            self.drive();
            if self.out.is_some() {
                self.answer(0, 1);
            } else if let Some(at) = self.m.poll_timeout() {
                self.now = self.now.max(at);
            }
            self.settle();
        }
        panic!("close did not end: {:?}", self.m.phase());
    }
}

/// Success for most `pick`s, one of `retriable` for some, one of `fatal` for a few.
fn pick_error(pick: u8, retriable: &[ErrorCode], fatal: &[ErrorCode]) -> ErrorCode {
    match pick {
        0..=199 => ErrorCode::NONE,
        200..=249 => retriable[pick as usize % retriable.len()],
        _ => fatal[pick as usize % fatal.len()],
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn the_classic_member_keeps_the_model_under_any_coordinator(
        static_member in any::<bool>(),
        cooperative in any::<bool>(),
        steps in prop::collection::vec(step(), 1..250),
        close_at in prop::option::weighted(0.3, 0usize..250),
        close_mode in any::<u8>(),
    ) {
        let mut run = ClassicRun::new(static_member, cooperative);
        run.settle();
        for (i, s) in steps.iter().enumerate() {
            if close_at == Some(i) {
                run.apply(&Step::Close(close_mode));
            }
            run.apply(s);
        }
        run.close_to_the_end();
    }

    #[test]
    fn the_kip848_member_keeps_the_model_under_any_coordinator(
        static_member in any::<bool>(),
        pattern in any::<bool>(),
        steps in prop::collection::vec(step(), 1..250),
        close_at in prop::option::weighted(0.3, 0usize..250),
        close_mode in any::<u8>(),
    ) {
        let mut run = Kip848Run::new(static_member, pattern);
        run.settle();
        for (i, s) in steps.iter().enumerate() {
            if close_at == Some(i) {
                run.apply(&Step::Close(close_mode));
            }
            run.apply(s);
        }
        run.close_to_the_end();
    }
}
