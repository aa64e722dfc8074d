//! A checkpoint folder as kwire sees it: which batch was committed last, whether a later batch
//! was planned and not finished, and each source's offsets. Reads only what it needs: two
//! folder listings, the newest committed batch's offsets and commit files, the newest
//! uncommitted batch's offsets file, and (for a query that never finished a batch) the Kafka
//! sources' starting-offsets files.

use std::fs::{self, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::log::{self, KafkaOffsets, LineError, OffsetsFile, SourceLine};
use super::SparkStoreError;
use crate::file::{file_kind, no_follow_flags};

/// The largest metadata-log file read: 64 MiB (a batch of 1,000 partitions is about 20 KiB).
pub const MAX_LOG_FILE_SIZE: u64 = 64 * 1024 * 1024;

/// One batch of the offsets log.
#[derive(Debug, Clone)]
pub struct Batch {
    /// The batch id (the file name).
    pub id: u64,
    /// Its offsets file.
    pub offsets: OffsetsFile,
    /// When its offsets file was last modified.
    pub modified: Option<SystemTime>,
}

/// Where a source's current offsets came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The newest committed batch.
    Committed(u64),
    /// The source's starting-offsets file: the query has not finished a batch.
    Start,
    /// Nothing: no committed batch and no starting-offsets file.
    Nothing,
}

/// A checkpoint folder, read.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// The checkpoint folder.
    pub dir: PathBuf,
    /// The query id from the `metadata` file, when there is one.
    pub query_id: Option<String>,
    /// The newest batch with both an offsets and a commit file.
    pub committed: Option<Batch>,
    /// The commit file of `committed`, as read (carried over to the batch kwire writes).
    pub commit_text: Option<String>,
    /// When the commit file of `committed` was last modified.
    pub commit_modified: Option<SystemTime>,
    /// The newest batch after `committed` that has offsets and no commit: planned, not finished.
    pub pending: Option<Batch>,
    /// The highest batch id in `offsets/` (the next batch kwire writes is one above).
    pub newest_id: Option<u64>,
    /// Each source's offsets as the query would resume from them: the committed batch's lines,
    /// or, before any batch was committed, each Kafka source's starting offsets.
    pub sources: Vec<SourceLine>,
    /// Where `sources` came from.
    pub origin: Origin,
}

impl Checkpoint {
    /// Every Kafka partition of every source: (source index, topic, partition, offset).
    pub fn kafka_offsets(&self) -> impl Iterator<Item = (usize, &str, i32, i64)> {
        kafka_entries(&self.sources)
    }
}

/// (source index, topic, partition, offset) of every Kafka source line.
pub fn kafka_entries(sources: &[SourceLine]) -> impl Iterator<Item = (usize, &str, i32, i64)> {
    sources.iter().enumerate().flat_map(|(i, s)| {
        let k: Option<&KafkaOffsets> = match s {
            SourceLine::Kafka(k) => Some(k),
            _ => None,
        };
        k.into_iter().flat_map(move |k| {
            k.iter().flat_map(move |(t, ps)| ps.iter().map(move |(p, o)| (i, t.as_str(), *p, *o)))
        })
    })
}

fn io_error(path: &Path, op: &'static str) -> impl FnOnce(io::Error) -> SparkStoreError {
    let path = path.to_path_buf();
    move |source| SparkStoreError::Io { path, op, source }
}

fn corrupt(path: &Path, e: LineError) -> SparkStoreError {
    match e.newer_version {
        Some((found, newest)) => {
            SparkStoreError::UnsupportedVersion { path: path.to_path_buf(), found, newest }
        }
        None => SparkStoreError::Corrupt { path: path.to_path_buf(), line: e.line, reason: e.reason },
    }
}

