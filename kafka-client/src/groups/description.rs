//! What describing a group answers, whatever its type: [`GroupDescription`] with its
//! [`GroupMember`]s, [`GroupType`], and the epochs and member state of consumer-protocol and
//! share groups. Its own file because `non_member.rs` (classic and consumer-protocol groups,
//! described without joining) and `share_groups.rs` (share groups) both build these, and
//! `non_member.rs` describes a share group through `share_groups.rs`.

use crate::cluster::router::TopicPartition;
use crate::error::BrokerRef;
use kafka_wire::protocol::consumer_protocol;
use kafka_wire::protocol::messages::ConsumerGroupAssignment;

/// A member of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    /// The id the coordinator gave the member.
    pub member_id: String,
    /// The static member id (`group.instance.id`, DescribeGroups v4+); `None` for dynamic
    /// members and older brokers.
    pub group_instance_id: Option<String>,
    /// The member's `client.id`.
    pub client_id: String,
    /// The host the member connected from, as the broker saw it (e.g. `/10.0.0.5`).
    pub client_host: String,
    /// What only a consumer-protocol group reports; `None` for a classic group's member.
    pub consumer: Option<ConsumerMemberState>,
    /// A classic consumer group's member: the partitions its last SyncGroup gave it, sorted
    /// (DescribeGroups' member assignment read as a `ConsumerProtocolAssignment`, which is what
    /// `kafka-consumer-groups --describe --members --verbose` shows). `None` for a member of
    /// another kind of group, while the group rebalances (no assignment yet), or when the bytes
    /// are not a consumer assignment; a consumer-protocol member's is in [`consumer`](Self::consumer).
    pub classic_assignment: Option<Vec<TopicPartition>>,
}

impl GroupMember {
    /// The partitions the member owns now, whichever protocol it speaks; `None` when the
    /// description does not say.
    pub fn assignment(&self) -> Option<&[TopicPartition]> {
        match &self.consumer {
            Some(c) => Some(&c.assignment),
            None => self.classic_assignment.as_deref(),
        }
    }
}

/// A classic member's assignment bytes (DescribeGroups' `member_assignment`) as partitions,
/// sorted: `None` when the group's protocol type is not `consumer`, the bytes are empty (the
/// group is rebalancing) or they do not decode.
pub(crate) fn classic_assignment_of(protocol_type: &str, bytes: bytes::Bytes) -> Option<Vec<TopicPartition>> {
    if protocol_type != consumer_protocol::PROTOCOL_TYPE || bytes.is_empty() {
        return None;
    }
    let decoded = consumer_protocol::ConsumerAssignment::decode(bytes).ok()?.value;
    let mut partitions: Vec<TopicPartition> = decoded
        .assigned_partitions
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| TopicPartition::new(t.topic.as_str(), *p)))
        .collect();
    partitions.sort();
    Some(partitions)
}

/// A consumer-protocol or share group member's epoch, subscription and assignments
/// (ConsumerGroupDescribe, ShareGroupDescribe).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerMemberState {
    /// The member's current epoch.
    pub member_epoch: i32,
    /// The member's rack, if it gave one.
    pub rack_id: Option<String>,
    /// The topics it subscribed to by name.
    pub subscribed_topics: Vec<String>,
    /// Its subscription regex, if it subscribed by pattern.
    pub subscribed_topic_regex: Option<String>,
    /// The partitions it owns now, sorted.
    pub assignment: Vec<TopicPartition>,
    /// The partitions the coordinator is moving it to, sorted; equal to `assignment` once the
    /// member has reconciled. `None` for a share group's member: ShareGroupDescribe reports no
    /// target assignment.
    pub target_assignment: Option<Vec<TopicPartition>>,
}

/// Which group protocol a group runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupType {
    /// The classic protocol (JoinGroup/SyncGroup), described by DescribeGroups; also a group
    /// that only stores offsets and a group no coordinator knows.
    Classic,
    /// The consumer protocol of KIP-848 (`group.protocol=consumer`), described by
    /// ConsumerGroupDescribe.
    Consumer,
    /// A share group (KIP-932, Kafka 4.1+ with `share.version=1`), described by
    /// ShareGroupDescribe. Its position per partition is a share-partition start offset, not a
    /// committed offset, and OffsetCommit cannot move it.
    Share,
}

