//! Produce (key 0): append record batches to partition leaders.
//!
//! Versions 0–13: v1 throttle time; v2 log append time; v3 transactional id and magic-2
//! batches (Kafka 4 brokers accept v3+ only); v5 log start offset; v7 zstd; v8 per-record
//! errors (KIP-467); v9 flexible; v10 tagged CurrentLeader and NodeEndpoints (KIP-951); v13
//! topic ids instead of names (4.1).
//!
//! `records` is raw [`Bytes`]: encode batches with
//! [`RecordBatch::encode`](crate::protocol::records::RecordBatch::encode) and put them here.

use bytes::Bytes;

use super::fetch::{
    leader_payload, node_endpoints_payload, read_leader, read_node_endpoints, read_tag, take_tag, write_tags,
    LeaderIdAndEpoch, NodeEndpoint,
};
use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;
use kafka_vocab::Uuid;

/// Produce's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::PRODUCE,
    name: "Produce",
    versions: VersionRange::new(0, 13),
    flexible_from: Some(9),
};

kafka_message! {
    /// A Produce request (v0–v13).
    pub struct ProduceRequest {
        /// Added in v3 (nullable): the transactional id, or null for a non-transactional producer.
        [nullable since 3] transactional_id: Option<String>,
        /// 0 (no response is sent), 1 (leader only) or −1 (all in-sync replicas).
        acks: i16,
        /// The timeout to await a response in milliseconds.
        timeout_ms: i32,
        /// Each topic to produce to.
        topic_data: Vec<TopicProduceData>,
    }
}

kafka_message! {
    /// An element of [`ProduceRequest::topic_data`]: each topic to produce to.
    pub struct TopicProduceData {
        /// v0–12.
        [since 0 until 12] name: Option<String>,
        /// Added in v13 (replacing the name).
        [since 13] topic_id: Option<Uuid>,
        /// Each partition to produce to.
        partition_data: Vec<PartitionProduceData>,
    }
}

kafka_message! {
    /// An element of [`TopicProduceData::partition_data`]: each partition to produce to.
    pub struct PartitionProduceData {
        /// The partition index.
        index: i32,
        /// Encoded record batches (magic 2 from v3; legacy message sets before).
        #[cfg_attr(feature = "json", serde(serialize_with = "crate::protocol::json::records"))]
        records: Option<Bytes>,
    }
}

fn write_topic_key(
    e: &mut Encoder,
    name: Option<&str>,
    id: Option<Uuid>,
    field: &'static str,
    version: i16,
) -> EncodeResult {
    if version >= 13 {
        e.uuid(id.unwrap_or_default());
        Ok(())
    } else {
        e.string(name.unwrap_or_default(), field)
    }
}

fn read_topic_key(
    d: &mut Decoder,
    field: &'static str,
    version: i16,
) -> DecodeResult<(Option<String>, Option<Uuid>)> {
    if version >= 13 {
        Ok((None, Some(d.uuid(field)?)))
    } else {
        Ok((Some(d.string(field)?), None))
    }
}

