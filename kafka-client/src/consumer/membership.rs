//! The group member's own task: it runs a [`Member`] state machine (`groups/member/`) against
//! the group's coordinator — sending what the machine asks, on the member's own connection
//! ([`Socket::GroupMember`](crate::cluster::client::Socket)), handing back the answers, waking
//! at the machine's deadlines — so that heartbeats never wait for the application. The
//! application's side ([`Consumer`](crate::Consumer)) shares the machine behind a lock for the
//! calls that cannot wait (the poll clock, finished revocations, commit checks) and reads the
//! machine's events from a channel.
//!
//! ```text
//!   Consumer::poll ──application_polled / revocation_done──► Member ◄──handle_*── this task
//!        ▲                                                    │                    │  ▲
//!        └──────────── Assigned, Revoking, Lost, … ◄──────────┘   poll_request ───►│  │ answers
//!                                                                                 ▼  │
//!                                                                          the coordinator
//! ```
//!
//! The task also does the two jobs the machines leave to a driver: the classic leader's
//! assignment (the assignor over fresh Metadata) and naming KIP-848's topic ids. And it looks
//! at the subscribed topics' Metadata every `metadata.max.age.ms`: a topic that gained
//! partitions, or a new topic matching a pattern, makes a classic member rejoin, so that new
//! partitions are read from their start instead of being left out.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{mpsc, Notify};

use crate::cluster::client::Client;
use crate::cluster::router::{PartitionResults, TopicPartition};
use crate::consumer::config::{ConsumerConfig, GroupProtocol, Subscription};
use crate::consumer::error::{ConsumerError, NotOwnedReason};
use crate::consumer::member_wire::{
    by_topic, consumer_heartbeat_answer, encode_subscription, join_answer, leave_answer, sync_answer,
    ASSIGNMENT_VERSION,
};
use crate::error::{BrokerRef, ClientError};
use crate::groups::assignors::{assignor_by_name, AssignmentInput, MemberSubscription};
use crate::groups::group_metadata::ConsumerGroupMetadata;
use crate::groups::member::broker_assigned::{
    BrokerAssignedConfig, BrokerAssignedMember, BrokerAssignedRequest, ConsumerHeartbeatAnswer,
    ConsumerHeartbeatCall, TopicSubscription,
};
use crate::groups::member::classic::{
    ClassicConfig, ClassicMember, ClassicRequest, JoinGroupAnswer, JoinGroupCall, LeaveGroupCall,
    SyncGroupAnswer, SyncGroupCall,
};
use crate::groups::member::model::{
    CloseMode, CommitIdentity, GroupMemberSubscription, MemberEvent, MemberPhase,
};
use crate::groups::member::Member;
use crate::groups::non_member::OffsetToCommit;
use crate::sync::lock;
use kafka_vocab::Uuid;
use kafka_wire::protocol::consumer_protocol::{ConsumerAssignment, PROTOCOL_TYPE};
use kafka_wire::protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatTopicPartitions, HeartbeatRequest, JoinGroupRequest,
    JoinGroupRequestProtocol, LeaveGroupMemberIdentity, LeaveGroupRequest, SyncGroupRequest,
    SyncGroupRequestAssignment,
};
use kafka_wire::protocol::{ErrorCode, TaggedFields};

/// A group member's state, as [`Consumer::member_state`](crate::Consumer::member_state) and
/// [`GroupMembership::state`](crate::GroupMembership::state) read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMemberState {
    /// The protocol spoken (classic after a fallback from a broker without KIP-848).
    pub protocol: GroupProtocol,
    /// Joining, rebalancing, stable, ...
    pub phase: MemberPhase,
    /// The id the coordinator knows the member by (empty before the first join answer).
    pub member_id: String,
    /// The classic generation or the KIP-848 member epoch (−1 / 0 before joining).
    pub generation_or_epoch: i32,
    /// `group.instance.id` of a static member.
    pub instance_id: Option<String>,
    /// Classic: whether this member is the group's leader (it runs the assignor).
    pub leader: bool,
    /// The partitions the member owns in the group (those being revoked included).
    pub owned: Vec<TopicPartition>,
}

