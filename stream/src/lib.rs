#![warn(missing_docs)]
#![doc = include_str!("../README.md")]

pub mod batch;
pub mod config;
pub mod driver;
pub mod error;
pub mod exactly_once;
pub mod member;
pub mod memory_budget;
mod read_ahead;

pub use batch::{Action, Batch, Event, OffsetRange, PartitionBatch, Resume};
pub use config::{MemoryBudget, ProcessingBudget, Requery, StreamConfig};
pub use driver::{CommitReport, Control, DirectStream};
pub use error::StreamError;

// The vocabulary an embedding application needs, so it can depend on this crate alone.
pub use kafka_client::{
    Client, ClientConfig, ConsumerConfig, FetchedRecord, GroupProtocol, NotOwnedReason, ProduceRecord,
    Producer, ProducerConfig, TransactionError,
};
pub use kwire_stores::{open as open_store, FileStore, KafkaGroupStore, OpenOptions, ZkStore};
pub use offset_engine::{Anomaly, AnomalyKind, Isolation, Limits, OutOfRangePolicy, StartPolicy};
pub use offset_store::{OffsetStore, StoreError, StoreSpec, StoredOffset};
