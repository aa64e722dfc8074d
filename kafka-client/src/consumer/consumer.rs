//! [`Consumer`]: reads partitions it is given ([`Consumer::assign`]) or that its group assigns
//! it ([`Consumer::subscribe`]), from positions offset-engine vouches for, and commits them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cluster::client::Client;
use crate::cluster::router::{PartitionResults, TopicPartition};
use crate::consumer::config::{ConsumerConfig, GroupProtocol, Subscription};
use crate::consumer::error::{ConsumerError, NotOwnedReason};
use crate::consumer::listener::{RebalanceListener, RevokeCommits};
use crate::consumer::membership::{GroupMemberState, Membership};
use crate::consumer::start_positions::{start_positions, StartPosition, StartRules};
use crate::error::ClientError;
use crate::fetch::fetched::FetchedRecord;
use crate::fetch::fetcher::Fetcher;
use crate::groups::commit_metadata::topic_id_metadata;
use crate::groups::group_metadata::ConsumerGroupMetadata;
use crate::groups::member::model::{CloseMode, MemberEvent};
use crate::groups::non_member::OffsetToCommit;
use offset_engine::Stored;

/// Records of one partition, in offset order, as one poll returns them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordChunk {
    /// The partition.
    pub partition: TopicPartition,
    /// Its records; the consumer's position is now one past the last.
    pub records: Vec<FetchedRecord>,
    /// The high watermark the response reported (exclusive): `high_watermark − position` is
    /// the partition's lag.
    pub high_watermark: i64,
}

/// One assigned partition as the consumer tracks it.
#[derive(Debug, Clone)]
pub(crate) struct Assigned {
    /// The next offset to hand out; `None` while no start is known (refused, or not yet
    /// looked up).
    pub(crate) position: Option<i64>,
    /// The leader epoch of the last record handed out, or the committed one: what a commit of
    /// `position` carries (never below the committed epoch, see issue 33).
    pub(crate) leader_epoch: Option<i32>,
    /// The topic id when the partition started, kept in the commit's metadata.
    pub(crate) topic_id: Option<kafka_vocab::Uuid>,
    /// Not fetched while paused.
    pub(crate) paused: bool,
    /// The last offset this consumer committed, to skip auto-commits that change nothing.
    pub(crate) committed: Option<i64>,
}

impl Assigned {
    fn starting(start: &StartPosition) -> Self {
        Self {
            position: Some(start.offset),
            leader_epoch: start.committed_leader_epoch,
            topic_id: start.topic_id,
            paused: false,
            committed: None,
        }
    }
}

