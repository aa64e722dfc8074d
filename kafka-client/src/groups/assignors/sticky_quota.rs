//! The sticky assignment when every member subscribes to the same topics (Java's
//! `ConstrainedAssignmentBuilder`): with `P` partitions over `M` members, each member gets
//! `min = P / M` or `max = min + 1` of them, and exactly `P % M` members get `max`.
//!
//! Contract:
//! - balanced: sizes differ by at most one;
//! - sticky: a member keeps `min(k, min)` of its `k` validly owned partitions, or `max` of them
//!   when `k >= max` and one of the `P % M` places at `max` is still free; members claim those
//!   places in member-id order (Java: in its hash map's order). Kept are the lowest partition
//!   numbers first, across topics (sorted by partition, then topic), so a member keeps a share
//!   of every topic it owned rather than all of one;
//! - the rest, in topic-then-partition order, are dealt round-robin to the members still under
//!   `min` (in member-id order), and when none is left, one each to the members at `min` that
//!   may still reach `max` (first those that kept `min`, then those as they reached it) — the
//!   order Java deals in, so the same owned partitions give Java's assignment.

use std::collections::VecDeque;

use crate::groups::assignors::prepared::{Part, Prepared};
use crate::groups::assignors::sticky_claims::Claims;

/// Each member's partitions (same index as [`Prepared::members`]); `group` has members.
pub(crate) fn assign(group: &Prepared<'_>, claims: &Claims) -> Vec<Vec<Part>> {
    let members = group.members.len();
    let total = group.total_partitions();
    let (min, extra) = (total / members.max(1), total % members.max(1));
    let max = min + usize::from(extra > 0);

    let mut out: Vec<Vec<Part>> = vec![Vec::new(); members];
    let mut under_min = Vec::new();
    let mut may_reach_max = VecDeque::new();
    let mut at_max = 0;
    for (member, owned) in claims.owned.iter().enumerate() {
        let mut owned = owned.clone();
        owned.sort_unstable_by_key(|&(topic, partition)| (partition, topic));
        let keep = if owned.len() < min {
            under_min.push(member);
            owned.len()
        } else if owned.len() >= max && at_max < extra {
            at_max += 1;
            max
        } else {
            may_reach_max.push_back(member);
            min
        };
        owned.truncate(keep);
        out[member] = owned;
    }
    if at_max == extra {
        may_reach_max.clear();
    }

    let mut kept: Vec<Part> = out.iter().flatten().copied().collect();
    kept.sort_unstable();
    let mut kept = kept.into_iter().peekable();
    let unassigned = (0..group.topics.len())
        .flat_map(|topic| (0..group.topics[topic].partitions).map(move |p| (topic, p)))
        .filter(|part| {
            let is_kept = kept.peek() == Some(part);
            if is_kept {
                kept.next();
            }
            !is_kept
        });

    // Round-robin over the members under `min`, a pass at a time: a member leaves the pass
    // when it reaches `min`.
    let mut pass = under_min;
    let mut at = 0;
    let mut next_pass = Vec::new();
    for part in unassigned {
        if at == pass.len() {
            pass = std::mem::take(&mut next_pass);
            at = 0;
        }
        if let Some(&member) = pass.get(at) {
            at += 1;
            out[member].push(part);
            if out[member].len() == min {
                may_reach_max.push_back(member);
            } else {
                next_pass.push(member);
            }
        } else if let Some(member) = may_reach_max.pop_front() {
            out[member].push(part);
        } else {
            // The counts above leave a place for every partition; were one missing, the
            // partition would stay unassigned rather than overfill a member.
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groups::assignors::contract::{AssignmentInput, MemberSubscription};
    use crate::groups::assignors::test_support::{counts, member, owning};

    /// The assignment as (member index → sorted "topic-partition" names).
    fn run(members: &[MemberSubscription], topics: &[(&str, i32)]) -> Vec<Vec<String>> {
        let topics = counts(topics);
        let group = Prepared::new(&AssignmentInput { members, partitions_per_topic: &topics });
        let claims = Claims::new(&group);
        assign(&group, &claims)
            .into_iter()
            .map(|parts| {
                let mut names: Vec<String> =
                    parts.into_iter().map(|(t, p)| format!("{}-{p}", group.topics[t].name)).collect();
                names.sort();
                names
            })
            .collect()
    }

    #[test]
    fn owned_partitions_are_kept_lowest_partition_first_across_topics() {
        // One member owned all 24 of two topics; a second joins: each keeps or gets 6 of each
        // topic (AbstractStickyAssignorTest.testTopicBalanceAfterReassignment).
        let all: Vec<(&str, i32)> = (0..12).flat_map(|p| [("topic1", p), ("topic2", p)]).collect();
        let members = [
            owning(member("consumer1", &["topic1", "topic2"]), &all, Some(1)),
            member("consumer2", &["topic1", "topic2"]),
        ];
        let out = run(&members, &[("topic1", 12), ("topic2", 12)]);
        for names in &out {
            assert_eq!(names.iter().filter(|n| n.starts_with("topic1-")).count(), 6);
            assert_eq!(names.iter().filter(|n| n.starts_with("topic2-")).count(), 6);
        }
        assert!(out[0].contains(&"topic1-0".to_owned()) && out[0].contains(&"topic2-5".to_owned()));
        assert!(out[1].contains(&"topic1-6".to_owned()) && out[1].contains(&"topic2-11".to_owned()));
    }

    #[test]
    fn the_places_at_max_go_to_members_that_owned_max_in_member_order() {
        // 4 partitions, 3 members: one place at max (2). consumer1 and consumer2 both owned 2;
        // consumer1 comes first and keeps both. (AbstractStickyAssignorTest.
        // testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers has Java's hash map put
        // consumer2 first, the mirror image: consumer2 keeps both there.)
        let both = ["topic1", "topic2"];
        let members = [
            owning(member("consumer1", &both), &[("topic1", 0), ("topic2", 0)], Some(1)),
            owning(member("consumer2", &both), &[("topic1", 1), ("topic2", 1)], Some(1)),
            owning(member("consumer3", &both), &[], Some(1)),
        ];
        let out = run(&members, &[("topic1", 2), ("topic2", 2)]);
        assert_eq!(out, [vec!["topic1-0", "topic2-0"], vec!["topic1-1"], vec!["topic2-1"]]);
    }

    #[test]
    fn members_under_min_are_filled_first_then_one_each_up_to_max() {
        // AbstractStickyAssignorTest.testAllConsumersAreUnderMinQuota: 5 partitions, 3
        // members; consumer1 and consumer2 own one each, consumer3 none.
        let both = ["topic1", "topic2"];
        let members = [
            owning(member("consumer1", &both), &[("topic1", 0)], Some(1)),
            owning(member("consumer2", &both), &[("topic1", 1)], Some(1)),
            owning(member("consumer3", &both), &[], Some(1)),
        ];
        let out = run(&members, &[("topic1", 2), ("topic2", 3)]);
        assert_eq!(out, [vec!["topic1-0", "topic2-1"], vec!["topic1-1", "topic2-2"], vec!["topic2-0"]]);
    }

    #[test]
    fn a_fresh_group_is_dealt_round_robin_in_member_order() {
        // AbstractStickyAssignorTest.testAddRemoveTwoConsumersTwoTopics, first assignment.
        let both = ["topic1", "topic2"];
        let members = [member("consumer1", &both), member("consumer2", &both)];
        let out = run(&members, &[("topic1", 3), ("topic2", 4)]);
        assert_eq!(
            out,
            [vec!["topic1-0", "topic1-2", "topic2-1", "topic2-3"], vec!["topic1-1", "topic2-0", "topic2-2"]]
        );
    }

    #[test]
    fn fewer_partitions_than_members_gives_one_each_in_member_order() {
        // AbstractStickyAssignorTest.testStickiness, first assignment: 3 partitions, 4 members.
        let members: Vec<_> = (1..=4).map(|i| member(&format!("consumer{i}"), &["topic1"])).collect();
        let out = run(&members, &[("topic1", 3)]);
        assert_eq!(out, [vec!["topic1-0"], vec!["topic1-1"], vec!["topic1-2"], vec![]]);
    }
}
