//! FindCoordinator (key 10; "GroupCoordinator" before 0.11): which broker coordinates a
//! consumer group or a transactional id. v0–3 ask for one key; v4+ batch keys and answer each
//! key separately in `coordinators`.

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;
use crate::protocol::tagged::TaggedFields;

/// FindCoordinator's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::FIND_COORDINATOR,
    name: "FindCoordinator",
    versions: VersionRange::new(0, 6),
    flexible_from: Some(3),
};

/// `key_type` 0: the key is a consumer group id (the only kind v0 can ask for).
pub const KEY_TYPE_GROUP: i8 = 0;
/// `key_type` 1: the key is a transactional id.
pub const KEY_TYPE_TRANSACTION: i8 = 1;

kafka_message! {
    /// A FindCoordinator request (v0–v6).
    pub struct FindCoordinatorRequest {
        /// v0–v3 only: the single group or transactional id.
        [since 0 until 3] key: Option<String>,
        /// Added in v1: [`KEY_TYPE_GROUP`] or [`KEY_TYPE_TRANSACTION`]; v0 means group.
        [since 1] key_type: Option<i8>,
        /// Added in v4: every key to look up, all of `key_type`.
        [since 4] coordinator_keys: Option<Vec<String>>,
    }
}

impl FindCoordinatorRequest {
    /// A lookup of one group's coordinator, in whichever form `version` uses.
    pub fn for_group(group_id: &str, version: i16) -> Self {
        Self::for_key(group_id, KEY_TYPE_GROUP, version)
    }

    /// A lookup of one key's coordinator ([`KEY_TYPE_GROUP`] or [`KEY_TYPE_TRANSACTION`]), in
    /// whichever form `version` uses; v0 has no key type and always means a group.
    pub fn for_key(key: &str, key_type: i8, version: i16) -> Self {
        let (key, coordinator_keys) =
            if version >= 4 { (None, Some(vec![key.to_owned()])) } else { (Some(key.to_owned()), None) };
        Self {
            key,
            key_type: (version >= 1).then_some(key_type),
            coordinator_keys,
            tagged_fields: TaggedFields::default(),
        }
    }
}

