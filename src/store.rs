//! Where a group's offsets are kept, as named on the command line: `kafka` (the group's
//! committed offsets), `zk` (the Kafka 0.8 ZooKeeper layout at `--zookeeper`), `file:PATH`
//! (kwire's JSON file) or `spark:PATH` (a Structured Streaming checkpoint). The stores themselves are the library's [`OffsetStore`]s; this file
//! names them, opens them, and turns their errors into exit codes.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use kafka_client::{Client, TopicPartition};
use kwire_stores::{OpenOptions, SparkStoreError};
use offset_engine::Stored;
use offset_store::{OffsetStore, StoreError, StoredOffset};

use crate::exit::{Exit, Failure};

pub use offset_store::StoreSpec;

/// What a command needs to open a store.
#[derive(Debug, Clone, Copy)]
pub struct StoreAccess<'a> {
    pub client: &'a Arc<Client>,
    /// `--zookeeper` / `KWIRE_ZOOKEEPER`, for the zk store.
    pub zookeeper: Option<&'a str>,
    /// `--zookeeper-auth` / `KWIRE_ZOOKEEPER_AUTH` as given (resolved when a zk store opens).
    pub zookeeper_auth: Option<&'a str>,
    /// `--zookeeper-tls-ca`, `--zookeeper-tls-cert`, `--zookeeper-tls-key` (read when a zk
    /// store opens).
    pub zookeeper_tls: ZkTlsFiles<'a>,
    /// `--zookeeper-acl`.
    pub zookeeper_acl: kwire_stores::AclPolicy,
    /// `--spark-sink`: for writes to a `spark:` store only.
    pub spark_sink: Option<&'a Path>,
    /// `--spark-sink-compact-interval`.
    pub spark_sink_compact_interval: u32,
    /// `--spark-sink-retention`.
    pub spark_sink_retention: Option<kwire_stores::spark::sink::Retention>,
    pub timeout: Duration,
}

/// The `--zookeeper-tls-*` files: TLS is on when the CA is given.
#[derive(Debug, Clone, Copy, Default)]
pub struct ZkTlsFiles<'a> {
    pub ca: Option<&'a Path>,
    pub cert: Option<&'a Path>,
    pub key: Option<&'a Path>,
}

impl ZkTlsFiles<'_> {
    /// The TLS settings, `None` without a CA. A bad file is a security failure (exit 9, as a
    /// bad `ssl.*` file is for the brokers).
    fn resolve(self) -> Result<Option<kwire_stores::ZkTls>, Failure> {
        let Some(ca) = self.ca else {
            if self.cert.is_some() || self.key.is_some() {
                return Err(Failure::new(
                    Exit::USAGE,
                    "--zookeeper-tls-cert / --zookeeper-tls-key need --zookeeper-tls-ca (the CA of the ZooKeeper server's certificate)",
                ));
            }
            return Ok(None);
        };
        kwire_stores::ZkTls::from_files(ca, self.cert, self.key)
            .map(Some)
            .map_err(|e| Failure::new(Exit::SECURITY, e.to_string()))
    }
}

/// A group's stored offsets, by partition.
pub type StoredOffsets = BTreeMap<TopicPartition, Stored>;

async fn open(
    spec: &StoreSpec,
    access: StoreAccess<'_>,
    force: bool,
) -> Result<Box<dyn OffsetStore>, Failure> {
    let (zookeeper_auth, zookeeper_tls) = match spec {
        StoreSpec::ZooKeeper(_) => (
            access.zookeeper_auth.map(crate::zookeeper_auth::resolve).transpose()?,
            access.zookeeper_tls.resolve()?,
        ),
        _ => (None, None),
    };
    let options = OpenOptions {
        default_zookeeper: access.zookeeper.map(str::to_owned),
        zookeeper_auth,
        zookeeper_tls,
        zookeeper_acl: access.zookeeper_acl,
        force,
        spark_sink: access.spark_sink.map(|output| kwire_stores::spark::FileSink {
            output: output.to_path_buf(),
            compact_interval: access.spark_sink_compact_interval,
            retention: access.spark_sink_retention,
        }),
        ..OpenOptions::new(Arc::clone(access.client), access.timeout)
    };
    kwire_stores::open(spec, &options).await.map_err(failure)
}

