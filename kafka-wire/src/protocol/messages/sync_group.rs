//! SyncGroup (key 14): after JoinGroup, every member of a classic group asks its coordinator
//! for its assignment; the leader's request carries everyone's (for consumers, each an
//! encoded [`ConsumerAssignment`](crate::protocol::consumer_protocol::ConsumerAssignment)),
//! the followers send none.

use bytes::Bytes;

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;

/// SyncGroup's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::SYNC_GROUP,
    name: "SyncGroup",
    versions: VersionRange::new(0, 5),
    flexible_from: Some(4),
};

kafka_message! {
    /// A SyncGroup request (v0–v5).
    pub struct SyncGroupRequest {
        /// The group identifier.
        group_id: String,
        /// The generation JoinGroup returned.
        generation_id: i32,
        /// The member id JoinGroup returned.
        member_id: String,
        /// Added in v3 (nullable): the static member id.
        [nullable since 3] group_instance_id: Option<String>,
        /// Added in v5 (nullable): the group's protocol type, checked by the coordinator (KIP-559).
        [nullable since 5] protocol_type: Option<String>,
        /// Added in v5 (nullable): the chosen protocol, checked by the coordinator (KIP-559).
        [nullable since 5] protocol_name: Option<String>,
        /// Each member's assignment: from the leader only; empty from the followers.
        assignments: Vec<SyncGroupRequestAssignment>,
    }
}

kafka_message! {
    /// An element of [`SyncGroupRequest::assignments`]: one member's assignment.
    pub struct SyncGroupRequestAssignment {
        /// The member the assignment is for.
        member_id: String,
        /// The assignment, in the group protocol's format.
        #[cfg_attr(feature = "json", serde(serialize_with = "crate::protocol::json::bytes"))]
        assignment: Bytes,
    }
}

