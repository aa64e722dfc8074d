//! The loop: load stored offsets → look at the logs → plan → fetch exactly the planned ranges →
//! hand the batch over → commit its untils after the application finished it. Handing a batch
//! over starts reading the next one (`read_ahead::ReadAhead`), from the positions that batch
//! will commit.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use kafka_vocab::now_ms;

use kafka_client::{Client, FetchRange, FetchedPartition, Fetcher, NotOwnedReason, OffsetQuery};
use offset_engine::{
    merge_commits, plan, plan_into, Anomaly, Commit, CommitDecision, CommitRejection, FromReason,
    LeaderEpoch, LogState, LogView, Offset, OutOfRangePolicy, Outcome, PartitionInput, Plan, PlanEntry,
    PlanRequest, RateCarry, SkipReason, StartPolicy, Stored, TimeLookup, TopicId, TopicPartition,
};
use offset_store::{BoxError, OffsetStore};

use crate::batch::{Action, Batch, Event, OffsetRange, PartitionBatch, Resume};
use crate::config::StreamConfig;
use crate::error::StreamError;
use crate::member::StreamMember;
use crate::memory_budget::{mean_record_bytes, memory_limits};
use crate::read_ahead::ReadAhead;

/// What the application's closure tells [`DirectStream::run`] after a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Control {
    /// Commit the batch and read the next one.
    Continue,
    /// Commit the batch and return.
    Stop,
}

/// What a commit did, per partition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommitReport {
    /// Positions written to the store.
    pub written: Vec<(TopicPartition, Stored)>,
    /// Partitions whose stored position was already the proposed one.
    pub unchanged: usize,
    /// Proposals refused because they would move a stored offset backwards (or onto another
    /// topic id) without being a policy reset — a stale batch committed after a newer one.
    pub rejected: Vec<(TopicPartition, CommitRejection)>,
    /// Member mode: partitions left uncommitted because the group took them from this member
    /// while the batch was processed; their next owner reads those records again.
    pub not_owned: Vec<(TopicPartition, NotOwnedReason)>,
}

/// A direct stream: exact offset ranges per batch, commits to any [`OffsetStore`] after the
/// application is done. See the crate docs for the guarantees. It takes no group membership
/// unless made with [`DirectStream::join`] (see `member` for that mode).
#[derive(Debug)]
pub struct DirectStream<S> {
    store: S,
    /// What the store holds for the configured topics, as last loaded or written; `None` when
    /// it must be loaded (first use, or after a store error that left it uncertain).
    stored: Option<HashMap<TopicPartition, Stored>>,
    /// Everything else planning a batch reads and changes.
    planner: Planner,
    /// The batch after the last one handed out, being read from the positions that one commits.
    ahead: Option<ReadAhead>,
    /// The group membership, in member mode: batches cover what the group gives this stream.
    member: Option<StreamMember>,
}

/// What planning and fetching a batch needs besides the stored positions. Owned, so that the
/// next batch can be read in a task of its own ([`ReadAhead`]) while the application works.
#[derive(Debug, Clone)]
pub(crate) struct Planner {
    client: Arc<Client>,
    config: StreamConfig,
    carry: RateCarry,
    /// Each partition's last `until` and the topic id it was read from.
    previous: HashMap<TopicPartition, (Offset, Option<TopicId>)>,
    next_id: u64,
    /// The application's processing rate, records per second, smoothed over batches.
    measured_rate: Option<f64>,
    /// The mean size of the last batch's records with any ([`crate::memory_budget::record_bytes`]).
    measured_record_bytes: Option<u64>,
    /// Member mode: the partitions batches are planned over (`None`: every partition of the
    /// configured topics, and every stored one).
    owned: Option<BTreeSet<TopicPartition>>,
}

impl<S: OffsetStore> DirectStream<S> {
    /// A stream over `client`, keeping its offsets in `store`; fails if `config` cannot work.
    pub fn new(client: Arc<Client>, store: S, config: StreamConfig) -> Result<Self, StreamError> {
        config.validate().map_err(StreamError::Config)?;
        Ok(Self {
            store,
            stored: None,
            planner: Planner {
                client,
                config,
                carry: RateCarry::default(),
                previous: HashMap::new(),
                next_id: 1,
                measured_rate: None,
                measured_record_bytes: None,
                owned: None,
            },
            ahead: None,
            member: None,
        })
    }

    /// The member's state in its group (member mode only): protocol, phase, member id,
    /// generation or epoch, and the partitions it owns.
    pub fn member_state(&self) -> Option<kafka_client::GroupMemberState> {
        self.member.as_ref().map(|m| m.membership().state())
    }