/// Reads `group`'s offsets from `store`, for `topics` (all stored topics when `None`); a
/// partition the store refused fails the load (see [`load_or_refused`] to keep the others).
pub async fn load(
    spec: &StoreSpec,
    access: StoreAccess<'_>,
    group: &str,
    topics: Option<&[String]>,
) -> Result<StoredOffsets, Failure> {
    let store = open(spec, access, false).await?;
    // Every store returns only `topics` (the `OffsetStore::load` contract).
    let stored = store.load(group, topics).await.map_err(failure)?;
    Ok(stored_offsets(&stored))
}

/// What [`load_or_refused`] read: the offsets the store answered, and each partition it refused
/// with the store's reason (for Kafka's store, the coordinator's [`ClientError`] of that
/// partition).
///
/// [`ClientError`]: kafka_client::ClientError
pub struct Loaded {
    pub stored: StoredOffsets,
    pub refused: Vec<(TopicPartition, offset_store::BoxError)>,
}

/// [`load`] keeping the partitions a store answered when it refuses others
/// ([`StoreError::PartlyRead`]): the caller reports each refused partition.
pub async fn load_or_refused(
    spec: &StoreSpec,
    access: StoreAccess<'_>,
    group: &str,
    topics: Option<&[String]>,
) -> Result<Loaded, Failure> {
    let store = open(spec, access, false).await?;
    match store.load(group, topics).await {
        Ok(stored) => Ok(Loaded { stored: stored_offsets(&stored), refused: Vec::new() }),
        Err(StoreError::PartlyRead { loaded, refused, .. }) => Ok(Loaded {
            stored: stored_offsets(&loaded),
            refused: refused
                .into_iter()
                .map(|r| (TopicPartition::new(r.topic, r.partition), r.reason))
                .collect(),
        }),
        Err(e) => Err(failure(e)),
    }
}

fn stored_offsets(stored: &[StoredOffset]) -> StoredOffsets {
    stored.iter().filter_map(|o| Some((o.topic_partition(), Stored::from_store(o)?))).collect()
}

/// One partition the store refused to write, and why.
#[derive(Debug, Clone)]
pub struct Refused {
    pub tp: TopicPartition,
    pub reason: String,
}

/// What a save wrote: everything, or (a store that is not atomic, Kafka's) some partitions.
#[derive(Debug, Clone)]
pub enum Saved {
    All,
    Partly { written: Vec<TopicPartition>, refused: Vec<Refused> },
}

/// Writes `offsets` for `group` into `store` (other partitions already stored stay as they
/// are); the store reads back what it wrote before it returns. The Kafka store refuses a group
/// with active members unless `force`; its coordinator may take some partitions and refuse
/// others, which is [`Saved::Partly`], not an error: the caller reports each partition.
pub async fn save(
    spec: &StoreSpec,
    access: StoreAccess<'_>,
    group: &str,
    offsets: &[StoredOffset],
    force: bool,
) -> Result<Saved, Failure> {
    if access.spark_sink.is_some() && !matches!(spec, StoreSpec::Spark(_)) {
        return Err(Failure::new(
            Exit::USAGE,
            format!("--spark-sink is for writes to a spark:CKPT store, not to {spec}"),
        ));
    }
    let store = open(spec, access, force).await?;
    // Every store reads back what it wrote before `save` returns (the file store under its
    // writers' lock), so a save that returns is what the store holds.
    match store.save(group, offsets).await {
        Ok(()) => Ok(Saved::All),
        Err(StoreError::PartlyWritten { written, refused, .. }) => Ok(Saved::Partly {
            written: written.into_iter().map(|(t, p)| TopicPartition::new(t, p)).collect(),
            refused: refused
                .into_iter()
                .map(|r| Refused {
                    tp: TopicPartition::new(r.topic, r.partition),
                    reason: r.reason.to_string(),
                })
                .collect(),
        }),
        Err(e) => Err(failure(e)),
    }
}

