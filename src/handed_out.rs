//! What a group member built on [`Consumer`] has handed on — printed by `kwire consume --group`,
//! returned to Python by `kwire.Consumer` — as the next offset of each partition after its last
//! handed-out record. A member that hands records on one at a time commits these positions,
//! never the consumer's own (which run ahead by the rest of the chunk poll returned): at every
//! interval, before a partition is revoked, and when it stops.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use kafka_client::{Consumer, RevokeCommits, TopicPartition};

/// Shared between the reading loop and its rebalance listener (which runs inside `poll`).
#[derive(Debug, Clone, Default)]
pub struct HandedOut(Arc<Mutex<BTreeMap<TopicPartition, i64>>>);

impl HandedOut {
    /// The record at `offset` of `partition` was handed on: commits now cover it.
    pub fn handed(&self, partition: &TopicPartition, offset: i64) {
        self.lock().insert(partition.clone(), offset + 1);
    }

    /// Before `partitions` are revoked: commit what was handed out of them, and forget it. A
    /// position kept past the revocation would be committed again if the partition came back,
    /// over the commits of the owners it had in between (their records read a third time).
    pub fn commit_revoked(&self, partitions: &[TopicPartition], commits: &mut RevokeCommits) {
        let mut handed = self.lock();
        for tp in partitions {
            if let Some(offset) = handed.remove(tp) {
                commits.commit(tp.clone(), offset);
            }
        }
    }

    /// `partitions` were assigned: nothing of them is handed out yet (they start at the group's
    /// commit, whatever this member handed out when it last owned them).
    pub fn started(&self, partitions: impl IntoIterator<Item = TopicPartition>) {
        let mut handed = self.lock();
        for tp in partitions {
            handed.remove(&tp);
        }
    }

    /// `partitions` were lost (fenced, or the session expired): nothing more is committed for
    /// them, whatever was handed out.
    pub fn forget(&self, partitions: &[TopicPartition]) {
        let mut handed = self.lock();
        for tp in partitions {
            handed.remove(tp);
        }
    }

    /// Commits the handed-out positions of the partitions `consumer` still owns. Returns one
    /// line per refusal or failure (none when everything was committed), for the caller to
    /// report.
    pub async fn commit(&self, consumer: &mut Consumer) -> Vec<String> {
        let owned = consumer.assignment();
        let offsets: Vec<(TopicPartition, i64)> =
            self.lock().iter().filter(|(tp, _)| owned.contains(tp)).map(|(tp, o)| (tp.clone(), *o)).collect();
        if offsets.is_empty() {
            return Vec::new();
        }
        match consumer.commit(&offsets).await {
            Ok(results) => results
                .into_iter()
                .filter_map(|(tp, result)| result.err().map(|e| format!("commit of {tp} failed: {e}")))
                .collect(),
            Err(e) => vec![format!("commit failed: {e}")],
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<TopicPartition, i64>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(partition: i32) -> TopicPartition {
        TopicPartition::new("t", partition)
    }

    fn revoke(handed: &HandedOut, partitions: &[TopicPartition]) -> Vec<(TopicPartition, i64)> {
        let mut commits = RevokeCommits::default();
        handed.commit_revoked(partitions, &mut commits);
        commits.offsets().to_vec()
    }

    #[test]
    fn a_revoked_partition_commits_its_handed_out_position_once() {
        let handed = HandedOut::default();
        handed.handed(&tp(1), 195);
        handed.handed(&tp(2), 7);
        assert_eq!(revoke(&handed, &[tp(1)]), [(tp(1), 196)]);
        // Back to this member and revoked again before it handed anything out: its old position
        // is not committed over the commits of the owners in between.
        assert_eq!(revoke(&handed, &[tp(1)]), []);
        assert_eq!(revoke(&handed, &[tp(2)]), [(tp(2), 8)]);
    }

    #[test]
    fn an_assigned_partition_starts_with_nothing_handed_out() {
        let handed = HandedOut::default();
        handed.handed(&tp(0), 41);
        handed.started([tp(0)]);
        assert_eq!(revoke(&handed, &[tp(0)]), []);
    }
}
