//! The input as every assignor reads it: each member once, the subscribed topics Metadata
//! knows (with at least one partition) in Java's name order, their counts under
//! [`MAX_ASSIGNED_PARTITIONS`], and each member's subscription as indices into them.
//!
//! Everything an assignor may be handed (duplicate member ids, repeated topics, negative
//! counts, owned partitions of unknown topics) is settled here once, so the assignors see only
//! well-formed groups.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::groups::assignors::contract::{
    java_cmp, Assignment, AssignmentInput, MemberSubscription, MAX_ASSIGNED_PARTITIONS,
};
use kafka_vocab::TopicPartition;

/// A subscribed topic with partitions.
#[derive(Debug, Clone)]
pub(crate) struct Topic {
    /// The name, shared by every `TopicPartition` made of it.
    pub(crate) name: Arc<str>,
    /// Its partition count, at least 1 (capped: see [`MAX_ASSIGNED_PARTITIONS`]).
    pub(crate) partitions: i32,
}

/// A partition as the assignors hold it: (index into [`Prepared::topics`], partition).
/// Ordered by topic name, then partition, like Java's sorted partition lists.
pub(crate) type Part = (usize, i32);

/// Looked up, never iterated: its order does not reach an assignment.
type ByName<'a> = HashMap<&'a str, usize, foldhash::fast::RandomState>;

/// The settled group.
#[derive(Debug)]
pub(crate) struct Prepared<'a> {
    /// Each member id once (its first entry in the input), sorted by member id in Java's order.
    pub(crate) members: Vec<&'a MemberSubscription>,
    /// The topics some member subscribes to that have partitions, sorted by name in Java's
    /// order.
    pub(crate) topics: Vec<Topic>,
    /// Per member (same index as `members`): its topics, as sorted indices into `topics`.
    pub(crate) subscriptions: Vec<Vec<usize>>,
    /// Per topic: how many partitions the topics before it have, so that every partition has
    /// an index below [`Prepared::total_partitions`] ([`Prepared::index_of`]).
    offsets: Vec<usize>,
    by_name: ByName<'a>,
}

impl<'a> Prepared<'a> {
    pub(crate) fn new(input: &AssignmentInput<'a>) -> Prepared<'a> {
        let mut seen = HashSet::new();
        let mut members: Vec<&'a MemberSubscription> =
            input.members.iter().filter(|m| seen.insert(m.member_id.as_str())).collect();
        members.sort_by(|a, b| java_cmp(&a.member_id, &b.member_id));

        let subscribed: HashSet<&'a str> =
            members.iter().flat_map(|m| m.topics.iter().map(String::as_str)).collect();
        let mut names: Vec<&'a str> = subscribed.into_iter().collect();
        names.sort_unstable_by(|a, b| java_cmp(a, b));
        let (mut topics, mut offsets, mut by_name) = (Vec::new(), Vec::new(), ByName::default());
        let mut total = 0usize;
        for name in names {
            let Some(&count) = input.partitions_per_topic.get(name) else { continue };
            let room = MAX_ASSIGNED_PARTITIONS - total;
            let partitions = usize::try_from(count).unwrap_or(0).min(room);
            if partitions == 0 {
                continue;
            }
            by_name.insert(name, topics.len());
            offsets.push(total);
            total += partitions;
            // `partitions` is at most the i32 it came from.
            topics.push(Topic { name: Arc::from(name), partitions: partitions as i32 });
        }

        let subscriptions = members
            .iter()
            .map(|m| {
                let mut subscribed: Vec<usize> =
                    m.topics.iter().filter_map(|t| by_name.get(t.as_str()).copied()).collect();
                subscribed.sort_unstable();
                subscribed.dedup();
                subscribed
            })
            .collect();
        Prepared { members, topics, subscriptions, offsets, by_name }
    }

    /// The index of `name` in `topics`, if it is there.
    pub(crate) fn topic_index(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// `part`'s place among all partitions, below [`Prepared::total_partitions`].
    pub(crate) fn index_of(&self, (topic, partition): Part) -> usize {
        self.offsets[topic] + partition as usize
    }

    /// `tp` as a [`Part`], if its topic is here and its partition is in range.
    pub(crate) fn part_of(&self, tp: &TopicPartition) -> Option<Part> {
        let topic = self.topic_index(&tp.topic)?;
        (0..self.topics[topic].partitions).contains(&tp.partition).then_some((topic, tp.partition))
    }

    /// Per topic (same index as `topics`): the members subscribed to it, ascending.
    pub(crate) fn subscribers(&self) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new(); self.topics.len()];
        for (member, subscribed) in self.subscriptions.iter().enumerate() {
            for &topic in subscribed {
                out[topic].push(member);
            }
        }
        out
    }

