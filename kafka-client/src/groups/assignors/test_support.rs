//! What the assignors' tests share: building members and counts briefly, the groups property
//! tests draw, and the checks every assignor's assignment must pass.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use crate::groups::assignors::contract::{Assignment, AssignmentInput, Assignor, MemberSubscription};
use kafka_vocab::TopicPartition;

pub(crate) fn member(id: &str, topics: &[&str]) -> MemberSubscription {
    MemberSubscription {
        member_id: id.to_owned(),
        topics: topics.iter().map(|t| (*t).to_owned()).collect(),
        ..MemberSubscription::default()
    }
}

pub(crate) fn with_instance(mut m: MemberSubscription, instance: &str) -> MemberSubscription {
    m.group_instance_id = Some(instance.to_owned());
    m
}

pub(crate) fn owning(
    mut m: MemberSubscription,
    owned: &[(&str, i32)],
    generation: Option<i32>,
) -> MemberSubscription {
    m.owned_partitions = tps(owned);
    m.generation = generation;
    m
}

pub(crate) fn counts(topics: &[(&str, i32)]) -> BTreeMap<String, i32> {
    topics.iter().map(|(t, n)| ((*t).to_owned(), *n)).collect()
}

pub(crate) fn tps(parts: &[(&str, i32)]) -> Vec<TopicPartition> {
    parts.iter().map(|(t, p)| TopicPartition::new(*t, *p)).collect()
}

pub(crate) fn assign(
    assignor: &dyn Assignor,
    members: &[MemberSubscription],
    counts: &BTreeMap<String, i32>,
) -> Assignment {
    assignor.assign(&AssignmentInput { members, partitions_per_topic: counts })
}

/// Each member id's first entry.
pub(crate) fn first_entries(members: &[MemberSubscription]) -> BTreeMap<&str, &MemberSubscription> {
    let mut out = BTreeMap::new();
    for m in members {
        out.entry(m.member_id.as_str()).or_insert(m);
    }
    out
}

/// Every partition an assignor may assign: of each topic some member subscribes to (by its
/// first entry) that has partitions.
pub(crate) fn assignable(
    members: &[MemberSubscription],
    counts: &BTreeMap<String, i32>,
) -> BTreeSet<TopicPartition> {
    let topics: BTreeSet<&str> =
        first_entries(members).values().flat_map(|m| m.topics.iter().map(String::as_str)).collect();
    topics
        .into_iter()
        .flat_map(|t| (0..counts.get(t).copied().unwrap_or(0).max(0)).map(move |p| TopicPartition::new(t, p)))
        .collect()
}

/// The checks every assignment passes: a key per distinct member id; each list sorted, and
/// each partition of a topic its member subscribes to, within the topic's count; no partition
/// given twice.
pub(crate) fn check_valid(
    members: &[MemberSubscription],
    counts: &BTreeMap<String, i32>,
    assignment: &Assignment,
) -> Result<(), TestCaseError> {
    let firsts = first_entries(members);
    let keys: Vec<&str> = assignment.keys().map(String::as_str).collect();
    prop_assert_eq!(keys, firsts.keys().copied().collect::<Vec<_>>());
    let mut seen = BTreeSet::new();
    for (id, parts) in assignment {
        prop_assert!(parts.windows(2).all(|w| w[0] < w[1]), "{id}'s partitions are not sorted: {parts:?}");
        let subscribed = &firsts[id.as_str()].topics;
        for tp in parts {
            prop_assert!(
                subscribed.iter().any(|t| **t == *tp.topic),
                "{id} got {tp:?} of a topic it does not subscribe to"
            );
            prop_assert!(
                (0..counts.get(&*tp.topic).copied().unwrap_or(0)).contains(&tp.partition),
                "{tp:?} is out of range"
            );
            prop_assert!(seen.insert(tp.clone()), "{tp:?} is assigned twice");
        }
    }
    Ok(())
}

/// The topics the drawn groups use; "gone" is never in the counts.
pub(crate) const TOPICS: [&str; 5] = ["t0", "t1", "t2", "t3", "gone"];

/// Partition counts for t0..t3: each unknown (absent), or −1..=7.
pub(crate) fn arb_counts() -> impl Strategy<Value = BTreeMap<String, i32>> {
    proptest::collection::vec(proptest::option::of(-1i32..8), 4).prop_map(|per_topic| {
        TOPICS.iter().zip(per_topic).filter_map(|(t, n)| n.map(|n| ((*t).to_owned(), n))).collect()
    })
}

/// A group of up to `max_members` members with distinct ids, a random subscription each
/// (possibly none, possibly the unknown topic), some static, each claiming random partitions
/// (some out of range, some of topics it does not subscribe to) at a random generation.
pub(crate) fn arb_group(
    max_members: usize,
) -> impl Strategy<Value = (Vec<MemberSubscription>, BTreeMap<String, i32>)> {
    let member = (
        0u8..32,
        any::<bool>(),
        proptest::collection::vec((0usize..TOPICS.len(), -1i32..9), 0..6),
        proptest::option::of(0i32..4),
    );
    (proptest::collection::vec(member, 0..=max_members), arb_counts()).prop_map(|(drawn, counts)| {
        let n = drawn.len();
        let members = drawn
            .into_iter()
            .enumerate()
            .map(|(i, (topics, is_static, owned, generation))| MemberSubscription {
                member_id: format!("m{i}"),
                // Instance ids in the reverse order of member ids, so the two orders differ.
                group_instance_id: is_static.then(|| format!("i{}", n - i)),
                topics: TOPICS
                    .iter()
                    .enumerate()
                    .filter(|(b, _)| topics & (1 << b) != 0)
                    .map(|(_, t)| (*t).to_owned())
                    .collect(),
                owned_partitions: owned.into_iter().map(|(t, p)| TopicPartition::new(TOPICS[t], p)).collect(),
                generation,
                rack_id: None,
            })
            .collect();
        (members, counts)
    })
}

/// Anything at all: any ids (duplicates likely), any topic names and counts (up to i32::MAX),
/// any claims and generations.
pub(crate) fn arb_hostile_group() -> impl Strategy<Value = (Vec<MemberSubscription>, BTreeMap<String, i32>)> {
    let name = prop_oneof![Just(String::new()), "[a-c]", "\\PC{0,4}"];
    // Rarely i32::MAX: such a topic is a million-partition assignment (the cap).
    let count = prop_oneof![1 => Just(i32::MAX), 5 => Just(i32::MIN), 10 => Just(0), 184 => -3i32..40];
    let member = (
        name.clone(),
        proptest::option::of(name.clone()),
        proptest::collection::vec(name.clone(), 0..5),
        proptest::collection::vec((name.clone(), any::<i32>()), 0..6),
        proptest::option::of(any::<i32>()),
        proptest::option::of(name.clone()),
    )
        .prop_map(|(member_id, group_instance_id, topics, owned, generation, rack_id)| {
            MemberSubscription {
                member_id,
                group_instance_id,
                topics,
                owned_partitions: owned.into_iter().map(|(t, p)| TopicPartition::new(t, p)).collect(),
                generation,
                rack_id,
            }
        });
    (proptest::collection::vec(member, 0..8), proptest::collection::btree_map(name, count, 0..6))
}
