//! One partition's stored position, the same in every store.

use kafka_wire::protocol::Uuid;

/// One partition's stored position. `offset` is the next offset to read (Kafka's convention).
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// When the offset was stored, in milliseconds since the epoch.
    pub commit_timestamp_ms: Option<i64>,
}
