//! The Kafka consumer-group store: OffsetFetch / OffsetCommit on the group's coordinator as a
//! non-member (generation −1), the way Spark executors and the "simple consumer" commit. No
//! membership, so no rebalance can fence a commit (seed 003).
//!
//! Kafka keeps the leader epoch with a committed offset (OffsetCommit v6+) but not the topic id,
//! so this store writes the topic id into the commit's metadata string as
//! `kwire:topic_id=<22 characters>`; offsets committed by other tools (any other metadata) load
//! without a topic id.
//!
//! A save refuses a group with active members unless built with [`KafkaGroupStore::force`]
//! (kafka-consumer-groups' rule), and reads the offsets back after committing unless
//! [`KafkaGroupStore::verify`] is turned off.

use std::sync::Arc;
use std::time::Duration;

use kafka_client::{Client, ClientError, CommittedOffset, GroupType, OffsetToCommit, TopicPartition};
use offset_store::{
    check_read_back, topics_of, validate_batch, BoxError, OffsetStore, RefusedPartition, StoreError,
    StoreFuture, StoredOffset,
};

pub use kafka_client::{topic_id_from_metadata, topic_id_metadata, TOPIC_ID_METADATA_PREFIX};

/// A group's offsets in Kafka's own store (`__consumer_offsets`).
#[derive(Debug, Clone)]
pub struct KafkaGroupStore {
    client: Arc<Client>,
    timeout: Duration,
    force: bool,
    verify: bool,
}

impl KafkaGroupStore {
    /// `timeout` bounds each coordinator call (lookup and retries included).
    pub fn new(client: Arc<Client>, timeout: Duration) -> Self {
        Self { client, timeout, force: false, verify: true }
    }

    /// Write even when the group has active members (their next commit may overwrite ours).
    #[must_use]
    pub fn force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }

    /// Read the offsets back after every save and fail on a mismatch (default on).
    #[must_use]
    pub fn verify(mut self, verify: bool) -> Self {
        self.verify = verify;
        self
    }

    /// The client the store commits and fetches through.
    pub fn client(&self) -> &Arc<Client> {
        &self.client
    }

    async fn load_all(
        &self,
        group: &str,
        topics: Option<&[String]>,
    ) -> Result<Vec<StoredOffset>, StoreError> {
        // Asking for every topic (not the named ones) keeps a deleted topic from failing the
        // call: its offsets are still stored, and the caller decides what they mean.
        let committed =
            self.client.committed_offsets(group, None, self.timeout).await.map_err(kafka_error)?;
        let wanted = |tp: &TopicPartition| topics.is_none_or(|t| t.iter().any(|name| **name == *tp.topic));
        let loaded: Vec<StoredOffset> = committed
            .offsets
            .iter()
            .filter(|(tp, _)| wanted(tp))
            .map(|(tp, c)| stored_offset(tp, c))
            .collect();
        // Only named topics can be refused whole, and none are named above.
        if let Some((_, e)) = committed.refused_topics.into_iter().next() {
            return Err(kafka_error(e));
        }
        let refused: Vec<RefusedPartition> = committed
            .refused
            .into_iter()
            .filter(|(tp, _)| wanted(tp))
            .map(|(tp, e)| RefusedPartition {
                topic: tp.topic.to_string(),
                partition: tp.partition,
                reason: Box::new(e),
            })
            .collect();
        if refused.is_empty() {
            Ok(loaded)
        } else {
            Err(StoreError::PartlyRead { store: "kafka", loaded, refused })
        }
    }
}

fn stored_offset(tp: &TopicPartition, c: &CommittedOffset) -> StoredOffset {
    StoredOffset {
        topic: tp.topic.to_string(),
        partition: tp.partition,
        offset: c.offset,
        leader_epoch: c.leader_epoch,
        topic_id: topic_id_from_metadata(c.metadata.as_deref()),
        commit_timestamp_ms: None,
    }
}

