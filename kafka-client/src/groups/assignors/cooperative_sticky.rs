//! `cooperative-sticky` (Java's `CooperativeStickyAssignor`, librdkafka's
//! `cooperative-sticky`; KIP-429 with KIP-341 and KIP-792's generation rules): a balanced
//! assignment that keeps each member's partitions where it can, for the cooperative protocol,
//! in which members keep their partitions through a rebalance.
//!
//! Contract (each rule in the file that keeps it):
//! - **owned partitions** are each member's claims, settled by generation: the highest
//!   generation's claim stands, two at the same highest generation void each other, claims on
//!   topics the member no longer subscribes to are released, and claims on unknown topics or
//!   partitions are void (`sticky_claims.rs`);
//! - **balanced** and **sticky**: when every member subscribes to the same topics, sizes differ
//!   by at most one and each member keeps as many of its valid owned partitions as its quota
//!   allows (`sticky_quota.rs`); otherwise the assignment is as balanced as the subscriptions
//!   allow, the least sum of squared sizes, reached moving as few owned partitions as it
//!   takes (`sticky_general.rs`);
//! - **cooperative**: a partition the balanced assignment moves from one member to another is
//!   not given to its new member in this round, nor is one any other member still claims
//!   (validly or not): it is left out of every member's assignment, so no two members ever
//!   hold it at once. Its claimant, told an assignment without it, revokes it and rejoins;
//!   the next rebalance finds it unowned and hands it over. ([`Plan::transferring`] lists them;
//!   Java's `partitionsTransferringOwnership`.)
//!
//! Once members stop joining and leaving, one more rebalance completes the assignment (every
//! partition assigned, nothing transferring), and the one after that changes nothing.
//!
//! Not done: the rack-aware variant (KIP-881), which needs the racks of each partition's
//! replicas, not part of the input.

use std::collections::BTreeMap;

use crate::groups::assignors::contract::{Assignment, AssignmentInput, Assignor, RebalanceProtocol};
use crate::groups::assignors::prepared::Prepared;
use crate::groups::assignors::sticky_claims::Claims;
use crate::groups::assignors::{sticky_general, sticky_quota};
use kafka_vocab::TopicPartition;

/// The `cooperative-sticky` assignor.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CooperativeStickyAssignor;

/// One round's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// What each member is told: the balanced assignment without `transferring`.
    pub(crate) assignment: Assignment,
    /// The partitions the balanced assignment gives a member that another member still
    /// claims, with that member's id: left out this round, handed over at the next rebalance.
    pub(crate) transferring: BTreeMap<TopicPartition, String>,
}

/// The round's [`Plan`]: [`Assignor::assign`] of [`CooperativeStickyAssignor`] is its
/// `assignment`.
pub(crate) fn plan(input: &AssignmentInput<'_>) -> Plan {
    let group = Prepared::new(input);
    let claims = Claims::new(&group);
    let same_topics = group.subscriptions.windows(2).all(|w| w[0] == w[1]);
    let balanced = if group.members.is_empty() {
        Vec::new()
    } else if same_topics {
        sticky_quota::assign(&group, &claims)
    } else {
        sticky_general::assign(&group, &claims)
    };

    let mut transferring = BTreeMap::new();
    let mut told = Vec::with_capacity(balanced.len());
    for (member, parts) in balanced.into_iter().enumerate() {
        let (given, held_back): (Vec<_>, Vec<_>) =
            parts.into_iter().partition(|&part| claims.may_take(member, group.index_of(part)));
        for part in held_back {
            transferring.insert(group.topic_partition(part), group.members[member].member_id.clone());
        }
        told.push(given);
    }
    Plan { assignment: group.assignment(told), transferring }
}

