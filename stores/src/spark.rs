//! The Spark store: a Structured Streaming checkpoint folder read and written as an offset
//! store, so kwire shows a query's lag, predicts the failures of a restart (a recreated topic,
//! retention past the checkpoint), and moves the query's position.
//!
//! The checkpoint is the group: any group name is accepted. What is read (see
//! [`checkpoint`]): the Kafka sources' offsets of the newest batch that has a
//! commit file (`offsets/N` with `commits/N`), which is where the query resumes; before any
//! batch was committed, each Kafka source's starting offsets (`sources/I/0`). A later batch
//! with offsets and no commit (planned, not finished) is reported by [`SparkStore::describe`].
//!
//! What a save writes: a new batch `N+1` (one above the newest in `offsets/`), in Spark's
//! format, `offsets/N+1` then `commits/N+1`, each through a temporary file renamed into place
//! without replacing anything (`renameat2(RENAME_NOREPLACE)`: a query that wrote that batch id
//! first wins, and the save fails having changed nothing Spark reads). The new offsets file is
//! the committed batch's sources with the saved partitions changed, its metadata line
//! (watermark, batch time, the query's SQL conf) carried over; the commit file is the committed
//! batch's, carried over. Older batches, `metadata`, `sources/` and `state/` are not touched.
//! Concurrent kwire writers serialise on an `flock` of `.kwire.lock` in the checkpoint folder
//! (Spark reads only its own subfolders and `metadata`). With [`SparkStore::file_sink`], the
//! query's file sink log gets batch `N+1`'s entry between the two files ([`sink`]); without
//! it, a file sink's log is not touched and lacks the batch.
//!
//! A save is refused while the query looks alive: a batch written less than
//! [`SparkStore::running_window`] ago (default [`DEFAULT_RUNNING_WINDOW`]). Stop the query
//! first; [`SparkStore::force`] (the CLI's `--force`) writes anyway.
//!
//! Spark keeps no topic id: a recreated topic shows as offsets ahead of the log, and kwire
//! records the ids it knew when it wrote a batch in a side file of its own ([`topic_ids`],
//! `.kwire-topic-ids.json` in the checkpoint folder, which Spark does not read). Loaded offsets
//! carry those ids, so a topic recreated and refilled past the stored offsets (nothing ahead
//! of the log) is named `topic_recreated` with the old and the new id. Stateful
//! queries keep state per batch in `state/`; a batch kwire writes has no state version, so use
//! this store to move stateless queries (the Kafka-to-files jobs of the seeds).

pub mod checkpoint;
pub mod log;
mod offset_store;
pub mod sink;
pub mod topic_ids;

pub use offset_store::spark_error;

use std::fmt;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use ::offset_store::StoredOffset;

use crate::file::lock;
use crate::file::replace::{self, Install, Ownership};
use crate::FileStoreError;
use checkpoint::Checkpoint;
use log::{OffsetsFile, SourceLine};

/// How recent a batch file must be for a save to take the query as running.
pub const DEFAULT_RUNNING_WINDOW: Duration = Duration::from_secs(10);
/// How long a save waits for another kwire writer's lock, unless set with
/// [`SparkStore::timeout`].
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The name of kwire's writers' lock in the checkpoint folder.
pub const LOCK_FILE: &str = ".kwire.lock";

/// Why the Spark store could not load or save; each names the file it concerns.
#[derive(Debug)]
#[non_exhaustive]
pub enum SparkStoreError {
    /// The path is not a Structured Streaming checkpoint folder.
    NotACheckpoint {
        /// The path given.
        path: PathBuf,
        /// Why not.
        reason: String,
    },
    /// A file of the checkpoint is damaged, foreign or half written.
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The 1-based line, when the problem is on one.
        line: Option<usize>,
        /// What is wrong.
        reason: String,
    },
    /// A file was written by a newer Spark than this kwire reads.
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: u32,
        /// The newest this kwire reads.
        newest: u32,
    },
    /// A link, folder or special file where Spark keeps a regular file.
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What is there.
        kind: &'static str,
    },
    /// A file over the size limit.
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
        /// The limit in bytes.
        max: u64,
    },
    /// The file system failed.
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The operating system's error.
        source: io::Error,
    },
    /// The query looks alive: `file` was written `age` ago. Nothing was written.
    QueryRunning {
        /// The newest batch file.
        file: PathBuf,
        /// How long ago it was written.
        age: Duration,
        /// The window within which a write counts as the query running.
        window: Duration,
    },
    /// What was to be saved does not fit the checkpoint (a topic no Kafka source reads);
    /// nothing was written.
    Invalid {
        /// The checkpoint folder.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The file sink's log (`--spark-sink`) is missing, foreign, damaged or already has the
    /// batch to write; nothing was written.
    Sink {
        /// The file or folder.
        path: PathBuf,
        /// The 1-based line, when the problem is on one.
        line: Option<usize>,
        /// What is wrong.
        reason: String,
    },
    /// The writers' lock or a batch file could not be written (from the file store's helpers).
    Write(FileStoreError),
}

