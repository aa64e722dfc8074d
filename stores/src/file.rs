//! The file offset store: one JSON document holding every partition of one group.
//!
//! ```json
//! {"format": "kwire-offsets", "version": 1, "group": "my-group",
//!  "offsets": [{"topic": "t", "partition": 0, "offset": 42, "leader_epoch": 3,
//!               "topic_id": "6qgwkxhqQAivANSed-tpbg", "commit_timestamp_ms": 1732874400000}]}
//! ```
//!
//! What it guarantees, for a file in a folder other users may write to as well:
//!
//! - **No lost update.** Writers serialise on an exclusive `flock` of `.NAME.lock` beside the
//!   file (`file/lock.rs`); under it they read the file again, merge, replace it and read their own
//!   entries back. Concurrent writers all land, or one waits until its timeout and fails with
//!   [`FileStoreError::Locked`] naming the lock file, having written nothing.
//! - **No torn or empty file.** The file is replaced by `rename` from a fully written and
//!   fsynced temporary file, then the folder is fsynced (`file/replace.rs`); readers take no lock and
//!   see the old document or the new one.
//! - **No write elsewhere.** The temporary file has an unpredictable name and is created with
//!   `O_CREAT|O_EXCL|O_NOFOLLOW`; the lock file is opened with `O_NOFOLLOW|O_NONBLOCK` and
//!   must be a regular file. A store path that is a symbolic link is refused (and never
//!   replaced) unless [`FileStore::follow_symlinks`] allows it, in which case the link's target
//!   is read and replaced. A FIFO, socket, device or folder at the path is refused before it is
//!   opened.
//! - **Permissions kept.** The new file gets the old one's permission bits and group (and its
//!   owner when the writer is root); a new store file is created `0600`
//!   ([`FileStore::new_file_mode`] to change that), whatever the umask.
//! - **Bounded.** Files over [`MAX_FILE_SIZE`] are refused; loading is linear in the entries and
//!   stops at the store's timeout ([`FileStore::timeout`]), as does waiting for the lock.
//! - **Damage is an error.** A corrupt, foreign or newer-format file is an error naming the file
//!   and the problem, never "nothing stored".

mod document;
pub(crate) mod lock;
mod offset_store;
pub(crate) mod replace;

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use offset_store::file_error;
pub use replace::STALE_TEMP_AGE;

use ::offset_store::StoredOffset;
use document::Problem;

/// The `format` field every kwire offset file carries.
pub const FORMAT: &str = "kwire-offsets";
/// The newest format version this build reads and the one it writes.
pub const VERSION: u32 = 1;
/// The largest offset file read or written: 256 MiB, about 1.3 million entries as kwire writes
/// them (with topic id, leader epoch and timestamp), more without those fields.
pub const MAX_FILE_SIZE: u64 = 256 * 1024 * 1024;
/// How much is read between two looks at the clock.
const READ_CHUNK: u64 = 4 * 1024 * 1024;
/// How long a load or a save may take, lock wait included, unless set with
/// [`FileStore::timeout`].
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The permission bits of a store file kwire creates, unless set with
/// [`FileStore::new_file_mode`].
pub const DEFAULT_NEW_FILE_MODE: u32 = 0o600;

