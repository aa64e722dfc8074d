//! Heartbeat (key 12): a classic group member tells its coordinator it is alive. The error
//! code is how a member learns of a rebalance (REBALANCE_IN_PROGRESS: rejoin) or that it was
//! fenced (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID).

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;

/// Heartbeat's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::HEARTBEAT,
    name: "Heartbeat",
    versions: VersionRange::new(0, 4),
    flexible_from: Some(4),
};

kafka_message! {
    /// A Heartbeat request (v0–v4).
    pub struct HeartbeatRequest {
        /// The group id.
        group_id: String,
        /// The generation of the group.
        generation_id: i32,
        /// The member id.
        member_id: String,
        /// Added in v3 (nullable): the static member id.
        [nullable since 3] group_instance_id: Option<String>,
    }
}

impl Body for HeartbeatRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.string(&self.group_id, "group_id")?;
        e.i32(self.generation_id);
        e.string(&self.member_id, "member_id")?;
        if version >= 3 {
            e.nullable_string(self.group_instance_id.as_deref(), "group_instance_id")?;
        }
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let group_id = d.string("group_id")?;
        let generation_id = d.i32("generation_id")?;
        let member_id = d.string("member_id")?;
        let group_instance_id = if version >= 3 { d.nullable_string("group_instance_id")? } else { None };
        Ok(Self {
            group_id,
            generation_id,
            member_id,
            group_instance_id,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

impl Request for HeartbeatRequest {
    type Response = HeartbeatResponse;
}

kafka_message! {
    /// A Heartbeat response (v0–v4).
    pub struct HeartbeatResponse {
        /// Added in v1.
        [since 1] throttle_time_ms: Option<i32>,
        /// The error code, or 0 if there was no error.
        error_code: ErrorCode,
    }
}

impl Body for HeartbeatResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 1 {
            e.i32(self.throttle_time_ms.unwrap_or(0));
        }
        e.i16(self.error_code.0);
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if version >= 1 { Some(d.i32("throttle_time_ms")?) } else { None };
        Ok(Self {
            throttle_time_ms,
            error_code: ErrorCode(d.i16("error_code")?),
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{
        error_code, gated, gated_nullable_string, round_trip_every_version, string, tagged,
    };

    fn request(v: i16) -> impl Strategy<Value = HeartbeatRequest> {
        (string(), any::<i32>(), string(), gated_nullable_string(v >= 3), tagged(v >= 4)).prop_map(
            |(group_id, generation_id, member_id, group_instance_id, tagged_fields)| HeartbeatRequest {
                group_id,
                generation_id,
                member_id,
                group_instance_id,
                tagged_fields,
            },
        )
    }

    fn response(v: i16) -> impl Strategy<Value = HeartbeatResponse> {
        (gated(v >= 1, any::<i32>()), error_code(), tagged(v >= 4)).prop_map(
            |(throttle_time_ms, error_code, tagged_fields)| HeartbeatResponse {
                throttle_time_ms,
                error_code,
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
    fn a_v4_request_is_compact_with_a_null_instance_id() {
        let request = HeartbeatRequest {
            group_id: "g".into(),
            generation_id: 5,
            member_id: "m".into(),
            ..Default::default()
        };
        // The body of the Heartbeat v4 frame in tests/it/cli_decode.rs.
        let expected = [2, b'g', 0, 0, 0, 5, 2, b'm', 0, 0];
        assert_eq!(request.encode_body(4).unwrap(), expected);
        assert_eq!(HeartbeatRequest::decode_body(Bytes::copy_from_slice(&expected), 4).unwrap(), request);
        // v0–v2 have no instance id: group, generation, member in classic form.
        assert_eq!(request.encode_body(2).unwrap(), [0, 1, b'g', 0, 0, 0, 5, 0, 1, b'm']);
    }

    #[test]
    fn a_v1_response_reports_a_rebalance() {
        let body = [0, 0, 0, 0x0a, 0, 27];
        let decoded = HeartbeatResponse::decode_body(Bytes::copy_from_slice(&body), 1).unwrap();
        assert_eq!(decoded.throttle_time_ms, Some(10));
        assert_eq!(decoded.error_code, ErrorCode::REBALANCE_IN_PROGRESS);
        assert_eq!(decoded.encode_body(1).unwrap(), body);
    }
}
