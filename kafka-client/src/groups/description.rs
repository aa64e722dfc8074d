//! What describing a group answers, whatever its type: [`GroupDescription`] with its
//! [`GroupMember`]s, [`GroupType`], and the epochs and member state of consumer-protocol and
//! share groups. Its own file because `non_member.rs` (classic and consumer-protocol groups,
//! described without joining) and `share_groups.rs` (share groups) both build these, and
//! `non_member.rs` describes a share group through `share_groups.rs`.

use crate::cluster::router::TopicPartition;
use crate::error::BrokerRef;
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
