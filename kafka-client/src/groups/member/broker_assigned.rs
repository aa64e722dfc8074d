//! The KIP-848 group member (`group.protocol=consumer`): one request, ConsumerGroupHeartbeat,
//! joins, heartbeats, acknowledges and leaves; the coordinator computes the assignment and the
//! member reconciles toward it. No socket, no clock: only what was sent and what the
//! coordinator answered.
//!
//! ```text
//!   Joining: heartbeat with epoch 0 and every field ──answer: epoch ≥ 1──► Member
//!      ▲                                                                   │ heartbeats every
//!      │ FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: Lost(all), same          │ heartbeat_interval
//!      └── member id, epoch 0 (the id is the client's for life, KIP-1082) ◄┤ (the broker's)
//!                                                                          ▼
//!   target assignment (by topic id) ──► names known? ──no──► NeedTopicNames(ids)
//!                                           │ yes (the resolvable part)
//!                         owned − target ──►Revoking ──revocation_done──┐
//!                         target − owned ──►Assigned (after the revocation) ─► ack heartbeat
//!                                                                         at once with the
//!                                                                         owned set
//!   close ─► Revoking(all) ─► heartbeat epoch -1 (dynamic) / -2 (static, KIP-345) ─► Left
//!   poll interval exceeded ─► PollIntervalExceeded, Lost(all), the same leave ─►
//!       WaitingForPoll ─application_polled─► Joining (epoch 0)
//! ```
//!
//! Behaviour follows Java's `ConsumerHeartbeatRequestManager` / `AbstractMembershipManager`:
//! - Fields: group, member id and epoch always; `InstanceId` always when static; everything
//!   else (rebalance timeout, rack, subscribed names and regex, server assignor, owned
//!   partitions) on the join heartbeat and the first after any error, later only when it
//!   changed (null, or -1 for the timeout, means "unchanged": the request schema's rule).
//!   Leaving a regex subscription sends an empty regex, as Java does.
//! - A reconciliation revokes first and assigns after every revocation is done (Java's
//!   `revokeAndAssign`); one at a time; the next target waits for it. A partition whose topic
//!   id has no name yet is not assigned (the rest of the target is); the ack reports what is
//!   owned, by topic id.
//! - Errors: NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE find the coordinator, then heartbeat
//!   at once; COORDINATOR_LOAD_IN_PROGRESS (and any other retriable code) backs off;
//!   FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID lose everything and rejoin at epoch 0 with the
//!   same member id; GROUP_AUTHORIZATION_FAILED, INVALID_REQUEST, GROUP_MAX_SIZE_REACHED,
//!   UNSUPPORTED_ASSIGNOR, UNSUPPORTED_VERSION, UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID,
//!   INVALID_REGULAR_EXPRESSION and unknown codes are fatal.
//! - Leaving: epoch -1, or -2 for a static member, which the coordinator keeps until its
//!   session times out (`leaveGroupEpoch`); on poll-interval expiry as well (Java leaves with
//!   the same epoch there). KIP-1092: `RemainInGroup` sends nothing for a dynamic member and
//!   -2 for a static one; `LeaveGroup` sends -1 for both.
//! - The session timeout is the broker's (`group.consumer.session.timeout.ms`), not known to
//!   the client: there is no local session clock, only the request deadline.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_vocab::{TopicPartition, Uuid};
use kafka_wire::protocol::{ErrorCode, Recovery};

use super::model::{
    CloseMode, CommitIdentity, LostCause, MemberError, MemberEvent, MemberPhase, NotOwned, Owned,
};
use super::timing::{after, Backoff, PollTimer};

/// The member epoch that joins.
pub(crate) const JOIN_EPOCH: i32 = 0;
/// The member epoch that leaves.
pub(crate) const LEAVE_EPOCH: i32 = -1;
/// The member epoch a static member leaves with: it will rejoin, so the coordinator keeps its
/// assignment until the session times out.
pub(crate) const STATIC_LEAVE_EPOCH: i32 = -2;

/// What the member subscribes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TopicSubscription {
    /// These topic names.
    Topics(Vec<String>),
    /// Every topic matching this RE2/J regex, resolved by the broker (ConsumerGroupHeartbeat
    /// v1+, KIP-848).
    Pattern(String),
}

/// A KIP-848 member's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BrokerAssignedConfig {
    /// The member id, chosen by the client for the life of the process (a UUID string since
    /// Kafka 4.0, KIP-1082).
    pub(crate) member_id: String,
    /// `group.instance.id`: a static member.
    pub(crate) instance_id: Option<String>,
    /// `client.rack`.
    pub(crate) rack: Option<String>,
    /// `group.remote.assignor`: the server assignor to use (`uniform`, `range`), or the
    /// broker's default.
    pub(crate) server_assignor: Option<String>,
    /// `max.poll.interval.ms`, also the rebalance timeout sent (Java).
    pub(crate) max_poll_interval: Duration,
    /// `retry.backoff.ms`.
    pub(crate) retry_backoff: Duration,
    /// `retry.backoff.max.ms`.
    pub(crate) retry_backoff_max: Duration,
    /// `request.timeout.ms`: the longest wait for an answer.
    pub(crate) request_timeout: Duration,
}

impl BrokerAssignedConfig {
    /// Java's defaults for a member with this id.
    pub(crate) fn new(member_id: String) -> Self {
        BrokerAssignedConfig {
            member_id,
            instance_id: None,
            rack: None,
            server_assignor: None,
            max_poll_interval: Duration::from_secs(300),
            retry_backoff: Duration::from_millis(100),
            retry_backoff_max: Duration::from_secs(1),
            request_timeout: Duration::from_secs(30),
        }
    }
}

/// What the driver sends next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BrokerAssignedRequest {
    /// Find the group's coordinator; answer with `coordinator_found` or `handle_send_failed`.
    FindCoordinator,
    /// Answer with `handle_heartbeat`.
    Heartbeat(ConsumerHeartbeatCall),
}

