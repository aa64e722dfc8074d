//! Groups kept outside Kafka, for the exporter: `--store zk[:CONNECT]` lists every group under
//! ZooKeeper's `/consumers` (the Kafka 0.8 layout) and reads each one's offsets, as
//! `kwire group describe --store zk` reads them.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_wire::client::TopicPartition;
use kwire_stores::{AclPolicy, ZkAuth, ZkStore};

/// Each group's stored offsets (next offset to read, by partition), or why they could not be read.
pub type GroupOffsets = BTreeMap<String, super::exporter::StoredResult>;

/// A ZooKeeper offset store to export, opened again at each refresh (a session per refresh).
#[derive(Debug, Clone)]
pub struct ZkSource {
    /// The `store` label of its series, as given on the command line (`zk`, `zk:HOST:PORT/chroot`).
    pub label: String,
    pub connect: String,
    pub auth: Option<ZkAuth>,
    pub acl: AclPolicy,
}

impl ZkSource {
    /// The offsets of every group in the store whose id `filter` matches. Failing to reach the
    /// store fails the whole read (a partial list would look complete); a group whose offsets
    /// cannot be read fails alone.
    pub async fn read(
        &self,
        filter: Option<&regex::Regex>,
        timeout: Duration,
    ) -> Result<GroupOffsets, String> {
        let store = ZkStore::connect_secured(&self.connect, timeout, timeout, self.auth.clone(), self.acl)
            .await
            .map_err(|e| format!("store {}: {e}", self.label))?;
        let groups = store.inner().groups().await.map_err(|e| format!("store {}: {e}", self.label))?;
        let mut out = BTreeMap::new();
        for group in groups.into_iter().filter(|g| filter.is_none_or(|re| re.is_match(g))) {
            let offsets = store.inner().read(&group, None).await.map_err(|e| e.to_string()).map(|stored| {
                stored.into_iter().map(|o| (TopicPartition::new(o.topic, o.partition), o.offset)).collect()
            });
            out.insert(group, offsets);
        }
        Ok(out)
    }
}