    /// Member mode: leaves the group at once, so that its partitions go to the other members
    /// without waiting for the session to time out. Commit the last batch first: nothing is
    /// committed here. The stream reads nothing more after it.
    pub async fn leave(&mut self) -> Result<(), StreamError> {
        self.ahead = None;
        self.planner.owned = Some(BTreeSet::new());
        match self.member.take() {
            Some(member) => member.leave().await,
            None => Ok(()),
        }
    }

    /// The Kafka client.
    pub fn client(&self) -> &Arc<Client> {
        &self.planner.client
    }

    /// The offset store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The configuration.
    pub fn config(&self) -> &StreamConfig {
        &self.planner.config
    }

    /// Changes the out-of-range policy for the next batches (e.g. after a
    /// [`StreamError::PolicyFailed`] the application decided to resume at the log start).
    /// A batch being read ahead with the old policy is thrown away.
    pub fn set_out_of_range(&mut self, policy: OutOfRangePolicy) {
        self.ahead = None;
        self.planner.config.out_of_range = policy;
    }

    /// Changes where partitions with nothing stored start, from the next batch on (a batch
    /// being read ahead with the old policy is thrown away).
    pub fn set_start(&mut self, policy: StartPolicy) {
        self.ahead = None;
        self.planner.config.start = policy;
    }

    /// Changes the caps for the next batches (e.g. from a measured processing rate); a batch
    /// being read ahead with the old caps is thrown away.
    pub fn set_limits(&mut self, limits: offset_engine::Limits) {
        self.ahead = None;
        self.planner.config.limits = limits;
    }

    /// Reports how long the application took to process `records` records, for
    /// [`StreamConfig::processing_budget`]. [`Self::run`] calls it after every batch.
    pub fn observe(&mut self, records: u64, elapsed: Duration) {
        self.planner.measured_rate = next_rate(self.planner.measured_rate, records, elapsed);
    }

    /// The processing rate measured so far, records per second.
    pub fn measured_rate(&self) -> Option<f64> {
        self.planner.measured_rate
    }

    /// The mean size of the last batch's records, in bytes as
    /// [`record_bytes`](crate::memory_budget::record_bytes) counts them (`None` before a batch
    /// with records).
    pub fn measured_record_bytes(&self) -> Option<u64> {
        self.planner.measured_record_bytes
    }

    /// The caps the next batch is planned with: the configured limits, plus the time budget
    /// from the measured rate when a processing budget is set, and the batch cap from the
    /// measured record size when a memory budget is set.
    pub fn effective_limits(&self) -> offset_engine::Limits {
        self.planner.effective_limits()
    }

    /// The stored positions as last loaded or written (`None` before the first load).
    pub fn stored(&self) -> Option<&HashMap<TopicPartition, Stored>> {
        self.stored.as_ref()
    }

    /// Loads the stored offsets again (another writer may have moved them).
    pub async fn reload(&mut self) -> Result<(), StreamError> {
        let config = &self.planner.config;
        let loaded = self.store.load(&config.group, Some(&config.topics)).await?;
        self.stored = Some(
            loaded
                .iter()
                .filter(|o| config.topics.contains(&o.topic))
                .filter_map(|o| {
                    Some((TopicPartition::new(o.topic.as_str(), o.partition), Stored::from_store(o)?))
                })
                .collect(),
        );
        Ok(())
    }

    pub(crate) async fn stored_now(&mut self) -> Result<HashMap<TopicPartition, Stored>, StreamError> {
        if self.stored.is_none() {
            self.reload().await?;
        }
        Ok(self.stored.clone().unwrap_or_default())
    }