/// The application's handle on its member task.
#[derive(Debug)]
pub(crate) struct Membership {
    client: Arc<Client>,
    socket: u64,
    group: String,
    member: Arc<StdMutex<Member>>,
    wake: Arc<Notify>,
    events: mpsc::UnboundedReceiver<MemberEvent>,
    subscription: Arc<StdMutex<Subscription>>,
    /// Set to have the driver look at the topics' metadata now (a new pattern).
    recheck: Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Membership {
    /// Joins `group` with `subscription` under `config`, on a task of its own.
    pub(crate) fn start(
        client: Arc<Client>,
        config: &ConsumerConfig,
        group: &str,
        subscription: Subscription,
    ) -> Self {
        let now = Instant::now();
        let member = Arc::new(StdMutex::new(new_member(config, &subscription, now)));
        let wake = Arc::new(Notify::new());
        let (send, events) = mpsc::unbounded_channel();
        let shared_subscription = Arc::new(StdMutex::new(subscription));
        let recheck = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let socket = client.new_member_socket();
        let driver = Driver {
            client: Arc::clone(&client),
            socket,
            group: group.to_owned(),
            member: Arc::clone(&member),
            wake: Arc::clone(&wake),
            events: send,
            subscription: Arc::clone(&shared_subscription),
            recheck: Arc::clone(&recheck),
            settings: Settings::of(config),
            coordinator: None,
            partition_counts: BTreeMap::new(),
            next_metadata_check: now + config.metadata_max_age,
        };
        let task = tokio::spawn(driver.run());
        Self {
            client,
            socket,
            group: group.to_owned(),
            member,
            wake,
            events,
            subscription: shared_subscription,
            recheck,
            task,
        }
    }

    /// Changes what the member subscribes to; a rebalance follows.
    pub(crate) fn subscribe(&mut self, subscription: Subscription) {
        *lock(&self.subscription) = subscription.clone();
        self.with(|m| match (m, subscription) {
            (Member::Classic(m), Subscription::Topics(topics)) => m.subscribe(topics),
            // The driver's metadata check, at once, finds the pattern's topics.
            (Member::Classic(_), Subscription::Pattern(_)) => {
                self.recheck.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            (Member::BrokerAssigned(m), Subscription::Topics(t)) => m.subscribe(TopicSubscription::Topics(t)),
            (Member::BrokerAssigned(m), Subscription::Pattern(p)) => {
                m.subscribe(TopicSubscription::Pattern(p));
            }
        });
    }

    /// The group.
    pub(crate) fn group(&self) -> &str {
        &self.group
    }

    /// Runs `f` on the machine (briefly: the task waits for the lock) and wakes the task to
    /// act on whatever changed.
    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut Member) -> T) -> T {
        let out = f(&mut lock(&self.member));
        self.wake.notify_one();
        out
    }

    /// The next event, if one is waiting.
    pub(crate) fn try_event(&mut self) -> Option<MemberEvent> {
        self.events.try_recv().ok()
    }

    /// Waits for the next event; `None` once the task has ended. Cancel-safe.
    pub(crate) async fn next_event(&mut self) -> Option<MemberEvent> {
        self.events.recv().await
    }

    /// Starts closing as `mode` says: the member revokes what it owns (a `Revoking` event, to
    /// be finished as any other), leaves, and ends with `Left`.
    pub(crate) fn begin_close(&self, mode: CloseMode) {
        self.with(|m| m.close(Instant::now(), mode));
    }

    /// The member's state: protocol, phase, identity and what it owns.
    pub(crate) fn state(&self) -> GroupMemberState {
        self.with(|m| {
            let identity = m.identity();
            let (protocol, leader) = match m {
                Member::Classic(c) => (GroupProtocol::Classic, c.is_leader()),
                Member::BrokerAssigned(_) => (GroupProtocol::Consumer, false),
            };
            GroupMemberState {
                protocol,
                phase: m.phase(),
                member_id: identity.member_id,
                generation_or_epoch: identity.generation_or_epoch,
                instance_id: identity.instance_id,
                leader,
                owned: m.owned().partitions().iter().cloned().collect(),
            }
        })
    }

