//! What an assignor is given and what it gives back: the group leader's view of each member's
//! subscription (ConsumerProtocol Subscription v0–v3, decoded), the partition counts Metadata
//! answered, and the assignment it sends back in SyncGroup. The `Assignor` trait is the one
//! call the leader makes; `assignors/mod.rs` finds an assignor by its protocol name.
//!
//! Also here: the two orders Java's assignors sort by ([`java_cmp`], [`member_order`]), since
//! matching them is part of producing the same assignment as a Java leader would.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt::Debug;

use kafka_vocab::TopicPartition;

/// How members give up partitions in a rebalance (Java's `RebalanceProtocol`).
///
/// Ordered: an assignor that supports a protocol supports every one below it (Java's
/// cooperative-sticky lists both), so a member configured with several assignors uses the
/// lowest of their protocols, as Java's `ConsumerCoordinator` picks the highest protocol all
/// of them support.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum RebalanceProtocol {
    /// Every member revokes all its partitions before it rejoins (KIP-62 era; `range`,
    /// `roundrobin`).
    Eager,
    /// A member keeps its partitions through the rebalance and revokes only those the new
    /// assignment takes away (KIP-429; `cooperative-sticky`).
    Cooperative,
}

/// One member of the group as the leader sees it in the JoinGroup response.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct MemberSubscription {
    /// The member id the coordinator gave it; the key of the [`Assignment`].
    pub(crate) member_id: String,
    /// `group.instance.id` of a static member (KIP-345). `range` and `roundrobin` order static
    /// members by it, ahead of dynamic ones, so a static member keeps its partitions when it
    /// rejoins under a new member id.
    pub(crate) group_instance_id: Option<String>,
    /// The topics it subscribes to (duplicates are read once).
    pub(crate) topics: Vec<String>,
    /// The partitions it owns now (ConsumerProtocol v1+; cooperative members fill it, eager
    /// ones have revoked everything and send it empty).
    pub(crate) owned_partitions: Vec<TopicPartition>,
    /// The generation `owned_partitions` were assigned in: ConsumerProtocol v2+, or decoded
    /// from cooperative-sticky's user data (an int32) for v1. `None` when unknown, which
    /// ranks as Java's `DEFAULT_GENERATION` (−1).
    pub(crate) generation: Option<i32>,
    /// `client.rack` (ConsumerProtocol v3+). Carried for the rack-aware variants, which need
    /// the replicas' racks too; no assignor here reads it yet.
    pub(crate) rack_id: Option<String>,
}

/// What an assignor assigns from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AssignmentInput<'a> {
    /// The members, in any order (the assignment does not depend on it). A member id that
    /// appears twice is read from its first entry; the later ones are ignored.
    pub(crate) members: &'a [MemberSubscription],
    /// Partition count per topic, from Metadata. A subscribed topic missing here (unknown to
    /// the cluster, or not authorized), or with a count below 1, gets no partitions; topics no
    /// member subscribes to are ignored.
    pub(crate) partitions_per_topic: &'a BTreeMap<String, i32>,
}

/// Partitions per member id: every member of the input is a key (possibly with no
/// partitions), and each list is sorted.
pub(crate) type Assignment = BTreeMap<String, Vec<TopicPartition>>;

/// A partition assignment strategy the group leader runs (Java's `ConsumerPartitionAssignor`).
/// Pure: the same input gives the same assignment, whatever the order of its members.
pub(crate) trait Assignor: Debug + Send + Sync {
    /// The protocol name members put in JoinGroup (`range`, `roundrobin`,
    /// `cooperative-sticky`).
    fn name(&self) -> &'static str;
    /// The highest rebalance protocol it supports.
    fn protocol(&self) -> RebalanceProtocol;
    /// The assignment for the group: see [`AssignmentInput`] and [`Assignment`].
    fn assign(&self, input: &AssignmentInput<'_>) -> Assignment;
}

/// At most this many partitions, over all subscribed topics together, are assigned: counts
/// come from Metadata, but a count of 2^31−1 must not become a 2^31-entry assignment. Topics
/// are counted in name order ([`java_cmp`]) and the topic that crosses the cap keeps its
/// partitions below it (1,048,576 is beyond any cluster's practical partition count: Java's
/// own stress test assigns 1,000,000).
pub(crate) const MAX_ASSIGNED_PARTITIONS: usize = 1 << 20;

/// Java's `String.compareTo`: UTF-16 code unit order. It differs from Rust's (UTF-8, code
/// point) order only for characters above U+FFFF against U+E000..U+FFFF; topic names are
/// ASCII, but member and instance ids may not be.
pub(crate) fn java_cmp(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        a.cmp(b)
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

/// The order `range` and `roundrobin` deal to members in (Java's `MemberInfo.compareTo`):
/// static members first, by instance id; then dynamic members, by member id. Two static
/// members with the same instance id (which a coordinator never admits) are ordered by member
/// id, where Java would keep its hash map's order.
pub(crate) fn member_order(a: &MemberSubscription, b: &MemberSubscription) -> Ordering {
    match (&a.group_instance_id, &b.group_instance_id) {
        (Some(x), Some(y)) => java_cmp(x, y).then_with(|| java_cmp(&a.member_id, &b.member_id)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => java_cmp(&a.member_id, &b.member_id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, instance: Option<&str>) -> MemberSubscription {
        MemberSubscription {
            member_id: id.to_owned(),
            group_instance_id: instance.map(str::to_owned),
            ..MemberSubscription::default()
        }
    }

    #[test]
    fn java_order_is_utf16_order_not_code_point_order() {
        // U+FF61 is one UTF-16 unit 0xFF61; U+1F600 is the surrogate pair 0xD83D 0xDE00, so
        // Java sorts the emoji first while Rust's byte order sorts it last.
        let halfwidth = "\u{FF61}";
        let emoji = "\u{1F600}";
        assert_eq!(java_cmp(emoji, halfwidth), Ordering::Less);
        assert_eq!(emoji.cmp(halfwidth), Ordering::Greater);
        assert_eq!(java_cmp("consumer-a", "consumer-b"), Ordering::Less);
        assert_eq!(java_cmp("topic", "topic1"), Ordering::Less);
        assert_eq!(java_cmp("é", "é"), Ordering::Equal);
    }

    #[test]
    fn static_members_come_first_by_instance_id_then_dynamic_by_member_id() {
        let mut members = [
            member("consumer-a", None),
            member("consumer-z", Some("instance2")),
            member("consumer-0", None),
            member("consumer-b", Some("instance1")),
        ];
        members.sort_by(member_order);
        let ids: Vec<&str> = members.iter().map(|m| m.member_id.as_str()).collect();
        assert_eq!(ids, ["consumer-b", "consumer-z", "consumer-0", "consumer-a"]);
    }

    #[test]
    fn a_shared_instance_id_falls_back_to_the_member_id() {
        let a = member("m1", Some("same"));
        let b = member("m2", Some("same"));
        assert_eq!(member_order(&a, &b), Ordering::Less);
        assert_eq!(member_order(&b, &a), Ordering::Greater);
    }

    #[test]
    fn eager_ranks_below_cooperative() {
        assert!(RebalanceProtocol::Eager < RebalanceProtocol::Cooperative);
        let lowest = [RebalanceProtocol::Cooperative, RebalanceProtocol::Eager].into_iter().min();
        assert_eq!(lowest, Some(RebalanceProtocol::Eager));
    }
}