    /// Plans and fetches the next batch from the stored positions. Until it is committed, the
    /// next call plans from the same positions again (the same records are delivered again).
    /// A batch with nothing to read is returned at once ([`Batch::is_idle`]).
    ///
    /// With [`StreamConfig::prefetch`] (the default), handing out a batch with records starts
    /// reading the one after it in a task of its own, from the positions this batch commits
    /// (merged in memory, nothing written), while the application processes it. The next call
    /// hands that batch out only when the stored positions are then exactly those — this
    /// batch was committed, by [`commit`](Self::commit) or a transaction, and nothing else
    /// moved them — and otherwise throws it away and plans from the store. Nothing read ahead
    /// is ever committed before it was handed out and committed itself.
    pub async fn next_batch(&mut self) -> Result<Batch, StreamError> {
        let mut membership_events = Vec::new();
        if let Some(member) = &mut self.member {
            let changes = member.before_batch(self.planner.config.poll_interval).await?;
            if !changes.events.is_empty() {
                // Planned over other partitions than those owned now.
                self.ahead = None;
                self.planner.owned = Some(member.owned().clone());
            }
            if changes.assigned {
                // Where the new partitions are is what their previous owners committed.
                self.stored = None;
            }
            membership_events = changes.events;
            if member.owned().is_empty() {
                return Ok(self.planner.without_partitions(membership_events));
            }
        }
        // Taken first: an error, or this call being dropped, throws it away.
        let ahead = self.ahead.take();
        let known = self.stored.is_some();
        let stored = self.stored_now().await?;
        let read = match ahead {
            // Positions loaded again after a store error are not the ones it assumed.
            Some(ahead) if known => ahead.take(&stored).await,
            _ => None,
        };
        let mut batch = match read {
            Some((batch, after)) => {
                self.planner.adopt(after);
                batch
            }
            None => self.planner.read_batch(&stored).await?,
        };
        batch.events.splice(0..0, membership_events);
        if self.planner.config.prefetch && batch.record_count() > 0 {
            let (assumed, _) = merge_commits(&stored, &batch.commits, now_ms());
            self.ahead = Some(ReadAhead::start(self.planner.clone(), assumed));
        }
        Ok(batch)
    }
}

impl Planner {
    /// The caps the next batch is planned with.
    fn effective_limits(&self) -> offset_engine::Limits {
        let limits = budget_limits(self.config.limits, self.config.processing_budget, self.measured_rate);
        memory_limits(limits, self.config.memory_budget, self.measured_record_bytes)
    }

    /// A batch of nothing but `events` (a member that owns no partition).
    fn without_partitions(&mut self, events: Vec<Event>) -> Batch {
        let id = self.next_id;
        self.next_id += 1;
        Batch { id, partitions: Vec::new(), events, commits: Vec::new() }
    }

    /// Takes the state a batch read ahead left (its rate carry, `until`s, id and record size),
    /// when that batch is handed out.
    fn adopt(&mut self, after: Planner) {
        self.carry = after.carry;
        self.measured_record_bytes = after.measured_record_bytes;
        self.previous = after.previous;
        self.next_id = after.next_id;
    }

