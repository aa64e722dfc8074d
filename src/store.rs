//! Where a group's offsets are kept, as named on the command line: `kafka` (the group's
//! committed offsets), `zk` (the Kafka 0.8 ZooKeeper layout at `--zookeeper`) or `file:PATH`
//! (kwire's JSON file). The stores themselves are the library's [`OffsetStore`]s; this file
//! names them, opens them, and turns their errors into exit codes.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use kafka_wire::client::{Client, TopicPartition};
use kafka_wire::store::file::FileStore;
use kafka_wire::store::{KafkaGroupStore, OffsetStore, StoreError, StoredOffset};
use kwire_stream::driver::to_engine;
use kwire_stream::ZkStore;
use offset_engine::Stored;

use crate::exit::{Exit, Failure};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreSpec {
    Kafka,
    Zk,
    File(PathBuf),
}

impl FromStr for StoreSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "kafka" => Ok(Self::Kafka),
            "zk" | "zookeeper" => Ok(Self::Zk),
            _ => match s.strip_prefix("file:") {
                Some(path) if !path.is_empty() => Ok(Self::File(PathBuf::from(path))),
                _ => Err(format!("unknown store `{s}`: use kafka, zk or file:PATH")),
            },
        }
    }
}

impl std::fmt::Display for StoreSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Kafka => f.write_str("kafka"),
            Self::Zk => f.write_str("zk"),
            Self::File(p) => write!(f, "file:{}", p.display()),
        }
    }
}

/// What a command needs to open a store.
#[derive(Debug, Clone, Copy)]
pub struct StoreAccess<'a> {
    pub client: &'a Arc<Client>,
    /// `--zookeeper` / `KWIRE_ZOOKEEPER`, for the zk store.
    pub zookeeper: Option<&'a str>,
    pub timeout: Duration,
}

/// A group's stored offsets, by partition.
pub type StoredOffsets = BTreeMap<TopicPartition, Stored>;

async fn open(
    spec: &StoreSpec,
    access: StoreAccess<'_>,
    force: bool,
) -> Result<Box<dyn OffsetStore>, Failure> {
    Ok(match spec {
        StoreSpec::Kafka => {
            Box::new(KafkaGroupStore::new(Arc::clone(access.client), access.timeout).force(force))
        }
        StoreSpec::File(path) => Box::new(FileStore::new(path)),
        StoreSpec::Zk => {
            let address = access.zookeeper.filter(|a| !a.is_empty()).ok_or_else(|| {
                Failure::new(
                    Exit::USAGE,
                    "the zk store needs --zookeeper HOST:PORT[/chroot] or KWIRE_ZOOKEEPER",
                )
            })?;
            Box::new(ZkStore::connect(address, access.timeout, access.timeout).await.map_err(failure)?)
        }
    })
}

/// Reads `group`'s offsets from `store`, for `topics` (all stored topics when `None`).
pub async fn load(
    spec: &StoreSpec,
    access: StoreAccess<'_>,
    group: &str,
    topics: Option<&[String]>,
) -> Result<StoredOffsets, Failure> {
    let store = open(spec, access, false).await?;
    let stored = store.load(group, topics).await.map_err(failure)?;
    Ok(stored
        .iter()
        .filter(|o| topics.is_none_or(|t| t.contains(&o.topic)))
        .filter_map(|o| Some((TopicPartition::new(o.topic.clone(), o.partition), to_engine(o)?)))
        .collect())
}

/// Writes `offsets` for `group` into `store` (other partitions already stored stay as they
/// are), then reads them back and fails unless every one reads back equal. The Kafka store
/// refuses a group with active members unless `force`.
pub async fn save(
    spec: &StoreSpec,
    access: StoreAccess<'_>,
    group: &str,
    offsets: &[StoredOffset],
    force: bool,
) -> Result<(), Failure> {
    let store = open(spec, access, force).await?;
    let mut topics: Vec<String> = offsets.iter().map(|o| o.topic.clone()).collect();
    topics.sort();
    topics.dedup();
    // The ZooKeeper store checks versions against what it read: read first, then write.
    store.load(group, Some(&topics)).await.map_err(failure)?;
    store.save(group, offsets).await.map_err(failure)?;
    let now = store.load(group, Some(&topics)).await.map_err(failure)?;
    for o in offsets {
        let read = now.iter().find(|n| n.topic == o.topic && n.partition == o.partition).map(|n| n.offset);
        if read != Some(o.offset) {
            return Err(Failure::new(
                Exit::STORE,
                format!(
                    "read-back mismatch for {}-{} in the {spec} store: wrote {}, read {read:?}",
                    o.topic, o.partition, o.offset
                ),
            ));
        }
    }
    Ok(())
}

/// A store error as a one-line failure with the exit code its kind calls for.
#[allow(clippy::needless_pass_by_value)] // used as `map_err(failure)`
fn failure(e: StoreError) -> Failure {
    let exit = match &e {
        StoreError::GroupActive { .. } => Exit::REFUSED,
        StoreError::Kafka(_) | StoreError::CommitRefused { .. } | StoreError::Unavailable { .. } => {
            Exit::CLUSTER
        }
        StoreError::Invalid { .. } => Exit::USAGE,
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
