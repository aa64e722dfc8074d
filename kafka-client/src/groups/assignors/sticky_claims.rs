//! Who owns what coming into a cooperative rebalance: each member's `owned_partitions` are its
//! claims, and a claim is valid only if nothing contradicts it (KIP-792's generation rule,
//! as Java's `AbstractStickyAssignor` applies it):
//!
//! - a claim on a partition of a topic the group does not have (unknown to Metadata, or no
//!   member subscribes to it), or on a partition number outside the topic's count, is void;
//! - of the claims on one partition, only those at the highest generation stand (a member
//!   without a generation ranks as −1, Java's `DEFAULT_GENERATION`); if more than one member
//!   claims it at that generation, none of them owns it;
//! - the one claim left is still void if its member no longer subscribes to the topic: the
//!   partition is released.
//!
//! Every claim, void or not, still means its member may be holding the partition: the
//! cooperative rule ([`Claims::may_take`]) keeps it from anyone else until the claimant has
//! let it go.

use crate::groups::assignors::prepared::{Part, Prepared};

/// Who claims one partition.
#[derive(Debug, Clone, Copy)]
struct Claimants {
    /// One claimant (the one with the highest generation, lowest index among equals).
    first: usize,
    /// Whether any other member claims it too.
    shared: bool,
    /// The member whose claim is valid, if one is.
    owner: Option<usize>,
}

/// The group's claims, settled.
#[derive(Debug)]
pub(crate) struct Claims {
    /// Per member (same index as [`Prepared::members`]): the partitions it validly owns,
    /// sorted.
    pub(crate) owned: Vec<Vec<Part>>,
    /// Per partition ([`Prepared::index_of`]): its claimants' place in `claimants`, or
    /// `NONE`.
    slot: Vec<u32>,
    claimants: Vec<Claimants>,
}

const NONE: u32 = u32::MAX;