    /// Plans from `stored` and fetches the planned ranges: the next batch.
    pub(crate) async fn read_batch(
        &mut self,
        stored: &HashMap<TopicPartition, Stored>,
    ) -> Result<Batch, StreamError> {
        let mut requeries = 0u32;
        let mut epoch_requeried = false;
        let mut fetch_failures = 0u32;
        loop {
            let (inputs, mut events) = self.gather(stored).await?;
            let mut request = PlanRequest {
                start: self.config.start,
                out_of_range: self.config.out_of_range,
                isolation: self.config.isolation,
                limits: self.effective_limits(),
                carry: self.carry.clone(),
                partitions: inputs,
            };
            let mut planned = plan(&request);

            // A leader epoch below the stored one is most likely a recreated topic, but a broker
            // whose metadata lags answers the same: ask once more before a policy acts on it.
            let epoch_backwards = planned
                .entries
                .iter()
                .any(|e| matches!(e.anomaly.as_deref(), Some(Anomaly::LeaderEpochBackwards { .. })));
            if epoch_backwards && !epoch_requeried {
                epoch_requeried = true;
                tokio::time::sleep(self.config.end_requery.backoff).await;
                continue;
            }

            let backwards: Vec<usize> = planned
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| {
                    matches!(e.outcome, Outcome::Skipped { reason: SkipReason::EndWentBackwards })
                })
                .map(|(i, _)| i)
                .collect();
            if !backwards.is_empty() {
                if requeries < self.config.end_requery.attempts {
                    requeries += 1;
                    tokio::time::sleep(self.config.end_requery.backoff).await;
                    continue;
                }
                for &i in &backwards {
                    if let Some(&Anomaly::EndWentBackwards { previous_until, end }) =
                        planned.entries[i].anomaly.as_deref()
                    {
                        events.push(Event::EndStayedBackwards {
                            tp: planned.entries[i].tp.clone(),
                            previous_until: previous_until.0,
                            end: end.0,
                            requeries,
                        });
                    }
                    request.partitions[i].previous_until = None;
                    self.previous.remove(&request.partitions[i].tp);
                }
                plan_into(&request, &mut planned);
            }

            events.extend(planned.entries.iter().filter_map(|e| {
                e.anomaly.as_deref().map(|&anomaly| Event::Anomaly {
                    tp: e.tp.clone(),
                    anomaly,
                    action: action_of(e),
                })
            }));
            if planned.failures().next().is_some() {
                return Err(StreamError::PolicyFailed { events });
            }

            let ranges: Vec<FetchRange> = planned
                .entries
                .iter()
                .filter_map(|e| e.range().filter(|r| r.from < r.until).map(|r| (e, r)))
                .map(|(e, r)| FetchRange::new(e.tp.clone(), r.from.0, r.until.0))
                .collect();
            let mut options = self.config.fetch;
            options.isolation = self.config.isolation;
            let mut fetched = if ranges.is_empty() {
                BTreeMap::new()
            } else {
                // Every leader at once, each broker's next Fetch sent while the previous
                // response is decoded, within the batch's overall fetch timeout.
                Fetcher::new(Arc::clone(&self.client), &ranges, options).read_all().await
            };

            let mut retry = None;
            for range in &ranges {
                let failure = match fetched.get(&range.partition) {
                    Some(Ok(_)) => continue,
                    Some(Err(e)) => e.clone(),
                    None => kafka_client::ClientError::Protocol {
                        broker: kafka_client::BrokerRef { node_id: None, addr: "cluster".to_owned() },
                        message: format!("no fetch result for {}", range.partition),
                    },
                };
                // The log start can move between planning and fetching (R2): plan again, and
                // the engine reports the loss. Broker hiccups get the same bounded retry.
                let again = matches!(failure, kafka_client::ClientError::OffsetOutOfRange { .. })
                    || failure.is_retriable();
                if again && fetch_failures < self.config.fetch_attempts {
                    retry = Some(());
                } else {
                    return Err(StreamError::Fetch {
                        tp: range.partition.clone(),
                        source: Box::new(failure),
                    });
                }
            }
            if retry.is_some() {
                fetch_failures += 1;
                tokio::time::sleep(Duration::from_millis(200).saturating_mul(fetch_failures)).await;
                continue;
            }

            let batch = self.assemble(&planned, stored, &mut fetched, events);
            self.carry = planned.carry;
            if let Some(size) = mean_record_bytes(batch.records().map(|(_, _, r)| r)) {
                self.measured_record_bytes = Some(size);
            }
            return Ok(batch);
        }
    }

    /// Builds the batch from the plan and the fetched records, and remembers each `until`.
    fn assemble(
        &mut self,
        planned: &Plan,
        stored: &HashMap<TopicPartition, Stored>,
        fetched: &mut BTreeMap<TopicPartition, Result<FetchedPartition, kafka_client::ClientError>>,
        mut events: Vec<Event>,
    ) -> Batch {
        let mut partitions = Vec::new();
        let mut commits = Vec::new();
        for entry in &planned.entries {
            let Some(r) = entry.range() else { continue };
            let records = match fetched.remove(&entry.tp) {
                Some(Ok(p)) => {
                    // Where reading stopped, inside [from, until]: the range is complete when
                    // it reached `until`; gaps inside it are compaction or markers, not loss.
                    let stopped = p.next_offset.max(r.from.0).min(r.until.0);
                    (stopped, p.records)
                }
                _ => (r.until.0, Vec::new()),
            };
            let (until, records) = records;
            if until < r.until.0 {
                events.push(Event::RangeShortened { tp: entry.tp.clone(), planned_until: r.until.0, until });
            }
            // The latest of the last record's epoch, the leader's when planned and, unless the
            // policy reset the partition, the stored one: leader epochs only grow along a log,
            // and the engine refuses a commit whose epoch goes backwards (a range read after an
            // empty one committed with the leader's epoch would; so would one whose plan had no
            // epoch to commit, a stale answer). A stored epoch above the last record's began
            // after that record, so its end is at or past `until`: no false truncation.
            let floor = if matches!(r.from_reason, FromReason::OutOfRange(_)) {
                None
            } else {
                stored.get(&entry.tp).and_then(|s| LeaderEpoch::known(s.leader_epoch))
            };
            let leader_epoch = records
                .last()
                .and_then(|rec| rec.leader_epoch.and_then(LeaderEpoch::from_wire))
                .max(entry.leader_epoch)
                .max(floor)
                .map(|e| e.0);
            let batch = PartitionBatch {
                range: OffsetRange {
                    topic: entry.tp.topic.to_string(),
                    partition: entry.tp.partition,
                    from: r.from.0,
                    until,
                },
                records,
                from_reason: r.from_reason,
                topic_id: entry.topic_id,
                leader_epoch,
            };
            commits.push(Commit {
                tp: entry.tp.clone(),
                offset: Offset(until),
                leader_epoch: leader_epoch.map(LeaderEpoch),
                topic_id: entry.topic_id,
                reset: batch.is_reset(),
            });
            self.previous.insert(entry.tp.clone(), (Offset(until), entry.topic_id));
            partitions.push(batch);
        }
        let id = self.next_id;
        self.next_id += 1;
        Batch { id, partitions, events, commits }
    }

    /// The log of every partition of the configured topics (and of every stored partition of
    /// them), with topic ids, leader epochs, and the end of each stored leader epoch.
    async fn gather(
        &self,
        stored: &HashMap<TopicPartition, Stored>,
    ) -> Result<(Vec<PartitionInput>, Vec<Event>), StreamError> {
        let timeout = self.config.request_timeout;
        let metadata = self.client.refresh_metadata(&self.config.topics).await?;
        let mut events = Vec::new();
        let mut partitions: BTreeSet<(String, i32)> =
            stored.keys().map(|tp| (tp.topic.to_string(), tp.partition)).collect();
        let mut ids: HashMap<String, Option<TopicId>> = HashMap::new();
        for name in &self.config.topics {
            let topic = metadata.topic(name).filter(|t| t.error.is_ok() || !t.partitions.is_empty());
            match topic {
                Some(t) => {
                    ids.insert(name.clone(), t.topic_id.and_then(|id| TopicId::from_wire(id.0)));
                    partitions.extend(t.partitions.iter().map(|p| (name.clone(), p.partition)));
                }
                None => {
                    if !stored.keys().any(|tp| &*tp.topic == name.as_str()) {
                        events.push(Event::TopicNotFound { topic: name.clone() });
                    }
                }
            }
        }
        if let Some(owned) = &self.owned {
            partitions.retain(|(t, p)| owned.contains(&TopicPartition::new(t.as_str(), *p)));
        }
        let in_metadata = |topic: &str, partition: i32| {
            metadata
                .topic(topic)
                .filter(|t| t.error.is_ok() || !t.partitions.is_empty())
                .is_some_and(|t| t.partitions.iter().any(|p| p.partition == partition))
        };
        let live: Vec<TopicPartition> = partitions
            .iter()
            .filter(|(t, p)| in_metadata(t, *p))
            .map(|(t, p)| TopicPartition::new(t.clone(), *p))
            .collect();
        let ranges =
            if live.is_empty() { BTreeMap::new() } else { self.client.log_ranges(&live, timeout).await };

        let mut inputs = Vec::new();
        for (topic, partition) in partitions {
            let tp = TopicPartition::new(topic.as_str(), partition);
            let log = if !ids.contains_key(&topic) {
                LogState::TopicNotFound
            } else if !in_metadata(&topic, partition) {
                LogState::PartitionNotFound
            } else {
                match ranges.get(&TopicPartition::new(topic.clone(), partition)) {
                    Some(Ok(r)) => {
                        let mut view = LogView::new(r.log_start, r.high_watermark);
                        view.last_stable = Offset(r.last_stable);
                        view.leader_epoch = r.leader_epoch.and_then(LeaderEpoch::from_wire);
                        view.topic_id = ids.get(&topic).copied().flatten();
                        LogState::Found(view)
                    }
                    Some(Err(e)) => {
                        events.push(Event::PartitionUnavailable { tp, error: e.to_string() });
                        continue;
                    }
                    None => {
                        events.push(Event::PartitionUnavailable {
                            tp,
                            error: "no log range answer".to_owned(),
                        });
                        continue;
                    }
                }
            };
            let s = stored.get(&tp).copied();
            let mut input = PartitionInput::new(tp.clone(), s, log);
            if let (Some((until, id)), LogState::Found(view)) = (self.previous.get(&tp), log) {
                // A stale end is only comparable with an `until` of the same log.
                let same_log = match (id, view.topic_id) {
                    (Some(a), Some(b)) => *a == b,
                    _ => true,
                };
                if same_log {
                    input.previous_until = Some(*until);
                }
            }
            inputs.push(input);
        }

        self.epoch_ends(&mut inputs).await;
        self.timestamp_offsets(&mut inputs).await;
        Ok((inputs, events))
    }

    /// OffsetForLeaderEpoch for every stored offset with a leader epoch, on the same log: the
    /// truncation check (KIP-320). An unanswered partition is planned without it.
    async fn epoch_ends(&self, inputs: &mut [PartitionInput]) {
        let asks: Vec<(TopicPartition, i32)> = inputs
            .iter()
            .filter_map(|p| {
                let stored = p.stored?;
                let epoch = stored.leader_epoch?;
                let LogState::Found(view) = p.log else { return None };
                let same_log = match (stored.topic_id, view.topic_id) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                };
                same_log.then(|| (p.tp.clone(), epoch.0))
            })
            .collect();
        if asks.is_empty() {
            return;
        }
        let answers = self.client.offset_for_leader_epoch(&asks, self.config.request_timeout).await;
        for p in inputs.iter_mut() {
            if let Some(Ok(end)) = answers.get(&p.tp) {
                p.end_offset_for_stored_epoch = end.end_offset.and_then(Offset::from_wire);
            }
        }
    }

    /// Resolves the start timestamp for partitions with nothing stored.
    async fn timestamp_offsets(&self, inputs: &mut [PartitionInput]) {
        let StartPolicy::Timestamp { timestamp_ms } = self.config.start else { return };
        let wanted: Vec<TopicPartition> = inputs
            .iter()
            .filter(|p| p.stored.is_none() && matches!(p.log, LogState::Found(_)))
            .map(|p| p.tp.clone())
            .collect();
        if wanted.is_empty() {
            return;
        }
        let isolation = self.config.isolation;
        let answers = self
            .client
            .list_offsets(
                &wanted,
                OffsetQuery::Timestamp(timestamp_ms),
                isolation,
                self.config.request_timeout,
            )
            .await;
        for p in inputs.iter_mut() {
            if let Some(Ok(listed)) = answers.get(&p.tp) {
                p.timestamp_offset =
                    Some(listed.offset.map_or(TimeLookup::NoRecordAtOrAfter, TimeLookup::from_wire));
            }
        }
    }
}

