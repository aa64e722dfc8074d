//! The application's hooks into a consumer's partition changes. Called on the caller's task,
//! inside [`Consumer::poll`](crate::Consumer::poll), never on the heartbeat task: a slow hook
//! delays the rebalance (up to `max.poll.interval.ms`), not the member's liveness.

use crate::cluster::router::TopicPartition;
use crate::consumer::start_positions::StartPosition;

/// Offsets to commit before revoked partitions go, added by
/// [`RebalanceListener::on_revoked`]; committed (with the member's generation or epoch) before
/// the revocation is acknowledged.
#[derive(Debug, Default)]
pub struct RevokeCommits {
    pub(crate) offsets: Vec<(TopicPartition, i64)>,
}

impl RevokeCommits {
    /// Commit `offset` (the next offset to read: one past the last record processed) for
    /// `partition`, one of the partitions being revoked.
    pub fn commit(&mut self, partition: TopicPartition, offset: i64) {
        self.offsets.push((partition, offset));
    }

    /// The offsets added so far, in the order they were added.
    pub fn offsets(&self) -> &[(TopicPartition, i64)] {
        &self.offsets
    }
}

/// Partition changes, as they happen. Every method has an empty default.
pub trait RebalanceListener: Send {
    /// These partitions were assigned, and start reading where each [`StartPosition`] says
    /// (with the anomaly the engine found in its commit, if any). Called for partitions given
    /// by [`Consumer::assign`](crate::Consumer::assign) too.
    fn on_assigned(&mut self, _started: &[StartPosition]) {}

    /// These partitions are being taken away. Nothing more of them is returned by poll; the
    /// member still owns them until this returns and the commits added to `commits` are done
    /// (with `enable.auto.commit`, the consumer also commits their positions). A commit of a
    /// revoked partition after this is refused ([`NotOwned`](crate::NotOwnedReason::Revoked)).
    fn on_revoked(&mut self, _partitions: &[TopicPartition], _commits: &mut RevokeCommits) {}

    /// These partitions were lost: the member was fenced or its session expired, so another
    /// member may already read them. Nothing can be committed for them any more.
    fn on_lost(&mut self, _partitions: &[TopicPartition]) {}
}
