//! The stream as a member of its consumer group ([`DirectStream::join`](crate::DirectStream::join)):
//! several processes share the topics' partitions, each planning exact ranges over what the
//! group gives it, and committing through the group, fenced by the coordinator.
//!
//! How a rebalance meets the batch loop — the guarantee is the stream's usual at-least-once:
//! - Ownership changes are taken when a batch is asked for
//!   ([`next_batch`](crate::DirectStream::next_batch)), that is after the previous batch was
//!   committed (or given up, to be read again). A revocation is therefore finished at once:
//!   nothing this member processed of the partition is left uncommitted, and the next owner
//!   starts at this member's last commit. The application learns of every change from the
//!   batch's events ([`Event::Assigned`], [`Event::Revoked`], [`Event::Lost`]).
//! - Newly assigned partitions start from the group's commit, checked by the engine like any
//!   stored offset (the stored positions are loaded again).
//! - A batch that is being processed delays a revocation until it is committed; the group waits
//!   for that up to `max.poll.interval.ms` (the classic rebalance timeout), as it waits for a Java
//!   consumer's next poll. Liveness is the member task's: heartbeats never wait for a batch.
//! - A partition lost while its batch was processed (the member was fenced or its session
//!   expired) is not committed: [`CommitReport::not_owned`](crate::CommitReport::not_owned)
//!   names it, and its next owner reads those records again.
//! - Commits carry the member's id and generation (or KIP-848 member epoch), so the coordinator
//!   refuses a zombie's. That is why a member stream keeps its offsets in the group itself
//!   ([`KafkaGroupStore`]): no other store can fence a commit.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use kafka_client::{
    topic_id_metadata, Client, ConsumerConfig, GroupMembership, MembershipChange, NotOwnedReason,
    OffsetToCommit, Subscription,
};
use kwire_stores::kafka::CommitOutcome;
use kwire_stores::KafkaGroupStore;
use offset_engine::TopicPartition;
use offset_store::StoredOffset;

use crate::batch::Event;
use crate::config::StreamConfig;
use crate::driver::DirectStream;
use crate::error::StreamError;

impl DirectStream<KafkaGroupStore> {
    /// A stream that is a member of `config.group`, sharing `config.topics`' partitions with the
    /// group's other members (streams, or any Kafka consumer of the same group): each batch
    /// covers the partitions the group gives this member, and commits go to the group's own
    /// offsets as this member, fenced by the coordinator. `member` holds the group settings
    /// under the Java consumer's names (`group.protocol` classic or consumer, the assignors,
    /// `session.timeout.ms`, `max.poll.interval.ms`, `group.instance.id`...; its fetch,
    /// isolation, start and commit settings are the stream's own and are not read here); its
    /// `group_id`, when set, must be `config.group`. Needs a Tokio runtime: the member's task
    /// starts at once. See the `member` module docs for how rebalances meet batches.
    pub fn join(
        store: KafkaGroupStore,
        config: StreamConfig,
        member: ConsumerConfig,
    ) -> Result<Self, StreamError> {
        let client = Arc::clone(store.client());
        let mut stream = DirectStream::new(Arc::clone(&client), store, config)?;
        let member = StreamMember::join(client, stream.config(), member)?;
        stream.set_member(member);
        Ok(stream)
    }
}

/// The stream's side of its group membership.
#[derive(Debug)]
pub(crate) struct StreamMember {
    membership: GroupMembership,
    /// What batches are planned over: the partitions the group gave this member, less those
    /// revoked or lost since.
    owned: BTreeSet<TopicPartition>,
}

/// What the membership changes taken before a batch mean for it.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    /// The batch's membership events, in the order they happened.
    pub(crate) events: Vec<Event>,
    /// New partitions arrived: their stored positions (another member's commits) must be
    /// loaded again.
    pub(crate) assigned: bool,
}

impl StreamMember {
    /// Joins `config.group` for `config.topics` with `member`'s group settings (`group.protocol`,
    /// session and poll intervals, static membership...). Needs a Tokio runtime.
    pub(crate) fn join(
        client: Arc<Client>,
        config: &StreamConfig,
        mut member: ConsumerConfig,
    ) -> Result<Self, StreamError> {
        match member.group_id.as_deref() {
            Some(g) if g != config.group => {
                return Err(StreamError::Config(format!(
                    "the member's group.id `{g}` is not the stream's group `{}`",
                    config.group
                )))
            }
            _ => member.group_id = Some(config.group.clone()),
        }
        let membership = GroupMembership::join(client, &member, Subscription::Topics(config.topics.clone()))
            .map_err(|e| StreamError::Membership(Box::new(e)))?;
        Ok(Self { membership, owned: BTreeSet::new() })
    }