impl Assignor for CooperativeStickyAssignor {
    fn name(&self) -> &'static str {
        "cooperative-sticky"
    }

    fn protocol(&self) -> RebalanceProtocol {
        RebalanceProtocol::Cooperative
    }

    fn assign(&self, input: &AssignmentInput<'_>) -> Assignment {
        plan(input).assignment
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;

    use super::*;
    use crate::groups::assignors::contract::MemberSubscription;
    use crate::groups::assignors::test_support::{
        arb_counts, arb_group, assignable, check_valid, counts, first_entries, member, owning, tps, TOPICS,
    };

    const CS: CooperativeStickyAssignor = CooperativeStickyAssignor;

    fn plan(members: &[MemberSubscription], topics: &BTreeMap<String, i32>) -> Plan {
        super::plan(&AssignmentInput { members, partitions_per_topic: topics })
    }

    /// The members of the next rebalance: each owns what it was told, at `generation`.
    fn next_round(
        members: &[MemberSubscription],
        told: &Assignment,
        generation: i32,
    ) -> Vec<MemberSubscription> {
        members
            .iter()
            .map(|m| MemberSubscription {
                owned_partitions: told.get(&m.member_id).cloned().unwrap_or_default(),
                generation: Some(generation),
                ..m.clone()
            })
            .collect()
    }

    /// The balanced assignment behind a plan: what it told, plus what it hands over.
    fn target(plan: &Plan) -> Assignment {
        let mut out = plan.assignment.clone();
        for (tp, id) in &plan.transferring {
            let parts = out.entry(id.clone()).or_default();
            parts.push(tp.clone());
            parts.sort();
        }
        out
    }

    fn transferring(pairs: &[(&str, i32, &str)]) -> BTreeMap<TopicPartition, String> {
        pairs.iter().map(|(t, p, id)| (TopicPartition::new(*t, *p), (*id).to_owned())).collect()
    }

    // Golden vectors: AbstractStickyAssignorTest (apache/kafka, clients/src/test/java/org/
    // apache/kafka/clients/consumer/internals/AbstractStickyAssignorTest.java) and
    // CooperativeStickyAssignorTest (clients/src/test/java/org/apache/kafka/clients/consumer/
    // CooperativeStickyAssignorTest.java), the tests named in each comment. Where Java's
    // cooperative `verifyValidityAndBalance` runs follow-up rebalances before its asserts,
    // so does the test here.

    #[test]
    fn one_consumer_gets_its_topics_and_drops_claims_on_others() {
        // testOneConsumerOneTopic, testOnlyAssignsPartitionsFromSubscribedTopics,
        // testOneConsumerMultipleTopics, testAssignmentUpdatedForDeletedTopic,
        // testNoExceptionThrownWhenOnlySubscribedTopicDeleted
        let p = plan(&[member("consumer", &["topic"])], &counts(&[("topic", 3)]));
        assert_eq!(p.assignment["consumer"], tps(&[("topic", 0), ("topic", 1), ("topic", 2)]));
        let claims = [("topic", 0), ("topic", 1), ("other", 0), ("other", 1)];
        let members = [owning(member("consumer", &["topic"]), &claims, Some(1))];
        let p = plan(&members, &counts(&[("topic", 2)]));
        assert_eq!(p.assignment["consumer"], tps(&[("topic", 0), ("topic", 1)]));
        assert!(p.transferring.is_empty());
        let p = plan(&[member("consumer", &["topic1", "topic2"])], &counts(&[("topic1", 1), ("topic2", 2)]));
        assert_eq!(p.assignment["consumer"], tps(&[("topic1", 0), ("topic2", 0), ("topic2", 1)]));
        let p = plan(
            &[member("consumer", &["topic1", "topic2", "topic3"])],
            &counts(&[("topic1", 1), ("topic3", 100)]),
        );
        assert_eq!(p.assignment["consumer"].len(), 101);
        let members =
            [owning(member("consumer", &["topic"]), &[("topic", 0), ("topic", 1), ("topic", 2)], Some(1))];
        assert_eq!(plan(&members, &counts(&[])).assignment["consumer"], []);
    }

    #[test]
    fn two_consumers_two_topics_are_dealt_round_robin() {
        // testTwoConsumersTwoTopicsSixPartitions, testTwoConsumersOneTopicTwoPartitions
        let both = ["topic1", "topic2"];
        let members = [member("consumer1", &both), member("consumer2", &both)];
        let p = plan(&members, &counts(&[("topic1", 3), ("topic2", 3)]));
        assert_eq!(p.assignment["consumer1"], tps(&[("topic1", 0), ("topic1", 2), ("topic2", 1)]));
        assert_eq!(p.assignment["consumer2"], tps(&[("topic1", 1), ("topic2", 0), ("topic2", 2)]));
        let members = [member("consumer1", &["topic"]), member("consumer2", &["topic"])];
        let p = plan(&members, &counts(&[("topic", 2)]));
        assert_eq!(
            (&p.assignment["consumer1"], &p.assignment["consumer2"]),
            (&tps(&[("topic", 0)]), &tps(&[("topic", 1)]))
        );
    }

    #[test]
    fn a_partition_two_members_claim_in_one_generation_goes_to_nobody_until_both_let_go() {
        // CooperativeStickyAssignorTest.testAllConsumersHaveOwnedPartitionInvalidatedWhen
        // ClaimedByMultipleConsumersInSameGenerationWithEqualPartitionsPerConsumer and
        // …WithUnequalPartitionsPerConsumer; AbstractStickyAssignorTest.
        // testPartitionsTransferringOwnershipIncludeThePartitionClaimedByMultipleConsumersInSameGeneration
        let members = [
            owning(member("consumer1", &["topic"]), &[("topic", 0), ("topic", 1)], Some(1)),
            owning(member("consumer2", &["topic"]), &[("topic", 0), ("topic", 2)], Some(1)),
            owning(member("consumer3", &["topic"]), &[], Some(1)),
        ];
        let p = plan(&members, &counts(&[("topic", 3)]));
        assert_eq!(p.assignment["consumer1"], tps(&[("topic", 1)]));
        assert_eq!(p.assignment["consumer2"], tps(&[("topic", 2)]));
        assert_eq!(p.assignment["consumer3"], []);
        assert_eq!(p.transferring, transferring(&[("topic", 0, "consumer3")]));
        let then = plan(&next_round(&members, &p.assignment, 2), &counts(&[("topic", 3)]));
        assert_eq!(then.assignment["consumer3"], tps(&[("topic", 0)]));
        assert!(then.transferring.is_empty());

        let p = plan(&members, &counts(&[("topic", 4)]));
        assert_eq!(p.assignment["consumer1"], tps(&[("topic", 1), ("topic", 3)]));
        assert_eq!(p.assignment["consumer2"], tps(&[("topic", 2)]));
        assert_eq!(p.assignment["consumer3"], []);
    }

    #[test]
    fn a_new_member_gets_a_moved_partition_one_rebalance_later() {
        // testAddRemoveConsumerOneTopic
        let topic = counts(&[("topic", 3)]);
        let first = plan(&[member("consumer1", &["topic"])], &topic);
        assert_eq!(first.assignment["consumer1"], tps(&[("topic", 0), ("topic", 1), ("topic", 2)]));
        let members = next_round(&[member("consumer1", &["topic"])], &first.assignment, 1);
        let members = [members[0].clone(), owning(member("consumer2", &["topic"]), &[], Some(1))];
        let p = plan(&members, &topic);
        assert_eq!(p.transferring, transferring(&[("topic", 2, "consumer2")]));
        assert_eq!(p.assignment["consumer1"], tps(&[("topic", 0), ("topic", 1)]));
        assert_eq!(p.assignment["consumer2"], []);
        let p = plan(&next_round(&members, &p.assignment, 2), &topic);
        assert_eq!(p.assignment["consumer1"], tps(&[("topic", 0), ("topic", 1)]));
        assert_eq!(p.assignment["consumer2"], tps(&[("topic", 2)]));
        // consumer1 leaves: consumer2 keeps topic-2 and takes the rest at once.
        let members = next_round(&[member("consumer2", &["topic"])], &p.assignment, 3);
        let p = plan(&members, &topic);
        assert_eq!(p.assignment["consumer2"], tps(&[("topic", 0), ("topic", 1), ("topic", 2)]));
        assert!(p.transferring.is_empty());
    }

    #[test]
    fn two_members_join_and_two_leave() {
        // testAddRemoveTwoConsumersTwoTopics
        let both = ["topic1", "topic2"];
        let topics = counts(&[("topic1", 3), ("topic2", 4)]);
        let two = [member("consumer1", &both), member("consumer2", &both)];
        let p = plan(&two, &topics);
        assert_eq!(
            p.assignment["consumer1"],
            tps(&[("topic1", 0), ("topic1", 2), ("topic2", 1), ("topic2", 3)])
        );
        assert_eq!(p.assignment["consumer2"], tps(&[("topic1", 1), ("topic2", 0), ("topic2", 2)]));

        let mut four = next_round(&two, &p.assignment, 1);
        four.push(owning(member("consumer3", &both), &[], Some(1)));
        four.push(owning(member("consumer4", &both), &[], Some(1)));
        let p = plan(&four, &topics);
        assert_eq!(
            p.transferring,
            transferring(&[
                ("topic1", 2, "consumer3"),
                ("topic2", 3, "consumer3"),
                ("topic2", 2, "consumer4")
            ])
        );
        let p = plan(&next_round(&four, &p.assignment, 2), &topics);
        assert!(p.transferring.is_empty());
        assert_eq!(p.assignment["consumer1"], tps(&[("topic1", 0), ("topic2", 1)]));
        assert_eq!(p.assignment["consumer2"], tps(&[("topic1", 1), ("topic2", 0)]));
        assert_eq!(p.assignment["consumer3"], tps(&[("topic1", 2), ("topic2", 3)]));
        assert_eq!(p.assignment["consumer4"], tps(&[("topic2", 2)]));

        let left = next_round(&four[2..], &p.assignment, 3);
        let p = plan(&left, &topics);
        assert!(p.transferring.is_empty());
        assert_eq!(
            p.assignment["consumer3"],
            tps(&[("topic1", 0), ("topic1", 2), ("topic2", 1), ("topic2", 3)])
        );
        assert_eq!(p.assignment["consumer4"], tps(&[("topic1", 1), ("topic2", 0), ("topic2", 2)]));
    }

    #[test]
    fn each_of_two_topics_stays_spread_as_members_join() {
        // testTopicBalanceAfterReassignment: 12 + 12 partitions, 1 then 2 then 4 members; each
        // member ends with as many of topic1 as of topic2.
        let both = ["topic1", "topic2"];
        let topics = counts(&[("topic1", 12), ("topic2", 12)]);
        let mut members = vec![member("consumer1", &both)];
        let mut told = plan(&members, &topics).assignment;
        for (generation, joining) in [(1, vec!["consumer2"]), (3, vec!["consumer3", "consumer4"])] {
            members = next_round(&members, &told, generation);
            members.extend(joining.iter().map(|id| owning(member(id, &both), &[], Some(generation))));
            told = plan(&members, &topics).assignment;
            members = next_round(&members, &told, generation + 1);
            let p = plan(&members, &topics);
            assert!(p.transferring.is_empty());
            let per_topic = 12 / members.len();
            for parts in p.assignment.values() {
                assert_eq!(parts.iter().filter(|tp| &*tp.topic == "topic1").count(), per_topic);
                assert_eq!(parts.iter().filter(|tp| &*tp.topic == "topic2").count(), per_topic);
            }
            told = p.assignment;
        }
    }

    #[test]
    fn owned_partitions_go_to_the_highest_generation() {
        // testOwnedPartitionsAreInvalidatedForConsumerWithStaleGeneration, …WithNoGeneration,
        // …WithMultipleGeneration, testEnsurePartitionsAssignedToHighestGeneration
        let two = ["topic", "topic2"];
        let topics = counts(&[("topic", 3), ("topic2", 3)]);
        let claimed = [("topic", 0), ("topic", 2), ("topic2", 1)];
        for stale in [Some(9), None] {
            let members = [
                owning(member("consumer1", &two), &claimed, Some(10)),
                owning(member("consumer2", &two), &claimed, stale),
            ];
            let p = plan(&members, &topics);
            assert_eq!(p.assignment["consumer1"], tps(&[("topic", 0), ("topic", 2), ("topic2", 1)]));
            assert_eq!(p.assignment["consumer2"], tps(&[("topic", 1), ("topic2", 0), ("topic2", 2)]));
            assert!(p.transferring.is_empty());
        }
        let members = [
            owning(member("consumer1", &two), &[("topic", 0), ("topic2", 1), ("topic", 1)], Some(10)),
            owning(member("consumer2", &two), &[("topic", 0), ("topic2", 1), ("topic2", 2)], Some(8)),
        ];
        let p = plan(&members, &topics);
        assert_eq!(p.assignment["consumer1"], tps(&[("topic", 0), ("topic", 1), ("topic2", 1)]));
        assert_eq!(p.assignment["consumer2"], tps(&[("topic", 2), ("topic2", 0), ("topic2", 2)]));
        assert!(p.transferring.is_empty());

        let three = ["topic", "topic2", "topic3"];
        let members = [
            owning(member("consumer1", &three), &[("topic", 0), ("topic2", 0), ("topic3", 0)], Some(10)),
            owning(member("consumer2", &three), &[("topic", 1), ("topic2", 1), ("topic3", 1)], Some(9)),
            owning(member("consumer3", &three), &[("topic2", 1), ("topic3", 0), ("topic3", 2)], Some(8)),
        ];
        let p = plan(&members, &counts(&[("topic", 3), ("topic2", 3), ("topic3", 3)]));
        assert_eq!(p.assignment["consumer1"], tps(&[("topic", 0), ("topic2", 0), ("topic3", 0)]));
        assert_eq!(p.assignment["consumer2"], tps(&[("topic", 1), ("topic2", 1), ("topic3", 1)]));
        assert_eq!(p.assignment["consumer3"], tps(&[("topic", 2), ("topic2", 2), ("topic3", 2)]));
        assert!(p.transferring.is_empty());
    }

    #[test]
    fn a_member_with_nothing_takes_only_what_nobody_owns() {
        // testNoReassignmentOnCurrentMembers, testAllConsumersReachExpectedQuotaAndAreConsideredFilled,
        // CooperativeStickyAssignorTest.testAssignorWithOldVersionSubscriptions
        let four = ["topic", "topic2", "topic3", "topic1"];
        let members = [
            owning(member("consumer1", &four), &[], None),
            owning(member("consumer2", &four), &[("topic", 0), ("topic2", 0), ("topic1", 0)], Some(9)),
            owning(member("consumer3", &four), &[("topic3", 2), ("topic2", 2), ("topic1", 1)], Some(8)),
            owning(member("consumer4", &four), &[("topic3", 1), ("topic", 1), ("topic", 2)], Some(7)),
        ];
        let p = plan(&members, &counts(&[("topic", 3), ("topic1", 3), ("topic2", 3), ("topic3", 3)]));
        assert_eq!(p.assignment["consumer1"], tps(&[("topic1", 2), ("topic2", 1), ("topic3", 0)]));
        assert!(p.transferring.is_empty());

        let members = [
            owning(member("consumer1", &["topic"]), &[("topic", 0), ("topic", 1)], Some(1)),
            owning(member("consumer2", &["topic"]), &[("topic", 2)], Some(1)),
            owning(member("consumer3", &["topic"]), &[], Some(1)),
        ];
        let p = plan(&members, &counts(&[("topic", 4)]));
        assert_eq!(p.assignment["consumer1"], tps(&[("topic", 0), ("topic", 1)]));
        assert_eq!(p.assignment["consumer2"], tps(&[("topic", 2)]));
        assert_eq!(p.assignment["consumer3"], tps(&[("topic", 3)]));
        assert!(p.transferring.is_empty());

        // Subscription v1: the generation comes from the user data (1 here).
        let members = [
            owning(member("consumer1", &["topic1"]), &[("topic1", 0)], Some(1)),
            owning(member("consumer2", &["topic1"]), &[("topic1", 1)], Some(1)),
            owning(member("consumer3", &["topic1"]), &[], Some(1)),
        ];
        let p = plan(&members, &counts(&[("topic1", 3)]));
        assert_eq!(p.assignment["consumer3"], tps(&[("topic1", 2)]));
    }

    #[test]
    fn the_members_left_keep_their_partition_when_one_leaves() {
        // testStickiness: 3 partitions, 4 members; the first leaves.
        let members: Vec<_> = (1..=4).map(|i| member(&format!("consumer{i}"), &["topic1"])).collect();
        let topics = counts(&[("topic1", 3)]);
        let first = plan(&members, &topics).assignment;
        assert!(first.values().all(|parts| parts.len() <= 1));
        let rest = next_round(&members[1..], &first, 1);
        let p = plan(&rest, &topics);
        assert!(p.transferring.is_empty());
        for m in &rest {
            assert_eq!(p.assignment[&m.member_id].len(), 1);
            assert!(first[&m.member_id].iter().all(|tp| p.assignment[&m.member_id].contains(tp)));
        }
    }

    #[test]
    fn different_subscriptions_are_balanced_as_far_as_they_allow() {
        // testMultipleConsumersMixedTopicSubscriptions, testPoorRoundRobinAssignmentScenario
        let members = [
            member("consumer1", &["topic1"]),
            member("consumer2", &["topic1", "topic2"]),
            member("consumer3", &["topic1"]),
        ];
        let p = plan(&members, &counts(&[("topic1", 3), ("topic2", 2)]));
        assert_eq!(p.assignment["consumer1"], tps(&[("topic1", 0), ("topic1", 2)]));
        assert_eq!(p.assignment["consumer2"], tps(&[("topic2", 0), ("topic2", 1)]));
        assert_eq!(p.assignment["consumer3"], tps(&[("topic1", 1)]));

        let all = ["topic1", "topic2", "topic3", "topic4", "topic5"];
        let odd = ["topic1", "topic3", "topic5"];
        let members = [
            member("consumer1", &all),
            member("consumer2", &odd),
            member("consumer3", &odd),
            member("consumer4", &all),
        ];
        let topics = counts(&[("topic1", 2), ("topic2", 1), ("topic3", 2), ("topic4", 1), ("topic5", 2)]);
        let p = plan(&members, &topics);
        assert!(p.assignment.values().all(|parts| parts.len() == 2), "{:?}", p.assignment);
    }

    #[test]
    fn the_same_partition_claimed_at_three_generations() {
        // testSubscriptionNotEqualAndAssignSamePartitionWith3Generation
        let topics = counts(&[("topic", 6), ("topic1", 1)]);
        for gens in [[1, 2, 3], [1, 3, 2], [2, 1, 3], [2, 3, 1], [3, 1, 2], [3, 2, 1]] {
            let members = [
                owning(member("consumer1", &["topic"]), &[("topic", 0), ("topic", 2)], Some(gens[0])),
                owning(
                    member("consumer2", &["topic"]),
                    &[("topic", 1), ("topic", 2), ("topic", 3)],
                    Some(gens[1]),
                ),
                owning(
                    member("consumer3", &["topic"]),
                    &[("topic", 2), ("topic", 4), ("topic", 5)],
                    Some(gens[2]),
                ),
                owning(member("consumer4", &["topic1"]), &[("topic1", 0)], Some(2)),
            ];
            let p = plan(&members, &topics);
            let given: Vec<&TopicPartition> = p.assignment.values().flatten().collect();
            assert_eq!(given.len(), given.iter().collect::<BTreeSet<_>>().len());
            assert!(
                p.assignment.values().all(|parts| (1..=2).contains(&parts.len())),
                "{gens:?}: {:?}",
                p.assignment
            );
        }
    }

    #[test]
    fn a_chain_of_moves_is_handed_over_like_any_move() {
        // testMoveExistingAssignments (the chain Java does not make: see sticky_general.rs).
        let topics: BTreeMap<String, i32> = (1..=6).map(|i| (format!("topic{i}"), 1)).collect();
        let members = [
            owning(member("consumer1", &["topic1", "topic2"]), &[("topic1", 0)], Some(1)),
            owning(
                member("consumer2", &["topic1", "topic2", "topic3", "topic4"]),
                &[("topic2", 0), ("topic3", 0)],
                Some(1),
            ),
            owning(
                member("consumer3", &["topic2", "topic3", "topic4", "topic5", "topic6"]),
                &[("topic4", 0), ("topic5", 0), ("topic6", 0)],
                Some(1),
            ),
        ];
        let p = plan(&members, &topics);
        assert_eq!(p.transferring, transferring(&[("topic2", 0, "consumer1"), ("topic4", 0, "consumer2")]));
        assert_eq!(p.assignment["consumer1"], tps(&[("topic1", 0)]));
        assert_eq!(p.assignment["consumer2"], tps(&[("topic3", 0)]));
        let p = plan(&next_round(&members, &p.assignment, 2), &topics);
        assert!(p.transferring.is_empty());
        assert!(p.assignment.values().all(|parts| parts.len() == 2));
    }

    #[test]
    fn a_large_group_with_two_subscriptions_and_a_member_joining() {
        // testAssignmentAndGroupWithNonEqualSubscriptionNotTimeout's group: 100 topics of 200
        // partitions, 500 members, every fourth on the first 50 topics, the rest on the other
        // 50; assigned, handed back, then a member joins. (Debug build: well under a second.)
        let names: Vec<String> = (0..100).map(|t| format!("topic{t:03}")).collect();
        let topics: BTreeMap<String, i32> = names.iter().map(|t| (t.clone(), 200)).collect();
        let half = |i: usize| -> Vec<&str> {
            let range = if i.is_multiple_of(4) { 0..50 } else { 50..100 };
            names[range].iter().map(String::as_str).collect()
        };
        let members: Vec<_> = (0..500).map(|i| member(&format!("consumer{i:03}"), &half(i))).collect();
        let started = std::time::Instant::now();
        let first = plan(&members, &topics);
        assert!(first.transferring.is_empty());
        let mut members = next_round(&members, &first.assignment, 1);
        members.push(member("consumer500", &half(0)));
        let p = plan(&members, &topics);
        assert!(started.elapsed().as_secs() < 10, "took {:?}", started.elapsed());
        let balanced = target(&p);
        check_valid(&members, &topics, &balanced).expect("valid");
        check_balanced(&members, &topics, &balanced).expect("balanced");
        // The first-half members share 10,000 partitions: 125 then 126 of them, 79 or 80 each.
        let sizes: BTreeSet<usize> =
            (0..=500).step_by(4).map(|i| balanced[&format!("consumer{i:03}")].len()).collect();
        assert_eq!(sizes, [79, 80].into());
        let p = plan(&next_round(&members, &p.assignment, 2), &topics);
        assert!(p.transferring.is_empty());
    }

    #[test]
    fn the_name_and_protocol_are_javas_and_assign_is_the_plans_assignment() {
        assert_eq!(CS.name(), "cooperative-sticky");
        assert_eq!(CS.protocol(), RebalanceProtocol::Cooperative);
        let members = [
            owning(member("a", &["t"]), &[("t", 0), ("t", 1)], Some(1)),
            owning(member("b", &["t"]), &[], Some(1)),
        ];
        let topics = counts(&[("t", 2)]);
        let p = plan(&members, &topics);
        assert_eq!(p.transferring, transferring(&[("t", 1, "b")]));
        assert_eq!(
            CS.assign(&AssignmentInput { members: &members, partitions_per_topic: &topics }),
            p.assignment
        );
    }

    /// Each member's topics that have partitions.
    fn effective_topics(
        members: &[MemberSubscription],
        topics: &BTreeMap<String, i32>,
    ) -> BTreeMap<String, BTreeSet<String>> {
        first_entries(members)
            .into_iter()
            .map(|(id, m)| {
                let known =
                    m.topics.iter().filter(|t| topics.get(*t).is_some_and(|&n| n > 0)).cloned().collect();
                (id.to_owned(), known)
            })
            .collect()
    }

    /// Balanced: sizes within one when all subscriptions are the same; otherwise no partition
    /// can move to a subscriber of its topic two or more smaller (Java's `isBalanced`).
    fn check_balanced(
        members: &[MemberSubscription],
        topics: &BTreeMap<String, i32>,
        target: &Assignment,
    ) -> Result<(), TestCaseError> {
        let subs = effective_topics(members, topics);
        let sizes: Vec<usize> = target.values().map(Vec::len).collect();
        if subs.values().collect::<BTreeSet<_>>().len() <= 1 {
            let (lo, hi) =
                (sizes.iter().min().copied().unwrap_or(0), sizes.iter().max().copied().unwrap_or(0));
            prop_assert!(hi <= lo + 1, "same subscriptions, sizes {sizes:?}");
        }
        for (a, parts) in target {
            for (b, others) in target {
                if parts.len() > others.len() + 1 {
                    prop_assert!(
                        parts.iter().all(|tp| !subs[b].contains(&*tp.topic)),
                        "{a} ({}) holds a partition {b} ({}) could take: {target:?}",
                        parts.len(),
                        others.len()
                    );
                }
            }
        }
        Ok(())
    }

    /// The least sum of squared sizes over every assignment of the assignable partitions to
    /// subscribers, by trying them all; `None` when there are too many to try.
    fn least_sum_of_squares(members: &[MemberSubscription], topics: &BTreeMap<String, i32>) -> Option<usize> {
        let subs = effective_topics(members, topics);
        let ids: Vec<&String> = subs.keys().collect();
        let choices: Vec<Vec<usize>> = assignable(members, topics)
            .iter()
            .map(|tp| (0..ids.len()).filter(|&i| subs[ids[i]].contains(&*tp.topic)).collect())
            .collect();
        let tries = choices.iter().try_fold(1usize, |n, c| n.checked_mul(c.len().max(1)))?;
        if tries > 20_000 {
            return None;
        }
        let mut best = usize::MAX;
        for mut k in 0..tries {
            let mut sizes = vec![0usize; ids.len()];
            for c in &choices {
                sizes[c[k % c.len()]] += 1;
                k /= c.len();
            }
            best = best.min(sizes.iter().map(|s| s * s).sum());
        }
        Some(best)
    }

    /// The valid owner of each claimed partition, worked out afresh: the only claimant at the
    /// highest generation, if it subscribes to the topic.
    fn valid_owners(
        members: &[MemberSubscription],
        topics: &BTreeMap<String, i32>,
    ) -> BTreeMap<TopicPartition, String> {
        let in_group = assignable(members, topics);
        let mut claims: BTreeMap<TopicPartition, Vec<(i32, &str)>> = BTreeMap::new();
        for (id, m) in first_entries(members) {
            for tp in m.owned_partitions.iter().filter(|tp| in_group.contains(*tp)).collect::<BTreeSet<_>>() {
                claims.entry(tp.clone()).or_default().push((m.generation.unwrap_or(-1), id));
            }
        }
        claims
            .into_iter()
            .filter_map(|(tp, cs)| {
                let top = cs.iter().map(|c| c.0).max()?;
                let at_top: Vec<&str> = cs.iter().filter(|c| c.0 == top).map(|c| c.1).collect();
                let owner = first_entries(members)[at_top[0]];
                (at_top.len() == 1 && owner.topics.iter().any(|t| **t == *tp.topic))
                    .then(|| (tp, at_top[0].to_owned()))
            })
            .collect()
    }

    /// Nobody is given a partition another member claims, unless it is its valid owner.
    fn check_cooperative(
        members: &[MemberSubscription],
        topics: &BTreeMap<String, i32>,
        told: &Assignment,
    ) -> Result<(), TestCaseError> {
        let owners = valid_owners(members, topics);
        for (id, parts) in told {
            for tp in parts {
                if owners.get(tp) == Some(id) {
                    continue;
                }
                for (other, m) in first_entries(members) {
                    prop_assert!(
                        other == id || !m.owned_partitions.contains(tp),
                        "{id} was given {tp:?}, which {other} claims"
                    );
                }
            }
        }
        Ok(())
    }

    /// The balanced assignment is valid, balanced, and as balanced as can be (where there are
    /// few enough assignments to try them all); what members are told keeps the cooperative
    /// rule.
    fn check_plan(
        members: &[MemberSubscription],
        topics: &BTreeMap<String, i32>,
    ) -> Result<(), TestCaseError> {
        let p = plan(members, topics);
        let balanced = target(&p);
        check_valid(members, topics, &balanced)?;
        check_balanced(members, topics, &balanced)?;
        check_cooperative(members, topics, &p.assignment)?;
        if let Some(best) = least_sum_of_squares(members, topics) {
            let ours: usize = balanced.values().map(|parts| parts.len() * parts.len()).sum();
            prop_assert_eq!(ours, best, "{:?}", balanced);
        }
        Ok(())
    }

    /// With the same subscriptions: a member keeps `min(k, its size)` of its `k` validly
    /// owned partitions, and the places at the larger size go to members that owned that many
    /// while any is left.
    fn check_quota_kept(
        members: &[MemberSubscription],
        topics: &BTreeMap<String, i32>,
    ) -> Result<(), TestCaseError> {
        let balanced = target(&plan(members, topics));
        let owners = valid_owners(members, topics);
        let total = assignable(members, topics).len();
        let (min, extra) = (total / balanced.len().max(1), total % balanced.len().max(1));
        let (mut owned_max, mut kept_max) = (0, 0);
        for (id, parts) in &balanced {
            let owned: Vec<&TopicPartition> =
                owners.iter().filter(|(_, o)| *o == id).map(|(tp, _)| tp).collect();
            let kept = owned.iter().filter(|tp| parts.contains(tp)).count();
            prop_assert_eq!(
                kept,
                owned.len().min(parts.len()),
                "{} kept {} of {:?}: {:?}",
                id,
                kept,
                owned,
                parts
            );
            if owned.len() > min {
                owned_max += 1;
                kept_max += usize::from(parts.len() > min);
            }
        }
        prop_assert_eq!(kept_max, extra.min(owned_max));
        Ok(())
    }

    /// Handed back as owned, the balanced assignment comes back unchanged, nothing moving.
    fn check_kept_whole(
        members: &[MemberSubscription],
        topics: &BTreeMap<String, i32>,
    ) -> Result<(), TestCaseError> {
        let first = target(&plan(members, topics));
        let again = plan(&next_round(members, &first, 100), topics);
        prop_assert!(again.transferring.is_empty());
        prop_assert_eq!(again.assignment, first);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn balanced_cooperative_and_as_balanced_as_can_be((members, topics) in arb_group(5)) {
            check_plan(&members, &topics)?;
        }

        #[test]
        fn a_member_keeps_what_its_quota_allows((members, topics) in arb_same_subscriptions(6)) {
            check_quota_kept(&members, &topics)?;
        }

        #[test]
        fn an_assignment_handed_back_is_kept_whole((members, topics) in arb_group(6)) {
            check_kept_whole(&members, &topics)?;
        }
    }

    /// Groups whose members all subscribe to the same topics.
    fn arb_same_subscriptions(
        max_members: usize,
    ) -> impl Strategy<Value = (Vec<MemberSubscription>, BTreeMap<String, i32>)> {
        arb_group(max_members).prop_map(|(mut members, topics)| {
            let subscribed = members.first().map(|m| m.topics.clone()).unwrap_or_default();
            for m in &mut members {
                m.topics.clone_from(&subscribed);
            }
            (members, topics)
        })
    }

    /// A change to the group: member `.1` joins (or, if it is there, resubscribes) with the
    /// topics of mask `.2`, or leaves.
    #[derive(Debug, Clone)]
    enum Event {
        Join(usize, u8),
        Leave(usize),
    }

    fn arb_event() -> impl Strategy<Value = Event> {
        let join = (0usize..6, 0u8..32).prop_map(|(m, t)| Event::Join(m, t));
        prop_oneof![3 => join, 1 => (0usize..6).prop_map(Event::Leave)]
    }

    /// Rebalance after rebalance, `events` one per round, then three quiet rounds; each member
    /// holds what it was last told. A partition is given only once its holder has let it go;
    /// the first quiet round completes the assignment, balanced, and the next ones change
    /// nothing.
    fn check_rounds(topics: &BTreeMap<String, i32>, events: &[Event]) -> Result<(), TestCaseError> {
        // Who is in the group (id → subscribed topics), and what each holds.
        let mut group: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut holds: BTreeMap<String, Vec<TopicPartition>> = BTreeMap::new();
        let mut last: Option<Plan> = None;
        let rounds = events.iter().map(Some).chain(std::iter::repeat_n(None, 3));
        for (round, event) in rounds.enumerate() {
            match event {
                Some(Event::Join(m, mask)) => {
                    let subscribed = TOPICS.iter().enumerate().filter(|(b, _)| mask & (1 << b) != 0);
                    group.insert(format!("c{m}"), subscribed.map(|(_, t)| (*t).to_owned()).collect());
                }
                Some(Event::Leave(m)) => {
                    group.remove(&format!("c{m}"));
                    holds.remove(&format!("c{m}"));
                }
                None => {}
            }
            let members: Vec<MemberSubscription> = group
                .iter()
                .map(|(id, subscribed)| MemberSubscription {
                    member_id: id.clone(),
                    topics: subscribed.clone(),
                    owned_partitions: holds.get(id).cloned().unwrap_or_default(),
                    generation: holds.contains_key(id).then_some(round as i32),
                    ..MemberSubscription::default()
                })
                .collect();
            let p = plan(&members, topics);
            check_valid(&members, topics, &p.assignment)?;
            for (id, parts) in &p.assignment {
                for tp in parts {
                    for (other, held) in &holds {
                        prop_assert!(
                            other == id || !held.contains(tp),
                            "round {round}: {id} got {tp:?}, {other} holds it"
                        );
                    }
                }
            }
            // Each member revokes what it was not given and takes what it was.
            holds = p.assignment.clone();
            if round > events.len() {
                prop_assert_eq!(Some(&p), last.as_ref(), "round {}", round);
            }
            if round >= events.len() {
                prop_assert!(
                    p.transferring.is_empty(),
                    "round {round}: still handing over {:?}",
                    p.transferring
                );
                let given: BTreeSet<&TopicPartition> = p.assignment.values().flatten().collect();
                prop_assert_eq!(given.len(), assignable(&members, topics).len());
                check_balanced(&members, topics, &p.assignment)?;
            }
            last = Some(p);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn rebalances_hand_partitions_over_without_overlap_and_settle(
            topics in arb_counts(),
            events in proptest::collection::vec(arb_event(), 1..8),
        ) {
            check_rounds(&topics, &events)?;
        }
    }
}
