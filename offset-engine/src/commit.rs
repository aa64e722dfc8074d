//! What to commit after a batch, and merging commits into stored positions without ever moving
//! one backwards by accident (rule R12).
//!
//! A plan's commit set is each planned range's `until` (the next offset to read) with the topic
//! id and leader epoch the plan saw. A commit for a partition whose start the out-of-range policy
//! moved (a recreated topic, a truncation, an offset ahead of the log) is marked as a reset:
//! those are the only commits allowed to move an offset or a leader epoch backwards, or to
//! change or drop a stored topic id, because the caller's policy already chose to.
//!
//! Merging promises, for commits that are not resets:
//! - the offset never goes backwards ([`CommitRejection::Backwards`]);
//! - the leader epoch never goes backwards ([`CommitRejection::LeaderEpochBackwards`]: leader
//!   epochs only grow along a log, so a lower one comes from a stale leader or a diverged log);
//! - a stored topic id never changes: a commit with another id is refused
//!   ([`CommitRejection::TopicIdChanged`]). A commit may add an id where none was stored.
//!
//! And for every commit, resets included: a commit without a topic id (or with the all-zero
//! "unknown" id) keeps the stored id — only a reset carrying another id replaces it. Dropping
//! an id would silently switch off the detection of a recreated topic for that partition.

use std::collections::HashMap;
use std::fmt;
use std::hash::BuildHasher;

use crate::model::{LeaderEpoch, Offset, Stored, TopicId, TopicPartition};
use crate::plan::{FromReason, Outcome, Plan};

/// A position to store for one partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Commit {
    /// The partition the position is for.
    pub tp: TopicPartition,
    /// The next offset to read.
    pub offset: Offset,
    /// The leader epoch of the log the records were read from; `None` when unknown.
    pub leader_epoch: Option<LeaderEpoch>,
    /// The id of the topic the records were read from; `None` when unknown (older brokers).
    pub topic_id: Option<TopicId>,
    /// An explicit reset: may move the stored offset backwards or replace another topic id's.
    pub reset: bool,
}

/// The commits for a processed plan: one per planned range, in plan order. Call it only after
/// the batch's output succeeded. Empty ranges are included (they re-confirm the position, and
/// for a reset they are the reset).
pub fn commits_for(plan: &Plan) -> Vec<Commit> {
    plan.entries
        .iter()
        .filter_map(|e| match &e.outcome {
            Outcome::Range(r) => Some(Commit {
                tp: e.tp.clone(),
                offset: r.until,
                leader_epoch: e.leader_epoch,
                topic_id: e.topic_id,
                reset: matches!(r.from_reason, FromReason::OutOfRange(_)),
            }),
            _ => None,
        })
        .collect()
}

/// What merging decided for one proposed commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommitDecision {
    /// Store this.
    Write(Stored),
    /// Nothing to write: the same offset (and id) is already stored.
    Unchanged,
    /// Refused; the stored position stays.
    Rejected(CommitRejection),
}

/// Why a commit was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommitRejection {
    /// The proposed offset is below the stored one and the commit is not a reset.
    Backwards {
        /// The offset stored now.
        stored: Offset,
        /// The offset the commit would store, below `stored`.
        proposed: Offset,
    },
    /// Stored and proposed topic ids differ and the commit is not a reset (a stale batch of an
    /// old topic, franz-go #1426, or a new topic whose first commit was not marked a reset).
    TopicIdChanged {
        /// The topic id stored now.
        stored: TopicId,
        /// The topic id the commit carries.
        proposed: TopicId,
    },
    /// The proposed leader epoch is below the stored one and the commit is not a reset: it
    /// comes from a stale leader's view or a log that diverged from the stored position's.
    LeaderEpochBackwards {
        /// The leader epoch stored now.
        stored: LeaderEpoch,
        /// The leader epoch the commit carries, below `stored`.
        proposed: LeaderEpoch,
    },
    /// A negative offset is never stored.
    NegativeOffset {
        /// The offset the commit would store, below 0.
        proposed: Offset,
    },
}

