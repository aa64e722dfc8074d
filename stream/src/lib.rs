#![doc = include_str!("../README.md")]

pub mod batch;
pub mod config;
pub mod driver;
pub mod error;
pub mod spec;
pub mod zk;

pub use batch::{Action, Batch, Event, OffsetRange, PartitionBatch, Resume};
pub use config::{ProcessingBudget, Requery, StreamConfig};
pub use driver::{CommitReport, Control, DirectStream};
pub use error::StreamError;
pub use spec::StoreSpec;
pub use zk::ZkStore;

// The vocabulary an embedding application needs, so it can depend on this crate alone.
pub use kafka_wire::client::{Client, ClientConfig, FetchedRecord};
pub use kafka_wire::store::file::FileStore;
pub use kafka_wire::store::{KafkaGroupStore, OffsetStore, StoreError, StoredOffset};
pub use offset_engine::{Anomaly, AnomalyKind, Isolation, Limits, OutOfRangePolicy, StartPolicy};
