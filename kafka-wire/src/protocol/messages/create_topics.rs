//! CreateTopics (key 19): create topics with a partition count and replication factor or an
//! explicit replica assignment, plus topic configs. Sent to the controller (any broker forwards
//! it under KRaft). Kafka 4.0 removed v0–v1; kwire still speaks them to older brokers.

use bytes::Bytes;

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error::{DecodeError, DecodeErrorKind};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;
use kafka_vocab::Uuid;

/// CreateTopics's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::CREATE_TOPICS,
    name: "CreateTopics",
    versions: VersionRange::new(0, 7),
    flexible_from: Some(5),
};

/// The tag of `topic_config_error_code` in a result's tagged fields (v5+).
const TOPIC_CONFIG_ERROR_CODE_TAG: u32 = 0;

kafka_message! {
    /// A CreateTopics request (v0–v7).
    pub struct CreateTopicsRequest {
        /// The topics to create.
        topics: Vec<CreatableTopic>,
        /// How long to wait for the topics to be created, in ms (Kafka's default 60000).
        timeout_ms: i32,
        /// Added in v1: check the request without creating anything.
        [since 1] validate_only: Option<bool>,
    }
}

kafka_message! {
    /// An element of [`CreateTopicsRequest::topics`]: the topics to create.
    pub struct CreatableTopic {
        /// The topic name.
        name: String,
        /// −1 (v4+) for the broker default, or when `assignments` is given.
        num_partitions: i32,
        /// −1 (v4+) for the broker default, or when `assignments` is given.
        replication_factor: i16,
        /// Explicit replicas per partition; empty to let the controller place them.
        assignments: Vec<CreatableReplicaAssignment>,
        /// The custom topic configurations to set.
        configs: Vec<CreatableTopicConfig>,
    }
}

kafka_message! {
    /// An element of [`CreatableTopic::assignments`]: the manual partition assignment, or the empty array if we
    /// are using automatic assignment.
    pub struct CreatableReplicaAssignment {
        /// The partition index.
        partition_index: i32,
        /// The preferred leader first.
        broker_ids: Vec<i32>,
    }
}

kafka_message! {
    /// An element of [`CreatableTopic::configs`]: the custom topic configurations to set.
    pub struct CreatableTopicConfig {
        /// The configuration name.
        name: String,
        /// Nullable.
        value: Option<String>,
    }
}

