//! [`Deliveries`]: the results of records sent together ([`Producer::send_all`]), kept as
//! runs of consecutive records in one batch — one shared handle per run instead of one per
//! record. A bulk load holds a few runs per batch however small its records are.
//!
//! [`Producer::send_all`]: crate::Producer::send_all

use std::collections::VecDeque;
use std::sync::Arc;

use crate::cluster::router::TopicPartition;
use crate::error::ClientError;
use crate::producer::accumulator::BatchOutcome;
use crate::producer::produce::Produced;

/// Where a record was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordMetadata {
    /// The partition it went to.
    pub partition: TopicPartition,
    /// Its offset; `None` with acks=0, and when the broker recognised a resent batch it
    /// already had without saying where (DUPLICATE_SEQUENCE_NUMBER).
    pub offset: Option<i64>,
    /// The broker's append time for a LogAppendTime topic (ms since the epoch).
    pub log_append_time: Option<i64>,
}

/// The pending result of one [`Producer::send`](crate::Producer::send): [`wait`](Self::wait) for it, or poll it with
/// [`try_result`](Self::try_result). Dropping it does not cancel the record.
#[derive(Debug, Clone)]
pub struct DeliveryFuture {
    pub(crate) partition: TopicPartition,
    pub(crate) outcome: Arc<BatchOutcome>,
    pub(crate) index: i32,
}

impl DeliveryFuture {
    /// The partition the record was put on.
    pub fn partition(&self) -> &TopicPartition {
        &self.partition
    }

    /// Whether `other` went into the same batch as this record: then both have the same
    /// result (only the offsets differ), and one of them is enough to learn whether both were
    /// written.
    pub fn same_batch(&self, other: &DeliveryFuture) -> bool {
        Arc::ptr_eq(&self.outcome, &other.outcome)
    }

    /// The result, when the record's batch is done.
    pub fn try_result(&self) -> Option<Result<RecordMetadata, ClientError>> {
        let result = self.outcome.result.get()?;
        Some(RecordMetadata::of(&self.partition, result, self.index))
    }

    /// Waits for the record's result.
    pub async fn wait(self) -> Result<RecordMetadata, ClientError> {
        RecordMetadata::of(&self.partition, self.outcome.finished().await, self.index)
    }
}

impl RecordMetadata {
    /// Where record `index` of a batch of `partition` went, from the batch's `result`.
    pub(crate) fn of(
        partition: &TopicPartition,
        result: &Result<Produced, ClientError>,
        index: i32,
    ) -> Result<Self, ClientError> {
        match result {
            Ok(produced) => Ok(Self {
                partition: partition.clone(),
                offset: produced.base_offset.filter(|o| *o >= 0).map(|o| o + i64::from(index)),
                log_append_time: produced.log_append_time,
            }),
            Err(e) => Err(e.clone()),
        }
    }
}

/// The results of records sent, in send order; see the module documentation.
#[derive(Debug, Clone, Default)]
pub struct Deliveries {
    runs: VecDeque<Run>,
    records: usize,
}

/// Records `first .. first + count` (indexes within their batch) of one batch.
#[derive(Debug, Clone)]
struct Run {
    partition: TopicPartition,
    outcome: Arc<BatchOutcome>,
    first: i32,
    count: i32,
}

impl Run {
    fn result(&self) -> Option<&Result<Produced, ClientError>> {
        self.outcome.result.get()
    }
}