    /// The protocol spoken now: the configured one, or classic after a fallback.
    pub(crate) fn protocol(&self) -> GroupProtocol {
        self.with(|m| match m {
            Member::Classic(_) => GroupProtocol::Classic,
            Member::BrokerAssigned(_) => GroupProtocol::Consumer,
        })
    }

    /// The identity the member's commits carry now, whatever it owns.
    pub(crate) fn metadata(&self) -> ConsumerGroupMetadata {
        metadata_of(&self.group, &self.with(|m| m.identity()))
    }

    /// The identity to commit `partitions` with, once each one's owner is checked with the
    /// member: a revoked, lost or never assigned one refuses, naming it, before anything is sent.
    pub(crate) fn metadata_for<'a>(
        &self,
        partitions: impl IntoIterator<Item = &'a TopicPartition>,
    ) -> Result<ConsumerGroupMetadata, ConsumerError> {
        self.with(|m| {
            let mut identity = m.identity();
            for tp in partitions {
                identity = m.commit_allowed(tp).map_err(|refused| ConsumerError::NotOwned {
                    partition: refused.partition,
                    reason: NotOwnedReason::from(refused.reason),
                })?;
            }
            Ok(metadata_of(&self.group, &identity))
        })
    }

    /// Commits `offsets` as this member, fenced by the coordinator, after the ownership check of
    /// [`metadata_for`](Self::metadata_for). KIP-848: a heartbeat answered while the commit was
    /// on its way moves the member epoch on; as the Java consumer does, the partitions answered
    /// STALE_MEMBER_EPOCH are committed again with the epoch of now (checked again: a lost one
    /// refuses), until `timeout` has passed.
    pub(crate) async fn commit(
        &self,
        offsets: &[OffsetToCommit],
        timeout: Duration,
    ) -> Result<PartitionResults<()>, ConsumerError> {
        let identity = self.metadata_for(offsets.iter().map(|o| &o.tp))?;
        let mut results = self.client.commit_offsets_as(&identity, offsets, timeout).await?;
        let deadline = Instant::now() + timeout;
        loop {
            let stale: Vec<OffsetToCommit> = offsets
                .iter()
                .filter(|o| {
                    matches!(results.get(&o.tp),
                        Some(Err(ClientError::Kafka { code, .. })) if *code == ErrorCode::STALE_MEMBER_EPOCH)
                })
                .cloned()
                .collect();
            if stale.is_empty() || Instant::now() >= deadline {
                return Ok(results);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            let identity = self.metadata_for(stale.iter().map(|o| &o.tp))?;
            results.extend(self.client.commit_offsets_as(&identity, &stale, timeout).await?);
        }
    }
}

/// The group metadata a commit of `group` carries for `identity`.
pub(crate) fn metadata_of(group: &str, identity: &CommitIdentity) -> ConsumerGroupMetadata {
    ConsumerGroupMetadata {
        group_id: group.to_owned(),
        generation_id: identity.generation_or_epoch,
        member_id: identity.member_id.clone(),
        group_instance_id: identity.instance_id.clone(),
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        self.task.abort();
        self.client.drop_member_sockets(self.socket);
    }
}

fn new_member(config: &ConsumerConfig, subscription: &Subscription, now: Instant) -> Member {
    match config.group_protocol {
        GroupProtocol::Consumer => {
            let mut c = BrokerAssignedConfig::new(new_member_id());
            c.instance_id.clone_from(&config.group_instance_id);
            c.rack.clone_from(&config.rack_id);
            c.server_assignor.clone_from(&config.remote_assignor);
            c.max_poll_interval = config.max_poll_interval;
            c.request_timeout = config.request_timeout;
            let topics = match subscription {
                Subscription::Topics(t) => TopicSubscription::Topics(t.clone()),
                Subscription::Pattern(p) => TopicSubscription::Pattern(p.clone()),
            };
            Member::BrokerAssigned(BrokerAssignedMember::new(c, topics, now))
        }
        GroupProtocol::Classic => Member::Classic(classic_member(config, subscription, now)),
    }
}

