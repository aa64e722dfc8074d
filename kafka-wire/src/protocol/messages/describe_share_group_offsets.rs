//! DescribeShareGroupOffsets (key 90, KIP-932): per partition a share group's share-partition
//! start offset (SPSO), below which every record has been acknowledged or archived. It is a
//! share group's counterpart of a committed offset: records from it on may still be delivered.

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;
use kafka_vocab::Uuid;

/// DescribeShareGroupOffsets' API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::DESCRIBE_SHARE_GROUP_OFFSETS,
    name: "DescribeShareGroupOffsets",
    versions: VersionRange::new(0, 0),
    flexible_from: Some(0),
};

/// The `start_offset` of a partition the group has no state for yet.
pub const NO_START_OFFSET: i64 = -1;

kafka_message! {
    /// A DescribeShareGroupOffsets request (v0).
    pub struct DescribeShareGroupOffsetsRequest [flexible] {
        /// The groups to describe offsets for.
        groups: Vec<DescribeShareGroupOffsetsRequestGroup>,
    }
}

kafka_message! {
    /// An element of [`DescribeShareGroupOffsetsRequest::groups`].
    pub struct DescribeShareGroupOffsetsRequestGroup [flexible] {
        /// The group id.
        group_id: String,
        /// The topics to describe; `None` (null) for every partition the group has state for.
        topics: Option<Vec<DescribeShareGroupOffsetsRequestTopic>>,
    }
}

kafka_message! {
    /// An element of [`DescribeShareGroupOffsetsRequestGroup::topics`].
    pub struct DescribeShareGroupOffsetsRequestTopic [flexible] {
        /// The topic name.
        topic_name: String,
        /// The partitions.
        partitions: Vec<i32>,
    }
}

impl Body for DescribeShareGroupOffsetsRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.array(&self.groups, "groups", |e, g| {
            e.string(&g.group_id, "groups.group_id")?;
            e.nullable_array(g.topics.as_deref(), "groups.topics", |e, t| {
                e.string(&t.topic_name, "groups.topics.topic_name")?;
                e.i32_array(&t.partitions, "groups.topics.partitions")?;
                e.tagged_fields(&t.tagged_fields, "groups.topics.tagged_fields", version)
            })?;
            e.tagged_fields(&g.tagged_fields, "groups.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        let groups = d.array("groups", 3, |d| {
            Ok(DescribeShareGroupOffsetsRequestGroup {
                group_id: d.string("groups.group_id")?,
                topics: d.nullable_array("groups.topics", 3, |d| {
                    Ok(DescribeShareGroupOffsetsRequestTopic {
                        topic_name: d.string("groups.topics.topic_name")?,
                        partitions: d.i32_array("groups.topics.partitions")?,
                        tagged_fields: d.tagged_fields("groups.topics.tagged_fields")?,
                    })
                })?,
                tagged_fields: d.tagged_fields("groups.tagged_fields")?,
            })
        })?;
        Ok(Self { groups, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

impl Request for DescribeShareGroupOffsetsRequest {
    type Response = DescribeShareGroupOffsetsResponse;
}

kafka_message! {
    /// A DescribeShareGroupOffsets response (v0).
    pub struct DescribeShareGroupOffsetsResponse [flexible] {
        /// How long the request was throttled for a quota violation, or zero.
        throttle_time_ms: i32,
        /// The results for each group.
        groups: Vec<DescribeShareGroupOffsetsResponseGroup>,
    }
}

kafka_message! {
    /// An element of [`DescribeShareGroupOffsetsResponse::groups`].
    pub struct DescribeShareGroupOffsetsResponseGroup [flexible] {
        /// The group id.
        group_id: String,
        /// The results for each topic.
        topics: Vec<DescribeShareGroupOffsetsResponseTopic>,
        /// The group-level error (GROUP_ID_NOT_FOUND for an unknown group or one of another type).
        error_code: ErrorCode,
        /// Nullable.
        error_message: Option<String>,
    }
}

kafka_message! {
    /// An element of [`DescribeShareGroupOffsetsResponseGroup::topics`].
    pub struct DescribeShareGroupOffsetsResponseTopic [flexible] {
        /// The topic name.
        topic_name: String,
        /// The topic id.
        topic_id: Uuid,
        /// The results for each partition.
        partitions: Vec<DescribeShareGroupOffsetsResponsePartition>,
    }
}

kafka_message! {
    /// An element of [`DescribeShareGroupOffsetsResponseTopic::partitions`].
    pub struct DescribeShareGroupOffsetsResponsePartition [flexible] {
        /// The partition index.
        partition_index: i32,
        /// The share-partition start offset; [`NO_START_OFFSET`] when the group has none.
        start_offset: i64,
        /// The leader epoch of the partition.
        leader_epoch: i32,
        /// The partition-level error.
        error_code: ErrorCode,
        /// Nullable.
        error_message: Option<String>,
    }
}

impl Body for DescribeShareGroupOffsetsResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.i32(self.throttle_time_ms);
        e.array(&self.groups, "groups", |e, g| {
            e.string(&g.group_id, "groups.group_id")?;
            e.array(&g.topics, "groups.topics", |e, t| {
                e.string(&t.topic_name, "groups.topics.topic_name")?;
                e.uuid(t.topic_id);
                e.array(&t.partitions, "groups.topics.partitions", |e, p| {
                    e.i32(p.partition_index);
                    e.i64(p.start_offset);
                    e.i32(p.leader_epoch);
                    e.i16(p.error_code.0);
                    e.nullable_string(p.error_message.as_deref(), "groups.topics.partitions.error_message")?;
                    e.tagged_fields(&p.tagged_fields, "groups.topics.partitions.tagged_fields", version)
                })?;
                e.tagged_fields(&t.tagged_fields, "groups.topics.tagged_fields", version)
            })?;
            e.i16(g.error_code.0);
            e.nullable_string(g.error_message.as_deref(), "groups.error_message")?;
            e.tagged_fields(&g.tagged_fields, "groups.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = d.i32("throttle_time_ms")?;
        let groups = d.array("groups", 5, |d| {
            Ok(DescribeShareGroupOffsetsResponseGroup {
                group_id: d.string("groups.group_id")?,
                topics: d.array("groups.topics", 19, |d| {
                    Ok(DescribeShareGroupOffsetsResponseTopic {
                        topic_name: d.string("groups.topics.topic_name")?,
                        topic_id: d.uuid("groups.topics.topic_id")?,
                        partitions: d.array("groups.topics.partitions", 20, |d| {
                            Ok(DescribeShareGroupOffsetsResponsePartition {
                                partition_index: d.i32("groups.topics.partitions.partition_index")?,
                                start_offset: d.i64("groups.topics.partitions.start_offset")?,
                                leader_epoch: d.i32("groups.topics.partitions.leader_epoch")?,
                                error_code: ErrorCode(d.i16("groups.topics.partitions.error_code")?),
                                error_message: d.nullable_string("groups.topics.partitions.error_message")?,
                                tagged_fields: d.tagged_fields("groups.topics.partitions.tagged_fields")?,
                            })
                        })?,
                        tagged_fields: d.tagged_fields("groups.topics.tagged_fields")?,
                    })
                })?,
                error_code: ErrorCode(d.i16("groups.error_code")?),
                error_message: d.nullable_string("groups.error_message")?,
                tagged_fields: d.tagged_fields("groups.tagged_fields")?,
            })
        })?;
        Ok(Self { throttle_time_ms, groups, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use proptest::option;
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{
        array, error_code, nullable_string, round_trip_every_version, string, tagged, uuid,
    };

    fn request(_v: i16) -> impl Strategy<Value = DescribeShareGroupOffsetsRequest> {
        let topic = (string(), array(any::<i32>()), tagged(true)).prop_map(
            |(topic_name, partitions, tagged_fields)| DescribeShareGroupOffsetsRequestTopic {
                topic_name,
                partitions,
                tagged_fields,
            },
        );
        let group = (string(), option::of(array(topic)), tagged(true)).prop_map(
            |(group_id, topics, tagged_fields)| DescribeShareGroupOffsetsRequestGroup {
                group_id,
                topics,
                tagged_fields,
            },
        );
        (array(group), tagged(true))
            .prop_map(|(groups, tagged_fields)| DescribeShareGroupOffsetsRequest { groups, tagged_fields })
    }

    fn response(_v: i16) -> impl Strategy<Value = DescribeShareGroupOffsetsResponse> {
        let partition =
            (any::<i32>(), any::<i64>(), any::<i32>(), error_code(), nullable_string(), tagged(true))
                .prop_map(
                    |(
                        partition_index,
                        start_offset,
                        leader_epoch,
                        error_code,
                        error_message,
                        tagged_fields,
                    )| {
                        DescribeShareGroupOffsetsResponsePartition {
                            partition_index,
                            start_offset,
                            leader_epoch,
                            error_code,
                            error_message,
                            tagged_fields,
                        }
                    },
                );
        let topic = (string(), uuid(), array(partition), tagged(true)).prop_map(
            |(topic_name, topic_id, partitions, tagged_fields)| DescribeShareGroupOffsetsResponseTopic {
                topic_name,
                topic_id,
                partitions,
                tagged_fields,
            },
        );
        let group = (string(), array(topic), error_code(), nullable_string(), tagged(true)).prop_map(
            |(group_id, topics, error_code, error_message, tagged_fields)| {
                DescribeShareGroupOffsetsResponseGroup {
                    group_id,
                    topics,
                    error_code,
                    error_message,
                    tagged_fields,
                }
            },
        );
        (any::<i32>(), array(group), tagged(true)).prop_map(|(throttle_time_ms, groups, tagged_fields)| {
            DescribeShareGroupOffsetsResponse { throttle_time_ms, groups, tagged_fields }
        })
    }

    #[test]
    fn requests_round_trip_at_every_version() {
        round_trip_every_version(file!(), request);
    }

    #[test]
    fn responses_round_trip_at_every_version() {
        round_trip_every_version(file!(), response);
    }

    #[test]
    fn a_group_asking_for_every_partition_sends_null_topics() {
        let request = DescribeShareGroupOffsetsRequest {
            groups: vec![DescribeShareGroupOffsetsRequestGroup {
                group_id: "g".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        // groups: 1, "g", topics null (compact length 0), group tags, body tags.
        assert_eq!(request.encode_body(0).unwrap(), [2, 2, b'g', 0, 0, 0]);
        let empty = DescribeShareGroupOffsetsRequest {
            groups: vec![DescribeShareGroupOffsetsRequestGroup {
                group_id: "g".into(),
                topics: Some(Vec::new()),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(empty.encode_body(0).unwrap(), [2, 2, b'g', 1, 0, 0]);
        let back =
            DescribeShareGroupOffsetsRequest::decode_body(Bytes::from_static(&[2, 2, b'g', 0, 0, 0]), 0);
        assert_eq!(back.unwrap().groups[0].topics, None);
    }
}
