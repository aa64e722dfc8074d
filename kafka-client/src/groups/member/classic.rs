//! The classic group protocol's member (JoinGroup / SyncGroup / Heartbeat / LeaveGroup, the
//! leader assigning with a client-side assignor): no socket, no clock, only what was sent, what
//! the coordinator answered, and what the application did.
//!
//! ```text
//!                ┌──────────── FindCoordinator whenever the coordinator is unknown ──────────┐
//!                ▼                                                                            │
//!   Unjoined ──JoinGroup──► Joining ──MEMBER_ID_REQUIRED (KIP-394): rejoin with that id──┐    │
//!      ▲                      │  │                                                       │    │
//!      │                      │  └─ leader: AssignAsLeader ─► Assigning ─leader_assignment┐   │
//!      │                      └──── follower: ─────────────────────────────────────► Syncing │
//!      │                                                                    SyncGroup │       │
//!      │   ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID: Lost                                ▼       │
//!      └───────────────────────────────────────────────────────────────────────── Stable ─────┘
//!                                                                     heartbeats │  ▲
//!   a rejoin (REBALANCE_IN_PROGRESS, subscription change, cooperative second     │  │
//!   round): eager revokes everything first, cooperative revokes only topics no   └──┘
//!   longer subscribed, then JoinGroup with what it still owns (KIP-429)
//!
//!   close ─► revoke all ─► LeaveGroup (dynamic; static only when asked, KIP-345) ─► Left
//!   poll interval exceeded ─► PollIntervalExceeded, Lost ─► LeaveGroup (dynamic) ─►
//!       WaitingForPoll ─application_polled─► Unjoined
//! ```
//!
//! Behaviour follows Java's `AbstractCoordinator` / `ConsumerCoordinator`:
//! - JoinGroup: MEMBER_ID_REQUIRED and UNKNOWN_MEMBER_ID rejoin at once (the latter with no
//!   member id); COORDINATOR_LOAD_IN_PROGRESS and REBALANCE_IN_PROGRESS retry after a backoff;
//!   NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE find the coordinator again, then rejoin;
//!   FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL, INVALID_SESSION_TIMEOUT, INVALID_GROUP_ID,
//!   GROUP_AUTHORIZATION_FAILED, GROUP_MAX_SIZE_REACHED and UNSUPPORTED_VERSION are fatal.
//! - SyncGroup: REBALANCE_IN_PROGRESS rejoins; UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION lose the
//!   partitions and rejoin (ILLEGAL_GENERATION keeps the member id, which may still be valid);
//!   a coordinator error or a lost connection rejoins after finding it (Java's join loop sends
//!   a new JoinGroup after any failed SyncGroup); a protocol name other than the one joined
//!   with is INCONSISTENT_GROUP_PROTOCOL.
//! - Heartbeat: REBALANCE_IN_PROGRESS while stable rejoins (and ignored while the rebalance is
//!   already under way); ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID lose the partitions and rejoin;
//!   FENCED_INSTANCE_ID and GROUP_AUTHORIZATION_FAILED are fatal; any other error retries after
//!   a backoff (Java's heartbeat thread `failHeartbeat`).
//! - The session: with no successful answer for `session.timeout.ms` the member suspects the
//!   coordinator, not its generation (Java's heartbeat thread, `markCoordinatorUnknown`): it
//!   finds the coordinator again and heartbeats in the generation it holds, and the coordinator's
//!   answer decides. A coordinator that moved (a broker restart) loads the group with every
//!   member's session started afresh and answers NONE; one that expired the member answers
//!   UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION, and only then are the partitions lost. (librdkafka
//!   counts them lost on its own clock; across a coordinator restart slower than the session
//!   timeout that re-delivered, to the same member, what it had handed out since its last commit.)
//! - `max.poll.interval.ms`: the rebalance timeout is the poll interval (Java); past it the
//!   member leaves with the reason "consumer poll timeout has expired." (KIP-800), a dynamic
//!   one with a LeaveGroup, a static one without (Java's `maybeLeaveGroup` sends none for
//!   static members: their expiry is the session timeout's).
//! - A JoinGroup may be held by the coordinator for the whole rebalance timeout: its answer is
//!   awaited up to max(`request.timeout.ms`, rebalance timeout + 5 s), as Java's
//!   `joinGroupTimeoutMs`; every other request up to `request.timeout.ms`. Past that the machine
//!   counts the request as failed even if the driver did not say so.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use kafka_vocab::TopicPartition;
use kafka_wire::protocol::ErrorCode;

use super::model::{
    CloseMode, CommitIdentity, GroupMemberSubscription, LostCause, MemberError, MemberEvent, MemberPhase,
    NotOwned, Owned, Subscription,
};
use super::timing::{after, Backoff, PollTimer};

/// The reason a LeaveGroup after the poll interval carries (Java's, KIP-800).
pub(crate) const POLL_TIMEOUT_REASON: &str = "consumer poll timeout has expired.";
/// The reason a LeaveGroup on close carries (Java's).
pub(crate) const CLOSE_REASON: &str = "the consumer is being closed";
/// Java's `JOIN_GROUP_TIMEOUT_LAPSE`: how much longer than the rebalance timeout a JoinGroup
/// answer is awaited.
const JOIN_ANSWER_LAPSE: Duration = Duration::from_secs(5);

pub(crate) use crate::groups::assignors::RebalanceProtocol;

/// A classic member's settings (consumer config names in the docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClassicConfig {
    /// `group.instance.id`: a static member (KIP-345).
    pub(crate) instance_id: Option<String>,
    /// The assignors offered, in preference order (`partition.assignment.strategy`'s names).
    pub(crate) assignors: Vec<String>,
    /// Eager or cooperative.
    pub(crate) rebalance: RebalanceProtocol,
    /// `session.timeout.ms`.
    pub(crate) session_timeout: Duration,
    /// `heartbeat.interval.ms`.
    pub(crate) heartbeat_interval: Duration,
    /// `max.poll.interval.ms`, also the rebalance timeout JoinGroup carries.
    pub(crate) max_poll_interval: Duration,
    /// `retry.backoff.ms`.
    pub(crate) retry_backoff: Duration,
    /// `retry.backoff.max.ms`.
    pub(crate) retry_backoff_max: Duration,
    /// `request.timeout.ms`: the longest wait for an answer.
    pub(crate) request_timeout: Duration,
    /// `client.rack`, sent in the subscription (KIP-881).
    pub(crate) rack: Option<String>,
}

impl ClassicConfig {
    /// Java's defaults: a 45 s session, heartbeats every 3 s, 5 min between polls, backoff
    /// 100 ms doubling to 1 s, answers awaited 30 s.
    pub(crate) fn new(assignors: Vec<String>, rebalance: RebalanceProtocol) -> Self {
        ClassicConfig {
            instance_id: None,
            assignors,
            rebalance,
            session_timeout: Duration::from_secs(45),
            heartbeat_interval: Duration::from_secs(3),
            max_poll_interval: Duration::from_secs(300),
            retry_backoff: Duration::from_millis(100),
            retry_backoff_max: Duration::from_secs(1),
            request_timeout: Duration::from_secs(30),
            rack: None,
        }
    }
}

/// What the driver sends next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClassicRequest {
    /// Find the group's coordinator; answer with `coordinator_found` or `handle_send_failed`.
    FindCoordinator,
    /// Answer with `handle_join`.
    JoinGroup(JoinGroupCall),
    /// Answer with `handle_sync`.
    SyncGroup(SyncGroupCall),
    /// Answer with `handle_heartbeat`.
    Heartbeat(HeartbeatCall),
    /// Answer with `handle_leave`.
    LeaveGroup(LeaveGroupCall),
}

/// A JoinGroup request's fields (protocol type "consumer").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JoinGroupCall {
    /// Empty on the first join (KIP-394 then answers with one to use).
    pub(crate) member_id: String,
    pub(crate) instance_id: Option<String>,
    pub(crate) session_timeout: Duration,
    pub(crate) rebalance_timeout: Duration,
    /// Each offered assignor with the subscription to send for it, in preference order.
    pub(crate) protocols: Vec<(String, Subscription)>,
    /// Why the member (re)joins (JoinGroup v8+, KIP-800).
    pub(crate) reason: Option<String>,
}

/// A SyncGroup request's fields (protocol type "consumer").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyncGroupCall {
    pub(crate) generation: i32,
    pub(crate) member_id: String,
    pub(crate) instance_id: Option<String>,
    pub(crate) protocol_name: String,
    /// The leader's assignment per member id; empty from a follower.
    pub(crate) assignments: Vec<(String, Vec<TopicPartition>)>,
}

/// A Heartbeat request's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeartbeatCall {
    pub(crate) generation: i32,
    pub(crate) member_id: String,
    pub(crate) instance_id: Option<String>,
}

/// A LeaveGroup request's fields (v3+ sends them as the one member of its list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeaveGroupCall {
    pub(crate) member_id: String,
    pub(crate) instance_id: Option<String>,
    /// Why (v5+, KIP-800).
    pub(crate) reason: String,
}

