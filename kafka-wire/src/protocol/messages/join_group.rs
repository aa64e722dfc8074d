//! JoinGroup (key 11): a member joins (or rejoins) a classic group through its coordinator,
//! offering the protocols it speaks (for consumers, one per assignor, each carrying the
//! consumer protocol's subscription as its metadata: see
//! [`consumer_protocol`](crate::protocol::consumer_protocol)). The response names the chosen
//! protocol and the leader; only the leader gets every member's metadata, to compute the
//! assignment it sends back in SyncGroup.
//!
//! A first join with an empty member id is answered MEMBER_ID_REQUIRED (v4+) with the id to
//! join again with (KIP-394).

use bytes::Bytes;

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;

/// JoinGroup's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::JOIN_GROUP,
    name: "JoinGroup",
    versions: VersionRange::new(0, 9),
    flexible_from: Some(6),
};

kafka_message! {
    /// A JoinGroup request (v0–v9).
    pub struct JoinGroupRequest {
        /// The group identifier.
        group_id: String,
        /// The coordinator considers the member dead if it receives no heartbeat within this many ms.
        session_timeout_ms: i32,
        /// Added in v1: the longest the coordinator waits for each member to rejoin during a
        /// rebalance, in ms (−1 when left `None`).
        [since 1] rebalance_timeout_ms: Option<i32>,
        /// The member id the coordinator assigned, or empty on a first join.
        member_id: String,
        /// Added in v5 (nullable): the static member id (`group.instance.id`, KIP-345).
        [nullable since 5] group_instance_id: Option<String>,
        /// The protocol class the group implements: `"consumer"` for consumers
        /// ([`PROTOCOL_TYPE`](crate::protocol::consumer_protocol::PROTOCOL_TYPE)).
        protocol_type: String,
        /// The protocols the member supports, in order of preference.
        protocols: Vec<JoinGroupRequestProtocol>,
        /// Added in v8 (nullable, KIP-800): why the member (re)joins, for the coordinator's log.
        [nullable since 8] reason: Option<String>,
    }
}

kafka_message! {
    /// An element of [`JoinGroupRequest::protocols`]: one protocol the member supports.
    pub struct JoinGroupRequestProtocol {
        /// The protocol name (for consumers, the assignor's: `range`, `cooperative-sticky`, ...).
        name: String,
        /// The protocol metadata (for consumers, an encoded
        /// [`ConsumerSubscription`](crate::protocol::consumer_protocol::ConsumerSubscription)).
        #[cfg_attr(feature = "json", serde(serialize_with = "crate::protocol::json::bytes"))]
        metadata: Bytes,
    }
}

