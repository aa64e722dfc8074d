//! LeaveGroup (key 13): members leave a classic group, so it rebalances at once instead of
//! after their session timeout. v0–v2 name one member; v3+ (KIP-345) a batch of members, by
//! member id or static instance id, each answered on its own; v5 adds a reason per member
//! (KIP-800).

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;

/// LeaveGroup's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::LEAVE_GROUP,
    name: "LeaveGroup",
    versions: VersionRange::new(0, 5),
    flexible_from: Some(4),
};

kafka_message! {
    /// A LeaveGroup request (v0–v5).
    pub struct LeaveGroupRequest {
        /// The group id.
        group_id: String,
        /// v0–v2 only: the member leaving.
        [since 0 until 2] member_id: Option<String>,
        /// Added in v3: the members leaving.
        [since 3] members: Option<Vec<LeaveGroupMemberIdentity>>,
    }
}

kafka_message! {
    /// An element of [`LeaveGroupRequest::members`] (v3+): one member leaving.
    pub struct LeaveGroupMemberIdentity {
        /// The member id (may be empty when the static instance id names the member).
        member_id: String,
        /// Nullable: the member's static id.
        group_instance_id: Option<String>,
        /// Added in v5 (nullable, KIP-800): why the member leaves, for the coordinator's log.
        [nullable since 5] reason: Option<String>,
    }
}