/// A ConsumerGroupHeartbeat request's fields. `None` is the schema's "unchanged since the last
/// heartbeat" (null; -1 for the rebalance timeout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConsumerHeartbeatCall {
    pub(crate) member_id: String,
    /// 0 joins, -1 / -2 leave, otherwise the epoch the coordinator gave.
    pub(crate) member_epoch: i32,
    pub(crate) instance_id: Option<String>,
    pub(crate) rack_id: Option<String>,
    pub(crate) rebalance_timeout: Option<Duration>,
    pub(crate) subscribed_topic_names: Option<Vec<String>>,
    /// v1+; `Some("")` drops a regex subscribed before.
    pub(crate) subscribed_topic_regex: Option<String>,
    pub(crate) server_assignor: Option<String>,
    /// The partitions owned, by topic id, sorted.
    pub(crate) owned: Option<Vec<(Uuid, Vec<i32>)>>,
}

impl ConsumerHeartbeatCall {
    /// Whether this is the heartbeat that leaves.
    #[cfg_attr(not(test), allow(dead_code))] // the property tests' check of every leave
    pub(crate) fn is_leave(&self) -> bool {
        self.member_epoch < 0
    }
}

/// A ConsumerGroupHeartbeat answer, decoded by the driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConsumerHeartbeatAnswer {
    pub(crate) error: ErrorCode,
    /// The member id (the coordinator's, from v0 brokers that still generate it).
    pub(crate) member_id: Option<String>,
    pub(crate) member_epoch: i32,
    pub(crate) heartbeat_interval: Duration,
    /// The target assignment by topic id, if it changed.
    pub(crate) assignment: Option<Vec<(Uuid, Vec<i32>)>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterLeave {
    Left,
    WaitForPoll,
    Rejoin,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The epoch-0 heartbeat is to be sent (or in flight).
    Joining,
    /// The coordinator gave an epoch.
    Member,
    /// The leave heartbeat with this epoch is to be sent (or in flight).
    Leaving {
        epoch: i32,
        then: AfterLeave,
    },
    WaitingForPoll,
    Left,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    FindCoordinator,
    Heartbeat,
    Leave,
}

#[derive(Debug, Clone, Copy)]
struct InFlight {
    kind: Kind,
    deadline: Instant,
}

/// What the coordinator was last told, for "only send what changed".
#[derive(Debug, Clone, PartialEq, Eq)]
struct SentFields {
    topics: Vec<String>,
    regex: Option<String>,
    owned: BTreeMap<Uuid, BTreeSet<i32>>,
}

/// A KIP-848 group member.
#[derive(Debug)]
pub(crate) struct BrokerAssignedMember {
    config: BrokerAssignedConfig,
    subscription: TopicSubscription,
    member_id: String,
    epoch: i32,
    phase: Phase,
    coordinator_known: bool,
    in_flight: Option<InFlight>,
    not_before: Option<Instant>,
    backoff: Backoff,
    heartbeat_interval: Duration,
    next_heartbeat: Instant,
    /// Heartbeat without waiting for the interval: an ack, a subscription change.
    heartbeat_now: bool,
    /// `None`: the next heartbeat sends every field.
    sent: Option<SentFields>,
    /// The latest target assignment.
    target: Option<BTreeMap<Uuid, BTreeSet<i32>>>,
    names: BTreeMap<Uuid, Arc<str>>,
    /// What is owned, by topic id and partition, with its name.
    owned_ids: BTreeMap<(Uuid, i32), TopicPartition>,
    owned: Owned,
    poll: PollTimer,
    closing: Option<CloseMode>,
    events: VecDeque<MemberEvent>,
    now: Instant,
}

impl BrokerAssignedMember {
    /// A member subscribed to `subscription`, created at `now`.
    pub(crate) fn new(config: BrokerAssignedConfig, subscription: TopicSubscription, now: Instant) -> Self {
        let backoff = Backoff::new(config.retry_backoff, config.retry_backoff_max);
        let poll = PollTimer::new(now, config.max_poll_interval);
        BrokerAssignedMember {
            member_id: config.member_id.clone(),
            heartbeat_interval: config.retry_backoff,
            config,
            subscription: normalized(subscription),
            epoch: JOIN_EPOCH,
            phase: Phase::Joining,
            coordinator_known: false,
            in_flight: None,
            not_before: None,
            backoff,
            next_heartbeat: now,
            heartbeat_now: true,
            sent: None,
            target: None,
            names: BTreeMap::new(),
            owned_ids: BTreeMap::new(),
            owned: Owned::default(),
            poll,
            closing: None,
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
    /// (drain `poll_event` after every call). One request at a time: a leave waits for the
    /// heartbeat in flight (answers to two heartbeats could not be told apart); only a
    /// request's deadline passing makes the machine give up on it.
    pub(crate) fn poll_request(&mut self, now: Instant) -> Option<BrokerAssignedRequest> {
        self.touch(now);
        self.on_time(now);
        self.advance();
        let (at, kind) = self.next_step()?;
        if at > now {
            return None;
        }
        let request = match kind {
            Kind::FindCoordinator => BrokerAssignedRequest::FindCoordinator,
            Kind::Heartbeat => {
                self.heartbeat_now = false;
                BrokerAssignedRequest::Heartbeat(self.heartbeat_call())
            }
            Kind::Leave => {
                let Phase::Leaving { epoch, .. } = self.phase else { return None };
                BrokerAssignedRequest::Heartbeat(ConsumerHeartbeatCall {
                    member_id: self.member_id.clone(),
                    member_epoch: epoch,
                    instance_id: self.config.instance_id.clone(),
                    rack_id: None,
                    rebalance_timeout: None,
                    subscribed_topic_names: None,
                    subscribed_topic_regex: None,
                    server_assignor: None,
                    owned: None,
                })
            }
        };
        self.in_flight = Some(InFlight { kind, deadline: after(now, self.config.request_timeout) });
        Some(request)
    }

    /// When to call `poll_request` next at the latest. `None` only once Left or Failed, or
    /// while waiting for `application_polled` after the poll interval ran out.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        if matches!(self.phase, Phase::Left | Phase::Failed | Phase::WaitingForPoll) {
            return None;
        }
        let timers = [
            self.next_step().map(|(at, _)| at),
            self.in_flight.map(|f| f.deadline),
            self.poll_timer_applies().then(|| self.poll.deadline()),
        ];
        timers.into_iter().flatten().min()
    }