/// Why the file store could not load or save; each names the file (or its lock file).
#[derive(Debug)]
#[non_exhaustive]
pub enum FileStoreError {
    /// The file could not be read or written.
    Io {
        /// The store file (or the file the error concerns).
        path: PathBuf,
        /// What was being done (`read`, `rename`, ...).
        op: &'static str,
        /// The operating system's error.
        source: io::Error,
    },
    /// The file is not valid JSON, or not a kwire offset file, or holds an invalid entry.
    Corrupt {
        /// The store file (or the file the error concerns).
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The file was written by a newer kwire.
    UnsupportedVersion {
        /// The store file (or the file the error concerns).
        path: PathBuf,
        /// The format version the file declares.
        version: u32,
    },
    /// The file holds another group's offsets.
    WrongGroup {
        /// The store file (or the file the error concerns).
        path: PathBuf,
        /// The group asked for.
        expected: String,
        /// The group the file holds.
        found: String,
    },
    /// The store path (or the lock file) is a symbolic link, and links are not followed.
    Symlink {
        /// The store file (or the file the error concerns).
        path: PathBuf,
    },
    /// The store path (or the lock file) is a FIFO, socket, device or folder.
    NotRegular {
        /// The store file (or the file the error concerns).
        path: PathBuf,
        /// What is there instead (`FIFO`, `socket`, `folder`, ...).
        kind: &'static str,
    },
    /// The file is larger than [`MAX_FILE_SIZE`] (or a save would make it so).
    TooLarge {
        /// The store file (or the file the error concerns).
        path: PathBuf,
        /// The file's size (or the size a save would reach), in bytes.
        size: u64,
        /// The limit, in bytes.
        max: u64,
    },
    /// The writers' lock file could not be created, opened or locked; nothing was written.
    LockIo {
        /// The writers' lock file.
        lock: PathBuf,
        /// What was being done (`read`, `rename`, ...).
        op: &'static str,
        /// The operating system's error.
        source: io::Error,
    },
    /// Another writer held the lock for the whole timeout; nothing was written.
    Locked {
        /// The writers' lock file.
        lock: PathBuf,
        /// How long was waited.
        timeout: Duration,
    },
    /// What was to be written is not a valid set of entries (a partition given twice, a
    /// negative offset or partition, an empty topic); nothing was written.
    Invalid {
        /// The store file (or the file the error concerns).
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Reading the file took longer than the timeout.
    TimedOut {
        /// The store file (or the file the error concerns).
        path: PathBuf,
        /// How long was waited.
        timeout: Duration,
    },
    /// After writing, the file does not hold what this writer wrote for this partition.
    ReadBackMismatch {
        /// The store file (or the file the error concerns).
        path: PathBuf,
        /// The partition's topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The offset written.
        wrote: i64,
        /// What the file held afterwards (`None`: nothing).
        read: Option<i64>,
    },
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
            Self::Symlink { path } => write!(
                f,
                "{} is a symbolic link: kwire neither follows nor replaces links to offset files; \
                 name the file it points to",
                path.display()
            ),
            Self::NotRegular { path, kind } => {
                write!(f, "{} is a {kind}, not a regular file: refusing to use it", path.display())
            }
            Self::TooLarge { path, size, max } => write!(
                f,
                "offset file {} would be {size} bytes, over the limit of {max} bytes",
                path.display()
            ),
            Self::LockIo { lock, op, source } => {
                write!(
                    f,
                    "cannot {op} the writers' lock file {}: {source}; nothing was written",
                    lock.display()
                )
            }
            Self::Locked { lock, timeout } => write!(
                f,
                "another writer held the lock {} for the whole timeout ({timeout:?}); nothing was \
                 written",
                lock.display()
            ),
            Self::Invalid { path, reason } => {
                write!(f, "nothing written to offset file {}: {reason}", path.display())
            }
            Self::TimedOut { path, timeout } => {
                write!(f, "reading offset file {} took longer than the timeout ({timeout:?})", path.display())
            }
            Self::ReadBackMismatch { path, topic, partition, wrote, read } => {
                write!(
                    f,
                    "offset file {}: read-back mismatch for {topic}:{partition}: wrote {wrote}, ",
                    path.display()
                )?;
                match read {
                    Some(read) => write!(f, "read {read}"),
                    None => f.write_str("read nothing"),
                }
            }
        }
    }
}

