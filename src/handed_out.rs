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

    /// Before `partitions` are revoked: commit what was handed out of them.
    pub fn commit_revoked(&self, partitions: &[TopicPartition], commits: &mut RevokeCommits) {
        let handed = self.lock();
        for tp in partitions {
            if let Some(offset) = handed.get(tp) {
                commits.commit(tp.clone(), *offset);
            }
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
