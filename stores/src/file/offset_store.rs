//! The file store as an [`OffsetStore`], and its errors in the interface's terms.

use offset_store::{validate_batch, OffsetStore, StoreError, StoreFuture, StoredOffset};

use super::{FileStore, FileStoreError};

impl From<FileStoreError> for StoreError {
    /// What the interface says of each file-store failure; the [`FileStoreError`] itself stays
    /// the `source` (see [`file_error`]).
    fn from(e: FileStoreError) -> Self {
        const STORE: &str = "file";
        match e {
            FileStoreError::Invalid { reason, .. } => StoreError::Invalid { store: STORE, message: reason },
            FileStoreError::ReadBackMismatch { topic, partition, wrote, read, .. } => {
                StoreError::ReadBackMismatch { store: STORE, topic, partition, wrote, read }
            }
            e @ (FileStoreError::Corrupt { .. }
            | FileStoreError::UnsupportedVersion { .. }
            | FileStoreError::WrongGroup { .. }) => StoreError::Corrupt { store: STORE, source: Box::new(e) },
            e @ (FileStoreError::Io { .. }
            | FileStoreError::LockIo { .. }
            | FileStoreError::Locked { .. }
            | FileStoreError::TimedOut { .. }) => {
                StoreError::Backend { store: STORE, retriable: true, source: Box::new(e) }
            }
            e => StoreError::Other { store: STORE, source: Box::new(e) },
        }
    }
}

/// The file-store failure behind a [`StoreError`], if it came from the file store.
pub fn file_error(e: &StoreError) -> Option<&FileStoreError> {
    std::error::Error::source(e).and_then(|s| s.downcast_ref::<FileStoreError>())
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
    use kafka_wire::protocol::Uuid;

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
        assert!(matches!(file_error(&err), Some(FileStoreError::Corrupt { .. })), "{err}");
        assert!(matches!(err, StoreError::Corrupt { store: "file", .. }), "{err}");
        assert!(!err.is_retriable());
    }
}
