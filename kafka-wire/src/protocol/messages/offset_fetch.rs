//! OffsetFetch (key 9): a group's committed offsets, from the group coordinator.
//!
//! v0 read offsets from ZooKeeper on pre-4.0 brokers, v1+ from `__consumer_offsets`. v0–v7 ask
//! about one group (`group_id`, `topics`); v8+ batch several groups in `groups`, and the
//! response answers per group. A null topic list (v2+) asks for every topic the group has
//! offsets for. v10 (Kafka 4.1, topic ids) is marked unstable there and is not supported.

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error::EncodeError;
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;
use crate::protocol::tagged::TaggedFields;

/// OffsetFetch's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::OFFSET_FETCH,
    name: "OffsetFetch",
    versions: VersionRange::new(0, 9),
    flexible_from: Some(6),
};

kafka_message! {
    /// An OffsetFetch request (v0–v9).
    pub struct OffsetFetchRequest {
        /// v0–v7 only.
        [since 0 until 7] group_id: Option<String>,
        /// v0–v7 only; `None` (null, v2+) asks for all topics. v0–v1 cannot express null.
        [nullable since 0 until 7] topics: Option<Vec<OffsetFetchRequestTopic>>,
        /// Added in v8: the batched form, one entry per group.
        [since 8] groups: Option<Vec<OffsetFetchRequestGroup>>,
        /// Added in v7: fail partitions with pending transactional commits (UNSTABLE_OFFSET_COMMIT)
        /// instead of returning the last stable offset.
        [since 7] require_stable: Option<bool>,
    }
}

kafka_message! {
    /// Partitions of one topic to fetch offsets for. Kafka calls the v8+ copy of this struct
    /// `OffsetFetchRequestTopics`; the two have the same fields.
    pub struct OffsetFetchRequestTopic {
        /// The topic name.
        name: String,
        /// The partition indexes we would like to fetch offsets for.
        partition_indexes: Vec<i32>,
    }
}

kafka_message! {
    /// One group in a batched (v8+) request.
    pub struct OffsetFetchRequestGroup {
        /// The group ID.
        group_id: String,
        /// Added in v9 (nullable): the member id under the KIP-848 consumer protocol.
        [nullable since 9] member_id: Option<String>,
        /// Added in v9: the member epoch under the KIP-848 protocol, −1 otherwise.
        [since 9] member_epoch: Option<i32>,
        /// `None` (null) asks for all topics.
        topics: Option<Vec<OffsetFetchRequestTopic>>,
    }
}

impl OffsetFetchRequest {
    /// Offsets of one group at `version`, in the single-group (v0–v7) or batched (v8+) form.
    /// `topics: None` asks for all topics (v2+).
    pub fn for_group(group_id: &str, topics: Option<Vec<OffsetFetchRequestTopic>>, version: i16) -> Self {
        let require_stable = (version >= 7).then_some(false);
        if version >= 8 {
            Self {
                groups: Some(vec![OffsetFetchRequestGroup {
                    group_id: group_id.to_owned(),
                    member_id: None,
                    member_epoch: (version >= 9).then_some(-1),
                    topics,
                    tagged_fields: TaggedFields::default(),
                }]),
                require_stable,
                ..Self::default()
            }
        } else {
            Self { group_id: Some(group_id.to_owned()), topics, require_stable, ..Self::default() }
        }
    }
}

fn write_request_topic(e: &mut Encoder, t: &OffsetFetchRequestTopic, version: i16) -> EncodeResult {
    e.string(&t.name, "topics.name")?;
    e.i32_array(&t.partition_indexes, "topics.partition_indexes")?;
    e.tagged_fields(&t.tagged_fields, "topics.tagged_fields", version)
}

fn read_request_topic(d: &mut Decoder) -> DecodeResult<OffsetFetchRequestTopic> {
    Ok(OffsetFetchRequestTopic {
        name: d.string("topics.name")?,
        partition_indexes: d.i32_array("topics.partition_indexes")?,
        tagged_fields: d.tagged_fields("topics.tagged_fields")?,
    })
}