/// A KIP-848 member id: the client's own, random, for the life of the consumer (KIP-1082; a
/// UUID in Kafka's base64 form, as the Java client makes it).
fn new_member_id() -> String {
    let mut bytes = [0u8; 16];
    // Without the OS's randomness, the time and the process id still make the id unique.
    if getrandom::getrandom(&mut bytes).is_err() {
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        bytes = (nanos ^ (u128::from(std::process::id()) << 96)).to_le_bytes();
    }
    Uuid(bytes).to_string()
}

fn classic_member(config: &ConsumerConfig, subscription: &Subscription, now: Instant) -> ClassicMember {
    // JoinGroup names each assignor by its protocol name, whichever spelling configured it.
    let assignors: Vec<&dyn crate::groups::assignors::Assignor> =
        config.assignment_strategy.iter().filter_map(|name| assignor_by_name(name)).collect();
    let protocol = assignors
        .iter()
        .map(|a| a.protocol())
        .min()
        .unwrap_or(crate::groups::assignors::RebalanceProtocol::Eager);
    let names = assignors.iter().map(|a| a.name().to_owned()).collect();
    let mut c = ClassicConfig::new(names, protocol);
    c.instance_id.clone_from(&config.group_instance_id);
    c.session_timeout = config.session_timeout;
    c.heartbeat_interval = config.heartbeat_interval;
    c.max_poll_interval = config.max_poll_interval;
    c.request_timeout = config.request_timeout;
    c.rack.clone_from(&config.rack_id);
    // A pattern's topics are found by the driver's first metadata check.
    let topics = match subscription {
        Subscription::Topics(t) => t.clone(),
        Subscription::Pattern(_) => Vec::new(),
    };
    ClassicMember::new(c, topics, now)
}

/// What the task needs of the configuration.
#[derive(Debug, Clone)]
struct Settings {
    config: ConsumerConfig,
}

impl Settings {
    fn of(config: &ConsumerConfig) -> Self {
        Self { config: config.clone() }
    }
}

/// An answer to the request in flight.
enum Answer {
    Coordinator(Result<BrokerRef, ClientError>),
    Join(Result<JoinGroupAnswer, ClientError>),
    Sync(Result<SyncGroupAnswer, ClientError>),
    Heartbeat(Result<ErrorCode, ClientError>),
    Leave(Result<ErrorCode, ClientError>),
    ConsumerHeartbeat(Result<ConsumerHeartbeatAnswer, ClientError>),
}

type InFlight = Pin<Box<dyn Future<Output = Answer> + Send>>;

struct Driver {
    client: Arc<Client>,
    /// This member's own connections ([`Socket::GroupMember`](crate::cluster::client::Socket)).
    socket: u64,
    group: String,
    member: Arc<StdMutex<Member>>,
    wake: Arc<Notify>,
    events: mpsc::UnboundedSender<MemberEvent>,
    subscription: Arc<StdMutex<Subscription>>,
    recheck: Arc<std::sync::atomic::AtomicBool>,
    settings: Settings,
    coordinator: Option<BrokerRef>,
    /// The subscribed topics' partition counts at the last metadata check.
    partition_counts: BTreeMap<String, i32>,
    next_metadata_check: Instant,
}

/// A job the machine gave that needs the network, done outside the lock.
enum Job {
    Lead { members: Vec<GroupMemberSubscription>, protocol_name: String },
    NameTopics(Vec<Uuid>),
}