impl<S: OffsetStore> DirectStream<S> {
    /// Stores the batch's untils (with topic id and leader epoch), merged against what is
    /// stored so no offset moves backwards unless the out-of-range policy reset it. Call it
    /// only after the batch's output succeeded (at-least-once). A failed commit throws away
    /// the batch being read ahead.
    pub async fn commit(&mut self, batch: &Batch) -> Result<CommitReport, StreamError> {
        self.commit_positions(&batch.commits).await
    }

    async fn commit_positions(&mut self, commits: &[Commit]) -> Result<CommitReport, StreamError> {
        let stored = self.stored_now().await?;
        let (next, decisions) = merge_commits(&stored, commits, now_ms());
        let mut report = CommitReport::default();
        let mut writes = Vec::new();
        for (c, d) in commits.iter().zip(decisions) {
            match d {
                CommitDecision::Write(s) => {
                    writes.push(s.to_store(&c.tp));
                    report.written.push((c.tp.clone(), s));
                }
                CommitDecision::Unchanged => report.unchanged += 1,
                CommitDecision::Rejected(r) => report.rejected.push((c.tp.clone(), r)),
            }
        }
        if writes.is_empty() {
            return Ok(report);
        }
        if let Some(member) = &self.member {
            match member.commit(&writes).await {
                Ok(not_owned) if not_owned.is_empty() => self.stored = Some(next),
                Ok(not_owned) => {
                    // What is stored for a partition this member gave up is its next owner's.
                    report.written.retain(|(tp, _)| !not_owned.iter().any(|(gone, _)| gone == tp));
                    report.not_owned = not_owned;
                    self.ahead = None;
                    self.stored = None;
                }
                Err(e) => {
                    self.ahead = None;
                    self.stored = None;
                    return Err(e);
                }
            }
            return Ok(report);
        }
        if let Err(e) = self.store.save(&self.planner.config.group, &writes).await {
            self.ahead = None;
            if e.needs_reload() {
                self.stored = None;
            }
            return Err(e.into());
        }
        self.stored = Some(next);
        Ok(report)
    }