    /// Where the member is.
    pub(crate) fn phase(&self) -> MemberPhase {
        match self.phase {
            Phase::Joining => MemberPhase::Joining,
            Phase::Member if self.reconciled() => MemberPhase::Stable,
            Phase::Member => MemberPhase::Rebalancing,
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

    /// The member epoch (0 while joining, -1 / -2 while leaving).
    #[cfg_attr(not(test), allow(dead_code))] // the scenario tests read it; identity() is the driver's
    pub(crate) fn member_epoch(&self) -> i32 {
        self.epoch
    }

    /// What a commit carries now (OffsetCommit v9+ / TxnOffsetCommit v5+ send the epoch).
    pub(crate) fn identity(&self) -> CommitIdentity {
        CommitIdentity {
            member_id: self.member_id.clone(),
            generation_or_epoch: self.epoch,
            instance_id: self.config.instance_id.clone(),
        }
    }

    /// The identity to commit `tp`'s offset with, or why this member may not.
    pub(crate) fn commit_allowed(&self, tp: &TopicPartition) -> Result<CommitIdentity, NotOwned> {
        match self.owned.why_not(tp) {
            None => Ok(self.identity()),
            Some(reason) => Err(NotOwned { partition: tp.clone(), reason }),
        }
    }

    // ---- what the application and the driver did ----

    /// The application asked for records at `now` (or is waiting for some).
    pub(crate) fn application_polled(&mut self, now: Instant) {
        self.touch(now);
        if self.poll_timer_applies() && self.poll.expired(now) {
            self.poll_expired(now);
        }
        self.poll.polled(now);
        match &mut self.phase {
            Phase::WaitingForPoll => self.rejoin(),
            Phase::Leaving { then, .. } if *then == AfterLeave::WaitForPoll => *then = AfterLeave::Rejoin,
            _ => {}
        }
        self.advance();
    }

    /// The application is done with these revoked partitions; they are no longer owned, and
    /// the next heartbeat (sent at once) reports so.
    pub(crate) fn revocation_done(&mut self, partitions: &[TopicPartition]) {
        let done = self.owned.revocation_done(partitions);
        if done.is_empty() {
            return;
        }
        let done: BTreeSet<TopicPartition> = done.into_iter().collect();
        self.owned_ids.retain(|_, tp| !done.contains(tp));
        self.heartbeat_now = true;
        self.reconcile();
        self.advance();
    }

    /// Names for topic ids (from metadata), after `NeedTopicNames`.
    pub(crate) fn learn_topic_names(&mut self, names: impl IntoIterator<Item = (Uuid, String)>) {
        for (id, name) in names {
            self.names.entry(id).or_insert_with(|| Arc::from(name));
        }
        self.reconcile();
        self.advance();
    }

    /// The subscription changed; the next heartbeat (at once) carries it.
    pub(crate) fn subscribe(&mut self, subscription: TopicSubscription) {
        let subscription = normalized(subscription);
        if subscription != self.subscription {
            self.subscription = subscription;
            self.heartbeat_now = true;
        }
    }

    /// Close: revoke everything (the application commits), leave as `mode` says, then `Left`.
    pub(crate) fn close(&mut self, now: Instant, mode: CloseMode) {
        self.touch(now);
        if matches!(self.phase, Phase::Left | Phase::Failed) || self.closing.is_some() {
            return;
        }
        self.closing = Some(mode);
        self.advance();
    }

    // ---- what the coordinator answered ----

    /// The coordinator was found.
    pub(crate) fn coordinator_found(&mut self, now: Instant) {
        self.touch(now);
        if self.take_in_flight(Kind::FindCoordinator) {
            self.coordinator_known = true;
            self.heartbeat_now = true;
            self.advance();
        }
    }

    /// The in-flight request got no answer: the connection broke or it timed out.
    pub(crate) fn handle_send_failed(&mut self, now: Instant) {
        self.touch(now);
        self.send_failed(now);
        self.advance();
    }

    /// The answer to a heartbeat (the leave heartbeat's too: any answer ends the leave).
    pub(crate) fn handle_heartbeat(&mut self, now: Instant, answer: ConsumerHeartbeatAnswer) {
        self.touch(now);
        if self.take_in_flight(Kind::Leave) {
            self.finish_leave();
            self.advance();
            return;
        }
        if !self.take_in_flight(Kind::Heartbeat) || !matches!(self.phase, Phase::Joining | Phase::Member) {
            self.advance();
            return;
        }
        match answer.error {
            ErrorCode::NONE => self.heartbeat_ok(now, answer),
            ErrorCode::NOT_COORDINATOR | ErrorCode::COORDINATOR_NOT_AVAILABLE => {
                self.sent = None;
                self.coordinator_known = false;
                self.heartbeat_now = true;
            }
            ErrorCode::FENCED_MEMBER_EPOCH => self.fenced(LostCause::Fenced),
            ErrorCode::UNKNOWN_MEMBER_ID => self.fenced(LostCause::UnknownMember),
            code => match MemberError::from_code(code) {
                Some(error) => self.fail(error),
                None if code.recovery() == Recovery::Retry => {
                    self.sent = None;
                    self.back_off(now);
                    self.heartbeat_now = true;
                }
                None => self.fail(MemberError::Unexpected { code, call: "ConsumerGroupHeartbeat" }),
            },
        }
        self.advance();
    }

    // ---- inside ----

    fn touch(&mut self, now: Instant) {
        self.now = self.now.max(now);
    }

    fn take_in_flight(&mut self, kind: Kind) -> bool {
        match self.in_flight {
            Some(f) if f.kind == kind => {
                self.in_flight = None;
                true
            }
            _ => false,
        }
    }

    fn poll_timer_applies(&self) -> bool {
        self.phase == Phase::Member && self.closing.is_none()
    }

    /// Whether the member owns exactly the resolvable target, with nothing left to revoke.
    #[cfg_attr(not(test), allow(dead_code))] // the property tests' convergence check
    fn reconciled(&self) -> bool {
        if self.owned.revocation_pending() {
            return false;
        }
        let Some(target) = &self.target else { return true };
        let wanted = target.iter().flat_map(|(id, ps)| ps.iter().map(move |p| (*id, *p)));
        wanted.eq(self.owned_ids.keys().copied())
    }

    fn on_time(&mut self, now: Instant) {
        if self.in_flight.is_some_and(|f| f.deadline <= now) {
            self.send_failed(now);
        }
        if self.poll_timer_applies() && self.poll.expired(now) {
            self.poll_expired(now);
        }
    }

    fn send_failed(&mut self, now: Instant) {
        let Some(sent) = self.in_flight.take() else { return };
        match sent.kind {
            Kind::FindCoordinator => self.back_off(now),
            Kind::Heartbeat => {
                self.sent = None;
                self.coordinator_known = false;
                self.heartbeat_now = true;
                self.back_off(now);
            }
            Kind::Leave => self.finish_leave(),
        }
    }

    fn back_off(&mut self, now: Instant) {
        self.not_before = Some(after(now, self.backoff.failed()));
    }

    fn heartbeat_ok(&mut self, now: Instant, answer: ConsumerHeartbeatAnswer) {
        if answer.member_epoch <= 0 {
            self.fail(MemberError::BadAnswer(format!(
                "ConsumerGroupHeartbeat succeeded with member epoch {}",
                answer.member_epoch
            )));
            return;
        }
        self.backoff.reset();
        self.not_before = None;
        if let Some(id) = answer.member_id.filter(|id| !id.is_empty()) {
            self.member_id = id;
        }
        self.epoch = answer.member_epoch;
        self.heartbeat_interval = if answer.heartbeat_interval.is_zero() {
            self.config.retry_backoff
        } else {
            answer.heartbeat_interval
        };
        self.next_heartbeat = after(now, self.heartbeat_interval);
        self.phase = Phase::Member;
        if self.closing.is_some() {
            return;
        }
        if let Some(assignment) = answer.assignment {
            let mut target: BTreeMap<Uuid, BTreeSet<i32>> = BTreeMap::new();
            for (id, partitions) in assignment {
                target.entry(id).or_default().extend(partitions);
            }
            target.retain(|_, ps| !ps.is_empty());
            self.target = Some(target);
        }
        self.reconcile();
        let unknown: Vec<Uuid> = self
            .target
            .iter()
            .flat_map(BTreeMap::keys)
            .filter(|id| !self.names.contains_key(*id))
            .copied()
            .collect();
        if !unknown.is_empty() {
            self.events.push_back(MemberEvent::NeedTopicNames(unknown));
        }
    }

    /// Moves the owned set toward the target: revoke what is no longer in it and, once no
    /// revocation is pending, assign what is new and can be named.
    fn reconcile(&mut self) {
        if self.phase != Phase::Member || self.closing.is_some() || self.owned.revocation_pending() {
            return;
        }
        let Some(target) = &self.target else { return };
        let in_target = |(id, p): &(Uuid, i32)| target.get(id).is_some_and(|ps| ps.contains(p));
        let gone: Vec<TopicPartition> =
            self.owned_ids.iter().filter(|(key, _)| !in_target(key)).map(|(_, tp)| tp.clone()).collect();
        if !gone.is_empty() {
            let revoking = self.owned.revoke(gone.iter());
            if !revoking.is_empty() {
                self.events.push_back(MemberEvent::Revoking(revoking));
            }
            return;
        }
        let mut new = Vec::new();
        for (id, partitions) in target {
            let Some(name) = self.names.get(id) else { continue };
            for p in partitions {
                if !self.owned_ids.contains_key(&(*id, *p)) {
                    new.push(((*id, *p), TopicPartition::new(name, *p)));
                }
            }
        }
        if new.is_empty() {
            return;
        }
        // The same name under another id (a topic deleted and recreated) is revoked above
        // before the new one is taken, so a name is never owned twice.
        let added = self.owned.assign(new.iter().map(|(_, tp)| tp.clone()));
        self.owned_ids.extend(new);
        if !added.is_empty() {
            self.events.push_back(MemberEvent::Assigned(added));
        }
        self.heartbeat_now = true;
    }

    fn lose_everything(&mut self, cause: LostCause) {
        let lost = self.owned.lose_all(cause);
        if !lost.is_empty() {
            self.events.push_back(MemberEvent::Lost(lost));
        }
        self.owned_ids.clear();
        self.target = None;
    }

    fn fenced(&mut self, cause: LostCause) {
        self.lose_everything(cause);
        self.epoch = JOIN_EPOCH;
        self.sent = None;
        if self.closing.is_some() {
            self.end();
        } else {
            self.phase = Phase::Joining;
            self.heartbeat_now = true;
        }
    }

    fn fail(&mut self, error: MemberError) {
        self.lose_everything(LostCause::Fatal);
        self.events.push_back(MemberEvent::Fatal(error));
        self.in_flight = None;
        self.phase = Phase::Failed;
    }

    fn end(&mut self) {
        self.in_flight = None;
        self.phase = Phase::Left;
        self.events.push_back(MemberEvent::Left);
    }

    fn rejoin(&mut self) {
        self.epoch = JOIN_EPOCH;
        self.sent = None;
        self.phase = Phase::Joining;
        self.heartbeat_now = true;
    }

    fn leave_epoch(&self, mode: CloseMode) -> Option<i32> {
        let is_static = self.config.instance_id.is_some();
        match mode {
            CloseMode::Default | CloseMode::RemainInGroup if is_static => Some(STATIC_LEAVE_EPOCH),
            CloseMode::Default | CloseMode::LeaveGroup => Some(LEAVE_EPOCH),
            CloseMode::RemainInGroup => None,
        }
    }

    fn poll_expired(&mut self, now: Instant) {
        self.events.push_back(MemberEvent::PollIntervalExceeded { elapsed: self.poll.elapsed(now) });
        self.lose_everything(LostCause::PollIntervalExceeded);
        let epoch = if self.config.instance_id.is_some() { STATIC_LEAVE_EPOCH } else { LEAVE_EPOCH };
        self.start_leaving(epoch, AfterLeave::WaitForPoll);
    }

    /// The leave goes next. A heartbeat still in flight is waited for (its answer is ignored):
    /// both are heartbeats, so an answer could not be told from the other's.
    fn start_leaving(&mut self, epoch: i32, then: AfterLeave) {
        self.epoch = epoch;
        self.sent = None;
        self.phase = Phase::Leaving { epoch, then };
    }

    fn finish_leave(&mut self) {
        let Phase::Leaving { then, .. } = self.phase else { return };
        self.epoch = JOIN_EPOCH;
        match then {
            AfterLeave::Left => self.end(),
            AfterLeave::WaitForPoll => self.phase = Phase::WaitingForPoll,
            AfterLeave::Rejoin => self.rejoin(),
        }
    }

    fn advance(&mut self) {
        if let Some(mode) = self.closing {
            match self.phase {
                Phase::Left | Phase::Failed => {}
                Phase::Leaving { ref mut then, .. } => *then = AfterLeave::Left,
                // Not a member yet: wait for the join heartbeat in flight, if any, to know.
                Phase::Joining if self.in_flight.is_some_and(|f| f.kind == Kind::Heartbeat) => {}
                Phase::Joining | Phase::WaitingForPoll => self.end(),
                Phase::Member => {
                    let revoking = self.owned.revoke_all();
                    if !revoking.is_empty() {
                        self.events.push_back(MemberEvent::Revoking(revoking));
                    }
                    if !self.owned.revocation_pending() {
                        match self.leave_epoch(mode) {
                            Some(epoch) => self.start_leaving(epoch, AfterLeave::Left),
                            None => self.end(),
                        }
                    }
                }
            }
        }
        if matches!(self.phase, Phase::Leaving { .. }) && !self.coordinator_known && self.in_flight.is_none()
        {
            // Leaving is best effort: without a coordinator there is no one to tell.
            self.finish_leave();
        }
    }

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
            Phase::Joining => Some((ready, Kind::Heartbeat)),
            Phase::Member if self.heartbeat_now => Some((ready, Kind::Heartbeat)),
            Phase::Member => Some((self.next_heartbeat, Kind::Heartbeat)),
            _ => None,
        }
    }