impl Deliveries {
    /// Records held (sent and not taken out by [`take_finished`](Self::take_finished)).
    pub fn len(&self) -> usize {
        self.records
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// The partition of the oldest record held: after [`take_finished`](Self::take_finished)
    /// failed, the failed batch's.
    pub fn front_partition(&self) -> Option<&TopicPartition> {
        self.runs.front().map(|run| &run.partition)
    }

    /// Adds the record at `index` of the batch behind `outcome`, sent after every record held.
    pub(crate) fn push(&mut self, partition: &TopicPartition, outcome: &Arc<BatchOutcome>, index: i32) {
        self.records += 1;
        if let Some(last) = self.runs.back_mut() {
            if Arc::ptr_eq(&last.outcome, outcome) && last.first + last.count == index {
                last.count += 1;
                return;
            }
        }
        self.runs.push_back(Run {
            partition: partition.clone(),
            outcome: Arc::clone(outcome),
            first: index,
            count: 1,
        });
    }

    /// Adds one record's handle, sent after every record held.
    pub fn push_future(&mut self, delivery: &DeliveryFuture) {
        self.push(&delivery.partition, &delivery.outcome, delivery.index);
    }

    /// Drops the records at the front whose batches are written, oldest first, stopping at
    /// the first not done yet; returns how many went. A failed batch stops it with its error
    /// (its records stay held; those before it went).
    pub fn take_finished(&mut self) -> Result<usize, ClientError> {
        let mut taken = 0;
        while let Some(run) = self.runs.front() {
            match run.result() {
                None => break,
                Some(Err(e)) => return Err(e.clone()),
                Some(Ok(_)) => {
                    let count = usize::try_from(run.count).unwrap_or(0);
                    taken += count;
                    self.records -= count;
                    self.runs.pop_front();
                }
            }
        }
        Ok(taken)
    }

    /// Waits until every record held is written (or one of their batches failed: its error,
    /// the first in send order).
    pub async fn wait(&self) -> Result<(), ClientError> {
        for run in &self.runs {
            if let Err(e) = run.outcome.finished().await {
                return Err(e.clone());
            }
        }
        Ok(())
    }

    /// Each record's handle, in send order (for its offset: [`DeliveryFuture::wait`]).
    pub fn into_futures(self) -> impl Iterator<Item = DeliveryFuture> {
        self.runs.into_iter().flat_map(|run| {
            (run.first..run.first + run.count).map(move |index| DeliveryFuture {
                partition: run.partition.clone(),
                outcome: Arc::clone(&run.outcome),
                index,
            })
        })
    }

    /// Where each record held was written, in send order, once every batch is done; `None`
    /// while any is not.
    pub fn try_metadata(&self) -> Option<Result<Vec<RecordMetadata>, ClientError>> {
        let mut all = Vec::with_capacity(self.records);
        for run in &self.runs {
            let result = run.result()?;
            for index in run.first..run.first + run.count {
                match RecordMetadata::of(&run.partition, result, index) {
                    Ok(metadata) => all.push(metadata),
                    Err(e) => return Some(Err(e)),
                }
            }
        }
        Some(Ok(all))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::producer::produce::Produced;

    fn written(base_offset: Option<i64>, log_append_time: Option<i64>) -> Produced {
        Produced { base_offset, log_append_time, ..Produced::default() }
    }

    fn tp(partition: i32) -> TopicPartition {
        TopicPartition::new("t", partition)
    }

    #[test]
    fn consecutive_records_of_one_batch_share_a_run_and_a_new_batch_starts_one() {
        let (a, b) = (Arc::new(BatchOutcome::default()), Arc::new(BatchOutcome::default()));
        let mut d = Deliveries::default();
        for index in 0..3 {
            d.push(&tp(0), &a, index);
        }
        d.push(&tp(1), &b, 0);
        d.push(&tp(0), &a, 3);
        assert_eq!(d.len(), 5);
        assert_eq!(d.runs.len(), 3, "the record after another batch's starts a run of its own");
        let indexes: Vec<(i32, i32)> =
            d.clone().into_futures().map(|f| (f.partition.partition, f.index)).collect();
        assert_eq!(indexes, [(0, 0), (0, 1), (0, 2), (1, 0), (0, 3)]);
    }

    #[test]
    fn finished_runs_leave_from_the_front_and_a_failed_one_stops_with_its_error() {
        let (a, b, c) = (
            Arc::new(BatchOutcome::default()),
            Arc::new(BatchOutcome::default()),
            Arc::new(BatchOutcome::default()),
        );
        let mut d = Deliveries::default();
        d.push(&tp(0), &a, 0);
        d.push(&tp(0), &a, 1);
        d.push(&tp(1), &b, 0);
        d.push(&tp(2), &c, 0);
        b.complete(Ok(written(Some(7), None)));
        assert_eq!(d.take_finished().unwrap(), 0, "the oldest batch is not done: nothing leaves");
        assert!(d.try_metadata().is_none());
        a.complete(Ok(written(Some(40), None)));
        c.complete(Err(ClientError::InvalidArgument { message: "gone".into() }));
        assert!(matches!(d.try_metadata(), Some(Err(ClientError::InvalidArgument { .. }))));
        let err = d.take_finished().unwrap_err();
        assert!(err.to_string().contains("gone"), "{err}");
        assert_eq!(d.len(), 1, "the failed record stays");
        assert_eq!(d.front_partition(), Some(&tp(2)), "the failed batch is the oldest held");
    }

    #[test]
    fn metadata_gives_each_record_its_offset_in_send_order() {
        let (a, b) = (Arc::new(BatchOutcome::default()), Arc::new(BatchOutcome::default()));
        let mut d = Deliveries::default();
        d.push(&tp(0), &a, 0);
        d.push(&tp(0), &a, 1);
        d.push(&tp(1), &b, 0);
        a.complete(Ok(written(Some(40), None)));
        b.complete(Ok(written(Some(7), Some(5))));
        let all = d.try_metadata().unwrap().unwrap();
        let got: Vec<(i32, Option<i64>, Option<i64>)> =
            all.iter().map(|m| (m.partition.partition, m.offset, m.log_append_time)).collect();
        assert_eq!(got, [(0, Some(40), None), (0, Some(41), None), (1, Some(7), Some(5))]);
    }

    #[tokio::test]
    async fn wait_returns_once_every_batch_is_written() {
        let a = Arc::new(BatchOutcome::default());
        let mut d = Deliveries::default();
        d.push(&tp(0), &a, 0);
        let done = Arc::clone(&a);
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            done.complete(Ok(written(Some(1), None)));
        });
        d.wait().await.unwrap();
        assert_eq!(d.take_finished().unwrap(), 1);
        assert!(d.is_empty());
    }
}