/// A store error as a one-line failure with the exit code its kind calls for.
#[allow(clippy::needless_pass_by_value)] // used as `map_err(failure)`
fn failure(e: StoreError) -> Failure {
    // The Kafka store's client errors keep their own exit code (security, ACLs, old broker).
    let client_exit = match &e {
        StoreError::Backend { source, .. } | StoreError::CommitRefused { source, .. } => source
            .downcast_ref::<kafka_client::ClientError>()
            .map(crate::exit::exit_for)
            .filter(|exit| *exit != Exit::CLUSTER),
        _ => None,
    };
    let exit = match &e {
        _ if client_exit.is_some() => client_exit.unwrap_or(Exit::CLUSTER),
        _ if kwire_stores::zk::is_security(&e) => Exit::SECURITY,
        StoreError::GroupActive { .. } | StoreError::GroupTypeNotWritable { .. } => Exit::REFUSED,
        _ if matches!(kwire_stores::spark::spark_error(&e), Some(SparkStoreError::QueryRunning { .. })) => {
            Exit::REFUSED
        }
        StoreError::PartlyWritten { .. } => Exit::PARTIAL,
        // Refused by ACLs only: the principal's rights, as for a refused topic elsewhere.
        StoreError::PartlyRead { refused, .. }
            if refused.iter().all(|r| {
                r.reason
                    .downcast_ref::<kafka_client::ClientError>()
                    .is_some_and(kafka_client::ClientError::is_authorization)
            }) =>
        {
            Exit::NOT_AUTHORIZED
        }
        StoreError::PartlyRead { .. } => Exit::CLUSTER,
        StoreError::Invalid { .. } => Exit::USAGE,
        // A file store's backend is the file system: its failures are the store's (exit 6).
        StoreError::Backend { store: "file", .. } => Exit::STORE,
        StoreError::Backend { .. } | StoreError::CommitRefused { .. } | StoreError::Unavailable { .. } => {
            Exit::CLUSTER
        }
        _ => Exit::STORE,
    };
    let message = match &e {
        StoreError::GroupActive { group, state, members } => format!(
            "group `{group}` has {members} active member(s) (state {state}): offsets can only be written while it is inactive; stop its consumers or pass --force"
        ),
        other => other.to_string(),
    };
    Failure::new(exit, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_client::{BrokerRef, ClientError};
    use kafka_wire::protocol::{ApiKey, ErrorCode};
    use offset_store::RefusedPartition;

    fn partly_read(code: ErrorCode) -> StoreError {
        let reason = ClientError::Kafka {
            broker: BrokerRef { node_id: Some(1), addr: "b1:9092".to_owned() },
            api: ApiKey::OFFSET_FETCH,
            code,
            context: "group `g` t-1".to_owned(),
        };
        StoreError::PartlyRead {
            store: "kafka",
            loaded: Vec::new(),
            refused: vec![RefusedPartition { topic: "t".to_owned(), partition: 1, reason: Box::new(reason) }],
        }
    }

    #[test]
    fn a_load_partly_refused_by_acls_fails_with_exit_10_naming_the_partition_and_otherwise_as_the_cluster() {
        let refused = failure(partly_read(ErrorCode::TOPIC_AUTHORIZATION_FAILED));
        assert_eq!(refused.exit, Exit::NOT_AUTHORIZED);
        assert!(refused.message.contains("t:1 ("), "{}", refused.message);
        assert!(refused.message.contains("TOPIC_AUTHORIZATION_FAILED"), "{}", refused.message);
        let unknown = failure(partly_read(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
        assert_eq!(unknown.exit, Exit::CLUSTER);
    }
}
