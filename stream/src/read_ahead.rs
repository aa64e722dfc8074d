//! The batch after the one the application holds, read in a task of its own from the
//! positions that one will commit, and handed out only if exactly those were stored.

use std::collections::HashMap;

use offset_engine::{LeaderEpoch, Offset, Stored, TopicId, TopicPartition};
use tokio::task::JoinHandle;

use crate::batch::Batch;
use crate::driver::Planner;
use crate::error::StreamError;

/// What a stored position is compared by: the commit time is not part of it.
type Position = (Offset, Option<LeaderEpoch>, Option<TopicId>);

/// A batch being read ahead. Dropping it cancels the task (its fetches with it), so at most
/// one batch is ever read ahead of the one handed out.
#[derive(Debug)]
pub(crate) struct ReadAhead {
    /// The stored positions it was planned from.
    planned_from: HashMap<TopicPartition, Position>,
    /// The batch (or why it could not be read) and the planner's state after it.
    task: JoinHandle<(Result<Batch, StreamError>, Planner)>,
}

impl ReadAhead {
    /// Starts reading the batch `planner` plans from `assumed`, the stored positions merged
    /// with the commits of the batch just handed out. Needs a Tokio runtime.
    pub(crate) fn start(mut planner: Planner, assumed: HashMap<TopicPartition, Stored>) -> Self {
        let planned_from = positions(&assumed);
        let task = tokio::spawn(async move {
            let batch = planner.read_batch(&assumed).await;
            (batch, planner)
        });
        Self { planned_from, task }
    }

    /// The batch read ahead and the planner's state after it, when `stored` holds exactly the
    /// positions it was planned from; waits for it if it is still being read. `None` (it is
    /// thrown away) when the positions differ or reading it failed: the caller plans from
    /// `stored` as if nothing had been read ahead, and meets any lasting error itself.
    pub(crate) async fn take(mut self, stored: &HashMap<TopicPartition, Stored>) -> Option<(Batch, Planner)> {
        if positions(stored) != self.planned_from {
            return None;
        }
        match (&mut self.task).await {
            Ok((Ok(batch), after)) => Some((batch, after)),
            Ok((Err(_), _)) | Err(_) => None,
        }
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn positions(stored: &HashMap<TopicPartition, Stored>) -> HashMap<TopicPartition, Position> {
    stored.iter().map(|(tp, s)| (tp.clone(), (s.offset, s.leader_epoch, s.topic_id))).collect()
}
