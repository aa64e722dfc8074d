//! One interface over the places a group's offsets live, so a driver (the direct stream in
//! `kwire-stream`) loads and saves them without knowing which store it talks to.
//!
//! Implementations live in `kwire-stores`: the Kafka group store, kwire's JSON file, and
//! ZooKeeper's Kafka 0.8 layout. This crate names none of them.
//!
//! The methods return boxed futures so the trait is object safe: a program can pick its store
//! at run time (`Box<dyn OffsetStore>` / `Arc<dyn OffsetStore>`).

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::{StoreError, StoredOffset};

/// What every store method returns.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// A boxed error from a store implementation outside this crate.
pub type BoxError = Box<dyn Error + Send + Sync + 'static>;

/// Where a group's committed offsets are kept.
///
/// Offsets follow Kafka's convention: the next offset to read. A store keeps the topic id and
/// leader epoch with each offset when it can, so a recreated topic or a truncated log is
/// recognised when the offsets are loaded again.
pub trait OffsetStore: Send + Sync + fmt::Debug {
    /// A short name for messages: `kafka`, `file`, `zookeeper`.
    fn kind(&self) -> &'static str;

    /// The stored offsets of `group` for `topics` (every topic the group has offsets for when
    /// `None`). A partition with nothing stored is absent; a group with nothing stored gives an
    /// empty list, not an error. Damaged data is an error, never "nothing stored". A store that
    /// answers per partition (Kafka's) and refuses some fails with [`StoreError::PartlyRead`],
    /// which carries the partitions it did answer: a refused partition is never left out
    /// silently.
    fn load<'a>(&'a self, group: &'a str, topics: Option<&'a [String]>)
        -> StoreFuture<'a, Vec<StoredOffset>>;

    /// Stores `offsets` (at most one per partition) for `group`. Partitions not named keep what
    /// they have. The file and ZooKeeper stores write the whole set atomically; the Kafka store
    /// commits it in one OffsetCommit request, which the coordinator answers per partition:
    /// [`StoreError::CommitRefused`] (the first refused) when it took none,
    /// [`StoreError::PartlyWritten`] (each taken and each refused) when it took some. Monotonicity is the caller's decision (the engine's `merge_commit`): a store
    /// writes what it is given.
    fn save<'a>(&'a self, group: &'a str, offsets: &'a [StoredOffset]) -> StoreFuture<'a, ()>;
}

impl<S: OffsetStore + ?Sized> OffsetStore for Arc<S> {
    fn kind(&self) -> &'static str {
        (**self).kind()
    }

    fn load<'a>(
        &'a self,
        group: &'a str,
        topics: Option<&'a [String]>,
    ) -> StoreFuture<'a, Vec<StoredOffset>> {
        (**self).load(group, topics)
    }

    fn save<'a>(&'a self, group: &'a str, offsets: &'a [StoredOffset]) -> StoreFuture<'a, ()> {
        (**self).save(group, offsets)
    }
}

impl<S: OffsetStore + ?Sized> OffsetStore for Box<S> {
    fn kind(&self) -> &'static str {
        (**self).kind()
    }

    fn load<'a>(
        &'a self,
        group: &'a str,
        topics: Option<&'a [String]>,
    ) -> StoreFuture<'a, Vec<StoredOffset>> {
        (**self).load(group, topics)
    }

    fn save<'a>(&'a self, group: &'a str, offsets: &'a [StoredOffset]) -> StoreFuture<'a, ()> {
        (**self).save(group, offsets)
    }
}