/// The batch ids in a metadata-log folder: names that are a decimal number, as Spark names
/// them; everything else (Hadoop's `.N.crc`, temporary files, kwire's own) is not a batch.
/// A missing folder has none.
pub fn batch_ids(dir: &Path) -> Result<Vec<u64>, SparkStoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(dir, "list")(e)),
    };
    let mut ids = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_error(dir, "list"))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.is_empty() && name.len() <= 19 && name.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(id) = name.parse::<u64>() {
                ids.push(id);
            }
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// A metadata-log file's bytes and modification time; a link, folder or special file there is
/// an error (never followed), as is a file over [`MAX_LOG_FILE_SIZE`].
pub fn read_log_file(path: &Path) -> Result<(Vec<u8>, Option<SystemTime>), SparkStoreError> {
    let file = OpenOptions::new().read(true).custom_flags(no_follow_flags()).open(path).map_err(|e| {
        if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
            SparkStoreError::NotRegular { path: path.to_path_buf(), kind: "symbolic link" }
        } else {
            io_error(path, "open")(e)
        }
    })?;
    let meta = file.metadata().map_err(io_error(path, "inspect"))?;
    if let Some(kind) = file_kind(meta.file_type()) {
        return Err(SparkStoreError::NotRegular { path: path.to_path_buf(), kind });
    }
    if meta.size() > MAX_LOG_FILE_SIZE {
        return Err(SparkStoreError::TooLarge {
            path: path.to_path_buf(),
            size: meta.size(),
            max: MAX_LOG_FILE_SIZE,
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_LOG_FILE_SIZE + 1).read_to_end(&mut bytes).map_err(io_error(path, "read"))?;
    Ok((bytes, meta.modified().ok()))
}

fn read_batch(dir: &Path, id: u64) -> Result<Batch, SparkStoreError> {
    let path = dir.join("offsets").join(id.to_string());
    let (bytes, modified) = read_log_file(&path)?;
    let offsets = log::parse_offsets(&bytes).map_err(|e| corrupt(&path, e))?;
    Ok(Batch { id, offsets, modified })
}

/// Reads the checkpoint at `dir`. A folder that is not a checkpoint (no `metadata` file, no
/// `offsets/` and no `commits/` folder) is [`SparkStoreError::NotACheckpoint`]; damage in any
/// file read is an error naming the file and line.
pub fn read(dir: &Path) -> Result<Checkpoint, SparkStoreError> {
    let meta = fs::metadata(dir).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => {
            SparkStoreError::NotACheckpoint { path: dir.to_path_buf(), reason: "no such folder".into() }
        }
        _ => io_error(dir, "inspect")(e),
    })?;
    if !meta.is_dir() {
        return Err(SparkStoreError::NotACheckpoint {
            path: dir.to_path_buf(),
            reason: "not a folder".into(),
        });
    }
    let metadata_path = dir.join("metadata");
    let query_id = match fs::symlink_metadata(&metadata_path) {
        Ok(_) => Some(query_id(&metadata_path)?),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_error(&metadata_path, "inspect")(e)),
    };
    let offsets_dir = dir.join("offsets");
    let commits_dir = dir.join("commits");
    if query_id.is_none() && !offsets_dir.is_dir() && !commits_dir.is_dir() {
        return Err(SparkStoreError::NotACheckpoint {
            path: dir.to_path_buf(),
            reason: "no `metadata` file and no `offsets/` or `commits/` folder: not a Structured Streaming checkpoint"
                .into(),
        });
    }
    let offset_ids = batch_ids(&offsets_dir)?;
    let commit_ids = batch_ids(&commits_dir)?;
    let newest_id = offset_ids.last().copied();
    // The newest commit whose offsets file exists: Spark writes offsets/N before commits/N.
    let committed_id = commit_ids.iter().rev().find(|id| offset_ids.binary_search(id).is_ok()).copied();
    let committed = committed_id.map(|id| read_batch(dir, id)).transpose()?;
    let (commit_text, commit_modified) = match committed_id {
        Some(id) => {
            let path = commits_dir.join(id.to_string());
            let (bytes, modified) = read_log_file(&path)?;
            log::check_commit(&bytes).map_err(|e| corrupt(&path, e))?;
            (Some(String::from_utf8_lossy(&bytes).into_owned()), modified)
        }
        None => (None, None),
    };
    let pending = match newest_id {
        Some(id) if committed_id.is_none_or(|c| id > c) => Some(read_batch(dir, id)?),
        _ => None,
    };
    let (sources, origin) = match &committed {
        Some(b) => (b.offsets.sources.clone(), Origin::Committed(b.id)),
        None => starting_offsets(dir, pending.as_ref())?,
    };
    Ok(Checkpoint {
        dir: dir.to_path_buf(),
        query_id,
        committed,
        commit_text,
        commit_modified,
        pending,
        newest_id,
        sources,
        origin,
    })
}

/// The `{"id":"..."}` of the checkpoint's `metadata` file.
fn query_id(path: &Path) -> Result<String, SparkStoreError> {
    let (bytes, _) = read_log_file(path)?;
    let text = std::str::from_utf8(&bytes).map_err(|_| SparkStoreError::Corrupt {
        path: path.to_path_buf(),
        line: Some(1),
        reason: "not UTF-8 text".into(),
    })?;
    let first = text.lines().next().unwrap_or_default();
    serde_json::from_str::<serde_json::Value>(first)
        .ok()
        .and_then(|v| v.get("id").and_then(|id| id.as_str()).map(str::to_owned))
        .ok_or_else(|| SparkStoreError::Corrupt {
            path: path.to_path_buf(),
            line: Some(1),
            reason: "expected the query's `{\"id\":\"...\"}`".into(),
        })
}

/// Before any committed batch: each Kafka source's starting offsets (`sources/I/0`), the
/// lines of the pending batch shaping how many sources there are.
fn starting_offsets(
    dir: &Path,
    pending: Option<&Batch>,
) -> Result<(Vec<SourceLine>, Origin), SparkStoreError> {
    let count = match pending {
        Some(b) => b.offsets.sources.len(),
        None => batch_ids(&dir.join("sources"))?.last().map_or(0, |n| *n as usize + 1),
    };
    let mut sources = Vec::with_capacity(count.min(1024));
    let mut any = false;
    for i in 0..count {
        let path = dir.join("sources").join(i.to_string()).join("0");
        let line = match fs::symlink_metadata(&path) {
            Ok(_) => {
                let (bytes, _) = read_log_file(&path)?;
                match log::parse_source_start(&bytes) {
                    Ok(k) => {
                        any = true;
                        SourceLine::Kafka(k)
                    }
                    // Another kind of source keeps its own file here: not ours to read.
                    Err(_)
                        if !matches!(
                            pending.map(|b| &b.offsets.sources[i]),
                            Some(SourceLine::Kafka(_)) | None
                        ) =>
                    {
                        SourceLine::Absent
                    }
                    Err(e) => return Err(corrupt(&path, e)),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => SourceLine::Absent,
            Err(e) => return Err(io_error(&path, "inspect")(e)),
        };
        sources.push(line);
    }
    Ok((sources, if any { Origin::Start } else { Origin::Nothing }))
}