impl Body for JoinGroupRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.string(&self.group_id, "group_id")?;
        e.i32(self.session_timeout_ms);
        if version >= 1 {
            e.i32(self.rebalance_timeout_ms.unwrap_or(-1));
        }
        e.string(&self.member_id, "member_id")?;
        if version >= 5 {
            e.nullable_string(self.group_instance_id.as_deref(), "group_instance_id")?;
        }
        e.string(&self.protocol_type, "protocol_type")?;
        e.array(&self.protocols, "protocols", |e, p| {
            e.string(&p.name, "protocols.name")?;
            e.bytes(&p.metadata, "protocols.metadata")?;
            e.tagged_fields(&p.tagged_fields, "protocols.tagged_fields", version)
        })?;
        if version >= 8 {
            e.nullable_string(self.reason.as_deref(), "reason")?;
        }
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let group_id = d.string("group_id")?;
        let session_timeout_ms = d.i32("session_timeout_ms")?;
        let rebalance_timeout_ms = if version >= 1 { Some(d.i32("rebalance_timeout_ms")?) } else { None };
        let member_id = d.string("member_id")?;
        let group_instance_id = if version >= 5 { d.nullable_string("group_instance_id")? } else { None };
        let protocol_type = d.string("protocol_type")?;
        // Each: a name and metadata of at least a compact length byte each, and a tag section.
        let protocols = d.array("protocols", 2, |d| {
            Ok(JoinGroupRequestProtocol {
                name: d.string("protocols.name")?,
                metadata: d.bytes("protocols.metadata")?,
                tagged_fields: d.tagged_fields("protocols.tagged_fields")?,
            })
        })?;
        let reason = if version >= 8 { d.nullable_string("reason")? } else { None };
        Ok(Self {
            group_id,
            session_timeout_ms,
            rebalance_timeout_ms,
            member_id,
            group_instance_id,
            protocol_type,
            protocols,
            reason,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

impl Request for JoinGroupRequest {
    type Response = JoinGroupResponse;
}

kafka_message! {
    /// A JoinGroup response (v0–v9).
    pub struct JoinGroupResponse {
        /// Added in v2.
        [since 2] throttle_time_ms: Option<i32>,
        /// The error code, or 0 if there was no error.
        error_code: ErrorCode,
        /// The generation the member joined; −1 on an error.
        generation_id: i32,
        /// Added in v7 (nullable): the group's protocol type.
        [nullable since 7] protocol_type: Option<String>,
        /// The chosen protocol. Nullable from v7 (null on an error); always present before.
        protocol_name: Option<String>,
        /// The leader's member id.
        leader: String,
        /// Added in v9 (KIP-814): the leader must not compute an assignment (the coordinator
        /// already has one, as when a static leader rejoins); it still sends SyncGroup.
        [since 9] skip_assignment: Option<bool>,
        /// The member's id.
        member_id: String,
        /// Every member and its metadata for the chosen protocol: only in the leader's response.
        members: Vec<JoinGroupResponseMember>,
    }
}

kafka_message! {
    /// An element of [`JoinGroupResponse::members`]: one member of the group.
    pub struct JoinGroupResponseMember {
        /// The member's id.
        member_id: String,
        /// Added in v5 (nullable): the member's static id.
        [nullable since 5] group_instance_id: Option<String>,
        /// The member's metadata for the chosen protocol.
        #[cfg_attr(feature = "json", serde(serialize_with = "crate::protocol::json::bytes"))]
        metadata: Bytes,
    }
}

impl Body for JoinGroupResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 2 {
            e.i32(self.throttle_time_ms.unwrap_or(0));
        }
        e.i16(self.error_code.0);
        e.i32(self.generation_id);
        if version >= 7 {
            e.nullable_string(self.protocol_type.as_deref(), "protocol_type")?;
            e.nullable_string(self.protocol_name.as_deref(), "protocol_name")?;
        } else {
            e.string(self.protocol_name.as_deref().unwrap_or_default(), "protocol_name")?;
        }
        e.string(&self.leader, "leader")?;
        if version >= 9 {
            e.bool(self.skip_assignment.unwrap_or(false));
        }
        e.string(&self.member_id, "member_id")?;
        e.array(&self.members, "members", |e, m| {
            e.string(&m.member_id, "members.member_id")?;
            if version >= 5 {
                e.nullable_string(m.group_instance_id.as_deref(), "members.group_instance_id")?;
            }
            e.bytes(&m.metadata, "members.metadata")?;
            e.tagged_fields(&m.tagged_fields, "members.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if version >= 2 { Some(d.i32("throttle_time_ms")?) } else { None };
        let error_code = ErrorCode(d.i16("error_code")?);
        let generation_id = d.i32("generation_id")?;
        let (protocol_type, protocol_name) = if version >= 7 {
            (d.nullable_string("protocol_type")?, d.nullable_string("protocol_name")?)
        } else {
            (None, Some(d.string("protocol_name")?))
        };
        let leader = d.string("leader")?;
        let skip_assignment = if version >= 9 { Some(d.bool("skip_assignment")?) } else { None };
        let member_id = d.string("member_id")?;
        let members = d.array("members", 2, |d| {
            let member_id = d.string("members.member_id")?;
            let group_instance_id =
                if version >= 5 { d.nullable_string("members.group_instance_id")? } else { None };
            Ok(JoinGroupResponseMember {
                member_id,
                group_instance_id,
                metadata: d.bytes("members.metadata")?,
                tagged_fields: d.tagged_fields("members.tagged_fields")?,
            })
        })?;
        Ok(Self {
            throttle_time_ms,
            error_code,
            generation_id,
            protocol_type,
            protocol_name,
            leader,
            skip_assignment,
            member_id,
            members,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{
        array, bytes, error_code, gated, nullable_string, round_trip_every_version, string, tagged,
    };

    fn request(v: i16) -> impl Strategy<Value = JoinGroupRequest> {
        let flexible = v >= 6;
        let protocol = (string(), bytes(), tagged(flexible)).prop_map(|(name, metadata, tagged_fields)| {
            JoinGroupRequestProtocol { name, metadata, tagged_fields }
        });
        let group_instance_id = if v >= 5 { nullable_string() } else { Just(None).boxed() };
        let reason = if v >= 8 { nullable_string() } else { Just(None).boxed() };
        (
            string(),
            any::<i32>(),
            gated(v >= 1, any::<i32>()),
            string(),
            group_instance_id,
            string(),
            array(protocol),
            reason,
            tagged(flexible),
        )
            .prop_map(
                |(
                    group_id,
                    session_timeout_ms,
                    rebalance_timeout_ms,
                    member_id,
                    group_instance_id,
                    protocol_type,
                    protocols,
                    reason,
                    tagged_fields,
                )| JoinGroupRequest {
                    group_id,
                    session_timeout_ms,
                    rebalance_timeout_ms,
                    member_id,
                    group_instance_id,
                    protocol_type,
                    protocols,
                    reason,
                    tagged_fields,
                },
            )
    }

    fn response(v: i16) -> impl Strategy<Value = JoinGroupResponse> {
        let flexible = v >= 6;
        let group_instance_id = if v >= 5 { nullable_string() } else { Just(None).boxed() };
        let member = (string(), group_instance_id, bytes(), tagged(flexible)).prop_map(
            |(member_id, group_instance_id, metadata, tagged_fields)| JoinGroupResponseMember {
                member_id,
                group_instance_id,
                metadata,
                tagged_fields,
            },
        );
        let protocol_type = if v >= 7 { nullable_string() } else { Just(None).boxed() };
        let protocol_name = if v >= 7 { nullable_string() } else { string().prop_map(Some).boxed() };
        (
            gated(v >= 2, any::<i32>()),
            error_code(),
            any::<i32>(),
            protocol_type,
            protocol_name,
            string(),
            gated(v >= 9, any::<bool>()),
            string(),
            array(member),
            tagged(flexible),
        )
            .prop_map(
                |(
                    throttle_time_ms,
                    error_code,
                    generation_id,
                    protocol_type,
                    protocol_name,
                    leader,
                    skip_assignment,
                    member_id,
                    members,
                    tagged_fields,
                )| JoinGroupResponse {
                    throttle_time_ms,
                    error_code,
                    generation_id,
                    protocol_type,
                    protocol_name,
                    leader,
                    skip_assignment,
                    member_id,
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
    fn a_v0_request_has_no_rebalance_timeout_and_a_v1_request_defaults_it_to_minus_one() {
        let request = JoinGroupRequest {
            group_id: "g".into(),
            session_timeout_ms: 10_000,
            protocol_type: "consumer".into(),
            protocols: vec![JoinGroupRequestProtocol {
                name: "range".into(),
                metadata: Bytes::from_static(&[0xab]),
                ..Default::default()
            }],
            ..Default::default()
        };
        #[rustfmt::skip]
        let v0 = [
            0, 1, b'g', // group_id
            0, 0, 0x27, 0x10, // session_timeout_ms 10000
            0, 0, // member_id ""
            0, 8, b'c', b'o', b'n', b's', b'u', b'm', b'e', b'r', // protocol_type
            0, 0, 0, 1, // protocols: 1
            0, 5, b'r', b'a', b'n', b'g', b'e', 0, 0, 0, 1, 0xab, // "range", metadata [ab]
        ];
        assert_eq!(request.encode_body(0).unwrap(), v0);
        let v1 = request.encode_body(1).unwrap();
        assert_eq!(&v1[3..11], &[0, 0, 0x27, 0x10, 0xff, 0xff, 0xff, 0xff]);
        let back = JoinGroupRequest::decode_body(Bytes::from(v1), 1).unwrap();
        assert_eq!(back.rebalance_timeout_ms, Some(-1));
    }

    #[test]
    fn a_v9_response_has_nullable_protocol_names_and_skip_assignment() {
        #[rustfmt::skip]
        let body = [
            0, 0, 0, 0, // throttle_time_ms
            0, 79, // MEMBER_ID_REQUIRED
            0xff, 0xff, 0xff, 0xff, // generation_id −1
            0, 0, // protocol_type null, protocol_name null (compact)
            1, // leader ""
            1, // skip_assignment true
            3, b'm', b'-', // member_id "m-"
            1, // members: 0
            0, // tags
        ];
        let decoded = JoinGroupResponse::decode_body(Bytes::copy_from_slice(&body), 9).unwrap();
        assert_eq!(decoded.error_code, ErrorCode::MEMBER_ID_REQUIRED);
        assert_eq!((decoded.protocol_type.as_deref(), decoded.protocol_name.as_deref()), (None, None));
        assert_eq!(decoded.skip_assignment, Some(true));
        assert_eq!(decoded.member_id, "m-");
        assert_eq!(decoded.encode_body(9).unwrap(), body);
    }

    #[test]
    fn a_v8_request_ends_with_its_reason() {
        let request = JoinGroupRequest {
            rebalance_timeout_ms: Some(-1),
            reason: Some("why".into()),
            ..Default::default()
        };
        let body = request.encode_body(8).unwrap();
        // ..., protocols: 0 (compact 1), reason "why" (compact 4), tags.
        assert_eq!(&body[body.len() - 6..], &[1, 4, b'w', b'h', b'y', 0]);
        assert_eq!(JoinGroupRequest::decode_body(Bytes::from(body), 8).unwrap(), request);
    }
}
