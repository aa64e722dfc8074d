//! Offset stores that live outside ZooKeeper: kwire's JSON file ([`file`]). The Kafka group
//! store is the client's [`committed_offsets`](crate::client::Client::committed_offsets) /
//! [`commit_offsets`](crate::client::Client::commit_offsets); the ZooKeeper store is the
//! `kwire-zk` crate.
//!
//! [`OffsetStore`] is the one interface over all three: the file store and the Kafka group store
//! ([`kafka::KafkaGroupStore`]) implement it here, the ZooKeeper store in `kwire-stream`.

pub mod file;
pub mod kafka;
pub mod offset_store;

pub use kafka::KafkaGroupStore;
pub use offset_store::{validate_batch, BoxError, OffsetStore, RefusedPartition, StoreError, StoreFuture};

use crate::protocol::Uuid;

/// One partition's stored position. `offset` is the next offset to read (Kafka's convention).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredOffset {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    /// The leader epoch of the last record before `offset`, when known.
    pub leader_epoch: Option<i32>,
    /// The topic's id when the offset was stored, so a recreated topic is recognised.
    pub topic_id: Option<Uuid>,
    /// When the offset was stored, in milliseconds since the epoch.
    pub commit_timestamp_ms: Option<i64>,
}
