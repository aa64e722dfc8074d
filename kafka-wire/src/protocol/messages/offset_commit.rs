//! OffsetCommit (key 8): store a group's offsets, through the group coordinator.
//!
//! v0 wrote to ZooKeeper on pre-4.0 brokers, v1+ to `__consumer_offsets`. A commit from outside
//! any group membership (a tool resetting offsets) sends generation −1 and an empty member id.
//! The committed offset is the *next* offset to consume, not the last one consumed.

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;

/// OffsetCommit's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::OFFSET_COMMIT,
    name: "OffsetCommit",
    versions: VersionRange::new(0, 9),
    flexible_from: Some(8),
};

kafka_message! {
    /// An OffsetCommit request (v0–v9).
    pub struct OffsetCommitRequest {
        /// The unique group identifier.
        group_id: String,
        /// Added in v1: the classic group's generation, or the KIP-848 member epoch (v9); −1 to
        /// commit without membership.
        [since 1] generation_id_or_member_epoch: Option<i32>,
        /// Added in v1; empty to commit without membership.
        [since 1] member_id: Option<String>,
        /// Added in v7 (nullable): the static member id.
        [nullable since 7] group_instance_id: Option<String>,
        /// v2–v4 only: how long the broker keeps the offsets in ms; −1 uses the broker's setting.
        [since 2 until 4] retention_time_ms: Option<i64>,
        /// The topics to commit offsets for.
        topics: Vec<OffsetCommitRequestTopic>,
    }
}

kafka_message! {
    /// An element of [`OffsetCommitRequest::topics`]: the topics to commit offsets for.
    pub struct OffsetCommitRequestTopic {
        /// The topic name.
        name: String,
        /// Each partition to commit offsets for.
        partitions: Vec<OffsetCommitRequestPartition>,
    }
}

kafka_message! {
    /// An element of [`OffsetCommitRequestTopic::partitions`]: each partition to commit offsets for.
    pub struct OffsetCommitRequestPartition {
        /// The partition index.
        partition_index: i32,
        /// The next offset to consume.
        committed_offset: i64,
        /// Added in v6: the leader epoch of the last consumed record, −1 if unknown.
        [since 6] committed_leader_epoch: Option<i32>,
        /// v1 only: the commit time in ms since the epoch; −1 lets the broker stamp it.
        [since 1 until 1] commit_timestamp: Option<i64>,
        /// Nullable.
        committed_metadata: Option<String>,
    }
}