    /// Runs the stream: for every batch with something to read or report, awaits `process`,
    /// then commits the batch; an idle batch is committed without calling `process`, and the
    /// loop waits [`StreamConfig::poll_interval`] after a batch without records. Returns when
    /// `process` says [`Control::Stop`] (after committing that batch), or with the first error:
    /// an error from `process` leaves its batch uncommitted, so it is read again next time.
    ///
    /// With [`StreamConfig::prefetch`] (the default), while `process` works on a batch with
    /// records the next batch is planned and fetched from the positions that batch will commit,
    /// as [`next_batch`](Self::next_batch) does: it is handed out next only when the commit
    /// wrote exactly those positions, and thrown away on an error, a `Stop`, or a commit that
    /// stored anything else. Nothing of it is committed before its own turn.
    pub async fn run<F, Fut, E>(&mut self, mut process: F) -> Result<(), StreamError>
    where
        F: FnMut(Batch) -> Fut,
        Fut: Future<Output = Result<Control, E>>,
        E: Into<BoxError>,
    {
        loop {
            let batch = self.next_batch().await?;
            let commits = batch.commits.clone();
            let records = batch.record_count();
            let control = if batch.is_idle() {
                Control::Continue
            } else {
                let started = std::time::Instant::now();
                let control = match process(batch).await {
                    Ok(control) => control,
                    Err(e) => {
                        // Read again from its own positions next time: what was read ahead is
                        // of no use.
                        self.ahead = None;
                        return Err(StreamError::Application(e.into()));
                    }
                };
                self.observe(records as u64, started.elapsed());
                control
            };
            self.commit_positions(&commits).await?;
            if control == Control::Stop {
                self.ahead = None;
                return Ok(());
            }
            if records == 0 {
                tokio::time::sleep(self.planner.config.poll_interval).await;
            }
        }
    }
}