    /// The heartbeat to send: every field after a join or an error, otherwise only what
    /// changed since the last one.
    fn heartbeat_call(&mut self) -> ConsumerHeartbeatCall {
        let full = self.sent.is_none() || self.phase == Phase::Joining;
        let (topics, regex) = match &self.subscription {
            TopicSubscription::Topics(names) => (names.clone(), None),
            TopicSubscription::Pattern(p) => (Vec::new(), Some(p.clone())),
        };
        let mut owned: BTreeMap<Uuid, BTreeSet<i32>> = BTreeMap::new();
        for (id, p) in self.owned_ids.keys() {
            owned.entry(*id).or_default().insert(*p);
        }
        let before = if full { None } else { self.sent.as_ref() };
        let call = ConsumerHeartbeatCall {
            member_id: self.member_id.clone(),
            member_epoch: self.epoch,
            instance_id: self.config.instance_id.clone(),
            rack_id: if full { self.config.rack.clone() } else { None },
            rebalance_timeout: full.then_some(self.config.max_poll_interval),
            subscribed_topic_names: match before {
                Some(b) if b.topics == topics => None,
                _ => Some(topics.clone()),
            },
            subscribed_topic_regex: match before {
                None => regex.clone(),
                Some(b) if b.regex == regex => None,
                Some(_) => Some(regex.clone().unwrap_or_default()),
            },
            server_assignor: if full { self.config.server_assignor.clone() } else { None },
            owned: match before {
                Some(b) if b.owned == owned => None,
                _ => Some(owned.iter().map(|(id, ps)| (*id, ps.iter().copied().collect())).collect()),
            },
        };
        self.sent = Some(SentFields { topics, regex, owned });
        call
    }
}

