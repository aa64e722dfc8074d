//! AddPartitionsToTxn (key 24): a transactional producer tells its transaction coordinator which
//! partitions it is about to write in the open transaction, before their first batch, so the
//! coordinator writes their commit or abort markers at the end. v0–v3 are the client's versions;
//! v4+ batch several transactions and are sent only broker to broker (KIP-890), so kwire
//! implements v0–v3.

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;

/// AddPartitionsToTxn's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::ADD_PARTITIONS_TO_TXN,
    name: "AddPartitionsToTxn",
    versions: VersionRange::new(0, 3),
    flexible_from: Some(3),
};

kafka_message! {
    /// An AddPartitionsToTxn request (v0–v3).
    pub struct AddPartitionsToTxnRequest {
        /// The transactional id of the producer.
        [rename "v3_and_below_transactional_id"] transactional_id: String,
        /// The producer id InitProducerId gave for that transactional id.
        [rename "v3_and_below_producer_id"] producer_id: i64,
        /// The producer's epoch; an older one than the coordinator's is fenced.
        [rename "v3_and_below_producer_epoch"] producer_epoch: i16,
        /// The partitions to add to the transaction, by topic.
        [rename "v3_and_below_topics"] topics: Vec<AddPartitionsToTxnTopic>,
    }
}

kafka_message! {
    /// An element of [`AddPartitionsToTxnRequest::topics`]: one topic's partitions.
    pub struct AddPartitionsToTxnTopic {
        /// The topic name.
        name: String,
        /// The partition indexes to add.
        partitions: Vec<i32>,
    }
}

