//! OffsetDelete (key 47): remove a group's committed offsets for some partitions (only
//! partitions the group is not subscribed to). Sent to the group coordinator. There is only v0
//! and it is not flexible, so these structs have no tagged fields.

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;

/// OffsetDelete's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::OFFSET_DELETE,
    name: "OffsetDelete",
    versions: VersionRange::new(0, 0),
    flexible_from: None,
};

kafka_message! {
    /// An OffsetDelete request (v0–v0).
    pub struct OffsetDeleteRequest [no_tagged_fields] {
        /// The unique group identifier.
        group_id: String,
        /// The topics to delete offsets for.
        topics: Vec<OffsetDeleteRequestTopic>,
    }
}

kafka_message! {
    /// An element of [`OffsetDeleteRequest::topics`]: the topics to delete offsets for.
    pub struct OffsetDeleteRequestTopic [no_tagged_fields] {
        /// The topic name.
        name: String,
        /// Each partition to delete offsets for.
        partitions: Vec<OffsetDeleteRequestPartition>,
    }
}

kafka_message! {
    /// An element of [`OffsetDeleteRequestTopic::partitions`]: each partition to delete offsets for.
    pub struct OffsetDeleteRequestPartition [no_tagged_fields] {
        /// The partition index.
        partition_index: i32,
    }
}

impl Body for OffsetDeleteRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, _version: i16) -> EncodeResult {
        e.string(&self.group_id, "group_id")?;
        e.array(&self.topics, "topics", |e, t| {
            e.string(&t.name, "topics.name")?;
            e.array(&t.partitions, "topics.partitions", |e, p| {
                e.i32(p.partition_index);
                Ok(())
            })
        })
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        let group_id = d.string("group_id")?;
        let topics = d.array("topics", 6, |d| {
            Ok(OffsetDeleteRequestTopic {
                name: d.string("topics.name")?,
                partitions: d.array("topics.partitions", 4, |d| {
                    Ok(OffsetDeleteRequestPartition {
                        partition_index: d.i32("topics.partitions.partition_index")?,
                    })
                })?,
            })
        })?;
        Ok(Self { group_id, topics })
    }
}

impl Request for OffsetDeleteRequest {
    type Response = OffsetDeleteResponse;
}

kafka_message! {
    /// An OffsetDelete response (v0–v0).
    pub struct OffsetDeleteResponse [no_tagged_fields] {
        /// A group-level error (e.g. GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP).
        error_code: ErrorCode,
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if
        /// the request did not violate any quota.
        throttle_time_ms: i32,
        /// The responses for each topic.
        topics: Vec<OffsetDeleteResponseTopic>,
    }
}

kafka_message! {
    /// An element of [`OffsetDeleteResponse::topics`]: the responses for each topic.
    pub struct OffsetDeleteResponseTopic [no_tagged_fields] {
        /// The topic name.
        name: String,
        /// The responses for each partition in the topic.
        partitions: Vec<OffsetDeleteResponsePartition>,
    }
}

kafka_message! {
    /// An element of [`OffsetDeleteResponseTopic::partitions`]: the responses for each partition in the topic.
    pub struct OffsetDeleteResponsePartition [no_tagged_fields] {
        /// The partition index.
        partition_index: i32,
        /// GROUP_SUBSCRIBED_TO_TOPIC when the group still consumes the topic.
        error_code: ErrorCode,
    }
}

impl Body for OffsetDeleteResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, _version: i16) -> EncodeResult {
        e.i16(self.error_code.0);
        e.i32(self.throttle_time_ms);
        e.array(&self.topics, "topics", |e, t| {
            e.string(&t.name, "topics.name")?;
            e.array(&t.partitions, "topics.partitions", |e, p| {
                e.i32(p.partition_index);
                e.i16(p.error_code.0);
                Ok(())
            })
        })
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        let error_code = ErrorCode(d.i16("error_code")?);
        let throttle_time_ms = d.i32("throttle_time_ms")?;
        let topics = d.array("topics", 6, |d| {
            Ok(OffsetDeleteResponseTopic {
                name: d.string("topics.name")?,
                partitions: d.array("topics.partitions", 6, |d| {
                    Ok(OffsetDeleteResponsePartition {
                        partition_index: d.i32("topics.partitions.partition_index")?,
                        error_code: ErrorCode(d.i16("topics.partitions.error_code")?),
                    })
                })?,
            })
        })?;
        Ok(Self { error_code, throttle_time_ms, topics })
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{array, error_code, round_trip_every_version, string};

    fn request(_v: i16) -> impl Strategy<Value = OffsetDeleteRequest> {
        let partition =
            any::<i32>().prop_map(|partition_index| OffsetDeleteRequestPartition { partition_index });
        let topic = (string(), array(partition))
            .prop_map(|(name, partitions)| OffsetDeleteRequestTopic { name, partitions });
        (string(), array(topic)).prop_map(|(group_id, topics)| OffsetDeleteRequest { group_id, topics })
    }

    fn response(_v: i16) -> impl Strategy<Value = OffsetDeleteResponse> {
        let partition = (any::<i32>(), error_code()).prop_map(|(partition_index, error_code)| {
            OffsetDeleteResponsePartition { partition_index, error_code }
        });
        let topic = (string(), array(partition))
            .prop_map(|(name, partitions)| OffsetDeleteResponseTopic { name, partitions });
        (error_code(), any::<i32>(), array(topic)).prop_map(|(error_code, throttle_time_ms, topics)| {
            OffsetDeleteResponse { error_code, throttle_time_ms, topics }
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
    fn a_response_reports_a_subscribed_topic_per_partition() {
        #[rustfmt::skip]
        let body = [
            0, 0, 0, 0, 0, 0, // error_code NONE, throttle_time_ms
            0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 1, // topics: 1, "t", partitions: 1
            0, 0, 0, 2, 0, 86, // partition 2, GROUP_SUBSCRIBED_TO_TOPIC
        ];
        let decoded = OffsetDeleteResponse::decode_body(Bytes::copy_from_slice(&body), 0).unwrap();
        assert_eq!(
            decoded.topics[0].partitions[0],
            OffsetDeleteResponsePartition { partition_index: 2, error_code: ErrorCode(86) }
        );
        assert_eq!(decoded.encode_body(0).unwrap(), body);
    }
}
