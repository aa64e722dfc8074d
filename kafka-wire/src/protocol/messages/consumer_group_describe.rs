//! ConsumerGroupDescribe (key 69, KIP-848): state, epochs and members of groups on the
//! consumer protocol (`group.protocol=consumer`), which DescribeGroups does not know. Each
//! member comes with its current assignment and the target assignment the coordinator is
//! moving it to, by topic id and name.

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;
use kafka_vocab::Uuid;

/// ConsumerGroupDescribe's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::CONSUMER_GROUP_DESCRIBE,
    name: "ConsumerGroupDescribe",
    versions: VersionRange::new(0, 1),
    flexible_from: Some(0),
};

/// The `member_type` a v1 response writes when it does not know the member's protocol.
pub const MEMBER_TYPE_UNKNOWN: i8 = -1;

kafka_message! {
    /// A ConsumerGroupDescribe request (v0–v1).
    pub struct ConsumerGroupDescribeRequest [flexible] {
        /// The ids of the groups to describe.
        group_ids: Vec<String>,
        /// Whether to include authorized operations.
        include_authorized_operations: bool,
    }
}

impl Body for ConsumerGroupDescribeRequest {
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

impl Request for ConsumerGroupDescribeRequest {
    type Response = ConsumerGroupDescribeResponse;
}

kafka_message! {
    /// A ConsumerGroupDescribe response (v0–v1).
    pub struct ConsumerGroupDescribeResponse [flexible] {
        /// How long the request was throttled for a quota violation, or zero.
        throttle_time_ms: i32,
        /// Each described group.
        groups: Vec<ConsumerDescribedGroup>,
    }
}

kafka_message! {
    /// An element of [`ConsumerGroupDescribeResponse::groups`].
    pub struct ConsumerDescribedGroup [flexible] {
        /// GROUP_ID_NOT_FOUND for an unknown group and for a group on another protocol (a
        /// classic group: its `error_message` says "is not a consumer group").
        error_code: ErrorCode,
        /// Nullable.
        error_message: Option<String>,
        /// The group ID string.
        group_id: String,
        /// `Empty`, `Assigning`, `Reconciling`, `Stable`, `Dead`, or the empty string.
        group_state: String,
        /// Bumped by every change of membership or subscriptions.
        group_epoch: i32,
        /// The group epoch the current target assignment was computed at.
        assignment_epoch: i32,
        /// The server-side assignor (`uniform`, `range`, ...).
        assignor_name: String,
        /// The members.
        members: Vec<ConsumerGroupMember>,
        /// A bitfield of authorized operations, or `i32::MIN` when not requested.
        authorized_operations: i32,
    }
}

kafka_message! {
    /// An element of [`ConsumerDescribedGroup::members`].
    pub struct ConsumerGroupMember [flexible] {
        /// The member ID.
        member_id: String,
        /// The static member id (`group.instance.id`, nullable).
        instance_id: Option<String>,
        /// The member's rack (nullable).
        rack_id: Option<String>,
        /// The member's current epoch.
        member_epoch: i32,
        /// The client ID.
        client_id: String,
        /// The client host.
        client_host: String,
        /// The topics the member subscribed to by name.
        subscribed_topic_names: Vec<String>,
        /// The member's subscription regex (nullable).
        subscribed_topic_regex: Option<String>,
        /// What the member owns now.
        assignment: ConsumerGroupAssignment,
        /// What the coordinator wants the member to own.
        target_assignment: ConsumerGroupAssignment,
        /// Added in v1: −1 unknown, 0 a classic member (upgraded group), 1 a consumer member.
        [nullable since 1] member_type: Option<i8>,
    }
}

kafka_message! {
    /// A member's assignment (current or target).
    pub struct ConsumerGroupAssignment [flexible] {
        /// The assigned partitions, per topic.
        topic_partitions: Vec<AssignedTopicPartitions>,
    }
}

kafka_message! {
    /// An element of [`ConsumerGroupAssignment::topic_partitions`].
    pub struct AssignedTopicPartitions [flexible] {
        /// The topic ID.
        topic_id: Uuid,
        /// The topic name.
        topic_name: String,
        /// The partitions.
        partitions: Vec<i32>,
    }
}

/// Shared with ShareGroupDescribe, whose assignment has the same shape.
pub(crate) fn write_assignment(e: &mut Encoder, a: &ConsumerGroupAssignment, version: i16) -> EncodeResult {
    e.array(&a.topic_partitions, "assignment.topic_partitions", |e, t| {
        e.uuid(t.topic_id);
        e.string(&t.topic_name, "assignment.topic_partitions.topic_name")?;
        e.i32_array(&t.partitions, "assignment.topic_partitions.partitions")?;
        e.tagged_fields(&t.tagged_fields, "assignment.topic_partitions.tagged_fields", version)
    })?;
    e.tagged_fields(&a.tagged_fields, "assignment.tagged_fields", version)
}

/// Shared with ShareGroupDescribe, whose assignment has the same shape.
pub(crate) fn read_assignment(d: &mut Decoder) -> DecodeResult<ConsumerGroupAssignment> {
    let topic_partitions = d.array("assignment.topic_partitions", 19, |d| {
        Ok(AssignedTopicPartitions {
            topic_id: d.uuid("assignment.topic_partitions.topic_id")?,
            topic_name: d.string("assignment.topic_partitions.topic_name")?,
            partitions: d.i32_array("assignment.topic_partitions.partitions")?,
            tagged_fields: d.tagged_fields("assignment.topic_partitions.tagged_fields")?,
        })
    })?;
    Ok(ConsumerGroupAssignment {
        topic_partitions,
        tagged_fields: d.tagged_fields("assignment.tagged_fields")?,
    })
}

impl Body for ConsumerGroupDescribeResponse {
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
                e.nullable_string(m.instance_id.as_deref(), "groups.members.instance_id")?;
                e.nullable_string(m.rack_id.as_deref(), "groups.members.rack_id")?;
                e.i32(m.member_epoch);
                e.string(&m.client_id, "groups.members.client_id")?;
                e.string(&m.client_host, "groups.members.client_host")?;
                e.array(&m.subscribed_topic_names, "groups.members.subscribed_topic_names", |e, t| {
                    e.string(t, "groups.members.subscribed_topic_names")
                })?;
                e.nullable_string(
                    m.subscribed_topic_regex.as_deref(),
                    "groups.members.subscribed_topic_regex",
                )?;
                write_assignment(e, &m.assignment, version)?;
                write_assignment(e, &m.target_assignment, version)?;
                if version >= 1 {
                    e.i8(m.member_type.unwrap_or(MEMBER_TYPE_UNKNOWN));
                }
                e.tagged_fields(&m.tagged_fields, "groups.members.tagged_fields", version)
            })?;
            e.i32(g.authorized_operations);
            e.tagged_fields(&g.tagged_fields, "groups.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = d.i32("throttle_time_ms")?;
        let groups = d.array("groups", 20, |d| {
            let error_code = ErrorCode(d.i16("groups.error_code")?);
            let error_message = d.nullable_string("groups.error_message")?;
            let group_id = d.string("groups.group_id")?;
            let group_state = d.string("groups.group_state")?;
            let group_epoch = d.i32("groups.group_epoch")?;
            let assignment_epoch = d.i32("groups.assignment_epoch")?;
            let assignor_name = d.string("groups.assignor_name")?;
            let members = d.array("groups.members", 17, |d| {
                Ok(ConsumerGroupMember {
                    member_id: d.string("groups.members.member_id")?,
                    instance_id: d.nullable_string("groups.members.instance_id")?,
                    rack_id: d.nullable_string("groups.members.rack_id")?,
                    member_epoch: d.i32("groups.members.member_epoch")?,
                    client_id: d.string("groups.members.client_id")?,
                    client_host: d.string("groups.members.client_host")?,
                    subscribed_topic_names: d.array("groups.members.subscribed_topic_names", 1, |d| {
                        d.string("groups.members.subscribed_topic_names")
                    })?,
                    subscribed_topic_regex: d.nullable_string("groups.members.subscribed_topic_regex")?,
                    assignment: read_assignment(d)?,
                    target_assignment: read_assignment(d)?,
                    member_type: if version >= 1 { Some(d.i8("groups.members.member_type")?) } else { None },
                    tagged_fields: d.tagged_fields("groups.members.tagged_fields")?,
                })
            })?;
            Ok(ConsumerDescribedGroup {
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
    use crate::protocol::messages::test_util::{
        array, error_code, gated, nullable_string, round_trip_every_version, string, tagged, uuid,
    };

    fn request(_v: i16) -> impl Strategy<Value = ConsumerGroupDescribeRequest> {
        (array(string()), any::<bool>(), tagged(true)).prop_map(
            |(group_ids, include_authorized_operations, tagged_fields)| ConsumerGroupDescribeRequest {
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

    fn response(v: i16) -> impl Strategy<Value = ConsumerGroupDescribeResponse> {
        let member = (
            (string(), nullable_string(), nullable_string(), any::<i32>(), string(), string()),
            (
                array(string()),
                nullable_string(),
                assignment(),
                assignment(),
                gated(v >= 1, any::<i8>()),
                tagged(true),
            ),
        )
            .prop_map(
                |(
                    (member_id, instance_id, rack_id, member_epoch, client_id, client_host),
                    (
                        subscribed_topic_names,
                        subscribed_topic_regex,
                        assignment,
                        target_assignment,
                        member_type,
                        tagged_fields,
                    ),
                )| ConsumerGroupMember {
                    member_id,
                    instance_id,
                    rack_id,
                    member_epoch,
                    client_id,
                    client_host,
                    subscribed_topic_names,
                    subscribed_topic_regex,
                    assignment,
                    target_assignment,
                    member_type,
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
                )| ConsumerDescribedGroup {
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
            ConsumerGroupDescribeResponse { throttle_time_ms, groups, tagged_fields }
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
    fn a_classic_group_is_answered_not_found_with_the_reason() {
        #[rustfmt::skip]
        let body = [
            0, 0, 0, 0, // throttle_time_ms
            2, // groups: 1
            0, 69, // GROUP_ID_NOT_FOUND
            4, b'n', b'o', b'!', // error_message "no!"
            2, b'g', 1, // group_id "g", group_state ""
            0, 0, 0, 0, 0, 0, 0, 0, // group_epoch, assignment_epoch
            1, 1, // assignor_name "", members: 0
            0x80, 0, 0, 0, // authorized_operations omitted
            0, 0, // group tags, body tags
        ];
        let decoded = ConsumerGroupDescribeResponse::decode_body(Bytes::copy_from_slice(&body), 1).unwrap();
        let g = &decoded.groups[0];
        assert_eq!((g.error_code, g.error_message.as_deref()), (ErrorCode::GROUP_ID_NOT_FOUND, Some("no!")));
        assert_eq!(
            g.authorized_operations,
            crate::protocol::messages::metadata::AUTHORIZED_OPERATIONS_OMITTED
        );
        assert_eq!(decoded.encode_body(1).unwrap(), body);
    }

    #[test]
    fn a_v1_member_ends_with_its_type_and_a_v0_member_has_none() {
        let member =
            ConsumerGroupMember { member_id: "m".into(), member_type: Some(1), ..Default::default() };
        let response = ConsumerGroupDescribeResponse {
            groups: vec![ConsumerDescribedGroup { members: vec![member], ..Default::default() }],
            ..Default::default()
        };
        let v1 = response.encode_body(1).unwrap();
        let v0 = response.encode_body(0).unwrap();
        assert_eq!(v1.len(), v0.len() + 1);
        let back = ConsumerGroupDescribeResponse::decode_body(Bytes::from(v0), 0).unwrap();
        assert_eq!(back.groups[0].members[0].member_type, None);
        let back = ConsumerGroupDescribeResponse::decode_body(Bytes::from(v1), 1).unwrap();
        assert_eq!(back.groups[0].members[0].member_type, Some(1));
    }
}
