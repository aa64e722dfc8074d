//! The group member's messages between the wire and the machines of `groups/member/`, both
//! ways, without IO: requests' embedded ConsumerProtocol bytes encoded, answers decoded into
//! the machines' version-free types. An answer's bytes that do not decode (a member's
//! subscription, this member's assignment) become the machines' "did not decode" values, never
//! a panic (`kafka_client::fuzzing` drives the machines with arbitrary answers).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::cluster::router::TopicPartition;
use crate::error::ClientError;
use crate::groups::member::broker_assigned::ConsumerHeartbeatAnswer;
use crate::groups::member::classic::{JoinGroupAnswer, SyncGroupAnswer};
use crate::groups::member::model::{GroupMemberSubscription, Subscription as MemberTopics};
use kafka_wire::protocol::consumer_protocol::{
    ConsumerAssignment, ConsumerSubscription, ConsumerTopicPartitions,
};
use kafka_wire::protocol::messages::{
    ConsumerGroupHeartbeatResponse, JoinGroupResponse, LeaveGroupResponse, SyncGroupResponse,
};
use kafka_wire::protocol::ErrorCode;

/// The ConsumerProtocol versions kwire writes: the subscription at v3 (owned partitions,
/// generation, rack), the assignment at v1 (the same fields at every version).
pub(crate) const SUBSCRIPTION_VERSION: i16 = 3;
pub(crate) const ASSIGNMENT_VERSION: i16 = 1;

/// Partitions grouped by topic, as ConsumerProtocol carries them.
pub(crate) fn by_topic(partitions: &[TopicPartition]) -> Vec<ConsumerTopicPartitions> {
    let mut grouped: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for tp in partitions {
        grouped.entry(&tp.topic).or_default().push(tp.partition);
    }
    grouped
        .into_iter()
        .map(|(topic, mut partitions)| {
            partitions.sort_unstable();
            partitions.dedup();
            ConsumerTopicPartitions { topic: topic.to_owned(), partitions }
        })
        .collect()
}

fn flatten(topics: Vec<ConsumerTopicPartitions>) -> Vec<TopicPartition> {
    topics
        .into_iter()
        .flat_map(|t| {
            let topic: Arc<str> = Arc::from(t.topic.as_str());
            t.partitions.into_iter().map(move |p| TopicPartition { topic: Arc::clone(&topic), partition: p })
        })
        .collect()
}

pub(crate) fn encode_subscription(s: &MemberTopics) -> Result<Bytes, ClientError> {
    let subscription = ConsumerSubscription {
        topics: s.topics.clone(),
        user_data: None,
        owned_partitions: Some(by_topic(&s.owned_partitions)),
        generation_id: Some(s.generation),
        rack_id: s.rack.clone(),
    };
    subscription.encode(SUBSCRIPTION_VERSION).map(Bytes::from).map_err(|e| ClientError::InvalidArgument {
        message: format!("the group subscription cannot be encoded: {e}"),
    })
}

pub(crate) fn decode_subscription(bytes: Bytes) -> Result<MemberTopics, String> {
    let decoded = ConsumerSubscription::decode(bytes).map_err(|e| e.to_string())?;
    let s = decoded.value;
    Ok(MemberTopics {
        topics: s.topics,
        owned_partitions: flatten(s.owned_partitions.unwrap_or_default()),
        generation: s.generation_id.unwrap_or(-1),
        rack: s.rack_id,
    })
}

/// A JoinGroup answer for the classic machine; each member's subscription decoded (or why not).
pub(crate) fn join_answer(response: JoinGroupResponse) -> JoinGroupAnswer {
    JoinGroupAnswer {
        error: response.error_code,
        generation: response.generation_id,
        protocol_name: response.protocol_name,
        leader: response.leader,
        member_id: response.member_id,
        skip_assignment: response.skip_assignment.unwrap_or(false),
        members: response
            .members
            .into_iter()
            .map(|m| GroupMemberSubscription {
                member_id: m.member_id,
                instance_id: m.group_instance_id,
                subscription: decode_subscription(m.metadata),
            })
            .collect(),
    }
}

/// A SyncGroup answer for the classic machine, this member's assignment decoded (or why not).
pub(crate) fn sync_answer(response: SyncGroupResponse) -> SyncGroupAnswer {
    // An error answer, or a member the leader gave nothing, carries no assignment bytes.
    let assignment = if !response.error_code.is_ok() || response.assignment.is_empty() {
        Ok(Vec::new())
    } else {
        ConsumerAssignment::decode(response.assignment)
            .map(|d| flatten(d.value.assigned_partitions))
            .map_err(|e| e.to_string())
    };
    SyncGroupAnswer { error: response.error_code, protocol_name: response.protocol_name, assignment }
}

/// A LeaveGroup answer's error: the request's, else the first of the (one) member's.
pub(crate) fn leave_answer(response: &LeaveGroupResponse) -> ErrorCode {
    let member_error = response.members.iter().flatten().map(|m| m.error_code).find(|c| !c.is_ok());
    if response.error_code.is_ok() {
        member_error.unwrap_or(ErrorCode::NONE)
    } else {
        response.error_code
    }
}

/// A ConsumerGroupHeartbeat answer for the KIP-848 machine (a negative interval reads as 0).
pub(crate) fn consumer_heartbeat_answer(response: ConsumerGroupHeartbeatResponse) -> ConsumerHeartbeatAnswer {
    ConsumerHeartbeatAnswer {
        error: response.error_code,
        member_id: response.member_id,
        member_epoch: response.member_epoch,
        heartbeat_interval: Duration::from_millis(u64::try_from(response.heartbeat_interval_ms).unwrap_or(0)),
        assignment: response
            .assignment
            .map(|a| a.topic_partitions.into_iter().map(|t| (t.topic_id, t.partitions)).collect()),
    }
}
