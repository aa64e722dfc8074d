//! The sticky assignment when members subscribe to different topics (the case of Java's
//! `GeneralAssignmentBuilder`). Members cannot all get the same number of partitions then; the
//! contract is that the assignment is as balanced as the subscriptions allow:
//!
//! - **balanced**: it has the least sum of squared member sizes of all assignments that give
//!   each partition to a subscriber. In particular no partition can be moved to another
//!   subscriber of its topic holding two or more fewer partitions (Java's `isBalanced`), and
//!   neither can a chain of moves (a → b → c, each of a topic the next subscribes to) from a
//!   member to one two or more smaller: Java stops at single moves, so where only a chain
//!   evens the sizes out (sizes 3/2/1 that a chain makes 2/2/2) it stays less balanced;
//! - **sticky**: every validly owned partition is kept to start with, the others are placed
//!   one at a time on the smallest subscriber (topics with the fewest subscribers first, as
//!   Java does); then chains that move only those newly placed partitions are applied while
//!   one improves the balance, and only when none does, chains that move owned partitions
//!   too, the one moving the fewest owned partitions first. So an assignment that is already
//!   as balanced as possible (the last one, handed back as owned) is kept whole, and owned
//!   partitions move only as far as the balance needs: a member in the middle of a chain may
//!   hand on one of its owned partitions for a new one, though, keeping its size.
//!
//! The least-squares claim is the cost-reducing-path theorem for load balancing with
//! eligibility (Harvey, Ladner, Lovász, Tamir, "Semi-matchings for bipartite graphs and load
//! balancing", 2003): an assignment is optimal exactly when no chain leads from a member to
//! one two or more smaller; each chain applied lowers the sum by at least 2, so it ends.
//! Chains are found by a 0-1 breadth-first search (moving an owned partition costs 1) back
//! from the smallest members: a member reaches the topics it subscribes to, a topic the
//! members holding one of its partitions. It stops at the first of the largest members found
//! at the least cost, and each node is visited once per search, so a member joining a big
//! group costs a short search per partition it gets, not a walk over the group.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};

use crate::groups::assignors::prepared::{Part, Prepared};
use crate::groups::assignors::sticky_claims::Claims;

/// Each member's partitions (same index as [`Prepared::members`]).
pub(crate) fn assign(group: &Prepared<'_>, claims: &Claims) -> Vec<Vec<Part>> {
    let mut board = Board::new(group, claims);
    board.place_unowned();
    while let Some(chain) = board.improving_chain(false).or_else(|| board.improving_chain(true)) {
        if !board.apply(&chain) {
            break;
        }
    }
    board.into_parts()
}

/// One move of a chain: `.0` hands a partition of topic `.1` to `.2`.
type Step = (usize, usize, usize);

const NONE: usize = usize::MAX;

/// A node of the search.
#[derive(Debug, Clone, Copy)]
enum Node {
    Member(usize),
    Topic(usize),
}

/// Partitions by who holds them, split by whether the holder validly owned them coming in.
#[derive(Debug)]
struct Board<'a> {
    group: &'a Prepared<'a>,
    claims: &'a Claims,
    /// Per member, by topic: the partitions it owned coming in (no empty lists).
    owned: Vec<BTreeMap<usize, Vec<i32>>>,
    /// Per member, by topic: the others, placed on it this round or moved to it.
    new: Vec<BTreeMap<usize, Vec<i32>>>,
    /// Per topic: the members with an entry in `owned`, and in `new`.
    owned_by: Vec<BTreeSet<usize>>,
    new_by: Vec<BTreeSet<usize>>,
    /// Per member: how many partitions it holds.
    sizes: Vec<usize>,
}

