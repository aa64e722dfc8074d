//! One partition's stored position, the same in every offset store.

use crate::{TopicPartition, Uuid};

/// One partition's stored position: what a Kafka group, a ZooKeeper node, a JSON file or a
/// checkpoint holds for it.
///
/// `offset` is the next offset to read (Kafka's convention: a consumer that processed up to and
/// including offset 41 stores 42). The optional fields are what a modern store keeps
/// alongside: without `topic_id` a recreated topic cannot be told from a truncated one, without
/// `leader_epoch` a truncation cannot be detected.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StoredOffset {
    /// The topic's name.
    pub topic: String,
    /// The partition's index within the topic.
    pub partition: i32,
    /// The next offset to read: everything below it has been processed.
    pub offset: i64,
    /// The leader epoch of the last record before `offset`, when known.
    pub leader_epoch: Option<i32>,
    /// The topic's id when the offset was stored, so a recreated topic is recognised.
    pub topic_id: Option<Uuid>,
    /// When the offset was stored, in milliseconds since the Unix epoch.
    pub commit_timestamp_ms: Option<i64>,
}

impl StoredOffset {
    /// A bare offset, as old writers (ZooKeeper, files) store it.
    pub fn new(topic: impl Into<String>, partition: i32, offset: i64) -> StoredOffset {
        StoredOffset {
            topic: topic.into(),
            partition,
            offset,
            leader_epoch: None,
            topic_id: None,
            commit_timestamp_ms: None,
        }
    }

    /// With the leader epoch of the last record before the offset.
    #[must_use]
    pub fn with_leader_epoch(mut self, leader_epoch: i32) -> StoredOffset {
        self.leader_epoch = Some(leader_epoch);
        self
    }

    /// With the topic's id (a [`Uuid`] or its 16 bytes).
    #[must_use]
    pub fn with_topic_id(mut self, topic_id: impl Into<Uuid>) -> StoredOffset {
        self.topic_id = Some(topic_id.into());
        self
    }

    /// The partition this position belongs to.
    pub fn topic_partition(&self) -> TopicPartition {
        TopicPartition::new(self.topic.as_str(), self.partition)
    }
}