fn normalized(subscription: TopicSubscription) -> TopicSubscription {
    match subscription {
        TopicSubscription::Topics(mut names) => {
            names.sort();
            names.dedup();
            TopicSubscription::Topics(names)
        }
        pattern @ TopicSubscription::Pattern(_) => pattern,
    }
}

#[cfg(test)]
mod tests {
    use super::super::model::NotOwnedReason;
    use super::*;

    const A: Uuid = Uuid([1; 16]);
    const B: Uuid = Uuid([2; 16]);
    const C: Uuid = Uuid([3; 16]);

    fn tp(topic: &str, p: i32) -> TopicPartition {
        TopicPartition::new(topic, p)
    }

    fn config() -> BrokerAssignedConfig {
        let mut c = BrokerAssignedConfig::new("member-uuid".into());
        c.rack = Some("rack-1".into());
        c.server_assignor = Some("uniform".into());
        c
    }

    struct Run {
        m: BrokerAssignedMember,
        now: Instant,
    }

    impl Run {
        fn new(config: BrokerAssignedConfig) -> Self {
            let now = Instant::now();
            Run {
                m: BrokerAssignedMember::new(config, TopicSubscription::Topics(vec!["a".into()]), now),
                now,
            }
        }

        fn wait(&mut self, d: Duration) {
            self.now += d;
        }

        fn request(&mut self) -> Option<BrokerAssignedRequest> {
            self.m.poll_request(self.now)
        }

        fn events(&mut self) -> Vec<MemberEvent> {
            std::iter::from_fn(|| self.m.poll_event()).collect()
        }

        fn heartbeat(&mut self) -> ConsumerHeartbeatCall {
            match self.request() {
                Some(BrokerAssignedRequest::Heartbeat(h)) => h,
                other => panic!("expected a heartbeat, got {other:?}"),
            }
        }

        fn find_coordinator(&mut self) {
            assert_eq!(self.request(), Some(BrokerAssignedRequest::FindCoordinator));
            self.m.coordinator_found(self.now);
        }

        fn answer(&mut self, epoch: i32, assignment: Option<Vec<(Uuid, Vec<i32>)>>) {
            self.m.handle_heartbeat(self.now, ok(epoch, assignment));
        }

        /// Joins at epoch 1 owning a-0 and a-1.
        fn joined(&mut self) {
            self.find_coordinator();
            let _ = self.heartbeat();
            self.m.learn_topic_names([(A, "a".to_owned()), (B, "b".to_owned())]);
            self.answer(1, Some(vec![(A, vec![1, 0])]));
            assert_eq!(self.events(), [MemberEvent::Assigned(vec![tp("a", 0), tp("a", 1)])]);
            let ack = self.heartbeat();
            assert_eq!(ack.owned, Some(vec![(A, vec![0, 1])]));
            self.answer(1, None);
        }
    }