impl Body for FindCoordinatorRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version <= 3 {
            e.string(self.key.as_deref().unwrap_or_default(), "key")?;
        }
        if version >= 1 {
            e.i8(self.key_type.unwrap_or(KEY_TYPE_GROUP));
        }
        if version >= 4 {
            e.array(self.coordinator_keys.as_deref().unwrap_or_default(), "coordinator_keys", |e, k| {
                e.string(k, "coordinator_keys")
            })?;
        }
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let key = if version <= 3 { Some(d.string("key")?) } else { None };
        let key_type = if version >= 1 { Some(d.i8("key_type")?) } else { None };
        let coordinator_keys = if version >= 4 {
            Some(d.array("coordinator_keys", 1, |d| d.string("coordinator_keys"))?)
        } else {
            None
        };
        Ok(Self { key, key_type, coordinator_keys, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

impl Request for FindCoordinatorRequest {
    type Response = FindCoordinatorResponse;
}

kafka_message! {
    /// A FindCoordinator response (v0–v6).
    pub struct FindCoordinatorResponse {
        /// Added in v1.
        [since 1] throttle_time_ms: Option<i32>,
        /// v0–v3 only.
        [since 0 until 3] error_code: Option<ErrorCode>,
        /// v1–v3 only (nullable).
        [nullable since 1 until 3] error_message: Option<String>,
        /// v0–v3 only; −1 with an error.
        [since 0 until 3] node_id: Option<i32>,
        /// v0–v3 only.
        [since 0 until 3] host: Option<String>,
        /// v0–v3 only.
        [since 0 until 3] port: Option<i32>,
        /// Added in v4: one result per requested key.
        [since 4] coordinators: Option<Vec<Coordinator>>,
    }
}

kafka_message! {
    /// The coordinator for one key (v4+).
    pub struct Coordinator {
        /// The coordinator key.
        key: String,
        /// The node id.
        node_id: i32,
        /// The host name.
        host: String,
        /// The port.
        port: i32,
        /// The error code, or 0 if there was no error.
        error_code: ErrorCode,
        /// Nullable.
        error_message: Option<String>,
    }
}

impl Body for FindCoordinatorResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 1 {
            e.i32(self.throttle_time_ms.unwrap_or(0));
        }
        if version <= 3 {
            e.i16(self.error_code.unwrap_or_default().0);
            if version >= 1 {
                e.nullable_string(self.error_message.as_deref(), "error_message")?;
            }
            e.i32(self.node_id.unwrap_or(-1));
            e.string(self.host.as_deref().unwrap_or_default(), "host")?;
            e.i32(self.port.unwrap_or(-1));
        } else {
            e.array(self.coordinators.as_deref().unwrap_or_default(), "coordinators", |e, c| {
                e.string(&c.key, "coordinators.key")?;
                e.i32(c.node_id);
                e.string(&c.host, "coordinators.host")?;
                e.i32(c.port);
                e.i16(c.error_code.0);
                e.nullable_string(c.error_message.as_deref(), "coordinators.error_message")?;
                e.tagged_fields(&c.tagged_fields, "coordinators.tagged_fields", version)
            })?;
        }
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let mut out = Self::default();
        if version >= 1 {
            out.throttle_time_ms = Some(d.i32("throttle_time_ms")?);
        }
        if version <= 3 {
            out.error_code = Some(ErrorCode(d.i16("error_code")?));
            if version >= 1 {
                out.error_message = d.nullable_string("error_message")?;
            }
            out.node_id = Some(d.i32("node_id")?);
            out.host = Some(d.string("host")?);
            out.port = Some(d.i32("port")?);
        } else {
            out.coordinators = Some(d.array("coordinators", 13, |d| {
                Ok(Coordinator {
                    key: d.string("coordinators.key")?,
                    node_id: d.i32("coordinators.node_id")?,
                    host: d.string("coordinators.host")?,
                    port: d.i32("coordinators.port")?,
                    error_code: ErrorCode(d.i16("coordinators.error_code")?),
                    error_message: d.nullable_string("coordinators.error_message")?,
                    tagged_fields: d.tagged_fields("coordinators.tagged_fields")?,
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

    fn request(v: i16) -> impl Strategy<Value = FindCoordinatorRequest> {
        (gated(v <= 3, string()), gated(v >= 1, any::<i8>()), gated(v >= 4, array(string())), tagged(v >= 3))
            .prop_map(|(key, key_type, coordinator_keys, tagged_fields)| FindCoordinatorRequest {
                key,
                key_type,
                coordinator_keys,
                tagged_fields,
            })
    }

    fn response(v: i16) -> impl Strategy<Value = FindCoordinatorResponse> {
        let flexible = v >= 3;
        let coordinator = (
            string(),
            any::<i32>(),
            string(),
            any::<i32>(),
            error_code(),
            nullable_string(),
            tagged(flexible),
        )
            .prop_map(|(key, node_id, host, port, error_code, error_message, tagged_fields)| Coordinator {
                key,
                node_id,
                host,
                port,
                error_code,
                error_message,
                tagged_fields,
            });
        let error_message = if (1..=3).contains(&v) { nullable_string() } else { Just(None).boxed() };
        (
            gated(v >= 1, any::<i32>()),
            gated(v <= 3, error_code()),
            error_message,
            gated(v <= 3, any::<i32>()),
            gated(v <= 3, string()),
            gated(v <= 3, any::<i32>()),
            gated(v >= 4, array(coordinator)),
            tagged(flexible),
        )
            .prop_map(
                |(
                    throttle_time_ms,
                    error_code,
                    error_message,
                    node_id,
                    host,
                    port,
                    coordinators,
                    tagged_fields,
                )| {
                    FindCoordinatorResponse {
                        throttle_time_ms,
                        error_code,
                        error_message,
                        node_id,
                        host,
                        port,
                        coordinators,
                        tagged_fields,
                    }
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
    fn a_v0_request_is_just_the_group_id() {
        let request = FindCoordinatorRequest::for_group("g", 0);
        assert_eq!(request.encode_body(0).unwrap(), [0, 1, b'g']);
    }

    #[test]
    fn a_v4_request_batches_keys_after_the_key_type() {
        let request = FindCoordinatorRequest {
            key_type: Some(KEY_TYPE_TRANSACTION),
            coordinator_keys: Some(vec!["a".into(), "bc".into()]),
            ..Default::default()
        };
        let expected = [1, 3, 2, b'a', 3, b'b', b'c', 0];
        assert_eq!(request.encode_body(4).unwrap(), expected);
        assert_eq!(
            FindCoordinatorRequest::decode_body(Bytes::copy_from_slice(&expected), 4).unwrap(),
            request
        );
    }

    #[test]
    fn a_v4_response_answers_each_key() {
        #[rustfmt::skip]
        let body = [
            0, 0, 0, 0, // throttle_time_ms
            3, // coordinators: 2
            2, b'a', 0, 0, 0, 1, 2, b'h', 0, 0, 0x23, 0x84, 0, 0, 1, 0, // "a" → node 1 h:9092, no error, null message
            2, b'b', 0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff, 0, 15, 3, b'n', b'o', 0, // "b": COORDINATOR_NOT_AVAILABLE "no"
            0, // body tags
        ];
        let decoded = FindCoordinatorResponse::decode_body(Bytes::copy_from_slice(&body), 4).unwrap();
        let coordinators = decoded.coordinators.as_deref().unwrap();
        assert_eq!(
            (coordinators[0].node_id, coordinators[0].host.as_str(), coordinators[0].port),
            (1, "h", 9092)
        );
        assert_eq!(coordinators[1].error_code, ErrorCode::COORDINATOR_NOT_AVAILABLE);
        assert_eq!(coordinators[1].error_message.as_deref(), Some("no"));
        assert_eq!(decoded.error_code, None);
        assert_eq!(decoded.encode_body(4).unwrap(), body);
    }
}