impl Driver {
    async fn run(mut self) {
        let mut in_flight: Option<InFlight> = None;
        // A pattern subscription (classic) needs its topics before the first JoinGroup.
        if matches!(*lock(&self.subscription), Subscription::Pattern(_)) {
            self.check_metadata().await;
        }
        loop {
            let (jobs, done) = self.forward_events();
            if done {
                return;
            }
            for job in jobs {
                self.run_job(job).await;
            }
            let now = Instant::now();
            if now >= self.next_metadata_check
                || self.recheck.swap(false, std::sync::atomic::Ordering::Relaxed)
            {
                self.check_metadata().await;
            }
            // A new request while one is in flight means the machine gave up on the old one
            // (its deadline passed, or a close replaced it): its answer is not waited for.
            let request = self.lock().poll_request_any(now);
            if let Some(request) = request {
                in_flight = Some(self.send(request));
            }
            // poll_request fires the machine's timers, which may have produced events.
            if self.lock().has_events() {
                continue;
            }
            let wake_at = self
                .lock()
                .poll_timeout()
                .map_or(self.next_metadata_check, |t| t.min(self.next_metadata_check));
            let sleep = tokio::time::sleep_until(tokio::time::Instant::from_std(wake_at));
            tokio::select! {
                answer = async { in_flight.as_mut().expect("guarded").await }, if in_flight.is_some() => {
                    in_flight = None;
                    self.take(answer);
                }
                () = self.wake.notified() => {}
                () = sleep => {}
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Member> {
        lock(&self.member)
    }

    /// Hands the machine's events to the application, keeping the jobs for this task; `true`
    /// once the member has left (or failed for good) and the task is done.
    fn forward_events(&mut self) -> (Vec<Job>, bool) {
        let mut jobs = Vec::new();
        let mut done = false;
        let mut fallback = false;
        {
            let shared = Arc::clone(&self.member);
            let mut member = lock(&shared);
            while let Some(event) = member.poll_event() {
                match event {
                    MemberEvent::AssignAsLeader { members, protocol_name } => {
                        jobs.push(Job::Lead { members, protocol_name });
                    }
                    MemberEvent::NeedTopicNames(ids) => jobs.push(Job::NameTopics(ids)),
                    MemberEvent::Fatal(e)
                        if e.allows_classic_fallback() && matches!(*member, Member::BrokerAssigned(_)) =>
                    {
                        fallback = true;
                    }
                    event => {
                        done |= matches!(event, MemberEvent::Left | MemberEvent::Fatal(_));
                        let _ = self.events.send(event);
                    }
                }
            }
            if fallback && !done {
                // The broker does not take ConsumerGroupHeartbeat (before Kafka 4.0, or the
                // new protocol turned off): join with the classic protocol instead, as
                // franz-go does; `Consumer::group_protocol` says which is in use.
                let mut config = self.settings.config.clone();
                config.group_protocol = GroupProtocol::Classic;
                let subscription = lock(&self.subscription).clone();
                *member = Member::Classic(classic_member(&config, &subscription, Instant::now()));
                self.settings.config = config;
            }
        }
        (jobs, done)
    }

    async fn run_job(&mut self, job: Job) {
        match job {
            Job::Lead { members, protocol_name } => {
                let assignment = self.lead(&members, &protocol_name).await;
                if let Member::Classic(m) = &mut *self.lock() {
                    m.leader_assignment(assignment);
                }
            }
            Job::NameTopics(ids) => {
                let names = match self.client.refresh_metadata(&[]).await {
                    Ok(metadata) => metadata
                        .topics
                        .iter()
                        .filter_map(|t| Some((t.topic_id?, t.name.clone())))
                        .filter(|(id, _)| ids.contains(id))
                        .collect::<Vec<_>>(),
                    Err(_) => Vec::new(),
                };
                if let Member::BrokerAssigned(m) = &mut *self.lock() {
                    m.learn_topic_names(names);
                }
            }
        }
    }

    /// The classic leader's assignment: `protocol_name`'s assignor over the partition counts
    /// Metadata gives for every topic a member subscribes to.
    async fn lead(
        &self,
        members: &[GroupMemberSubscription],
        protocol_name: &str,
    ) -> BTreeMap<String, Vec<TopicPartition>> {
        let subscriptions: Vec<MemberSubscription> = members
            .iter()
            .map(|m| {
                let s = m.subscription.as_ref().ok();
                MemberSubscription {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.instance_id.clone(),
                    topics: s.map(|s| s.topics.clone()).unwrap_or_default(),
                    owned_partitions: s.map(|s| s.owned_partitions.clone()).unwrap_or_default(),
                    generation: s.map(|s| s.generation).filter(|g| *g >= 0),
                    rack_id: s.and_then(|s| s.rack.clone()),
                }
            })
            .collect();
        let topics: Vec<String> = subscriptions
            .iter()
            .flat_map(|m| m.topics.iter().cloned())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let counts = self.partition_counts_of(&topics).await;
        let Some(assignor) = assignor_by_name(protocol_name) else {
            // The coordinator chose a protocol every member offered, this one included.
            return subscriptions.iter().map(|m| (m.member_id.clone(), Vec::new())).collect();
        };
        assignor.assign(&AssignmentInput { members: &subscriptions, partitions_per_topic: &counts })
    }

    async fn partition_counts_of(&self, topics: &[String]) -> BTreeMap<String, i32> {
        if topics.is_empty() {
            return BTreeMap::new();
        }
        match self.client.refresh_metadata(topics).await {
            Ok(metadata) => topics
                .iter()
                .filter_map(|name| {
                    let t = metadata.topic(name).filter(|t| t.error.is_ok())?;
                    Some((name.clone(), i32::try_from(t.partitions.len()).ok()?))
                })
                .collect(),
            Err(_) => BTreeMap::new(),
        }
    }

    /// Every `metadata.max.age.ms`: a pattern's topics found again, and a classic member
    /// rejoins when a subscribed topic's partition count changed.
    async fn check_metadata(&mut self) {
        self.next_metadata_check = Instant::now() + self.settings.config.metadata_max_age;
        if !matches!(*self.lock(), Member::Classic(_)) {
            return;
        }
        let subscription = lock(&self.subscription).clone();
        let topics = match &subscription {
            Subscription::Topics(t) => t.clone(),
            Subscription::Pattern(pattern) => {
                let Ok(re) = regex::Regex::new(&format!("^(?:{pattern})$")) else { return };
                match self.client.refresh_metadata(&[]).await {
                    Ok(m) => m
                        .topics
                        .iter()
                        .filter(|t| t.error.is_ok() && !t.is_internal && re.is_match(&t.name))
                        .map(|t| t.name.clone())
                        .collect(),
                    Err(_) => return,
                }
            }
        };
        let counts = self.partition_counts_of(&topics).await;
        if counts == self.partition_counts {
            return;
        }
        let first = self.partition_counts.is_empty();
        self.partition_counts = counts;
        if let Member::Classic(m) = &mut *self.lock() {
            if matches!(subscription, Subscription::Pattern(_)) {
                m.subscribe(topics);
            } else if !first {
                m.request_rejoin("the subscribed topics' partitions changed");
            }
        }
    }

    /// Starts sending `request`; the future gives its answer.
    fn send(&mut self, request: AnyRequest) -> InFlight {
        let client = Arc::clone(&self.client);
        let socket = self.socket;
        let group = self.group.clone();
        let coordinator = self.coordinator.clone();
        let request_timeout = self.settings.config.request_timeout;
        let join_wait = self.settings.config.max_poll_interval + Duration::from_secs(5);
        match request {
            AnyRequest::FindCoordinator => Box::pin(async move {
                client.forget_coordinator(&group);
                Answer::Coordinator(client.coordinator(&group).await)
            }),
            AnyRequest::Classic(request) => {
                let Some(broker) = coordinator else {
                    return Box::pin(async { Answer::Coordinator(Err(no_coordinator())) });
                };
                match request {
                    ClassicRequest::FindCoordinator => unreachable_find(client, group),
                    ClassicRequest::JoinGroup(call) => Box::pin(async move {
                        Answer::Join(join(&client, socket, &broker, &group, call, join_wait).await)
                    }),
                    ClassicRequest::SyncGroup(call) => Box::pin(async move {
                        Answer::Sync(sync(&client, socket, &broker, &group, call, request_timeout).await)
                    }),
                    ClassicRequest::Heartbeat(call) => Box::pin(async move {
                        let sent = client
                            .send_as_member(socket, &broker, request_timeout, |version| HeartbeatRequest {
                                group_id: group.clone(),
                                generation_id: call.generation,
                                member_id: call.member_id.clone(),
                                group_instance_id: call.instance_id.clone().filter(|_| version >= 3),
                                tagged_fields: TaggedFields::default(),
                            })
                            .await;
                        Answer::Heartbeat(sent.map(|(_, r)| r.error_code))
                    }),
                    ClassicRequest::LeaveGroup(call) => Box::pin(async move {
                        Answer::Leave(leave(&client, socket, &broker, &group, call, request_timeout).await)
                    }),
                }
            }
            AnyRequest::BrokerAssigned(call) => {
                let Some(broker) = coordinator else {
                    return Box::pin(async { Answer::Coordinator(Err(no_coordinator())) });
                };
                Box::pin(async move {
                    Answer::ConsumerHeartbeat(
                        consumer_heartbeat(&client, socket, &broker, &group, call, request_timeout).await,
                    )
                })
            }
        }
    }

    /// Gives the machine the answer to its request.
    fn take(&mut self, answer: Answer) {
        let now = Instant::now();
        if let Answer::Coordinator(Ok(broker)) = &answer {
            self.coordinator = Some(broker.clone());
        }
        let mut guard = lock(&self.member);
        let member = &mut *guard;
        match (member, answer) {
            (m, Answer::Coordinator(Ok(_))) => m.coordinator_found(now),
            (m, Answer::Coordinator(Err(_))) => m.handle_send_failed(now),
            (Member::Classic(m), Answer::Join(Ok(a))) => m.handle_join(now, a),
            (Member::Classic(m), Answer::Sync(Ok(a))) => m.handle_sync(now, a),
            (Member::Classic(m), Answer::Heartbeat(Ok(code))) => m.handle_heartbeat(now, code),
            (Member::Classic(m), Answer::Leave(Ok(code))) => m.handle_leave(now, code),
            (Member::BrokerAssigned(m), Answer::ConsumerHeartbeat(Ok(a))) => m.handle_heartbeat(now, a),
            // A lost connection, a timeout, an answer that did not decode — or an answer of
            // the protocol the member no longer speaks after a fallback.
            (m, _) => {
                drop_coordinator_on_failure(&mut self.coordinator);
                m.handle_send_failed(now);
            }
        }
    }
}

/// The request the machine wants, whichever protocol it speaks.
enum AnyRequest {
    FindCoordinator,
    Classic(ClassicRequest),
    BrokerAssigned(ConsumerHeartbeatCall),
}

impl Member {
    fn poll_request_any(&mut self, now: Instant) -> Option<AnyRequest> {
        match self {
            Member::Classic(m) => m.poll_request(now).map(|r| match r {
                ClassicRequest::FindCoordinator => AnyRequest::FindCoordinator,
                r => AnyRequest::Classic(r),
            }),
            Member::BrokerAssigned(m) => m.poll_request(now).map(|r| match r {
                BrokerAssignedRequest::FindCoordinator => AnyRequest::FindCoordinator,
                BrokerAssignedRequest::Heartbeat(call) => AnyRequest::BrokerAssigned(call),
            }),
        }
    }
}

fn unreachable_find(client: Arc<Client>, group: String) -> InFlight {
    Box::pin(async move {
        client.forget_coordinator(&group);
        Answer::Coordinator(client.coordinator(&group).await)
    })
}

/// A failed send may mean the coordinator moved: it is found again before the next request.
fn drop_coordinator_on_failure(coordinator: &mut Option<BrokerRef>) {
    *coordinator = None;
}

fn no_coordinator() -> ClientError {
    ClientError::InvalidArgument { message: "no group coordinator known yet".to_owned() }
}

async fn join(
    client: &Client,
    socket: u64,
    broker: &BrokerRef,
    group: &str,
    call: JoinGroupCall,
    wait: Duration,
) -> Result<JoinGroupAnswer, ClientError> {
    let mut protocols = Vec::with_capacity(call.protocols.len());
    for (name, subscription) in &call.protocols {
        protocols.push(JoinGroupRequestProtocol {
            name: name.clone(),
            metadata: encode_subscription(subscription)?,
            tagged_fields: TaggedFields::default(),
        });
    }
    let (_, response) = client
        .send_as_member(socket, broker, wait, |version| JoinGroupRequest {
            group_id: group.to_owned(),
            session_timeout_ms: millis(call.session_timeout),
            rebalance_timeout_ms: (version >= 1).then(|| millis(call.rebalance_timeout)),
            member_id: call.member_id.clone(),
            group_instance_id: call.instance_id.clone().filter(|_| version >= 5),
            protocol_type: PROTOCOL_TYPE.to_owned(),
            protocols,
            reason: call.reason.clone().filter(|_| version >= 8),
            tagged_fields: TaggedFields::default(),
        })
        .await?;
    Ok(join_answer(response))
}

async fn sync(
    client: &Client,
    socket: u64,
    broker: &BrokerRef,
    group: &str,
    call: SyncGroupCall,
    wait: Duration,
) -> Result<SyncGroupAnswer, ClientError> {
    let mut assignments = Vec::with_capacity(call.assignments.len());
    for (member_id, partitions) in &call.assignments {
        let assignment = ConsumerAssignment { assigned_partitions: by_topic(partitions), user_data: None };
        let bytes = assignment.encode(ASSIGNMENT_VERSION).map_err(|e| ClientError::InvalidArgument {
            message: format!("the assignment of member {member_id} cannot be encoded: {e}"),
        })?;
        assignments.push(SyncGroupRequestAssignment {
            member_id: member_id.clone(),
            assignment: Bytes::from(bytes),
            tagged_fields: TaggedFields::default(),
        });
    }
    let (_, response) = client
        .send_as_member(socket, broker, wait, |version| SyncGroupRequest {
            group_id: group.to_owned(),
            generation_id: call.generation,
            member_id: call.member_id.clone(),
            group_instance_id: call.instance_id.clone().filter(|_| version >= 3),
            protocol_type: (version >= 5).then(|| PROTOCOL_TYPE.to_owned()),
            protocol_name: (version >= 5).then(|| call.protocol_name.clone()),
            assignments,
            tagged_fields: TaggedFields::default(),
        })
        .await?;
    Ok(sync_answer(response))
}

async fn leave(
    client: &Client,
    socket: u64,
    broker: &BrokerRef,
    group: &str,
    call: LeaveGroupCall,
    wait: Duration,
) -> Result<ErrorCode, ClientError> {
    let (_, response) = client
        .send_as_member(socket, broker, wait, |version| LeaveGroupRequest {
            group_id: group.to_owned(),
            member_id: (version < 3).then(|| call.member_id.clone()),
            members: (version >= 3).then(|| {
                vec![LeaveGroupMemberIdentity {
                    member_id: call.member_id.clone(),
                    group_instance_id: call.instance_id.clone(),
                    reason: (version >= 5).then(|| call.reason.clone()),
                    tagged_fields: TaggedFields::default(),
                }]
            }),
            tagged_fields: TaggedFields::default(),
        })
        .await?;
    Ok(leave_answer(&response))
}

async fn consumer_heartbeat(
    client: &Client,
    socket: u64,
    broker: &BrokerRef,
    group: &str,
    call: ConsumerHeartbeatCall,
    wait: Duration,
) -> Result<ConsumerHeartbeatAnswer, ClientError> {
    let (_, response) = client
        .send_as_member(socket, broker, wait, |version| ConsumerGroupHeartbeatRequest {
            group_id: group.to_owned(),
            member_id: call.member_id.clone(),
            member_epoch: call.member_epoch,
            instance_id: call.instance_id.clone(),
            rack_id: call.rack_id.clone(),
            rebalance_timeout_ms: call.rebalance_timeout.map_or(-1, millis),
            subscribed_topic_names: call.subscribed_topic_names.clone(),
            subscribed_topic_regex: call.subscribed_topic_regex.clone().filter(|_| version >= 1),
            server_assignor: call.server_assignor.clone(),
            topic_partitions: call.owned.as_ref().map(|owned| {
                owned
                    .iter()
                    .map(|(id, partitions)| ConsumerGroupHeartbeatTopicPartitions {
                        topic_id: *id,
                        partitions: partitions.clone(),
                        tagged_fields: TaggedFields::default(),
                    })
                    .collect()
            }),
            tagged_fields: TaggedFields::default(),
        })
        .await?;
    Ok(consumer_heartbeat_answer(response))
}

fn millis(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}