impl fmt::Display for CommitRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Backwards { stored, proposed } => {
                write!(f, "commit {proposed} would move stored offset {stored} backwards without a reset")
            }
            Self::TopicIdChanged { stored, proposed } => write!(
                f,
                "commit for topic id {proposed} would replace an offset of topic id {stored} \
                 without a reset"
            ),
            Self::LeaderEpochBackwards { stored, proposed } => write!(
                f,
                "commit with leader epoch {proposed} would move stored leader epoch {stored} \
                 backwards without a reset"
            ),
            Self::NegativeOffset { proposed } => write!(f, "commit offset {proposed} is negative"),
        }
    }
}

/// Decides one commit against what is stored. `now_ms` (milliseconds since the epoch, from the
/// caller) becomes the commit timestamp of a write. Unknown values on either side (a negative
/// leader epoch, the all-zero topic id) are `None`, never compared.
pub fn merge_commit(stored: Option<&Stored>, commit: &Commit, now_ms: i64) -> CommitDecision {
    if commit.offset.0 < 0 {
        return CommitDecision::Rejected(CommitRejection::NegativeOffset { proposed: commit.offset });
    }
    let proposed_id = TopicId::known(commit.topic_id);
    let proposed_epoch = LeaderEpoch::known(commit.leader_epoch);
    let written = |topic_id| {
        CommitDecision::Write(Stored {
            offset: commit.offset,
            leader_epoch: proposed_epoch,
            topic_id,
            commit_timestamp_ms: Some(now_ms),
        })
    };
    let Some(current) = stored.map(|s| s.normalized()) else {
        return written(proposed_id);
    };
    // Without an id the commit keeps the stored one: only a reset with another id replaces it.
    let topic_id = proposed_id.or(current.topic_id);
    if commit.reset {
        // An explicit reset may move the offset and the epoch backwards and change the id.
        return written(topic_id);
    }
    if let (Some(old), Some(new)) = (current.topic_id, proposed_id) {
        if old != new {
            return CommitDecision::Rejected(CommitRejection::TopicIdChanged { stored: old, proposed: new });
        }
    }
    if commit.offset < current.offset {
        return CommitDecision::Rejected(CommitRejection::Backwards {
            stored: current.offset,
            proposed: commit.offset,
        });
    }
    if let (Some(old), Some(new)) = (current.leader_epoch, proposed_epoch) {
        if new < old {
            return CommitDecision::Rejected(CommitRejection::LeaderEpochBackwards {
                stored: old,
                proposed: new,
            });
        }
    }
    let same_epoch = proposed_epoch.is_none() || current.leader_epoch == proposed_epoch;
    if commit.offset == current.offset && topic_id == current.topic_id && same_epoch {
        CommitDecision::Unchanged
    } else {
        written(topic_id)
    }
}

