//! `range` (Java's `RangeAssignor`, librdkafka's `range`): topic by topic, the partitions in
//! order are cut into contiguous ranges, one per member subscribed to the topic.
//!
//! Contract, as Java's:
//! - per topic, its subscribers are ordered by [`member_order`] (static members first, by
//!   `group.instance.id`; then dynamic ones by member id), so a static member that rejoins
//!   under a new member id gets the same ranges;
//! - with `n` partitions and `m` subscribers, each gets `n / m` and the first `n % m` one more;
//!   topics are cut independently, so members early in the order get the extra partition of
//!   every topic (range's known skew; co-partitioned topics line up, which is its point);
//! - every partition of every subscribed topic with partitions is assigned, to a subscriber.
//!
//! Not done: the rack-aware variant (KIP-881), which needs the racks of each partition's
//! replicas, not part of [`AssignmentInput`].

use crate::groups::assignors::contract::{
    member_order, Assignment, AssignmentInput, Assignor, RebalanceProtocol,
};
use crate::groups::assignors::prepared::Prepared;

/// The `range` assignor.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RangeAssignor;

impl Assignor for RangeAssignor {
    fn name(&self) -> &'static str {
        "range"
    }

    fn protocol(&self) -> RebalanceProtocol {
        RebalanceProtocol::Eager
    }

    fn assign(&self, input: &AssignmentInput<'_>) -> Assignment {
        let group = Prepared::new(input);
        let mut per_member = vec![Vec::new(); group.members.len()];
        for (topic, mut subscribers) in group.subscribers().into_iter().enumerate() {
            subscribers.sort_by(|&a, &b| member_order(group.members[a], group.members[b]));
            let m = subscribers.len() as i64;
            let n = i64::from(group.topics[topic].partitions);
            if m == 0 {
                continue;
            }
            let (each, extra) = (n / m, n % m);
            for (i, &member) in subscribers.iter().enumerate() {
                let i = i as i64;
                let start = each * i + i.min(extra);
                let len = each + i64::from(i < extra);
                // Both bounds are within 0..=n, and n is an i32.
                per_member[member].extend((start..start + len).map(|p| (topic, p as i32)));
            }
        }
        group.assignment(per_member)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groups::assignors::test_support::{assign, counts, member, tps, with_instance};

    const R: RangeAssignor = RangeAssignor;

    // Golden vectors: RangeAssignorTest (apache/kafka, clients/src/test/java/org/apache/kafka/
    // clients/consumer/RangeAssignorTest.java), the tests named in each comment.

    #[test]
    fn one_consumer_no_topic_or_a_nonexistent_topic_gets_nothing() {
        // testOneConsumerNoTopic, testOneConsumerNonexistentTopic
        let a = assign(&R, &[member("consumer1", &[])], &counts(&[]));
        assert_eq!(a, [("consumer1".to_owned(), vec![])].into());
        let a = assign(&R, &[member("consumer1", &["topic1"])], &counts(&[]));
        assert_eq!(a, [("consumer1".to_owned(), vec![])].into());
    }

    #[test]
    fn one_consumer_gets_every_partition_of_its_topics_only() {
        // testOneConsumerOneTopic, testOnlyAssignsPartitionsFromSubscribedTopics,
        // testOneConsumerMultipleTopics
        let a = assign(&R, &[member("consumer1", &["topic1"])], &counts(&[("topic1", 3), ("other", 3)]));
        assert_eq!(a["consumer1"], tps(&[("topic1", 0), ("topic1", 1), ("topic1", 2)]));
        let a = assign(
            &R,
            &[member("consumer1", &["topic1", "topic2"])],
            &counts(&[("topic1", 1), ("topic2", 2)]),
        );
        assert_eq!(a["consumer1"], tps(&[("topic1", 0), ("topic2", 0), ("topic2", 1)]));
    }

    #[test]
    fn two_consumers_one_topic() {
        // testTwoConsumersOneTopicOnePartition, testTwoConsumersOneTopicTwoPartitions
        let members = [member("consumer1", &["topic1"]), member("consumer2", &["topic1"])];
        let a = assign(&R, &members, &counts(&[("topic1", 1)]));
        assert_eq!(a["consumer1"], tps(&[("topic1", 0)]));
        assert_eq!(a["consumer2"], []);
        let a = assign(&R, &members, &counts(&[("topic1", 2)]));
        assert_eq!(a["consumer1"], tps(&[("topic1", 0)]));
        assert_eq!(a["consumer2"], tps(&[("topic1", 1)]));
    }

    #[test]
    fn mixed_subscriptions_cut_each_topic_over_its_own_subscribers() {
        // testMultipleConsumersMixedTopics
        let members = [
            member("consumer1", &["topic1"]),
            member("consumer2", &["topic1", "topic2"]),
            member("consumer3", &["topic1"]),
        ];
        let a = assign(&R, &members, &counts(&[("topic1", 3), ("topic2", 2)]));
        assert_eq!(a["consumer1"], tps(&[("topic1", 0)]));
        assert_eq!(a["consumer2"], tps(&[("topic1", 1), ("topic2", 0), ("topic2", 1)]));
        assert_eq!(a["consumer3"], tps(&[("topic1", 2)]));
    }

    #[test]
    fn the_first_members_get_the_extra_partition_of_every_topic() {
        // testTwoConsumersTwoTopicsSixPartitions (also RangeAssignor's class javadoc)
        let members =
            [member("consumer1", &["topic1", "topic2"]), member("consumer2", &["topic1", "topic2"])];
        let a = assign(&R, &members, &counts(&[("topic1", 3), ("topic2", 3)]));
        assert_eq!(a["consumer1"], tps(&[("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)]));
        assert_eq!(a["consumer2"], tps(&[("topic1", 2), ("topic2", 2)]));
    }

    #[test]
    fn static_members_are_ordered_by_instance_id_and_ahead_of_dynamic_ones() {
        // testTwoStaticConsumersTwoTopicsSixPartitions,
        // testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions
        let topics = ["topic1", "topic2"];
        let six = counts(&[("topic1", 3), ("topic2", 3)]);
        let first = tps(&[("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)]);
        let second = tps(&[("topic1", 2), ("topic2", 2)]);
        let members = [
            with_instance(member("consumer-b", &topics), "instance1"),
            with_instance(member("consumer-a", &topics), "instance2"),
        ];
        let a = assign(&R, &members, &six);
        assert_eq!((&a["consumer-b"], &a["consumer-a"]), (&first, &second));
        let members =
            [with_instance(member("consumer-b", &topics), "instance1"), member("consumer-a", &topics)];
        let a = assign(&R, &members, &six);
        assert_eq!((&a["consumer-b"], &a["consumer-a"]), (&first, &second));
    }

    #[test]
    fn static_members_keep_their_ranges_when_a_dynamic_member_is_replaced() {
        // testStaticMemberRangeAssignmentPersistent
        let topics = ["topic1", "topic2"];
        let statics = [
            with_instance(member("consumer1", &topics), "instance1"),
            with_instance(member("consumer2", &topics), "instance2"),
            with_instance(member("consumer3", &topics), "instance3"),
        ];
        let nine = counts(&[("topic1", 5), ("topic2", 4)]);
        for dynamic in ["consumer4", "consumer5"] {
            let mut members = statics.to_vec();
            members.push(member(dynamic, &topics));
            let a = assign(&R, &members, &nine);
            assert_eq!(a["consumer1"], tps(&[("topic1", 0), ("topic1", 1), ("topic2", 0)]));
            assert_eq!(a["consumer2"], tps(&[("topic1", 2), ("topic2", 1)]));
            assert_eq!(a["consumer3"], tps(&[("topic1", 3), ("topic2", 2)]));
            assert_eq!(a[dynamic], tps(&[("topic1", 4), ("topic2", 3)]));
        }
    }

    #[test]
    fn static_members_keep_their_ranges_under_new_member_ids() {
        // testStaticMemberRangeAssignmentPersistentAfterMemberIdChanges
        let topics = ["topic1", "topic2"];
        let ten = counts(&[("topic1", 5), ("topic2", 5)]);
        let by_instance = |ids: [&str; 3]| {
            let members: Vec<_> = ids
                .iter()
                .zip(["instance1", "instance2", "instance3"])
                .map(|(id, instance)| with_instance(member(id, &topics), instance))
                .collect();
            let a = assign(&R, &members, &ten);
            ids.map(|id| a[id].clone())
        };
        let before = by_instance(["consumer1", "consumer2", "consumer3"]);
        assert_eq!(before[0], tps(&[("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)]));
        assert_eq!(before[1], tps(&[("topic1", 2), ("topic1", 3), ("topic2", 2), ("topic2", 3)]));
        assert_eq!(before[2], tps(&[("topic1", 4), ("topic2", 4)]));
        assert_eq!(by_instance(["consumer1", "consumer5", "consumer4"]), before);
    }

    #[test]
    fn ranges_are_contiguous_with_the_remainder_spread_over_the_first_members() {
        let members: Vec<_> = ["m0", "m1", "m2", "m3"].iter().map(|id| member(id, &["t"])).collect();
        let a = assign(&R, &members, &counts(&[("t", 10)]));
        let sizes: Vec<usize> = ["m0", "m1", "m2", "m3"].iter().map(|id| a[*id].len()).collect();
        assert_eq!(sizes, [3, 3, 2, 2]);
        assert_eq!(a["m2"], tps(&[("t", 6), ("t", 7)]));
        assert_eq!(a["m3"], tps(&[("t", 8), ("t", 9)]));
    }

    #[test]
    fn the_name_and_protocol_are_javas() {
        assert_eq!(R.name(), "range");
        assert_eq!(R.protocol(), RebalanceProtocol::Eager);
    }
}