impl Body for CreateTopicsRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.array(&self.topics, "topics", |e, t| {
            e.string(&t.name, "topics.name")?;
            e.i32(t.num_partitions);
            e.i16(t.replication_factor);
            e.array(&t.assignments, "topics.assignments", |e, a| {
                e.i32(a.partition_index);
                e.i32_array(&a.broker_ids, "topics.assignments.broker_ids")?;
                e.tagged_fields(&a.tagged_fields, "topics.assignments.tagged_fields", version)
            })?;
            e.array(&t.configs, "topics.configs", |e, c| {
                e.string(&c.name, "topics.configs.name")?;
                e.nullable_string(c.value.as_deref(), "topics.configs.value")?;
                e.tagged_fields(&c.tagged_fields, "topics.configs.tagged_fields", version)
            })?;
            e.tagged_fields(&t.tagged_fields, "topics.tagged_fields", version)
        })?;
        e.i32(self.timeout_ms);
        if version >= 1 {
            e.bool(self.validate_only.unwrap_or(false));
        }
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let topics = d.array("topics", 9, |d| {
            Ok(CreatableTopic {
                name: d.string("topics.name")?,
                num_partitions: d.i32("topics.num_partitions")?,
                replication_factor: d.i16("topics.replication_factor")?,
                assignments: d.array("topics.assignments", 5, |d| {
                    Ok(CreatableReplicaAssignment {
                        partition_index: d.i32("topics.assignments.partition_index")?,
                        broker_ids: d.i32_array("topics.assignments.broker_ids")?,
                        tagged_fields: d.tagged_fields("topics.assignments.tagged_fields")?,
                    })
                })?,
                configs: d.array("topics.configs", 2, |d| {
                    Ok(CreatableTopicConfig {
                        name: d.string("topics.configs.name")?,
                        value: d.nullable_string("topics.configs.value")?,
                        tagged_fields: d.tagged_fields("topics.configs.tagged_fields")?,
                    })
                })?,
                tagged_fields: d.tagged_fields("topics.tagged_fields")?,
            })
        })?;
        let timeout_ms = d.i32("timeout_ms")?;
        let validate_only = if version >= 1 { Some(d.bool("validate_only")?) } else { None };
        Ok(Self { topics, timeout_ms, validate_only, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

impl Request for CreateTopicsRequest {
    type Response = CreateTopicsResponse;
}

kafka_message! {
    /// A CreateTopics response (v0–v7).
    pub struct CreateTopicsResponse {
        /// Added in v2.
        [since 2] throttle_time_ms: Option<i32>,
        /// Results for each topic we tried to create.
        topics: Vec<CreatableTopicResult>,
    }
}

kafka_message! {
    /// An element of [`CreateTopicsResponse::topics`]: results for each topic we tried to create.
    pub struct CreatableTopicResult {
        /// The topic name.
        name: String,
        /// Added in v7: the new topic's id (zero on error).
        [since 7] topic_id: Option<Uuid>,
        /// The error code, or 0 if there was no error.
        error_code: ErrorCode,
        /// Added in v1 (nullable).
        [nullable since 1] error_message: Option<String>,
        /// v5+, a tagged field (tag 0): why the configs could not be returned. `None` when the
        /// broker left the tag out (Kafka omits it when it is 0). Modelled here, so tag 0 never
        /// appears in `tagged_fields`; a value set here replaces a raw tag 0 there when encoding.
        [since 5] topic_config_error_code: Option<ErrorCode>,
        /// Added in v5; −1 when unknown.
        [since 5] num_partitions: Option<i32>,
        /// Added in v5; −1 when unknown.
        [since 5] replication_factor: Option<i16>,
        /// Added in v5 (nullable): the topic's resulting configs.
        [nullable since 5] configs: Option<Vec<CreatableTopicConfigs>>,
    }
}

kafka_message! {
    /// One config of a created topic (v5+).
    pub struct CreatableTopicConfigs {
        /// The configuration name.
        name: String,
        /// Nullable (null for sensitive configs).
        value: Option<String>,
        /// True if the configuration is read-only.
        read_only: bool,
        /// Where the value comes from (Kafka's `ConfigSource` id); −1 unknown.
        config_source: i8,
        /// True if this configuration is sensitive.
        is_sensitive: bool,
    }
}

impl Body for CreateTopicsResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 2 {
            e.i32(self.throttle_time_ms.unwrap_or(0));
        }
        e.array(&self.topics, "topics", |e, t| {
            e.string(&t.name, "topics.name")?;
            if version >= 7 {
                e.uuid(t.topic_id.unwrap_or_default());
            }
            e.i16(t.error_code.0);
            if version >= 1 {
                e.nullable_string(t.error_message.as_deref(), "topics.error_message")?;
            }
            if version >= 5 {
                e.i32(t.num_partitions.unwrap_or(-1));
                e.i16(t.replication_factor.unwrap_or(-1));
                e.nullable_array(t.configs.as_deref(), "topics.configs", |e, c| {
                    e.string(&c.name, "topics.configs.name")?;
                    e.nullable_string(c.value.as_deref(), "topics.configs.value")?;
                    e.bool(c.read_only);
                    e.i8(c.config_source);
                    e.bool(c.is_sensitive);
                    e.tagged_fields(&c.tagged_fields, "topics.configs.tagged_fields", version)
                })?;
            }
            match t.topic_config_error_code {
                Some(code) if version >= 5 => {
                    let mut tags = t.tagged_fields.clone();
                    tags.put(TOPIC_CONFIG_ERROR_CODE_TAG, Bytes::copy_from_slice(&code.0.to_be_bytes()));
                    e.tagged_fields(&tags, "topics.tagged_fields", version)
                }
                _ => e.tagged_fields(&t.tagged_fields, "topics.tagged_fields", version),
            }
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if version >= 2 { Some(d.i32("throttle_time_ms")?) } else { None };
        let topics = d.array("topics", 3, |d| {
            let name = d.string("topics.name")?;
            let topic_id = if version >= 7 { Some(d.uuid("topics.topic_id")?) } else { None };
            let error_code = ErrorCode(d.i16("topics.error_code")?);
            let error_message = if version >= 1 { d.nullable_string("topics.error_message")? } else { None };
            let (num_partitions, replication_factor, configs) = if version >= 5 {
                let num_partitions = d.i32("topics.num_partitions")?;
                let replication_factor = d.i16("topics.replication_factor")?;
                let configs = d.nullable_array("topics.configs", 5, |d| {
                    Ok(CreatableTopicConfigs {
                        name: d.string("topics.configs.name")?,
                        value: d.nullable_string("topics.configs.value")?,
                        read_only: d.bool("topics.configs.read_only")?,
                        config_source: d.i8("topics.configs.config_source")?,
                        is_sensitive: d.bool("topics.configs.is_sensitive")?,
                        tagged_fields: d.tagged_fields("topics.configs.tagged_fields")?,
                    })
                })?;
                (Some(num_partitions), Some(replication_factor), configs)
            } else {
                (None, None, None)
            };
            let tags_at = d.position();
            let mut tagged_fields = d.tagged_fields("topics.tagged_fields")?;
            let topic_config_error_code = match tagged_fields.take(TOPIC_CONFIG_ERROR_CODE_TAG) {
                None => None,
                Some(payload) => match <[u8; 2]>::try_from(&payload[..]) {
                    Ok(raw) => Some(ErrorCode(i16::from_be_bytes(raw))),
                    Err(_) => {
                        return Err(DecodeError::new(
                            DecodeErrorKind::Invalid(format!(
                                "tagged topic_config_error_code has {} bytes, expected 2",
                                payload.len()
                            )),
                            "topics.topic_config_error_code",
                            tags_at,
                        ))
                    }
                },
            };
            Ok(CreatableTopicResult {
                name,
                topic_id,
                error_code,
                error_message,
                topic_config_error_code,
                num_partitions,
                replication_factor,
                configs,
                tagged_fields,
            })
        })?;
        Ok(Self { throttle_time_ms, topics, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{
        array, error_code, gated, nullable_string, round_trip_every_version, string, tagged, uuid,
    };
    use crate::protocol::tagged::TaggedFields;

    fn request(v: i16) -> impl Strategy<Value = CreateTopicsRequest> {
        let flexible = v >= 5;
        let assignment = (any::<i32>(), array(any::<i32>()), tagged(flexible)).prop_map(
            |(partition_index, broker_ids, tagged_fields)| CreatableReplicaAssignment {
                partition_index,
                broker_ids,
                tagged_fields,
            },
        );
        let config = (string(), nullable_string(), tagged(flexible))
            .prop_map(|(name, value, tagged_fields)| CreatableTopicConfig { name, value, tagged_fields });
        let topic =
            (string(), any::<i32>(), any::<i16>(), array(assignment), array(config), tagged(flexible))
                .prop_map(
                    |(name, num_partitions, replication_factor, assignments, configs, tagged_fields)| {
                        CreatableTopic {
                            name,
                            num_partitions,
                            replication_factor,
                            assignments,
                            configs,
                            tagged_fields,
                        }
                    },
                );
        (array(topic), any::<i32>(), gated(v >= 1, any::<bool>()), tagged(flexible)).prop_map(
            |(topics, timeout_ms, validate_only, tagged_fields)| CreateTopicsRequest {
                topics,
                timeout_ms,
                validate_only,
                tagged_fields,
            },
        )
    }

    fn response(v: i16) -> impl Strategy<Value = CreateTopicsResponse> {
        let flexible = v >= 5;
        let config =
            (string(), nullable_string(), any::<bool>(), any::<i8>(), any::<bool>(), tagged(flexible))
                .prop_map(|(name, value, read_only, config_source, is_sensitive, tagged_fields)| {
                    CreatableTopicConfigs {
                        name,
                        value,
                        read_only,
                        config_source,
                        is_sensitive,
                        tagged_fields,
                    }
                });
        let error_message = if v >= 1 { nullable_string() } else { Just(None).boxed() };
        let topic_config_error_code =
            if v >= 5 { proptest::option::of(error_code()).boxed() } else { Just(None).boxed() };
        let configs = if v >= 5 { proptest::option::of(array(config)).boxed() } else { Just(None).boxed() };
        let topic = (
            string(),
            gated(v >= 7, uuid()),
            error_code(),
            error_message,
            topic_config_error_code,
            gated(v >= 5, any::<i32>()),
            gated(v >= 5, any::<i16>()),
            configs,
            tagged(flexible),
        )
            .prop_map(
                |(
                    name,
                    topic_id,
                    error_code,
                    error_message,
                    topic_config_error_code,
                    num_partitions,
                    replication_factor,
                    configs,
                    tagged_fields,
                )| CreatableTopicResult {
                    name,
                    topic_id,
                    error_code,
                    error_message,
                    topic_config_error_code,
                    num_partitions,
                    replication_factor,
                    configs,
                    tagged_fields,
                },
            );
        (gated(v >= 2, any::<i32>()), array(topic), tagged(flexible)).prop_map(
            |(throttle_time_ms, topics, tagged_fields)| CreateTopicsResponse {
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
    fn a_v5_result_carries_topic_config_error_code_as_tag_0() {
        #[rustfmt::skip]
        let body = [
            0, 0, 0, 0, // throttle_time_ms
            2, 2, b't', // topics: 1, "t"
            0, 0, 0, // error_code NONE, error_message null
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // num_partitions -1, replication_factor -1
            0, // configs null
            2, // topic tags: 2
            0, 2, 0, 29, // tag 0, 2 bytes: TOPIC_AUTHORIZATION_FAILED
            20, 1, 0xab, // tag 20 (unknown), 1 byte
            0, // body tags
        ];
        let decoded = CreateTopicsResponse::decode_body(Bytes::copy_from_slice(&body), 5).unwrap();
        let t = &decoded.topics[0];
        assert_eq!(t.topic_config_error_code, Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED));
        assert_eq!(t.tagged_fields, TaggedFields::new(vec![(20, Bytes::from_static(&[0xab]))]));
        assert_eq!((t.num_partitions, t.replication_factor, &t.configs), (Some(-1), Some(-1), &None));
        assert_eq!(decoded.encode_body(5).unwrap(), body);
    }

    #[test]
    fn a_tagged_topic_config_error_code_of_the_wrong_size_is_an_error() {
        let body = [0, 0, 0, 0, 2, 2, b't', 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 1, 0, 1, 7, 0];
        let err = CreateTopicsResponse::decode_body(Bytes::copy_from_slice(&body), 5).unwrap_err();
        assert_eq!(err.field, "topics.topic_config_error_code");
    }

    #[test]
    fn a_v7_result_returns_the_topic_id() {
        let id = Uuid([7; 16]);
        let response = CreateTopicsResponse {
            throttle_time_ms: Some(0),
            topics: vec![CreatableTopicResult {
                name: "t".into(),
                topic_id: Some(id),
                num_partitions: Some(3),
                replication_factor: Some(2),
                configs: Some(vec![]),
                ..Default::default()
            }],
            ..Default::default()
        };
        let encoded = response.encode_body(7).unwrap();
        assert_eq!(&encoded[4..7], &[2, 2, b't']);
        assert_eq!(&encoded[7..23], &[7; 16]);
        assert_eq!(CreateTopicsResponse::decode_body(Bytes::from(encoded), 7).unwrap(), response);
    }

    #[test]
    fn a_v0_request_has_no_validate_only() {
        let request = CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: "t".into(),
                num_partitions: 3,
                replication_factor: 1,
                ..Default::default()
            }],
            timeout_ms: 60_000,
            ..Default::default()
        };
        #[rustfmt::skip]
        let expected = [
            0, 0, 0, 1, 0, 1, b't', // topics: 1, "t"
            0, 0, 0, 3, 0, 1, // num_partitions 3, replication_factor 1
            0, 0, 0, 0, 0, 0, 0, 0, // assignments: 0, configs: 0
            0, 0, 0xea, 0x60, // timeout_ms 60000
        ];
        assert_eq!(request.encode_body(0).unwrap(), expected);
    }
}
