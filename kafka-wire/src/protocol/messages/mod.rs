//! One file per API, each holding its request and response and declaring its [`ApiSpec`]
//! (`SPEC`) once.
//!
//! [`ApiSpec`]: crate::protocol::api::ApiSpec

pub mod api_versions;
pub mod metadata;

pub use api_versions::{ApiVersionRange, ApiVersionsRequest, ApiVersionsResponse};
pub use metadata::{
    MetadataBroker, MetadataPartition, MetadataRequest, MetadataRequestTopic, MetadataResponse, MetadataTopic,
};