impl Claims {
    pub(crate) fn new(group: &Prepared<'_>) -> Claims {
        // (partition, generation, member), each member's claim on a partition counted once.
        let mut all: Vec<(Part, i32, usize)> = Vec::new();
        for (member, m) in group.members.iter().enumerate() {
            let mut parts: Vec<Part> = m.owned_partitions.iter().filter_map(|tp| group.part_of(tp)).collect();
            parts.sort_unstable();
            parts.dedup();
            let generation = m.generation.unwrap_or(-1);
            all.extend(parts.into_iter().map(|part| (part, generation, member)));
        }
        all.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));

        let mut owned = vec![Vec::new(); group.members.len()];
        // At most MAX_ASSIGNED_PARTITIONS partitions, so every place fits a u32.
        let mut slot = vec![NONE; group.total_partitions()];
        let mut claimants = Vec::new();
        for run in all.chunk_by(|a, b| a.0 == b.0) {
            let (part, generation, first) = run[0];
            let contested = run.get(1).is_some_and(|next| next.1 == generation);
            let owner = (!contested && group.subscribes(first, part.0)).then_some(first);
            if let Some(member) = owner {
                owned[member].push(part);
            }
            slot[group.index_of(part)] = claimants.len() as u32;
            claimants.push(Claimants { first, shared: run.len() > 1, owner });
        }
        Claims { owned, slot, claimants }
    }

    fn claimants(&self, index: usize) -> Option<&Claimants> {
        self.slot.get(index).and_then(|&at| self.claimants.get(at as usize))
    }

    /// The member that validly owns the partition at `index` ([`Prepared::index_of`]), if
    /// one does.
    pub(crate) fn owner(&self, index: usize) -> Option<usize> {
        self.claimants(index).and_then(|c| c.owner)
    }

    /// Whether `member` may be given the partition at `index` ([`Prepared::index_of`]) in
    /// this round: it owns it, or no other member claims it. Otherwise its claimant has first
    /// to revoke it, and it is handed over at the next rebalance.
    pub(crate) fn may_take(&self, member: usize, index: usize) -> bool {
        match self.claimants(index) {
            None => true,
            Some(c) => c.owner == Some(member) || (!c.shared && c.first == member),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::groups::assignors::contract::{AssignmentInput, MemberSubscription};
    use crate::groups::assignors::test_support::{counts, member, owning};

    /// The claims, asked by `Part`.
    struct Settled {
        owned: Vec<Vec<Part>>,
        claims: Claims,
        offsets: Vec<usize>,
    }

    impl Settled {
        fn may_take(&self, member: usize, (topic, partition): Part) -> bool {
            self.claims.may_take(member, self.offsets[topic] + partition as usize)
        }

        fn owner(&self, (topic, partition): Part) -> Option<usize> {
            self.claims.owner(self.offsets[topic] + partition as usize)
        }
    }

    fn settle(members: &[MemberSubscription], counts: &BTreeMap<String, i32>) -> Settled {
        let group = Prepared::new(&AssignmentInput { members, partitions_per_topic: counts });
        let claims = Claims::new(&group);
        let offsets = (0..group.topics.len()).map(|t| group.index_of((t, 0))).collect();
        Settled { owned: claims.owned.clone(), claims, offsets }
    }

    #[test]
    fn the_highest_generation_owns_and_a_tie_at_the_top_voids_every_claim() {
        // Members sort a, b, c, d; topic "t" is index 0.
        let members = [
            owning(member("a", &["t"]), &[("t", 0), ("t", 1)], Some(5)),
            owning(member("b", &["t"]), &[("t", 0), ("t", 2)], Some(4)),
            owning(member("c", &["t"]), &[("t", 1), ("t", 2)], Some(5)),
            owning(member("d", &["t"]), &[("t", 3)], None),
        ];
        let claims = settle(&members, &counts(&[("t", 4)]));
        // t-0: a (5) over b (4); t-1: a and c tie at 5; t-2: c (5) over b (4); t-3: d alone.
        assert_eq!(claims.owned, [vec![(0, 0)], vec![], vec![(0, 2)], vec![(0, 3)]]);
        assert_eq!(claims.owner((0, 1)), None);
        // Nobody but the owner may take a claimed partition; a tied one nobody may take.
        assert!(claims.may_take(0, (0, 0)));
        assert!(!claims.may_take(1, (0, 0)));
        assert!(!claims.may_take(3, (0, 0)));
        assert!(!claims.may_take(0, (0, 1)) && !claims.may_take(2, (0, 1)) && !claims.may_take(3, (0, 1)));
        assert!(claims.may_take(3, (0, 3)));
    }

    #[test]
    fn no_generation_ranks_as_minus_one() {
        let members = [
            owning(member("a", &["t"]), &[("t", 0)], None),
            owning(member("b", &["t"]), &[("t", 0)], Some(-1)),
            owning(member("c", &["t"]), &[("t", 1)], None),
            owning(member("d", &["t"]), &[("t", 1)], Some(0)),
        ];
        let claims = settle(&members, &counts(&[("t", 2)]));
        assert_eq!(claims.owned, [vec![], vec![], vec![], vec![(0, 1)]]);
    }

    #[test]
    fn void_claims_are_dropped_but_still_hold_the_partition_back() {
        let members = [
            // "t" is no longer subscribed: released, yet a still holds t-0.
            owning(
                member("a", &["u"]),
                &[("t", 0), ("u", 0), ("u", 0), ("u", 7), ("gone", 0), ("u", -1)],
                Some(1),
            ),
            owning(member("b", &["t", "u"]), &[], Some(1)),
        ];
        let claims = settle(&members, &counts(&[("t", 2), ("u", 1)]));
        assert_eq!(claims.owned, [vec![(1, 0)], vec![]]);
        assert_eq!(claims.owner((0, 0)), None);
        assert!(!claims.may_take(1, (0, 0)));
        // a may take it back (it is a's alone to release), and nobody claims t-1.
        assert!(claims.may_take(0, (0, 0)));
        assert!(claims.may_take(1, (0, 1)));
    }
}
