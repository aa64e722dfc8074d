//! A store named in one string, for programs that take it from the command line or the
//! environment: `kafka`, `zk:HOST:PORT[,HOST:PORT][/chroot]` or `file:PATH`.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use kafka_wire::client::Client;
use kafka_wire::store::file::FileStore;
use kafka_wire::store::{KafkaGroupStore, OffsetStore, StoreError};

use crate::zk::ZkStore;

/// Which offset store to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreSpec {
    /// The group's committed offsets in Kafka.
    Kafka,
    /// The Kafka 0.8 ZooKeeper layout, at this connect string.
    ZooKeeper(String),
    /// kwire's JSON file.
    File(PathBuf),
}

impl FromStr for StoreSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s == "kafka" {
            return Ok(Self::Kafka);
        }
        let non_empty = |rest: &str| (!rest.is_empty()).then(|| rest.to_owned());
        if let Some(rest) = s.strip_prefix("zk:").or_else(|| s.strip_prefix("zookeeper:")) {
            return non_empty(rest).map(Self::ZooKeeper).ok_or_else(|| format!("`{s}` names no ZooKeeper"));
        }
        if let Some(rest) = s.strip_prefix("file:") {
            return non_empty(rest)
                .map(|p| Self::File(PathBuf::from(p)))
                .ok_or_else(|| format!("`{s}` names no file"));
        }
        Err(format!("unknown store `{s}`: use kafka, zk:HOST:PORT[/chroot] or file:PATH"))
    }
}

impl fmt::Display for StoreSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Kafka => f.write_str("kafka"),
            Self::ZooKeeper(c) => write!(f, "zk:{c}"),
            Self::File(p) => write!(f, "file:{}", p.display()),
        }
    }
}

impl StoreSpec {
    /// Opens the store. `timeout` bounds the Kafka store's coordinator calls and the ZooKeeper
    /// session setup; ZooKeeper calls retry through outages for up to `zk_retry_budget`.
    pub async fn open(
        &self,
        client: &Arc<Client>,
        timeout: Duration,
        zk_retry_budget: Duration,
    ) -> Result<Box<dyn OffsetStore>, StoreError> {
        Ok(match self {
            Self::Kafka => Box::new(KafkaGroupStore::new(Arc::clone(client), timeout)),
            Self::ZooKeeper(connect) => Box::new(ZkStore::connect(connect, timeout, zk_retry_budget).await?),
            Self::File(path) => Box::new(FileStore::new(path).timeout(timeout)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_names_parse_and_print_back() {
        for text in ["kafka", "zk:127.0.0.1:2181/kafka", "file:/tmp/o.json"] {
            let spec: StoreSpec = text.parse().unwrap();
            assert_eq!(spec.to_string(), text);
        }
        assert_eq!("zookeeper:h:1".parse::<StoreSpec>(), Ok(StoreSpec::ZooKeeper("h:1".into())));
        for bad in ["", "zk:", "file:", "redis"] {
            assert!(bad.parse::<StoreSpec>().is_err(), "{bad}");
        }
    }
}
