//! Groups kept outside Kafka, for the exporter: `--store zk[:CONNECT]` lists every group under
//! ZooKeeper's `/consumers` (the Kafka 0.8 layout) and reads each one's offsets, as
//! `kwire group describe --store zk` reads them; `--store file:PATH` is the one group kwire's
//! offset file holds (named in the file), read as `kwire group describe --store file:PATH`.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_client::TopicPartition;
use kwire_stores::{AclPolicy, FileStore, ZkAuth, ZkStore};

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

/// A kwire offset file to export: one group, the one the file names.
#[derive(Debug, Clone)]
pub struct FileSource {
    /// The `store` label of its series, as given on the command line (`file:PATH`).
    pub label: String,
    pub path: std::path::PathBuf,
}

impl FileSource {
    /// The file's group and its offsets when `filter` matches it; nothing when the file does not
    /// exist yet (nothing stored). A file that cannot be read or is not a kwire offset file
    /// fails the read.
    pub fn read(&self, filter: Option<&regex::Regex>, timeout: Duration) -> Result<GroupOffsets, String> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(GroupOffsets::new()),
            Err(e) => return Err(format!("store {}: {e}", self.label)),
        };
        let group = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|doc| doc.get("group").and_then(serde_json::Value::as_str).map(str::to_owned))
            .ok_or_else(|| format!("store {}: not a kwire offset file (no \"group\")", self.label))?;
        let mut out = GroupOffsets::new();
        if filter.is_none_or(|re| re.is_match(&group)) {
            // The store reads the file again and checks all of it (format, version, group).
            let offsets =
                FileStore::new(&self.path).timeout(timeout).load(&group).map_err(|e| e.to_string()).map(
                    |stored| {
                        stored
                            .into_iter()
                            .map(|o| (TopicPartition::new(o.topic, o.partition), o.offset))
                            .collect()
                    },
                );
            out.insert(group, offsets);
        }
        Ok(out)
    }
}

/// A non-Kafka store the exporter reads at each refresh.
#[derive(Debug, Clone)]
pub enum Source {
    ZooKeeper(ZkSource),
    File(FileSource),
}

impl Source {
    /// The `store` label of the source's series.
    pub fn label(&self) -> &str {
        match self {
            Self::ZooKeeper(zk) => &zk.label,
            Self::File(file) => &file.label,
        }
    }

    /// The offsets of the source's groups that `filter` matches.
    pub async fn read(
        &self,
        filter: Option<&regex::Regex>,
        timeout: Duration,
    ) -> Result<GroupOffsets, String> {
        match self {
            Self::ZooKeeper(zk) => zk.read(filter, timeout).await,
            Self::File(file) => file.read(filter, timeout),
        }
    }
}