impl fmt::Display for SparkStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotACheckpoint { path, reason } => write!(f, "{} is not a Spark checkpoint: {reason}", path.display()),
            Self::Corrupt { path, line: Some(line), reason } => {
                write!(f, "Spark checkpoint file {} line {line}: {reason}; nothing written", path.display())
            }
            Self::Corrupt { path, line: None, reason } => {
                write!(f, "Spark checkpoint file {}: {reason}; nothing written", path.display())
            }
            Self::UnsupportedVersion { path, found, newest } => write!(
                f,
                "Spark checkpoint file {} line 1: log version v{found} is newer than this kwire reads (up to v{newest})",
                path.display()
            ),
            Self::NotRegular { path, kind } => {
                write!(f, "{} is a {kind}, not a regular file: refusing to use it", path.display())
            }
            Self::TooLarge { path, size, max } => {
                write!(f, "Spark checkpoint file {} is {size} bytes, over the limit of {max}", path.display())
            }
            Self::Io { path, op, source } => write!(f, "cannot {op} {}: {source}", path.display()),
            Self::QueryRunning { file, age, window } => write!(
                f,
                "the query looks like it is running: {} was written {:.1} s ago (less than {} s); stop the \
                 query and try again, or pass --force to write anyway; nothing written",
                file.display(),
                age.as_secs_f64(),
                window.as_secs()
            ),
            Self::Invalid { path, reason } => write!(f, "nothing written to checkpoint {}: {reason}", path.display()),
            Self::Sink { path, line: Some(line), reason } => {
                write!(f, "Spark file sink log {} line {line}: {reason}; nothing written", path.display())
            }
            Self::Sink { path, line: None, reason } => {
                write!(f, "Spark file sink log {}: {reason}; nothing written", path.display())
            }
            Self::Write(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SparkStoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Write(e) => Some(e),
            _ => None,
        }
    }
}

impl From<FileStoreError> for SparkStoreError {
    fn from(e: FileStoreError) -> Self {
        Self::Write(e)
    }
}

/// A Structured Streaming checkpoint folder as an offset store.
#[derive(Debug, Clone)]
pub struct SparkStore {
    dir: PathBuf,
    timeout: Duration,
    force: bool,
    running_window: Duration,
    sink: Option<FileSink>,
}

/// The query's file sink, whose log every save keeps in step ([`sink`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSink {
    /// The sink's output folder (its `path` option), which holds `_spark_metadata/`.
    pub output: PathBuf,
    /// `spark.sql.streaming.fileSink.log.compactInterval` as the query runs with it; the log's
    /// own `.compact` files take precedence, as in Spark.
    pub compact_interval: u32,
    /// The sink's `retention` option, applied as Spark applies it when a batch kwire writes is
    /// a compaction batch ([`sink::retention`]); `None` keeps every entry.
    pub retention: Option<sink::Retention>,
}

