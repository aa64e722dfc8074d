//! [`GroupMembership`]: membership of a consumer group for a reader that fetches by itself —
//! the member task a [`Consumer`](crate::Consumer) runs, without the consumer's fetcher and
//! positions. kwire-stream's member mode is built on it: it plans exact offset ranges over
//! the partitions the group gives it, and commits them here, fenced by the coordinator.
//!
//! The reader's side of the contract, in the order of a rebalance:
//! - call [`polled`](GroupMembership::polled) whenever it asks for records (the
//!   `max.poll.interval.ms` clock, as `Consumer::poll`);
//! - read [`MembershipChange`]s ([`try_change`](GroupMembership::try_change) /
//!   [`next_change`](GroupMembership::next_change)) and act on them: read `Assigned`
//!   partitions from their committed offsets; stop reading `Revoking` ones, commit what was
//!   processed of them, then [`revocation_done`](GroupMembership::revocation_done); drop `Lost`
//!   ones without committing (the member refuses such a commit itself).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cluster::client::Client;
use crate::cluster::router::{PartitionResults, TopicPartition};
use crate::consumer::config::{ConsumerConfig, GroupProtocol, Subscription};
use crate::consumer::error::ConsumerError;
use crate::consumer::membership::{GroupMemberState, Membership};
use crate::groups::group_metadata::ConsumerGroupMetadata;
use crate::groups::member::model::{CloseMode, MemberEvent};
use crate::groups::non_member::OffsetToCommit;

/// What changed in the member's ownership, or in the membership itself.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum MembershipChange {
    /// These partitions are now owned: read them from their committed offsets.
    Assigned(Vec<TopicPartition>),
    /// These are being taken away: stop reading them, commit what was processed of them (still
    /// allowed), then call [`GroupMembership::revocation_done`] with them.
    Revoking(Vec<TopicPartition>),
    /// These are no longer owned, at once (fenced, session expired, poll interval passed):
    /// nothing may be committed for them.
    Lost(Vec<TopicPartition>),
    /// The reader did not ask for records for longer than `max.poll.interval.ms`: the member
    /// left the group (a `Lost` comes with it) and joins again at the next
    /// [`GroupMembership::polled`].
    PollIntervalExceeded {
        /// Time since the reader last asked for records.
        elapsed: Duration,
        /// `max.poll.interval.ms`.
        limit: Duration,
    },
    /// The membership ended for good ([`ConsumerError::Membership`] says why).
    Failed(ConsumerError),
    /// The member left the group (after [`GroupMembership::close`]).
    Left,
}

/// A member of a consumer group that reads by itself: see the module docs for the contract.
/// Dropping it stops the member's task without leaving (the coordinator drops the member when
/// its session times out); [`close`](Self::close) leaves at once.
#[derive(Debug)]
pub struct GroupMembership {
    inner: Membership,
    max_poll_interval: Duration,
    request_timeout: Duration,
}

impl GroupMembership {
    /// Joins `config.group_id` with `subscription`, on a task of its own (heartbeats never wait
    /// for the reader), with `group.protocol`'s protocol — KIP-848's falls back to classic on a
    /// broker without it.
    pub fn join(
        client: Arc<Client>,
        config: &ConsumerConfig,
        subscription: Subscription,
    ) -> Result<Self, ConsumerError> {
        let group = config.group_id.clone().ok_or(ConsumerError::NoGroup)?;
        subscription.validate()?;
        Ok(Self {
            inner: Membership::start(client, config, &group, subscription),
            max_poll_interval: config.max_poll_interval,
            request_timeout: config.request_timeout,
        })
    }

    /// The group.
    pub fn group(&self) -> &str {
        self.inner.group()
    }

    /// The reader asks for records now (or waits for some): the `max.poll.interval.ms` clock
    /// starts again, and a member that left for passing it joins again.
    pub fn polled(&self) {
        self.inner.with(|m| m.application_polled(Instant::now()));
    }

    /// The next change, if one is waiting.
    pub fn try_change(&mut self) -> Option<MembershipChange> {
        while let Some(event) = self.inner.try_event() {
            if let Some(change) = self.change_of(event) {
                return Some(change);
            }
        }
        None
    }

