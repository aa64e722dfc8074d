//! `roundrobin` (Java's `RoundRobinAssignor`, librdkafka's `roundrobin`): every partition of
//! every subscribed topic, sorted by topic then partition, dealt in turn over the members.
//!
//! Contract, as Java's:
//! - members are dealt to in [`member_order`] (static members first, by `group.instance.id`;
//!   then dynamic ones by member id), cyclically;
//! - topics in name order, partitions in order; each partition goes to the next member in the
//!   cycle that subscribes to its topic, skipping the others (which keep their turn for the
//!   next partition: with differing subscriptions the result can be unbalanced, as in Java);
//! - every partition of every subscribed topic with partitions is assigned, to a subscriber.
//!
//! The skip is a search in the topic's sorted subscriber positions, not a walk over the
//! members, so a topic few members subscribe to costs no more than one all of them do.

use crate::groups::assignors::contract::{
    member_order, Assignment, AssignmentInput, Assignor, RebalanceProtocol,
};
use crate::groups::assignors::prepared::Prepared;

/// The `roundrobin` assignor.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RoundRobinAssignor;

impl Assignor for RoundRobinAssignor {
    fn name(&self) -> &'static str {
        "roundrobin"
    }

    fn protocol(&self) -> RebalanceProtocol {
        RebalanceProtocol::Eager
    }

    fn assign(&self, input: &AssignmentInput<'_>) -> Assignment {
        let group = Prepared::new(input);
        // The deal order, and each member's position in it.
        let mut order: Vec<usize> = (0..group.members.len()).collect();
        order.sort_by(|&a, &b| member_order(group.members[a], group.members[b]));
        let mut position = vec![0; order.len()];
        for (at, &member) in order.iter().enumerate() {
            position[member] = at;
        }

        let mut per_member = vec![Vec::new(); group.members.len()];
        // The position the next partition's search starts from.
        let mut next = 0;
        for (topic, subscribers) in group.subscribers().into_iter().enumerate() {
            let mut seats: Vec<usize> = subscribers.iter().map(|&m| position[m]).collect();
            seats.sort_unstable();
            if seats.is_empty() {
                continue;
            }
            // The first subscriber at or after `next`, else the cycle wraps to the first.
            let first = seats.partition_point(|&s| s < next) % seats.len();
            let count = group.topics[topic].partitions as usize;
            for p in 0..count {
                let seat = seats[(first + p) % seats.len()];
                per_member[order[seat]].push((topic, p as i32));
            }
            next = seats[(first + count - 1) % seats.len()] + 1;
        }
        group.assignment(per_member)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groups::assignors::test_support::{assign, counts, member, tps, with_instance};

    const RR: RoundRobinAssignor = RoundRobinAssignor;

    // Golden vectors: RoundRobinAssignorTest (apache/kafka, clients/src/test/java/org/apache/
    // kafka/clients/consumer/RoundRobinAssignorTest.java), the tests named in each comment.

    #[test]
    fn one_consumer() {
        // testOneConsumerNoTopic, testOneConsumerNonexistentTopic, testOneConsumerOneTopic,
        // testOnlyAssignsPartitionsFromSubscribedTopics, testOneConsumerMultipleTopics
        assert_eq!(assign(&RR, &[member("consumer", &[])], &counts(&[]))["consumer"], []);
        assert_eq!(assign(&RR, &[member("consumer", &["topic"])], &counts(&[]))["consumer"], []);
        let a = assign(&RR, &[member("consumer", &["topic"])], &counts(&[("topic", 3), ("other", 3)]));
        assert_eq!(a["consumer"], tps(&[("topic", 0), ("topic", 1), ("topic", 2)]));
        let a = assign(
            &RR,
            &[member("consumer", &["topic1", "topic2"])],
            &counts(&[("topic1", 1), ("topic2", 2)]),
        );
        assert_eq!(a["consumer"], tps(&[("topic1", 0), ("topic2", 0), ("topic2", 1)]));
    }

    #[test]
    fn two_consumers_one_topic() {
        // testTwoConsumersOneTopicOnePartition, testTwoConsumersOneTopicTwoPartitions
        let members = [member("consumer1", &["topic"]), member("consumer2", &["topic"])];
        let a = assign(&RR, &members, &counts(&[("topic", 1)]));
        assert_eq!((&a["consumer1"], &a["consumer2"]), (&tps(&[("topic", 0)]), &vec![]));
        let a = assign(&RR, &members, &counts(&[("topic", 2)]));
        assert_eq!((&a["consumer1"], &a["consumer2"]), (&tps(&[("topic", 0)]), &tps(&[("topic", 1)])));
    }

    #[test]
    fn members_not_subscribed_to_a_topic_are_skipped() {
        // testMultipleConsumersMixedTopics
        let members = [
            member("consumer1", &["topic1"]),
            member("consumer2", &["topic1", "topic2"]),
            member("consumer3", &["topic1"]),
        ];
        let a = assign(&RR, &members, &counts(&[("topic1", 3), ("topic2", 2)]));
        assert_eq!(a["consumer1"], tps(&[("topic1", 0)]));
        assert_eq!(a["consumer2"], tps(&[("topic1", 1), ("topic2", 0), ("topic2", 1)]));
        assert_eq!(a["consumer3"], tps(&[("topic1", 2)]));
    }

    #[test]
    fn the_class_javadoc_example_with_unequal_subscriptions() {
        // RoundRobinAssignor's javadoc: C0 {t0}, C1 {t0, t1}, C2 {t0, t1, t2}.
        let members = [member("C0", &["t0"]), member("C1", &["t0", "t1"]), member("C2", &["t0", "t1", "t2"])];
        let a = assign(&RR, &members, &counts(&[("t0", 1), ("t1", 2), ("t2", 3)]));
        assert_eq!(a["C0"], tps(&[("t0", 0)]));
        assert_eq!(a["C1"], tps(&[("t1", 0)]));
        assert_eq!(a["C2"], tps(&[("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)]));
    }

    #[test]
    fn two_topics_are_dealt_as_one_sequence() {
        // testTwoDynamicConsumersTwoTopicsSixPartitions, testTwoStaticConsumersTwoTopicsSixPartitions,
        // testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions
        let topics = ["topic1", "topic2"];
        let six = counts(&[("topic1", 3), ("topic2", 3)]);
        let first = tps(&[("topic1", 0), ("topic1", 2), ("topic2", 1)]);
        let second = tps(&[("topic1", 1), ("topic2", 0), ("topic2", 2)]);
        let a = assign(&RR, &[member("consumer1", &topics), member("consumer2", &topics)], &six);
        assert_eq!((&a["consumer1"], &a["consumer2"]), (&first, &second));
        let members = [
            with_instance(member("consumer-b", &topics), "instance1"),
            with_instance(member("consumer-a", &topics), "instance2"),
        ];
        let a = assign(&RR, &members, &six);
        assert_eq!((&a["consumer-b"], &a["consumer-a"]), (&first, &second));
        let members =
            [with_instance(member("consumer-b", &topics), "instance1"), member("consumer-a", &topics)];
        let a = assign(&RR, &members, &six);
        assert_eq!((&a["consumer-b"], &a["consumer-a"]), (&first, &second));
    }

    #[test]
    fn static_members_keep_their_partitions_when_a_dynamic_member_is_replaced() {
        // testStaticMemberRoundRobinAssignmentPersistent
        let topics = ["topic1", "topic2"];
        let statics = [
            with_instance(member("consumer1", &topics), "instance1"),
            with_instance(member("consumer2", &topics), "instance2"),
            with_instance(member("consumer3", &topics), "instance3"),
        ];
        let six = counts(&[("topic1", 3), ("topic2", 3)]);
        for dynamic in ["consumer4", "consumer5"] {
            let mut members = statics.to_vec();
            members.push(member(dynamic, &topics));
            let a = assign(&RR, &members, &six);
            assert_eq!(a["consumer1"], tps(&[("topic1", 0), ("topic2", 1)]));
            assert_eq!(a["consumer2"], tps(&[("topic1", 1), ("topic2", 2)]));
            assert_eq!(a["consumer3"], tps(&[("topic1", 2)]));
            assert_eq!(a[dynamic], tps(&[("topic2", 0)]));
        }
    }

    #[test]
    fn static_members_keep_their_partitions_under_new_member_ids() {
        // testStaticMemberRoundRobinAssignmentPersistentAfterMemberIdChanges
        let topics = ["topic1", "topic2"];
        let ten = counts(&[("topic1", 5), ("topic2", 5)]);
        let by_instance = |ids: [&str; 3]| {
            let members: Vec<_> = ids
                .iter()
                .zip(["instance1", "instance2", "instance3"])
                .map(|(id, instance)| with_instance(member(id, &topics), instance))
                .collect();
            let a = assign(&RR, &members, &ten);
            ids.map(|id| a[id].clone())
        };
        let before = by_instance(["consumer1", "consumer2", "consumer3"]);
        assert_eq!(before[0], tps(&[("topic1", 0), ("topic1", 3), ("topic2", 1), ("topic2", 4)]));
        assert_eq!(before[1], tps(&[("topic1", 1), ("topic1", 4), ("topic2", 2)]));
        assert_eq!(before[2], tps(&[("topic1", 2), ("topic2", 0), ("topic2", 3)]));
        assert_eq!(by_instance(["consumer1", "consumer5", "consumer4"]), before);
    }

    #[test]
    fn the_turn_wraps_past_the_last_member() {
        // t0 ends on the last member, so t1 starts again from the first subscriber.
        let members = [member("a", &["t0", "t1"]), member("b", &["t0"]), member("c", &["t0", "t1"])];
        let a = assign(&RR, &members, &counts(&[("t0", 3), ("t1", 3)]));
        assert_eq!(a["a"], tps(&[("t0", 0), ("t1", 0), ("t1", 2)]));
        assert_eq!(a["b"], tps(&[("t0", 1)]));
        assert_eq!(a["c"], tps(&[("t0", 2), ("t1", 1)]));
    }

    #[test]
    fn the_name_and_protocol_are_javas() {
        assert_eq!(RR.name(), "roundrobin");
        assert_eq!(RR.protocol(), RebalanceProtocol::Eager);
    }
}