impl Body for ProduceRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 3 {
            e.nullable_string(self.transactional_id.as_deref(), "transactional_id")?;
        }
        e.i16(self.acks);
        e.i32(self.timeout_ms);
        e.array(&self.topic_data, "topic_data", |e, t| {
            write_topic_key(e, t.name.as_deref(), t.topic_id, "topic_data.name", version)?;
            e.array(&t.partition_data, "topic_data.partition_data", |e, p| {
                e.i32(p.index);
                e.shared_nullable_bytes(p.records.as_ref(), "topic_data.partition_data.records")?;
                e.tagged_fields(&p.tagged_fields, "topic_data.partition_data.tagged_fields", version)
            })?;
            e.tagged_fields(&t.tagged_fields, "topic_data.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let transactional_id = if version >= 3 { d.nullable_string("transactional_id")? } else { None };
        let acks = d.i16("acks")?;
        let timeout_ms = d.i32("timeout_ms")?;
        let topic_data = d.array("topic_data", 2, |d| {
            let (name, topic_id) = read_topic_key(d, "topic_data.name", version)?;
            let partition_data = d.array("topic_data.partition_data", 5, |d| {
                Ok(PartitionProduceData {
                    index: d.i32("topic_data.partition_data.index")?,
                    records: d.nullable_bytes("topic_data.partition_data.records")?,
                    tagged_fields: d.tagged_fields("topic_data.partition_data.tagged_fields")?,
                })
            })?;
            Ok(TopicProduceData {
                name,
                topic_id,
                partition_data,
                tagged_fields: d.tagged_fields("topic_data.tagged_fields")?,
            })
        })?;
        Ok(Self {
            transactional_id,
            acks,
            timeout_ms,
            topic_data,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

impl Request for ProduceRequest {
    type Response = ProduceResponse;
}

kafka_message! {
    /// A Produce response (v0–v13).
    pub struct ProduceResponse {
        /// Each produce response.
        responses: Vec<TopicProduceResponse>,
        /// Added in v1.
        [since 1] throttle_time_ms: Option<i32>,
        /// Tagged (tag 0) from v10: endpoints of the leaders named in `current_leader`; empty is
        /// omitted.
        [vec since 10] node_endpoints: Vec<NodeEndpoint>,
    }
}

kafka_message! {
    /// An element of [`ProduceResponse::responses`]: each produce response.
    pub struct TopicProduceResponse {
        /// v0–12.
        [since 0 until 12] name: Option<String>,
        /// Added in v13.
        [since 13] topic_id: Option<Uuid>,
        /// Each partition that we produced to within the topic.
        partition_responses: Vec<PartitionProduceResponse>,
    }
}

kafka_message! {
    /// An element of [`TopicProduceResponse::partition_responses`]: each partition that we produced to within the
    /// topic.
    pub struct PartitionProduceResponse {
        /// The partition index.
        index: i32,
        /// The error code, or 0 if there was no error.
        error_code: ErrorCode,
        /// Offset given to the first record appended.
        base_offset: i64,
        /// Added in v2: the broker's append time for LogAppendTime topics, else −1.
        [since 2] log_append_time_ms: Option<i64>,
        /// Added in v5.
        [since 5] log_start_offset: Option<i64>,
        /// Added in v8: which records made the batch fail.
        [since 8] record_errors: Option<Vec<BatchIndexAndErrorMessage>>,
        /// Added in v8 (nullable).
        [nullable since 8] error_message: Option<String>,
        /// Tagged (tag 0) from v10: the leader, when the request went to the wrong broker.
        [since 10] current_leader: Option<LeaderIdAndEpoch>,
    }
}

kafka_message! {
    /// An element of [`PartitionProduceResponse::record_errors`]: the batch indices of records that caused the
    /// batch to be dropped. Added in v8.
    pub struct BatchIndexAndErrorMessage {
        /// Index of the record within its batch.
        batch_index: i32,
        /// The error message of the record that caused the batch to be dropped.
        batch_index_error_message: Option<String>,
    }
}

impl Body for ProduceResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.array(&self.responses, "responses", |e, t| {
            write_topic_key(e, t.name.as_deref(), t.topic_id, "responses.name", version)?;
            e.array(&t.partition_responses, "responses.partition_responses", |e, p| {
                e.i32(p.index);
                e.i16(p.error_code.0);
                e.i64(p.base_offset);
                if version >= 2 {
                    e.i64(p.log_append_time_ms.unwrap_or(-1));
                }
                if version >= 5 {
                    e.i64(p.log_start_offset.unwrap_or(-1));
                }
                if version >= 8 {
                    e.array(
                        p.record_errors.as_deref().unwrap_or_default(),
                        "responses.partition_responses.record_errors",
                        |e, r| {
                            e.i32(r.batch_index);
                            e.nullable_string(
                                r.batch_index_error_message.as_deref(),
                                "responses.partition_responses.record_errors.batch_index_error_message",
                            )?;
                            e.tagged_fields(
                                &r.tagged_fields,
                                "responses.partition_responses.record_errors.tagged_fields",
                                version,
                            )
                        },
                    )?;
                    e.nullable_string(
                        p.error_message.as_deref(),
                        "responses.partition_responses.error_message",
                    )?;
                }
                let leader = match &p.current_leader {
                    Some(l) if version >= 10 => Some(leader_payload(l, version)?),
                    _ => None,
                };
                write_tags(
                    e,
                    &p.tagged_fields,
                    vec![(0, leader)],
                    "responses.partition_responses.tagged_fields",
                    version,
                )
            })?;
            e.tagged_fields(&t.tagged_fields, "responses.tagged_fields", version)
        })?;
        if version >= 1 {
            e.i32(self.throttle_time_ms.unwrap_or(0));
        }
        let nodes = if version >= 10 { node_endpoints_payload(&self.node_endpoints, version)? } else { None };
        write_tags(e, &self.tagged_fields, vec![(0, nodes)], "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let responses = d.array("responses", 2, |d| {
            let (name, topic_id) = read_topic_key(d, "responses.name", version)?;
            let partition_responses = d.array("responses.partition_responses", 14, |d| {
                let index = d.i32("responses.partition_responses.index")?;
                let error_code = ErrorCode(d.i16("responses.partition_responses.error_code")?);
                let base_offset = d.i64("responses.partition_responses.base_offset")?;
                let log_append_time_ms = if version >= 2 {
                    Some(d.i64("responses.partition_responses.log_append_time_ms")?)
                } else {
                    None
                };
                let log_start_offset = if version >= 5 {
                    Some(d.i64("responses.partition_responses.log_start_offset")?)
                } else {
                    None
                };
                let (record_errors, error_message) = if version >= 8 {
                    let errors = d.array("responses.partition_responses.record_errors", 2, |d| {
                        Ok(BatchIndexAndErrorMessage {
                            batch_index: d.i32("responses.partition_responses.record_errors.batch_index")?,
                            batch_index_error_message: d.nullable_string(
                                "responses.partition_responses.record_errors.batch_index_error_message",
                            )?,
                            tagged_fields: d
                                .tagged_fields("responses.partition_responses.record_errors.tagged_fields")?,
                        })
                    })?;
                    (Some(errors), d.nullable_string("responses.partition_responses.error_message")?)
                } else {
                    (None, None)
                };
                let at = d.position();
                let mut tagged_fields = d.tagged_fields("responses.partition_responses.tagged_fields")?;
                let current_leader = match take_tag(&mut tagged_fields, 0, version >= 10) {
                    Some(p) => {
                        Some(read_tag(p, at, "responses.partition_responses.current_leader", read_leader)?)
                    }
                    None => None,
                };
                Ok(PartitionProduceResponse {
                    index,
                    error_code,
                    base_offset,
                    log_append_time_ms,
                    log_start_offset,
                    record_errors,
                    error_message,
                    current_leader,
                    tagged_fields,
                })
            })?;
            Ok(TopicProduceResponse {
                name,
                topic_id,
                partition_responses,
                tagged_fields: d.tagged_fields("responses.tagged_fields")?,
            })
        })?;
        let throttle_time_ms = if version >= 1 { Some(d.i32("throttle_time_ms")?) } else { None };
        let at = d.position();
        let mut tagged_fields = d.tagged_fields("tagged_fields")?;
        let node_endpoints = match take_tag(&mut tagged_fields, 0, version >= 10) {
            Some(p) => read_tag(p, at, "node_endpoints", read_node_endpoints)?,
            None => Vec::new(),
        };
        Ok(Self { responses, throttle_time_ms, node_endpoints, tagged_fields })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::fetch::tests::{leader, node_endpoints, optional, records, uuid};
    use crate::protocol::messages::test_util::{
        array, error_code, gated, nullable_string, round_trip_every_version, string, tagged,
    };
    use crate::protocol::records::{Compression, Record, RecordBatch};

    fn request(v: i16) -> impl Strategy<Value = ProduceRequest> {
        let flexible = SPEC.is_flexible(v);
        let partition =
            (any::<i32>(), records(), tagged(flexible)).prop_map(|(index, records, tagged_fields)| {
                PartitionProduceData { index, records, tagged_fields }
            });
        let topic = (gated(v <= 12, string()), gated(v >= 13, uuid()), array(partition), tagged(flexible))
            .prop_map(|(name, topic_id, partition_data, tagged_fields)| TopicProduceData {
                name,
                topic_id,
                partition_data,
                tagged_fields,
            });
        (optional(v >= 3, string()), any::<i16>(), any::<i32>(), array(topic), tagged(flexible)).prop_map(
            |(transactional_id, acks, timeout_ms, topic_data, tagged_fields)| ProduceRequest {
                transactional_id,
                acks,
                timeout_ms,
                topic_data,
                tagged_fields,
            },
        )
    }

    fn response(v: i16) -> impl Strategy<Value = ProduceResponse> {
        let flexible = SPEC.is_flexible(v);
        let record_error = (any::<i32>(), nullable_string(), tagged(flexible)).prop_map(
            |(batch_index, batch_index_error_message, tagged_fields)| BatchIndexAndErrorMessage {
                batch_index,
                batch_index_error_message,
                tagged_fields,
            },
        );
        let partition = (
            (
                any::<i32>(),
                error_code(),
                any::<i64>(),
                gated(v >= 2, any::<i64>()),
                gated(v >= 5, any::<i64>()),
            ),
            (gated(v >= 8, array(record_error)), optional(v >= 8, string()), optional(v >= 10, leader(true))),
            tagged(flexible),
        )
            .prop_map(
                |(
                    (index, error_code, base_offset, log_append_time_ms, log_start_offset),
                    (record_errors, error_message, current_leader),
                    tagged_fields,
                )| PartitionProduceResponse {
                    index,
                    error_code,
                    base_offset,
                    log_append_time_ms,
                    log_start_offset,
                    record_errors,
                    error_message,
                    current_leader,
                    tagged_fields,
                },
            );
        let topic = (gated(v <= 12, string()), gated(v >= 13, uuid()), array(partition), tagged(flexible))
            .prop_map(|(name, topic_id, partition_responses, tagged_fields)| TopicProduceResponse {
                name,
                topic_id,
                partition_responses,
                tagged_fields,
            });
        (array(topic), gated(v >= 1, any::<i32>()), node_endpoints(v >= 10), tagged(flexible)).prop_map(
            |(responses, throttle_time_ms, node_endpoints, tagged_fields)| ProduceResponse {
                responses,
                throttle_time_ms,
                node_endpoints,
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
    fn large_batches_are_written_by_reference_with_the_same_bytes_as_the_copied_frame() {
        use crate::protocol::frame::{encode_request, encode_request_frame};
        let batch = |fill: u8, len: usize| {
            let value = Bytes::from(vec![fill; len]);
            RecordBatch::new(0, 1, Compression::None, vec![Record::new(None, Some(value))])
                .to_bytes()
                .unwrap()
        };
        let partition = |index, records| PartitionProduceData { index, records, ..Default::default() };
        let request = ProduceRequest {
            transactional_id: Some("txn".into()),
            acks: -1,
            timeout_ms: 30_000,
            topic_data: vec![TopicProduceData {
                name: Some("t".into()),
                topic_id: Some(Uuid([7; 16])),
                partition_data: vec![
                    partition(0, Some(batch(1, 10_000))),
                    partition(1, Some(batch(2, 10))),
                    partition(2, None),
                    partition(3, Some(batch(3, 70_000))),
                ],
                ..Default::default()
            }],
            ..Default::default()
        };
        for version in [3, 8, 9, 12, 13] {
            let copied = encode_request(&request, version, 5, Some("app")).unwrap();
            let spliced = encode_request_frame(&request, version, 5, Some("app")).unwrap();
            assert_eq!(spliced.to_vec(), copied, "v{version}");
            assert_eq!(spliced.len(), copied.len(), "v{version}");
            // The two large batches are their own segments; the small one is copied in.
            let big: Vec<usize> = spliced.segments().map(<[u8]>::len).filter(|n| *n > 9_000).collect();
            assert_eq!(big.len(), 2, "v{version}");
        }
    }

    #[test]
    fn a_v3_produce_of_one_batch_is_laid_out_as_kafka_expects() {
        let batch = RecordBatch::new(
            0,
            1,
            Compression::None,
            vec![Record::new(None, Some(Bytes::from_static(b"v")))],
        );
        let records = batch.to_bytes().unwrap();
        let request = ProduceRequest {
            transactional_id: None,
            acks: -1,
            timeout_ms: 30_000,
            topic_data: vec![TopicProduceData {
                name: Some("t".into()),
                partition_data: vec![PartitionProduceData {
                    index: 0,
                    records: Some(records.clone()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        #[rustfmt::skip]
        let mut expected = vec![
            0xff, 0xff,             // transactional_id null
            0xff, 0xff,             // acks -1
            0, 0, 0x75, 0x30,       // timeout_ms 30000
            0, 0, 0, 1, 0, 1, b't', // topic_data: ["t"
            0, 0, 0, 1,             //   partition_data: [
            0, 0, 0, 0,             //     index 0
        ];
        expected.extend_from_slice(&(records.len() as i32).to_be_bytes());
        expected.extend_from_slice(&records);
        assert_eq!(request.encode_body(3).unwrap(), expected);
        assert_eq!(ProduceRequest::decode_body(Bytes::from(expected), 3).unwrap(), request);
    }

    #[test]
    fn a_v13_produce_names_topics_by_id() {
        let request = ProduceRequest {
            acks: 1,
            timeout_ms: 1,
            topic_data: vec![TopicProduceData { topic_id: Some(Uuid([9; 16])), ..Default::default() }],
            ..Default::default()
        };
        let body = request.encode_body(13).unwrap();
        // compact null transactional id, acks, timeout, 1 topic, 16-byte id, 0 partitions, tags, tags
        assert_eq!(body.len(), 1 + 2 + 4 + 1 + 16 + 1 + 1 + 1);
        assert_eq!(&body[8..24], &[9; 16]);
        assert_eq!(ProduceRequest::decode_body(Bytes::from(body), 13).unwrap(), request);
    }
}