/// A Kafka consumer: the partitions it reads, where it is in each, and its commits.
///
/// Records come from [`poll`](Self::poll), one partition's chunk at a time, pipelined per
/// leader broker (the next Fetch is on the wire while a chunk is processed). A partition's
/// position moves past a chunk when poll returns it: the records poll returned before the
/// current call count as processed, which is what [`commit_positions`](Self::commit_positions)
/// and auto-commit commit.
pub struct Consumer {
    pub(crate) client: Arc<Client>,
    pub(crate) config: ConsumerConfig,
    pub(crate) fetcher: Fetcher,
    pub(crate) assigned: BTreeMap<TopicPartition, Assigned>,
    /// Why partitions that were owned are not any more, for a commit naming one.
    pub(crate) released: BTreeMap<TopicPartition, NotOwnedReason>,
    pub(crate) listener: Option<Box<dyn RebalanceListener>>,
    /// Errors found while doing something else, returned by the next poll.
    pub(crate) pending: std::collections::VecDeque<ConsumerError>,
    pub(crate) last_auto_commit: Instant,
    pub(crate) closed: bool,
    /// The group member's task, after [`subscribe`](Self::subscribe).
    pub(crate) membership: Option<Membership>,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("group_id", &self.config.group_id)
            .field("assigned", &self.assigned.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Consumer {
    /// A consumer over `client` with `config`, reading nothing until [`assign`](Self::assign)
    /// (or, in a group, [`subscribe`](Self::subscribe)).
    pub fn new(client: Arc<Client>, config: ConsumerConfig) -> Self {
        let mut fetch = config.fetch;
        fetch.isolation = config.isolation;
        let fetcher = Fetcher::empty(Arc::clone(&client), fetch);
        Self {
            client,
            config,
            fetcher,
            assigned: BTreeMap::new(),
            released: BTreeMap::new(),
            listener: None,
            pending: std::collections::VecDeque::new(),
            last_auto_commit: Instant::now(),
            closed: false,
            membership: None,
        }
    }

    /// Joins the group (`group.id`) and reads the partitions it assigns, from then on: each
    /// starts where [`StartPosition`] says, with the listener told of every change. The
    /// membership runs on a task of its own (heartbeats never wait for the application), with
    /// `group.protocol`'s protocol — KIP-848's falls back to classic on a broker without it
    /// ([`group_protocol`](Self::group_protocol) says which). Subscribing again changes the
    /// topics (a rebalance follows). Partitions given by [`assign`](Self::assign) are dropped.
    pub fn subscribe(&mut self, subscription: Subscription) -> Result<(), ConsumerError> {
        self.ensure_open()?;
        let group = self.config.group_id.clone().ok_or(ConsumerError::NoGroup)?;
        subscription.validate()?;
        if let Some(membership) = &mut self.membership {
            membership.subscribe(subscription);
            return Ok(());
        }
        for tp in std::mem::take(&mut self.assigned).into_keys() {
            self.fetcher.remove(&tp);
        }
        self.membership =
            Some(Membership::start(Arc::clone(&self.client), &self.config, &group, subscription));
        Ok(())
    }

    /// The member's state in its group (`None` when not subscribed): the protocol it speaks,
    /// where it is, and the identity its commits carry — what `kafka-consumer-groups --describe`
    /// shows of it.
    pub fn member_state(&self) -> Option<GroupMemberState> {
        self.membership.as_ref().map(Membership::state)
    }

    /// The group protocol the member speaks now (`None` when it is not in a group): the
    /// configured one, or classic after a fallback from a broker without KIP-848.
    pub fn group_protocol(&self) -> Option<GroupProtocol> {
        self.membership.as_ref().map(Membership::protocol)
    }

    /// Calls `listener` on every partition change from now on.
    pub fn set_listener(&mut self, listener: impl RebalanceListener + 'static) {
        self.listener = Some(Box::new(listener));
    }

    /// The configuration the consumer runs with.
    pub fn config(&self) -> &ConsumerConfig {
        &self.config
    }

    /// Reads exactly `partitions` (in place of what was assigned before), without joining a
    /// group. Each starts where its [`StartPosition`] says: the group's
    /// commit checked against the log (with `group.id`), else `auto.offset.reset`. Returns the
    /// starts; a partition the policy refuses is in the result as its refusal and is not read
    /// until [`seek`](Self::seek).
    pub async fn assign(
        &mut self,
        partitions: &[TopicPartition],
    ) -> Result<Vec<Result<StartPosition, ConsumerError>>, ConsumerError> {
        self.ensure_open()?;
        if self.membership.is_some() {
            return Err(ConsumerError::InvalidArgument(
                "this consumer is subscribed: its group assigns its partitions".to_owned(),
            ));
        }
        let gone: Vec<TopicPartition> =
            self.assigned.keys().filter(|tp| !partitions.contains(tp)).cloned().collect();
        for tp in gone {
            self.fetcher.remove(&tp);
            self.assigned.remove(&tp);
            self.released.insert(tp, NotOwnedReason::NeverAssigned);
        }
        let new: Vec<TopicPartition> =
            partitions.iter().filter(|tp| !self.assigned.contains_key(tp)).cloned().collect();
        Ok(self.start(&new, &BTreeMap::new()).await)
    }

    /// The identity this consumer commits with, for a transactional producer's
    /// [`send_offsets_to_transaction_of`](crate::Producer::send_offsets_to_transaction_of):
    /// the member's id, generation or epoch and instance id while it is in its group; a
    /// non-member's (generation −1) when it reads assigned partitions; `None` without `group.id`.
    pub fn group_metadata(&self) -> Option<crate::groups::group_metadata::ConsumerGroupMetadata> {
        let group = self.config.group_id.as_deref()?;
        Some(match &self.membership {
            Some(m) => m.metadata(),
            None => ConsumerGroupMetadata::non_member(group),
        })
    }

    /// The partitions assigned now (by [`assign`](Self::assign) or the group).
    pub fn assignment(&self) -> Vec<TopicPartition> {
        self.assigned.keys().cloned().collect()
    }

    /// Where `partition` is: the next offset poll returns of it. `None` when it is not
    /// assigned or has no position (its start was refused).
    pub fn position(&self, partition: &TopicPartition) -> Option<i64> {
        self.assigned.get(partition).and_then(|a| a.position)
    }

    /// Every assigned partition's position (partitions without one are left out).
    pub fn positions(&self) -> BTreeMap<TopicPartition, i64> {
        self.assigned.iter().filter_map(|(tp, a)| Some((tp.clone(), a.position?))).collect()
    }

    /// Reads `partition` from `offset` on (records already fetched past it are dropped). The
    /// offset is checked by the broker: one outside the log is handled by the out-of-range
    /// policy at the next poll.
    pub fn seek(&mut self, partition: &TopicPartition, offset: i64) -> Result<(), ConsumerError> {
        self.ensure_open()?;
        if offset < 0 {
            return Err(ConsumerError::InvalidArgument(format!("cannot seek {partition} to {offset}")));
        }
        let Some(a) = self.assigned.get_mut(partition) else {
            return Err(ConsumerError::NotOwned {
                partition: partition.clone(),
                reason: self.released.get(partition).copied().unwrap_or(NotOwnedReason::NeverAssigned),
            });
        };
        a.position = Some(offset);
        a.leader_epoch = None;
        if a.paused {
            self.fetcher.remove(partition);
        } else {
            self.fetcher.follow(partition, offset);
        }
        Ok(())
    }

    /// Stops returning records of `partitions` (they stay assigned; a rebalance keeps them
    /// paused) until [`resume`](Self::resume).
    pub fn pause(&mut self, partitions: &[TopicPartition]) {
        for tp in partitions {
            if let Some(a) = self.assigned.get_mut(tp) {
                a.paused = true;
                self.fetcher.remove(tp);
            }
        }
    }

    /// Reads paused `partitions` again from their positions.
    pub fn resume(&mut self, partitions: &[TopicPartition]) {
        for tp in partitions {
            if let Some(a) = self.assigned.get_mut(tp) {
                if a.paused {
                    a.paused = false;
                    if let Some(position) = a.position {
                        self.fetcher.follow(tp, position);
                    }
                }
            }
        }
    }

    /// The paused partitions.
    pub fn paused(&self) -> Vec<TopicPartition> {
        self.assigned.iter().filter(|(_, a)| a.paused).map(|(tp, _)| tp.clone()).collect()
    }

    /// The next chunk of records, waiting up to `timeout` for one: `Ok(None)` when none came.
    /// Errors are per partition ([`ConsumerError::Partition`], after which the partition is
    /// read again from its position) or a start the policy refused; any other call may go on
    /// after an error.
    pub async fn poll(&mut self, timeout: Duration) -> Result<Option<RecordChunk>, ConsumerError> {
        self.ensure_open()?;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(m) = &self.membership {
                m.with(|m| m.application_polled(Instant::now()));
            }
            while let Some(event) = self.membership.as_mut().and_then(Membership::try_event) {
                self.member_event(event).await;
            }
            self.auto_commit_if_due().await;
            if let Some(e) = self.pending.pop_front() {
                return Err(e);
            }
            let next = tokio::select! {
                next = tokio::time::timeout_at(deadline, self.fetcher.next()) => next,
                Some(event) = next_event(&mut self.membership) => {
                    self.member_event(event).await;
                    continue;
                }
            };
            match next {
                Err(_) => return Ok(None),
                Ok(None) => {
                    // Nothing to read (nothing assigned, or all paused or refused): wait for
                    // the group to assign something, or the deadline.
                    let event = tokio::time::timeout_at(deadline, next_event(&mut self.membership)).await;
                    match event {
                        Ok(Some(event)) => self.member_event(event).await,
                        Ok(None) => {
                            tokio::time::sleep_until(deadline).await;
                            return Ok(None);
                        }
                        Err(_) => return Ok(None),
                    }
                }
                Ok(Some((tp, Ok(chunk)))) => {
                    let Some(a) = self.assigned.get_mut(&tp) else { continue };
                    let fetched = chunk.fetched;
                    a.position = Some(fetched.next_offset);
                    if let Some(epoch) = fetched.records.last().and_then(|r| r.leader_epoch) {
                        a.leader_epoch = Some(a.leader_epoch.map_or(epoch, |e| e.max(epoch)));
                    }
                    if fetched.records.is_empty() {
                        continue;
                    }
                    return Ok(Some(RecordChunk {
                        partition: tp,
                        records: fetched.records,
                        high_watermark: fetched.high_watermark,
                    }));
                }
                Ok(Some((tp, Err(e)))) => {
                    if let Some(e) = self.partition_failed(&tp, e).await {
                        return Err(e);
                    }
                }
            }
        }
    }

    /// A partition's fetch failed (the fetcher stopped reading it): an offset out of range is
    /// handed to the engine with the position as the commit; any other error is returned and
    /// the partition read again from its position.
    async fn partition_failed(&mut self, tp: &TopicPartition, e: ClientError) -> Option<ConsumerError> {
        let a = self.assigned.get(tp)?;
        let position = a.position?;
        if let ClientError::OffsetOutOfRange { .. } = e {
            let mut stored = Stored::at(position);
            stored.leader_epoch = a.leader_epoch.and_then(offset_engine::LeaderEpoch::from_wire);
            stored.topic_id = a.topic_id.and_then(|id| offset_engine::TopicId::from_wire(id.0));
            let known = BTreeMap::from([(tp.clone(), stored)]);
            let started = self.start(std::slice::from_ref(tp), &known).await;
            return started.into_iter().find_map(Result::err);
        }
        if !a.paused {
            self.fetcher.follow(tp, position);
        }
        Some(ConsumerError::Partition { partition: tp.clone(), source: Box::new(e) })
    }

    /// Looks up where each of `partitions` starts (`known` stands in for the group's commit),
    /// assigns and reads the ones that may start, tells the listener.
    pub(crate) async fn start(
        &mut self,
        partitions: &[TopicPartition],
        known: &BTreeMap<TopicPartition, Stored>,
    ) -> Vec<Result<StartPosition, ConsumerError>> {
        let rules = StartRules {
            start: self.config.start,
            out_of_range: self.config.out_of_range,
            isolation: self.config.isolation,
            timeout: self.config.request_timeout,
        };
        let group = self.config.group_id.as_deref();
        let found = start_positions(&self.client, group, partitions, known, rules).await;
        let mut started = Vec::new();
        let mut results = Vec::new();
        for (tp, result) in found {
            self.released.remove(&tp);
            match result {
                Ok(start) => {
                    let paused = self.assigned.get(&tp).is_some_and(|a| a.paused);
                    let mut state = Assigned::starting(&start);
                    state.paused = paused;
                    if !paused {
                        self.fetcher.follow(&tp, start.offset);
                    }
                    self.assigned.insert(tp, state);
                    started.push(start.clone());
                    results.push(Ok(start));
                }
                Err(refusal) => {
                    self.fetcher.remove(&tp);
                    let entry = self.assigned.entry(tp.clone()).or_insert(Assigned {
                        position: None,
                        leader_epoch: None,
                        topic_id: None,
                        paused: false,
                        committed: None,
                    });
                    entry.position = None;
                    results
                        .push(Err(ConsumerError::StartRefused { partition: tp, refusal: Box::new(refusal) }));
                }
            }
        }
        if let (Some(listener), false) = (self.listener.as_mut(), started.is_empty()) {
            listener.on_assigned(&started);
        }
        for e in results.iter().filter_map(|r| r.as_ref().err()) {
            self.pending.push_back(e.clone());
        }
        results
    }

    /// Commits every assigned partition's position (what poll returned so far), waiting for
    /// the coordinator's answer; one result per partition committed.
    pub async fn commit_positions(&mut self) -> Result<PartitionResults<()>, ConsumerError> {
        let offsets: Vec<(TopicPartition, i64)> =
            self.assigned.iter().filter_map(|(tp, a)| Some((tp.clone(), a.position?))).collect();
        self.commit(&offsets).await
    }

    /// Commits `offsets` (partition → the next offset to read), waiting for the coordinator's
    /// answer. Every partition must be owned (assigned, or being revoked): otherwise nothing is
    /// sent and the error names the first one that is not.
    pub async fn commit(
        &mut self,
        offsets: &[(TopicPartition, i64)],
    ) -> Result<PartitionResults<()>, ConsumerError> {
        self.ensure_open()?;
        let group = self.config.group_id.clone().ok_or(ConsumerError::NoGroup)?;
        let to_commit = self.offsets_to_commit(offsets)?;
        if to_commit.is_empty() {
            return Ok(BTreeMap::new());
        }
        let timeout = self.config.request_timeout;
        let results = match &self.membership {
            Some(membership) => membership.commit(&to_commit, timeout).await?,
            None => {
                let identity = ConsumerGroupMetadata::non_member(&group);
                self.client.commit_offsets_as(&identity, &to_commit, timeout).await?
            }
        };
        for (tp, result) in &results {
            if let (Ok(()), Some(a)) = (result, self.assigned.get_mut(tp)) {
                a.committed = to_commit.iter().find(|o| &o.tp == tp).map(|o| o.offset);
            }
        }
        Ok(results)
    }

    /// Starts committing `offsets` and returns at once; the handle gives the coordinator's
    /// answer. The same ownership check as [`commit`](Self::commit) is made before it returns.
    pub fn commit_async(
        &mut self,
        offsets: &[(TopicPartition, i64)],
    ) -> Result<tokio::task::JoinHandle<Result<PartitionResults<()>, ClientError>>, ConsumerError> {
        self.ensure_open()?;
        let group = self.config.group_id.clone().ok_or(ConsumerError::NoGroup)?;
        let to_commit = self.offsets_to_commit(offsets)?;
        let identity = self.commit_identity(&group, offsets)?;
        let client = Arc::clone(&self.client);
        let timeout = self.config.request_timeout;
        Ok(tokio::spawn(async move { client.commit_offsets_as(&identity, &to_commit, timeout).await }))
    }

    /// The commits for `offsets`, each with its leader epoch (the last record's, never below
    /// the committed one) and topic id; refused whole if one partition is not owned.
    fn offsets_to_commit(
        &self,
        offsets: &[(TopicPartition, i64)],
    ) -> Result<Vec<OffsetToCommit>, ConsumerError> {
        let mut out = Vec::with_capacity(offsets.len());
        for (tp, offset) in offsets {
            let Some(a) = self.assigned.get(tp) else {
                let reason = self.released.get(tp).copied().unwrap_or(NotOwnedReason::NeverAssigned);
                return Err(ConsumerError::NotOwned { partition: tp.clone(), reason });
            };
            if *offset < 0 {
                return Err(ConsumerError::InvalidArgument(format!(
                    "cannot commit offset {offset} for {tp}"
                )));
            }
            // The epoch belongs to the position; a different offset commits none.
            let leader_epoch = if a.position == Some(*offset) { a.leader_epoch } else { None };
            out.push(OffsetToCommit {
                tp: tp.clone(),
                offset: *offset,
                leader_epoch,
                metadata: topic_id_metadata(a.topic_id),
            });
        }
        Ok(out)
    }

    async fn auto_commit_if_due(&mut self) {
        if !self.config.enable_auto_commit || self.config.group_id.is_none() {
            return;
        }
        if self.last_auto_commit.elapsed() < self.config.auto_commit_interval {
            return;
        }
        self.last_auto_commit = Instant::now();
        let dirty: Vec<(TopicPartition, i64)> = self
            .assigned
            .iter()
            .filter_map(|(tp, a)| {
                let position = a.position?;
                (a.committed != Some(position)).then(|| (tp.clone(), position))
            })
            .collect();
        if dirty.is_empty() {
            return;
        }
        match self.commit(&dirty).await {
            Ok(results) => {
                for (tp, result) in results {
                    if let Err(source) = result {
                        self.pending
                            .push_back(ConsumerError::Partition { partition: tp, source: Box::new(source) });
                    }
                }
            }
            Err(e) => self.pending.push_back(e),
        }
    }

    /// Commits the positions if auto-commit is on, and stops: later calls fail with
    /// [`ConsumerError::Closed`]. A group member first lets the listener commit what it
    /// processed (as before a rebalance), then leaves at once — except a static member, which
    /// stays until its session times out ([`close_with`](Self::close_with) chooses).
    pub async fn close(&mut self) -> Result<(), ConsumerError> {
        self.close_with(CloseMode::Default).await
    }

    /// [`close`](Self::close), with what the member does about its group chosen (KIP-1092):
    /// leave even as a static member, or leave nothing behind but its session.
    pub async fn close_with(&mut self, mode: CloseMode) -> Result<(), ConsumerError> {
        if self.closed {
            return Ok(());
        }
        let committed = if let Some(membership) = &self.membership {
            // As before a rebalance: the member revokes what it owns, the application commits
            // what it processed, then the member leaves (a static member stays until its
            // session times out, KIP-345) — all within the request timeout.
            membership.begin_close(mode);
            let deadline = tokio::time::Instant::now() + self.config.request_timeout;
            while let Ok(Some(event)) =
                tokio::time::timeout_at(deadline, next_event(&mut self.membership)).await
            {
                if matches!(event, MemberEvent::Left | MemberEvent::Fatal(_)) {
                    break;
                }
                self.member_event(event).await;
            }
            self.membership = None;
            match self.pending.iter().position(|e| matches!(e, ConsumerError::Partition { .. })) {
                Some(i) => Err(self.pending.remove(i).unwrap_or(ConsumerError::Closed)),
                None => Ok(()),
            }
        } else if self.config.enable_auto_commit && self.config.group_id.is_some() {
            self.commit_positions().await.map(|_| ())
        } else {
            Ok(())
        };
        self.closed = true;
        committed
    }

    /// The identity `offsets` are committed with: the member's, once each partition's owner is
    /// checked with the member (a revoked or lost one refuses the commit before anything is
    /// sent); a non-member's without a group membership.
    fn commit_identity(
        &self,
        group: &str,
        offsets: &[(TopicPartition, i64)],
    ) -> Result<ConsumerGroupMetadata, ConsumerError> {
        match &self.membership {
            Some(membership) => membership.metadata_for(offsets.iter().map(|(tp, _)| tp)),
            None => Ok(ConsumerGroupMetadata::non_member(group)),
        }
    }

    /// Acts on one event of the member.
    async fn member_event(&mut self, event: MemberEvent) {
        match event {
            MemberEvent::Assigned(partitions) => {
                self.start(&partitions, &BTreeMap::new()).await;
            }
            MemberEvent::Revoking(partitions) => {
                if let Err(e) = self.revoke(&partitions).await {
                    self.pending.push_back(e);
                }
                if let Some(m) = &self.membership {
                    m.with(|m| m.revocation_done(&partitions));
                }
            }
            MemberEvent::Lost(partitions) => {
                for tp in &partitions {
                    self.fetcher.remove(tp);
                    self.assigned.remove(tp);
                    self.released.insert(tp.clone(), NotOwnedReason::Lost);
                }
                if let Some(listener) = self.listener.as_mut() {
                    listener.on_lost(&partitions);
                }
            }
            MemberEvent::PollIntervalExceeded { elapsed } => {
                self.pending.push_back(ConsumerError::PollIntervalExceeded {
                    elapsed,
                    limit: self.config.max_poll_interval,
                });
            }
            MemberEvent::Fatal(e) => {
                let group = self.membership.as_ref().map_or_else(String::new, |m| m.group().to_owned());
                self.pending.push_back(ConsumerError::Membership { group, message: e.to_string() });
            }
            // The task's own jobs never reach here; Left ends the event stream.
            MemberEvent::AssignAsLeader { .. } | MemberEvent::NeedTopicNames(_) | MemberEvent::Left => {}
        }
    }

    /// Takes `partitions` out of reading, lets the listener commit what was processed (and
    /// commits their positions with auto-commit) while they are still owned, then forgets them.
    async fn revoke(&mut self, partitions: &[TopicPartition]) -> Result<(), ConsumerError> {
        for tp in partitions {
            self.fetcher.remove(tp);
        }
        let mut commits = RevokeCommits::default();
        if let Some(listener) = self.listener.as_mut() {
            listener.on_revoked(partitions, &mut commits);
        }
        let mut offsets = commits.offsets;
        if self.config.enable_auto_commit {
            for tp in partitions {
                if offsets.iter().any(|(p, _)| p == tp) {
                    continue;
                }
                if let Some(a) = self.assigned.get(tp) {
                    if let Some(position) = a.position.filter(|p| a.committed != Some(*p)) {
                        offsets.push((tp.clone(), position));
                    }
                }
            }
        }
        let committed = if offsets.is_empty() || self.config.group_id.is_none() {
            Ok(())
        } else {
            match self.commit(&offsets).await {
                Ok(results) => results
                    .into_iter()
                    .find_map(|(partition, r)| r.err().map(|e| (partition, e)))
                    .map_or(Ok(()), |(partition, source)| {
                        Err(ConsumerError::Partition { partition, source: Box::new(source) })
                    }),
                Err(e) => Err(e),
            }
        };
        for tp in partitions {
            self.assigned.remove(tp);
            self.released.insert(tp.clone(), NotOwnedReason::Revoked);
        }
        committed
    }

    fn ensure_open(&self) -> Result<(), ConsumerError> {
        if self.closed {
            Err(ConsumerError::Closed)
        } else {
            Ok(())
        }
    }
}

/// The membership's next event, or never without one (for `select!`).
async fn next_event(membership: &mut Option<Membership>) -> Option<MemberEvent> {
    match membership {
        Some(m) => m.next_event().await,
        None => std::future::pending().await,
    }
}
