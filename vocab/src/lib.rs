//! The few Kafka terms every kwire crate shares, defined once and without dependencies.
//!
//! `kafka-wire` (the codec), `kafka-client` (the tokio client), `offset-engine` (pure offset arithmetic),
//! `offset-store` (the store interface) and `kwire-zk` (the ZooKeeper layout) all speak of
//! topic-partitions, isolation levels, topic ids and stored offsets. Each of those is declared
//! here and re-exported where its users already look for it, so there is exactly one of each
//! and nothing to convert between.
//!
//! ```
//! use kafka_vocab::{Isolation, StoredOffset, TopicPartition, Uuid};
//!
//! let tp = TopicPartition::new("orders", 3);
//! assert_eq!(tp.to_string(), "orders-3");
//! assert_eq!("read_committed".parse::<Isolation>(), Ok(Isolation::ReadCommitted));
//! let id = Uuid::parse("AAAAAAAAAAAAAAAAAAAAAQ").unwrap();
//! assert_eq!(id.to_string(), "AAAAAAAAAAAAAAAAAAAAAQ");
//! let stored = StoredOffset::new("orders", 3, 42);
//! assert_eq!(stored.topic_partition(), tp);
//! ```
#![warn(missing_docs)]

mod clock;
mod isolation;
mod redact;
mod stored_offset;
mod topic_partition;
mod uuid;

pub use clock::{now_ms, now_ns};
pub use isolation::{Isolation, IsolationParseError};
pub use redact::redact_credentials;
pub use stored_offset::StoredOffset;
pub use topic_partition::{IntoTopicName, TopicPartition};
pub use uuid::{Uuid, UuidParseError};
