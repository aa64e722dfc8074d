//! What a fetch returns: records, each a slice of the response (or of its batch's decompressed
//! buffer), and a partition's records with its log bounds.

use bytes::Bytes;
use kafka_wire::protocol::records::{BatchHeader, Header, RecordView, TimestampType};

/// One record as fetched. Key, value and header values are slices of the response buffer
/// (or of one decompressed buffer per batch): nothing is copied per record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedRecord {
    /// The record's offset in its partition.
    pub offset: i64,
    /// Milliseconds since the epoch; `None` for magic-0 messages, which have none.
    pub timestamp: Option<i64>,
    /// Whether `timestamp` was set by the producer (create time) or by the broker (log append
    /// time).
    pub timestamp_type: TimestampType,
    /// The record key; `None` for a null key (distinct from an empty one).
    pub key: Option<Bytes>,
    /// The record value; `None` for a null value (a tombstone on a compacted topic).
    pub value: Option<Bytes>,
    /// The record headers in the order they were written (always empty for legacy messages).
    pub headers: Vec<Header>,
    /// The leader epoch stamped on the record's batch (`None` for legacy messages).
    pub leader_epoch: Option<i32>,
}

impl FetchedRecord {
    /// The record `record` of the magic-2 batch `header`, its key, value and header values
    /// slices of `owner` (the buffer the view reads).
    pub(super) fn of_batch(header: &BatchHeader, record: RecordView<'_>, owner: &Bytes) -> Self {
        let (offset, timestamp) = (header.offset_of(&record), header.timestamp_of(&record));
        let leader_epoch = (header.partition_leader_epoch >= 0).then_some(header.partition_leader_epoch);
        let record = record.to_record_in(owner);
        Self {
            offset,
            timestamp: Some(timestamp),
            timestamp_type: header.attributes.timestamp_type,
            key: record.key,
            value: record.value,
            headers: record.headers,
            leader_epoch,
        }
    }
}

/// One partition's records, and its log bounds as the last response reported them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedPartition {
    /// In offset order, all within the requested range.
    pub records: Vec<FetchedRecord>,
    /// Where reading stopped: `until`, or below it when the log ended first (the high
    /// watermark, or the last stable offset for read_committed).
    pub next_offset: i64,
    /// The log start offset, the first offset still in the log (Fetch v5+; `None` on older
    /// brokers).
    pub log_start: Option<i64>,
    /// The high watermark: one past the last offset replicated to all in-sync replicas
    /// (exclusive). `-1` when no response for this partition arrived (an empty range).
    pub high_watermark: i64,
    /// The last stable offset: below it no transaction is still open (Fetch v4+; `None` on older
    /// brokers).
    pub last_stable: Option<i64>,
}
