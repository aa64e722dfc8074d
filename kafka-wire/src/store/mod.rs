//! Offset stores that live outside ZooKeeper: kwire's JSON file ([`file`]). The Kafka group
//! store is the client's [`committed_offsets`](crate::client::Client::committed_offsets) /
//! [`commit_offsets`](crate::client::Client::commit_offsets); the ZooKeeper store is the
//! `kwire-zk` crate.

pub mod file;

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