impl Body for AddPartitionsToTxnRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.string(&self.transactional_id, "v3_and_below_transactional_id")?;
        e.i64(self.producer_id);
        e.i16(self.producer_epoch);
        e.array(&self.topics, "v3_and_below_topics", |e, t| {
            e.string(&t.name, "v3_and_below_topics.name")?;
            e.array(&t.partitions, "v3_and_below_topics.partitions", |e, p| {
                e.i32(*p);
                Ok(())
            })?;
            e.tagged_fields(&t.tagged_fields, "v3_and_below_topics.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        Ok(Self {
            transactional_id: d.string("v3_and_below_transactional_id")?,
            producer_id: d.i64("v3_and_below_producer_id")?,
            producer_epoch: d.i16("v3_and_below_producer_epoch")?,
            topics: d.array("v3_and_below_topics", 2, |d| {
                Ok(AddPartitionsToTxnTopic {
                    name: d.string("v3_and_below_topics.name")?,
                    partitions: d.array("v3_and_below_topics.partitions", 4, |d| {
                        d.i32("v3_and_below_topics.partitions")
                    })?,
                    tagged_fields: d.tagged_fields("v3_and_below_topics.tagged_fields")?,
                })
            })?,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

impl Request for AddPartitionsToTxnRequest {
    type Response = AddPartitionsToTxnResponse;
}

kafka_message! {
    /// An AddPartitionsToTxn response (v0–v3).
    pub struct AddPartitionsToTxnResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if
        /// the request did not violate any quota.
        throttle_time_ms: i32,
        /// A result per requested topic.
        [rename "results_by_topic_v3_and_below"] results_by_topic: Vec<AddPartitionsToTxnTopicResult>,
    }
}

kafka_message! {
    /// An element of [`AddPartitionsToTxnResponse::results_by_topic`].
    pub struct AddPartitionsToTxnTopicResult {
        /// The topic name.
        name: String,
        /// A result per requested partition.
        results_by_partition: Vec<AddPartitionsToTxnPartitionResult>,
    }
}

kafka_message! {
    /// An element of [`AddPartitionsToTxnTopicResult::results_by_partition`].
    pub struct AddPartitionsToTxnPartitionResult {
        /// The partition index.
        partition_index: i32,
        /// The partition's error code, or 0 if it was added (OPERATION_NOT_ATTEMPTED when another
        /// partition of the request failed).
        partition_error_code: ErrorCode,
    }
}

impl Body for AddPartitionsToTxnResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.i32(self.throttle_time_ms);
        e.array(&self.results_by_topic, "results_by_topic_v3_and_below", |e, t| {
            e.string(&t.name, "results_by_topic_v3_and_below.name")?;
            e.array(
                &t.results_by_partition,
                "results_by_topic_v3_and_below.results_by_partition",
                |e, p| {
                    e.i32(p.partition_index);
                    e.i16(p.partition_error_code.0);
                    e.tagged_fields(
                        &p.tagged_fields,
                        "results_by_topic_v3_and_below.results_by_partition.tagged_fields",
                        version,
                    )
                },
            )?;
            e.tagged_fields(&t.tagged_fields, "results_by_topic_v3_and_below.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        Ok(Self {
            throttle_time_ms: d.i32("throttle_time_ms")?,
            results_by_topic: d.array("results_by_topic_v3_and_below", 2, |d| {
                Ok(AddPartitionsToTxnTopicResult {
                    name: d.string("results_by_topic_v3_and_below.name")?,
                    results_by_partition: d.array(
                        "results_by_topic_v3_and_below.results_by_partition",
                        6,
                        |d| {
                            Ok(AddPartitionsToTxnPartitionResult {
                                partition_index: d.i32(
                                    "results_by_topic_v3_and_below.results_by_partition.partition_index",
                                )?,
                                partition_error_code: ErrorCode(d.i16(
                                    "results_by_topic_v3_and_below.results_by_partition.partition_error_code",
                                )?),
                                tagged_fields: d.tagged_fields(
                                    "results_by_topic_v3_and_below.results_by_partition.tagged_fields",
                                )?,
                            })
                        },
                    )?,
                    tagged_fields: d.tagged_fields("results_by_topic_v3_and_below.tagged_fields")?,
                })
            })?,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{array, error_code, round_trip_every_version, string, tagged};
    use crate::protocol::tagged::TaggedFields;

    fn request(v: i16) -> impl Strategy<Value = AddPartitionsToTxnRequest> {
        let flexible = v >= 3;
        let topic = (string(), array(any::<i32>()), tagged(flexible)).prop_map(
            |(name, partitions, tagged_fields)| AddPartitionsToTxnTopic { name, partitions, tagged_fields },
        );
        (string(), any::<i64>(), any::<i16>(), array(topic), tagged(flexible)).prop_map(
            |(transactional_id, producer_id, producer_epoch, topics, tagged_fields)| {
                AddPartitionsToTxnRequest {
                    transactional_id,
                    producer_id,
                    producer_epoch,
                    topics,
                    tagged_fields,
                }
            },
        )
    }

    fn response(v: i16) -> impl Strategy<Value = AddPartitionsToTxnResponse> {
        let flexible = v >= 3;
        let partition = (any::<i32>(), error_code(), tagged(flexible)).prop_map(
            |(partition_index, partition_error_code, tagged_fields)| AddPartitionsToTxnPartitionResult {
                partition_index,
                partition_error_code,
                tagged_fields,
            },
        );
        let topic = (string(), array(partition), tagged(flexible)).prop_map(
            |(name, results_by_partition, tagged_fields)| AddPartitionsToTxnTopicResult {
                name,
                results_by_partition,
                tagged_fields,
            },
        );
        (any::<i32>(), array(topic), tagged(flexible)).prop_map(
            |(throttle_time_ms, results_by_topic, tagged_fields)| AddPartitionsToTxnResponse {
                throttle_time_ms,
                results_by_topic,
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
    fn a_request_for_two_partitions_of_one_topic_is_laid_out_as_kafka_writes_it() {
        let request = AddPartitionsToTxnRequest {
            transactional_id: "tx".into(),
            producer_id: 5,
            producer_epoch: 1,
            topics: vec![AddPartitionsToTxnTopic {
                name: "t".into(),
                partitions: vec![0, 2],
                tagged_fields: TaggedFields::default(),
            }],
            tagged_fields: TaggedFields::default(),
        };
        #[rustfmt::skip]
        let v3 = [
            3, b't', b'x', // compact string "tx"
            0, 0, 0, 0, 0, 0, 0, 5, // producer_id
            0, 1, // producer_epoch
            2, // one topic (compact array)
            2, b't', // "t"
            3, 0, 0, 0, 0, 0, 0, 0, 2, // partitions [0, 2]
            0, // topic's tagged fields
            0, // tagged fields
        ];
        assert_eq!(request.encode_body(3).unwrap(), v3);
        let back = AddPartitionsToTxnRequest::decode_body(Bytes::copy_from_slice(&v3), 3).unwrap();
        assert_eq!(back, request);
    }
}