impl<S> DirectStream<S> {
    /// Makes the stream a group member: from the next batch on, it plans over what `member`
    /// owns.
    pub(crate) fn set_member(&mut self, member: StreamMember) {
        self.ahead = None;
        self.planner.owned = Some(member.owned().clone());
        self.member = Some(member);
    }

    /// The group membership, in member mode.
    pub(crate) fn member(&self) -> Option<&StreamMember> {
        self.member.as_ref()
    }

    /// Takes `stored` as what the store holds now (written by someone else, e.g. a
    /// transaction), or `None` to load it again before the next batch.
    /// `None` also throws away the batch being read ahead.
    pub(crate) fn set_stored(&mut self, stored: Option<HashMap<TopicPartition, Stored>>) {
        if stored.is_none() {
            self.ahead = None;
        }
        self.stored = stored;
    }
}

/// The smoothed processing rate after a batch of `records` took `elapsed`: an exponential
/// average (weight ½) of records per second; unchanged by a batch without records or time.
fn next_rate(previous: Option<f64>, records: u64, elapsed: Duration) -> Option<f64> {
    let secs = elapsed.as_secs_f64();
    if records == 0 || secs <= 0.0 {
        return previous;
    }
    let rate = records as f64 / secs;
    if !rate.is_finite() {
        return previous;
    }
    Some(previous.map_or(rate, |p| f64::midpoint(p, rate)))
}

/// `limits` with the time budget of `budget` at `rate` (or its initial rate).
fn budget_limits(
    limits: offset_engine::Limits,
    budget: Option<crate::config::ProcessingBudget>,
    rate: Option<f64>,
) -> offset_engine::Limits {
    let Some(b) = budget else { return limits };
    let budget_ms = u64::try_from(b.budget.as_millis()).unwrap_or(u64::MAX);
    let time_budget = offset_engine::TimeBudget::new(budget_ms, rate.unwrap_or(b.initial_rate), b.safety)
        .or_else(|_| offset_engine::TimeBudget::new(budget_ms, b.initial_rate, b.safety))
        .ok();
    offset_engine::Limits { time_budget: time_budget.or(limits.time_budget), ..limits }
}

