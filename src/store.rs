//! Where a group's offsets are kept, as named on the command line: `kafka` (the group's
//! committed offsets), `zk` (the Kafka 0.8 ZooKeeper layout) or `file:PATH` (kwire's JSON file).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;

use kafka_wire::client::{Client, TopicPartition};
use offset_engine::{LeaderEpoch, Offset, Stored};

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
        other => {
            Err(Failure::new(Exit::USAGE, format!("the {other} store is not available in this build yet")))
        }
    }
}