/// A JoinGroup answer, decoded by the driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JoinGroupAnswer {
    pub(crate) error: ErrorCode,
    pub(crate) generation: i32,
    /// The assignor chosen (null before v7 on errors).
    pub(crate) protocol_name: Option<String>,
    pub(crate) leader: String,
    /// This member's id (also with MEMBER_ID_REQUIRED).
    pub(crate) member_id: String,
    /// v9+ (KIP-814): a static leader rejoining a stable group must not reassign.
    pub(crate) skip_assignment: bool,
    /// The leader's view of every member; empty for followers.
    pub(crate) members: Vec<GroupMemberSubscription>,
}

/// A SyncGroup answer, decoded by the driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyncGroupAnswer {
    pub(crate) error: ErrorCode,
    /// v5+: the assignor of the generation.
    pub(crate) protocol_name: Option<String>,
    /// This member's ConsumerProtocolAssignment, or why it did not decode.
    pub(crate) assignment: Result<Vec<TopicPartition>, String>,
}

/// What follows a LeaveGroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterLeave {
    /// The member closed.
    Left,
    /// It left after the poll interval: wait for the application.
    WaitForPoll,
    /// It left after the poll interval and the application has polled since: join again.
    Rejoin,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// In no generation, owning nothing; a JoinGroup is wanted.
    Unjoined,
    /// A JoinGroup is in flight (the previous generation, if any, is still held).
    Joining,
    /// The leader was given `AssignAsLeader` and waits for `leader_assignment`.
    Assigning,
    /// A SyncGroup with these assignments is to be sent (or in flight).
    Syncing(Vec<(String, Vec<TopicPartition>)>),
    /// In a generation, heartbeating; `rejoin` may ask for another JoinGroup.
    Stable,
    /// A LeaveGroup is to be sent (or in flight).
    Leaving {
        reason: &'static str,
        then: AfterLeave,
    },
    /// Left after the poll interval; `application_polled` rejoins.
    WaitingForPoll,
    Left,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    FindCoordinator,
    Join,
    Sync,
    Heartbeat,
    Leave,
}

#[derive(Debug, Clone, Copy)]
struct InFlight {
    kind: Kind,
    /// When the machine stops waiting for the answer.
    deadline: Instant,
    /// The generation it was sent in.
    generation: i32,
    sent_at: Instant,
}

/// A classic group member.
#[derive(Debug)]
pub(crate) struct ClassicMember {
    config: ClassicConfig,
    /// The subscription, sorted, once each.
    topics: Vec<String>,
    member_id: String,
    /// -1: none.
    generation: i32,
    /// The assignor of `generation`.
    protocol: Option<String>,
    leader: bool,
    phase: Phase,
    /// Why another JoinGroup is wanted, if one is.
    rejoin: Option<String>,
    coordinator_known: bool,
    in_flight: Option<InFlight>,
    /// No FindCoordinator, JoinGroup, SyncGroup or LeaveGroup before this (a backoff).
    not_before: Option<Instant>,
    backoff: Backoff,
    next_heartbeat: Instant,
    /// The last successful answer in the current generation (the session's clock).
    last_contact: Instant,
    poll: PollTimer,
    closing: Option<CloseMode>,
    /// `close` abandoned a JoinGroup in flight: the coordinator counts the member in.
    join_abandoned: bool,
    owned: Owned,
    events: VecDeque<MemberEvent>,
    /// The latest `now` the driver gave.
    now: Instant,
}

impl ClassicMember {
    /// A member subscribed to `topics`, created (the application subscribing) at `now`.
    pub(crate) fn new(config: ClassicConfig, topics: Vec<String>, now: Instant) -> Self {
        let backoff = Backoff::new(config.retry_backoff, config.retry_backoff_max);
        let poll = PollTimer::new(now, config.max_poll_interval);
        ClassicMember {
            config,
            topics: sorted(topics),
            member_id: String::new(),
            generation: -1,
            protocol: None,
            leader: false,
            phase: Phase::Unjoined,
            rejoin: Some(String::new()),
            coordinator_known: false,
            in_flight: None,
            not_before: None,
            backoff,
            next_heartbeat: now,
            last_contact: now,
            poll,
            closing: None,
            join_abandoned: false,
            owned: Owned::default(),
            events: VecDeque::new(),
            now,
        }
    }

    // ---- what the driver reads ----

    /// The next event to act on.
    pub(crate) fn poll_event(&mut self) -> Option<MemberEvent> {
        self.events.pop_front()
    }

    /// Whether an event waits for `poll_event`.
    pub(crate) fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// The next request to send, if one is due at `now`; fires the machine's timers first
    /// (drain `poll_event` after every call). One request is awaited at a time: the next comes
    /// after its answer (`handle_*`, `coordinator_found`) or `handle_send_failed`, unless the
    /// machine abandons it (a close or the poll interval replacing a JoinGroup or heartbeat
    /// with a LeaveGroup, its deadline passing).
    pub(crate) fn poll_request(&mut self, now: Instant) -> Option<ClassicRequest> {
        self.touch(now);
        self.on_time(now);
        self.advance();
        let (at, step) = self.next_step()?;
        if at > now {
            return None;
        }
        let request = match step {
            Kind::FindCoordinator => ClassicRequest::FindCoordinator,
            Kind::Join => {
                let reason = self.rejoin.take().filter(|r| !r.is_empty());
                self.phase = Phase::Joining;
                ClassicRequest::JoinGroup(self.join_call(reason))
            }
            Kind::Sync => {
                let Phase::Syncing(assignments) = &self.phase else { return None };
                ClassicRequest::SyncGroup(SyncGroupCall {
                    generation: self.generation,
                    member_id: self.member_id.clone(),
                    instance_id: self.config.instance_id.clone(),
                    protocol_name: self.protocol.clone().unwrap_or_default(),
                    assignments: assignments.clone(),
                })
            }
            Kind::Heartbeat => ClassicRequest::Heartbeat(HeartbeatCall {
                generation: self.generation,
                member_id: self.member_id.clone(),
                instance_id: self.config.instance_id.clone(),
            }),
            Kind::Leave => {
                let Phase::Leaving { reason, .. } = self.phase else { return None };
                ClassicRequest::LeaveGroup(LeaveGroupCall {
                    member_id: self.member_id.clone(),
                    instance_id: self.config.instance_id.clone(),
                    reason: reason.to_owned(),
                })
            }
        };
        let wait = match step {
            Kind::Join => self
                .config
                .request_timeout
                .max(self.config.max_poll_interval.saturating_add(JOIN_ANSWER_LAPSE)),
            _ => self.config.request_timeout,
        };
        self.in_flight = Some(InFlight {
            kind: step,
            deadline: after(now, wait),
            generation: self.generation,
            sent_at: now,
        });
        Some(request)
    }