impl GroupType {
    /// `classic`, `consumer` or `share`, as ListGroups v5 names the types.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Classic => "classic",
            Self::Consumer => "consumer",
            Self::Share => "share",
        }
    }
}

/// A consumer-protocol or share group's epochs (ConsumerGroupDescribe, ShareGroupDescribe).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsumerGroupEpochs {
    /// Bumped by every change of membership or subscriptions.
    pub group_epoch: i32,
    /// The group epoch the current target assignment was computed at.
    pub assignment_epoch: i32,
}

/// A group as its coordinator describes it (DescribeGroups or ConsumerGroupDescribe).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    /// The group id.
    pub group_id: String,
    /// Which protocol the group runs.
    pub group_type: GroupType,
    /// Classic: `Empty`, `Stable`, `PreparingRebalance`, `CompletingRebalance`, `Dead`;
    /// consumer: `Empty`, `Assigning`, `Reconciling`, `Stable`, `Dead`.
    pub state: String,
    /// `consumer`, `connect`, ...; empty for a group with no members that only stores offsets.
    pub protocol_type: String,
    /// The assignment strategy chosen (`range`, `cooperative-sticky`, ...; for a consumer-protocol
    /// group the server-side assignor, `uniform`, `range`); empty when none has run.
    pub protocol: String,
    /// A consumer-protocol or share group's epochs; `None` for a classic group.
    pub epochs: Option<ConsumerGroupEpochs>,
    /// The current members; empty for an inactive group.
    pub members: Vec<GroupMember>,
    /// The group's coordinator, which answered.
    pub coordinator: BrokerRef,
}

impl GroupDescription {
    /// Whether offsets may be written as a non-member: Kafka allows it (and
    /// kafka-consumer-groups only resets) when the group is `Empty` or `Dead`, on either
    /// protocol.
    pub fn is_inactive(&self) -> bool {
        matches!(self.state.as_str(), "Empty" | "Dead") || self.members.is_empty()
    }
}

/// An assignment as a sorted list of partitions (topic ids dropped: the names are there).
pub(super) fn partitions_of(assignment: ConsumerGroupAssignment) -> Vec<TopicPartition> {
    let mut out: Vec<TopicPartition> = assignment
        .topic_partitions
        .into_iter()
        .flat_map(|t| {
            let name = t.topic_name;
            t.partitions.into_iter().map(move |p| TopicPartition::new(name.clone(), p))
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use consumer_protocol::{ConsumerAssignment, ConsumerTopicPartitions};

    fn assignment_bytes() -> bytes::Bytes {
        let assignment = ConsumerAssignment {
            assigned_partitions: vec![
                ConsumerTopicPartitions { topic: "b".into(), partitions: vec![1, 0] },
                ConsumerTopicPartitions { topic: "a".into(), partitions: vec![2] },
            ],
            user_data: None,
        };
        bytes::Bytes::from(assignment.encode(3).unwrap())
    }

    #[test]
    fn a_classic_consumer_members_assignment_is_read_sorted() {
        let got = classic_assignment_of("consumer", assignment_bytes()).unwrap();
        let want: Vec<TopicPartition> =
            [("a", 2), ("b", 0), ("b", 1)].iter().map(|(t, p)| TopicPartition::new(*t, *p)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn another_protocol_type_a_rebalance_or_foreign_bytes_give_no_assignment() {
        assert_eq!(classic_assignment_of("connect", assignment_bytes()), None);
        assert_eq!(classic_assignment_of("consumer", bytes::Bytes::new()), None);
        assert_eq!(classic_assignment_of("consumer", bytes::Bytes::from_static(&[0, 0, 0, 0, 0, 9])), None);
        assert_eq!(classic_assignment_of("consumer", bytes::Bytes::from_static(&[0xff])), None);
    }
}
