//! The benchmark inputs, built with kwire's types, shared by `codec.rs` (kwire vs its Rust
//! peers) and `schema.rs` (the schema interpreter vs the typed codec): a Metadata response of
//! 3 brokers × 1,000 topics × 10 partitions, a ListOffsets response of 10,000 partitions, and a
//! ~1 MiB record batch of 8,738 records.

use bytes::Bytes;
use kafka_wire::protocol::messages::metadata::AUTHORIZED_OPERATIONS_OMITTED;
use kafka_wire::protocol::messages::{
    ListOffsetsPartitionResponse, ListOffsetsResponse, ListOffsetsTopicResponse, MetadataBroker,
    MetadataPartition, MetadataResponse, MetadataTopic,
};
use kafka_wire::protocol::records::{Compression, Record, RecordBatch};
use kafka_wire::protocol::{BrokerIds, ErrorCode, TaggedFields, Uuid};

pub const BROKERS: i32 = 3;
pub const METADATA_TOPICS: usize = 1_000;
pub const METADATA_PARTITIONS: i32 = 10;
pub const OFFSETS_TOPICS: usize = 100;
pub const OFFSETS_PARTITIONS: i32 = 100;
pub const RECORDS: usize = 8_738;

pub fn topic_name(t: usize) -> String {
    format!("events.tenant-{t:04}")
}

pub fn topic_id(t: usize) -> Uuid {
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&(0x6b77_6972_6500_0000_u64 + t as u64).to_be_bytes());
    id[8..].copy_from_slice(&(t as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
    Uuid(id)
}

pub fn metadata(version: i16) -> MetadataResponse {
    let brokers = (0..BROKERS)
        .map(|i| MetadataBroker {
            node_id: i,
            host: format!("broker-{i}.kafka.internal"),
            port: 9092,
            rack: Some(format!("rack-{i}")),
            tagged_fields: TaggedFields::default(),
        })
        .collect();
    let topics = (0..METADATA_TOPICS)
        .map(|t| MetadataTopic {
            error_code: ErrorCode(0),
            name: Some(topic_name(t)),
            topic_id: (version >= 10).then(|| topic_id(t)),
            is_internal: Some(false),
            partitions: (0..METADATA_PARTITIONS)
                .map(|p| {
                    let leader = (t as i32 + p) % BROKERS;
                    let replicas: Vec<i32> = (0..BROKERS).map(|r| (leader + r) % BROKERS).collect();
                    MetadataPartition {
                        error_code: ErrorCode(0),
                        partition_index: p,
                        leader_id: leader,
                        leader_epoch: (version >= 7).then_some(5 + p),
                        isr_nodes: replicas.clone().into(),
                        replica_nodes: replicas.into(),
                        offline_replicas: (version >= 5).then(BrokerIds::new),
                        tagged_fields: TaggedFields::default(),
                    }
                })
                .collect(),
            topic_authorized_operations: (version >= 8).then_some(AUTHORIZED_OPERATIONS_OMITTED),
            tagged_fields: TaggedFields::default(),
        })
        .collect();
    MetadataResponse {
        throttle_time_ms: Some(0),
        brokers,
        cluster_id: Some("kwire-bench-cluster-0001".to_owned()),
        controller_id: Some(1),
        topics,
        cluster_authorized_operations: None,
        error_code: None,
        tagged_fields: TaggedFields::default(),
    }
}

pub fn offset_of(t: usize, p: i32) -> i64 {
    1_000_000 + (t as i64) * 7_919 + i64::from(p) * 104_729
}

pub fn list_offsets(version: i16) -> ListOffsetsResponse {
    ListOffsetsResponse {
        throttle_time_ms: Some(0),
        topics: (0..OFFSETS_TOPICS)
            .map(|t| ListOffsetsTopicResponse {
                name: topic_name(t),
                partitions: (0..OFFSETS_PARTITIONS)
                    .map(|p| ListOffsetsPartitionResponse {
                        partition_index: p,
                        error_code: ErrorCode(0),
                        old_style_offsets: None,
                        timestamp: Some(-1),
                        offset: Some(offset_of(t, p)),
                        leader_epoch: (version >= 4).then_some(7),
                        tagged_fields: TaggedFields::default(),
                    })
                    .collect(),
                tagged_fields: TaggedFields::default(),
            })
            .collect(),
        tagged_fields: TaggedFields::default(),
    }
}

pub const BASE_TIMESTAMP: i64 = 1_750_000_000_000;

/// 8,738 records of a 10-byte key and a 100-byte JSON-ish value: ~1 MiB uncompressed.
pub fn batch(compression: Compression) -> RecordBatch {
    let records = (0..RECORDS)
        .map(|i| {
            let key = format!("key-{i:06}");
            let mut value =
                format!(r#"{{"id":{i},"user":"u{:04}","event":"page_view","path":"/p/{}""#, i % 997, i % 89);
            while value.len() < 99 {
                value.push(' ');
            }
            value.push('}');
            assert_eq!((key.len(), value.len()), (10, 100));
            Record {
                attributes: 0,
                timestamp_delta: i as i64,
                offset_delta: i as i32,
                key: Some(Bytes::from(key)),
                value: Some(Bytes::from(value)),
                headers: Vec::new(),
            }
        })
        .collect();
    RecordBatch::new(0, BASE_TIMESTAMP, compression, records)
}