    /// When to call `poll_request` next at the latest: a request falls due, a timer fires, or
    /// an in-flight answer is overdue. `None` only once Left or Failed, or while waiting for
    /// `application_polled` after the poll interval ran out.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        if matches!(self.phase, Phase::Left | Phase::Failed | Phase::WaitingForPoll) {
            return None;
        }
        let timers = [
            self.next_step().map(|(at, _)| at),
            self.in_flight.map(|f| f.deadline),
            self.poll_timer_applies().then(|| self.poll.deadline()),
            self.session_applies().then(|| self.session_deadline()),
        ];
        timers.into_iter().flatten().min()
    }

    /// Where the member is.
    pub(crate) fn phase(&self) -> MemberPhase {
        match &self.phase {
            Phase::Unjoined => MemberPhase::Joining,
            Phase::Joining if self.generation < 0 => MemberPhase::Joining,
            Phase::Joining | Phase::Assigning | Phase::Syncing(_) => MemberPhase::Rebalancing,
            Phase::Stable if self.rejoin.is_some() || self.owned.revocation_pending() => {
                MemberPhase::Rebalancing
            }
            Phase::Stable => MemberPhase::Stable,
            Phase::Leaving { .. } => MemberPhase::Leaving,
            Phase::WaitingForPoll => MemberPhase::WaitingForPoll,
            Phase::Left => MemberPhase::Left,
            Phase::Failed => MemberPhase::Failed,
        }
    }

    /// The owned partitions.
    pub(crate) fn owned(&self) -> &Owned {
        &self.owned
    }

    /// What a commit carries now.
    pub(crate) fn identity(&self) -> CommitIdentity {
        CommitIdentity {
            member_id: self.member_id.clone(),
            generation_or_epoch: self.generation,
            instance_id: self.config.instance_id.clone(),
        }
    }

    /// The identity to commit `tp`'s offset with, or why this member may not. Between a
    /// JoinGroup answer and the SyncGroup answer the coordinator answers a commit with
    /// REBALANCE_IN_PROGRESS, which the driver retries once the member is stable again.
    pub(crate) fn commit_allowed(&self, tp: &TopicPartition) -> Result<CommitIdentity, NotOwned> {
        match self.owned.why_not(tp) {
            None => Ok(self.identity()),
            Some(reason) => Err(NotOwned { partition: tp.clone(), reason }),
        }
    }

    /// Whether this member led the last generation it joined.
    pub(crate) fn is_leader(&self) -> bool {
        self.leader
    }

    // ---- what the application did ----

    /// The application asked for records at `now` (or is waiting for some). Past the poll
    /// interval this first leaves the group; after such a leave it rejoins.
    pub(crate) fn application_polled(&mut self, now: Instant) {
        self.touch(now);
        if self.poll_timer_applies() && self.poll.expired(now) {
            self.poll_expired(now);
        }
        self.poll.polled(now);
        match &mut self.phase {
            Phase::WaitingForPoll => {
                self.phase = Phase::Unjoined;
                self.rejoin.get_or_insert_with(String::new);
            }
            Phase::Leaving { then, .. } if *then == AfterLeave::WaitForPoll => *then = AfterLeave::Rejoin,
            _ => {}
        }
        self.advance();
    }

    /// The application is done with these revoked partitions (it committed what it wanted);
    /// they are no longer owned. Partitions not being revoked are ignored.
    pub(crate) fn revocation_done(&mut self, partitions: &[TopicPartition]) {
        if !self.owned.revocation_done(partitions).is_empty() {
            self.advance();
        }
    }

    /// The leader's assignment for the generation `AssignAsLeader` announced, per member id
    /// (members left out get nothing). Returns whether it was taken (it is not when the
    /// machine has moved on, e.g. the generation was lost meanwhile).
    pub(crate) fn leader_assignment(&mut self, assignments: BTreeMap<String, Vec<TopicPartition>>) -> bool {
        if self.phase != Phase::Assigning {
            return false;
        }
        self.phase = Phase::Syncing(assignments.into_iter().collect());
        true
    }

    /// The subscription changed: rejoin with it (if it differs).
    pub(crate) fn subscribe(&mut self, topics: Vec<String>) {
        let topics = sorted(topics);
        if topics != self.topics {
            self.topics = topics;
            self.want_rejoin("subscription changed");
            self.advance();
        }
    }

    /// Rejoin for the driver's reason (the leader saw the partition count of a subscribed
    /// topic change: Java's `metadataSnapshot` check).
    pub(crate) fn request_rejoin(&mut self, reason: &str) {
        self.want_rejoin(reason);
        self.advance();
    }

    /// Close: revoke everything (the application commits), then leave as `mode` says, then
    /// `Left`. A JoinGroup in flight is abandoned (its answer is ignored).
    pub(crate) fn close(&mut self, now: Instant, mode: CloseMode) {
        self.touch(now);
        if matches!(self.phase, Phase::Left | Phase::Failed) || self.closing.is_some() {
            return;
        }
        self.closing = Some(mode);
        if self.finishes_round_before_closing() {
            // A cooperative member holding partitions: the coordinator counts its JoinGroup
            // whatever the member does, and moves the group to the next generation once every
            // member has joined; a commit with the generation held before would then be
            // refused (ILLEGAL_GENERATION, or REBALANCE_IN_PROGRESS until the SyncGroup). The
            // round is finished first (see `advance`), then everything is revoked and
            // committed with the new generation, then the member leaves.
            self.advance();
            return;
        }
        if self.in_flight.is_some_and(|f| f.kind == Kind::Join) {
            // Nothing owned: the coordinator holds the join; the LeaveGroup takes the member
            // out of it.
            self.in_flight = None;
            self.join_abandoned = true;
            self.phase = if self.in_generation() { Phase::Stable } else { Phase::Unjoined };
        }
        if matches!(self.phase, Phase::Syncing(_) | Phase::Assigning) {
            // Hold the new generation (heartbeats keep it) but assign nothing more.
            self.phase = Phase::Stable;
        }
        self.advance();
    }

    // ---- what the coordinator answered ----

    /// The coordinator was found (the answer to `FindCoordinator`).
    pub(crate) fn coordinator_found(&mut self, now: Instant) {
        self.touch(now);
        if self.take_in_flight(Kind::FindCoordinator).is_none() {
            return;
        }
        self.coordinator_known = true;
        self.next_heartbeat = now;
        self.advance();
    }

    /// The in-flight request got no answer: the connection broke or it timed out.
    pub(crate) fn handle_send_failed(&mut self, now: Instant) {
        self.touch(now);
        self.send_failed(now);
        self.advance();
    }

    /// The answer to `JoinGroup`.
    pub(crate) fn handle_join(&mut self, now: Instant, answer: JoinGroupAnswer) {
        self.touch(now);
        if self.take_in_flight(Kind::Join).is_none() || self.phase != Phase::Joining {
            return;
        }
        match answer.error {
            ErrorCode::NONE => self.joined(now, answer),
            ErrorCode::MEMBER_ID_REQUIRED => {
                if answer.member_id.is_empty() {
                    // Nothing to rejoin with: not at once, or the member would spin.
                    self.back_off(now);
                }
                self.member_id = answer.member_id;
                self.back_to_rejoin("need to re-join with the given member id");
            }
            ErrorCode::UNKNOWN_MEMBER_ID => self.lose(LostCause::UnknownMember, true),
            ErrorCode::ILLEGAL_GENERATION => self.lose(LostCause::IllegalGeneration, false),
            ErrorCode::NOT_COORDINATOR | ErrorCode::COORDINATOR_NOT_AVAILABLE => {
                self.coordinator_known = false;
                self.back_to_rejoin("the coordinator moved");
            }
            code => match MemberError::from_code(code) {
                Some(error) => self.fail(error),
                None if code.is_retriable() || code == ErrorCode::REBALANCE_IN_PROGRESS => {
                    self.back_off(now);
                    self.back_to_rejoin("JoinGroup failed; retrying");
                }
                None => self.fail(MemberError::Unexpected { code, call: "JoinGroup" }),
            },
        }
        self.advance();
    }

    /// The answer to `SyncGroup`.
    pub(crate) fn handle_sync(&mut self, now: Instant, answer: SyncGroupAnswer) {
        self.touch(now);
        if self.take_in_flight(Kind::Sync).is_none() || !matches!(self.phase, Phase::Syncing(_)) {
            return;
        }
        match answer.error {
            ErrorCode::NONE => self.synced(now, answer),
            ErrorCode::REBALANCE_IN_PROGRESS => self.back_to_rejoin("the group began another rebalance"),
            ErrorCode::UNKNOWN_MEMBER_ID => self.lose(LostCause::UnknownMember, true),
            ErrorCode::ILLEGAL_GENERATION => self.lose(LostCause::IllegalGeneration, false),
            ErrorCode::NOT_COORDINATOR | ErrorCode::COORDINATOR_NOT_AVAILABLE => {
                self.coordinator_known = false;
                self.back_to_rejoin("the coordinator moved during SyncGroup");
            }
            code => match MemberError::from_code(code) {
                Some(error) => self.fail(error),
                None if code.is_retriable() => {
                    self.back_off(now);
                    self.back_to_rejoin("SyncGroup failed; retrying");
                }
                None => self.fail(MemberError::Unexpected { code, call: "SyncGroup" }),
            },
        }
        self.advance();
    }

    /// The answer to `Heartbeat`.
    pub(crate) fn handle_heartbeat(&mut self, now: Instant, error: ErrorCode) {
        self.touch(now);
        let Some(sent) = self.take_in_flight(Kind::Heartbeat) else { return };
        if !matches!(self.phase, Phase::Stable | Phase::Assigning) || sent.generation != self.generation {
            // Leaving, or an answer about a generation already left behind.
            self.advance();
            return;
        }
        let next = after(sent.sent_at, self.config.heartbeat_interval);
        match error {
            ErrorCode::NONE => {
                self.contact(now);
                self.next_heartbeat = next;
            }
            ErrorCode::REBALANCE_IN_PROGRESS => {
                // The coordinator still counts the member in: it is alive.
                self.contact(now);
                self.next_heartbeat = next;
                if self.phase == Phase::Stable {
                    self.want_rejoin("group is already rebalancing");
                }
            }
            ErrorCode::ILLEGAL_GENERATION => self.lose(LostCause::IllegalGeneration, false),
            ErrorCode::UNKNOWN_MEMBER_ID => self.lose(LostCause::UnknownMember, true),
            ErrorCode::FENCED_INSTANCE_ID => self.fail(MemberError::FencedInstanceId),
            ErrorCode::GROUP_AUTHORIZATION_FAILED => self.fail(MemberError::GroupAuthorizationFailed),
            ErrorCode::NOT_COORDINATOR | ErrorCode::COORDINATOR_NOT_AVAILABLE => {
                self.coordinator_known = false;
                self.next_heartbeat = now;
            }
            _ => {
                let wait = self.backoff.failed().min(self.config.heartbeat_interval);
                self.next_heartbeat = after(now, wait);
            }
        }
        self.advance();
    }

    /// The answer to `LeaveGroup` (whatever it says: leaving is best effort, once).
    pub(crate) fn handle_leave(&mut self, now: Instant, _error: ErrorCode) {
        self.touch(now);
        if self.take_in_flight(Kind::Leave).is_some() {
            self.finish_leave();
            self.advance();
        }
    }

    // ---- inside ----

    fn touch(&mut self, now: Instant) {
        self.now = self.now.max(now);
    }

    fn take_in_flight(&mut self, kind: Kind) -> Option<InFlight> {
        match self.in_flight {
            Some(f) if f.kind == kind => self.in_flight.take(),
            _ => None,
        }
    }

    fn in_generation(&self) -> bool {
        self.generation >= 0
    }

    /// Closing in the middle of a round (a JoinGroup in flight, or the assignment not synced
    /// yet) while owning partitions: the round is finished before they are revoked, so that
    /// their commits carry the generation the coordinator has moved to.
    fn finishes_round_before_closing(&self) -> bool {
        let round = self.in_flight.is_some_and(|f| f.kind == Kind::Join)
            || matches!(self.phase, Phase::Joining | Phase::Assigning | Phase::Syncing(_));
        round && !self.owned.partitions().is_empty()
    }

    /// The session clock runs while the member holds a generation and is not waiting on a
    /// JoinGroup (the coordinator holds a pending join for the rebalance timeout).
    fn session_applies(&self) -> bool {
        self.in_generation()
            && matches!(self.phase, Phase::Assigning | Phase::Syncing(_) | Phase::Stable)
            && !self.in_flight.is_some_and(|f| f.kind == Kind::Join)
    }

    fn session_deadline(&self) -> Instant {
        after(self.last_contact, self.config.session_timeout)
    }

    /// The poll interval counts while the member holds a generation outside a JoinGroup
    /// (Java's heartbeat thread checks it from the JoinGroup answer on), not while closing.
    fn poll_timer_applies(&self) -> bool {
        self.in_generation()
            && matches!(self.phase, Phase::Assigning | Phase::Syncing(_) | Phase::Stable)
            && self.closing.is_none()
    }

    fn on_time(&mut self, now: Instant) {
        if self.in_flight.is_some_and(|f| f.deadline <= now) {
            self.send_failed(now);
        }
        if self.poll_timer_applies() && self.poll.expired(now) {
            self.poll_expired(now);
        }
        if self.session_applies() && self.session_deadline() <= now {
            // Ask again where the coordinator is and let it answer; the session clock restarts
            // so that this fires once per session timeout without an answer, not on every tick.
            self.send_failed(now);
            self.coordinator_known = false;
            self.next_heartbeat = now;
            self.last_contact = now;
        }
    }

    fn send_failed(&mut self, now: Instant) {
        let Some(sent) = self.in_flight.take() else { return };
        match sent.kind {
            Kind::FindCoordinator => self.back_off(now),
            Kind::Join | Kind::Sync => {
                self.coordinator_known = false;
                self.back_off(now);
                if matches!(self.phase, Phase::Joining | Phase::Syncing(_)) {
                    self.back_to_rejoin("the connection to the coordinator failed");
                }
            }
            Kind::Heartbeat => {
                self.coordinator_known = false;
                self.back_off(now);
                self.next_heartbeat = now;
            }
            Kind::Leave => self.finish_leave(),
        }
    }

    fn back_off(&mut self, now: Instant) {
        self.not_before = Some(after(now, self.backoff.failed()));
    }

    /// A successful answer in the generation.
    fn contact(&mut self, now: Instant) {
        self.last_contact = now;
        self.backoff.reset();
        self.not_before = None;
    }

    fn want_rejoin(&mut self, reason: &str) {
        if self.rejoin.as_ref().is_none_or(String::is_empty) {
            self.rejoin = Some(reason.to_owned());
        }
    }

    /// Another JoinGroup is wanted; the member keeps the generation it holds, if any.
    fn back_to_rejoin(&mut self, reason: &str) {
        self.want_rejoin(reason);
        self.phase = if self.in_generation() { Phase::Stable } else { Phase::Unjoined };
    }

    /// The generation is gone: everything owned is lost; rejoin (or end, when closing).
    fn lose(&mut self, cause: LostCause, reset_member_id: bool) {
        let lost = self.owned.lose_all(cause);
        if !lost.is_empty() {
            self.events.push_back(MemberEvent::Lost(lost));
        }
        self.generation = -1;
        self.protocol = None;
        self.leader = false;
        if reset_member_id {
            self.member_id.clear();
        }
        if self.closing.is_some() {
            self.end();
        } else {
            self.phase = Phase::Unjoined;
            self.want_rejoin(match cause {
                LostCause::UnknownMember => "the coordinator does not know the member id",
                _ => "the generation is no longer valid",
            });
        }
    }

    fn fail(&mut self, error: MemberError) {
        let lost = self.owned.lose_all(LostCause::Fatal);
        if !lost.is_empty() {
            self.events.push_back(MemberEvent::Lost(lost));
        }
        self.events.push_back(MemberEvent::Fatal(error));
        self.generation = -1;
        self.leader = false;
        self.in_flight = None;
        self.phase = Phase::Failed;
    }

    fn end(&mut self) {
        self.in_flight = None;
        self.phase = Phase::Left;
        self.events.push_back(MemberEvent::Left);
    }

    fn poll_expired(&mut self, now: Instant) {
        self.events.push_back(MemberEvent::PollIntervalExceeded { elapsed: self.poll.elapsed(now) });
        let lost = self.owned.lose_all(LostCause::PollIntervalExceeded);
        if !lost.is_empty() {
            self.events.push_back(MemberEvent::Lost(lost));
        }
        self.generation = -1;
        self.protocol = None;
        self.leader = false;
        self.rejoin = Some("rejoining after the poll interval was exceeded".to_owned());
        if self.config.instance_id.is_none() && !self.member_id.is_empty() {
            self.start_leaving(POLL_TIMEOUT_REASON, AfterLeave::WaitForPoll);
        } else {
            self.in_flight = None;
            self.member_id.clear();
            self.phase = Phase::WaitingForPoll;
        }
    }

    /// The LeaveGroup goes next; a request still in flight is abandoned (its answer, of another
    /// kind, is ignored).
    fn start_leaving(&mut self, reason: &'static str, then: AfterLeave) {
        self.in_flight = None;
        self.phase = Phase::Leaving { reason, then };
    }

    fn finish_leave(&mut self) {
        let Phase::Leaving { then, .. } = self.phase else { return };
        self.member_id.clear();
        self.generation = -1;
        self.leader = false;
        match then {
            AfterLeave::Left => self.end(),
            AfterLeave::WaitForPoll => self.phase = Phase::WaitingForPoll,
            AfterLeave::Rejoin => {
                self.phase = Phase::Unjoined;
                self.rejoin.get_or_insert_with(String::new);
            }
        }
    }

    fn joined(&mut self, now: Instant, answer: JoinGroupAnswer) {
        let offered = answer.protocol_name.filter(|p| self.config.assignors.contains(p));
        let Some(protocol) = offered else {
            self.fail(MemberError::InconsistentGroupProtocol);
            return;
        };
        if answer.generation < 0 || answer.member_id.is_empty() {
            self.fail(MemberError::BadAnswer(format!(
                "JoinGroup succeeded with generation {} and member id {:?}",
                answer.generation, answer.member_id
            )));
            return;
        }
        self.leader = answer.leader == answer.member_id;
        self.member_id = answer.member_id;
        self.generation = answer.generation;
        self.protocol = Some(protocol.clone());
        self.contact(now);
        self.next_heartbeat = after(now, self.config.heartbeat_interval);
        if self.leader && !answer.skip_assignment {
            self.phase = Phase::Assigning;
            self.events
                .push_back(MemberEvent::AssignAsLeader { members: answer.members, protocol_name: protocol });
        } else {
            self.phase = Phase::Syncing(Vec::new());
        }
    }

    fn synced(&mut self, now: Instant, answer: SyncGroupAnswer) {
        if answer.protocol_name.is_some_and(|p| Some(&p) != self.protocol.as_ref()) {
            self.fail(MemberError::InconsistentGroupProtocol);
            return;
        }
        let assigned: BTreeSet<TopicPartition> = match answer.assignment {
            Ok(partitions) => partitions.into_iter().collect(),
            Err(why) => {
                self.fail(MemberError::BadAnswer(format!("the assignment did not decode: {why}")));
                return;
            }
        };
        let mut assigned = assigned;
        if self.closing.is_some() {
            // The round finished before closing: nothing new is taken on, only what stays is
            // revoked and committed with this generation.
            assigned.retain(|tp| self.owned.partitions().contains(tp));
        }
        self.phase = Phase::Stable;
        self.contact(now);
        self.next_heartbeat = after(now, self.config.heartbeat_interval);
        let moved: Vec<TopicPartition> =
            self.owned.partitions().iter().filter(|tp| !assigned.contains(*tp)).cloned().collect();
        let revoking = self.owned.revoke(moved.iter());
        if !revoking.is_empty() {
            self.events.push_back(MemberEvent::Revoking(revoking));
            if self.config.rebalance == RebalanceProtocol::Cooperative {
                // KIP-429: the partitions given up go to their new owner in a second round.
                self.want_rejoin("need to revoke partitions and re-join");
            }
        }
        let added = self.owned.assign(assigned);
        if !added.is_empty() {
            self.events.push_back(MemberEvent::Assigned(added));
        }
    }

    fn should_leave(&self, mode: CloseMode) -> bool {
        let wanted = match mode {
            CloseMode::Default => self.config.instance_id.is_none(),
            CloseMode::LeaveGroup => true,
            CloseMode::RemainInGroup => false,
        };
        wanted
            && !self.member_id.is_empty()
            && self.coordinator_known
            && (self.join_abandoned
                || matches!(self.phase, Phase::Assigning | Phase::Syncing(_) | Phase::Stable))
    }

    /// The steps that need no request: start the revocations a close or a rejoin needs, and
    /// move on once they are done.
    fn advance(&mut self) {
        if let Some(mode) = self.closing {
            match self.phase {
                Phase::Left | Phase::Failed => {}
                Phase::Joining | Phase::Assigning | Phase::Syncing(_)
                    if self.finishes_round_before_closing() => {}
                Phase::WaitingForPoll => self.end(),
                Phase::Leaving { ref mut then, .. } => *then = AfterLeave::Left,
                _ => {
                    let revoking = self.owned.revoke_all();
                    if !revoking.is_empty() {
                        self.events.push_back(MemberEvent::Revoking(revoking));
                    }
                    if !self.owned.revocation_pending() {
                        if self.should_leave(mode) {
                            self.start_leaving(CLOSE_REASON, AfterLeave::Left);
                        } else {
                            self.end();
                        }
                    }
                }
            }
        } else if self.rejoin.is_some() && self.phase == Phase::Stable && !self.owned.revocation_pending() {
            let revoking = match self.config.rebalance {
                RebalanceProtocol::Eager => self.owned.revoke_all(),
                RebalanceProtocol::Cooperative => {
                    let gone = self.owned_unsubscribed();
                    self.owned.revoke(gone.iter())
                }
            };
            if !revoking.is_empty() {
                self.events.push_back(MemberEvent::Revoking(revoking));
            }
        }
        if matches!(self.phase, Phase::Leaving { .. }) && !self.coordinator_known && self.in_flight.is_none()
        {
            // Leaving is best effort: without a coordinator there is no one to tell.
            self.finish_leave();
        }
    }

    /// The request `poll_request` would send next and when, ignoring the clock.
    fn next_step(&self) -> Option<(Instant, Kind)> {
        if self.in_flight.is_some()
            || matches!(self.phase, Phase::Left | Phase::Failed | Phase::WaitingForPoll)
        {
            return None;
        }
        let ready = self.not_before.map_or(self.now, |t| t.max(self.now));
        if !self.coordinator_known {
            return Some((ready, Kind::FindCoordinator));
        }
        match self.phase {
            Phase::Leaving { .. } => Some((ready, Kind::Leave)),
            // While closing, only a round finished before the revocations syncs (`close`).
            Phase::Syncing(_) => Some((ready, Kind::Sync)),
            Phase::Unjoined if self.closing.is_none() => Some((ready, Kind::Join)),
            Phase::Stable if self.rejoin.is_some() && self.closing.is_none() && !self.join_blocked() => {
                Some((ready, Kind::Join))
            }
            Phase::Stable | Phase::Assigning => Some((self.next_heartbeat, Kind::Heartbeat)),
            _ => None,
        }
    }

    /// A JoinGroup waits for the revocations before it: all of them (eager), those of topics
    /// no longer subscribed (cooperative), and any unfinished one.
    fn join_blocked(&self) -> bool {
        self.owned.revocation_pending()
            || match self.config.rebalance {
                RebalanceProtocol::Eager => !self.owned.partitions().is_empty(),
                RebalanceProtocol::Cooperative => !self.owned_unsubscribed().is_empty(),
            }
    }

    /// The owned partitions of topics no longer subscribed (Java's cooperative
    /// `onJoinPrepare` revokes them before the JoinGroup).
    fn owned_unsubscribed(&self) -> Vec<TopicPartition> {
        let subscribed =
            |tp: &&TopicPartition| self.topics.binary_search_by(|t| t.as_str().cmp(&tp.topic)).is_ok();
        self.owned.partitions().iter().filter(|tp| !subscribed(tp)).cloned().collect()
    }

    fn join_call(&self, reason: Option<String>) -> JoinGroupCall {
        let subscription = Subscription {
            topics: self.topics.clone(),
            owned_partitions: self.owned.partitions().iter().cloned().collect(),
            generation: self.generation,
            rack: self.config.rack.clone(),
        };
        JoinGroupCall {
            member_id: self.member_id.clone(),
            instance_id: self.config.instance_id.clone(),
            session_timeout: self.config.session_timeout,
            rebalance_timeout: self.config.max_poll_interval,
            protocols: self
                .config
                .assignors
                .iter()
                .map(|name| (name.clone(), subscription.clone()))
                .collect(),
            reason,
        }
    }
}