    /// Whether `member` subscribes to `topic`.
    pub(crate) fn subscribes(&self, member: usize, topic: usize) -> bool {
        self.subscriptions[member].binary_search(&topic).is_ok()
    }

    /// The number of partitions over all topics (at most [`MAX_ASSIGNED_PARTITIONS`]).
    pub(crate) fn total_partitions(&self) -> usize {
        self.offsets.last().zip(self.topics.last()).map_or(0, |(o, t)| o + t.partitions as usize)
    }

    /// `part` as a `TopicPartition` (its name shared, not copied).
    pub(crate) fn topic_partition(&self, (topic, partition): Part) -> TopicPartition {
        TopicPartition::new(&self.topics[topic].name, partition)
    }

    /// The assignment of `per_member` (same index as `members`), each list sorted.
    pub(crate) fn assignment(&self, per_member: Vec<Vec<Part>>) -> Assignment {
        self.members
            .iter()
            .zip(per_member)
            .map(|(m, parts)| {
                let mut tps: Vec<TopicPartition> =
                    parts.into_iter().map(|p| self.topic_partition(p)).collect();
                tps.sort_unstable();
                (m.member_id.clone(), tps)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn member(id: &str, topics: &[&str]) -> MemberSubscription {
        MemberSubscription {
            member_id: id.to_owned(),
            topics: topics.iter().map(|t| (*t).to_owned()).collect(),
            ..MemberSubscription::default()
        }
    }

    #[test]
    fn members_are_read_once_and_only_known_subscribed_topics_with_partitions_count() {
        let members = [
            member("b", &["t2", "t1", "t1", "gone"]),
            member("a", &["t3", "zero", "negative"]),
            member("b", &["t9"]),
        ];
        let counts: BTreeMap<String, i32> =
            [("t1", 2), ("t2", 1), ("t3", 4), ("t9", 5), ("zero", 0), ("negative", -3), ("other", 7)]
                .into_iter()
                .map(|(t, n)| (t.to_owned(), n))
                .collect();
        let p = Prepared::new(&AssignmentInput { members: &members, partitions_per_topic: &counts });
        let ids: Vec<&str> = p.members.iter().map(|m| m.member_id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        let names: Vec<&str> = p.topics.iter().map(|t| &*t.name).collect();
        // t9 is only the ignored duplicate's; "other" nobody subscribes to.
        assert_eq!(names, ["t1", "t2", "t3"]);
        assert_eq!(p.subscriptions, [vec![2], vec![0, 1]]);
        assert_eq!(p.subscribers(), [vec![1], vec![1], vec![0]]);
        assert_eq!(p.total_partitions(), 7);
        assert_eq!([(0, 0), (0, 1), (1, 0), (2, 0), (2, 3)].map(|part| p.index_of(part)), [0, 1, 2, 3, 6]);
        assert_eq!(p.part_of(&TopicPartition::new("t1", 1)), Some((0, 1)));
        assert_eq!(p.part_of(&TopicPartition::new("t1", 2)), None);
        assert_eq!(p.part_of(&TopicPartition::new("t1", -1)), None);
        assert_eq!(p.part_of(&TopicPartition::new("gone", 0)), None);
        let assignment = p.assignment(vec![Vec::new(), vec![(1, 0), (0, 1)]]);
        assert_eq!(assignment["a"], []);
        assert_eq!(assignment["b"], [TopicPartition::new("t1", 1), TopicPartition::new("t2", 0)]);
    }

    #[test]
    fn counts_are_capped_over_all_topics_in_name_order() {
        let members = [member("m", &["b", "a", "c"])];
        let counts: BTreeMap<String, i32> = [("a", 1000), ("b", i32::MAX), ("c", i32::MAX)]
            .into_iter()
            .map(|(t, n)| (t.to_owned(), n))
            .collect();
        let p = Prepared::new(&AssignmentInput { members: &members, partitions_per_topic: &counts });
        let kept: Vec<(&str, i32)> = p.topics.iter().map(|t| (&*t.name, t.partitions)).collect();
        assert_eq!(kept, [("a", 1000), ("b", (MAX_ASSIGNED_PARTITIONS - 1000) as i32)]);
        assert_eq!(p.total_partitions(), MAX_ASSIGNED_PARTITIONS);
    }
}
