//! Each message struct's field list (`FIELDS`, emitted by `kafka_message!`) against the schema
//! table Kafka's JSON schemas were compiled into (`protocol::schema`), over the versions kwire
//! implements:
//!
//! - every declared field exists at the struct's place in the schema (its JSON name, Kafka's
//!   name snake cased), first and last in the versions the declaration says (`since` / `until`,
//!   or the struct's own first / last version when it says none);
//! - every schema field the struct's versions have is declared, or listed in [`NOT_MODELLED`]
//!   with the reason.
//!
//! A struct used in more than one place (Fetch's and Produce's `current_leader`) is checked at
//! each; a declared version outside the place's versions is clamped to them.

use std::collections::BTreeMap;

use super::*;
use crate::protocol::api::ApiSpec;
use crate::protocol::message_macro::MessageField;
use crate::protocol::schema::{self, Field, FieldType, MessageKind};

/// One struct at one place in one API's request or response schema.
struct Case {
    name: &'static str,
    fields: &'static [MessageField],
    spec: ApiSpec,
    kind: MessageKind,
    /// The dotted path of the struct's array or struct field; empty for the body itself.
    path: &'static str,
}

macro_rules! case {
    ($ty:path, $spec:path, $kind:ident, $path:literal) => {
        Case {
            name: stringify!($ty),
            fields: <$ty>::FIELDS,
            spec: $spec,
            kind: MessageKind::$kind,
            path: $path,
        }
    };
}

/// Schema fields a struct deliberately does not have: (struct, field, why).
const NOT_MODELLED: &[(&str, &str, &str)] = &[
    ("ApiVersionsResponse", "supported_features", TAGGED_FEATURES),
    ("ApiVersionsResponse", "finalized_features_epoch", TAGGED_FEATURES),
    ("ApiVersionsResponse", "finalized_features", TAGGED_FEATURES),
    ("ApiVersionsResponse", "zk_migration_ready", TAGGED_FEATURES),
];

const TAGGED_FEATURES: &str = "tagged (tags 0–3, v3+): kept raw in `tagged_fields`; \
    `ApiVersionsResponse::finalized_features` reads tag 2 on demand";