impl Body for OffsetCommitRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.string(&self.group_id, "group_id")?;
        if version >= 1 {
            e.i32(self.generation_id_or_member_epoch.unwrap_or(-1));
            e.string(self.member_id.as_deref().unwrap_or_default(), "member_id")?;
        }
        if version >= 7 {
            e.nullable_string(self.group_instance_id.as_deref(), "group_instance_id")?;
        }
        if (2..=4).contains(&version) {
            e.i64(self.retention_time_ms.unwrap_or(-1));
        }
        e.array(&self.topics, "topics", |e, t| {
            e.string(&t.name, "topics.name")?;
            e.array(&t.partitions, "topics.partitions", |e, p| {
                e.i32(p.partition_index);
                e.i64(p.committed_offset);
                if version >= 6 {
                    e.i32(p.committed_leader_epoch.unwrap_or(-1));
                }
                if version == 1 {
                    e.i64(p.commit_timestamp.unwrap_or(-1));
                }
                e.nullable_string(p.committed_metadata.as_deref(), "topics.partitions.committed_metadata")?;
                e.tagged_fields(&p.tagged_fields, "topics.partitions.tagged_fields", version)
            })?;
            e.tagged_fields(&t.tagged_fields, "topics.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let group_id = d.string("group_id")?;
        let (generation_id_or_member_epoch, member_id) = if version >= 1 {
            (Some(d.i32("generation_id_or_member_epoch")?), Some(d.string("member_id")?))
        } else {
            (None, None)
        };
        let group_instance_id = if version >= 7 { d.nullable_string("group_instance_id")? } else { None };
        let retention_time_ms =
            if (2..=4).contains(&version) { Some(d.i64("retention_time_ms")?) } else { None };
        let topics = d.array("topics", 2, |d| {
            Ok(OffsetCommitRequestTopic {
                name: d.string("topics.name")?,
                partitions: d.array("topics.partitions", 13, |d| {
                    Ok(OffsetCommitRequestPartition {
                        partition_index: d.i32("topics.partitions.partition_index")?,
                        committed_offset: d.i64("topics.partitions.committed_offset")?,
                        committed_leader_epoch: if version >= 6 {
                            Some(d.i32("topics.partitions.committed_leader_epoch")?)
                        } else {
                            None
                        },
                        commit_timestamp: if version == 1 {
                            Some(d.i64("topics.partitions.commit_timestamp")?)
                        } else {
                            None
                        },
                        committed_metadata: d.nullable_string("topics.partitions.committed_metadata")?,
                        tagged_fields: d.tagged_fields("topics.partitions.tagged_fields")?,
                    })
                })?,
                tagged_fields: d.tagged_fields("topics.tagged_fields")?,
            })
        })?;
        Ok(Self {
            group_id,
            generation_id_or_member_epoch,
            member_id,
            group_instance_id,
            retention_time_ms,
            topics,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

impl Request for OffsetCommitRequest {
    type Response = OffsetCommitResponse;
}

kafka_message! {
    /// An OffsetCommit response (v0–v9).
    pub struct OffsetCommitResponse {
        /// Added in v3.
        [since 3] throttle_time_ms: Option<i32>,
        /// The responses for each topic.
        topics: Vec<OffsetCommitResponseTopic>,
    }
}

kafka_message! {
    /// An element of [`OffsetCommitResponse::topics`]: the responses for each topic.
    pub struct OffsetCommitResponseTopic {
        /// The topic name.
        name: String,
        /// The responses for each partition in the topic.
        partitions: Vec<OffsetCommitResponsePartition>,
    }
}

kafka_message! {
    /// An element of [`OffsetCommitResponseTopic::partitions`]: the responses for each partition in the topic.
    pub struct OffsetCommitResponsePartition {
        /// The partition index.
        partition_index: i32,
        /// The error code, or 0 if there was no error.
        error_code: ErrorCode,
    }
}

impl Body for OffsetCommitResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 3 {
            e.i32(self.throttle_time_ms.unwrap_or(0));
        }
        e.array(&self.topics, "topics", |e, t| {
            e.string(&t.name, "topics.name")?;
            e.array(&t.partitions, "topics.partitions", |e, p| {
                e.i32(p.partition_index);
                e.i16(p.error_code.0);
                e.tagged_fields(&p.tagged_fields, "topics.partitions.tagged_fields", version)
            })?;
            e.tagged_fields(&t.tagged_fields, "topics.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if version >= 3 { Some(d.i32("throttle_time_ms")?) } else { None };
        let topics = d.array("topics", 2, |d| {
            Ok(OffsetCommitResponseTopic {
                name: d.string("topics.name")?,
                partitions: d.array("topics.partitions", 6, |d| {
                    Ok(OffsetCommitResponsePartition {
                        partition_index: d.i32("topics.partitions.partition_index")?,
                        error_code: ErrorCode(d.i16("topics.partitions.error_code")?),
                        tagged_fields: d.tagged_fields("topics.partitions.tagged_fields")?,
                    })
                })?,
                tagged_fields: d.tagged_fields("topics.tagged_fields")?,
            })
        })?;
        Ok(Self { throttle_time_ms, topics, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{
        array, error_code, gated, nullable_string, round_trip_every_version, string, tagged,
    };

    fn request(v: i16) -> impl Strategy<Value = OffsetCommitRequest> {
        let flexible = v >= 8;
        let partition = (
            any::<i32>(),
            any::<i64>(),
            gated(v >= 6, any::<i32>()),
            gated(v == 1, any::<i64>()),
            nullable_string(),
            tagged(flexible),
        )
            .prop_map(
                |(
                    partition_index,
                    committed_offset,
                    committed_leader_epoch,
                    commit_timestamp,
                    committed_metadata,
                    tagged_fields,
                )| OffsetCommitRequestPartition {
                    partition_index,
                    committed_offset,
                    committed_leader_epoch,
                    commit_timestamp,
                    committed_metadata,
                    tagged_fields,
                },
            );
        let topic =
            (string(), array(partition), tagged(flexible)).prop_map(|(name, partitions, tagged_fields)| {
                OffsetCommitRequestTopic { name, partitions, tagged_fields }
            });
        let group_instance_id = if v >= 7 { nullable_string() } else { Just(None).boxed() };
        (
            string(),
            gated(v >= 1, any::<i32>()),
            gated(v >= 1, string()),
            group_instance_id,
            gated((2..=4).contains(&v), any::<i64>()),
            array(topic),
            tagged(flexible),
        )
            .prop_map(
                |(
                    group_id,
                    generation_id_or_member_epoch,
                    member_id,
                    group_instance_id,
                    retention_time_ms,
                    topics,
                    tagged_fields,
                )| OffsetCommitRequest {
                    group_id,
                    generation_id_or_member_epoch,
                    member_id,
                    group_instance_id,
                    retention_time_ms,
                    topics,
                    tagged_fields,
                },
            )
    }

    fn response(v: i16) -> impl Strategy<Value = OffsetCommitResponse> {
        let flexible = v >= 8;
        let partition = (any::<i32>(), error_code(), tagged(flexible)).prop_map(
            |(partition_index, error_code, tagged_fields)| OffsetCommitResponsePartition {
                partition_index,
                error_code,
                tagged_fields,
            },
        );
        let topic =
            (string(), array(partition), tagged(flexible)).prop_map(|(name, partitions, tagged_fields)| {
                OffsetCommitResponseTopic { name, partitions, tagged_fields }
            });
        (gated(v >= 3, any::<i32>()), array(topic), tagged(flexible)).prop_map(
            |(throttle_time_ms, topics, tagged_fields)| OffsetCommitResponse {
                throttle_time_ms,
                topics,
                tagged_fields,
            },
        )
    }

    #[test]
    fn requests_round_trip_at_every_version() {
        round_trip_every_version(file!(), request);
    }

    #[test]
    fn responses_round_trip_at_every_version() {
        round_trip_every_version(file!(), response);
    }

    fn one_partition(
        committed_leader_epoch: Option<i32>,
        commit_timestamp: Option<i64>,
    ) -> Vec<OffsetCommitRequestTopic> {
        vec![OffsetCommitRequestTopic {
            name: "t".into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 10,
                committed_leader_epoch,
                commit_timestamp,
                committed_metadata: Some("m".into()),
                ..Default::default()
            }],
            ..Default::default()
        }]
    }

    #[test]
    fn a_v1_commit_without_membership_carries_a_commit_timestamp() {
        let request = OffsetCommitRequest {
            group_id: "g".into(),
            generation_id_or_member_epoch: Some(-1),
            member_id: Some(String::new()),
            topics: one_partition(None, Some(1000)),
            ..Default::default()
        };
        #[rustfmt::skip]
        let expected = [
            0, 1, b'g', // group_id
            0xff, 0xff, 0xff, 0xff, // generation -1
            0, 0, // member_id ""
            0, 0, 0, 1, 0, 1, b't', // topics: 1, "t"
            0, 0, 0, 1, 0, 0, 0, 0, // partitions: 1, index 0
            0, 0, 0, 0, 0, 0, 0, 10, // committed_offset
            0, 0, 0, 0, 0, 0, 0x03, 0xe8, // commit_timestamp 1000
            0, 1, b'm', // committed_metadata
        ];
        assert_eq!(request.encode_body(1).unwrap(), expected);
        assert_eq!(OffsetCommitRequest::decode_body(Bytes::copy_from_slice(&expected), 1).unwrap(), request);
    }

    #[test]
    fn a_v2_commit_carries_retention_time_and_no_commit_timestamp() {
        let request = OffsetCommitRequest {
            group_id: "g".into(),
            generation_id_or_member_epoch: Some(3),
            member_id: Some("m".into()),
            retention_time_ms: Some(-1),
            topics: one_partition(None, None),
            ..Default::default()
        };
        let encoded = request.encode_body(2).unwrap();
        // group_id 3 + generation 4 + member_id 3 + retention 8, then topics.
        assert_eq!(&encoded[10..18], &[0xff; 8]);
        assert_eq!(encoded.len(), 18 + 7 + 8 + 8 + 3);
    }

    #[test]
    fn a_v8_commit_is_compact_with_a_static_member_and_leader_epoch() {
        let request = OffsetCommitRequest {
            group_id: "g".into(),
            generation_id_or_member_epoch: Some(1),
            member_id: Some("m".into()),
            group_instance_id: None,
            topics: one_partition(Some(5), None),
            ..Default::default()
        };
        #[rustfmt::skip]
        let expected = [
            2, b'g', 0, 0, 0, 1, 2, b'm', // group_id, generation 1, member_id
            0, // group_instance_id null
            2, 2, b't', 2, 0, 0, 0, 0, // topics: 1, "t", partitions: 1, index 0
            0, 0, 0, 0, 0, 0, 0, 10, // committed_offset
            0, 0, 0, 5, // committed_leader_epoch
            2, b'm', 0, 0, 0, // metadata "m", partition, topic, body tags
        ];
        assert_eq!(request.encode_body(8).unwrap(), expected);
        assert_eq!(OffsetCommitRequest::decode_body(Bytes::copy_from_slice(&expected), 8).unwrap(), request);
    }
}