    /// Waits for the next change; `None` once the member's task has ended. Cancel-safe.
    pub async fn next_change(&mut self) -> Option<MembershipChange> {
        while let Some(event) = self.inner.next_event().await {
            if let Some(change) = self.change_of(event) {
                return Some(change);
            }
        }
        None
    }

    fn change_of(&self, event: MemberEvent) -> Option<MembershipChange> {
        Some(match event {
            MemberEvent::Assigned(p) => MembershipChange::Assigned(p),
            MemberEvent::Revoking(p) => MembershipChange::Revoking(p),
            MemberEvent::Lost(p) => MembershipChange::Lost(p),
            MemberEvent::PollIntervalExceeded { elapsed } => {
                MembershipChange::PollIntervalExceeded { elapsed, limit: self.max_poll_interval }
            }
            MemberEvent::Fatal(e) => MembershipChange::Failed(ConsumerError::Membership {
                group: self.group().to_owned(),
                message: e.to_string(),
            }),
            MemberEvent::Left => MembershipChange::Left,
            // The member task's own jobs.
            MemberEvent::AssignAsLeader { .. } | MemberEvent::NeedTopicNames(_) => return None,
        })
    }

    /// The reader is done with these revoked partitions (it committed what it processed).
    pub fn revocation_done(&self, partitions: &[TopicPartition]) {
        self.inner.with(|m| m.revocation_done(partitions));
    }

    /// The member's state: protocol, phase, identity and what it owns.
    pub fn state(&self) -> GroupMemberState {
        self.inner.state()
    }

    /// The protocol spoken now: the configured one, or classic after a fallback.
    pub fn protocol(&self) -> GroupProtocol {
        self.inner.protocol()
    }

    /// The identity this member's commits carry now (for a transactional producer's
    /// [`send_offsets_to_transaction_of`](crate::Producer::send_offsets_to_transaction_of)).
    pub fn group_metadata(&self) -> ConsumerGroupMetadata {
        self.inner.metadata()
    }

    /// [`group_metadata`](Self::group_metadata) once every one of `partitions` is checked to be
    /// this member's: a revoked, lost or never assigned one is a [`ConsumerError::NotOwned`]
    /// naming it.
    pub fn group_metadata_for<'a>(
        &self,
        partitions: impl IntoIterator<Item = &'a TopicPartition>,
    ) -> Result<ConsumerGroupMetadata, ConsumerError> {
        self.inner.metadata_for(partitions)
    }

    /// Commits `offsets` as this member: every partition must be owned (assigned, or being
    /// revoked), else nothing is sent and the error names the first that is not. The
    /// coordinator fences the commit (a zombie member's is refused per partition); one result
    /// per partition.
    pub async fn commit(&self, offsets: &[OffsetToCommit]) -> Result<PartitionResults<()>, ConsumerError> {
        if offsets.is_empty() {
            return Ok(PartitionResults::new());
        }
        self.inner.commit(offsets, self.request_timeout).await
    }

    /// Leaves the group: what is owned is revoked (the reader must have committed what it
    /// processed before calling this: nothing is committed here), then the member leaves — a
    /// static member stays until its session times out unless `mode` says otherwise. Waits at
    /// most `request.timeout.ms`.
    pub async fn close(mut self, mode: CloseMode) -> Result<(), ConsumerError> {
        self.inner.begin_close(mode);
        let deadline = tokio::time::Instant::now() + self.request_timeout;
        loop {
            match tokio::time::timeout_at(deadline, self.inner.next_event()).await {
                Ok(Some(MemberEvent::Revoking(partitions))) => self.revocation_done(&partitions),
                Ok(Some(MemberEvent::Left) | None) => return Ok(()),
                Ok(Some(MemberEvent::Fatal(e))) => {
                    return Err(ConsumerError::Membership {
                        group: self.group().to_owned(),
                        message: e.to_string(),
                    })
                }
                Ok(Some(_)) => {}
                Err(_) => {
                    return Err(ConsumerError::Membership {
                        group: self.group().to_owned(),
                        message: format!("did not leave within {:?}", self.request_timeout),
                    })
                }
            }
        }
    }
}
