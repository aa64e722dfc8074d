//! Which replica a partition is read from (KIP-392), sans-IO: the leader, unless the leader
//! named a preferred read replica for this client's rack and nothing has since said otherwise.
//!
//! ```text
//!   leader ──answer names replica N──► replica N ──N's end of the log reached short of the
//!     ▲  ▲                                │  │      range, metadata no longer has N as an
//!     │  └────────────────────────────────┘  │      online replica, the leader epoch moved,
//!     │                                      │      expiry
//!     │                                      │
//!     └── leader only (no rack sent) ◄───────┘ any error from N, N unreachable
//!         for LEADER_ONLY_AFTER_FAILURE
//! ```
//!
//! As the Java consumer does (`SubscriptionState.preferredReadReplica`, cleared by its
//! `FetchCollector` on errors and by `selectReadReplica` when the node is gone), a choice also
//! expires after [`READ_REPLICA_TTL`] (Java's `metadata.max.age.ms` default), so the leader is
//! asked again now and then and can move the reader.
//!
//! Unlike the Java consumer, a replica that failed is not named again at once: a leader that
//! gets a rack id never sends records itself while an in-sync replica is in that rack, it
//! only names the replica again — so a replica the client cannot reach (while the leader
//! still can) would stall the partition. A request holding a partition whose replica failed
//! therefore goes to the leader without the rack id, and the leader serves it, for
//! [`LEADER_ONLY_AFTER_FAILURE`].

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::cluster::metadata::{ClusterMetadata, PartitionInfo};
use kafka_vocab::TopicPartition;

/// How long a leader's choice of read replica holds before the leader is asked again.
pub(crate) const READ_REPLICA_TTL: Duration = Duration::from_secs(300);

/// How long a partition whose preferred read replica failed is read from its leader alone.
pub(crate) const LEADER_ONLY_AFTER_FAILURE: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Chosen {
    node: i32,
    /// The leader epoch the leader answered in: a new leader chooses again.
    leader_epoch: Option<i32>,
    expires: Instant,
}

/// The preferred read replicas the leaders named, per partition.
#[derive(Debug, Default)]
pub(crate) struct ReadReplicas {
    chosen: HashMap<TopicPartition, Chosen>,
    /// Partitions read from their leader alone (no rack id sent), until then.
    leader_only: HashMap<TopicPartition, Instant>,
}

impl ReadReplicas {
    /// The node to fetch `tp` from: its preferred read replica while that choice holds (see
    /// the module docs), else its leader (`None` without one). A choice that no longer holds
    /// is dropped here.
    pub(crate) fn target(
        &mut self,
        tp: &TopicPartition,
        partition: &PartitionInfo,
        metadata: &ClusterMetadata,
        now: Instant,
    ) -> Option<i32> {
        let leader = partition.leader;
        let Some(chosen) = self.chosen.get(tp) else { return leader };
        let holds = now < chosen.expires
            && leader.is_some_and(|l| l != chosen.node)
            && chosen.leader_epoch == partition.leader_epoch
            && partition.replicas.as_slice().contains(&chosen.node)
            && !partition.offline.as_slice().contains(&chosen.node)
            && metadata.broker(chosen.node).is_some();
        if holds {
            Some(chosen.node)
        } else {
            self.chosen.remove(tp);
            leader
        }
    }

    /// The leader of `tp` (at `leader_epoch`) named `node` as the replica to read from; a
    /// negative node (none) changes nothing, as in the Java consumer, and neither does a
    /// partition read from its leader alone.
    pub(crate) fn preferred(
        &mut self,
        tp: &TopicPartition,
        node: i32,
        leader_epoch: Option<i32>,
        now: Instant,
    ) {
        if node < 0 || self.leader_only(tp, now) {
            return;
        }
        self.chosen.insert(
            tp.clone(),
            Chosen { node, leader_epoch, expires: now.checked_add(READ_REPLICA_TTL).unwrap_or(now) },
        );
    }

    /// Whether `tp` is read from `node` as its preferred read replica (not as its leader).
    pub(crate) fn reads_from(&self, tp: &TopicPartition, node: Option<i32>) -> bool {
        node.is_some_and(|n| self.chosen.get(tp).is_some_and(|c| c.node == n))
    }