impl<'a> Board<'a> {
    fn new(group: &'a Prepared<'a>, claims: &'a Claims) -> Board<'a> {
        let (members, topics) = (group.members.len(), group.topics.len());
        let mut board = Board {
            group,
            claims,
            owned: (0..members).map(|_| BTreeMap::new()).collect(),
            new: (0..members).map(|_| BTreeMap::new()).collect(),
            owned_by: vec![BTreeSet::new(); topics],
            new_by: vec![BTreeSet::new(); topics],
            sizes: vec![0; members],
        };
        for (member, owned) in claims.owned.iter().enumerate() {
            for &part in owned {
                board.give(member, part);
            }
        }
        board
    }

    /// Puts `part` on `member`: among its owned partitions if it validly owns it.
    fn give(&mut self, member: usize, (topic, partition): Part) {
        let owns = self.claims.owner(self.group.index_of((topic, partition))) == Some(member);
        let (held, by) =
            if owns { (&mut self.owned, &mut self.owned_by) } else { (&mut self.new, &mut self.new_by) };
        held[member].entry(topic).or_default().push(partition);
        by[topic].insert(member);
        self.sizes[member] += 1;
    }

    /// Takes one of `member`'s partitions of `topic`, a new one if it has one.
    fn take(&mut self, member: usize, topic: usize) -> Option<i32> {
        for (held, by) in [(&mut self.new, &mut self.new_by), (&mut self.owned, &mut self.owned_by)] {
            let Some(partitions) = held[member].get_mut(&topic) else { continue };
            let partition = partitions.pop();
            if partitions.is_empty() {
                held[member].remove(&topic);
                by[topic].remove(&member);
            }
            if partition.is_some() {
                self.sizes[member] -= 1;
                return partition;
            }
        }
        None
    }

    /// Every partition nobody validly owns, each on its topic's smallest subscriber (lowest
    /// index among equals), topics with the fewest subscribers first.
    fn place_unowned(&mut self) {
        let group = self.group;
        let subscribers = group.subscribers();
        let mut topics: Vec<usize> = (0..group.topics.len()).collect();
        topics.sort_by_key(|&t| (subscribers[t].len(), t));
        for topic in topics {
            let mut owned = vec![false; group.topics[topic].partitions as usize];
            for &member in &self.owned_by[topic] {
                for &p in self.owned[member].get(&topic).into_iter().flatten() {
                    owned[p as usize] = true;
                }
            }
            let mut smallest: BinaryHeap<Reverse<(usize, usize)>> =
                subscribers[topic].iter().map(|&m| Reverse((self.sizes[m], m))).collect();
            for (p, _) in owned.iter().enumerate().filter(|(_, owned)| !**owned) {
                let Some(Reverse((size, member))) = smallest.pop() else { break };
                self.give(member, (topic, p as i32));
                smallest.push(Reverse((size + 1, member)));
            }
        }
    }

    /// A chain from a member to one two or more smaller, moving only new partitions, or (with
    /// `owned_too`, once no such chain is left) owned ones as well, as few of them as can be:
    /// to the smallest members that have one, from the largest member found at that cost.
    fn improving_chain(&self, owned_too: bool) -> Option<Vec<Step>> {
        let members = self.sizes.len();
        let highest = *self.sizes.iter().max()?;
        // The least cost a chain can have: with `owned_too`, every chain costs at least 1.
        let floor = usize::from(owned_too);
        let mut order: Vec<usize> = (0..members).collect();
        order.sort_unstable_by_key(|&m| (self.sizes[m], m));

        let topics = self.new_by.len();
        // A node reached from a smaller level cannot reach a member large enough for a larger
        // one: it is not searched again.
        let (mut done_member, mut done_topic) = (vec![false; members], vec![false; topics]);
        // For a member: the cost of reaching it, and the topic it hands a partition of on.
        let (mut member_cost, mut gives) = (vec![usize::MAX; members], vec![NONE; members]);
        // For a topic: the cost of reaching it, and the member it hands a partition to.
        let (mut topic_cost, mut to) = (vec![usize::MAX; topics], vec![NONE; topics]);
        let mut start = 0;
        while let Some(&first) = order.get(start) {
            let level = self.sizes[first];
            if level + 2 > highest {
                break;
            }
            let end = start + order[start..].iter().take_while(|&&m| self.sizes[m] == level).count();
            let (mut reached_members, mut reached_topics) = (Vec::new(), Vec::new());
            let mut queue = VecDeque::new();
            for &m in order[start..end].iter().filter(|&&m| !done_member[m]) {
                member_cost[m] = 0;
                reached_members.push(m);
                queue.push_back((Node::Member(m), 0));
            }
            // The best member to start from so far: (cost, larger first, index).
            let mut best: Option<(usize, Reverse<usize>, usize)> = None;
            'search: while let Some((node, cost)) = queue.pop_front() {
                if best.is_some_and(|(c, _, _)| cost > c) {
                    break; // everything left costs more
                }
                match node {
                    Node::Member(x) if cost == member_cost[x] => {
                        for &t in &self.group.subscriptions[x] {
                            if done_topic[t] || cost >= topic_cost[t] {
                                continue;
                            }
                            if topic_cost[t] == usize::MAX {
                                reached_topics.push(t);
                            }
                            topic_cost[t] = cost;
                            to[t] = x;
                            queue.push_front((Node::Topic(t), cost));
                        }
                    }
                    Node::Topic(t) if cost == topic_cost[t] => {
                        let owned = if owned_too { Some(&self.owned_by[t]) } else { None };
                        for (holders, step) in [(Some(&self.new_by[t]), 0), (owned, 1)] {
                            for &a in holders.into_iter().flatten() {
                                let reach = cost + step;
                                if done_member[a] || reach >= member_cost[a] {
                                    continue;
                                }
                                if member_cost[a] == usize::MAX {
                                    reached_members.push(a);
                                }
                                member_cost[a] = reach;
                                gives[a] = t;
                                if self.sizes[a] >= level + 2 {
                                    let found = (reach, Reverse(self.sizes[a]), a);
                                    best = Some(best.map_or(found, |b| b.min(found)));
                                    if reach == floor && self.sizes[a] == highest {
                                        break 'search; // nothing cheaper or larger exists
                                    }
                                }
                                if step == 0 {
                                    queue.push_front((Node::Member(a), reach));
                                } else {
                                    queue.push_back((Node::Member(a), reach));
                                }
                            }
                        }
                    }
                    _ => {} // reached again more cheaply since it was queued
                }
            }
            if let Some((_, _, mut from)) = best {
                let mut chain = Vec::new();
                // At most one step per member: the links form a tree.
                for _ in 0..members {
                    let topic = gives[from];
                    if topic == NONE {
                        break;
                    }
                    chain.push((from, topic, to[topic]));
                    from = to[topic];
                }
                return Some(chain);
            }
            for m in reached_members {
                done_member[m] = true;
            }
            for t in reached_topics {
                done_topic[t] = true;
            }
            start = end;
        }
        None
    }