impl SparkStore {
    /// The checkpoint at `dir`, with the defaults ([`DEFAULT_TIMEOUT`],
    /// [`DEFAULT_RUNNING_WINDOW`], no force). Nothing is opened until a load or save.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            timeout: DEFAULT_TIMEOUT,
            force: false,
            running_window: DEFAULT_RUNNING_WINDOW,
            sink: None,
        }
    }

    /// Every save also writes the file sink's log entry for the new batch (and any batch
    /// before it the log lacks), between the offsets and the commit file, as Spark does.
    #[must_use]
    pub fn file_sink(mut self, sink: Option<FileSink>) -> Self {
        self.sink = sink;
        self
    }

    /// How long a save waits for another kwire writer's lock.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Writes even when the query looks alive.
    #[must_use]
    pub fn force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }

    /// How recent a batch file must be for a save to take the query as running.
    #[must_use]
    pub fn running_window(mut self, window: Duration) -> Self {
        self.running_window = window;
        self
    }

    /// The checkpoint folder.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The checkpoint as read now: committed batch, pending batch, each source.
    pub fn describe(&self) -> Result<Checkpoint, SparkStoreError> {
        checkpoint::read(&self.dir)
    }

    /// The Kafka offsets the query resumes from (see the module doc), every source together,
    /// each with the topic id kwire recorded for its topic, if any ([`topic_ids`]).
    pub fn load(&self) -> Result<Vec<StoredOffset>, SparkStoreError> {
        let ckpt = self.describe()?;
        let ids = topic_ids::applicable(topic_ids::read(&self.dir)?, ckpt.committed.as_ref().map(|b| b.id));
        let mut offsets = stored_offsets(&ckpt);
        for o in &mut offsets {
            o.topic_id = ids.get(&o.topic).copied();
        }
        Ok(offsets)
    }

    /// Writes batch `N+1` with `offsets` changed (see the module doc) and reads it back.
    pub fn save(&self, offsets: &[StoredOffset]) -> Result<(), SparkStoreError> {
        // Refuse a path that is no checkpoint before creating the lock file in it.
        checkpoint::read(&self.dir)?;
        let deadline = Instant::now().checked_add(self.timeout);
        let _lock = lock::acquire(&self.dir.join(LOCK_FILE), 0o644, None, deadline, self.timeout)?;
        let ckpt = checkpoint::read(&self.dir)?;
        if !self.force {
            self.refuse_if_running(&ckpt)?;
        }
        let sources = apply(&ckpt, offsets)?;
        // Read before anything is written: a damaged side file stops the save here.
        let side = topic_ids::read(&self.dir)?;
        let ids = ids_to_record(side, ckpt.committed.as_ref().map(|b| b.id), &sources, offsets);
        let metadata = ckpt
            .committed
            .as_ref()
            .or(ckpt.pending.as_ref())
            .map(|b| b.offsets.metadata.clone())
            .unwrap_or_default();
        let next = ckpt.newest_id.map_or(Some(0), |n| n.checked_add(1)).ok_or_else(|| {
            SparkStoreError::Invalid { path: self.dir.clone(), reason: "the batch ids are exhausted".into() }
        })?;
        // A commit file for a batch that has no offsets file is not Spark's doing: refuse it
        // rather than pair it with the batch written here.
        let stray = self.dir.join("commits").join(next.to_string());
        if std::fs::symlink_metadata(&stray).is_ok() {
            return Err(SparkStoreError::Corrupt {
                path: stray,
                line: None,
                reason: format!("a commit file for batch {next}, which has no offsets file"),
            });
        }
        // Planned (and the log checked) before anything is written.
        let clock = sink::retention::epoch_millis(SystemTime::now());
        let sink_entries = self
            .sink
            .as_ref()
            .map(|s| sink::plan(&s.output, s.compact_interval, s.retention, next, clock))
            .transpose()?;
        let text = log::render_offsets(&OffsetsFile { metadata, sources });
        let commit = ckpt.commit_text.clone().unwrap_or_else(|| log::DEFAULT_COMMIT.to_owned());
        self.write_new(&ckpt, "offsets", next, text.as_bytes())?;
        // Spark's order: the sink's entry after the offsets, before the commit. Cut between
        // the two, the query re-runs batch `next`, and its sink skips it as already written.
        if let (Some(s), Some(entries)) = (&self.sink, &sink_entries) {
            sink::write(&s.output, entries)?;
        }
        self.write_new(&ckpt, "commits", next, commit.as_bytes())?;
        // After the commit file: a save cut before this line leaves the previous side file,
        // whose ids still describe the topics (its batch is older than the one just written).
        topic_ids::write(&self.dir, &topic_ids::TopicIds { batch: next, ids })?;
        let now = stored_offsets(&checkpoint::read(&self.dir)?);
        ::offset_store::check_read_back("spark", offsets, &now).map_err(|e| SparkStoreError::Invalid {
            path: self.dir.clone(),
            reason: format!("batch {next} written, but reading it back: {e}"),
        })
    }

    fn refuse_if_running(&self, ckpt: &Checkpoint) -> Result<(), SparkStoreError> {
        let newest = [
            ckpt.pending.as_ref().map(|b| ("offsets", b.id, b.modified)),
            ckpt.committed.as_ref().map(|b| ("commits", b.id, ckpt.commit_modified)),
        ];
        let now = SystemTime::now();
        for (folder, id, modified) in newest.into_iter().flatten() {
            let Some(age) = modified.and_then(|m| now.duration_since(m).ok()) else { continue };
            if age < self.running_window {
                return Err(SparkStoreError::QueryRunning {
                    file: self.dir.join(folder).join(id.to_string()),
                    age,
                    window: self.running_window,
                });
            }
        }
        Ok(())
    }

    /// Writes `folder/id` as a new file, with the permissions and group of the folder's other
    /// batch files (the committed one's), never replacing one that exists.
    fn write_new(
        &self,
        ckpt: &Checkpoint,
        folder: &str,
        id: u64,
        bytes: &[u8],
    ) -> Result<(), SparkStoreError> {
        let dir = self.dir.join(folder);
        std::fs::create_dir_all(&dir).map_err(|source| SparkStoreError::Io {
            path: dir.clone(),
            op: "create",
            source,
        })?;
        let name = id.to_string();
        let sibling = ckpt.committed.as_ref().map(|b| dir.join(b.id.to_string()));
        let owner = match sibling.and_then(|s| std::fs::symlink_metadata(s).ok()) {
            Some(m) => Ownership { mode: m.mode() & 0o777, owner: Some((m.uid(), m.gid())) },
            None => Ownership { mode: 0o644, owner: None },
        };
        let target = dir.join(&name);
        replace::install(&dir, name.as_ref(), &target, bytes, owner, Install::CreateNew)?;
        Ok(())
    }
}

