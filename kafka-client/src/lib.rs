#![warn(missing_docs)]

//! kafka-client: a tokio Kafka client over the [`kafka_wire`] codec: pipelined connections,
//! per-broker version negotiation, a metadata cache, and calls routed to the right broker.
//!
//! Features: `compression` (every codec, default; or one of `gzip`, `snappy`, `lz4`, `zstd`,
//! each forwarded to kafka-wire), `tls` (rustls with ring) and `pkcs12` (PKCS#12 stores for
//! TLS). SASL (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER) is always built.
//!
//! Everything a caller needs is re-exported here; the modules behind it are private. Start with
//! [`ClientConfig`] and [`Client::connect`]. Offsets are Kafka's: a range `[from, until)` includes
//! `from` and excludes `until`, and a partition's high watermark is the offset one past its last
//! committed record. Times are milliseconds since the Unix epoch unless a type says otherwise.

mod accumulator;
mod address;
mod admin;
#[cfg(feature = "tls")]
mod certificate_names;
mod cluster;
mod committed_offsets;
mod connection;
mod coordinator;
mod deadline;
mod deliveries;
mod error;
mod fetch;
mod fetch_session;
mod fetcher;
mod group_describe;
mod group_members;
mod groups;
mod kafka_release;
mod metadata;
mod negotiate;
mod oauth_token;
mod offsets;
mod partitioner;
#[cfg(feature = "pkcs12")]
mod pkcs12;
mod produce;
mod producer;
mod producer_keys;
mod producer_properties;
mod properties;
mod read_replica;
mod retry;
mod router;
mod sasl;
mod scram;
mod security;
mod sender;
mod share_groups;
mod sync;
#[cfg(feature = "tls")]
mod tls;
#[cfg(feature = "tls")]
mod tls_files;
mod trace;
mod transaction;
mod transaction_error;
mod transaction_version;
mod transport;

pub use admin::{CreatedTopic, EpochEnd, NewTopic, TopicResults};
pub use cluster::{Client, ClientConfig};
pub use committed_offsets::{CommittedOffset, CommittedOffsets};
pub use deliveries::{Deliveries, DeliveryFuture, RecordMetadata};
pub use error::{BrokerRef, ClientError, TransactionError};
pub use fetch::{FetchOptions, FetchRange, FetchedPartition, FetchedRecord};
pub use fetcher::{FetchedChunk, Fetcher};
pub use groups::{
    ConsumerGroupEpochs, ConsumerMemberState, GroupDescription, GroupListing, GroupMember, GroupType,
    OffsetToCommit,
};
pub use kafka_vocab::Isolation;
pub use metadata::{AuthorizedOperations, BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo};
pub use negotiate::BrokerVersions;
pub use offsets::{ListedOffset, LogBounds, LogRange, OffsetQuery};
pub use partitioner::partition_for_key;
pub use produce::{Acks, AsRecordRef, ProduceOptions, ProduceRecord, Produced, ProducedByKey, RecordRef};
pub use producer::{Producer, ProducerConfig};
pub use producer_properties::apply_producer_properties;
pub use properties::{apply_properties, is_secret_key, ConfigError, ConfigWarning};
pub use router::{LeaderAnswer, LeaderBatch, LeaderTarget, PartitionResults, TopicPartition};
pub use security::{SaslConfig, SaslMechanism, Secret, SecurityProtocol, TlsConfig, TokenSource};
pub use share_groups::ShareStartOffset;
pub use trace::{Direction, TraceEvent, TraceHook};
