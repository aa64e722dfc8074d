//! CreatePartitions (key 37): raise topics' partition counts, optionally placing the new
//! partitions' replicas. Sent to the controller (any broker forwards it under KRaft).

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;

/// CreatePartitions's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::CREATE_PARTITIONS,
    name: "CreatePartitions",
    versions: VersionRange::new(0, 3),
    flexible_from: Some(2),
};

kafka_message! {
    /// A CreatePartitions request (v0–v3).
    pub struct CreatePartitionsRequest {
        /// Each topic that we want to create new partitions inside.
        topics: Vec<CreatePartitionsTopic>,
        /// How long to wait for the partitions to be created, in ms.
        timeout_ms: i32,
        /// Check the request without creating anything.
        validate_only: bool,
    }
}

kafka_message! {
    /// An element of [`CreatePartitionsRequest::topics`]: each topic that we want to create new partitions
    /// inside.
    pub struct CreatePartitionsTopic {
        /// The topic name.
        name: String,
        /// The new total partition count.
        count: i32,
        /// Replicas of each new partition, or `None` (null) to let the controller place them.
        assignments: Option<Vec<CreatePartitionsAssignment>>,
    }
}

kafka_message! {
    /// An element of [`CreatePartitionsTopic::assignments`]: the new partition assignments.
    pub struct CreatePartitionsAssignment {
        /// The assigned broker IDs.
        broker_ids: Vec<i32>,
    }
}

impl Body for CreatePartitionsRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.array(&self.topics, "topics", |e, t| {
            e.string(&t.name, "topics.name")?;
            e.i32(t.count);
            e.nullable_array(t.assignments.as_deref(), "topics.assignments", |e, a| {
                e.i32_array(&a.broker_ids, "topics.assignments.broker_ids")?;
                e.tagged_fields(&a.tagged_fields, "topics.assignments.tagged_fields", version)
            })?;
            e.tagged_fields(&t.tagged_fields, "topics.tagged_fields", version)
        })?;
        e.i32(self.timeout_ms);
        e.bool(self.validate_only);
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        let topics = d.array("topics", 6, |d| {
            Ok(CreatePartitionsTopic {
                name: d.string("topics.name")?,
                count: d.i32("topics.count")?,
                assignments: d.nullable_array("topics.assignments", 1, |d| {
                    Ok(CreatePartitionsAssignment {
                        broker_ids: d.i32_array("topics.assignments.broker_ids")?,
                        tagged_fields: d.tagged_fields("topics.assignments.tagged_fields")?,
                    })
                })?,
                tagged_fields: d.tagged_fields("topics.tagged_fields")?,
            })
        })?;
        Ok(Self {
            topics,
            timeout_ms: d.i32("timeout_ms")?,
            validate_only: d.bool("validate_only")?,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

impl Request for CreatePartitionsRequest {
    type Response = CreatePartitionsResponse;
}

kafka_message! {
    /// A CreatePartitions response (v0–v3).
    pub struct CreatePartitionsResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if
        /// the request did not violate any quota.
        throttle_time_ms: i32,
        /// The partition creation results for each topic.
        results: Vec<CreatePartitionsTopicResult>,
    }
}

kafka_message! {
    /// An element of [`CreatePartitionsResponse::results`]: the partition creation results for each topic.
    pub struct CreatePartitionsTopicResult {
        /// The topic name.
        name: String,
        /// The result error, or zero if there was no error.
        error_code: ErrorCode,
        /// Nullable.
        error_message: Option<String>,
    }
}

impl Body for CreatePartitionsResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.i32(self.throttle_time_ms);
        e.array(&self.results, "results", |e, r| {
            e.string(&r.name, "results.name")?;
            e.i16(r.error_code.0);
            e.nullable_string(r.error_message.as_deref(), "results.error_message")?;
            e.tagged_fields(&r.tagged_fields, "results.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = d.i32("throttle_time_ms")?;
        let results = d.array("results", 4, |d| {
            Ok(CreatePartitionsTopicResult {
                name: d.string("results.name")?,
                error_code: ErrorCode(d.i16("results.error_code")?),
                error_message: d.nullable_string("results.error_message")?,
                tagged_fields: d.tagged_fields("results.tagged_fields")?,
            })
        })?;
        Ok(Self { throttle_time_ms, results, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{
        array, error_code, nullable_string, round_trip_every_version, string, tagged,
    };

    fn request(v: i16) -> impl Strategy<Value = CreatePartitionsRequest> {
        let flexible = v >= 2;
        let assignment = (array(any::<i32>()), tagged(flexible))
            .prop_map(|(broker_ids, tagged_fields)| CreatePartitionsAssignment { broker_ids, tagged_fields });
        let topic = (string(), any::<i32>(), proptest::option::of(array(assignment)), tagged(flexible))
            .prop_map(|(name, count, assignments, tagged_fields)| CreatePartitionsTopic {
                name,
                count,
                assignments,
                tagged_fields,
            });
        (array(topic), any::<i32>(), any::<bool>(), tagged(flexible)).prop_map(
            |(topics, timeout_ms, validate_only, tagged_fields)| CreatePartitionsRequest {
                topics,
                timeout_ms,
                validate_only,
                tagged_fields,
            },
        )
    }

    fn response(v: i16) -> impl Strategy<Value = CreatePartitionsResponse> {
        let flexible = v >= 2;
        let result = (string(), error_code(), nullable_string(), tagged(flexible)).prop_map(
            |(name, error_code, error_message, tagged_fields)| CreatePartitionsTopicResult {
                name,
                error_code,
                error_message,
                tagged_fields,
            },
        );
        (any::<i32>(), array(result), tagged(flexible)).prop_map(
            |(throttle_time_ms, results, tagged_fields)| CreatePartitionsResponse {
                throttle_time_ms,
                results,
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
    fn a_null_assignment_lets_the_controller_place_replicas() {
        let request = CreatePartitionsRequest {
            topics: vec![CreatePartitionsTopic {
                name: "t".into(),
                count: 6,
                assignments: None,
                ..Default::default()
            }],
            timeout_ms: 1,
            validate_only: true,
            ..Default::default()
        };
        let v1 = [0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 6, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 1];
        assert_eq!(request.encode_body(1).unwrap(), v1);
        let v2 = [2, 2, b't', 0, 0, 0, 6, 0, 0, 0, 0, 0, 1, 1, 0];
        assert_eq!(request.encode_body(2).unwrap(), v2);
        assert_eq!(CreatePartitionsRequest::decode_body(Bytes::copy_from_slice(&v2), 2).unwrap(), request);
    }
}
