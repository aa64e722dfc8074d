//! The tokio client: pipelined connections, per-broker version negotiation, a metadata cache,
//! and calls routed to the right broker.

pub mod address;
pub mod admin;
pub mod cluster;
pub mod connection;
pub mod coordinator;
pub mod deadline;
pub mod error;
pub mod fetch;
pub mod groups;
pub mod kafka_release;
pub mod metadata;
pub mod negotiate;
pub mod offsets;
pub mod partitioner;
pub mod produce;
pub mod retry;
pub mod router;
mod sync;
pub mod trace;

pub use admin::{CreatedTopic, EpochEnd, NewTopic, TopicResults};
pub use cluster::{Client, ClientConfig};
pub use error::{BrokerRef, ClientError};
pub use fetch::{FetchOptions, FetchRange, FetchedPartition, FetchedRecord};
pub use groups::{CommittedOffset, GroupDescription, GroupListing, GroupMember, OffsetToCommit};
pub use metadata::{BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo};
pub use negotiate::BrokerVersions;
pub use offsets::{Isolation, ListedOffset, LogRange, OffsetQuery};
pub use produce::{Acks, ProduceOptions, ProduceRecord, Produced, ProducedByKey};
pub use router::{LeaderAnswer, LeaderBatch, LeaderTarget, PartitionResults, TopicPartition};
pub use trace::{Direction, TraceEvent, TraceHook};
