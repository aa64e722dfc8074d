//! DeleteRecords (key 21): move partitions' log start offsets forward, deleting everything
//! before. Sent to each partition's leader.

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;

/// DeleteRecords's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::DELETE_RECORDS,
    name: "DeleteRecords",
    versions: VersionRange::new(0, 2),
    flexible_from: Some(2),
};

/// The `offset` that deletes up to the high watermark.
pub const DELETE_UP_TO_HIGH_WATERMARK: i64 = -1;

kafka_message! {
    /// A DeleteRecords request (v0–v2).
    pub struct DeleteRecordsRequest {
        /// Each topic that we want to delete records from.
        topics: Vec<DeleteRecordsTopic>,
        /// How long to wait for the deletions, in ms.
        timeout_ms: i32,
    }
}

kafka_message! {
    /// An element of [`DeleteRecordsRequest::topics`]: each topic that we want to delete records from.
    pub struct DeleteRecordsTopic {
        /// The topic name.
        name: String,
        /// Each partition that we want to delete records from.
        partitions: Vec<DeleteRecordsPartition>,
    }
}

kafka_message! {
    /// An element of [`DeleteRecordsTopic::partitions`]: each partition that we want to delete records from.
    pub struct DeleteRecordsPartition {
        /// The partition index.
        partition_index: i32,
        /// Records before this offset are deleted; [`DELETE_UP_TO_HIGH_WATERMARK`] (−1) for all
        /// committed records.
        offset: i64,
    }
}

impl Body for DeleteRecordsRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.array(&self.topics, "topics", |e, t| {
            e.string(&t.name, "topics.name")?;
            e.array(&t.partitions, "topics.partitions", |e, p| {
                e.i32(p.partition_index);
                e.i64(p.offset);
                e.tagged_fields(&p.tagged_fields, "topics.partitions.tagged_fields", version)
            })?;
            e.tagged_fields(&t.tagged_fields, "topics.tagged_fields", version)
        })?;
        e.i32(self.timeout_ms);
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        let topics = d.array("topics", 2, |d| {
            Ok(DeleteRecordsTopic {
                name: d.string("topics.name")?,
                partitions: d.array("topics.partitions", 12, |d| {
                    Ok(DeleteRecordsPartition {
                        partition_index: d.i32("topics.partitions.partition_index")?,
                        offset: d.i64("topics.partitions.offset")?,
                        tagged_fields: d.tagged_fields("topics.partitions.tagged_fields")?,
                    })
                })?,
                tagged_fields: d.tagged_fields("topics.tagged_fields")?,
            })
        })?;
        Ok(Self {
            topics,
            timeout_ms: d.i32("timeout_ms")?,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

impl Request for DeleteRecordsRequest {
    type Response = DeleteRecordsResponse;
}

kafka_message! {
    /// A DeleteRecords response (v0–v2).
    pub struct DeleteRecordsResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if
        /// the request did not violate any quota.
        throttle_time_ms: i32,
        /// Each topic that we wanted to delete records from.
        topics: Vec<DeleteRecordsTopicResult>,
    }
}

kafka_message! {
    /// An element of [`DeleteRecordsResponse::topics`]: each topic that we wanted to delete records from.
    pub struct DeleteRecordsTopicResult {
        /// The topic name.
        name: String,
        /// Each partition that we wanted to delete records from.
        partitions: Vec<DeleteRecordsPartitionResult>,
    }
}

kafka_message! {
    /// An element of [`DeleteRecordsTopicResult::partitions`]: each partition that we wanted to delete records
    /// from.
    pub struct DeleteRecordsPartitionResult {
        /// The partition index.
        partition_index: i32,
        /// The partition's new log start offset.
        low_watermark: i64,
        /// The deletion error code, or 0 if the deletion succeeded.
        error_code: ErrorCode,
    }
}

impl Body for DeleteRecordsResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.i32(self.throttle_time_ms);
        e.array(&self.topics, "topics", |e, t| {
            e.string(&t.name, "topics.name")?;
            e.array(&t.partitions, "topics.partitions", |e, p| {
                e.i32(p.partition_index);
                e.i64(p.low_watermark);
                e.i16(p.error_code.0);
                e.tagged_fields(&p.tagged_fields, "topics.partitions.tagged_fields", version)
            })?;
            e.tagged_fields(&t.tagged_fields, "topics.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = d.i32("throttle_time_ms")?;
        let topics = d.array("topics", 2, |d| {
            Ok(DeleteRecordsTopicResult {
                name: d.string("topics.name")?,
                partitions: d.array("topics.partitions", 14, |d| {
                    Ok(DeleteRecordsPartitionResult {
                        partition_index: d.i32("topics.partitions.partition_index")?,
                        low_watermark: d.i64("topics.partitions.low_watermark")?,
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
    use crate::protocol::messages::test_util::{array, error_code, round_trip_every_version, string, tagged};

    fn request(v: i16) -> impl Strategy<Value = DeleteRecordsRequest> {
        let flexible = v >= 2;
        let partition = (any::<i32>(), any::<i64>(), tagged(flexible)).prop_map(
            |(partition_index, offset, tagged_fields)| DeleteRecordsPartition {
                partition_index,
                offset,
                tagged_fields,
            },
        );
        let topic =
            (string(), array(partition), tagged(flexible)).prop_map(|(name, partitions, tagged_fields)| {
                DeleteRecordsTopic { name, partitions, tagged_fields }
            });
        (array(topic), any::<i32>(), tagged(flexible)).prop_map(|(topics, timeout_ms, tagged_fields)| {
            DeleteRecordsRequest { topics, timeout_ms, tagged_fields }
        })
    }

    fn response(v: i16) -> impl Strategy<Value = DeleteRecordsResponse> {
        let flexible = v >= 2;
        let partition = (any::<i32>(), any::<i64>(), error_code(), tagged(flexible)).prop_map(
            |(partition_index, low_watermark, error_code, tagged_fields)| DeleteRecordsPartitionResult {
                partition_index,
                low_watermark,
                error_code,
                tagged_fields,
            },
        );
        let topic =
            (string(), array(partition), tagged(flexible)).prop_map(|(name, partitions, tagged_fields)| {
                DeleteRecordsTopicResult { name, partitions, tagged_fields }
            });
        (any::<i32>(), array(topic), tagged(flexible)).prop_map(
            |(throttle_time_ms, topics, tagged_fields)| DeleteRecordsResponse {
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
    fn a_v2_response_reports_the_new_low_watermark() {
        #[rustfmt::skip]
        let body = [
            0, 0, 0, 0, 2, 2, b't', 2, // throttle, topics: 1, "t", partitions: 1
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 50, 0, 0, // partition 0, low_watermark 50, NONE
            0, 0, 0, // partition, topic, body tags
        ];
        let decoded = DeleteRecordsResponse::decode_body(Bytes::copy_from_slice(&body), 2).unwrap();
        assert_eq!(decoded.topics[0].partitions[0].low_watermark, 50);
        assert_eq!(decoded.encode_body(2).unwrap(), body);
    }
}
