//! The unit the store reads and writes: the shared [`StoredOffset`].
//!
//! `offset` is the next offset to read. `leader_epoch` and `topic_id` are what the old ZooKeeper
//! layout cannot hold; kwire keeps them in its side node and returns them only while they still
//! describe `offset` (an old writer moving the offset makes them stale, and they are dropped).
//! ZooKeeper keeps no commit time: `commit_timestamp_ms` is read as `None` and not written.

pub use kafka_vocab::StoredOffset;
