//! The interface every offset store implements, and nothing else: [`OffsetStore`], its
//! [`StoreError`], the [`StoredOffset`] it loads and saves, the batch checks every store runs
//! ([`validate_batch`]) and the one way a store is named in text ([`StoreSpec`]).
//!
//! Like ripgrep's `grep-matcher`, it depends on no implementation and no client: the Kafka
//! group store, the JSON file store and the ZooKeeper store are in `kwire-stores`, and a
//! program written against this trait can take any of them, or its own. Its only dependency is
//! `kafka-wire` without default features (the sans-IO codec), for the topic-id type and
//! Kafka's naming rules.

mod batch;
mod error;
mod offset_store;
mod spec;
mod stored;

pub use batch::validate_batch;
pub use error::{RefusedPartition, StoreError};
pub use offset_store::{BoxError, OffsetStore, StoreFuture};
pub use spec::StoreSpec;
pub use stored::StoredOffset;
