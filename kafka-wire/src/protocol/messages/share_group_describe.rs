//! ShareGroupDescribe (key 77, KIP-932): state, epochs and members of share groups, which
//! neither DescribeGroups nor ConsumerGroupDescribe knows. Version 0 was Kafka 4.0's early
//! access and is gone from 4.1; v1 is the first stable version. A share group has no target
//! assignment: each member comes with the partitions it is assigned now.

use super::consumer_group_describe::{read_assignment, write_assignment, ConsumerGroupAssignment};
use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;

/// ShareGroupDescribe's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::SHARE_GROUP_DESCRIBE,
    name: "ShareGroupDescribe",
    versions: VersionRange::new(1, 1),
    flexible_from: Some(1),
};

kafka_message! {
    /// A ShareGroupDescribe request (v1).
    pub struct ShareGroupDescribeRequest [flexible] {
        /// The ids of the groups to describe.
        group_ids: Vec<String>,
        /// Whether to include authorized operations.
        include_authorized_operations: bool,
    }
}

impl Body for ShareGroupDescribeRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.array(&self.group_ids, "group_ids", |e, g| e.string(g, "group_ids"))?;
        e.bool(self.include_authorized_operations);
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        Ok(Self {
            group_ids: d.array("group_ids", 1, |d| d.string("group_ids"))?,
            include_authorized_operations: d.bool("include_authorized_operations")?,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

impl Request for ShareGroupDescribeRequest {
    type Response = ShareGroupDescribeResponse;
}

kafka_message! {
    /// A ShareGroupDescribe response (v1).
    pub struct ShareGroupDescribeResponse [flexible] {
        /// How long the request was throttled for a quota violation, or zero.
        throttle_time_ms: i32,
        /// Each described group.
        groups: Vec<ShareDescribedGroup>,
    }
}

kafka_message! {
    /// An element of [`ShareGroupDescribeResponse::groups`].
    pub struct ShareDescribedGroup [flexible] {
        /// GROUP_ID_NOT_FOUND for an unknown group and for a group of another type (its
        /// `error_message` says so).
        error_code: ErrorCode,
        /// Nullable.
        error_message: Option<String>,
        /// The group ID string.
        group_id: String,
        /// `Empty`, `Stable`, `Dead`, or the empty string.
        group_state: String,
        /// Bumped by every change of membership or subscriptions.
        group_epoch: i32,
        /// The group epoch the current assignment was computed at.
        assignment_epoch: i32,
        /// The server-side share assignor (`simple`).
        assignor_name: String,
        /// The members.
        members: Vec<ShareGroupMember>,
        /// A bitfield of authorized operations, or `i32::MIN` when not requested.
        authorized_operations: i32,
    }
}

kafka_message! {
    /// An element of [`ShareDescribedGroup::members`].
    pub struct ShareGroupMember [flexible] {
        /// The member ID.
        member_id: String,
        /// The member's rack (nullable).
        rack_id: Option<String>,
        /// The member's current epoch.
        member_epoch: i32,
        /// The client ID.
        client_id: String,
        /// The client host.
        client_host: String,
        /// The topics the member subscribed to.
        subscribed_topic_names: Vec<String>,
        /// The partitions the member is assigned now.
        assignment: ConsumerGroupAssignment,
    }
}

impl Body for ShareGroupDescribeResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.i32(self.throttle_time_ms);
        e.array(&self.groups, "groups", |e, g| {
            e.i16(g.error_code.0);
            e.nullable_string(g.error_message.as_deref(), "groups.error_message")?;
            e.string(&g.group_id, "groups.group_id")?;
            e.string(&g.group_state, "groups.group_state")?;
            e.i32(g.group_epoch);
            e.i32(g.assignment_epoch);
            e.string(&g.assignor_name, "groups.assignor_name")?;
            e.array(&g.members, "groups.members", |e, m| {
                e.string(&m.member_id, "groups.members.member_id")?;
                e.nullable_string(m.rack_id.as_deref(), "groups.members.rack_id")?;
                e.i32(m.member_epoch);
                e.string(&m.client_id, "groups.members.client_id")?;
                e.string(&m.client_host, "groups.members.client_host")?;
                e.array(&m.subscribed_topic_names, "groups.members.subscribed_topic_names", |e, t| {
                    e.string(t, "groups.members.subscribed_topic_names")
                })?;
                write_assignment(e, &m.assignment, version)?;
                e.tagged_fields(&m.tagged_fields, "groups.members.tagged_fields", version)
            })?;
            e.i32(g.authorized_operations);
            e.tagged_fields(&g.tagged_fields, "groups.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = d.i32("throttle_time_ms")?;
        let groups = d.array("groups", 20, |d| {
            let error_code = ErrorCode(d.i16("groups.error_code")?);
            let error_message = d.nullable_string("groups.error_message")?;
            let group_id = d.string("groups.group_id")?;
            let group_state = d.string("groups.group_state")?;
            let group_epoch = d.i32("groups.group_epoch")?;
            let assignment_epoch = d.i32("groups.assignment_epoch")?;
            let assignor_name = d.string("groups.assignor_name")?;
            let members = d.array("groups.members", 12, |d| {
                Ok(ShareGroupMember {
                    member_id: d.string("groups.members.member_id")?,
                    rack_id: d.nullable_string("groups.members.rack_id")?,
                    member_epoch: d.i32("groups.members.member_epoch")?,
                    client_id: d.string("groups.members.client_id")?,
                    client_host: d.string("groups.members.client_host")?,
                    subscribed_topic_names: d.array("groups.members.subscribed_topic_names", 1, |d| {
                        d.string("groups.members.subscribed_topic_names")
                    })?,
                    assignment: read_assignment(d)?,
                    tagged_fields: d.tagged_fields("groups.members.tagged_fields")?,
                })
            })?;
            Ok(ShareDescribedGroup {
                error_code,
                error_message,
                group_id,
                group_state,
                group_epoch,
                assignment_epoch,
                assignor_name,
                members,
                authorized_operations: d.i32("groups.authorized_operations")?,
                tagged_fields: d.tagged_fields("groups.tagged_fields")?,
            })
        })?;
        Ok(Self { throttle_time_ms, groups, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::consumer_group_describe::AssignedTopicPartitions;
    use crate::protocol::messages::test_util::{
        array, error_code, nullable_string, round_trip_every_version, string, tagged, uuid,
    };

    fn request(_v: i16) -> impl Strategy<Value = ShareGroupDescribeRequest> {
        (array(string()), any::<bool>(), tagged(true)).prop_map(
            |(group_ids, include_authorized_operations, tagged_fields)| ShareGroupDescribeRequest {
                group_ids,
                include_authorized_operations,
                tagged_fields,
            },
        )
    }

    fn assignment() -> impl Strategy<Value = ConsumerGroupAssignment> {
        let topic = (uuid(), string(), array(any::<i32>()), tagged(true)).prop_map(
            |(topic_id, topic_name, partitions, tagged_fields)| AssignedTopicPartitions {
                topic_id,
                topic_name,
                partitions,
                tagged_fields,
            },
        );
        (array(topic), tagged(true)).prop_map(|(topic_partitions, tagged_fields)| ConsumerGroupAssignment {
            topic_partitions,
            tagged_fields,
        })
    }

    fn response(_v: i16) -> impl Strategy<Value = ShareGroupDescribeResponse> {
        let member = (
            (string(), nullable_string(), any::<i32>(), string(), string()),
            (array(string()), assignment(), tagged(true)),
        )
            .prop_map(
                |(
                    (member_id, rack_id, member_epoch, client_id, client_host),
                    (subscribed_topic_names, assignment, tagged_fields),
                )| ShareGroupMember {
                    member_id,
                    rack_id,
                    member_epoch,
                    client_id,
                    client_host,
                    subscribed_topic_names,
                    assignment,
                    tagged_fields,
                },
            );
        let group = (
            (error_code(), nullable_string(), string(), string(), any::<i32>(), any::<i32>()),
            (string(), array(member), any::<i32>(), tagged(true)),
        )
            .prop_map(
                |(
                    (error_code, error_message, group_id, group_state, group_epoch, assignment_epoch),
                    (assignor_name, members, authorized_operations, tagged_fields),
                )| ShareDescribedGroup {
                    error_code,
                    error_message,
                    group_id,
                    group_state,
                    group_epoch,
                    assignment_epoch,
                    assignor_name,
                    members,
                    authorized_operations,
                    tagged_fields,
                },
            );
        (any::<i32>(), array(group), tagged(true)).prop_map(|(throttle_time_ms, groups, tagged_fields)| {
            ShareGroupDescribeResponse { throttle_time_ms, groups, tagged_fields }
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
    fn a_member_is_read_without_instance_id_regex_or_target_assignment() {
        #[rustfmt::skip]
        let body = [
            0, 0, 0, 0, // throttle_time_ms
            2, // groups: 1
            0, 0, 0, // error_code, error_message null
            2, b'g', 7, b'S', b't', b'a', b'b', b'l', b'e', // group_id "g", state "Stable"
            0, 0, 0, 3, 0, 0, 0, 2, // group_epoch 3, assignment_epoch 2
            7, b's', b'i', b'm', b'p', b'l', b'e', // assignor_name "simple"
            2, // members: 1
            2, b'm', 0, // member_id "m", rack_id null
            0, 0, 0, 3, // member_epoch 3
            2, b'c', 2, b'h', // client_id "c", client_host "h"
            2, 2, b't', // subscribed_topic_names ["t"]
            2, // assignment: 1 topic
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, // topic_id
            2, b't', 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, // "t" [0, 1], topic tags
            0, 0, // assignment tags, member tags
            0x80, 0, 0, 0, // authorized_operations omitted
            0, 0, // group tags, body tags
        ];
        let decoded = ShareGroupDescribeResponse::decode_body(Bytes::copy_from_slice(&body), 1).unwrap();
        let g = &decoded.groups[0];
        assert_eq!((g.group_state.as_str(), g.group_epoch, g.assignment_epoch), ("Stable", 3, 2));
        let m = &g.members[0];
        assert_eq!((m.member_id.as_str(), m.member_epoch, m.rack_id.as_deref()), ("m", 3, None));
        assert_eq!(m.assignment.topic_partitions[0].partitions, [0, 1]);
        assert_eq!(decoded.encode_body(1).unwrap(), body);
    }
}