impl Body for LeaveGroupRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.string(&self.group_id, "group_id")?;
        if version >= 3 {
            e.array(self.members.as_deref().unwrap_or_default(), "members", |e, m| {
                e.string(&m.member_id, "members.member_id")?;
                e.nullable_string(m.group_instance_id.as_deref(), "members.group_instance_id")?;
                if version >= 5 {
                    e.nullable_string(m.reason.as_deref(), "members.reason")?;
                }
                e.tagged_fields(&m.tagged_fields, "members.tagged_fields", version)
            })?;
        } else {
            e.string(self.member_id.as_deref().unwrap_or_default(), "member_id")?;
        }
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let group_id = d.string("group_id")?;
        let (member_id, members) = if version >= 3 {
            let members = d.array("members", 2, |d| {
                let member_id = d.string("members.member_id")?;
                let group_instance_id = d.nullable_string("members.group_instance_id")?;
                let reason = if version >= 5 { d.nullable_string("members.reason")? } else { None };
                Ok(LeaveGroupMemberIdentity {
                    member_id,
                    group_instance_id,
                    reason,
                    tagged_fields: d.tagged_fields("members.tagged_fields")?,
                })
            })?;
            (None, Some(members))
        } else {
            (Some(d.string("member_id")?), None)
        };
        Ok(Self { group_id, member_id, members, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

impl Request for LeaveGroupRequest {
    type Response = LeaveGroupResponse;
}

kafka_message! {
    /// A LeaveGroup response (v0–v5).
    pub struct LeaveGroupResponse {
        /// Added in v1.
        [since 1] throttle_time_ms: Option<i32>,
        /// The error code, or 0 if there was no error (v3+: errors of single members are theirs).
        error_code: ErrorCode,
        /// Added in v3: each member's result.
        [since 3] members: Option<Vec<LeaveGroupMemberResponse>>,
    }
}

kafka_message! {
    /// An element of [`LeaveGroupResponse::members`] (v3+): one member's result.
    pub struct LeaveGroupMemberResponse {
        /// The member id.
        member_id: String,
        /// Nullable: the member's static id.
        group_instance_id: Option<String>,
        /// The error code, or 0 if there was no error.
        error_code: ErrorCode,
    }
}

impl Body for LeaveGroupResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 1 {
            e.i32(self.throttle_time_ms.unwrap_or(0));
        }
        e.i16(self.error_code.0);
        if version >= 3 {
            e.array(self.members.as_deref().unwrap_or_default(), "members", |e, m| {
                e.string(&m.member_id, "members.member_id")?;
                e.nullable_string(m.group_instance_id.as_deref(), "members.group_instance_id")?;
                e.i16(m.error_code.0);
                e.tagged_fields(&m.tagged_fields, "members.tagged_fields", version)
            })?;
        }
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if version >= 1 { Some(d.i32("throttle_time_ms")?) } else { None };
        let error_code = ErrorCode(d.i16("error_code")?);
        let members = if version >= 3 {
            Some(d.array("members", 4, |d| {
                Ok(LeaveGroupMemberResponse {
                    member_id: d.string("members.member_id")?,
                    group_instance_id: d.nullable_string("members.group_instance_id")?,
                    error_code: ErrorCode(d.i16("members.error_code")?),
                    tagged_fields: d.tagged_fields("members.tagged_fields")?,
                })
            })?)
        } else {
            None
        };
        Ok(Self { throttle_time_ms, error_code, members, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{
        array, error_code, gated, gated_nullable_string, nullable_string, round_trip_every_version, string,
        tagged,
    };

    fn request(v: i16) -> impl Strategy<Value = LeaveGroupRequest> {
        let flexible = v >= 4;
        let member = (string(), nullable_string(), gated_nullable_string(v >= 5), tagged(flexible)).prop_map(
            |(member_id, group_instance_id, reason, tagged_fields)| LeaveGroupMemberIdentity {
                member_id,
                group_instance_id,
                reason,
                tagged_fields,
            },
        );
        (string(), gated(v <= 2, string()), gated(v >= 3, array(member)), tagged(flexible)).prop_map(
            |(group_id, member_id, members, tagged_fields)| LeaveGroupRequest {
                group_id,
                member_id,
                members,
                tagged_fields,
            },
        )
    }

    fn response(v: i16) -> impl Strategy<Value = LeaveGroupResponse> {
        let flexible = v >= 4;
        let member = (string(), nullable_string(), error_code(), tagged(flexible)).prop_map(
            |(member_id, group_instance_id, error_code, tagged_fields)| LeaveGroupMemberResponse {
                member_id,
                group_instance_id,
                error_code,
                tagged_fields,
            },
        );
        (gated(v >= 1, any::<i32>()), error_code(), gated(v >= 3, array(member)), tagged(flexible)).prop_map(
            |(throttle_time_ms, error_code, members, tagged_fields)| LeaveGroupResponse {
                throttle_time_ms,
                error_code,
                members,
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
    fn a_v0_request_names_one_member_and_a_v5_request_a_batch_with_reasons() {
        let v0 =
            LeaveGroupRequest { group_id: "g".into(), member_id: Some("m".into()), ..Default::default() };
        assert_eq!(v0.encode_body(0).unwrap(), [0, 1, b'g', 0, 1, b'm']);
        let v5 = LeaveGroupRequest {
            group_id: "g".into(),
            members: Some(vec![LeaveGroupMemberIdentity {
                member_id: "m".into(),
                group_instance_id: Some("i".into()),
                reason: Some("bye".into()),
                ..Default::default()
            }]),
            ..Default::default()
        };
        #[rustfmt::skip]
        let expected = [
            2, b'g', // group_id
            2, // members: 1
            2, b'm', 2, b'i', 4, b'b', b'y', b'e', 0, // member_id, group_instance_id, reason, tags
            0, // tags
        ];
        assert_eq!(v5.encode_body(5).unwrap(), expected);
        assert_eq!(LeaveGroupRequest::decode_body(Bytes::copy_from_slice(&expected), 5).unwrap(), v5);
    }

    #[test]
    fn a_v3_response_answers_each_member() {
        #[rustfmt::skip]
        let body = [
            0, 0, 0, 0, 0, 0, // throttle_time_ms, error_code
            0, 0, 0, 1, // members: 1
            0, 1, b'm', 0xff, 0xff, 0, 25, // "m", no instance id, UNKNOWN_MEMBER_ID
        ];
        let decoded = LeaveGroupResponse::decode_body(Bytes::copy_from_slice(&body), 3).unwrap();
        let members = decoded.members.as_deref().unwrap();
        assert_eq!(members[0].member_id, "m");
        assert_eq!(members[0].group_instance_id, None);
        assert_eq!(members[0].error_code, ErrorCode::UNKNOWN_MEMBER_ID);
        assert_eq!(decoded.encode_body(3).unwrap(), body);
    }
}