/// The ids the side file holds after a save of `offsets` as batch `sources`: a saved offset's
/// id, or for a topic the save did not name (or named without an id) the previous side file's,
/// when it applied to the batch the save started from. Only topics of `sources`.
fn ids_to_record(
    side: Option<topic_ids::TopicIds>,
    committed: Option<u64>,
    sources: &[SourceLine],
    offsets: &[StoredOffset],
) -> std::collections::BTreeMap<String, kafka_wire::protocol::Uuid> {
    let mut ids = topic_ids::applicable(side, committed);
    for o in offsets {
        if let Some(id) = o.topic_id.filter(|id| !id.is_zero()) {
            ids.insert(o.topic.clone(), id);
        }
    }
    let topics: std::collections::BTreeSet<&str> =
        checkpoint::kafka_entries(sources).map(|(_, topic, _, _)| topic).collect();
    ids.retain(|topic, _| topics.contains(topic.as_str()));
    ids
}

/// The stored offsets of every Kafka source of `ckpt`, timestamped with the commit file.
fn stored_offsets(ckpt: &Checkpoint) -> Vec<StoredOffset> {
    let at = ckpt
        .commit_modified
        .and_then(|m| m.duration_since(SystemTime::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_millis()).ok());
    ckpt.kafka_offsets()
        .map(|(_, topic, partition, offset)| StoredOffset {
            topic: topic.to_owned(),
            partition,
            offset,
            leader_epoch: None,
            topic_id: None,
            commit_timestamp_ms: at,
        })
        .collect()
}

/// The sources of the batch to write: the resume point with `offsets` changed. A topic goes to
/// the Kafka source that reads it; a topic no Kafka source reads, or one two sources read, is
/// [`SparkStoreError::Invalid`].
fn apply(ckpt: &Checkpoint, offsets: &[StoredOffset]) -> Result<Vec<SourceLine>, SparkStoreError> {
    let mut sources = ckpt.sources.clone();
    // Before any committed batch, a source without starting offsets keeps the pending batch's
    // line (another kind of source, or `-`).
    if let (None, Some(pending)) = (&ckpt.committed, &ckpt.pending) {
        sources = pending
            .offsets
            .sources
            .iter()
            .enumerate()
            .map(|(i, line)| match sources.get(i) {
                Some(start @ SourceLine::Kafka(_)) => start.clone(),
                _ => line.clone(),
            })
            .collect();
    }
    let invalid = |reason: String| SparkStoreError::Invalid { path: ckpt.dir.clone(), reason };
    for o in offsets {
        let readers: Vec<usize> = sources
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, SourceLine::Kafka(k) if k.contains_key(&o.topic)))
            .map(|(i, _)| i)
            .collect();
        let index = match readers.as_slice() {
            [i] => *i,
            [] => {
                let kafka: Vec<usize> =
                    (0..sources.len()).filter(|i| matches!(sources[*i], SourceLine::Kafka(_))).collect();
                return Err(invalid(format!(
                    "topic `{}` is in no Kafka source of the query ({} Kafka source(s) with offsets); Spark would not read it",
                    o.topic,
                    kafka.len()
                )));
            }
            many => {
                return Err(invalid(format!(
                    "topic `{}` is read by sources {many:?}: say which by writing one",
                    o.topic
                )))
            }
        };
        if let SourceLine::Kafka(k) = &mut sources[index] {
            k.entry(o.topic.clone()).or_default().insert(o.partition, o.offset);
        }
    }
    Ok(sources)
}