impl Body for SyncGroupRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.string(&self.group_id, "group_id")?;
        e.i32(self.generation_id);
        e.string(&self.member_id, "member_id")?;
        if version >= 3 {
            e.nullable_string(self.group_instance_id.as_deref(), "group_instance_id")?;
        }
        if version >= 5 {
            e.nullable_string(self.protocol_type.as_deref(), "protocol_type")?;
            e.nullable_string(self.protocol_name.as_deref(), "protocol_name")?;
        }
        e.array(&self.assignments, "assignments", |e, a| {
            e.string(&a.member_id, "assignments.member_id")?;
            e.bytes(&a.assignment, "assignments.assignment")?;
            e.tagged_fields(&a.tagged_fields, "assignments.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let group_id = d.string("group_id")?;
        let generation_id = d.i32("generation_id")?;
        let member_id = d.string("member_id")?;
        let group_instance_id = if version >= 3 { d.nullable_string("group_instance_id")? } else { None };
        let (protocol_type, protocol_name) = if version >= 5 {
            (d.nullable_string("protocol_type")?, d.nullable_string("protocol_name")?)
        } else {
            (None, None)
        };
        let assignments = d.array("assignments", 2, |d| {
            Ok(SyncGroupRequestAssignment {
                member_id: d.string("assignments.member_id")?,
                assignment: d.bytes("assignments.assignment")?,
                tagged_fields: d.tagged_fields("assignments.tagged_fields")?,
            })
        })?;
        Ok(Self {
            group_id,
            generation_id,
            member_id,
            group_instance_id,
            protocol_type,
            protocol_name,
            assignments,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

impl Request for SyncGroupRequest {
    type Response = SyncGroupResponse;
}

kafka_message! {
    /// A SyncGroup response (v0–v5).
    pub struct SyncGroupResponse {
        /// Added in v1.
        [since 1] throttle_time_ms: Option<i32>,
        /// The error code, or 0 if there was no error.
        error_code: ErrorCode,
        /// Added in v5 (nullable): the group's protocol type.
        [nullable since 5] protocol_type: Option<String>,
        /// Added in v5 (nullable): the chosen protocol.
        [nullable since 5] protocol_name: Option<String>,
        /// This member's assignment, in the group protocol's format.
        #[cfg_attr(feature = "json", serde(serialize_with = "crate::protocol::json::bytes"))]
        assignment: Bytes,
    }
}

impl Body for SyncGroupResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 1 {
            e.i32(self.throttle_time_ms.unwrap_or(0));
        }
        e.i16(self.error_code.0);
        if version >= 5 {
            e.nullable_string(self.protocol_type.as_deref(), "protocol_type")?;
            e.nullable_string(self.protocol_name.as_deref(), "protocol_name")?;
        }
        e.bytes(&self.assignment, "assignment")?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if version >= 1 { Some(d.i32("throttle_time_ms")?) } else { None };
        let error_code = ErrorCode(d.i16("error_code")?);
        let (protocol_type, protocol_name) = if version >= 5 {
            (d.nullable_string("protocol_type")?, d.nullable_string("protocol_name")?)
        } else {
            (None, None)
        };
        Ok(Self {
            throttle_time_ms,
            error_code,
            protocol_type,
            protocol_name,
            assignment: d.bytes("assignment")?,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{
        array, bytes, error_code, gated, gated_nullable_string, round_trip_every_version, string, tagged,
    };

    fn request(v: i16) -> impl Strategy<Value = SyncGroupRequest> {
        let flexible = v >= 4;
        let assignment =
            (string(), bytes(), tagged(flexible)).prop_map(|(member_id, assignment, tagged_fields)| {
                SyncGroupRequestAssignment { member_id, assignment, tagged_fields }
            });
        (
            string(),
            any::<i32>(),
            string(),
            gated_nullable_string(v >= 3),
            gated_nullable_string(v >= 5),
            gated_nullable_string(v >= 5),
            array(assignment),
            tagged(flexible),
        )
            .prop_map(
                |(
                    group_id,
                    generation_id,
                    member_id,
                    group_instance_id,
                    protocol_type,
                    protocol_name,
                    assignments,
                    tagged_fields,
                )| SyncGroupRequest {
                    group_id,
                    generation_id,
                    member_id,
                    group_instance_id,
                    protocol_type,
                    protocol_name,
                    assignments,
                    tagged_fields,
                },
            )
    }

    fn response(v: i16) -> impl Strategy<Value = SyncGroupResponse> {
        (
            gated(v >= 1, any::<i32>()),
            error_code(),
            gated_nullable_string(v >= 5),
            gated_nullable_string(v >= 5),
            bytes(),
            tagged(v >= 4),
        )
            .prop_map(
                |(throttle_time_ms, error_code, protocol_type, protocol_name, assignment, tagged_fields)| {
                    SyncGroupResponse {
                        throttle_time_ms,
                        error_code,
                        protocol_type,
                        protocol_name,
                        assignment,
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
    fn a_v5_request_names_the_protocol_before_the_assignments() {
        let request = SyncGroupRequest {
            group_id: "g".into(),
            generation_id: 3,
            member_id: "m".into(),
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            assignments: vec![SyncGroupRequestAssignment {
                member_id: "m".into(),
                assignment: Bytes::from_static(&[0, 3]),
                ..Default::default()
            }],
            ..Default::default()
        };
        #[rustfmt::skip]
        let expected = [
            2, b'g', 0, 0, 0, 3, 2, b'm', // group_id, generation_id, member_id
            0, // group_instance_id null
            9, b'c', b'o', b'n', b's', b'u', b'm', b'e', b'r', // protocol_type
            6, b'r', b'a', b'n', b'g', b'e', // protocol_name
            2, 2, b'm', 3, 0, 3, 0, // assignments: 1, "m", [00 03], tags
            0, // tags
        ];
        assert_eq!(request.encode_body(5).unwrap(), expected);
        assert_eq!(SyncGroupRequest::decode_body(Bytes::copy_from_slice(&expected), 5).unwrap(), request);
    }

    #[test]
    fn a_v0_response_is_an_error_code_and_the_assignment() {
        let body = [0, 0, 0, 0, 0, 2, 0xab, 0xcd];
        let decoded = SyncGroupResponse::decode_body(Bytes::copy_from_slice(&body), 0).unwrap();
        assert_eq!((decoded.throttle_time_ms, decoded.error_code), (None, ErrorCode::NONE));
        assert_eq!(&decoded.assignment[..], &[0xab, 0xcd]);
        assert_eq!(decoded.encode_body(0).unwrap(), body);
    }
}
