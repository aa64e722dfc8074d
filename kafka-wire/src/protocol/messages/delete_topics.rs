//! DeleteTopics (key 20): delete topics by name (v0–v5) or by name or id (v6+). Sent to the
//! controller (any broker forwards it under KRaft).

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;
use kafka_vocab::Uuid;

/// DeleteTopics's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::DELETE_TOPICS,
    name: "DeleteTopics",
    versions: VersionRange::new(0, 6),
    flexible_from: Some(4),
};

kafka_message! {
    /// A DeleteTopics request (v0–v6).
    pub struct DeleteTopicsRequest {
        /// Added in v6: each topic by name or by id.
        [since 6] topics: Option<Vec<DeleteTopicState>>,
        /// v0–v5 only.
        [since 0 until 5] topic_names: Option<Vec<String>>,
        /// How long to wait for the deletions, in ms.
        timeout_ms: i32,
    }
}

kafka_message! {
    /// One topic to delete (v6+): a name with a zero id, or a null name with an id.
    pub struct DeleteTopicState {
        /// Nullable.
        name: Option<String>,
        /// The unique topic ID.
        topic_id: Uuid,
    }
}

impl Body for DeleteTopicsRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 6 {
            e.array(self.topics.as_deref().unwrap_or_default(), "topics", |e, t| {
                e.nullable_string(t.name.as_deref(), "topics.name")?;
                e.uuid(t.topic_id);
                e.tagged_fields(&t.tagged_fields, "topics.tagged_fields", version)
            })?;
        } else {
            e.array(self.topic_names.as_deref().unwrap_or_default(), "topic_names", |e, n| {
                e.string(n, "topic_names")
            })?;
        }
        e.i32(self.timeout_ms);
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let (topics, topic_names) = if version >= 6 {
            let topics = d.array("topics", 17, |d| {
                Ok(DeleteTopicState {
                    name: d.nullable_string("topics.name")?,
                    topic_id: d.uuid("topics.topic_id")?,
                    tagged_fields: d.tagged_fields("topics.tagged_fields")?,
                })
            })?;
            (Some(topics), None)
        } else {
            (None, Some(d.array("topic_names", 1, |d| d.string("topic_names"))?))
        };
        let timeout_ms = d.i32("timeout_ms")?;
        Ok(Self { topics, topic_names, timeout_ms, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

impl Request for DeleteTopicsRequest {
    type Response = DeleteTopicsResponse;
}

kafka_message! {
    /// A DeleteTopics response (v0–v6).
    pub struct DeleteTopicsResponse {
        /// Added in v1.
        [since 1] throttle_time_ms: Option<i32>,
        /// The results for each topic we tried to delete.
        responses: Vec<DeletableTopicResult>,
    }
}

kafka_message! {
    /// An element of [`DeleteTopicsResponse::responses`]: the results for each topic we tried to delete.
    pub struct DeletableTopicResult {
        /// Nullable from v6 (a topic asked for by an unknown id); always present before.
        name: Option<String>,
        /// Added in v6.
        [since 6] topic_id: Option<Uuid>,
        /// The deletion error, or 0 if the deletion succeeded.
        error_code: ErrorCode,
        /// Added in v5 (nullable).
        [nullable since 5] error_message: Option<String>,
    }
}

impl Body for DeleteTopicsResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 1 {
            e.i32(self.throttle_time_ms.unwrap_or(0));
        }
        e.array(&self.responses, "responses", |e, r| {
            if version >= 6 {
                e.nullable_string(r.name.as_deref(), "responses.name")?;
                e.uuid(r.topic_id.unwrap_or_default());
            } else {
                e.string(r.name.as_deref().unwrap_or_default(), "responses.name")?;
            }
            e.i16(r.error_code.0);
            if version >= 5 {
                e.nullable_string(r.error_message.as_deref(), "responses.error_message")?;
            }
            e.tagged_fields(&r.tagged_fields, "responses.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if version >= 1 { Some(d.i32("throttle_time_ms")?) } else { None };
        let responses = d.array("responses", 3, |d| {
            let (name, topic_id) = if version >= 6 {
                (d.nullable_string("responses.name")?, Some(d.uuid("responses.topic_id")?))
            } else {
                (Some(d.string("responses.name")?), None)
            };
            let error_code = ErrorCode(d.i16("responses.error_code")?);
            let error_message =
                if version >= 5 { d.nullable_string("responses.error_message")? } else { None };
            Ok(DeletableTopicResult {
                name,
                topic_id,
                error_code,
                error_message,
                tagged_fields: d.tagged_fields("responses.tagged_fields")?,
            })
        })?;
        Ok(Self { throttle_time_ms, responses, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{
        array, error_code, gated, nullable_string, round_trip_every_version, string, tagged, uuid,
    };

    fn request(v: i16) -> impl Strategy<Value = DeleteTopicsRequest> {
        let flexible = v >= 4;
        let topic = (nullable_string(), uuid(), tagged(flexible))
            .prop_map(|(name, topic_id, tagged_fields)| DeleteTopicState { name, topic_id, tagged_fields });
        (gated(v >= 6, array(topic)), gated(v <= 5, array(string())), any::<i32>(), tagged(flexible))
            .prop_map(|(topics, topic_names, timeout_ms, tagged_fields)| DeleteTopicsRequest {
                topics,
                topic_names,
                timeout_ms,
                tagged_fields,
            })
    }

    fn response(v: i16) -> impl Strategy<Value = DeleteTopicsResponse> {
        let flexible = v >= 4;
        let name = if v >= 6 { nullable_string() } else { string().prop_map(Some).boxed() };
        let error_message = if v >= 5 { nullable_string() } else { Just(None).boxed() };
        let result = (name, gated(v >= 6, uuid()), error_code(), error_message, tagged(flexible)).prop_map(
            |(name, topic_id, error_code, error_message, tagged_fields)| DeletableTopicResult {
                name,
                topic_id,
                error_code,
                error_message,
                tagged_fields,
            },
        );
        (gated(v >= 1, any::<i32>()), array(result), tagged(flexible)).prop_map(
            |(throttle_time_ms, responses, tagged_fields)| DeleteTopicsResponse {
                throttle_time_ms,
                responses,
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
    fn a_v6_request_deletes_by_name_or_by_id() {
        let id = Uuid([1; 16]);
        let request = DeleteTopicsRequest {
            topics: Some(vec![
                DeleteTopicState { name: Some("t".into()), topic_id: Uuid::ZERO, ..Default::default() },
                DeleteTopicState { name: None, topic_id: id, ..Default::default() },
            ]),
            timeout_ms: 1000,
            ..Default::default()
        };
        let mut expected = vec![3, 2, b't'];
        expected.extend_from_slice(&[0; 16]);
        expected.extend_from_slice(&[0, 0]); // tags, then the second topic's null name
        expected.extend_from_slice(&[1; 16]);
        expected.extend_from_slice(&[0, 0, 0, 0x03, 0xe8, 0]);
        assert_eq!(request.encode_body(6).unwrap(), expected);
        assert_eq!(DeleteTopicsRequest::decode_body(Bytes::from(expected), 6).unwrap(), request);
    }

    #[test]
    fn a_v0_request_is_names_and_a_timeout() {
        let request =
            DeleteTopicsRequest { topic_names: Some(vec!["t".into()]), timeout_ms: 5, ..Default::default() };
        assert_eq!(request.encode_body(0).unwrap(), [0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 5]);
    }
}
