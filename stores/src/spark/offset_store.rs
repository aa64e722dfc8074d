//! The Spark store as an [`OffsetStore`], and its errors in the interface's terms.

use offset_store::{validate_batch, OffsetStore, StoreError, StoreFuture, StoredOffset};

use super::{SparkStore, SparkStoreError};
use crate::FileStoreError;

const STORE: &str = "spark";

impl From<SparkStoreError> for StoreError {
    fn from(e: SparkStoreError) -> Self {
        match e {
            SparkStoreError::Invalid { .. } | SparkStoreError::NotACheckpoint { .. } => {
                StoreError::Invalid { store: STORE, message: e.to_string() }
            }
            e @ (SparkStoreError::Corrupt { .. }
            | SparkStoreError::UnsupportedVersion { .. }
            | SparkStoreError::NotRegular { .. }
            | SparkStoreError::TooLarge { .. }) => StoreError::Corrupt { store: STORE, source: Box::new(e) },
            e @ (SparkStoreError::QueryRunning { .. } | SparkStoreError::Sink { .. }) => {
                StoreError::Other { store: STORE, source: Box::new(e) }
            }
            e @ (SparkStoreError::Io { .. }
            | SparkStoreError::Write(FileStoreError::Locked { .. } | FileStoreError::LockIo { .. })) => {
                StoreError::Backend { store: STORE, retriable: true, source: Box::new(e) }
            }
            e => StoreError::Backend { store: STORE, retriable: false, source: Box::new(e) },
        }
    }
}

/// The Spark-store failure behind a [`StoreError`], if it came from the Spark store.
pub fn spark_error(e: &StoreError) -> Option<&SparkStoreError> {
    std::error::Error::source(e).and_then(|s| s.downcast_ref::<SparkStoreError>())
}

/// The checkpoint is the group: `group` is not checked. Files are read and written on a
/// blocking thread.
impl OffsetStore for SparkStore {
    fn kind(&self) -> &'static str {
        STORE
    }

    fn load<'a>(
        &'a self,
        _group: &'a str,
        topics: Option<&'a [String]>,
    ) -> StoreFuture<'a, Vec<StoredOffset>> {
        let store = self.clone();
        let topics: Option<Vec<String>> = topics.map(<[String]>::to_vec);
        Box::pin(async move {
            let all = blocking(move || store.load()).await??;
            Ok(all.into_iter().filter(|o| topics.as_ref().is_none_or(|t| t.contains(&o.topic))).collect())
        })
    }

    fn save<'a>(&'a self, _group: &'a str, offsets: &'a [StoredOffset]) -> StoreFuture<'a, ()> {
        let store = self.clone();
        let offsets = offsets.to_vec();
        Box::pin(async move {
            validate_batch(STORE, &offsets)?;
            if offsets.is_empty() {
                return Ok(());
            }
            blocking(move || store.save(&offsets)).await??;
            Ok(())
        })
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| StoreError::Other {
        store: STORE,
        source: format!("spark store task failed: {e}").into(),
    })
}