impl Body for OffsetFetchRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version <= 7 {
            e.string(self.group_id.as_deref().unwrap_or_default(), "group_id")?;
            if version <= 1 && self.topics.is_none() {
                return Err(EncodeError::FieldNotInVersion { field: "topics", version });
            }
            e.nullable_array(self.topics.as_deref(), "topics", |e, t| write_request_topic(e, t, version))?;
        } else {
            e.array(self.groups.as_deref().unwrap_or_default(), "groups", |e, g| {
                e.string(&g.group_id, "groups.group_id")?;
                if version >= 9 {
                    e.nullable_string(g.member_id.as_deref(), "groups.member_id")?;
                    e.i32(g.member_epoch.unwrap_or(-1));
                }
                e.nullable_array(g.topics.as_deref(), "groups.topics", |e, t| {
                    write_request_topic(e, t, version)
                })?;
                e.tagged_fields(&g.tagged_fields, "groups.tagged_fields", version)
            })?;
        }
        if version >= 7 {
            e.bool(self.require_stable.unwrap_or(false));
        }
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let mut out = Self::default();
        if version <= 7 {
            out.group_id = Some(d.string("group_id")?);
            out.topics = if version <= 1 {
                Some(d.array("topics", 2, read_request_topic)?)
            } else {
                d.nullable_array("topics", 2, read_request_topic)?
            };
        } else {
            out.groups = Some(d.array("groups", 2, |d| {
                let group_id = d.string("groups.group_id")?;
                let (member_id, member_epoch) = if version >= 9 {
                    (d.nullable_string("groups.member_id")?, Some(d.i32("groups.member_epoch")?))
                } else {
                    (None, None)
                };
                Ok(OffsetFetchRequestGroup {
                    group_id,
                    member_id,
                    member_epoch,
                    topics: d.nullable_array("groups.topics", 2, read_request_topic)?,
                    tagged_fields: d.tagged_fields("groups.tagged_fields")?,
                })
            })?);
        }
        if version >= 7 {
            out.require_stable = Some(d.bool("require_stable")?);
        }
        out.tagged_fields = d.tagged_fields("tagged_fields")?;
        Ok(out)
    }
}

impl Request for OffsetFetchRequest {
    type Response = OffsetFetchResponse;
}

kafka_message! {
    /// An OffsetFetch response (v0–v9).
    pub struct OffsetFetchResponse {
        /// Added in v3.
        [since 3] throttle_time_ms: Option<i32>,
        /// v0–v7 only.
        [since 0 until 7] topics: Option<Vec<OffsetFetchResponseTopic>>,
        /// v2–v7 only: a group- or coordinator-level error (v0–v1 report it per partition).
        [since 2 until 7] error_code: Option<ErrorCode>,
        /// Added in v8: one result per requested group.
        [since 8] groups: Option<Vec<OffsetFetchResponseGroup>>,
    }
}

kafka_message! {
    /// Kafka calls the v8+ copy of this struct `OffsetFetchResponseTopics`; same fields.
    pub struct OffsetFetchResponseTopic {
        /// The topic name.
        name: String,
        /// The responses per partition.
        partitions: Vec<OffsetFetchResponsePartition>,
    }
}

kafka_message! {
    /// Kafka calls the v8+ copy of this struct `OffsetFetchResponsePartitions`; same fields.
    pub struct OffsetFetchResponsePartition {
        /// The partition index.
        partition_index: i32,
        /// −1 when the group has no committed offset for the partition.
        committed_offset: i64,
        /// Added in v5: the leader epoch of the committed offset's record, −1 if unknown.
        [since 5] committed_leader_epoch: Option<i32>,
        /// The metadata string committed with the offset (nullable).
        metadata: Option<String>,
        /// The error code, or 0 if there was no error.
        error_code: ErrorCode,
    }
}

kafka_message! {
    /// One group's offsets in a batched (v8+) response.
    pub struct OffsetFetchResponseGroup {
        /// The group ID.
        group_id: String,
        /// The responses per topic.
        topics: Vec<OffsetFetchResponseTopic>,
        /// The group-level error code, or 0 if there was no error.
        error_code: ErrorCode,
    }
}

fn write_response_topic(e: &mut Encoder, t: &OffsetFetchResponseTopic, version: i16) -> EncodeResult {
    e.string(&t.name, "topics.name")?;
    e.array(&t.partitions, "topics.partitions", |e, p| {
        e.i32(p.partition_index);
        e.i64(p.committed_offset);
        if version >= 5 {
            e.i32(p.committed_leader_epoch.unwrap_or(-1));
        }
        e.nullable_string(p.metadata.as_deref(), "topics.partitions.metadata")?;
        e.i16(p.error_code.0);
        e.tagged_fields(&p.tagged_fields, "topics.partitions.tagged_fields", version)
    })?;
    e.tagged_fields(&t.tagged_fields, "topics.tagged_fields", version)
}

fn read_response_topic(d: &mut Decoder, version: i16) -> DecodeResult<OffsetFetchResponseTopic> {
    Ok(OffsetFetchResponseTopic {
        name: d.string("topics.name")?,
        partitions: d.array("topics.partitions", 15, |d| {
            Ok(OffsetFetchResponsePartition {
                partition_index: d.i32("topics.partitions.partition_index")?,
                committed_offset: d.i64("topics.partitions.committed_offset")?,
                committed_leader_epoch: if version >= 5 {
                    Some(d.i32("topics.partitions.committed_leader_epoch")?)
                } else {
                    None
                },
                metadata: d.nullable_string("topics.partitions.metadata")?,
                error_code: ErrorCode(d.i16("topics.partitions.error_code")?),
                tagged_fields: d.tagged_fields("topics.partitions.tagged_fields")?,
            })
        })?,
        tagged_fields: d.tagged_fields("topics.tagged_fields")?,
    })
}

