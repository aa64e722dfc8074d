//! One file per API, each holding its request and response and declaring its [`ApiSpec`]
//! (`SPEC`) once.
//!
//! Conventions shared by every file: a field a version lacks is `None` (documented "Added in
//! vN" or "vA–vB only"); a present field left `None` is written as Kafka's default for it. A
//! nullable field that is also version-gated is a single `Option` (`None` = null or absent).
//! Every struct of an API with flexible versions ends with `tagged_fields`, which keeps unknown
//! tagged fields raw; tagged fields kwire models are typed fields, taken out of and put back
//! into that set.
//!
//! The structs are declared through `kafka_message!` (`protocol/message_macro.rs`): a doc, a
//! name and a field list with each field's version gate; it writes the derives, the JSON
//! attributes and `tagged_fields`. Decoders and encoders are written by hand.
//!
//! [`ApiSpec`]: crate::protocol::ApiSpec

pub mod add_offsets_to_txn;
pub mod add_partitions_to_txn;
pub mod api_versions;
pub mod consumer_group_describe;
pub mod consumer_group_heartbeat;
pub mod create_partitions;
pub mod create_topics;
pub mod delete_records;
pub mod delete_topics;
pub mod describe_groups;
pub mod describe_share_group_offsets;
pub mod end_txn;
pub mod fetch;
pub mod find_coordinator;
pub mod heartbeat;
pub mod init_producer_id;
pub mod join_group;
pub mod leave_group;
pub mod list_groups;
pub mod list_offsets;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod offset_for_leader_epoch;
pub mod produce;
pub mod sasl_authenticate;
pub mod sasl_handshake;
pub mod share_group_describe;
pub mod sync_group;
pub mod txn_offset_commit;

#[cfg(test)]
mod field_lists;
#[cfg(test)]
mod kafka_fixtures;
#[cfg(test)]
mod test_util;

pub use add_offsets_to_txn::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse};
pub use add_partitions_to_txn::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnRequest, AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopic, AddPartitionsToTxnTopicResult,
};
pub use api_versions::{ApiVersionRange, ApiVersionsRequest, ApiVersionsResponse, FinalizedFeature};
pub use consumer_group_describe::{
    AssignedTopicPartitions, ConsumerDescribedGroup, ConsumerGroupAssignment, ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse, ConsumerGroupMember,
};
pub use consumer_group_heartbeat::{
    ConsumerGroupHeartbeatAssignment, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatTopicPartitions,
};
pub use create_partitions::{
    CreatePartitionsAssignment, CreatePartitionsRequest, CreatePartitionsResponse, CreatePartitionsTopic,
    CreatePartitionsTopicResult,
};
pub use create_topics::{
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig, CreatableTopicConfigs,
    CreatableTopicResult, CreateTopicsRequest, CreateTopicsResponse,
};
pub use delete_records::{
    DeleteRecordsPartition, DeleteRecordsPartitionResult, DeleteRecordsRequest, DeleteRecordsResponse,
    DeleteRecordsTopic, DeleteRecordsTopicResult,
};
pub use delete_topics::{DeletableTopicResult, DeleteTopicState, DeleteTopicsRequest, DeleteTopicsResponse};
pub use describe_groups::{
    DescribeGroupsRequest, DescribeGroupsResponse, DescribedGroup, DescribedGroupMember,
};
pub use describe_share_group_offsets::{
    DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsRequestTopic, DescribeShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsResponseGroup, DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
};
pub use end_txn::{EndTxnRequest, EndTxnResponse};
pub use fetch::{
    FetchPartition, FetchPartitionResponse, FetchRequest, FetchResponse, FetchTopic, FetchableTopicResponse,
    ForgottenTopic, LeaderIdAndEpoch, NodeEndpoint,
};
pub use find_coordinator::{Coordinator, FindCoordinatorRequest, FindCoordinatorResponse};
pub use heartbeat::{HeartbeatRequest, HeartbeatResponse};
pub use init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
pub use join_group::{
    JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse, JoinGroupResponseMember,
};
pub use leave_group::{
    LeaveGroupMemberIdentity, LeaveGroupMemberResponse, LeaveGroupRequest, LeaveGroupResponse,
};
pub use list_groups::{ListGroupsRequest, ListGroupsResponse, ListedGroup};
pub use list_offsets::{
    ListOffsetsPartition, ListOffsetsPartitionResponse, ListOffsetsRequest, ListOffsetsResponse,
    ListOffsetsTopic, ListOffsetsTopicResponse, SpecialTimestamp,
};
pub use metadata::{
    MetadataBroker, MetadataPartition, MetadataRequest, MetadataRequestTopic, MetadataResponse, MetadataTopic,
};
pub use offset_commit::{
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic, OffsetCommitResponse,
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
pub use offset_delete::{
    OffsetDeleteRequest, OffsetDeleteRequestPartition, OffsetDeleteRequestTopic, OffsetDeleteResponse,
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
pub use offset_fetch::{
    OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchResponse,
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponseTopic,
};
pub use offset_for_leader_epoch::{
    EpochEndOffset, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, OffsetForLeaderPartition,
    OffsetForLeaderTopic, OffsetForLeaderTopicResult,
};
pub use produce::{
    PartitionProduceData, PartitionProduceResponse, ProduceRequest, ProduceResponse, TopicProduceData,
    TopicProduceResponse,
};
pub use sasl_authenticate::{SaslAuthenticateRequest, SaslAuthenticateResponse};
pub use sasl_handshake::{SaslHandshakeRequest, SaslHandshakeResponse};
pub use share_group_describe::{
    ShareDescribedGroup, ShareGroupDescribeRequest, ShareGroupDescribeResponse, ShareGroupMember,
};
pub use sync_group::{SyncGroupRequest, SyncGroupRequestAssignment, SyncGroupResponse};
pub use txn_offset_commit::{
    TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
