//! Where a group's offsets are kept, as named on the command line: `kafka` (the group's
//! committed offsets), `zk` (the Kafka 0.8 ZooKeeper layout) or `file:PATH` (kwire's JSON file).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;

use kafka_wire::client::{Client, OffsetToCommit, TopicPartition};
use kafka_wire::protocol::Uuid;
use kafka_wire::store::file::FileStore;
use kafka_wire::store::StoredOffset;
use kwire_zk::ZkOffsetStore;
use offset_engine::{LeaderEpoch, Offset, Stored, TopicId};

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

/// A group's stored offsets, by partition.
pub type StoredOffsets = BTreeMap<TopicPartition, Stored>;

/// Reads `group`'s offsets from `store`, for `topics` (all stored topics when `None`).
pub async fn load(
    client: &Client,
    store: &StoreSpec,
    group: &str,
    topics: Option<&[String]>,
    zookeeper_address: Option<&str>,
    timeout: std::time::Duration,
) -> Result<StoredOffsets, Failure> {
    match store {
        StoreSpec::Kafka => {
            let committed = client.committed_offsets(group, topics, timeout).await?;
            Ok(committed
                .into_iter()
                .map(|(tp, c)| {
                    let stored = Stored {
                        offset: Offset(c.offset),
                        leader_epoch: c.leader_epoch.map(LeaderEpoch),
                        topic_id: None,
                        commit_timestamp_ms: None,
                    };
                    (tp, stored)
                })
                .collect())
        }
        StoreSpec::File(path) => {
            let file = FileStore::new(path);
            let stored = file.load(group).map_err(|e| Failure::new(Exit::STORE, e.to_string()))?;
            Ok(stored
                .into_iter()
                .filter(|o| topics.is_none_or(|t| t.contains(&o.topic)))
                .map(|o| (TopicPartition::new(o.topic.clone(), o.partition), to_engine(&o)))
                .collect())
        }
        StoreSpec::Zk => {
            let zk = zookeeper(zookeeper_address).await?;
            let stored =
                zk.read(group, topics).await.map_err(|e| Failure::new(Exit::STORE, e.to_string()))?;
            Ok(stored
                .into_iter()
                .map(|o| {
                    let entry = StoredOffset {
                        topic: o.topic,
                        partition: o.partition,
                        offset: o.offset,
                        leader_epoch: o.leader_epoch,
                        topic_id: o.topic_id.map(Uuid),
                        commit_timestamp_ms: None,
                    };
                    (TopicPartition::new(entry.topic.clone(), entry.partition), to_engine(&entry))
                })
                .collect())
        }
    }
}

async fn zookeeper(address: Option<&str>) -> Result<ZkOffsetStore, Failure> {
    let address = address.filter(|a| !a.is_empty()).ok_or_else(|| {
        Failure::new(Exit::USAGE, "the zk store needs --zookeeper HOST:PORT[/chroot] or KWIRE_ZOOKEEPER")
    })?;
    ZkOffsetStore::connect(address, std::time::Duration::from_secs(10))
        .await
        .map_err(|e| Failure::new(Exit::STORE, format!("ZooKeeper {address}: {e}")))
}

/// Converts a store entry to the engine's view of it.
pub fn to_engine(o: &StoredOffset) -> Stored {
    Stored {
        offset: Offset(o.offset),
        leader_epoch: o.leader_epoch.map(LeaderEpoch),
        topic_id: o.topic_id.and_then(|id| TopicId::from_wire(id.0)),
        commit_timestamp_ms: o.commit_timestamp_ms,
    }
}

/// Writes `offsets` for `group` into `store` (other partitions already stored stay as they
/// are), then reads them back and fails unless every one reads back equal. The Kafka store
/// refuses a group with active members unless `force`.
pub async fn save(
    client: &Client,
    store: &StoreSpec,
    group: &str,
    offsets: &[StoredOffset],
    force: bool,
    zookeeper_address: Option<&str>,
    timeout: std::time::Duration,
) -> Result<(), Failure> {
    match store {
        StoreSpec::Kafka => {
            let description = client.describe_group(group, timeout).await?;
            if !description.is_inactive() && !force {
                return Err(Failure::new(
                    Exit::REFUSED,
                    format!(
                        "group `{group}` has {} active member(s) (state {}): offsets can only be written while it is inactive; stop its consumers or pass --force",
                        description.members.len(),
                        description.state
                    ),
                ));
            }
            let to_commit: Vec<OffsetToCommit> = offsets
                .iter()
                .map(|o| OffsetToCommit {
                    tp: TopicPartition::new(o.topic.clone(), o.partition),
                    offset: o.offset,
                    leader_epoch: o.leader_epoch,
                    metadata: None,
                })
                .collect();
            let results = client.commit_offsets(group, &to_commit, timeout).await?;
            for (tp, result) in results {
                result.map_err(|e| Failure::new(Exit::CLUSTER, format!("commit of {tp} failed: {e}")))?;
            }
        }
        StoreSpec::File(path) => {
            let file = FileStore::new(path);
            let mut all = file.load(group).map_err(|e| Failure::new(Exit::STORE, e.to_string()))?;
            for o in offsets {
                all.retain(|x| !(x.topic == o.topic && x.partition == o.partition));
                all.push(o.clone());
            }
            file.save(group, &all).map_err(|e| Failure::new(Exit::STORE, e.to_string()))?;
        }
        StoreSpec::Zk => {
            let zk = zookeeper(zookeeper_address).await?;
            let entries: Vec<kwire_zk::StoredOffset> = offsets
                .iter()
                .map(|o| kwire_zk::StoredOffset {
                    topic: o.topic.clone(),
                    partition: o.partition,
                    offset: o.offset,
                    leader_epoch: o.leader_epoch,
                    topic_id: o.topic_id.map(|id| id.0),
                })
                .collect();
            // The store checks versions against what it read: read first, then write.
            zk.read(group, None).await.map_err(|e| Failure::new(Exit::STORE, e.to_string()))?;
            zk.write(group, &entries).await.map_err(|e| Failure::new(Exit::STORE, e.to_string()))?;
        }
    }
    // Read back: what is stored now must be what was written.
    let mut topics: Vec<String> = offsets.iter().map(|o| o.topic.clone()).collect();
    topics.sort();
    topics.dedup();
    let now = load(client, store, group, Some(&topics), zookeeper_address, timeout).await?;
    for o in offsets {
        let tp = TopicPartition::new(o.topic.clone(), o.partition);
        let read = now.get(&tp).map(|s| s.offset.0);
        if read != Some(o.offset) {
            return Err(Failure::new(
                Exit::STORE,
                format!(
                    "read-back mismatch for {tp} in the {store} store: wrote {}, read {read:?}",
                    o.offset
                ),
            ));
        }
    }
    Ok(())
}