    /// The partitions batches are planned over.
    pub(crate) fn owned(&self) -> &BTreeSet<TopicPartition> {
        &self.owned
    }

    /// The membership.
    pub(crate) fn membership(&self) -> &GroupMembership {
        &self.membership
    }

    /// Takes the changes that happened since the last batch — the application is done with
    /// that batch, so revocations are finished at once. With nothing owned, waits up to `wait`
    /// for the group to assign something.
    pub(crate) async fn before_batch(&mut self, wait: Duration) -> Result<Changes, StreamError> {
        self.membership.polled();
        let mut changes = Changes::default();
        while let Some(change) = self.membership.try_change() {
            self.apply(change, &mut changes)?;
        }
        if self.owned.is_empty() && changes.events.is_empty() {
            if let Ok(Some(change)) = tokio::time::timeout(wait, self.membership.next_change()).await {
                self.apply(change, &mut changes)?;
                while let Some(change) = self.membership.try_change() {
                    self.apply(change, &mut changes)?;
                }
            }
        }
        Ok(changes)
    }

    fn apply(&mut self, change: MembershipChange, changes: &mut Changes) -> Result<(), StreamError> {
        match change {
            MembershipChange::Assigned(partitions) => {
                self.owned.extend(partitions.iter().cloned());
                changes.assigned = true;
                changes.events.push(Event::Assigned { partitions });
            }
            MembershipChange::Revoking(partitions) => {
                for tp in &partitions {
                    self.owned.remove(tp);
                }
                self.membership.revocation_done(&partitions);
                changes.events.push(Event::Revoked { partitions });
            }
            MembershipChange::Lost(partitions) => {
                for tp in &partitions {
                    self.owned.remove(tp);
                }
                changes.events.push(Event::Lost { partitions });
            }
            MembershipChange::PollIntervalExceeded { elapsed, limit } => {
                changes.events.push(Event::PollIntervalExceeded {
                    elapsed_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
                    limit_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                });
            }
            MembershipChange::Failed(e) => return Err(StreamError::Membership(Box::new(e))),
            _ => {}
        }
        Ok(())
    }

    /// Commits `writes` as this member. A partition the member no longer owns is left out and
    /// returned with the reason; a commit the coordinator refuses (a fenced, zombie member) is
    /// an error naming the partition.
    pub(crate) async fn commit(
        &self,
        writes: &[StoredOffset],
    ) -> Result<Vec<(TopicPartition, NotOwnedReason)>, StreamError> {
        let mut not_owned = Vec::new();
        let mut offsets = Vec::new();
        for w in writes {
            let tp = TopicPartition::new(w.topic.as_str(), w.partition);
            match self.membership.group_metadata_for([&tp]) {
                Ok(_) => offsets.push(OffsetToCommit {
                    tp,
                    offset: w.offset,
                    leader_epoch: w.leader_epoch,
                    metadata: topic_id_metadata(w.topic_id),
                }),
                Err(kafka_client::ConsumerError::NotOwned { reason, .. }) => not_owned.push((tp, reason)),
                Err(e) => return Err(StreamError::Membership(Box::new(e))),
            }
        }
        if offsets.is_empty() {
            return Ok(not_owned);
        }
        let results = match self.membership.commit(&offsets).await {
            Ok(results) => results,
            // Lost between the check above and the commit: nothing was sent.
            Err(kafka_client::ConsumerError::NotOwned { partition, reason }) => {
                return Err(StreamError::NotOwned { tp: partition, reason });
            }
            Err(e) => return Err(StreamError::Membership(Box::new(e))),
        };
        CommitOutcome::of(offsets.iter().map(|o| &o.tp), results)?.into_result()?;
        Ok(not_owned)
    }

    /// Leaves the group at once (the application committed what it processed).
    pub(crate) async fn leave(self) -> Result<(), StreamError> {
        self.membership
            .close(kafka_client::CloseMode::Default)
            .await
            .map_err(|e| StreamError::Membership(Box::new(e)))
    }
}
