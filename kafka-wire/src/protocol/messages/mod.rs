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
//! [`ApiSpec`]: crate::protocol::api::ApiSpec

pub mod api_versions;
pub mod find_coordinator;
pub mod list_offsets;
pub mod metadata;
pub mod offset_commit;
pub mod offset_fetch;

#[cfg(test)]
mod test_util;

pub use api_versions::{ApiVersionRange, ApiVersionsRequest, ApiVersionsResponse};
pub use find_coordinator::{Coordinator, FindCoordinatorRequest, FindCoordinatorResponse};
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
pub use offset_fetch::{
    OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchResponse,
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponseTopic,
};
