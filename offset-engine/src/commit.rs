//! What to commit after a batch, and merging commits into stored positions without ever moving
//! one backwards by accident (rule R12).
//!
//! A plan's commit set is each planned range's `until` (the next offset to read) with the topic
//! id and leader epoch the plan saw. A commit for a partition whose start the out-of-range policy
//! moved (a recreated topic, a truncation, an offset ahead of the log) is marked as a reset:
//! those are the only commits allowed to move an offset backwards or onto another topic id,
//! because the caller's policy already chose to.

use std::collections::HashMap;
use std::fmt;
use std::hash::BuildHasher;

use crate::model::{LeaderEpoch, Offset, Stored, TopicId, TopicPartition};
use crate::plan::{FromReason, Outcome, Plan};

/// A position to store for one partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Commit {
    pub tp: TopicPartition,
    /// The next offset to read.
    pub offset: Offset,
    pub leader_epoch: Option<LeaderEpoch>,
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
    Backwards { stored: Offset, proposed: Offset },
    /// Stored and proposed topic ids differ and the commit is not a reset (a stale batch of an
    /// old topic, franz-go #1426, or a new topic whose first commit was not marked a reset).
    TopicIdChanged { stored: TopicId, proposed: TopicId },
    /// A negative offset is never stored.
    NegativeOffset { proposed: Offset },
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
            Self::NegativeOffset { proposed } => write!(f, "commit offset {proposed} is negative"),
        }
    }
}

/// Decides one commit against what is stored. `now_ms` (milliseconds since the epoch, from the
/// caller) becomes the commit timestamp of a write.
pub fn merge_commit(stored: Option<&Stored>, commit: &Commit, now_ms: i64) -> CommitDecision {
    if commit.offset.0 < 0 {
        return CommitDecision::Rejected(CommitRejection::NegativeOffset { proposed: commit.offset });
    }
    let write = CommitDecision::Write(Stored {
        offset: commit.offset,
        leader_epoch: commit.leader_epoch,
        topic_id: commit.topic_id,
        commit_timestamp_ms: Some(now_ms),
    });
    let Some(current) = stored else {
        return write;
    };
    if commit.reset {
        return write;
    }
    if let (Some(old), Some(new)) = (current.topic_id, commit.topic_id) {
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
    let same_id = commit.topic_id.is_none() || current.topic_id == commit.topic_id;
    let same_epoch = commit.leader_epoch.is_none() || current.leader_epoch == commit.leader_epoch;
    if commit.offset == current.offset && same_id && same_epoch {
        CommitDecision::Unchanged
    } else {
        write
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
    fn merging_decides_repeated_partitions_in_order() {
        let (next, decisions) =
            merge_commits(&HashMap::new(), &[commit(10, false), commit(5, false), commit(20, false)], 1);
        assert!(matches!(decisions[0], CommitDecision::Write(_)));
        assert!(matches!(decisions[1], CommitDecision::Rejected(_)));
        assert_eq!(next[&TopicPartition::new("t", 0)].offset, Offset(20));
    }
}