/// Merges a batch of commits into the stored positions: one decision per commit, in order, and
/// the new stored map (unchanged for rejected commits and for partitions without a commit).
/// A partition committed twice in one call is decided against the result of the first.
pub fn merge_commits<S: BuildHasher + Clone>(
    stored: &HashMap<TopicPartition, Stored, S>,
    commits: &[Commit],
    now_ms: i64,
) -> (HashMap<TopicPartition, Stored, S>, Vec<CommitDecision>) {
    let mut next = stored.clone();
    let decisions = commits
        .iter()
        .map(|c| {
            let d = merge_commit(next.get(&c.tp), c, now_ms);
            if let CommitDecision::Write(s) = d {
                next.insert(c.tp.clone(), s);
            }
            d
        })
        .collect();
    (next, decisions)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(offset: i64, reset: bool) -> Commit {
        Commit {
            tp: TopicPartition::new("t", 0),
            offset: Offset(offset),
            leader_epoch: None,
            topic_id: None,
            reset,
        }
    }

    #[test]
    fn late_commit_of_an_older_batch_does_not_rewind() {
        let stored = Stored::at(500);
        assert_eq!(
            merge_commit(Some(&stored), &commit(400, false), 7),
            CommitDecision::Rejected(CommitRejection::Backwards {
                stored: Offset(500),
                proposed: Offset(400)
            })
        );
        assert_eq!(
            merge_commit(Some(&stored), &commit(400, true), 7),
            CommitDecision::Write(Stored { commit_timestamp_ms: Some(7), ..Stored::at(400) })
        );
        assert_eq!(merge_commit(Some(&stored), &commit(500, false), 7), CommitDecision::Unchanged);
        assert_eq!(
            merge_commit(None, &commit(-1, true), 7),
            CommitDecision::Rejected(CommitRejection::NegativeOffset { proposed: Offset(-1) })
        );
    }

    #[test]
    fn stale_commit_for_a_recreated_topic_is_refused() {
        let stored = Stored { topic_id: Some(TopicId([2; 16])), ..Stored::at(10) };
        let old_topic_commit = Commit { topic_id: Some(TopicId([1; 16])), ..commit(3_500, false) };
        assert_eq!(
            merge_commit(Some(&stored), &old_topic_commit, 0),
            CommitDecision::Rejected(CommitRejection::TopicIdChanged {
                stored: TopicId([2; 16]),
                proposed: TopicId([1; 16])
            })
        );
    }

    #[test]
    fn a_commit_without_an_id_keeps_the_stored_one() {
        let stored = Stored { topic_id: Some(TopicId([1; 16])), ..Stored::at(10) };
        let CommitDecision::Write(next) = merge_commit(Some(&stored), &commit(11, false), 3) else {
            panic!("a forward commit is written");
        };
        assert_eq!(next.topic_id, Some(TopicId([1; 16])));
        // The all-zero id is "unknown", the same as none.
        let zero = Commit { topic_id: Some(TopicId([0; 16])), ..commit(12, false) };
        let CommitDecision::Write(next) = merge_commit(Some(&stored), &zero, 3) else {
            panic!("a forward commit is written");
        };
        assert_eq!(next.topic_id, Some(TopicId([1; 16])));
        // A reset without an id keeps it too; a reset with another id replaces it.
        let CommitDecision::Write(next) = merge_commit(Some(&stored), &commit(5, true), 3) else {
            panic!("a reset is written");
        };
        assert_eq!((next.offset, next.topic_id), (Offset(5), Some(TopicId([1; 16]))));
        let other = Commit { topic_id: Some(TopicId([2; 16])), ..commit(5, true) };
        let CommitDecision::Write(next) = merge_commit(Some(&stored), &other, 3) else {
            panic!("a reset is written");
        };
        assert_eq!(next.topic_id, Some(TopicId([2; 16])));
    }

    #[test]
    fn a_leader_epoch_going_backwards_is_refused_unless_a_reset() {
        let stored = Stored { leader_epoch: Some(LeaderEpoch(7)), ..Stored::at(10) };
        let back = Commit { leader_epoch: Some(LeaderEpoch(3)), ..commit(11, false) };
        assert_eq!(
            merge_commit(Some(&stored), &back, 0),
            CommitDecision::Rejected(CommitRejection::LeaderEpochBackwards {
                stored: LeaderEpoch(7),
                proposed: LeaderEpoch(3)
            })
        );
        assert!(matches!(
            merge_commit(Some(&stored), &Commit { reset: true, ..back.clone() }, 0),
            CommitDecision::Write(_)
        ));
        // -1 is "no epoch": not backwards, and never stored.
        let unknown = Commit { leader_epoch: Some(LeaderEpoch(-1)), ..commit(12, false) };
        let CommitDecision::Write(next) = merge_commit(Some(&stored), &unknown, 0) else {
            panic!("a forward commit without an epoch is written");
        };
        assert_eq!(next.leader_epoch, None);
        let same_offset = Commit { leader_epoch: Some(LeaderEpoch(8)), ..commit(10, false) };
        assert!(matches!(merge_commit(Some(&stored), &same_offset, 0), CommitDecision::Write(_)));
    }

    #[test]
    fn merging_decides_repeated_partitions_in_order() {
        let (next, decisions) =
            merge_commits(&HashMap::new(), &[commit(10, false), commit(5, false), commit(20, false)], 1);
        assert!(matches!(decisions[0], CommitDecision::Write(_)));
        assert!(matches!(decisions[1], CommitDecision::Rejected(_)));
        assert_eq!(next[&TopicPartition::new("t", 0)].offset, Offset(20));
    }
}
