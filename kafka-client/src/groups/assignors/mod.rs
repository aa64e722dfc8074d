//! The classic consumer group's client-side assignors, sans-IO. In the classic protocol
//! (JoinGroup/SyncGroup) the coordinator elects one member leader and hands it every member's
//! subscription; the leader runs the assignor the group agreed on and sends each member its
//! partitions in SyncGroup. Here are the assignors as pure functions of what JoinGroup and
//! Metadata answered; decoding and encoding the ConsumerProtocol subscription and assignment
//! (cooperative-sticky's user data is its generation, an int32) is the member's.
//!
//! The contract every assignor keeps ([`Assignor::assign`]):
//! - pure and deterministic: the same members and counts give the same assignment, whatever
//!   the order of the members;
//! - every member is a key of the assignment, its partitions sorted; a member id listed twice
//!   counts once, by its first entry;
//! - a partition goes to at most one member, and only to one that subscribes to its topic; a
//!   topic Metadata does not know (or with a count below 1) gets no partitions, and owned
//!   partitions of such topics, or beyond a topic's count, are ignored;
//! - at most [`MAX_ASSIGNED_PARTITIONS`] partitions are assigned, so a hostile count cannot
//!   make an absurd assignment.
//!
//! Files: `contract.rs` (the types and the trait; also Java's string and member orders),
//! `prepared.rs` (the input settled once for all assignors), `range.rs`, `round_robin.rs`,
//! `cooperative_sticky.rs` with `sticky_claims.rs` (owned partitions and generations),
//! `sticky_quota.rs` (same subscriptions) and `sticky_general.rs` (different ones). This file
//! finds an assignor by name; the types live in `contract.rs` rather than here because the
//! assignors import them and this file imports the assignors.
//!
//! Not here: the rack-aware variants (KIP-881: they need the racks of every partition's
//! replicas), and Java's eager `sticky` assignor (`StickyAssignor`, superseded by
//! cooperative-sticky).
//!
//! Imports nothing from the rest of the client but `kafka_vocab::TopicPartition`.

pub(crate) mod contract;
pub(crate) mod cooperative_sticky;
pub(crate) mod prepared;
pub(crate) mod range;
pub(crate) mod round_robin;
pub(crate) mod sticky_claims;
pub(crate) mod sticky_general;
pub(crate) mod sticky_quota;
#[cfg(test)]
pub(crate) mod test_support;

#[allow(unused_imports)] // the contract's whole vocabulary, at the module's path
pub(crate) use self::contract::{
    Assignment, AssignmentInput, Assignor, MemberSubscription, RebalanceProtocol, MAX_ASSIGNED_PARTITIONS,
};
use self::cooperative_sticky::CooperativeStickyAssignor;
use self::range::RangeAssignor;
use self::round_robin::RoundRobinAssignor;

