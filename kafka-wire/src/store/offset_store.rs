//! One interface over the places a group's offsets live, so a driver (the direct stream in
//! `kwire-stream`) loads and saves them without knowing which store it talks to.
//!
//! Implementations: the Kafka group store ([`super::kafka::KafkaGroupStore`]), kwire's JSON
//! file ([`super::file::FileStore`], below), and ZooKeeper's Kafka 0.8 layout (`ZkStore` in
//! `kwire-stream`, over `kwire-zk`; it lives there so `kwire-zk` stays free of the Kafka client).
//!
//! The methods return boxed futures so the trait is object safe: a program can pick its store
//! at run time (`Box<dyn OffsetStore>` / `Arc<dyn OffsetStore>`).

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::file::{FileStore, FileStoreError};
use super::StoredOffset;
use crate::client::ClientError;
use crate::protocol::names::validate_topic;

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
    /// empty list, not an error. Damaged data is an error, never "nothing stored".
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

/// One partition of a batch that a store refused, and why.
#[derive(Debug)]
pub struct RefusedPartition {
    pub topic: String,
    pub partition: i32,
    pub reason: BoxError,
}

/// Why a store could not load or save.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// Talking to the Kafka cluster failed (coordinator lookup, OffsetFetch, DescribeGroups).
    Kafka(ClientError),
    /// The group coordinator refused the commit of this partition; nothing of the batch was
    /// written.
    CommitRefused { topic: String, partition: i32, source: ClientError },
    /// The store took some partitions of the batch and refused the others (a store that is not
    /// atomic, such as Kafka's: the coordinator answers per partition). What is in `written`
    /// stays written; load again before the next save.
    PartlyWritten { store: &'static str, written: Vec<(String, i32)>, refused: Vec<RefusedPartition> },
    /// The group has active members: a non-member commit would fight their commits (the rule
    /// kafka-consumer-groups applies). Stop the consumers, or build the store with `force`.
    GroupActive { group: String, state: String, members: usize },
    /// The file store failed (IO, a corrupt or foreign file).
    File(FileStoreError),
    /// Another writer changed this partition's stored offset since this store last read it;
    /// nothing of the batch was written. Load again to see the other writer's value.
    ConcurrentModification { store: &'static str, topic: String, partition: i32, detail: String },
    /// The store could not be reached within its time budget. `outcome_unknown`: a write may or
    /// may not have been applied (load again to find out).
    Unavailable { store: &'static str, outcome_unknown: bool, source: BoxError },
    /// After writing, the store holds something else than what was written.
    ReadBackMismatch { store: &'static str, topic: String, partition: i32, wrote: i64, read: Option<i64> },
    /// The stored data is damaged (an offset that is not a number, a malformed side node).
    Corrupt { store: &'static str, source: BoxError },
    /// The request cannot be stored (a bad group or topic name, a negative offset, a partition
    /// given twice).
    Invalid { store: &'static str, message: String },
    /// Any other failure of a store implementation.
    Other { store: &'static str, source: BoxError },
}

impl StoreError {
    /// Whether trying again later can help without anyone changing anything.
    pub fn is_retriable(&self) -> bool {
        match self {
            Self::Kafka(e) | Self::CommitRefused { source: e, .. } => e.is_retriable(),
            Self::Unavailable { .. }
            | Self::File(
                FileStoreError::Io { .. }
                | FileStoreError::LockIo { .. }
                | FileStoreError::Locked { .. }
                | FileStoreError::TimedOut { .. },
            ) => true,
            _ => false,
        }
    }

    /// Whether what is stored is uncertain after this error, so the caller should load again
    /// before its next save.
    pub fn needs_reload(&self) -> bool {
        matches!(
            self,
            Self::ConcurrentModification { .. }
                | Self::Unavailable { outcome_unknown: true, .. }
                | Self::ReadBackMismatch { .. }
                | Self::File(FileStoreError::ReadBackMismatch { .. })
                | Self::CommitRefused { .. }
                | Self::PartlyWritten { .. }
        )
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Kafka(e) => write!(f, "kafka offset store: {e}"),
            Self::CommitRefused { topic, partition, source } => {
                write!(f, "kafka offset store: commit of {topic}:{partition} refused: {source}")
            }
            Self::PartlyWritten { store, written, refused } => {
                write!(f, "{store} offset store: partly written: {} partition(s) written, refused: ", written.len())?;
                for (i, r) in refused.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{}:{} ({})", r.topic, r.partition, r.reason)?;
                }
                Ok(())
            }
            Self::GroupActive { group, state, members } => write!(
                f,
                "group `{group}` has {members} active member(s) (state {state}): offsets can only be \
                 written while it is inactive; stop its consumers or force the write"
            ),
            Self::File(e) => write!(f, "file offset store: {e}"),
            Self::ConcurrentModification { store, topic, partition, detail } => write!(
                f,
                "{store} offset store: {topic}:{partition} was changed by another writer; nothing \
                 was written ({detail})"
            ),
            Self::Unavailable { store, outcome_unknown, source } => {
                write!(f, "{store} offset store unavailable: {source}")?;
                if *outcome_unknown {
                    f.write_str(" (the last write may or may not have been applied)")?;
                }
                Ok(())
            }
            Self::ReadBackMismatch { store, topic, partition, wrote, read } => match read {
                Some(read) => write!(
                    f,
                    "{store} offset store: read-back mismatch for {topic}:{partition}: wrote {wrote}, read {read}"
                ),
                None => write!(
                    f,
                    "{store} offset store: read-back mismatch for {topic}:{partition}: wrote {wrote}, read nothing"
                ),
            },
            Self::Corrupt { store, source } => write!(f, "{store} offset store holds damaged data: {source}"),
            Self::Invalid { store, message } => write!(f, "{store} offset store: {message}"),
            Self::Other { store, source } => write!(f, "{store} offset store: {source}"),
        }
    }
}

impl Error for StoreError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::Kafka(e) | Self::CommitRefused { source: e, .. } => Some(e),
            Self::File(e) => Some(e),
            Self::Unavailable { source, .. } | Self::Corrupt { source, .. } | Self::Other { source, .. } => {
                Some(source.as_ref())
            }
            _ => None,
        }
    }
}

impl From<ClientError> for StoreError {
    fn from(e: ClientError) -> Self {
        Self::Kafka(e)
    }
}

impl From<FileStoreError> for StoreError {
    fn from(e: FileStoreError) -> Self {
        Self::File(e)
    }
}

/// Checks a batch before any store writes it: offsets and partitions `>= 0`, topic names
/// Kafka can take, each partition once. Stores call it so a bad batch is the same error
/// everywhere.
pub fn validate_batch(store: &'static str, offsets: &[StoredOffset]) -> Result<(), StoreError> {
    let mut seen = std::collections::HashSet::new();
    for o in offsets {
        let invalid = |message: String| StoreError::Invalid { store, message };
        if o.topic.is_empty() {
            return Err(invalid(format!("empty topic name for partition {}", o.partition)));
        }
        if let Err(e) = validate_topic(&o.topic) {
            return Err(invalid(e.to_string()));
        }
        if o.partition < 0 {
            return Err(invalid(format!("{}:{} has a negative partition", o.topic, o.partition)));
        }
        if o.offset < 0 {
            return Err(invalid(format!("{}:{} offset {} is negative", o.topic, o.partition, o.offset)));
        }
        if !seen.insert((o.topic.as_str(), o.partition)) {
            return Err(invalid(format!("{}:{} is given twice", o.topic, o.partition)));
        }
    }
    Ok(())
}

/// The file store: the file is read and replaced on a blocking thread (it fsyncs twice). A
/// save is [`FileStore::merge`]: under the writers' lock, and read back before it returns.
impl OffsetStore for FileStore {
    fn kind(&self) -> &'static str {
        "file"
    }

    fn load<'a>(
        &'a self,
        group: &'a str,
        topics: Option<&'a [String]>,
    ) -> StoreFuture<'a, Vec<StoredOffset>> {
        let store = self.clone();
        let group = group.to_owned();
        let topics: Option<Vec<String>> = topics.map(<[String]>::to_vec);
        Box::pin(async move {
            let all = blocking(move || store.load(&group)).await??;
            Ok(all.into_iter().filter(|o| topics.as_ref().is_none_or(|t| t.contains(&o.topic))).collect())
        })
    }

    fn save<'a>(&'a self, group: &'a str, offsets: &'a [StoredOffset]) -> StoreFuture<'a, ()> {
        let store = self.clone();
        let group = group.to_owned();
        let offsets = offsets.to_vec();
        Box::pin(async move {
            validate_batch("file", &offsets)?;
            if offsets.is_empty() {
                return Ok(());
            }
            blocking(move || store.merge(&group, &offsets)).await??;
            Ok(())
        })
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| StoreError::Other {
        store: "file",
        source: format!("file store task failed: {e}").into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Uuid;

    fn offset(topic: &str, partition: i32, offset: i64) -> StoredOffset {
        StoredOffset {
            topic: topic.into(),
            partition,
            offset,
            leader_epoch: Some(1),
            topic_id: Some(Uuid([3; 16])),
            commit_timestamp_ms: None,
        }
    }

    fn temp_file(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("kwire-offset-store-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("offsets.json");
        let _ = std::fs::remove_file(&path);
        path
    }

    #[tokio::test]
    async fn file_store_saves_only_the_named_partitions_and_filters_by_topic() {
        let store: Box<dyn OffsetStore> = Box::new(FileStore::new(temp_file("merge")));
        store.save("g", &[offset("a", 0, 5), offset("a", 1, 7), offset("b", 0, 1)]).await.unwrap();
        store.save("g", &[offset("a", 1, 9)]).await.unwrap();
        let mut a = store.load("g", Some(&["a".to_owned()])).await.unwrap();
        a.sort_by_key(|o| o.partition);
        assert_eq!(a, vec![offset("a", 0, 5), offset("a", 1, 9)]);
        assert_eq!(store.load("g", None).await.unwrap().len(), 3);
        assert_eq!(store.kind(), "file");
    }

    #[tokio::test]
    async fn a_bad_batch_is_refused_before_anything_is_written() {
        let path = temp_file("invalid");
        let store = FileStore::new(&path);
        for batch in [
            vec![offset("a", 0, -1)],
            vec![offset("a", -1, 0)],
            vec![offset("a", 0, 1), offset("a", 0, 2)],
            vec![offset("a", 0, 1), offset(&"t".repeat(250), 0, 1)],
            vec![offset("bad\u{1b}[2Jname", 0, 1)],
        ] {
            let err = OffsetStore::save(&store, "g", &batch).await.unwrap_err();
            assert!(matches!(err, StoreError::Invalid { store: "file", .. }), "{err}");
        }
        assert!(!path.exists(), "nothing written");
    }

    #[tokio::test]
    async fn a_corrupt_file_is_an_error_not_empty() {
        let path = temp_file("corrupt");
        std::fs::write(&path, "{not json").unwrap();
        let err = OffsetStore::load(&FileStore::new(&path), "g", None).await.unwrap_err();
        assert!(matches!(err, StoreError::File(FileStoreError::Corrupt { .. })), "{err}");
        assert!(!err.is_retriable());
    }
}
