//! OffsetForLeaderEpoch (key 23): the end offset of a leader epoch, per partition — how a
//! consumer detects log truncation (KIP-320): ask for the epoch of the last consumed record;
//! an end offset below the consumer's position means the log diverged. Sent to the leader.

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;

/// OffsetForLeaderEpoch's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::OFFSET_FOR_LEADER_EPOCH,
    name: "OffsetForLeaderEpoch",
    versions: VersionRange::new(0, 4),
    flexible_from: Some(4),
};

/// The `replica_id` a consumer sends (v3+); brokers send their own id.
pub const CONSUMER_REPLICA_ID: i32 = -2;

kafka_message! {
    /// An OffsetForLeaderEpoch request (v0–v4).
    pub struct OffsetForLeaderEpochRequest {
        /// Added in v3: [`CONSUMER_REPLICA_ID`] (−2) for a consumer, the broker id for a follower.
        [since 3] replica_id: Option<i32>,
        /// Each topic to get offsets for.
        topics: Vec<OffsetForLeaderTopic>,
    }
}

kafka_message! {
    /// An element of [`OffsetForLeaderEpochRequest::topics`]: each topic to get offsets for.
    pub struct OffsetForLeaderTopic {
        /// The topic name.
        topic: String,
        /// Each partition to get offsets for.
        partitions: Vec<OffsetForLeaderPartition>,
    }
}

kafka_message! {
    /// An element of [`OffsetForLeaderTopic::partitions`]: each partition to get offsets for.
    pub struct OffsetForLeaderPartition {
        /// The partition index.
        partition: i32,
        /// Added in v2: the epoch the client believes current, for fencing; −1 skips the check.
        [since 2] current_leader_epoch: Option<i32>,
        /// The epoch whose end offset is wanted.
        leader_epoch: i32,
    }
}

impl Body for OffsetForLeaderEpochRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 3 {
            e.i32(self.replica_id.unwrap_or(CONSUMER_REPLICA_ID));
        }
        e.array(&self.topics, "topics", |e, t| {
            e.string(&t.topic, "topics.topic")?;
            e.array(&t.partitions, "topics.partitions", |e, p| {
                e.i32(p.partition);
                if version >= 2 {
                    e.i32(p.current_leader_epoch.unwrap_or(-1));
                }
                e.i32(p.leader_epoch);
                e.tagged_fields(&p.tagged_fields, "topics.partitions.tagged_fields", version)
            })?;
            e.tagged_fields(&t.tagged_fields, "topics.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let replica_id = if version >= 3 { Some(d.i32("replica_id")?) } else { None };
        let topics = d.array("topics", 2, |d| {
            Ok(OffsetForLeaderTopic {
                topic: d.string("topics.topic")?,
                partitions: d.array("topics.partitions", 8, |d| {
                    let partition = d.i32("topics.partitions.partition")?;
                    let current_leader_epoch = if version >= 2 {
                        Some(d.i32("topics.partitions.current_leader_epoch")?)
                    } else {
                        None
                    };
                    Ok(OffsetForLeaderPartition {
                        partition,
                        current_leader_epoch,
                        leader_epoch: d.i32("topics.partitions.leader_epoch")?,
                        tagged_fields: d.tagged_fields("topics.partitions.tagged_fields")?,
                    })
                })?,
                tagged_fields: d.tagged_fields("topics.tagged_fields")?,
            })
        })?;
        Ok(Self { replica_id, topics, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

impl Request for OffsetForLeaderEpochRequest {
    type Response = OffsetForLeaderEpochResponse;
}

kafka_message! {
    /// An OffsetForLeaderEpoch response (v0–v4).
    pub struct OffsetForLeaderEpochResponse {
        /// Added in v2.
        [since 2] throttle_time_ms: Option<i32>,
        /// Each topic we fetched offsets for.
        topics: Vec<OffsetForLeaderTopicResult>,
    }
}

kafka_message! {
    /// An element of [`OffsetForLeaderEpochResponse::topics`]: each topic we fetched offsets for.
    pub struct OffsetForLeaderTopicResult {
        /// The topic name.
        topic: String,
        /// Each partition in the topic we fetched offsets for.
        partitions: Vec<EpochEndOffset>,
    }
}

kafka_message! {
    /// An element of [`OffsetForLeaderTopicResult::partitions`]: each partition in the topic we fetched offsets
    /// for.
    pub struct EpochEndOffset {
        /// The error code, or 0 if there was no error.
        error_code: ErrorCode,
        /// The partition index.
        partition: i32,
        /// Added in v1: the largest epoch ≤ the requested one, −1 if unknown.
        [since 1] leader_epoch: Option<i32>,
        /// The end offset of that epoch (exclusive: the next epoch's start offset), −1 if unknown.
        end_offset: i64,
    }
}

impl Body for OffsetForLeaderEpochResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 2 {
            e.i32(self.throttle_time_ms.unwrap_or(0));
        }
        e.array(&self.topics, "topics", |e, t| {
            e.string(&t.topic, "topics.topic")?;
            e.array(&t.partitions, "topics.partitions", |e, p| {
                e.i16(p.error_code.0);
                e.i32(p.partition);
                if version >= 1 {
                    e.i32(p.leader_epoch.unwrap_or(-1));
                }
                e.i64(p.end_offset);
                e.tagged_fields(&p.tagged_fields, "topics.partitions.tagged_fields", version)
            })?;
            e.tagged_fields(&t.tagged_fields, "topics.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if version >= 2 { Some(d.i32("throttle_time_ms")?) } else { None };
        let topics = d.array("topics", 2, |d| {
            Ok(OffsetForLeaderTopicResult {
                topic: d.string("topics.topic")?,
                partitions: d.array("topics.partitions", 14, |d| {
                    let error_code = ErrorCode(d.i16("topics.partitions.error_code")?);
                    let partition = d.i32("topics.partitions.partition")?;
                    let leader_epoch =
                        if version >= 1 { Some(d.i32("topics.partitions.leader_epoch")?) } else { None };
                    Ok(EpochEndOffset {
                        error_code,
                        partition,
                        leader_epoch,
                        end_offset: d.i64("topics.partitions.end_offset")?,
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
        array, error_code, gated, round_trip_every_version, string, tagged,
    };

    fn request(v: i16) -> impl Strategy<Value = OffsetForLeaderEpochRequest> {
        let flexible = v >= 4;
        let partition = (any::<i32>(), gated(v >= 2, any::<i32>()), any::<i32>(), tagged(flexible)).prop_map(
            |(partition, current_leader_epoch, leader_epoch, tagged_fields)| OffsetForLeaderPartition {
                partition,
                current_leader_epoch,
                leader_epoch,
                tagged_fields,
            },
        );
        let topic =
            (string(), array(partition), tagged(flexible)).prop_map(|(topic, partitions, tagged_fields)| {
                OffsetForLeaderTopic { topic, partitions, tagged_fields }
            });
        (gated(v >= 3, any::<i32>()), array(topic), tagged(flexible)).prop_map(
            |(replica_id, topics, tagged_fields)| OffsetForLeaderEpochRequest {
                replica_id,
                topics,
                tagged_fields,
            },
        )
    }

    fn response(v: i16) -> impl Strategy<Value = OffsetForLeaderEpochResponse> {
        let flexible = v >= 4;
        let partition =
            (error_code(), any::<i32>(), gated(v >= 1, any::<i32>()), any::<i64>(), tagged(flexible))
                .prop_map(|(error_code, partition, leader_epoch, end_offset, tagged_fields)| {
                    EpochEndOffset { error_code, partition, leader_epoch, end_offset, tagged_fields }
                });
        let topic =
            (string(), array(partition), tagged(flexible)).prop_map(|(topic, partitions, tagged_fields)| {
                OffsetForLeaderTopicResult { topic, partitions, tagged_fields }
            });
        (gated(v >= 2, any::<i32>()), array(topic), tagged(flexible)).prop_map(
            |(throttle_time_ms, topics, tagged_fields)| OffsetForLeaderEpochResponse {
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

    #[test]
    fn a_v3_consumer_request_fences_on_the_current_epoch() {
        let request = OffsetForLeaderEpochRequest {
            replica_id: Some(CONSUMER_REPLICA_ID),
            topics: vec![OffsetForLeaderTopic {
                topic: "t".into(),
                partitions: vec![OffsetForLeaderPartition {
                    partition: 0,
                    current_leader_epoch: Some(5),
                    leader_epoch: 4,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        #[rustfmt::skip]
        let expected = [
            0xff, 0xff, 0xff, 0xfe, // replica_id -2
            0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 1, // topics: 1, "t", partitions: 1
            0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 4, // partition 0, current epoch 5, epoch 4
        ];
        assert_eq!(request.encode_body(3).unwrap(), expected);
        assert_eq!(
            OffsetForLeaderEpochRequest::decode_body(Bytes::copy_from_slice(&expected), 3).unwrap(),
            request
        );
    }

    #[test]
    fn a_v0_response_has_no_leader_epoch() {
        let body = [0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 9];
        let decoded = OffsetForLeaderEpochResponse::decode_body(Bytes::copy_from_slice(&body), 0).unwrap();
        let p = &decoded.topics[0].partitions[0];
        assert_eq!((p.partition, p.leader_epoch, p.end_offset), (2, None, 9));
        assert_eq!(decoded.encode_body(0).unwrap(), body);
    }
}
