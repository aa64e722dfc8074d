//! The unit the store reads and writes.

/// One partition's stored position.
///
/// `offset` is the next offset to read (Kafka's convention: a consumer that processed up to and
/// including offset 41 stores 42). `leader_epoch` and `topic_id` are what the old ZooKeeper
/// layout cannot hold; kwire keeps them in its side node and returns them only while they still
/// describe `offset` (an old writer moving the offset makes them stale, and they are dropped).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StoredOffset {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// Next offset to read, `>= 0`.
    pub offset: i64,
    /// The leader epoch of the last record processed, if known.
    pub leader_epoch: Option<i32>,
    /// The topic's id (KIP-516) when the offset was stored, if known: tells a recreated topic
    /// from the one the offset belongs to.
    pub topic_id: Option<[u8; 16]>,
}

impl StoredOffset {
    /// A bare offset, as old writers store it.
    pub fn new(topic: impl Into<String>, partition: i32, offset: i64) -> StoredOffset {
        StoredOffset { topic: topic.into(), partition, offset, leader_epoch: None, topic_id: None }
    }

    #[must_use]
    /// With the leader epoch of the last record before the offset.
    pub fn with_leader_epoch(mut self, leader_epoch: i32) -> StoredOffset {
        self.leader_epoch = Some(leader_epoch);
        self
    }

    #[must_use]
    /// With the topic's id.
    pub fn with_topic_id(mut self, topic_id: [u8; 16]) -> StoredOffset {
        self.topic_id = Some(topic_id);
        self
    }
}