impl Body for OffsetFetchResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 3 {
            e.i32(self.throttle_time_ms.unwrap_or(0));
        }
        if version <= 7 {
            e.array(self.topics.as_deref().unwrap_or_default(), "topics", |e, t| {
                write_response_topic(e, t, version)
            })?;
            if version >= 2 {
                e.i16(self.error_code.unwrap_or_default().0);
            }
        } else {
            e.array(self.groups.as_deref().unwrap_or_default(), "groups", |e, g| {
                e.string(&g.group_id, "groups.group_id")?;
                e.array(&g.topics, "groups.topics", |e, t| write_response_topic(e, t, version))?;
                e.i16(g.error_code.0);
                e.tagged_fields(&g.tagged_fields, "groups.tagged_fields", version)
            })?;
        }
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let mut out = Self::default();
        if version >= 3 {
            out.throttle_time_ms = Some(d.i32("throttle_time_ms")?);
        }
        if version <= 7 {
            out.topics = Some(d.array("topics", 2, |d| read_response_topic(d, version))?);
            if version >= 2 {
                out.error_code = Some(ErrorCode(d.i16("error_code")?));
            }
        } else {
            out.groups = Some(d.array("groups", 4, |d| {
                Ok(OffsetFetchResponseGroup {
                    group_id: d.string("groups.group_id")?,
                    topics: d.array("groups.topics", 2, |d| read_response_topic(d, version))?,
                    error_code: ErrorCode(d.i16("groups.error_code")?),
                    tagged_fields: d.tagged_fields("groups.tagged_fields")?,
                })
            })?);
        }
        out.tagged_fields = d.tagged_fields("tagged_fields")?;
        Ok(out)
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

    fn request_topic(flexible: bool) -> impl Strategy<Value = OffsetFetchRequestTopic> {
        (string(), array(any::<i32>()), tagged(flexible)).prop_map(
            |(name, partition_indexes, tagged_fields)| OffsetFetchRequestTopic {
                name,
                partition_indexes,
                tagged_fields,
            },
        )
    }

    fn request(v: i16) -> impl Strategy<Value = OffsetFetchRequest> {
        let flexible = v >= 6;
        let topics = match v {
            0..=1 => array(request_topic(flexible)).prop_map(Some).boxed(),
            2..=7 => proptest::option::of(array(request_topic(flexible))).boxed(),
            _ => Just(None).boxed(),
        };
        let member_id = if v >= 9 { nullable_string() } else { Just(None).boxed() };
        let group = (
            string(),
            member_id,
            gated(v >= 9, any::<i32>()),
            proptest::option::of(array(request_topic(flexible))),
            tagged(flexible),
        )
            .prop_map(|(group_id, member_id, member_epoch, topics, tagged_fields)| {
                OffsetFetchRequestGroup { group_id, member_id, member_epoch, topics, tagged_fields }
            });
        (
            gated(v <= 7, string()),
            topics,
            gated(v >= 8, array(group)),
            gated(v >= 7, any::<bool>()),
            tagged(flexible),
        )
            .prop_map(|(group_id, topics, groups, require_stable, tagged_fields)| {
                OffsetFetchRequest { group_id, topics, groups, require_stable, tagged_fields }
            })
    }

    fn response_topic(v: i16) -> impl Strategy<Value = OffsetFetchResponseTopic> {
        let flexible = v >= 6;
        let partition = (
            any::<i32>(),
            any::<i64>(),
            gated(v >= 5, any::<i32>()),
            nullable_string(),
            error_code(),
            tagged(flexible),
        )
            .prop_map(
                |(
                    partition_index,
                    committed_offset,
                    committed_leader_epoch,
                    metadata,
                    error_code,
                    tagged_fields,
                )| {
                    OffsetFetchResponsePartition {
                        partition_index,
                        committed_offset,
                        committed_leader_epoch,
                        metadata,
                        error_code,
                        tagged_fields,
                    }
                },
            );
        (string(), array(partition), tagged(flexible)).prop_map(|(name, partitions, tagged_fields)| {
            OffsetFetchResponseTopic { name, partitions, tagged_fields }
        })
    }

    fn response(v: i16) -> impl Strategy<Value = OffsetFetchResponse> {
        let flexible = v >= 6;
        let group = (string(), array(response_topic(v)), error_code(), tagged(flexible)).prop_map(
            |(group_id, topics, error_code, tagged_fields)| OffsetFetchResponseGroup {
                group_id,
                topics,
                error_code,
                tagged_fields,
            },
        );
        (
            gated(v >= 3, any::<i32>()),
            gated(v <= 7, array(response_topic(v))),
            gated((2..=7).contains(&v), error_code()),
            gated(v >= 8, array(group)),
            tagged(flexible),
        )
            .prop_map(|(throttle_time_ms, topics, error_code, groups, tagged_fields)| {
                OffsetFetchResponse { throttle_time_ms, topics, error_code, groups, tagged_fields }
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
    fn a_v1_request_cannot_ask_for_all_topics() {
        let request = OffsetFetchRequest::for_group("g", None, 1);
        let err = request.encode_body(1).unwrap_err();
        assert_eq!(err, EncodeError::FieldNotInVersion { field: "topics", version: 1 });
        // v2 can: a null array.
        assert_eq!(
            OffsetFetchRequest::for_group("g", None, 2).encode_body(2).unwrap(),
            [0, 1, b'g', 0xff, 0xff, 0xff, 0xff]
        );
    }

    #[test]
    fn a_v8_request_batches_groups_and_a_null_topic_list_means_all() {
        let request = OffsetFetchRequest {
            groups: Some(vec![
                OffsetFetchRequestGroup {
                    group_id: "a".into(),
                    topics: Some(vec![OffsetFetchRequestTopic {
                        name: "t".into(),
                        partition_indexes: vec![0, 2],
                        ..Default::default()
                    }]),
                    ..Default::default()
                },
                OffsetFetchRequestGroup { group_id: "b".into(), topics: None, ..Default::default() },
            ]),
            require_stable: Some(true),
            ..Default::default()
        };
        #[rustfmt::skip]
        let expected = [
            3, // groups: 2
            2, b'a', // group_id "a"
            2, 2, b't', 3, 0, 0, 0, 0, 0, 0, 0, 2, 0, // topics: 1, "t", partitions [0, 2], tags
            0, // group tags
            2, b'b', 0, 0, // group "b", topics null, tags
            1, // require_stable
            0, // body tags
        ];
        assert_eq!(request.encode_body(8).unwrap(), expected);
        assert_eq!(OffsetFetchRequest::decode_body(Bytes::copy_from_slice(&expected), 8).unwrap(), request);
    }

    #[test]
    fn a_v8_response_answers_per_group() {
        #[rustfmt::skip]
        let body = [
            0, 0, 0, 0, // throttle_time_ms
            3, // groups: 2
            2, b'a', // group_id "a"
            2, 2, b't', // topics: 1, "t"
            2, // partitions: 1
            0, 0, 0, 1, // partition_index 1
            0, 0, 0, 0, 0, 0, 0, 100, // committed_offset 100
            0, 0, 0, 4, // committed_leader_epoch 4
            1, // metadata ""
            0, 0, 0, // error_code NONE, partition tags
            0, // topic tags
            0, 0, 0, // group error NONE, group tags
            2, b'b', 1, 0, 69, 0, // group "b": no topics, GROUP_ID_NOT_FOUND
            0, // body tags
        ];
        let decoded = OffsetFetchResponse::decode_body(Bytes::copy_from_slice(&body), 8).unwrap();
        assert_eq!(decoded.topics, None);
        let groups = decoded.groups.as_deref().unwrap();
        let p = &groups[0].topics[0].partitions[0];
        assert_eq!((p.partition_index, p.committed_offset, p.committed_leader_epoch), (1, 100, Some(4)));
        assert_eq!(p.metadata.as_deref(), Some(""));
        assert_eq!((groups[1].group_id.as_str(), groups[1].error_code.0), ("b", 69));
        assert_eq!(decoded.encode_body(8).unwrap(), body);
    }

    #[test]
    fn a_v1_response_reports_errors_per_partition_only() {
        #[rustfmt::skip]
        let body = [
            0, 0, 0, 1, 0, 1, b't', // topics: 1, "t"
            0, 0, 0, 1, 0, 0, 0, 0, // partitions: 1, index 0
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // committed_offset -1 (none)
            0xff, 0xff, // metadata null
            0, 0, // error_code NONE
        ];
        let decoded = OffsetFetchResponse::decode_body(Bytes::copy_from_slice(&body), 1).unwrap();
        let p = &decoded.topics.as_deref().unwrap()[0].partitions[0];
        assert_eq!((p.committed_offset, p.committed_leader_epoch, p.metadata.as_deref()), (-1, None, None));
        assert_eq!((decoded.throttle_time_ms, decoded.error_code), (None, None));
        assert_eq!(decoded.encode_body(1).unwrap(), body);
    }
}