const CASES: &[Case] = &[
    case!(add_offsets_to_txn::AddOffsetsToTxnRequest, add_offsets_to_txn::SPEC, Request, ""),
    case!(add_offsets_to_txn::AddOffsetsToTxnResponse, add_offsets_to_txn::SPEC, Response, ""),
    case!(add_partitions_to_txn::AddPartitionsToTxnRequest, add_partitions_to_txn::SPEC, Request, ""),
    case!(
        add_partitions_to_txn::AddPartitionsToTxnTopic,
        add_partitions_to_txn::SPEC,
        Request,
        "v3_and_below_topics"
    ),
    case!(add_partitions_to_txn::AddPartitionsToTxnResponse, add_partitions_to_txn::SPEC, Response, ""),
    case!(
        add_partitions_to_txn::AddPartitionsToTxnTopicResult,
        add_partitions_to_txn::SPEC,
        Response,
        "results_by_topic_v3_and_below"
    ),
    case!(
        add_partitions_to_txn::AddPartitionsToTxnPartitionResult,
        add_partitions_to_txn::SPEC,
        Response,
        "results_by_topic_v3_and_below.results_by_partition"
    ),
    case!(api_versions::ApiVersionsRequest, api_versions::SPEC, Request, ""),
    case!(api_versions::ApiVersionsResponse, api_versions::SPEC, Response, ""),
    case!(api_versions::ApiVersionRange, api_versions::SPEC, Response, "api_keys"),
    case!(api_versions::FinalizedFeature, api_versions::SPEC, Response, "finalized_features"),
    case!(consumer_group_describe::ConsumerGroupDescribeRequest, consumer_group_describe::SPEC, Request, ""),
    case!(
        consumer_group_describe::ConsumerGroupDescribeResponse,
        consumer_group_describe::SPEC,
        Response,
        ""
    ),
    case!(consumer_group_describe::ConsumerDescribedGroup, consumer_group_describe::SPEC, Response, "groups"),
    case!(
        consumer_group_describe::ConsumerGroupMember,
        consumer_group_describe::SPEC,
        Response,
        "groups.members"
    ),
    case!(
        consumer_group_describe::ConsumerGroupAssignment,
        consumer_group_describe::SPEC,
        Response,
        "groups.members.assignment"
    ),
    case!(
        consumer_group_describe::ConsumerGroupAssignment,
        consumer_group_describe::SPEC,
        Response,
        "groups.members.target_assignment"
    ),
    case!(
        consumer_group_describe::AssignedTopicPartitions,
        consumer_group_describe::SPEC,
        Response,
        "groups.members.assignment.topic_partitions"
    ),
    case!(
        consumer_group_describe::AssignedTopicPartitions,
        consumer_group_describe::SPEC,
        Response,
        "groups.members.target_assignment.topic_partitions"
    ),
    case!(
        consumer_group_heartbeat::ConsumerGroupHeartbeatRequest,
        consumer_group_heartbeat::SPEC,
        Request,
        ""
    ),
    case!(
        consumer_group_heartbeat::ConsumerGroupHeartbeatTopicPartitions,
        consumer_group_heartbeat::SPEC,
        Request,
        "topic_partitions"
    ),
    case!(
        consumer_group_heartbeat::ConsumerGroupHeartbeatTopicPartitions,
        consumer_group_heartbeat::SPEC,
        Response,
        "assignment.topic_partitions"
    ),
    case!(
        consumer_group_heartbeat::ConsumerGroupHeartbeatResponse,
        consumer_group_heartbeat::SPEC,
        Response,
        ""
    ),
    case!(
        consumer_group_heartbeat::ConsumerGroupHeartbeatAssignment,
        consumer_group_heartbeat::SPEC,
        Response,
        "assignment"
    ),
    case!(create_partitions::CreatePartitionsRequest, create_partitions::SPEC, Request, ""),
    case!(create_partitions::CreatePartitionsTopic, create_partitions::SPEC, Request, "topics"),
    case!(
        create_partitions::CreatePartitionsAssignment,
        create_partitions::SPEC,
        Request,
        "topics.assignments"
    ),
    case!(create_partitions::CreatePartitionsResponse, create_partitions::SPEC, Response, ""),
    case!(create_partitions::CreatePartitionsTopicResult, create_partitions::SPEC, Response, "results"),
    case!(create_topics::CreateTopicsRequest, create_topics::SPEC, Request, ""),
    case!(create_topics::CreatableTopic, create_topics::SPEC, Request, "topics"),
    case!(create_topics::CreatableReplicaAssignment, create_topics::SPEC, Request, "topics.assignments"),
    case!(create_topics::CreatableTopicConfig, create_topics::SPEC, Request, "topics.configs"),
    case!(create_topics::CreateTopicsResponse, create_topics::SPEC, Response, ""),
    case!(create_topics::CreatableTopicResult, create_topics::SPEC, Response, "topics"),
    case!(create_topics::CreatableTopicConfigs, create_topics::SPEC, Response, "topics.configs"),
    case!(delete_records::DeleteRecordsRequest, delete_records::SPEC, Request, ""),
    case!(delete_records::DeleteRecordsTopic, delete_records::SPEC, Request, "topics"),
    case!(delete_records::DeleteRecordsPartition, delete_records::SPEC, Request, "topics.partitions"),
    case!(delete_records::DeleteRecordsResponse, delete_records::SPEC, Response, ""),
    case!(delete_records::DeleteRecordsTopicResult, delete_records::SPEC, Response, "topics"),
    case!(delete_records::DeleteRecordsPartitionResult, delete_records::SPEC, Response, "topics.partitions"),
    case!(delete_topics::DeleteTopicsRequest, delete_topics::SPEC, Request, ""),
    case!(delete_topics::DeleteTopicState, delete_topics::SPEC, Request, "topics"),
    case!(delete_topics::DeleteTopicsResponse, delete_topics::SPEC, Response, ""),
    case!(delete_topics::DeletableTopicResult, delete_topics::SPEC, Response, "responses"),
    case!(describe_groups::DescribeGroupsRequest, describe_groups::SPEC, Request, ""),
    case!(describe_groups::DescribeGroupsResponse, describe_groups::SPEC, Response, ""),
    case!(describe_groups::DescribedGroup, describe_groups::SPEC, Response, "groups"),
    case!(describe_groups::DescribedGroupMember, describe_groups::SPEC, Response, "groups.members"),
    case!(
        describe_share_group_offsets::DescribeShareGroupOffsetsRequest,
        describe_share_group_offsets::SPEC,
        Request,
        ""
    ),
    case!(
        describe_share_group_offsets::DescribeShareGroupOffsetsRequestGroup,
        describe_share_group_offsets::SPEC,
        Request,
        "groups"
    ),
    case!(
        describe_share_group_offsets::DescribeShareGroupOffsetsRequestTopic,
        describe_share_group_offsets::SPEC,
        Request,
        "groups.topics"
    ),
    case!(
        describe_share_group_offsets::DescribeShareGroupOffsetsResponse,
        describe_share_group_offsets::SPEC,
        Response,
        ""
    ),
    case!(
        describe_share_group_offsets::DescribeShareGroupOffsetsResponseGroup,
        describe_share_group_offsets::SPEC,
        Response,
        "groups"
    ),
    case!(
        describe_share_group_offsets::DescribeShareGroupOffsetsResponseTopic,
        describe_share_group_offsets::SPEC,
        Response,
        "groups.topics"
    ),
    case!(
        describe_share_group_offsets::DescribeShareGroupOffsetsResponsePartition,
        describe_share_group_offsets::SPEC,
        Response,
        "groups.topics.partitions"
    ),
    case!(end_txn::EndTxnRequest, end_txn::SPEC, Request, ""),
    case!(end_txn::EndTxnResponse, end_txn::SPEC, Response, ""),
    case!(fetch::FetchRequest, fetch::SPEC, Request, ""),
    case!(fetch::ReplicaState, fetch::SPEC, Request, "replica_state"),
    case!(fetch::FetchTopic, fetch::SPEC, Request, "topics"),
    case!(fetch::FetchPartition, fetch::SPEC, Request, "topics.partitions"),
    case!(fetch::ForgottenTopic, fetch::SPEC, Request, "forgotten_topics_data"),
    case!(fetch::FetchResponse, fetch::SPEC, Response, ""),
    case!(fetch::FetchableTopicResponse, fetch::SPEC, Response, "responses"),
    case!(fetch::FetchPartitionResponse, fetch::SPEC, Response, "responses.partitions"),
    case!(fetch::DivergingEpoch, fetch::SPEC, Response, "responses.partitions.diverging_epoch"),
    case!(fetch::LeaderIdAndEpoch, fetch::SPEC, Response, "responses.partitions.current_leader"),
    case!(fetch::LeaderIdAndEpoch, produce::SPEC, Response, "responses.partition_responses.current_leader"),
    case!(fetch::SnapshotId, fetch::SPEC, Response, "responses.partitions.snapshot_id"),
    case!(fetch::AbortedTransaction, fetch::SPEC, Response, "responses.partitions.aborted_transactions"),
    case!(fetch::NodeEndpoint, fetch::SPEC, Response, "node_endpoints"),
    case!(fetch::NodeEndpoint, produce::SPEC, Response, "node_endpoints"),
    case!(find_coordinator::FindCoordinatorRequest, find_coordinator::SPEC, Request, ""),
    case!(find_coordinator::FindCoordinatorResponse, find_coordinator::SPEC, Response, ""),
    case!(find_coordinator::Coordinator, find_coordinator::SPEC, Response, "coordinators"),
    case!(heartbeat::HeartbeatRequest, heartbeat::SPEC, Request, ""),
    case!(heartbeat::HeartbeatResponse, heartbeat::SPEC, Response, ""),
    case!(init_producer_id::InitProducerIdRequest, init_producer_id::SPEC, Request, ""),
    case!(init_producer_id::InitProducerIdResponse, init_producer_id::SPEC, Response, ""),
    case!(join_group::JoinGroupRequest, join_group::SPEC, Request, ""),
    case!(join_group::JoinGroupRequestProtocol, join_group::SPEC, Request, "protocols"),
    case!(join_group::JoinGroupResponse, join_group::SPEC, Response, ""),
    case!(join_group::JoinGroupResponseMember, join_group::SPEC, Response, "members"),
    case!(leave_group::LeaveGroupRequest, leave_group::SPEC, Request, ""),
    case!(leave_group::LeaveGroupMemberIdentity, leave_group::SPEC, Request, "members"),
    case!(leave_group::LeaveGroupResponse, leave_group::SPEC, Response, ""),
    case!(leave_group::LeaveGroupMemberResponse, leave_group::SPEC, Response, "members"),
    case!(list_groups::ListGroupsRequest, list_groups::SPEC, Request, ""),
    case!(list_groups::ListGroupsResponse, list_groups::SPEC, Response, ""),
    case!(list_groups::ListedGroup, list_groups::SPEC, Response, "groups"),
    case!(list_offsets::ListOffsetsRequest, list_offsets::SPEC, Request, ""),
    case!(list_offsets::ListOffsetsTopic, list_offsets::SPEC, Request, "topics"),
    case!(list_offsets::ListOffsetsPartition, list_offsets::SPEC, Request, "topics.partitions"),
    case!(list_offsets::ListOffsetsResponse, list_offsets::SPEC, Response, ""),
    case!(list_offsets::ListOffsetsTopicResponse, list_offsets::SPEC, Response, "topics"),
    case!(list_offsets::ListOffsetsPartitionResponse, list_offsets::SPEC, Response, "topics.partitions"),
    case!(metadata::MetadataRequest, metadata::SPEC, Request, ""),
    case!(metadata::MetadataRequestTopic, metadata::SPEC, Request, "topics"),
    case!(metadata::MetadataResponse, metadata::SPEC, Response, ""),
    case!(metadata::MetadataBroker, metadata::SPEC, Response, "brokers"),
    case!(metadata::MetadataTopic, metadata::SPEC, Response, "topics"),
    case!(metadata::MetadataPartition, metadata::SPEC, Response, "topics.partitions"),
    case!(offset_commit::OffsetCommitRequest, offset_commit::SPEC, Request, ""),
    case!(offset_commit::OffsetCommitRequestTopic, offset_commit::SPEC, Request, "topics"),
    case!(offset_commit::OffsetCommitRequestPartition, offset_commit::SPEC, Request, "topics.partitions"),
    case!(offset_commit::OffsetCommitResponse, offset_commit::SPEC, Response, ""),
    case!(offset_commit::OffsetCommitResponseTopic, offset_commit::SPEC, Response, "topics"),
    case!(offset_commit::OffsetCommitResponsePartition, offset_commit::SPEC, Response, "topics.partitions"),
    case!(offset_delete::OffsetDeleteRequest, offset_delete::SPEC, Request, ""),
    case!(offset_delete::OffsetDeleteRequestTopic, offset_delete::SPEC, Request, "topics"),
    case!(offset_delete::OffsetDeleteRequestPartition, offset_delete::SPEC, Request, "topics.partitions"),
    case!(offset_delete::OffsetDeleteResponse, offset_delete::SPEC, Response, ""),
    case!(offset_delete::OffsetDeleteResponseTopic, offset_delete::SPEC, Response, "topics"),
    case!(offset_delete::OffsetDeleteResponsePartition, offset_delete::SPEC, Response, "topics.partitions"),
    case!(offset_fetch::OffsetFetchRequest, offset_fetch::SPEC, Request, ""),
    case!(offset_fetch::OffsetFetchRequestTopic, offset_fetch::SPEC, Request, "topics"),
    case!(offset_fetch::OffsetFetchRequestTopic, offset_fetch::SPEC, Request, "groups.topics"),
    case!(offset_fetch::OffsetFetchRequestGroup, offset_fetch::SPEC, Request, "groups"),
    case!(offset_fetch::OffsetFetchResponse, offset_fetch::SPEC, Response, ""),
    case!(offset_fetch::OffsetFetchResponseTopic, offset_fetch::SPEC, Response, "topics"),
    case!(offset_fetch::OffsetFetchResponseTopic, offset_fetch::SPEC, Response, "groups.topics"),
    case!(offset_fetch::OffsetFetchResponsePartition, offset_fetch::SPEC, Response, "topics.partitions"),
    case!(
        offset_fetch::OffsetFetchResponsePartition,
        offset_fetch::SPEC,
        Response,
        "groups.topics.partitions"
    ),
    case!(offset_fetch::OffsetFetchResponseGroup, offset_fetch::SPEC, Response, "groups"),
    case!(offset_for_leader_epoch::OffsetForLeaderEpochRequest, offset_for_leader_epoch::SPEC, Request, ""),
    case!(offset_for_leader_epoch::OffsetForLeaderTopic, offset_for_leader_epoch::SPEC, Request, "topics"),
    case!(
        offset_for_leader_epoch::OffsetForLeaderPartition,
        offset_for_leader_epoch::SPEC,
        Request,
        "topics.partitions"
    ),
    case!(offset_for_leader_epoch::OffsetForLeaderEpochResponse, offset_for_leader_epoch::SPEC, Response, ""),
    case!(
        offset_for_leader_epoch::OffsetForLeaderTopicResult,
        offset_for_leader_epoch::SPEC,
        Response,
        "topics"
    ),
    case!(
        offset_for_leader_epoch::EpochEndOffset,
        offset_for_leader_epoch::SPEC,
        Response,
        "topics.partitions"
    ),
    case!(produce::ProduceRequest, produce::SPEC, Request, ""),
    case!(produce::TopicProduceData, produce::SPEC, Request, "topic_data"),
    case!(produce::PartitionProduceData, produce::SPEC, Request, "topic_data.partition_data"),
    case!(produce::ProduceResponse, produce::SPEC, Response, ""),
    case!(produce::TopicProduceResponse, produce::SPEC, Response, "responses"),
    case!(produce::PartitionProduceResponse, produce::SPEC, Response, "responses.partition_responses"),
    case!(
        produce::BatchIndexAndErrorMessage,
        produce::SPEC,
        Response,
        "responses.partition_responses.record_errors"
    ),
    case!(sasl_authenticate::SaslAuthenticateRequest, sasl_authenticate::SPEC, Request, ""),
    case!(sasl_authenticate::SaslAuthenticateResponse, sasl_authenticate::SPEC, Response, ""),
    case!(sasl_handshake::SaslHandshakeRequest, sasl_handshake::SPEC, Request, ""),
    case!(sasl_handshake::SaslHandshakeResponse, sasl_handshake::SPEC, Response, ""),
    case!(share_group_describe::ShareGroupDescribeRequest, share_group_describe::SPEC, Request, ""),
    case!(share_group_describe::ShareGroupDescribeResponse, share_group_describe::SPEC, Response, ""),
    case!(share_group_describe::ShareDescribedGroup, share_group_describe::SPEC, Response, "groups"),
    case!(share_group_describe::ShareGroupMember, share_group_describe::SPEC, Response, "groups.members"),
    case!(sync_group::SyncGroupRequest, sync_group::SPEC, Request, ""),
    case!(sync_group::SyncGroupRequestAssignment, sync_group::SPEC, Request, "assignments"),
    case!(sync_group::SyncGroupResponse, sync_group::SPEC, Response, ""),
    case!(txn_offset_commit::TxnOffsetCommitRequest, txn_offset_commit::SPEC, Request, ""),
    case!(txn_offset_commit::TxnOffsetCommitRequestTopic, txn_offset_commit::SPEC, Request, "topics"),
    case!(
        txn_offset_commit::TxnOffsetCommitRequestPartition,
        txn_offset_commit::SPEC,
        Request,
        "topics.partitions"
    ),
    case!(txn_offset_commit::TxnOffsetCommitResponse, txn_offset_commit::SPEC, Response, ""),
    case!(txn_offset_commit::TxnOffsetCommitResponseTopic, txn_offset_commit::SPEC, Response, "topics"),
    case!(
        txn_offset_commit::TxnOffsetCommitResponsePartition,
        txn_offset_commit::SPEC,
        Response,
        "topics.partitions"
    ),
];