    fn ok(epoch: i32, assignment: Option<Vec<(Uuid, Vec<i32>)>>) -> ConsumerHeartbeatAnswer {
        ConsumerHeartbeatAnswer {
            error: ErrorCode::NONE,
            member_id: None,
            member_epoch: epoch,
            heartbeat_interval: Duration::from_secs(5),
            assignment,
        }
    }

    fn error(code: ErrorCode) -> ConsumerHeartbeatAnswer {
        ConsumerHeartbeatAnswer { error: code, ..ok(0, None) }
    }

    #[test]
    fn the_join_sends_every_field_waits_for_topic_names_assigns_and_acks_only_what_changed() {
        let mut cfg = config();
        cfg.instance_id = Some("i-1".into());
        let mut r = Run::new(cfg);
        r.find_coordinator();
        let join = r.heartbeat();
        assert_eq!(
            join,
            ConsumerHeartbeatCall {
                member_id: "member-uuid".into(),
                member_epoch: 0,
                instance_id: Some("i-1".into()),
                rack_id: Some("rack-1".into()),
                rebalance_timeout: Some(Duration::from_secs(300)),
                subscribed_topic_names: Some(vec!["a".into()]),
                subscribed_topic_regex: None,
                server_assignor: Some("uniform".into()),
                owned: Some(vec![]),
            }
        );
        assert!(!join.is_leave());
        assert_eq!(r.request(), None, "one heartbeat at a time");
        // The target names a topic id the member cannot name yet.
        r.answer(1, Some(vec![(A, vec![1, 0])]));
        assert_eq!(r.events(), [MemberEvent::NeedTopicNames(vec![A])]);
        assert_eq!(r.m.member_epoch(), 1);
        assert_eq!(r.m.phase(), MemberPhase::Rebalancing);
        r.m.learn_topic_names([(A, "a".to_owned())]);
        assert_eq!(r.events(), [MemberEvent::Assigned(vec![tp("a", 0), tp("a", 1)])]);
        // The ack goes at once, with only what changed: the owned partitions (and the
        // instance id, which Java sends on every heartbeat).
        let ack = r.heartbeat();
        assert_eq!(
            ack,
            ConsumerHeartbeatCall {
                member_id: "member-uuid".into(),
                member_epoch: 1,
                instance_id: Some("i-1".into()),
                rack_id: None,
                rebalance_timeout: None,
                subscribed_topic_names: None,
                subscribed_topic_regex: None,
                server_assignor: None,
                owned: Some(vec![(A, vec![0, 1])]),
            }
        );
        r.answer(2, None);
        assert_eq!(r.m.phase(), MemberPhase::Stable);
        assert_eq!(r.request(), None);
        assert_eq!(r.m.poll_timeout(), Some(r.now + Duration::from_secs(5)), "the broker's interval");
        r.wait(Duration::from_secs(5));
        r.m.application_polled(r.now);
        let beat = r.heartbeat();
        assert_eq!((beat.member_epoch, beat.owned, beat.subscribed_topic_names), (2, None, None));
        assert_eq!(
            r.m.commit_allowed(&tp("a", 1)),
            Ok(CommitIdentity {
                member_id: "member-uuid".into(),
                generation_or_epoch: 2,
                instance_id: Some("i-1".into())
            })
        );
    }

    #[test]
    fn reconciliation_revokes_first_and_assigns_after_the_revocation_is_done() {
        let mut r = Run::new(config());
        r.joined();
        r.wait(Duration::from_secs(5));
        r.m.application_polled(r.now);
        let _ = r.heartbeat();
        // a-0 moves away, b-0 comes.
        r.answer(2, Some(vec![(A, vec![1]), (B, vec![0])]));
        assert_eq!(
            r.events(),
            [MemberEvent::Revoking(vec![tp("a", 0)])],
            "nothing assigned before the revocation"
        );
        assert!(r.m.commit_allowed(&tp("a", 0)).is_ok());
        assert_eq!(r.m.commit_allowed(&tp("b", 0)).map_err(|e| e.reason), Err(NotOwnedReason::NeverAssigned));
        // A heartbeat while revoking still reports a-0 (by not reporting a change).
        r.wait(Duration::from_secs(5));
        r.m.application_polled(r.now);
        assert_eq!(r.heartbeat().owned, None);
        r.answer(2, None);
        r.m.revocation_done(&[tp("a", 0)]);
        assert_eq!(r.events(), [MemberEvent::Assigned(vec![tp("b", 0)])]);
        assert_eq!(r.m.commit_allowed(&tp("a", 0)).map_err(|e| e.reason), Err(NotOwnedReason::Revoked));
        let ack = r.heartbeat();
        assert_eq!(ack.owned, Some(vec![(A, vec![1]), (B, vec![0])]), "a-0 is reported gone at once");
        r.answer(3, None);
        assert_eq!(r.m.phase(), MemberPhase::Stable);
    }

    #[test]
    fn partitions_of_unnamed_topics_wait_while_the_rest_is_assigned() {
        let mut r = Run::new(config());
        r.joined();
        r.wait(Duration::from_secs(5));
        r.m.application_polled(r.now);
        let _ = r.heartbeat();
        r.answer(2, Some(vec![(A, vec![0, 1]), (C, vec![0])]));
        assert_eq!(r.events(), [MemberEvent::NeedTopicNames(vec![C])]);
        assert_eq!(r.m.phase(), MemberPhase::Rebalancing);
        // Still unknown at the next heartbeat: asked again.
        r.wait(Duration::from_secs(5));
        r.m.application_polled(r.now);
        let _ = r.heartbeat();
        r.answer(2, None);
        assert_eq!(r.events(), [MemberEvent::NeedTopicNames(vec![C])]);
        r.m.learn_topic_names([(C, "c".to_owned())]);
        assert_eq!(r.events(), [MemberEvent::Assigned(vec![tp("c", 0)])]);
        assert_eq!(r.heartbeat().owned, Some(vec![(A, vec![0, 1]), (C, vec![0])]));
    }