    /// What `node` said about `tp` is for the leader to confirm: when `node` is its preferred
    /// read replica, the next fetch goes to the leader. Returns whether it was.
    pub(crate) fn back_to_leader(&mut self, tp: &TopicPartition, node: Option<i32>) -> bool {
        let was = self.reads_from(tp, node);
        if was {
            self.chosen.remove(tp);
        }
        was
    }

    /// Reading `tp` from `node` failed: when `node` is its preferred read replica, `tp` is read
    /// from its leader alone for [`LEADER_ONLY_AFTER_FAILURE`]. Returns whether it was.
    pub(crate) fn replica_failed(&mut self, tp: &TopicPartition, node: Option<i32>, now: Instant) -> bool {
        let was = self.back_to_leader(tp, node);
        if was {
            self.leader_only.insert(tp.clone(), now.checked_add(LEADER_ONLY_AFTER_FAILURE).unwrap_or(now));
        }
        was
    }

    /// Whether a request for `partitions` may carry the client's rack id: not while one of
    /// them is read from its leader alone.
    pub(crate) fn rack_allowed<'a>(
        &mut self,
        mut partitions: impl Iterator<Item = &'a TopicPartition>,
        now: Instant,
    ) -> bool {
        if self.leader_only.is_empty() {
            return true;
        }
        self.leader_only.retain(|_, until| now < *until);
        !partitions.any(|tp| self.leader_only.contains_key(tp))
    }

    fn leader_only(&self, tp: &TopicPartition, now: Instant) -> bool {
        self.leader_only.get(tp).is_some_and(|until| now < *until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::metadata::{BrokerInfo, TopicInfo};
    use kafka_wire::protocol::{BrokerIds, ErrorCode};

    fn broker(node_id: i32) -> BrokerInfo {
        BrokerInfo {
            node_id,
            host: "127.0.0.1".to_owned(),
            port: 9000 + node_id,
            rack: Some(format!("r{node_id}")),
        }
    }

    fn partition(leader: i32, leader_epoch: i32, replicas: &[i32], offline: &[i32]) -> PartitionInfo {
        PartitionInfo {
            partition: 0,
            leader: Some(leader),
            leader_epoch: Some(leader_epoch),
            replicas: BrokerIds::from(replicas.to_vec()),
            isr: BrokerIds::from(replicas.to_vec()),
            offline: BrokerIds::from(offline.to_vec()),
            error: ErrorCode::NONE,
        }
    }

    fn cluster(brokers: &[i32], p: &PartitionInfo) -> ClusterMetadata {
        ClusterMetadata {
            brokers: brokers.iter().map(|&n| broker(n)).collect(),
            topics: vec![TopicInfo {
                name: "t".to_owned(),
                topic_id: None,
                is_internal: false,
                error: ErrorCode::NONE,
                partitions: vec![p.clone()],
            }],
            generation: 1,
            cluster_id: None,
            controller_id: None,
        }
    }

    fn tp() -> TopicPartition {
        TopicPartition::new("t", 0)
    }

    /// Replicas chosen by leader 1 at epoch 5: node 3.
    fn chose_3(now: Instant) -> ReadReplicas {
        let mut r = ReadReplicas::default();
        r.preferred(&tp(), 3, Some(5), now);
        r
    }

    #[test]
    fn without_a_choice_the_leader_is_read() {
        let p = partition(1, 5, &[1, 2, 3], &[]);
        let mut r = ReadReplicas::default();
        assert_eq!(r.target(&tp(), &p, &cluster(&[1, 2, 3], &p), Instant::now()), Some(1));
        r.preferred(&tp(), -1, Some(5), Instant::now());
        assert_eq!(r.target(&tp(), &p, &cluster(&[1, 2, 3], &p), Instant::now()), Some(1));
    }

    #[test]
    fn the_named_replica_is_read_until_it_fails_then_the_leader() {
        let now = Instant::now();
        let p = partition(1, 5, &[1, 2, 3], &[]);
        let m = cluster(&[1, 2, 3], &p);
        let mut r = chose_3(now);
        assert_eq!(r.target(&tp(), &p, &m, now), Some(3));
        assert!(r.reads_from(&tp(), Some(3)));
        // The leader's own failure is not the replica's: the choice stays.
        assert!(!r.back_to_leader(&tp(), Some(1)));
        assert_eq!(r.target(&tp(), &p, &m, now), Some(3));
        assert!(r.back_to_leader(&tp(), Some(3)));
        assert_eq!(r.target(&tp(), &p, &m, now), Some(1));
        assert!(!r.reads_from(&tp(), Some(3)));
        // Only confirming an end: the leader may name the replica again at once.
        assert!(r.rack_allowed([tp()].iter(), now));
        r.preferred(&tp(), 3, Some(5), now);
        assert_eq!(r.target(&tp(), &p, &m, now), Some(3));
    }

    #[test]
    fn a_failed_replica_leaves_the_partition_to_its_leader_alone_for_a_while() {
        let now = Instant::now();
        let p = partition(1, 5, &[1, 2, 3], &[]);
        let m = cluster(&[1, 2, 3], &p);
        let other = TopicPartition::new("t", 1);
        let mut r = chose_3(now);
        assert!(!r.replica_failed(&tp(), Some(1), now), "the leader failing is not the replica's");
        assert!(r.replica_failed(&tp(), Some(3), now));
        assert_eq!(r.target(&tp(), &p, &m, now), Some(1));
        // The leader, asked without the rack, serves it; naming the replica changes nothing.
        assert!(!r.rack_allowed([other.clone(), tp()].iter(), now));
        assert!(r.rack_allowed([other.clone()].iter(), now));
        r.preferred(&tp(), 3, Some(5), now);
        assert_eq!(r.target(&tp(), &p, &m, now), Some(1));
        // Afterwards the rack goes out again and the replica may be named.
        let later = now + LEADER_ONLY_AFTER_FAILURE;
        assert!(r.rack_allowed([tp()].iter(), later));
        r.preferred(&tp(), 3, Some(5), later);
        assert_eq!(r.target(&tp(), &p, &m, later), Some(3));
    }

    #[test]
    fn a_new_leader_epoch_sends_the_reader_back_to_the_leader() {
        let now = Instant::now();
        let moved = partition(2, 6, &[1, 2, 3], &[]);
        let mut r = chose_3(now);
        assert_eq!(r.target(&tp(), &moved, &cluster(&[1, 2, 3], &moved), now), Some(2));
        // Dropped, not merely skipped: the old epoch coming back does not revive it.
        let p = partition(1, 5, &[1, 2, 3], &[]);
        assert_eq!(r.target(&tp(), &p, &cluster(&[1, 2, 3], &p), now), Some(1));
    }

    #[test]
    fn a_replica_gone_from_metadata_or_offline_or_leading_is_not_read() {
        let now = Instant::now();
        let cases = [
            (partition(1, 5, &[1, 2], &[]), vec![1, 2, 3]),
            (partition(1, 5, &[1, 2, 3], &[3]), vec![1, 2, 3]),
            (partition(1, 5, &[1, 2, 3], &[]), vec![1, 2]),
            (partition(3, 5, &[1, 2, 3], &[]), vec![1, 2, 3]),
        ];
        for (p, brokers) in cases {
            let mut r = chose_3(now);
            assert_eq!(r.target(&tp(), &p, &cluster(&brokers, &p), now), p.leader, "{p:?} {brokers:?}");
            assert!(!r.reads_from(&tp(), Some(3)));
        }
    }

    #[test]
    fn a_choice_expires_and_the_leader_is_asked_again() {
        let now = Instant::now();
        let p = partition(1, 5, &[1, 2, 3], &[]);
        let m = cluster(&[1, 2, 3], &p);
        let mut r = chose_3(now);
        assert_eq!(
            r.target(&tp(), &p, &m, now + READ_REPLICA_TTL.saturating_sub(Duration::from_millis(1))),
            Some(3)
        );
        assert_eq!(r.target(&tp(), &p, &m, now + READ_REPLICA_TTL), Some(1));
    }
}
