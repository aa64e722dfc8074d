//! Exactly-once from Kafka to Kafka: a batch's output records and its input ranges committed in
//! one transaction of a transactional [`Producer`].
//!
//! The loop, per batch: `begin_transaction`, send the output records, then
//! [`DirectStream::commit_in_transaction`]: the batch's untils go to the transaction as the
//! group's offsets (TxnOffsetCommit, as a non-member, with the topic id in the metadata as the
//! Kafka store writes it) and the transaction commits. Output and offsets become visible
//! together or not at all, so a crash at any point leaves, for a read_committed reader, every
//! input record in the output once and the group's offsets at the end of what was output.
//!
//! Call `init_transactions` before the stream loads its offsets (before the first
//! `next_batch`): it aborts the transaction a crashed predecessor with the same transactional
//! id left open — its offsets included — so the positions loaded next are the committed ones.
//! The store must be the group's committed offsets in Kafka ([`KafkaGroupStore`]). A member
//! stream ([`DirectStream::join`]) sends them as the member (KIP-447), so that a zombie
//! member's transaction is fenced by the group's coordinator.

use kafka_client::{
    ClientError, ConsumerError, ConsumerGroupMetadata, OffsetToCommit, Producer,
    TopicPartition as ClientTopicPartition,
};
use kwire_stores::kafka::topic_id_metadata;
use kwire_stores::KafkaGroupStore;
use offset_engine::{merge_commits, CommitDecision};

use crate::batch::Batch;
use crate::driver::{CommitReport, DirectStream};
use crate::error::StreamError;

impl DirectStream<KafkaGroupStore> {
    /// Commits `batch`'s untils as the group's offsets in `producer`'s open transaction, then
    /// commits the transaction (with whatever the application sent in it). Positions are merged
    /// as [`commit`](DirectStream::commit) merges them (never backwards unless a policy reset).
    ///
    /// On failure the transaction is aborted when it can be (the output and offsets are then
    /// dropped together and the batch is read again), the stored positions are loaded again
    /// before the next batch, and the error is returned — [`StreamError::Cluster`] holding a
    /// [`ClientError::Transaction`]; a fenced producer must be closed.
    pub async fn commit_in_transaction(
        &mut self,
        batch: &Batch,
        producer: &Producer,
    ) -> Result<CommitReport, StreamError> {
        let stored = self.stored_now().await?;
        let (next, decisions) = merge_commits(&stored, batch.commits(), kafka_vocab::now_ms());
        let mut report = CommitReport::default();
        let mut offsets = Vec::new();
        for (c, d) in batch.commits().iter().zip(decisions) {
            match d {
                CommitDecision::Write(s) => {
                    let position = s.to_store(&c.tp);
                    offsets.push(OffsetToCommit {
                        tp: ClientTopicPartition::new(position.topic.as_str(), position.partition),
                        offset: position.offset,
                        leader_epoch: position.leader_epoch,
                        metadata: topic_id_metadata(position.topic_id),
                    });
                    report.written.push((c.tp.clone(), s));
                }
                CommitDecision::Unchanged => report.unchanged += 1,
                CommitDecision::Rejected(r) => report.rejected.push((c.tp.clone(), r)),
            }
        }
        // Member mode: the offsets go as this member's (KIP-447), so that the coordinator
        // fences a zombie's transaction; a partition no longer owned aborts the whole
        // transaction — its output would be written again by the partition's next owner.
        let group =
            match self.member().map(|m| m.membership().group_metadata_for(offsets.iter().map(|o| &o.tp))) {
                None => ConsumerGroupMetadata::non_member(&self.config().group),
                Some(Ok(member)) => member,
                Some(Err(refused)) => {
                    let _ = producer.abort_transaction().await;
                    self.set_stored(None);
                    return Err(match refused {
                        ConsumerError::NotOwned { partition, reason } => {
                            StreamError::NotOwned { tp: partition, reason }
                        }
                        other => StreamError::Membership(Box::new(other)),
                    });
                }
            };
        let committed = async {
            if !offsets.is_empty() {
                producer.send_offsets_to_transaction_of(&offsets, &group).await?;
            }
            producer.commit_transaction().await
        }
        .await;
        match committed {
            Ok(()) => {
                self.set_stored(Some(next));
                Ok(report)
            }
            Err(e) => {
                if matches!(&e, ClientError::Transaction(t) if t.is_abortable()) {
                    // The abort's own failure says nothing more than `e`; the next begin reports it.
                    let _ = producer.abort_transaction().await;
                }
                self.set_stored(None);
                Err(StreamError::Cluster(Box::new(e)))
            }
        }
    }
}