    #[test]
    fn fencing_loses_everything_and_rejoins_at_epoch_0_with_the_same_member_id() {
        for code in [ErrorCode::FENCED_MEMBER_EPOCH, ErrorCode::UNKNOWN_MEMBER_ID] {
            let mut r = Run::new(config());
            r.joined();
            r.wait(Duration::from_secs(5));
            r.m.application_polled(r.now);
            let _ = r.heartbeat();
            r.m.handle_heartbeat(r.now, error(code));
            assert_eq!(r.events(), [MemberEvent::Lost(vec![tp("a", 0), tp("a", 1)])], "{code:?}");
            let cause = if code == ErrorCode::FENCED_MEMBER_EPOCH {
                LostCause::Fenced
            } else {
                LostCause::UnknownMember
            };
            assert_eq!(
                r.m.commit_allowed(&tp("a", 0)).map_err(|e| e.reason),
                Err(NotOwnedReason::Lost(cause))
            );
            let rejoin = r.heartbeat();
            assert_eq!(rejoin.member_id, "member-uuid");
            assert_eq!(rejoin.member_epoch, 0);
            assert_eq!(rejoin.owned, Some(vec![]));
            assert_eq!(rejoin.rebalance_timeout, Some(Duration::from_secs(300)), "every field again");
            assert_eq!(rejoin.subscribed_topic_names, Some(vec!["a".into()]));
        }
    }

    #[test]
    fn unsupported_version_on_the_first_heartbeat_is_fatal_and_allows_the_classic_fallback() {
        let mut r = Run::new(config());
        r.find_coordinator();
        let _ = r.heartbeat();
        r.m.handle_heartbeat(r.now, error(ErrorCode::UNSUPPORTED_VERSION));
        let events = r.events();
        assert_eq!(events, [MemberEvent::Fatal(MemberError::UnsupportedVersion)]);
        let MemberEvent::Fatal(e) = &events[0] else { unreachable!() };
        assert!(e.allows_classic_fallback());
        assert_eq!(r.m.phase(), MemberPhase::Failed);
        assert_eq!(r.m.poll_timeout(), None);
    }

    #[test]
    fn the_fatal_codes_end_the_member_and_a_retriable_one_backs_off() {
        for code in [
            ErrorCode::GROUP_AUTHORIZATION_FAILED,
            ErrorCode::INVALID_REQUEST,
            ErrorCode::GROUP_MAX_SIZE_REACHED,
            ErrorCode::UNSUPPORTED_ASSIGNOR,
            ErrorCode::UNRELEASED_INSTANCE_ID,
            ErrorCode::FENCED_INSTANCE_ID,
            ErrorCode::INVALID_REGULAR_EXPRESSION,
        ] {
            let mut r = Run::new(config());
            r.joined();
            r.m.application_polled(r.now);
            r.wait(Duration::from_secs(5));
            let _ = r.heartbeat();
            r.m.handle_heartbeat(r.now, error(code));
            let want = MemberError::from_code(code).expect("named");
            assert_eq!(
                r.events(),
                [MemberEvent::Lost(vec![tp("a", 0), tp("a", 1)]), MemberEvent::Fatal(want)],
                "{code:?}"
            );
        }
        let mut r = Run::new(config());
        r.find_coordinator();
        let _ = r.heartbeat();
        r.m.handle_heartbeat(r.now, error(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS));
        assert_eq!(r.request(), None);
        r.wait(Duration::from_millis(100));
        assert_eq!(r.heartbeat().member_epoch, 0);
        r.m.handle_heartbeat(r.now, error(ErrorCode(-99)));
        assert_eq!(
            r.events(),
            [MemberEvent::Fatal(MemberError::Unexpected {
                code: ErrorCode(-99),
                call: "ConsumerGroupHeartbeat"
            })]
        );
    }

    #[test]
    fn a_coordinator_error_refinds_it_and_resends_every_field() {
        let mut r = Run::new(config());
        r.joined();
        r.wait(Duration::from_secs(5));
        r.m.application_polled(r.now);
        let _ = r.heartbeat();
        r.m.handle_heartbeat(r.now, error(ErrorCode::NOT_COORDINATOR));
        r.find_coordinator();
        let again = r.heartbeat();
        assert_eq!(again.member_epoch, 1);
        assert_eq!(again.owned, Some(vec![(A, vec![0, 1])]));
        assert_eq!(again.subscribed_topic_names, Some(vec!["a".into()]));
        assert_eq!(again.server_assignor.as_deref(), Some("uniform"));
        assert!(r.m.owned().contains(&tp("a", 0)), "nothing lost");
    }

    #[test]
    fn leaving_uses_epoch_minus_1_or_minus_2_for_a_static_member() {
        let leave_epoch = |instance: Option<&str>, mode: CloseMode| {
            let mut cfg = config();
            cfg.instance_id = instance.map(str::to_owned);
            let mut r = Run::new(cfg);
            r.joined();
            r.m.close(r.now, mode);
            assert_eq!(r.events(), [MemberEvent::Revoking(vec![tp("a", 0), tp("a", 1)])]);
            assert_eq!(r.m.phase(), MemberPhase::Rebalancing, "the application commits first");
            r.m.revocation_done(&[tp("a", 0), tp("a", 1)]);
            let epoch = match r.request() {
                Some(BrokerAssignedRequest::Heartbeat(h)) => {
                    assert!(h.is_leave());
                    assert_eq!(h.instance_id.as_deref(), instance);
                    r.m.handle_heartbeat(r.now, ok(h.member_epoch, None));
                    Some(h.member_epoch)
                }
                None => None,
                other => panic!("{other:?}"),
            };
            assert_eq!(r.events(), [MemberEvent::Left]);
            assert_eq!(r.m.poll_timeout(), None);
            epoch
        };
        assert_eq!(leave_epoch(None, CloseMode::Default), Some(LEAVE_EPOCH));
        assert_eq!(leave_epoch(Some("i-1"), CloseMode::Default), Some(STATIC_LEAVE_EPOCH));
        assert_eq!(leave_epoch(Some("i-1"), CloseMode::LeaveGroup), Some(LEAVE_EPOCH));
        assert_eq!(leave_epoch(Some("i-1"), CloseMode::RemainInGroup), Some(STATIC_LEAVE_EPOCH));
        assert_eq!(leave_epoch(None, CloseMode::RemainInGroup), None, "KIP-1092: nothing sent");
    }

