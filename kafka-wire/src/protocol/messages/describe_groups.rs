//! DescribeGroups (key 15): state, protocol and members of classic groups, from their
//! coordinator. Member metadata and assignments are opaque bytes here (for consumer groups
//! they hold the consumer protocol's subscription and assignment).

use bytes::Bytes;

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;
use crate::protocol::messages::metadata::AUTHORIZED_OPERATIONS_OMITTED;

/// DescribeGroups's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::DESCRIBE_GROUPS,
    name: "DescribeGroups",
    versions: VersionRange::new(0, 6),
    flexible_from: Some(5),
};

kafka_message! {
    /// A DescribeGroups request (v0–v6).
    pub struct DescribeGroupsRequest {
        /// The names of the groups to describe.
        groups: Vec<String>,
        /// Added in v3.
        [since 3] include_authorized_operations: Option<bool>,
    }
}

impl Body for DescribeGroupsRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.array(&self.groups, "groups", |e, g| e.string(g, "groups"))?;
        if version >= 3 {
            e.bool(self.include_authorized_operations.unwrap_or(false));
        }
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let groups = d.array("groups", 1, |d| d.string("groups"))?;
        let include_authorized_operations =
            if version >= 3 { Some(d.bool("include_authorized_operations")?) } else { None };
        Ok(Self { groups, include_authorized_operations, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

impl Request for DescribeGroupsRequest {
    type Response = DescribeGroupsResponse;
}

kafka_message! {
    /// A DescribeGroups response (v0–v6).
    pub struct DescribeGroupsResponse {
        /// Added in v1.
        [since 1] throttle_time_ms: Option<i32>,
        /// Each described group.
        groups: Vec<DescribedGroup>,
    }
}

kafka_message! {
    /// An element of [`DescribeGroupsResponse::groups`]: each described group.
    pub struct DescribedGroup {
        /// v6+ answers GROUP_ID_NOT_FOUND for an unknown group; older versions describe it as "Dead".
        error_code: ErrorCode,
        /// Added in v6 (Kafka 4.0, nullable).
        [nullable since 6] error_message: Option<String>,
        /// The group ID string.
        group_id: String,
        /// "Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead", or "".
        group_state: String,
        /// The group protocol type, or the empty string.
        protocol_type: String,
        /// The chosen protocol (e.g. the assignor's name) — only while Stable.
        protocol_data: String,
        /// Always empty for a Dead group.
        members: Vec<DescribedGroupMember>,
        /// Added in v3: a bitfield of authorized operations, or `i32::MIN` when not requested.
        [since 3] authorized_operations: Option<i32>,
    }
}

kafka_message! {
    /// An element of [`DescribedGroup::members`]: the group members.
    pub struct DescribedGroupMember {
        /// The member ID assigned by the group coordinator.
        member_id: String,
        /// Added in v4 (nullable): the static member id.
        [nullable since 4] group_instance_id: Option<String>,
        /// The client ID used in the member's latest join group request.
        client_id: String,
        /// The client host.
        client_host: String,
        /// Only while the group is Stable.
        #[cfg_attr(feature = "json", serde(serialize_with = "crate::protocol::json::bytes"))]
        member_metadata: Bytes,
        /// Only while the group is Stable.
        #[cfg_attr(feature = "json", serde(serialize_with = "crate::protocol::json::bytes"))]
        member_assignment: Bytes,
    }
}

impl Body for DescribeGroupsResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 1 {
            e.i32(self.throttle_time_ms.unwrap_or(0));
        }
        e.array(&self.groups, "groups", |e, g| {
            e.i16(g.error_code.0);
            if version >= 6 {
                e.nullable_string(g.error_message.as_deref(), "groups.error_message")?;
            }
            e.string(&g.group_id, "groups.group_id")?;
            e.string(&g.group_state, "groups.group_state")?;
            e.string(&g.protocol_type, "groups.protocol_type")?;
            e.string(&g.protocol_data, "groups.protocol_data")?;
            e.array(&g.members, "groups.members", |e, m| {
                e.string(&m.member_id, "groups.members.member_id")?;
                if version >= 4 {
                    e.nullable_string(m.group_instance_id.as_deref(), "groups.members.group_instance_id")?;
                }
                e.string(&m.client_id, "groups.members.client_id")?;
                e.string(&m.client_host, "groups.members.client_host")?;
                e.bytes(&m.member_metadata, "groups.members.member_metadata")?;
                e.bytes(&m.member_assignment, "groups.members.member_assignment")?;
                e.tagged_fields(&m.tagged_fields, "groups.members.tagged_fields", version)
            })?;
            if version >= 3 {
                e.i32(g.authorized_operations.unwrap_or(AUTHORIZED_OPERATIONS_OMITTED));
            }
            e.tagged_fields(&g.tagged_fields, "groups.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if version >= 1 { Some(d.i32("throttle_time_ms")?) } else { None };
        let groups = d.array("groups", 7, |d| {
            let error_code = ErrorCode(d.i16("groups.error_code")?);
            let error_message = if version >= 6 { d.nullable_string("groups.error_message")? } else { None };
            let group_id = d.string("groups.group_id")?;
            let group_state = d.string("groups.group_state")?;
            let protocol_type = d.string("groups.protocol_type")?;
            let protocol_data = d.string("groups.protocol_data")?;
            let members = d.array("groups.members", 5, |d| {
                let member_id = d.string("groups.members.member_id")?;
                let group_instance_id =
                    if version >= 4 { d.nullable_string("groups.members.group_instance_id")? } else { None };
                Ok(DescribedGroupMember {
                    member_id,
                    group_instance_id,
                    client_id: d.string("groups.members.client_id")?,
                    client_host: d.string("groups.members.client_host")?,
                    member_metadata: d.bytes("groups.members.member_metadata")?,
                    member_assignment: d.bytes("groups.members.member_assignment")?,
                    tagged_fields: d.tagged_fields("groups.members.tagged_fields")?,
                })
            })?;
            let authorized_operations =
                if version >= 3 { Some(d.i32("groups.authorized_operations")?) } else { None };
            Ok(DescribedGroup {
                error_code,
                error_message,
                group_id,
                group_state,
                protocol_type,
                protocol_data,
                members,
                authorized_operations,
                tagged_fields: d.tagged_fields("groups.tagged_fields")?,
            })
        })?;
        Ok(Self { throttle_time_ms, groups, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{
        array, bytes, error_code, gated, nullable_string, round_trip_every_version, string, tagged,
    };

    fn request(v: i16) -> impl Strategy<Value = DescribeGroupsRequest> {
        (array(string()), gated(v >= 3, any::<bool>()), tagged(v >= 5)).prop_map(
            |(groups, include_authorized_operations, tagged_fields)| DescribeGroupsRequest {
                groups,
                include_authorized_operations,
                tagged_fields,
            },
        )
    }

    fn response(v: i16) -> impl Strategy<Value = DescribeGroupsResponse> {
        let flexible = v >= 5;
        let group_instance_id = if v >= 4 { nullable_string() } else { Just(None).boxed() };
        let member = (string(), group_instance_id, string(), string(), bytes(), bytes(), tagged(flexible))
            .prop_map(
                |(
                    member_id,
                    group_instance_id,
                    client_id,
                    client_host,
                    member_metadata,
                    member_assignment,
                    tagged_fields,
                )| {
                    DescribedGroupMember {
                        member_id,
                        group_instance_id,
                        client_id,
                        client_host,
                        member_metadata,
                        member_assignment,
                        tagged_fields,
                    }
                },
            );
        let error_message = if v >= 6 { nullable_string() } else { Just(None).boxed() };
        let group = (
            error_code(),
            error_message,
            string(),
            string(),
            string(),
            string(),
            array(member),
            gated(v >= 3, any::<i32>()),
            tagged(flexible),
        )
            .prop_map(
                |(
                    error_code,
                    error_message,
                    group_id,
                    group_state,
                    protocol_type,
                    protocol_data,
                    members,
                    authorized_operations,
                    tagged_fields,
                )| DescribedGroup {
                    error_code,
                    error_message,
                    group_id,
                    group_state,
                    protocol_type,
                    protocol_data,
                    members,
                    authorized_operations,
                    tagged_fields,
                },
            );
        (gated(v >= 1, any::<i32>()), array(group), tagged(flexible)).prop_map(
            |(throttle_time_ms, groups, tagged_fields)| DescribeGroupsResponse {
                throttle_time_ms,
                groups,
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
    fn a_v6_response_puts_the_error_message_right_after_the_error_code() {
        #[rustfmt::skip]
        let body = [
            0, 0, 0, 0, // throttle_time_ms
            2, // groups: 1
            0, 69, // GROUP_ID_NOT_FOUND
            4, b'n', b'o', b'!', // error_message "no!"
            2, b'g', 5, b'D', b'e', b'a', b'd', 1, 1, // "g", "Dead", "", ""
            1, // members: 0
            0x80, 0, 0, 0, // authorized_operations omitted
            0, 0, // group tags, body tags
        ];
        let decoded = DescribeGroupsResponse::decode_body(Bytes::copy_from_slice(&body), 6).unwrap();
        let g = &decoded.groups[0];
        assert_eq!((g.error_code.0, g.error_message.as_deref()), (69, Some("no!")));
        assert_eq!((g.group_id.as_str(), g.group_state.as_str()), ("g", "Dead"));
        assert_eq!(g.authorized_operations, Some(AUTHORIZED_OPERATIONS_OMITTED));
        assert_eq!(decoded.encode_body(6).unwrap(), body);
    }

    #[test]
    fn a_v0_response_member_has_no_instance_id() {
        #[rustfmt::skip]
        let body = [
            0, 0, 0, 1, 0, 0, // groups: 1, error NONE
            0, 1, b'g', 0, 6, b'S', b't', b'a', b'b', b'l', b'e', // "g", "Stable"
            0, 8, b'c', b'o', b'n', b's', b'u', b'm', b'e', b'r', 0, 5, b'r', b'a', b'n', b'g', b'e', // "consumer", "range"
            0, 0, 0, 1, // members: 1
            0, 1, b'm', 0, 1, b'c', 0, 1, b'h', // member_id, client_id, client_host
            0, 0, 0, 1, 0xaa, 0, 0, 0, 0, // member_metadata [aa], member_assignment []
        ];
        let decoded = DescribeGroupsResponse::decode_body(Bytes::copy_from_slice(&body), 0).unwrap();
        let m = &decoded.groups[0].members[0];
        assert_eq!((m.member_id.as_str(), m.group_instance_id.as_deref()), ("m", None));
        assert_eq!((&m.member_metadata[..], &m.member_assignment[..]), (&[0xaa][..], &[][..]));
        assert_eq!(decoded.encode_body(0).unwrap(), body);
    }
}