impl OffsetStore for KafkaGroupStore {
    fn kind(&self) -> &'static str {
        "kafka"
    }

    fn load<'a>(
        &'a self,
        group: &'a str,
        topics: Option<&'a [String]>,
    ) -> StoreFuture<'a, Vec<StoredOffset>> {
        Box::pin(self.load_all(group, topics))
    }

    fn save<'a>(&'a self, group: &'a str, offsets: &'a [StoredOffset]) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            validate_batch("kafka", offsets)?;
            if offsets.is_empty() {
                return Ok(());
            }
            // The group's real state and type first, whatever `force` says: forcing may write
            // over active members, never into a group OffsetCommit cannot move. A describe that
            // fails stops the write unless forced.
            let description = match self.client.describe_group(group, self.timeout).await {
                Ok(d) => Some(d),
                Err(_) if self.force => None,
                Err(e) => return Err(kafka_error(e)),
            };
            if let Some(d) = description.as_ref().filter(|d| d.group_type == GroupType::Share) {
                return Err(StoreError::GroupTypeNotWritable {
                    group: group.to_owned(),
                    group_type: d.group_type.as_str().to_owned(),
                    detail: format!(
                        "its positions are share-partition start offsets (KIP-932, state {}, {} member(s)), \
                         which OffsetCommit cannot move; kwire does not alter share group offsets \
                         (kafka-share-groups --reset-offsets does, while the group is empty)",
                        d.state,
                        d.members.len()
                    ),
                });
            }
            if let Some(description) = description.filter(|_| !self.force) {
                if !description.is_inactive() {
                    return Err(StoreError::GroupActive {
                        group: group.to_owned(),
                        // Both protocols have a `Stable`: say which one the members are on.
                        state: format!("{}, {} protocol", description.state, description.group_type.as_str()),
                        members: description.members.len(),
                    });
                }
            }
            let to_commit: Vec<OffsetToCommit> = offsets
                .iter()
                .map(|o| OffsetToCommit {
                    tp: TopicPartition::new(o.topic.clone(), o.partition),
                    offset: o.offset,
                    leader_epoch: o.leader_epoch,
                    metadata: topic_id_metadata(o.topic_id),
                })
                .collect();
            let results =
                self.client.commit_offsets(group, &to_commit, self.timeout).await.map_err(kafka_error)?;
            let outcome = CommitOutcome::of(to_commit.iter().map(|o| &o.tp), results)?;
            // What the coordinator took is read back even when it refused the rest.
            let offsets: Vec<&StoredOffset> = offsets
                .iter()
                .filter(|o| outcome.written.iter().any(|(t, p)| *t == o.topic && *p == o.partition))
                .collect();
            if self.verify {
                let now = self.load_all(group, Some(&topics_of(offsets.iter().copied()))).await?;
                check_read_back("kafka", offsets.iter().copied(), &now)?;
            }
            outcome.into_result()
        })
    }
}

/// What the coordinator did with an OffsetCommit, in a store's terms (the Kafka store's, and
/// kwire-stream's member commits): the partitions it wrote and those it refused, each with its
/// reason. A partition asked for that the answer leaves out counts as refused.
#[derive(Debug)]
pub struct CommitOutcome {
    /// The partitions written, as (topic, partition).
    pub written: Vec<(String, i32)>,
    /// The partitions refused.
    pub refused: Vec<RefusedPartition>,
}

impl CommitOutcome {
    /// The outcome of committing `asked` from the coordinator's per-partition `results`; a
    /// [`StoreError::CommitRefused`] naming the first refusal when nothing was written.
    pub fn of<'a>(
        asked: impl IntoIterator<Item = &'a TopicPartition>,
        mut results: kafka_client::PartitionResults<()>,
    ) -> Result<Self, StoreError> {
        let mut written = Vec::new();
        let mut refused = Vec::new();
        for tp in asked {
            match results.remove(tp) {
                Some(Ok(())) => written.push((tp.topic.to_string(), tp.partition)),
                Some(Err(source)) => refused.push((tp, source.is_retriable(), Box::new(source) as BoxError)),
                None => refused.push((tp, false, "the coordinator did not answer for it".into())),
            }
        }
        if written.is_empty() && !refused.is_empty() {
            let (tp, retriable, source) = refused.swap_remove(0);
            return Err(StoreError::CommitRefused {
                store: "kafka",
                topic: tp.topic.to_string(),
                partition: tp.partition,
                retriable,
                source,
            });
        }
        let refused = refused
            .into_iter()
            .map(|(tp, _, reason)| RefusedPartition {
                topic: tp.topic.to_string(),
                partition: tp.partition,
                reason,
            })
            .collect();
        Ok(Self { written, refused })
    }

    /// `Ok` when everything was written, else [`StoreError::PartlyWritten`].
    pub fn into_result(self) -> Result<(), StoreError> {
        if self.refused.is_empty() {
            Ok(())
        } else {
            Err(StoreError::PartlyWritten { store: "kafka", written: self.written, refused: self.refused })
        }
    }
}

/// A client failure in the interface's terms: a name Kafka cannot take is the caller's
/// mistake (`Invalid`); anything else is the cluster (`Backend`), retriable as the client says.
fn kafka_error(e: ClientError) -> StoreError {
    match e {
        ClientError::InvalidName(name) => StoreError::Invalid { store: "kafka", message: name.to_string() },
        e => StoreError::Backend { store: "kafka", retriable: e.is_retriable(), source: Box::new(e) },
    }
}