fn sorted(mut topics: Vec<String>) -> Vec<String> {
    topics.sort();
    topics.dedup();
    topics
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(topic: &str, p: i32) -> TopicPartition {
        TopicPartition::new(topic, p)
    }

    fn config() -> ClassicConfig {
        ClassicConfig::new(vec!["range".to_owned()], RebalanceProtocol::Eager)
    }

    /// A member and a clock the test moves.
    struct Run {
        m: ClassicMember,
        now: Instant,
    }

    impl Run {
        fn new(config: ClassicConfig) -> Self {
            let now = Instant::now();
            Run { m: ClassicMember::new(config, vec!["t".to_owned()], now), now }
        }

        fn wait(&mut self, d: Duration) {
            self.now += d;
        }

        fn request(&mut self) -> Option<ClassicRequest> {
            self.m.poll_request(self.now)
        }

        fn events(&mut self) -> Vec<MemberEvent> {
            std::iter::from_fn(|| self.m.poll_event()).collect()
        }

        fn expect_join(&mut self) -> JoinGroupCall {
            match self.request() {
                Some(ClassicRequest::JoinGroup(j)) => j,
                other => panic!("expected a JoinGroup, got {other:?}"),
            }
        }

        fn expect_sync(&mut self) -> SyncGroupCall {
            match self.request() {
                Some(ClassicRequest::SyncGroup(s)) => s,
                other => panic!("expected a SyncGroup, got {other:?}"),
            }
        }

        fn find_coordinator(&mut self) {
            assert_eq!(self.request(), Some(ClassicRequest::FindCoordinator));
            self.m.coordinator_found(self.now);
        }

        /// Joins as a follower of generation `generation` and gets `assignment`.
        fn join(&mut self, member_id: &str, generation: i32, assignment: Vec<TopicPartition>) {
            let _ = self.expect_join();
            self.m.handle_join(self.now, join_ok(member_id, "leader-0", generation));
            let sync = self.expect_sync();
            assert!(sync.assignments.is_empty(), "a follower's SyncGroup carries no assignment");
            self.m.handle_sync(self.now, sync_ok(assignment));
        }

        /// Lets one heartbeat interval pass and answers the heartbeat with `error`.
        fn heartbeat(&mut self, error: ErrorCode) -> HeartbeatCall {
            self.wait(self.m.config.heartbeat_interval);
            self.m.application_polled(self.now);
            match self.request() {
                Some(ClassicRequest::Heartbeat(h)) => {
                    self.m.handle_heartbeat(self.now, error);
                    h
                }
                other => panic!("expected a Heartbeat, got {other:?}"),
            }
        }
    }

    fn join_ok(member_id: &str, leader: &str, generation: i32) -> JoinGroupAnswer {
        JoinGroupAnswer {
            error: ErrorCode::NONE,
            generation,
            protocol_name: Some("range".to_owned()),
            leader: leader.to_owned(),
            member_id: member_id.to_owned(),
            skip_assignment: false,
            members: Vec::new(),
        }
    }

    fn join_error(error: ErrorCode, member_id: &str) -> JoinGroupAnswer {
        JoinGroupAnswer {
            error,
            generation: -1,
            protocol_name: None,
            leader: String::new(),
            member_id: member_id.to_owned(),
            skip_assignment: false,
            members: Vec::new(),
        }
    }

    fn sync_ok(assignment: Vec<TopicPartition>) -> SyncGroupAnswer {
        SyncGroupAnswer {
            error: ErrorCode::NONE,
            protocol_name: Some("range".to_owned()),
            assignment: Ok(assignment),
        }
    }

    #[test]
    fn a_follower_finds_the_coordinator_gets_a_member_id_joins_syncs_and_heartbeats() {
        let mut r = Run::new(config());
        assert_eq!(r.m.phase(), MemberPhase::Joining);
        r.find_coordinator();
        let first = r.expect_join();
        assert_eq!(first.member_id, "", "the first JoinGroup has no member id (KIP-394)");
        assert_eq!(first.session_timeout, Duration::from_secs(45));
        assert_eq!(
            first.rebalance_timeout,
            Duration::from_secs(300),
            "the rebalance timeout is max.poll.interval.ms"
        );
        assert_eq!(first.protocols.len(), 1);
        assert_eq!(first.protocols[0].0, "range");
        assert_eq!(first.protocols[0].1.topics, ["t"]);
        assert_eq!(first.protocols[0].1.generation, -1);
        assert_eq!(first.reason, None);
        // KIP-394: the coordinator hands out the id; the member rejoins with it at once.
        r.m.handle_join(r.now, join_error(ErrorCode::MEMBER_ID_REQUIRED, "m-1"));
        let second = r.expect_join();
        assert_eq!(second.member_id, "m-1");
        r.m.handle_join(r.now, join_ok("m-1", "leader-0", 5));
        assert!(!r.m.is_leader());
        let sync = r.expect_sync();
        assert_eq!(
            (sync.generation, sync.member_id.as_str(), sync.protocol_name.as_str()),
            (5, "m-1", "range")
        );
        assert!(sync.assignments.is_empty());
        r.m.handle_sync(r.now, sync_ok(vec![tp("t", 1), tp("t", 0)]));
        assert_eq!(r.events(), [MemberEvent::Assigned(vec![tp("t", 0), tp("t", 1)])]);
        assert_eq!(r.m.phase(), MemberPhase::Stable);
        let identity = r.m.commit_allowed(&tp("t", 0)).expect("owned");
        assert_eq!(
            identity,
            CommitIdentity { member_id: "m-1".into(), generation_or_epoch: 5, instance_id: None }
        );
        // Nothing until the heartbeat interval, then a heartbeat with the generation.
        assert_eq!(r.request(), None);
        assert_eq!(r.m.poll_timeout(), Some(r.now + Duration::from_secs(3)));
        let hb = r.heartbeat(ErrorCode::NONE);
        assert_eq!(hb, HeartbeatCall { generation: 5, member_id: "m-1".into(), instance_id: None });
        assert_eq!(r.m.phase(), MemberPhase::Stable);
    }

    #[test]
    fn a_leader_is_asked_to_assign_heartbeats_meanwhile_and_sends_the_assignment() {
        let mut r = Run::new(config());
        r.find_coordinator();
        let _ = r.expect_join();
        let members = vec![
            GroupMemberSubscription {
                member_id: "m-1".into(),
                instance_id: None,
                subscription: Ok(Subscription { topics: vec!["t".into()], ..Subscription::default() }),
            },
            GroupMemberSubscription {
                member_id: "m-2".into(),
                instance_id: None,
                subscription: Err("truncated ConsumerProtocolSubscription".into()),
            },
        ];
        r.m.handle_join(r.now, JoinGroupAnswer { members: members.clone(), ..join_ok("m-1", "m-1", 3) });
        assert!(r.m.is_leader());
        assert_eq!(r.events(), [MemberEvent::AssignAsLeader { members, protocol_name: "range".into() }]);
        assert_eq!(r.request(), None, "nothing to send until the driver assigns");
        // The assignor is slow: the member heartbeats in the meantime.
        let hb = r.heartbeat(ErrorCode::NONE);
        assert_eq!(hb.generation, 3);
        let assignment =
            BTreeMap::from([("m-1".to_owned(), vec![tp("t", 0), tp("t", 1)]), ("m-2".to_owned(), vec![])]);
        assert!(r.m.leader_assignment(assignment));
        assert!(!r.m.leader_assignment(BTreeMap::new()), "taken once");
        let sync = r.expect_sync();
        assert_eq!(
            sync.assignments,
            [("m-1".to_owned(), vec![tp("t", 0), tp("t", 1)]), ("m-2".to_owned(), vec![])]
        );
        r.m.handle_sync(r.now, sync_ok(vec![tp("t", 0), tp("t", 1)]));
        assert_eq!(r.events(), [MemberEvent::Assigned(vec![tp("t", 0), tp("t", 1)])]);
    }

    #[test]
    fn member_id_required_without_an_id_backs_off_instead_of_spinning() {
        let mut r = Run::new(config());
        r.find_coordinator();
        let _ = r.expect_join();
        r.m.handle_join(r.now, join_error(ErrorCode::MEMBER_ID_REQUIRED, ""));
        assert_eq!(r.request(), None);
        r.wait(Duration::from_millis(100));
        assert!(matches!(r.request(), Some(ClassicRequest::JoinGroup(_))));
    }

    #[test]
    fn eager_revokes_everything_before_rejoining_and_commits_stay_allowed_until_done() {
        let mut r = Run::new(config());
        r.find_coordinator();
        r.join("m-1", 5, vec![tp("t", 0), tp("t", 1)]);
        r.events();
        r.heartbeat(ErrorCode::REBALANCE_IN_PROGRESS);
        assert_eq!(r.events(), [MemberEvent::Revoking(vec![tp("t", 0), tp("t", 1)])]);
        assert_eq!(r.m.phase(), MemberPhase::Rebalancing);
        assert!(r.m.commit_allowed(&tp("t", 0)).is_ok(), "the application commits before revocation_done");
        // No JoinGroup while the application still holds the partitions; heartbeats go on.
        assert_eq!(r.request(), None);
        let hb = r.heartbeat(ErrorCode::REBALANCE_IN_PROGRESS);
        assert_eq!(hb.generation, 5);
        assert_eq!(r.events(), [], "a revocation starts once");
        r.m.revocation_done(&[tp("t", 0)]);
        assert_eq!(r.request(), None, "t-1 is not done yet");
        r.m.revocation_done(&[tp("t", 1)]);
        assert_eq!(
            r.m.commit_allowed(&tp("t", 0)),
            Err(NotOwned { partition: tp("t", 0), reason: super::super::model::NotOwnedReason::Revoked })
        );
        let join = r.expect_join();
        assert_eq!(join.member_id, "m-1");
        assert_eq!(join.reason.as_deref(), Some("group is already rebalancing"));
        assert!(join.protocols[0].1.owned_partitions.is_empty(), "eager: nothing owned at the JoinGroup");
        assert_eq!(join.protocols[0].1.generation, 5);
        r.m.handle_join(r.now, join_ok("m-1", "leader-0", 6));
        let _ = r.expect_sync();
        r.m.handle_sync(r.now, sync_ok(vec![tp("t", 1), tp("t", 2)]));
        assert_eq!(r.events(), [MemberEvent::Assigned(vec![tp("t", 1), tp("t", 2)])]);
        assert_eq!(r.m.identity().generation_or_epoch, 6);
    }

    #[test]
    fn cooperative_keeps_what_stays_revokes_what_moves_and_rejoins_once_more() {
        let mut r =
            Run::new(ClassicConfig::new(vec!["cooperative-sticky".into()], RebalanceProtocol::Cooperative));
        r.find_coordinator();
        let _ = r.expect_join();
        let answer =
            JoinGroupAnswer { protocol_name: Some("cooperative-sticky".into()), ..join_ok("m-1", "l", 1) };
        r.m.handle_join(r.now, answer);
        let _ = r.expect_sync();
        let sync = |ps| SyncGroupAnswer { protocol_name: None, ..sync_ok(ps) };
        r.m.handle_sync(r.now, sync(vec![tp("t", 0), tp("t", 1), tp("t", 2)]));
        assert_eq!(r.events(), [MemberEvent::Assigned(vec![tp("t", 0), tp("t", 1), tp("t", 2)])]);
        // A member joins: the JoinGroup goes at once and carries what this member owns.
        r.heartbeat(ErrorCode::REBALANCE_IN_PROGRESS);
        assert_eq!(r.events(), [], "cooperative: nothing revoked before the JoinGroup");
        let join = r.expect_join();
        assert_eq!(join.protocols[0].1.owned_partitions, [tp("t", 0), tp("t", 1), tp("t", 2)]);
        assert_eq!(join.protocols[0].1.generation, 1);
        assert!(r.m.commit_allowed(&tp("t", 2)).is_ok(), "still owned during the JoinGroup");
        let answer =
            JoinGroupAnswer { protocol_name: Some("cooperative-sticky".into()), ..join_ok("m-1", "l", 2) };
        r.m.handle_join(r.now, answer);
        let _ = r.expect_sync();
        // The assignor moves t-2 away and adds t-3.
        r.m.handle_sync(r.now, sync(vec![tp("t", 0), tp("t", 1), tp("t", 3)]));
        assert_eq!(
            r.events(),
            [MemberEvent::Revoking(vec![tp("t", 2)]), MemberEvent::Assigned(vec![tp("t", 3)])]
        );
        // The second rebalance waits for the revocation.
        assert_eq!(r.request(), None);
        r.m.revocation_done(&[tp("t", 2)]);
        let second = r.expect_join();
        assert_eq!(second.reason.as_deref(), Some("need to revoke partitions and re-join"));
        assert_eq!(second.protocols[0].1.owned_partitions, [tp("t", 0), tp("t", 1), tp("t", 3)]);
        assert_eq!(second.protocols[0].1.generation, 2);
        let answer =
            JoinGroupAnswer { protocol_name: Some("cooperative-sticky".into()), ..join_ok("m-1", "l", 3) };
        r.m.handle_join(r.now, answer);
        let _ = r.expect_sync();
        r.m.handle_sync(r.now, sync(vec![tp("t", 0), tp("t", 1), tp("t", 3)]));
        assert_eq!(r.events(), [], "nothing moved in the second round");
        assert_eq!(r.m.phase(), MemberPhase::Stable);
    }

    #[test]
    fn cooperative_revokes_the_topics_no_longer_subscribed_before_it_rejoins() {
        let mut r = Run::new(ClassicConfig::new(vec!["range".into()], RebalanceProtocol::Cooperative));
        r.m.subscribe(vec!["t".into(), "u".into()]);
        r.find_coordinator();
        r.join("m-1", 1, vec![tp("t", 0), tp("u", 0)]);
        r.events();
        r.m.subscribe(vec!["t".into()]);
        assert_eq!(r.events(), [MemberEvent::Revoking(vec![tp("u", 0)])]);
        assert_eq!(r.request(), None);
        r.m.revocation_done(&[tp("u", 0)]);
        let join = r.expect_join();
        assert_eq!(join.reason.as_deref(), Some("subscription changed"));
        assert_eq!(join.protocols[0].1.topics, ["t"]);
        assert_eq!(join.protocols[0].1.owned_partitions, [tp("t", 0)]);
    }

    #[test]
    fn a_static_member_stays_on_close_and_a_static_leader_rejoining_skips_the_assignment() {
        let mut cfg = config();
        cfg.instance_id = Some("i-1".into());
        let mut r = Run::new(cfg.clone());
        r.find_coordinator();
        let join = r.expect_join();
        assert_eq!(join.instance_id.as_deref(), Some("i-1"));
        r.m.handle_join(r.now, join_ok("m-1", "leader-0", 4));
        let sync = r.expect_sync();
        assert_eq!(sync.instance_id.as_deref(), Some("i-1"));
        r.m.handle_sync(r.now, sync_ok(vec![tp("t", 0)]));
        r.events();
        assert_eq!(r.heartbeat(ErrorCode::NONE).instance_id.as_deref(), Some("i-1"));
        assert_eq!(r.m.identity().instance_id.as_deref(), Some("i-1"));
        r.m.close(r.now, CloseMode::Default);
        assert_eq!(r.events(), [MemberEvent::Revoking(vec![tp("t", 0)])]);
        r.m.revocation_done(&[tp("t", 0)]);
        assert_eq!(r.events(), [MemberEvent::Left], "no LeaveGroup: the session keeps its place (KIP-345)");
        assert_eq!(r.request(), None);
        assert_eq!(r.m.poll_timeout(), None);

        // The restarted instance leads the group, which is stable: KIP-814 says not to reassign.
        let mut r = Run::new(cfg);
        r.find_coordinator();
        let _ = r.expect_join();
        r.m.handle_join(r.now, JoinGroupAnswer { skip_assignment: true, ..join_ok("m-9", "m-9", 4) });
        assert_eq!(r.events(), [], "no AssignAsLeader");
        let sync = r.expect_sync();
        assert!(sync.assignments.is_empty());
        r.m.handle_sync(r.now, sync_ok(vec![tp("t", 0)]));
        assert_eq!(r.events(), [MemberEvent::Assigned(vec![tp("t", 0)])]);
        // Asked to leave, a static member sends LeaveGroup with its instance id.
        r.m.close(r.now, CloseMode::LeaveGroup);
        r.events();
        r.m.revocation_done(&[tp("t", 0)]);
        assert_eq!(
            r.request(),
            Some(ClassicRequest::LeaveGroup(LeaveGroupCall {
                member_id: "m-9".into(),
                instance_id: Some("i-1".into()),
                reason: CLOSE_REASON.into(),
            }))
        );
        r.m.handle_leave(r.now, ErrorCode::NONE);
        assert_eq!(r.events(), [MemberEvent::Left]);
    }

    #[test]
    fn a_dynamic_member_leaves_on_close_and_a_join_in_flight_is_abandoned() {
        let mut r = Run::new(config());
        r.find_coordinator();
        let _ = r.expect_join();
        r.m.handle_join(r.now, join_error(ErrorCode::MEMBER_ID_REQUIRED, "m-1"));
        let _ = r.expect_join();
        r.m.close(r.now, CloseMode::Default);
        match r.request() {
            Some(ClassicRequest::LeaveGroup(l)) => assert_eq!(l.member_id, "m-1"),
            other => panic!("expected a LeaveGroup, got {other:?}"),
        }
        // The JoinGroup's answer comes after all: ignored.
        r.m.handle_join(r.now, join_ok("m-1", "m-1", 2));
        assert_eq!(r.events(), []);
        r.m.handle_send_failed(r.now);
        assert_eq!(r.events(), [MemberEvent::Left], "leaving is best effort");
    }

    #[test]
    fn closing_during_a_cooperative_rejoin_finishes_the_round_then_revokes_with_its_generation_and_leaves() {
        let mut r = Run::new(ClassicConfig::new(vec!["range".into()], RebalanceProtocol::Cooperative));
        r.find_coordinator();
        r.join("m-1", 1, vec![tp("t", 0), tp("t", 1)]);
        r.events();
        r.heartbeat(ErrorCode::REBALANCE_IN_PROGRESS);
        let _ = r.expect_join();
        r.m.close(r.now, CloseMode::Default);
        // The coordinator counts the JoinGroup and moves to generation 2 once everyone joined:
        // nothing is revoked (and committed) with generation 1 meanwhile.
        assert_eq!(r.events(), []);
        assert_eq!(r.request(), None, "the JoinGroup's answer is awaited");
        r.m.handle_join(r.now, join_ok("m-1", "leader-0", 2));
        let sync = r.expect_sync();
        assert_eq!(sync.generation, 2);
        // t-1 moved away, t-2 is new: the closing member takes nothing on.
        r.m.handle_sync(r.now, sync_ok(vec![tp("t", 0), tp("t", 2)]));
        let events = r.events();
        assert_eq!(
            events,
            [MemberEvent::Revoking(vec![tp("t", 1)]), MemberEvent::Revoking(vec![tp("t", 0)])]
        );
        assert_eq!(
            r.m.identity().generation_or_epoch,
            2,
            "revocations are committed with the new generation"
        );
        assert!(r.m.commit_allowed(&tp("t", 0)).is_ok(), "a revoking partition may still be committed");
        r.m.revocation_done(&[tp("t", 0), tp("t", 1)]);
        match r.request() {
            Some(ClassicRequest::LeaveGroup(l)) => assert_eq!(l.member_id, "m-1"),
            other => panic!("expected a LeaveGroup, got {other:?}"),
        }
    }

    #[test]
    fn the_coordinator_moving_mid_join_is_found_again_and_the_join_resumes() {
        let mut r = Run::new(config());
        r.find_coordinator();
        let _ = r.expect_join();
        r.m.handle_join(r.now, join_error(ErrorCode::MEMBER_ID_REQUIRED, "m-1"));
        let _ = r.expect_join();
        r.m.handle_join(r.now, join_error(ErrorCode::NOT_COORDINATOR, "m-1"));
        r.find_coordinator();
        assert_eq!(r.expect_join().member_id, "m-1", "the same step, with the same member id");
        // A connection lost during the JoinGroup: find the coordinator after a backoff.
        r.m.handle_send_failed(r.now);
        assert_eq!(r.request(), None);
        r.wait(Duration::from_millis(100));
        r.find_coordinator();
        assert_eq!(r.expect_join().member_id, "m-1");
        // The coordinator is loading: retry after the (grown) backoff, same coordinator.
        r.m.handle_join(r.now, join_error(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS, "m-1"));
        assert_eq!(r.request(), None);
        r.wait(Duration::from_millis(200));
        assert!(matches!(r.request(), Some(ClassicRequest::JoinGroup(_))));
    }

    #[test]
    fn a_sync_group_to_a_moved_coordinator_rejoins_after_finding_it() {
        let mut r = Run::new(config());
        r.find_coordinator();
        let _ = r.expect_join();
        r.m.handle_join(r.now, join_ok("m-1", "l", 2));
        let _ = r.expect_sync();
        let answer = SyncGroupAnswer { error: ErrorCode::COORDINATOR_NOT_AVAILABLE, ..sync_ok(vec![]) };
        r.m.handle_sync(r.now, answer);
        r.find_coordinator();
        assert_eq!(r.expect_join().member_id, "m-1");
    }

    #[test]
    fn illegal_generation_loses_the_partitions_and_rejoins_with_the_same_member_id() {
        let mut r = Run::new(config());
        r.find_coordinator();
        r.join("m-1", 5, vec![tp("t", 0)]);
        r.events();
        r.heartbeat(ErrorCode::ILLEGAL_GENERATION);
        assert_eq!(r.events(), [MemberEvent::Lost(vec![tp("t", 0)])]);
        let refused = r.m.commit_allowed(&tp("t", 0)).expect_err("lost");
        assert_eq!(refused.reason, super::super::model::NotOwnedReason::Lost(LostCause::IllegalGeneration));
        let join = r.expect_join();
        assert_eq!(join.member_id, "m-1");
        assert_eq!(join.protocols[0].1.generation, -1);
        // UNKNOWN_MEMBER_ID also forgets the member id.
        r.m.handle_join(r.now, join_ok("m-1", "l", 6));
        let _ = r.expect_sync();
        r.m.handle_sync(r.now, sync_ok(vec![tp("t", 1)]));
        r.events();
        r.heartbeat(ErrorCode::UNKNOWN_MEMBER_ID);
        assert_eq!(r.events(), [MemberEvent::Lost(vec![tp("t", 1)])]);
        assert_eq!(r.expect_join().member_id, "");
    }

    #[test]
    fn no_successful_heartbeat_for_the_session_timeout_asks_the_coordinator_again_and_keeps_the_partitions() {
        let mut r = Run::new(config());
        r.find_coordinator();
        r.join("m-1", 5, vec![tp("t", 0)]);
        r.events();
        // The coordinator stops answering for 45 s (four and a half session timeouts): each
        // heartbeat and FindCoordinator fails. The member keeps asking, and keeps its partition.
        let start = r.now;
        let mut found_again = 0;
        while r.now < start + Duration::from_secs(45) {
            r.m.application_polled(r.now);
            match r.request() {
                Some(ClassicRequest::FindCoordinator) => {
                    found_again += 1;
                    r.m.handle_send_failed(r.now);
                }
                Some(_) => r.m.handle_send_failed(r.now),
                None => {
                    let next = r.m.poll_timeout().expect("a member in a generation always has a timer");
                    assert!(next > r.now, "a timer in the past would have fired");
                    r.now = next;
                }
            }
        }
        assert!(found_again >= 4, "the coordinator is looked for again: {found_again} times");
        assert_eq!(r.events(), [], "nothing is lost on the member's own clock");
        assert!(r.m.commit_allowed(&tp("t", 0)).is_ok());
        // The coordinator is back (a restarted broker reloads the group with fresh sessions):
        // the heartbeat carries the generation held all along, and its answer keeps the member.
        r.wait(Duration::from_secs(1));
        r.find_coordinator();
        match r.request() {
            Some(ClassicRequest::Heartbeat(h)) => {
                assert_eq!((h.member_id.as_str(), h.generation), ("m-1", 5));
                r.m.handle_heartbeat(r.now, ErrorCode::NONE);
            }
            other => panic!("expected a Heartbeat at once, got {other:?}"),
        }
        assert_eq!(r.events(), []);
        assert!(r.m.owned().contains(&tp("t", 0)));
        assert!(r.m.commit_allowed(&tp("t", 0)).is_ok());
    }

    #[test]
    fn a_coordinator_found_again_that_expired_the_member_loses_the_partitions() {
        let mut r = Run::new(config());
        r.find_coordinator();
        r.join("m-1", 5, vec![tp("t", 0)]);
        r.events();
        let start = r.now;
        while r.now < start + r.m.config.session_timeout + Duration::from_secs(1) {
            r.m.application_polled(r.now);
            match r.request() {
                Some(_) => r.m.handle_send_failed(r.now),
                None => r.now = r.m.poll_timeout().expect("a timer"),
            }
        }
        r.wait(Duration::from_secs(1));
        r.find_coordinator();
        let h = match r.request() {
            Some(ClassicRequest::Heartbeat(h)) => h,
            other => panic!("expected a Heartbeat, got {other:?}"),
        };
        assert_eq!(h.generation, 5);
        r.m.handle_heartbeat(r.now, ErrorCode::UNKNOWN_MEMBER_ID);
        assert_eq!(r.events(), [MemberEvent::Lost(vec![tp("t", 0)])]);
        assert_eq!(
            r.m.commit_allowed(&tp("t", 0)).map_err(|e| e.reason),
            Err(super::super::model::NotOwnedReason::Lost(LostCause::UnknownMember))
        );
        // It rejoins without the member id the coordinator no longer knows.
        assert_eq!(r.expect_join().member_id, "");
    }

    #[test]
    fn the_poll_interval_exceeded_is_reported_then_the_member_leaves_and_rejoins_on_the_next_poll() {
        let mut cfg = config();
        cfg.max_poll_interval = Duration::from_secs(10);
        let mut r = Run::new(cfg);
        r.find_coordinator();
        r.join("m-1", 5, vec![tp("t", 0)]);
        r.events();
        // The application stops polling; heartbeats still succeed.
        for _ in 0..3 {
            r.wait(Duration::from_secs(3));
            let Some(ClassicRequest::Heartbeat(_)) = r.request() else { panic!("a heartbeat") };
            r.m.handle_heartbeat(r.now, ErrorCode::NONE);
        }
        r.wait(Duration::from_secs(1));
        match r.request() {
            Some(ClassicRequest::LeaveGroup(l)) => {
                assert_eq!(l.member_id, "m-1");
                assert_eq!(l.reason, POLL_TIMEOUT_REASON);
            }
            other => panic!("expected a LeaveGroup, got {other:?}"),
        }
        assert_eq!(
            r.events(),
            [
                MemberEvent::PollIntervalExceeded { elapsed: Duration::from_secs(10) },
                MemberEvent::Lost(vec![tp("t", 0)])
            ]
        );
        assert_eq!(
            r.m.commit_allowed(&tp("t", 0)).map_err(|e| e.reason),
            Err(super::super::model::NotOwnedReason::Lost(LostCause::PollIntervalExceeded))
        );
        r.m.handle_leave(r.now, ErrorCode::NONE);
        assert_eq!(r.m.phase(), MemberPhase::WaitingForPoll);
        assert_eq!(r.m.poll_timeout(), None, "nothing happens until the application polls");
        assert_eq!(r.request(), None);
        r.wait(Duration::from_secs(60));
        r.m.application_polled(r.now);
        let join = r.expect_join();
        assert_eq!(join.member_id, "", "the leave gave up the member id");
        assert_eq!(join.reason.as_deref(), Some("rejoining after the poll interval was exceeded"));
    }

    #[test]
    fn a_static_member_past_the_poll_interval_sends_no_leave_group() {
        let mut cfg = config();
        cfg.instance_id = Some("i-1".into());
        cfg.max_poll_interval = Duration::from_secs(4);
        let mut r = Run::new(cfg);
        r.find_coordinator();
        r.join("m-1", 5, vec![tp("t", 0)]);
        r.events();
        r.wait(Duration::from_secs(5));
        // The late poll itself finds the interval exceeded, reports it, and rejoins.
        r.m.application_polled(r.now);
        assert_eq!(
            r.events(),
            [
                MemberEvent::PollIntervalExceeded { elapsed: Duration::from_secs(5) },
                MemberEvent::Lost(vec![tp("t", 0)])
            ]
        );
        let join = r.expect_join();
        assert_eq!(join.instance_id.as_deref(), Some("i-1"));
    }

    #[test]
    fn fenced_instance_id_is_fatal_and_ends_every_timer() {
        let mut r = Run::new(config());
        r.find_coordinator();
        r.join("m-1", 5, vec![tp("t", 0)]);
        r.events();
        r.heartbeat(ErrorCode::FENCED_INSTANCE_ID);
        assert_eq!(
            r.events(),
            [MemberEvent::Lost(vec![tp("t", 0)]), MemberEvent::Fatal(MemberError::FencedInstanceId)]
        );
        assert_eq!(r.m.phase(), MemberPhase::Failed);
        assert_eq!(r.m.poll_timeout(), None);
        assert_eq!(r.request(), None);
        r.m.close(r.now, CloseMode::Default);
        assert_eq!(r.events(), []);
    }

    #[test]
    fn fatal_join_errors_and_a_foreign_protocol_end_the_member() {
        for (code, error) in [
            (ErrorCode::GROUP_AUTHORIZATION_FAILED, MemberError::GroupAuthorizationFailed),
            (ErrorCode::INVALID_SESSION_TIMEOUT, MemberError::InvalidSessionTimeout),
            (ErrorCode::GROUP_MAX_SIZE_REACHED, MemberError::GroupMaxSizeReached),
            (ErrorCode::INCONSISTENT_GROUP_PROTOCOL, MemberError::InconsistentGroupProtocol),
            (ErrorCode::UNSUPPORTED_VERSION, MemberError::UnsupportedVersion),
            (ErrorCode(-42), MemberError::Unexpected { code: ErrorCode(-42), call: "JoinGroup" }),
        ] {
            let mut r = Run::new(config());
            r.find_coordinator();
            let _ = r.expect_join();
            r.m.handle_join(r.now, join_error(code, ""));
            assert_eq!(r.events(), [MemberEvent::Fatal(error)], "{code:?}");
        }
        let mut r = Run::new(config());
        r.find_coordinator();
        let _ = r.expect_join();
        r.m.handle_join(
            r.now,
            JoinGroupAnswer { protocol_name: Some("roundrobin".into()), ..join_ok("m", "l", 1) },
        );
        assert_eq!(r.events(), [MemberEvent::Fatal(MemberError::InconsistentGroupProtocol)]);
        let mut r = Run::new(config());
        r.find_coordinator();
        let _ = r.expect_join();
        r.m.handle_join(r.now, join_ok("m", "l", 1));
        let _ = r.expect_sync();
        r.m.handle_sync(r.now, SyncGroupAnswer { protocol_name: Some("sticky".into()), ..sync_ok(vec![]) });
        assert_eq!(r.events(), [MemberEvent::Fatal(MemberError::InconsistentGroupProtocol)]);
    }

    #[test]
    fn an_unanswered_request_fails_at_its_deadline_and_a_stray_answer_is_ignored() {
        let mut r = Run::new(config());
        r.find_coordinator();
        r.join("m-1", 5, vec![tp("t", 0)]);
        r.events();
        r.wait(Duration::from_secs(3));
        r.m.application_polled(r.now);
        assert!(matches!(r.request(), Some(ClassicRequest::Heartbeat(_))));
        // A SyncGroup answer while a heartbeat is in flight is not the heartbeat's.
        r.m.handle_sync(r.now, sync_ok(vec![tp("t", 9)]));
        assert_eq!(r.events(), []);
        assert_eq!(r.m.poll_timeout(), Some(r.now + Duration::from_secs(30)));
        r.wait(Duration::from_secs(30));
        r.m.application_polled(r.now);
        // Counted as a failed heartbeat: find the coordinator after a backoff.
        assert_eq!(r.request(), None);
        r.wait(Duration::from_millis(100));
        assert_eq!(r.request(), Some(ClassicRequest::FindCoordinator));
        assert!(r.m.owned().contains(&tp("t", 0)), "the session has not run out");
    }

    #[test]
    fn a_join_answer_is_awaited_for_the_rebalance_timeout() {
        let mut r = Run::new(config());
        r.find_coordinator();
        let _ = r.expect_join();
        assert_eq!(r.m.poll_timeout(), Some(r.now + Duration::from_secs(305)));
    }
}