/// The assignor a `partition.assignment.strategy` entry names: the protocol names librdkafka
/// takes (`range`, `roundrobin`, `cooperative-sticky`) or the Java class names
/// (`org.apache.kafka.clients.consumer.RangeAssignor`, `…RoundRobinAssignor`,
/// `…CooperativeStickyAssignor`), surrounding blanks ignored. `None` for any other, including
/// `sticky` and `org.apache.kafka.clients.consumer.StickyAssignor`, which this client does not
/// have. Names are case-sensitive, as in both.
pub(crate) fn assignor_by_name(name: &str) -> Option<&'static dyn Assignor> {
    match name.trim() {
        "range" | "org.apache.kafka.clients.consumer.RangeAssignor" => Some(&RangeAssignor),
        "roundrobin" | "org.apache.kafka.clients.consumer.RoundRobinAssignor" => Some(&RoundRobinAssignor),
        "cooperative-sticky" | "org.apache.kafka.clients.consumer.CooperativeStickyAssignor" => {
            Some(&CooperativeStickyAssignor)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::time::Instant;

    use proptest::prelude::*;

    use super::test_support::{
        arb_group, arb_hostile_group, assign, assignable, check_valid, counts, member, owning,
    };
    use super::*;
    use kafka_vocab::TopicPartition;

    const ALL: [&str; 3] = ["range", "roundrobin", "cooperative-sticky"];

    fn all() -> [&'static dyn Assignor; 3] {
        ALL.map(|name| assignor_by_name(name).expect("every protocol name is known"))
    }

    /// The partitions a round gives or hands over next round: for cooperative-sticky its
    /// plan's transferring ones too.
    fn given_or_transferring(
        assignor: &dyn Assignor,
        members: &[MemberSubscription],
        counts: &BTreeMap<String, i32>,
    ) -> (Assignment, BTreeSet<TopicPartition>) {
        let input = AssignmentInput { members, partitions_per_topic: counts };
        if assignor.name() == "cooperative-sticky" {
            let plan = cooperative_sticky::plan(&input);
            (plan.assignment, plan.transferring.into_keys().collect())
        } else {
            (assignor.assign(&input), BTreeSet::new())
        }
    }

    #[test]
    fn the_protocol_names_and_the_java_class_names_find_each_assignor() {
        for (names, protocol) in [
            (["range", "org.apache.kafka.clients.consumer.RangeAssignor"], RebalanceProtocol::Eager),
            (
                ["roundrobin", "org.apache.kafka.clients.consumer.RoundRobinAssignor"],
                RebalanceProtocol::Eager,
            ),
            (
                ["cooperative-sticky", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"],
                RebalanceProtocol::Cooperative,
            ),
        ] {
            for name in names {
                let assignor = assignor_by_name(&format!(" {name}\t")).expect(name);
                assert_eq!(assignor.name(), names[0]);
                assert_eq!(assignor.protocol(), protocol);
            }
        }
        for unknown in
            ["", "sticky", "Range", "org.apache.kafka.clients.consumer.StickyAssignor", "range,roundrobin"]
        {
            assert!(assignor_by_name(unknown).is_none(), "{unknown:?}");
        }
    }

    #[test]
    fn no_members_no_assignment_and_members_without_topics_get_empty_lists() {
        for a in all() {
            assert_eq!(assign(a, &[], &counts(&[("t", 3)])), Assignment::new());
            let members = [member("a", &[]), member("b", &["gone"])];
            let out = assign(a, &members, &counts(&[("t", 3)]));
            assert_eq!(out, [("a".to_owned(), vec![]), ("b".to_owned(), vec![])].into(), "{}", a.name());
        }
    }

    #[test]
    fn a_count_of_two_to_the_31_is_assigned_up_to_the_cap() {
        let members = [owning(member("a", &["big", "small"]), &[("big", i32::MAX - 1)], Some(1))];
        let topics = counts(&[("big", i32::MAX), ("small", 5)]);
        for a in all() {
            let out = assign(a, &members, &topics);
            assert_eq!(out["a"].len(), MAX_ASSIGNED_PARTITIONS, "{}", a.name());
            let last = out["a"].last().expect("partitions");
            assert_eq!((&*last.topic, last.partition), ("big", MAX_ASSIGNED_PARTITIONS as i32 - 1));
        }
    }

    #[test]
    fn rack_ids_are_carried_but_do_not_change_any_assignment() {
        let topics = counts(&[("t0", 7), ("t1", 5)]);
        let plain: Vec<MemberSubscription> = (0..4)
            .map(|i| member(&format!("m{i}"), if i % 2 == 0 { &["t0", "t1"] } else { &["t1"] }))
            .collect();
        let mut racked = plain.clone();
        for (i, m) in racked.iter_mut().enumerate() {
            m.rack_id = Some(format!("rack{}", i % 2));
        }
        assert!(racked.iter().all(|m| m.rack_id.is_some()));
        for a in all() {
            assert_eq!(assign(a, &plain, &topics), assign(a, &racked, &topics), "{}", a.name());
        }
    }

    #[test]
    fn a_thousand_partitions_over_a_hundred_members_take_milliseconds() {
        // 10 topics of 100; every member subscribes to all of them, or (the general case of
        // cooperative-sticky) each to 5 of them, with some partitions already owned.
        let topics: Vec<(String, i32)> = (0..10).map(|t| (format!("topic{t}"), 100)).collect();
        let topic_counts: BTreeMap<String, i32> = topics.iter().cloned().collect();
        let names: Vec<&str> = topics.iter().map(|(t, _)| t.as_str()).collect();
        let same: Vec<MemberSubscription> =
            (0..100).map(|i| member(&format!("member-{i}"), &names)).collect();
        let mixed: Vec<MemberSubscription> = (0..100)
            .map(|i| {
                let subscribed: Vec<&str> = (0..5).map(|k| names[(i + 2 * k) % 10]).collect();
                let owned: Vec<(&str, i32)> =
                    (0..8).map(|k| (subscribed[k % 5], (i * 8 + k) as i32 % 100)).collect();
                owning(member(&format!("member-{i}"), &subscribed), &owned, Some((i % 3) as i32))
            })
            .collect();
        for a in all() {
            for members in [&same, &mixed] {
                let started = Instant::now();
                let out = assign(a, members, &topic_counts);
                let took = started.elapsed();
                assert_eq!(out.len(), 100);
                // Milliseconds in a debug build; the bound is for a blow-up, not for timing.
                assert!(took.as_secs() < 5, "{} took {took:?}", a.name());
            }
        }
    }

    /// Valid, complete (every assignable partition given or, by cooperative-sticky, handed
    /// over next round, never both), deterministic, and the same for `shuffled`, the members
    /// in another order.
    fn check_every_assignor(
        members: &[MemberSubscription],
        shuffled: &[MemberSubscription],
        topics: &BTreeMap<String, i32>,
    ) -> Result<(), TestCaseError> {
        for a in all() {
            let (given, transferring) = given_or_transferring(a, members, topics);
            check_valid(members, topics, &given)?;
            let given_set: BTreeSet<TopicPartition> = given.values().flatten().cloned().collect();
            prop_assert!(given_set.is_disjoint(&transferring));
            let all_parts: BTreeSet<TopicPartition> = given_set.union(&transferring).cloned().collect();
            prop_assert_eq!(&all_parts, &assignable(members, topics), "{}", a.name());
            prop_assert_eq!(&given, &assign(a, members, topics), "{} is not deterministic", a.name());
            prop_assert_eq!(&given, &assign(a, shuffled, topics), "{} depends on member order", a.name());
        }
        Ok(())
    }

    /// Members with distinct ids, the same in another order, and counts.
    fn arb_shuffled_group(
    ) -> impl Strategy<Value = (Vec<MemberSubscription>, Vec<MemberSubscription>, BTreeMap<String, i32>)>
    {
        arb_group(8).prop_flat_map(|(members, topics)| {
            (Just(members.clone()), Just(members).prop_shuffle(), Just(topics))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn every_assignment_is_valid_complete_and_deterministic(
            (members, shuffled, topics) in arb_shuffled_group(),
        ) {
            check_every_assignor(&members, &shuffled, &topics)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn hostile_input_gets_a_valid_assignment_and_no_panic((members, topics) in arb_hostile_group()) {
            for a in all() {
                let out = assign(a, &members, &topics);
                check_valid(&members, &topics, &out)?;
                prop_assert!(out.values().map(Vec::len).sum::<usize>() <= MAX_ASSIGNED_PARTITIONS);
            }
        }
    }
}
