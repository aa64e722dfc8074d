//! The file offset store: one JSON document holding every partition of one group, written
//! atomically — temporary file in the same folder, fsync, rename over the old file, fsync the
//! folder — so a crash at any point leaves either the old file or the new one, never a torn
//! one. A corrupt or foreign file is an error naming the file and the problem, never "empty".
//!
//! ```json
//! {"format": "kwire-offsets", "version": 1, "group": "my-group",
//!  "offsets": [{"topic": "t", "partition": 0, "offset": 42, "leader_epoch": 3,
//!               "topic_id": "6qgwkxhqQAivANSed-tpbg", "commit_timestamp_ms": 1732874400000}]}
//! ```

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::StoredOffset;
use crate::protocol::Uuid;

/// The `format` field every kwire offset file carries.
pub const FORMAT: &str = "kwire-offsets";
/// The newest format version this build reads and the one it writes.
pub const VERSION: u32 = 1;

#[derive(Debug)]
pub enum FileStoreError {
    /// The file could not be read or written.
    Io { path: PathBuf, op: &'static str, source: io::Error },
    /// The file is not valid JSON, or not a kwire offset file, or holds an invalid entry.
    Corrupt { path: PathBuf, reason: String },
    /// The file was written by a newer kwire.
    UnsupportedVersion { path: PathBuf, version: u32 },
    /// The file holds another group's offsets.
    WrongGroup { path: PathBuf, expected: String, found: String },
}

impl fmt::Display for FileStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, op, source } => {
                write!(f, "cannot {op} offset file {}: {source}", path.display())
            }
            Self::Corrupt { path, reason } => {
                write!(f, "offset file {} is not usable: {reason}", path.display())
            }
            Self::UnsupportedVersion { path, version } => write!(
                f,
                "offset file {} has format version {version}; this kwire reads up to {VERSION}",
                path.display()
            ),
            Self::WrongGroup { path, expected, found } => {
                write!(f, "offset file {} holds group `{found}`, not `{expected}`", path.display())
            }
        }
    }
}

impl std::error::Error for FileStoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Document {
    format: String,
    version: u32,
    group: String,
    offsets: Vec<Entry>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    topic: String,
    partition: i32,
    offset: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    leader_epoch: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    topic_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    commit_timestamp_ms: Option<i64>,
}

/// A group's offsets in one file.
#[derive(Debug, Clone)]
pub struct FileStore {
    path: PathBuf,
}