/// The fields directly inside `path` of `message` at `version` (`None`: the path does not exist
/// at that version).
fn fields_at(top: &'static [Field], path: &str, version: i16) -> Option<Vec<&'static Field>> {
    let mut fields = top;
    if !path.is_empty() {
        for segment in path.split('.') {
            let f = fields.iter().find(|f| f.name == segment && f.versions.contains(version))?;
            fields = match f.ty {
                FieldType::Struct(inner) | FieldType::Array(&FieldType::Struct(inner)) => inner,
                _ => return None,
            };
        }
    }
    Some(fields.iter().filter(|f| f.versions.contains(version)).collect())
}

/// A first and last version, inclusive.
type Span = (i16, i16);

/// For one case: the versions the struct exists in, and each schema field's first and last
/// version within them.
fn schema_fields(case: &Case) -> (Option<Span>, BTreeMap<&'static str, Span>) {
    let mut range: Option<Span> = None;
    let mut out = BTreeMap::<&'static str, Span>::new();
    for v in case.spec.versions.min..=case.spec.versions.max {
        let message = schema::find(case.spec.key, case.kind, v)
            .unwrap_or_else(|| panic!("{}: no schema at v{v}", case.spec.name));
        let Some(fields) = fields_at(message.fields, case.path, v) else { continue };
        range = Some(range.map_or((v, v), |(lo, _)| (lo, v)));
        for f in fields {
            let e = out.entry(f.name).or_insert((v, v));
            e.1 = v;
        }
    }
    (range, out)
}

/// What is wrong with one case, one line per problem.
fn problems(case: &Case) -> Vec<String> {
    let at = format!("{} at {} {:?} `{}`", case.name, case.spec.name, case.kind, case.path);
    let (range, schema) = schema_fields(case);
    let Some((first, last)) = range else {
        return vec![format!("{at}: no such place in the schema at v{:?}", case.spec.versions)];
    };
    let mut out = Vec::new();
    for field in case.fields {
        let Some(&(s_first, s_last)) = schema.get(field.name) else {
            out.push(format!("{at}: `{}` is not a schema field", field.name));
            continue;
        };
        let since = field.since.unwrap_or(first).clamp(first, last);
        let until = field.until.unwrap_or(last).clamp(first, last);
        if (since, until) != (s_first, s_last) {
            out.push(format!(
                "{at}: `{}` is declared for v{since}–v{until}, the schema has it in v{s_first}–v{s_last}",
                field.name
            ));
        }
    }
    let short = case.name.rsplit("::").next().unwrap_or(case.name);
    for (name, (s_first, s_last)) in &schema {
        let declared = case.fields.iter().any(|f| f.name == *name);
        let excused = NOT_MODELLED.iter().any(|(s, f, _)| *s == short && f == name);
        if !declared && !excused {
            out.push(format!("{at}: schema field `{name}` (v{s_first}–v{s_last}) is not declared"));
        }
    }
    out
}

#[test]
fn every_field_list_agrees_with_the_schema_table() {
    let all: Vec<String> = CASES.iter().flat_map(problems).collect();
    assert!(all.is_empty(), "{} problems:\n{}", all.len(), all.join("\n"));
}

#[test]
fn every_not_modelled_entry_names_a_case_and_a_schema_field() {
    for (s, f, why) in NOT_MODELLED {
        assert!(!why.is_empty());
        let cases: Vec<&Case> = CASES.iter().filter(|c| c.name.rsplit("::").next() == Some(*s)).collect();
        assert!(!cases.is_empty(), "NOT_MODELLED names {s}, which no case checks");
        assert!(
            cases.iter().any(|c| schema_fields(c).1.contains_key(f)),
            "NOT_MODELLED: {s} has no schema field {f}"
        );
        assert!(cases.iter().all(|c| c.fields.iter().all(|d| d.name != *f)), "{s}.{f} is declared");
    }
}

#[test]
fn a_wrong_since_is_caught() {
    const WRONG: &[MessageField] = &[
        MessageField { name: "group_id", since: None, until: None },
        MessageField { name: "generation_id", since: None, until: None },
        MessageField { name: "member_id", since: None, until: None },
        // Kafka added it in v3.
        MessageField { name: "group_instance_id", since: Some(2), until: None },
    ];
    let case = Case { fields: WRONG, ..case!(heartbeat::HeartbeatRequest, heartbeat::SPEC, Request, "") };
    assert_eq!(
        problems(&case),
        ["heartbeat::HeartbeatRequest at Heartbeat Request ``: `group_instance_id` is declared for v2–v4, \
          the schema has it in v3–v4"]
    );
}
