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
//!
//! # What a `Client` can do
//!
//! Its methods live beside the concern they serve (`admin.rs`, `fetch/`, `groups/`, ...); this
//! is their index, one line per method (`tests/client_index.rs` fails when a public method is
//! missing here or a listed one is gone). The long-lived handles are types of their own:
//! [`Producer`], [`Consumer`], [`Fetcher`], [`GroupMembership`].
//!
//! | concern | methods |
//! |---|---|
//! | connect, the cluster | [`Client::connect`], [`Client::config`], [`Client::cached_metadata`], [`Client::refresh_metadata`], [`Client::refresh_metadata_awaiting_topics`], [`Client::topic_authorized_operations`], [`Client::broker_versions`] |
//! | read | [`Client::fetch_range`], [`Client::list_offsets`], [`Client::list_offsets_on`], [`Client::log_ranges`], [`Client::log_bounds`], [`Client::offset_for_leader_epoch`] |
//! | write | [`Client::produce`], [`Client::produce_batches`], [`Client::produce_by_key`] |
//! | group offsets | [`Client::committed_offsets`], [`Client::committed_offsets_of_partitions`], [`Client::committed_offsets_of_groups`], [`Client::commit_offsets`], [`Client::commit_offsets_as`] |
//! | groups | [`Client::list_groups`], [`Client::describe_group`], [`Client::describe_consumer_group`], [`Client::member_counts`], [`Client::describe_share_group`], [`Client::share_group_start_offsets`] |
//! | coordinators | [`Client::coordinator`], [`Client::find_coordinators`], [`Client::with_coordinator`], [`Client::forget_coordinator`] |
//! | topics and records | [`Client::create_topics`], [`Client::delete_topics`], [`Client::create_partitions`], [`Client::delete_records`] |
//! | any request | [`Client::send`], [`Client::send_built`], [`Client::send_built_without_response`], [`Client::send_any`], [`Client::send_any_built`], [`Client::route_by_leader`] |
//! | counters | [`Client::throttle_waited_ms`], [`Client::connections_opened`], [`Client::requests_sent_to`], [`Client::reauthentications`], [`Client::reauthentications_abandoned`] |

// Folders by concern, each below the ones that import it (tests/import_circles.rs checks that
// no file imports from a file that imports from it again); the shared files stay at the top.
mod admin;
mod cluster;
mod config;
mod consumer;
mod deadline;
mod error;
mod fetch;
#[doc(hidden)]
pub mod fuzzing;
mod groups;
mod kafka_release;
mod net;
mod producer;
mod security;
mod sync;

pub use admin::{CreatedTopic, EpochEnd, NewTopic, TopicResults};
pub use cluster::client::Client;
pub use cluster::client_config::ClientConfig;
pub use cluster::metadata::{AuthorizedOperations, BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo};
pub use cluster::router::{LeaderAnswer, LeaderBatch, LeaderTarget, PartitionResults, TopicPartition};
pub use config::consumer_properties::apply_consumer_properties;
pub use config::producer_properties::apply_producer_properties;
pub use config::properties::{apply_properties, is_secret_key, ConfigError, ConfigWarning};
pub use consumer::config::{ConsumerConfig, GroupProtocol, Subscription};
pub use consumer::consumer::{Consumer, RecordChunk};
pub use consumer::error::{ConsumerError, NotOwnedReason};
pub use consumer::group_membership::{GroupMembership, MembershipChange};
pub use consumer::listener::{RebalanceListener, RevokeCommits};
pub use consumer::membership::GroupMemberState;
pub use consumer::start_positions::{StartPosition, StartRefusal};
pub use error::{BrokerRef, ClientError, TransactionError};
pub use fetch::fetched::{FetchedPartition, FetchedRecord};
pub use fetch::fetcher::{FetchedChunk, Fetcher};
pub use fetch::offsets::{ListedOffset, LogBounds, LogRange, OffsetQuery};
pub use fetch::ranges::{FetchOptions, FetchRange};
pub use groups::commit_metadata::{topic_id_from_metadata, topic_id_metadata, TOPIC_ID_METADATA_PREFIX};
pub use groups::committed_offsets::{CommittedOffset, CommittedOffsets};
pub use groups::description::{
    ConsumerGroupEpochs, ConsumerMemberState, GroupDescription, GroupMember, GroupType,
};
pub use groups::group_metadata::ConsumerGroupMetadata;
pub use groups::member::model::{CloseMode, MemberPhase};
pub use groups::non_member::{GroupListing, OffsetToCommit};
pub use groups::share_groups::ShareStartOffset;
pub use kafka_vocab::Isolation;
pub use net::negotiate::BrokerVersions;
pub use net::trace::{Direction, TraceEvent, TraceHook};
pub use producer::config::ProducerConfig;
pub use producer::deliveries::{Deliveries, DeliveryFuture, RecordMetadata};
pub use producer::handle::Producer;
pub use producer::partitioner::partition_for_key;
pub use producer::produce::{
    Acks, AsRecordRef, ProduceOptions, ProduceRecord, Produced, ProducedByKey, RecordRef,
};
pub use security::settings::{SaslConfig, SaslMechanism, Secret, SecurityProtocol, TlsConfig, TokenSource};