impl FileStore {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The offsets stored for `group`; an absent file means nothing is stored yet.
    pub fn load(&self, group: &str) -> Result<Vec<StoredOffset>, FileStoreError> {
        let text = match fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(FileStoreError::Io { path: self.path.clone(), op: "read", source }),
        };
        let corrupt = |reason: String| FileStoreError::Corrupt { path: self.path.clone(), reason };
        let doc: Document = serde_json::from_slice(&text).map_err(|e| corrupt(e.to_string()))?;
        if doc.format != FORMAT {
            return Err(corrupt(format!("format is `{}`, expected `{FORMAT}`", doc.format)));
        }
        if doc.version > VERSION || doc.version == 0 {
            return Err(FileStoreError::UnsupportedVersion { path: self.path.clone(), version: doc.version });
        }
        if doc.group != group {
            return Err(FileStoreError::WrongGroup {
                path: self.path.clone(),
                expected: group.to_owned(),
                found: doc.group,
            });
        }
        let mut out = Vec::with_capacity(doc.offsets.len());
        for (i, e) in doc.offsets.into_iter().enumerate() {
            if e.offset < 0 || e.partition < 0 || e.topic.is_empty() {
                return Err(corrupt(format!(
                    "entry {i} ({}:{}) has a negative offset or partition or an empty topic",
                    e.topic, e.partition
                )));
            }
            let topic_id = match e.topic_id {
                None => None,
                Some(text) => Some(
                    Uuid::parse(&text)
                        .ok_or_else(|| corrupt(format!("entry {i}: `{text}` is not a Kafka topic id")))?,
                ),
            };
            if out.iter().any(|o: &StoredOffset| o.topic == e.topic && o.partition == e.partition) {
                return Err(corrupt(format!("{}:{} appears twice", e.topic, e.partition)));
            }
            out.push(StoredOffset {
                topic: e.topic,
                partition: e.partition,
                offset: e.offset,
                leader_epoch: e.leader_epoch,
                topic_id,
                commit_timestamp_ms: e.commit_timestamp_ms,
            });
        }
        Ok(out)
    }

    /// Replaces the stored offsets of `group` with `offsets`, atomically.
    pub fn save(&self, group: &str, offsets: &[StoredOffset]) -> Result<(), FileStoreError> {
        let mut sorted: Vec<&StoredOffset> = offsets.iter().collect();
        sorted.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
        let doc = Document {
            format: FORMAT.to_owned(),
            version: VERSION,
            group: group.to_owned(),
            offsets: sorted
                .into_iter()
                .map(|o| Entry {
                    topic: o.topic.clone(),
                    partition: o.partition,
                    offset: o.offset,
                    leader_epoch: o.leader_epoch,
                    topic_id: o.topic_id.map(|id| id.to_string()),
                    commit_timestamp_ms: o.commit_timestamp_ms,
                })
                .collect(),
        };
        let mut bytes = serde_json::to_vec_pretty(&doc)
            .map_err(|e| FileStoreError::Corrupt { path: self.path.clone(), reason: e.to_string() })?;
        bytes.push(b'\n');
        self.write_atomically(&bytes)
    }

    fn write_atomically(&self, bytes: &[u8]) -> Result<(), FileStoreError> {
        let io = |op: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| FileStoreError::Io { path, op, source }
        };
        let dir = match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        let result = (|| {
            let mut file = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&tmp)
                .map_err(io("create", &tmp))?;
            file.write_all(bytes).map_err(io("write", &tmp))?;
            file.sync_all().map_err(io("fsync", &tmp))?;
            drop(file);
            fs::rename(&tmp, &self.path).map_err(io("rename into place", &self.path))?;
            File::open(&dir).and_then(|d| d.sync_all()).map_err(io("fsync the folder of", &self.path))
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_path(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("kwire-file-store-{}-{name}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        dir.join("offsets.json")
    }

    fn offset(topic: &str, partition: i32, offset: i64) -> StoredOffset {
        StoredOffset {
            topic: topic.into(),
            partition,
            offset,
            leader_epoch: Some(4),
            topic_id: Some(Uuid([7; 16])),
            commit_timestamp_ms: Some(1_732_874_400_000),
        }
    }

    #[test]
    fn saved_offsets_load_back_equal() {
        let store = FileStore::new(temp_path("roundtrip"));
        let offsets = vec![offset("a", 1, 10), offset("a", 0, 5)];
        store.save("g", &offsets).unwrap();
        let mut loaded = store.load("g").unwrap();
        loaded.sort_by_key(|o| o.partition);
        assert_eq!(loaded, vec![offset("a", 0, 5), offset("a", 1, 10)]);
    }

    #[test]
    fn a_missing_file_means_nothing_stored() {
        assert!(FileStore::new(temp_path("missing").with_file_name("none.json"))
            .load("g")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn a_torn_or_foreign_file_is_an_error_naming_the_file() {
        let path = temp_path("corrupt");
        for (content, needle) in [
            ("{\"format\":\"kwire-offsets\",\"version\":1,\"group\":\"g\",\"offsets\":[{\"topic\"", "EOF"),
            ("{\"hello\": 1}", "missing field"),
            ("{\"format\":\"other\",\"version\":1,\"group\":\"g\",\"offsets\":[]}", "format is `other`"),
            ("{\"format\":\"kwire-offsets\",\"version\":1,\"group\":\"g\",\"offsets\":[{\"topic\":\"t\",\"partition\":0,\"offset\":-5}]}", "negative"),
        ] {
            fs::write(&path, content).unwrap();
            let err = FileStore::new(&path).load("g").unwrap_err().to_string();
            assert!(err.contains(needle) && err.contains("offsets.json"), "{err}");
        }
        fs::write(&path, "{\"format\":\"kwire-offsets\",\"version\":9,\"group\":\"g\",\"offsets\":[]}")
            .unwrap();
        assert!(matches!(
            FileStore::new(&path).load("g"),
            Err(FileStoreError::UnsupportedVersion { version: 9, .. })
        ));
        fs::write(&path, "{\"format\":\"kwire-offsets\",\"version\":1,\"group\":\"other\",\"offsets\":[]}")
            .unwrap();
        assert!(matches!(FileStore::new(&path).load("g"), Err(FileStoreError::WrongGroup { .. })));
    }

    #[test]
    fn saving_replaces_the_file_and_leaves_no_temporary_behind() {
        let path = temp_path("replace");
        let store = FileStore::new(&path);
        store.save("g", &[offset("a", 0, 1)]).unwrap();
        store.save("g", &[offset("a", 0, 2)]).unwrap();
        assert_eq!(store.load("g").unwrap()[0].offset, 2);
        let leftovers: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .collect();
        assert!(leftovers.is_empty());
    }
}