impl std::error::Error for FileStoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } | Self::LockIo { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`: how the store opens every file it did not just
/// create, so a link is not followed and a FIFO does not block the open.
pub(crate) fn no_follow_flags() -> i32 {
    use rustix::fs::OFlags;
    (OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC).bits() as i32
}

/// What a file type is when it is not a regular file.
pub(crate) fn file_kind(t: fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if t.is_file() {
        None
    } else if t.is_symlink() {
        Some("symbolic link")
    } else if t.is_dir() {
        Some("folder")
    } else if t.is_fifo() {
        Some("FIFO")
    } else if t.is_socket() {
        Some("socket")
    } else if t.is_char_device() {
        Some("character device")
    } else if t.is_block_device() {
        Some("block device")
    } else {
        Some("special file")
    }
}

/// A group's offsets in one file.
#[derive(Debug, Clone)]
pub struct FileStore {
    path: PathBuf,
    timeout: Duration,
    follow_symlinks: bool,
    new_file_mode: u32,
}

/// The file a load or save works on, once the path is checked.
struct Target {
    /// The store file (a link's target when links are followed).
    path: PathBuf,
    dir: PathBuf,
    name: OsString,
}

/// The store file as read: its bytes, and the ownership to carry over to its replacement.
struct Existing {
    bytes: Vec<u8>,
    mode: u32,
    uid: u32,
    gid: u32,
}

impl FileStore {
    /// The store at `path`, with the defaults: links refused, new files `0600`,
    /// [`DEFAULT_TIMEOUT`]. Nothing is opened until a load or save.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            timeout: DEFAULT_TIMEOUT,
            follow_symlinks: false,
            new_file_mode: DEFAULT_NEW_FILE_MODE,
        }
    }

    /// How long one load or save may take, waiting for the lock included (default
    /// [`DEFAULT_TIMEOUT`]). A timeout too large for the clock means no limit.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Whether a symbolic link at the store path is followed: its target is read, locked
    /// beside and replaced (the link itself stays). Off by default: a link is refused.
    #[must_use]
    pub fn follow_symlinks(mut self, follow: bool) -> Self {
        self.follow_symlinks = follow;
        self
    }

    /// The permission bits of the store file when a save creates it (default `0600`). An
    /// existing file keeps its own.
    #[must_use]
    pub fn new_file_mode(mut self, mode: u32) -> Self {
        self.new_file_mode = mode & 0o777;
        self
    }

    /// The store file's path, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn deadline(&self) -> Option<Instant> {
        Instant::now().checked_add(self.timeout)
    }

    /// The offsets stored for `group`; an absent file means nothing is stored yet.
    pub fn load(&self, group: &str) -> Result<Vec<StoredOffset>, FileStoreError> {
        let deadline = self.deadline();
        let target = self.target()?;
        match self.read(&target.path, deadline)? {
            None => Ok(Vec::new()),
            Some(existing) => self.decode(&target.path, &existing.bytes, group, deadline),
        }
    }

    /// Replaces everything stored for `group` with `offsets`, under the writers' lock.
    pub fn save(&self, group: &str, offsets: &[StoredOffset]) -> Result<(), FileStoreError> {
        self.write_locked(group, |_| offsets.to_vec(), offsets)
    }

    /// Stores `offsets` for `group` (at most one per partition), keeping the other partitions
    /// stored: under the writers' lock, reads the file, replaces the named partitions, writes
    /// it, and reads it back, failing with [`FileStoreError::ReadBackMismatch`] unless each of
    /// `offsets` reads back equal. Entries of other partitions are not compared, so a
    /// concurrent writer never makes this one fail.
    pub fn merge(&self, group: &str, offsets: &[StoredOffset]) -> Result<(), FileStoreError> {
        self.write_locked(
            group,
            |mut all| {
                let named: std::collections::HashSet<(&str, i32)> =
                    offsets.iter().map(|o| (o.topic.as_str(), o.partition)).collect();
                all.retain(|x| !named.contains(&(x.topic.as_str(), x.partition)));
                all.extend_from_slice(offsets);
                all
            },
            offsets,
        )
    }

    /// Under the lock: reads what is stored, lets `update` turn it into what to store, writes
    /// that, and reads `check` back.
    fn write_locked(
        &self,
        group: &str,
        update: impl FnOnce(Vec<StoredOffset>) -> Vec<StoredOffset>,
        check: &[StoredOffset],
    ) -> Result<(), FileStoreError> {
        let deadline = self.deadline();
        let target = self.target()?;
        // The lock file takes the store file's mode and group so its other writers can open it.
        let (mode, gid) = match fs::symlink_metadata(&target.path) {
            Ok(m) => (m.mode() & 0o777, Some(m.gid())),
            Err(_) => (self.new_file_mode, None),
        };
        let lock_path = lock::lock_path(&target.dir, &target.name);
        let _lock = lock::acquire(&lock_path, mode, gid, deadline, self.timeout)?;
        // Check the path again under the lock: it may have been swapped while this writer
        // waited. A followed link that now points elsewhere would leave the write unlocked.
        if self.target()?.path != target.path {
            return Err(FileStoreError::Io {
                path: self.path.clone(),
                op: "use",
                source: io::Error::other("the link now points to another file than the one locked"),
            });
        }
        replace::remove_stale_temps(&target.dir, &target.name);
        let existing = self.read(&target.path, deadline)?;
        let stored = match &existing {
            Some(e) => self.decode(&target.path, &e.bytes, group, deadline)?,
            None => Vec::new(),
        };
        let all = update(stored);
        document::check(&all, &|| false).map_err(|reason| FileStoreError::Invalid {
            path: target.path.clone(),
            reason: reason.unwrap_or_default(),
        })?;
        let bytes = document::encode(group, &all)
            .map_err(|e| FileStoreError::Corrupt { path: target.path.clone(), reason: e.to_string() })?;
        if bytes.len() as u64 > MAX_FILE_SIZE {
            return Err(FileStoreError::TooLarge {
                path: target.path.clone(),
                size: bytes.len() as u64,
                max: MAX_FILE_SIZE,
            });
        }
        let owner = match &existing {
            Some(e) => replace::Ownership { mode: e.mode, owner: Some((e.uid, e.gid)) },
            None => replace::Ownership { mode: self.new_file_mode, owner: None },
        };
        replace::replace(&target.dir, &target.name, &target.path, &bytes, owner)?;
        self.read_back(&target.path, group, check)
    }

    /// Reads the file back (no deadline: the write is done, and its outcome must be known)
    /// and compares `check`'s partitions only.
    fn read_back(&self, path: &Path, group: &str, check: &[StoredOffset]) -> Result<(), FileStoreError> {
        let now = match self.read(path, None)? {
            Some(e) => self.decode(path, &e.bytes, group, None)?,
            None => Vec::new(),
        };
        let by_partition: std::collections::HashMap<(&str, i32), &StoredOffset> =
            now.iter().map(|o| ((o.topic.as_str(), o.partition), o)).collect();
        for o in check {
            let read = by_partition.get(&(o.topic.as_str(), o.partition));
            if read != Some(&o) {
                return Err(FileStoreError::ReadBackMismatch {
                    path: path.to_path_buf(),
                    topic: o.topic.clone(),
                    partition: o.partition,
                    wrote: o.offset,
                    read: read.map(|r| r.offset),
                });
            }
        }
        Ok(())
    }

    /// Checks the store path without opening it: a link is refused (or resolved, when links
    /// are followed), anything but a regular file or nothing is refused.
    fn target(&self) -> Result<Target, FileStoreError> {
        let mut path = self.path.clone();
        match fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => {
                if !self.follow_symlinks {
                    return Err(FileStoreError::Symlink { path });
                }
                path = fs::canonicalize(&path).map_err(|source| FileStoreError::Io {
                    path: path.clone(),
                    op: "resolve the symbolic link",
                    source,
                })?;
                let m = fs::symlink_metadata(&path).map_err(|source| FileStoreError::Io {
                    path: path.clone(),
                    op: "inspect",
                    source,
                })?;
                if let Some(kind) = file_kind(m.file_type()) {
                    return Err(FileStoreError::NotRegular { path, kind });
                }
            }
            Ok(m) => {
                if let Some(kind) = file_kind(m.file_type()) {
                    return Err(FileStoreError::NotRegular { path, kind });
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(FileStoreError::Io { path, op: "inspect", source }),
        }
        let name = path.file_name().map(std::ffi::OsStr::to_os_string).ok_or_else(|| FileStoreError::Io {
            path: path.clone(),
            op: "use",
            source: io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"),
        })?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Ok(Target { path, dir, name })
    }

    /// The file's bytes and ownership, or `None` if it does not exist. Opened without
    /// following a link and without blocking, then checked to be a regular file within
    /// [`MAX_FILE_SIZE`] before a byte is read; the read stops at `deadline`.
    fn read(&self, path: &Path, deadline: Option<Instant>) -> Result<Option<Existing>, FileStoreError> {
        let io = |op: &'static str| {
            move |source: io::Error| {
                if source.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
                    FileStoreError::Symlink { path: path.to_path_buf() }
                } else {
                    FileStoreError::Io { path: path.to_path_buf(), op, source }
                }
            }
        };
        let mut file = match OpenOptions::new().read(true).custom_flags(no_follow_flags()).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io("read")(e)),
        };
        let meta = file.metadata().map_err(io("inspect"))?;
        if let Some(kind) = file_kind(meta.file_type()) {
            return Err(FileStoreError::NotRegular { path: path.to_path_buf(), kind });
        }
        if meta.len() > MAX_FILE_SIZE {
            return Err(FileStoreError::TooLarge {
                path: path.to_path_buf(),
                size: meta.len(),
                max: MAX_FILE_SIZE,
            });
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        loop {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(FileStoreError::TimedOut { path: path.to_path_buf(), timeout: self.timeout });
            }
            let n = (&mut file).take(READ_CHUNK).read_to_end(&mut bytes).map_err(io("read"))?;
            if bytes.len() as u64 > MAX_FILE_SIZE {
                // Grew while being read.
                return Err(FileStoreError::TooLarge {
                    path: path.to_path_buf(),
                    size: bytes.len() as u64,
                    max: MAX_FILE_SIZE,
                });
            }
            if n == 0 {
                break;
            }
        }
        Ok(Some(Existing { bytes, mode: meta.mode() & 0o7777, uid: meta.uid(), gid: meta.gid() }))
    }

    fn decode(
        &self,
        path: &Path,
        bytes: &[u8],
        group: &str,
        deadline: Option<Instant>,
    ) -> Result<Vec<StoredOffset>, FileStoreError> {
        document::decode(bytes, group, deadline).map_err(|p| match p {
            Problem::Corrupt(reason) => FileStoreError::Corrupt { path: path.to_path_buf(), reason },
            Problem::UnsupportedVersion(version) => {
                FileStoreError::UnsupportedVersion { path: path.to_path_buf(), version }
            }
            Problem::WrongGroup(found) => {
                FileStoreError::WrongGroup { path: path.to_path_buf(), expected: group.to_owned(), found }
            }
            Problem::TimedOut => FileStoreError::TimedOut { path: path.to_path_buf(), timeout: self.timeout },
        })
    }
}

/// Decodes `bytes` as a kwire offset file of `group`, with no deadline; `path` only names the
/// file in errors. What [`FileStore::load`] does once it has the bytes (for fuzzing and tools
/// that get the document from elsewhere).
pub fn decode(path: &Path, bytes: &[u8], group: &str) -> Result<Vec<StoredOffset>, FileStoreError> {
    FileStore::new(path).decode(path, bytes, group, None)
}

/// `offsets` as the document of `group` that [`FileStore::save`] writes: sorted by topic and
/// partition, pretty-printed, ending in a newline.
pub fn encode(group: &str, offsets: &[StoredOffset]) -> Vec<u8> {
    // Serialising strings and integers into memory cannot fail.
    document::encode(group, offsets).expect("an offset document serialises")
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_wire::protocol::Uuid;

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
