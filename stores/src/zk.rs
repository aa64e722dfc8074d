//! The ZooKeeper store behind the [`OffsetStore`] interface: `kwire-zk`'s Kafka 0.8 layout
//! (`/consumers/<group>/offsets/<topic>/<partition>`, decimal text), with the topic id and leader
//! epoch in kwire's side nodes, written atomically with version checks.
//!
//! A thin adapter: `kwire-zk` stays a ZooKeeper store of its own, usable without this
//! interface.

use std::time::Duration;

use kafka_wire::protocol::Uuid;
use kwire_zk::{AclPolicy, ZkAuth, ZkOffsetStore, ZkTls};
use offset_store::{
    check_read_back, topics_of, validate_batch, OffsetStore, StoreError, StoreFuture, StoredOffset,
};

const KIND: &str = "zookeeper";

/// A group's offsets in ZooKeeper, readable by Kafka 0.8 consumers, Spark jobs and Curator code.
#[derive(Debug)]
pub struct ZkStore {
    inner: ZkOffsetStore,
}

impl ZkStore {
    /// Wraps an open [`ZkOffsetStore`].
    pub fn new(inner: ZkOffsetStore) -> Self {
        Self { inner }
    }

    /// Connects to `connect_string` (`host:port[,host:port][/chroot]`); each later call retries
    /// through connection loss and session expiry for up to `retry_budget`.
    pub async fn connect(
        connect_string: &str,
        session_timeout: Duration,
        retry_budget: Duration,
    ) -> Result<Self, StoreError> {
        ZkStore::connect_secured(connect_string, session_timeout, retry_budget, None, AclPolicy::default())
            .await
    }

    /// [`ZkStore::connect`] with credentials for every session and the ACL policy of the
    /// nodes writes create (see [`ZkOffsetStore::connect_secured`]).
    pub async fn connect_secured(
        connect_string: &str,
        session_timeout: Duration,
        retry_budget: Duration,
        auth: Option<ZkAuth>,
        acl: AclPolicy,
    ) -> Result<Self, StoreError> {
        ZkStore::connect_with_tls(connect_string, session_timeout, retry_budget, auth, acl, None).await
    }

    /// [`ZkStore::connect_secured`], over TLS when `tls` is given (see
    /// [`ZkOffsetStore::connect_with_tls`]); a security failure is recognised by [`is_security`].
    pub async fn connect_with_tls(
        connect_string: &str,
        session_timeout: Duration,
        retry_budget: Duration,
        auth: Option<ZkAuth>,
        acl: AclPolicy,
        tls: Option<ZkTls>,
    ) -> Result<Self, StoreError> {
        let inner = ZkOffsetStore::connect_with_tls(connect_string, session_timeout, auth, acl, tls)
            .await
            .map_err(store_error)?;
        Ok(Self { inner: inner.with_retry_budget(retry_budget) })
    }

    /// The `kwire-zk` store underneath, for what the interface does not cover.
    pub fn inner(&self) -> &ZkOffsetStore {
        &self.inner
    }
}

impl OffsetStore for ZkStore {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn load<'a>(
        &'a self,
        group: &'a str,
        topics: Option<&'a [String]>,
    ) -> StoreFuture<'a, Vec<StoredOffset>> {
        Box::pin(async move {
            let read = self.inner.read(group, topics).await.map_err(store_error)?;
            Ok(read
                .into_iter()
                .map(|o| StoredOffset { topic_id: o.topic_id.and_then(Uuid::known), ..o })
                .collect())
        })
    }

    fn save<'a>(&'a self, group: &'a str, offsets: &'a [StoredOffset]) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            validate_batch(KIND, offsets)?;
            self.inner.write(group, offsets).await.map_err(store_error)?;
            // Read back, as the Kafka and file stores do: a save that returns Ok holds.
            let now = self.load(group, Some(&topics_of(offsets))).await?;
            check_read_back(KIND, offsets, &now)
        })
    }
}

/// Whether `e` is a ZooKeeper store's security failure (TLS mismatch, a certificate refused,
/// SASL credentials refused): fixing the settings helps, retrying does not.
pub fn is_security(e: &StoreError) -> bool {
    match e {
        StoreError::Other { store: KIND, source } => {
            source.downcast_ref::<kwire_zk::Error>().is_some_and(kwire_zk::Error::is_security)
        }
        _ => false,
    }
}

/// The store-neutral error for a `kwire-zk` error.
pub fn store_error(e: kwire_zk::Error) -> StoreError {
    use kwire_zk::Error as E;
    match e {
        E::ConcurrentModification { topic, partition, path, .. } => {
            StoreError::ConcurrentModification { store: KIND, topic, partition, detail: path }
        }
        E::DeadlineExceeded { outcome_unknown, .. } => {
            StoreError::Unavailable { store: KIND, outcome_unknown, source: Box::new(e) }
        }
        E::Unreachable { .. } => {
            StoreError::Unavailable { store: KIND, outcome_unknown: false, source: Box::new(e) }
        }
        E::CorruptOffset { .. } | E::CorruptMetadata { .. } | E::UnexpectedChild { .. } => {
            StoreError::Corrupt { store: KIND, source: Box::new(e) }
        }
        E::InvalidConnectString { .. }
        | E::InvalidGroup { .. }
        | E::InvalidTopic { .. }
        | E::InvalidPartition { .. }
        | E::InvalidOffset { .. }
        | E::DuplicatePartition { .. }
        | E::AclNeedsAuth { .. } => StoreError::Invalid { store: KIND, message: e.to_string() },
        // Security failures stay `Other` (not retriable, not the user's input); `is_security`
        // tells them apart.
        other => StoreError::Other { store: KIND, source: Box::new(other) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zookeeper_errors_keep_their_meaning() {
        let conflict = store_error(kwire_zk::Error::ConcurrentModification {
            group: "g".into(),
            topic: "t".into(),
            partition: 3,
            path: "/consumers/g/offsets/t/3".into(),
        });
        assert!(
            matches!(&conflict, StoreError::ConcurrentModification { partition: 3, topic, .. } if topic == "t")
        );
        assert!(conflict.needs_reload() && !conflict.is_retriable());
        let down = store_error(kwire_zk::Error::DeadlineExceeded {
            operation: "write",
            target: "group \"g\"".into(),
            budget: Duration::from_secs(1),
            last_error: None,
            outcome_unknown: true,
        });
        assert!(matches!(down, StoreError::Unavailable { outcome_unknown: true, .. }));
        assert!(down.is_retriable() && down.needs_reload());
        let bad = store_error(kwire_zk::Error::InvalidOffset { topic: "t".into(), partition: 0, offset: -1 });
        assert!(matches!(bad, StoreError::Invalid { store: "zookeeper", .. }));
        let refused = store_error(kwire_zk::Error::AuthFailed {
            servers: "127.0.0.1:2181".into(),
            credentials: "sasl:u:***".into(),
        });
        assert!(is_security(&refused) && !refused.is_retriable(), "{refused:?}");
        assert!(!is_security(&bad) && !is_security(&down));
    }
}