fn action_of(e: &PlanEntry) -> Action {
    match &e.outcome {
        Outcome::Range(r) => match r.from_reason {
            FromReason::OutOfRange(p) => Action::Resumed { from: r.from.0, policy: Resume::OutOfRange(p) },
            _ => Action::Resumed { from: r.from.0, policy: Resume::Start },
        },
        Outcome::Skipped { .. } => Action::Skipped,
        Outcome::Failed { .. } => Action::Failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// KAFKA-7703 cannot be produced on demand on a healthy cluster, so the stream is told it
    /// read further than the log's end: it must look again a bounded number of times, then
    /// report it and plan without that bound — never a negative range, never a hang.
    #[tokio::test]
    async fn an_end_below_the_previous_until_is_requeried_then_planned_without_it() {
        let bootstrap = std::env::var("KWIRE_BOOTSTRAP").ok().filter(|s| !s.is_empty());
        let Some(bootstrap) = bootstrap else {
            let required = ["CI", "KWIRE_REQUIRE_CLUSTER"]
                .iter()
                .any(|v| std::env::var(v).is_ok_and(|s| !s.is_empty() && s != "false"));
            assert!(!required, "KWIRE_BOOTSTRAP is not set, and CI requires the cluster");
            eprintln!("note: KWIRE_BOOTSTRAP not set; skipping");
            return;
        };
        let client =
            Arc::new(Client::connect(kafka_client::ClientConfig::new(&bootstrap).unwrap()).await.unwrap());
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let topic = format!("stream-end-backwards-{}-{nanos:x}", std::process::id());
        let created =
            client.create_topics(&[kafka_client::NewTopic::new(&topic, 1, 3)], Duration::from_secs(30)).await;
        assert!(matches!(created.get(&topic), Some(Ok(_))), "{created:?}");
        let records = (0..5)
            .map(|n| kafka_client::ProduceRecord::new(None, Some(format!("v{n}").into_bytes().into())))
            .collect();
        client.produce(&topic, 0, records, &kafka_client::ProduceOptions::default()).await.unwrap();
        let dir = std::env::temp_dir().join(format!("kwire-stream-end-backwards-{nanos:x}"));
        std::fs::create_dir_all(&dir).unwrap();
        let store = kwire_stores::FileStore::new(dir.join("offsets.json"));
        let config = StreamConfig::new("g", [topic.clone()])
            .end_requery(crate::Requery { attempts: 2, backoff: Duration::from_millis(100) });
        let mut stream = DirectStream::new(client.clone(), store, config).unwrap();
        let metadata = client.refresh_metadata(std::slice::from_ref(&topic)).await.unwrap();
        let id = metadata.topic(&topic).and_then(|t| t.topic_id).and_then(|id| TopicId::from_wire(id.0));
        stream.planner.previous.insert(TopicPartition::new(topic.as_str(), 0), (Offset(50), id));

        let started = std::time::Instant::now();
        let batch = stream.next_batch().await.unwrap();
        assert!(started.elapsed() >= Duration::from_millis(200), "two re-queries, 100 ms apart");
        let stayed: Vec<&Event> =
            batch.events().iter().filter(|e| matches!(e, Event::EndStayedBackwards { .. })).collect();
        assert_eq!(
            stayed,
            [&Event::EndStayedBackwards {
                tp: TopicPartition::new(topic.as_str(), 0),
                previous_until: 50,
                end: 5,
                requeries: 2
            }]
        );
        let ranges: Vec<(i64, i64)> = batch.offset_ranges().iter().map(|r| (r.from, r.until)).collect();
        assert_eq!(ranges, [(0, 5)], "planned without the bound: nothing stored, from the log start");
        assert_eq!(batch.record_count(), 5);
    }

    #[test]
    fn the_batch_cap_follows_the_measured_processing_rate() {
        let budget = crate::config::ProcessingBudget {
            budget: Duration::from_secs(10),
            initial_rate: 100.0,
            safety: 0.5,
        };
        let base = offset_engine::Limits { max_per_partition: Some(7), ..offset_engine::Limits::default() };
        let cap = |rate| budget_limits(base, Some(budget), rate).batch_cap().map(|c| c.records);
        assert_eq!(cap(None), Some(500), "100 records/s × 10 s × 0.5 before any measurement");
        let rate = next_rate(None, 300, Duration::from_secs(2));
        assert_eq!(rate, Some(150.0));
        assert_eq!(cap(rate), Some(750));
        let rate = next_rate(rate, 50, Duration::from_secs(1));
        assert_eq!(rate, Some(100.0), "averaged with the previous measurement");
        assert_eq!(next_rate(rate, 0, Duration::from_secs(1)), rate, "an empty batch measures nothing");
        assert_eq!(next_rate(rate, 10, Duration::ZERO), rate);
        assert_eq!(budget_limits(base, Some(budget), rate).max_per_partition, Some(7), "other caps kept");
        assert_eq!(budget_limits(base, None, rate), base);
    }

    #[test]
    fn actions_name_the_policy_that_moved_the_start() {
        let request = PlanRequest {
            out_of_range: OutOfRangePolicy::Clamp,
            partitions: vec![
                PartitionInput::new(
                    TopicPartition::new("t", 0),
                    Some(Stored::at(5)),
                    LogState::Found(LogView::new(10, 20)),
                ),
                PartitionInput::new(TopicPartition::new("t", 1), None, LogState::Found(LogView::new(0, 20))),
                PartitionInput::new(
                    TopicPartition::new("t", 2),
                    Some(Stored::at(5)),
                    LogState::PartitionNotFound,
                ),
            ],
            ..PlanRequest::default()
        };
        let planned = plan(&request);
        let actions: Vec<Action> = planned.entries.iter().map(action_of).collect();
        assert_eq!(
            actions,
            [
                Action::Resumed { from: 10, policy: Resume::OutOfRange(OutOfRangePolicy::Clamp) },
                Action::Resumed { from: 0, policy: Resume::Start },
                Action::Skipped,
            ]
        );
        let failing = PlanRequest { out_of_range: OutOfRangePolicy::Fail, ..request };
        assert_eq!(action_of(&plan(&failing).entries[0]), Action::Failed);
    }
}