    #[test]
    fn the_poll_interval_exceeded_leaves_with_minus_1_and_the_next_poll_rejoins_at_epoch_0() {
        let mut cfg = config();
        cfg.max_poll_interval = Duration::from_secs(12);
        let mut r = Run::new(cfg);
        r.joined();
        for _ in 0..2 {
            r.wait(Duration::from_secs(5));
            let _ = r.heartbeat();
            r.answer(1, None);
        }
        r.wait(Duration::from_secs(2));
        let leave = r.heartbeat();
        assert_eq!(leave.member_epoch, LEAVE_EPOCH);
        assert_eq!(
            r.events(),
            [
                MemberEvent::PollIntervalExceeded { elapsed: Duration::from_secs(12) },
                MemberEvent::Lost(vec![tp("a", 0), tp("a", 1)])
            ]
        );
        assert_eq!(
            r.m.commit_allowed(&tp("a", 0)).map_err(|e| e.reason),
            Err(NotOwnedReason::Lost(LostCause::PollIntervalExceeded))
        );
        r.m.handle_heartbeat(r.now, ok(LEAVE_EPOCH, None));
        assert_eq!(r.m.phase(), MemberPhase::WaitingForPoll);
        assert_eq!(r.m.poll_timeout(), None);
        r.m.application_polled(r.now);
        let rejoin = r.heartbeat();
        assert_eq!((rejoin.member_epoch, rejoin.member_id.as_str()), (0, "member-uuid"));
        assert_eq!(rejoin.owned, Some(vec![]));
    }

    #[test]
    fn a_regex_subscription_sends_an_empty_name_list_and_dropping_it_an_empty_regex() {
        let mut r = Run::new(config());
        r.m.subscribe(TopicSubscription::Pattern("orders-.*".into()));
        r.find_coordinator();
        let join = r.heartbeat();
        assert_eq!(join.subscribed_topic_regex.as_deref(), Some("orders-.*"));
        assert_eq!(join.subscribed_topic_names, Some(vec![]));
        r.answer(1, None);
        r.m.subscribe(TopicSubscription::Topics(vec!["b".into(), "a".into(), "a".into()]));
        let change = r.heartbeat();
        assert_eq!(change.subscribed_topic_regex.as_deref(), Some(""));
        assert_eq!(change.subscribed_topic_names, Some(vec!["a".into(), "b".into()]));
        assert_eq!(change.rebalance_timeout, None);
        r.answer(1, None);
        // The same subscription again changes nothing.
        r.m.subscribe(TopicSubscription::Topics(vec!["a".into(), "b".into()]));
        assert_eq!(r.request(), None);
    }

    #[test]
    fn a_lost_connection_is_retried_after_a_backoff_and_an_unanswered_heartbeat_times_out() {
        let mut r = Run::new(config());
        r.joined();
        r.wait(Duration::from_secs(5));
        r.m.application_polled(r.now);
        let _ = r.heartbeat();
        assert_eq!(r.m.poll_timeout(), Some(r.now + Duration::from_secs(30)));
        r.wait(Duration::from_secs(30));
        r.m.application_polled(r.now);
        assert_eq!(r.request(), None, "counted failed; a backoff before finding the coordinator");
        r.wait(Duration::from_millis(100));
        r.find_coordinator();
        assert_eq!(r.heartbeat().owned, Some(vec![(A, vec![0, 1])]));
        // A stray answer with nothing in flight is ignored.
        r.m.handle_send_failed(r.now);
        r.m.handle_heartbeat(r.now, error(ErrorCode::FENCED_MEMBER_EPOCH));
        assert_eq!(r.events(), []);
        assert!(r.m.owned().contains(&tp("a", 0)));
    }

    #[test]
    fn closing_while_the_join_is_in_flight_waits_for_its_answer_then_leaves() {
        let mut r = Run::new(config());
        r.find_coordinator();
        let _ = r.heartbeat();
        r.m.close(r.now, CloseMode::Default);
        assert_eq!(r.events(), []);
        r.answer(1, Some(vec![(A, vec![0])]));
        assert_eq!(r.events(), [], "no assignment is taken while closing");
        assert_eq!(r.heartbeat().member_epoch, LEAVE_EPOCH);
        r.m.handle_send_failed(r.now);
        assert_eq!(r.events(), [MemberEvent::Left]);
    }

    #[test]
    fn the_member_enum_hands_over_to_a_classic_member_after_unsupported_version() {
        use super::super::classic::{ClassicConfig, ClassicMember, ClassicRequest, RebalanceProtocol};
        use super::super::Member;
        let now = Instant::now();
        let mut member = Member::BrokerAssigned(BrokerAssignedMember::new(
            config(),
            TopicSubscription::Topics(vec!["a".into()]),
            now,
        ));
        let Member::BrokerAssigned(m) = &mut member else { unreachable!() };
        assert_eq!(m.poll_request(now), Some(BrokerAssignedRequest::FindCoordinator));
        member.coordinator_found(now);
        let Member::BrokerAssigned(m) = &mut member else { unreachable!() };
        assert!(matches!(m.poll_request(now), Some(BrokerAssignedRequest::Heartbeat(_))));
        m.handle_heartbeat(now, error(ErrorCode::UNSUPPORTED_VERSION));
        let fatal = std::iter::from_fn(|| member.poll_event()).find_map(|e| match e {
            MemberEvent::Fatal(e) => Some(e),
            _ => None,
        });
        assert!(fatal.is_some_and(|e| e.allows_classic_fallback()));
        assert_eq!(member.phase(), MemberPhase::Failed);
        member = Member::Classic(ClassicMember::new(
            ClassicConfig::new(vec!["cooperative-sticky".into()], RebalanceProtocol::Cooperative),
            vec!["a".into()],
            now,
        ));
        assert_eq!(member.phase(), MemberPhase::Joining);
        assert!(member.poll_timeout().is_some());
        let Member::Classic(c) = &mut member else { unreachable!() };
        assert_eq!(c.poll_request(now), Some(ClassicRequest::FindCoordinator));
        member.handle_send_failed(now);
        member.application_polled(now);
        member.revocation_done(&[]);
        assert!(member.owned().partitions().is_empty());
        assert_eq!(member.identity().generation_or_epoch, -1);
        assert!(member.commit_allowed(&tp("a", 0)).is_err());
        member.close(now, CloseMode::Default);
        assert_eq!(member.poll_event(), Some(MemberEvent::Left));
    }
}