    /// Moves one partition along each step (a new one where the member has one), and says
    /// whether every step could.
    fn apply(&mut self, chain: &[Step]) -> bool {
        for &(from, topic, to) in chain {
            let Some(partition) = self.take(from, topic) else { return false };
            self.give(to, (topic, partition));
        }
        !chain.is_empty()
    }

    fn into_parts(self) -> Vec<Vec<Part>> {
        self.owned
            .into_iter()
            .zip(self.new)
            .map(|(owned, new)| {
                owned
                    .into_iter()
                    .chain(new)
                    .flat_map(|(topic, partitions)| partitions.into_iter().map(move |p| (topic, p)))
                    .collect()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groups::assignors::contract::{AssignmentInput, MemberSubscription};
    use crate::groups::assignors::test_support::{counts, member, owning};

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
    fn partitions_go_to_the_smallest_subscriber_topics_with_fewest_subscribers_first() {
        // AbstractStickyAssignorTest.testMultipleConsumersMixedTopicSubscriptions.
        let members = [
            member("consumer1", &["topic1"]),
            member("consumer2", &["topic1", "topic2"]),
            member("consumer3", &["topic1"]),
        ];
        let out = run(&members, &[("topic1", 3), ("topic2", 2)]);
        assert_eq!(out, [vec!["topic1-0", "topic1-2"], vec!["topic2-0", "topic2-1"], vec!["topic1-1"]]);
    }

    #[test]
    fn a_chain_evens_out_what_no_single_move_can() {
        // AbstractStickyAssignorTest.testMoveExistingAssignments: six one-partition topics
        // owned 1/2/3. No single partition can go to a member two smaller (consumer1 takes only
        // topic1 and topic2, which consumer3 does not hold), so Java keeps 1/2/3; the chain
        // consumer3 → consumer2 (topic4) → consumer1 (topic2) makes it 2/2/2.
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
        let six: Vec<(String, i32)> = (1..=6).map(|i| (format!("topic{i}"), 1)).collect();
        let six: Vec<(&str, i32)> = six.iter().map(|(t, n)| (t.as_str(), *n)).collect();
        let out = run(&members, &six);
        assert_eq!(
            out,
            [vec!["topic1-0", "topic2-0"], vec!["topic3-0", "topic4-0"], vec!["topic5-0", "topic6-0"]]
        );
    }

    #[test]
    fn owned_partitions_move_only_as_far_as_the_balance_needs() {
        // a owns all 4 of t; b (t and u) and c (u only) own nothing; u's 2 partitions are
        // placed on b and c. 4/1/1 needs two owned t partitions moved to b, and the second
        // chain has b hand its new u partition on to c rather than take more from a.
        let members = [
            owning(member("a", &["t"]), &[("t", 0), ("t", 1), ("t", 2), ("t", 3)], Some(1)),
            member("b", &["t", "u"]),
            member("c", &["u"]),
        ];
        let out = run(&members, &[("t", 4), ("u", 2)]);
        assert_eq!(out, [vec!["t-0", "t-1"], vec!["t-2", "t-3"], vec!["u-0", "u-1"]]);
    }

    #[test]
    fn an_assignment_that_cannot_be_evened_out_further_is_kept_whole() {
        // x is consumer1's alone, with 5 partitions: 5/1/1 is the best there is.
        let members = [
            owning(
                member("consumer1", &["x", "y"]),
                &[("x", 0), ("x", 1), ("x", 2), ("x", 3), ("x", 4)],
                Some(3),
            ),
            owning(member("consumer2", &["y"]), &[("y", 0)], Some(3)),
            owning(member("consumer3", &["y"]), &[("y", 1)], Some(3)),
        ];
        let out = run(&members, &[("x", 5), ("y", 2)]);
        assert_eq!(out, [vec!["x-0", "x-1", "x-2", "x-3", "x-4"], vec!["y-0"], vec!["y-1"]]);
    }
}
