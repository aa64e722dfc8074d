//! The writers' lock: an exclusive `flock` on `.NAME.lock` beside the store file, taken before
//! a writer reads the file it is about to replace and held until the new file is in place and
//! read back. Readers take no lock: the file is only ever replaced by `rename`, so a reader
//! sees the old document or the new one.
//!
//! The lock file is created once, empty, and never removed (removing it would let two writers
//! lock two different files). It is opened without following a symbolic link and without
//! blocking (a FIFO planted under its name cannot hang the writer) and must be a regular file.
//! Only the lock matters, not who owns the file: a stranger who can hold it can delay writers
//! until their timeout, never make them write elsewhere.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::{flock, FlockOperation};

use super::{file_kind, no_follow_flags, FileStoreError};

/// The longest pause between two attempts at a held lock.
const MAX_BACKOFF: Duration = Duration::from_millis(20);

/// A held lock; dropping it (closing the file) releases it.
#[derive(Debug)]
pub(crate) struct WriterLock {
    _file: File,
}

/// `.NAME.lock` in `dir`, for the store file called `name`.
pub(crate) fn lock_path(dir: &Path, name: &std::ffi::OsStr) -> PathBuf {
    let mut lock = OsString::from(".");
    lock.push(name);
    lock.push(".lock");
    dir.join(lock)
}

/// Takes the lock at `path`, creating the file with `mode` (and group `gid`, where allowed)
/// if it is missing; waits while another writer holds it, until `deadline`.
pub(crate) fn acquire(
    path: &Path,
    mode: u32,
    gid: Option<u32>,
    deadline: Option<Instant>,
    timeout: Duration,
) -> Result<WriterLock, FileStoreError> {
    let io_error = |op: &'static str| {
        move |source: io::Error| {
            if source.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
                FileStoreError::Symlink { path: path.to_path_buf() }
            } else {
                FileStoreError::LockIo { lock: path.to_path_buf(), op, source }
            }
        }
    };
    let created = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(mode)
        .custom_flags(no_follow_flags())
        .open(path);
    let file = match created {
        Ok(file) => file,
        // Someone else's lock file, writable only by them (or `fs.protected_regular` refusing
        // O_CREAT on it in a sticky directory): a read-only descriptor locks just as well.
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => OpenOptions::new()
            .read(true)
            .custom_flags(no_follow_flags())
            .open(path)
            .map_err(io_error("open"))?,
        Err(e) => return Err(io_error("create")(e)),
    };
    let meta = file.metadata().map_err(io_error("inspect"))?;
    if let Some(kind) = file_kind(meta.file_type()) {
        return Err(FileStoreError::NotRegular { path: path.to_path_buf(), kind });
    }
    if let Some(gid) = gid.filter(|g| *g != meta.gid()) {
        // Best effort: the lock file only needs to be openable by the store's other writers.
        let _ = std::os::unix::fs::fchown(&file, None, Some(gid));
    }
    let mut backoff = Duration::from_millis(1);
    loop {
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(WriterLock { _file: file }),
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let now = Instant::now();
                if deadline.is_some_and(|d| now >= d) {
                    return Err(FileStoreError::Locked { lock: path.to_path_buf(), timeout });
                }
                let left = deadline.map_or(backoff, |d| d - now);
                std::thread::sleep(backoff.min(left));
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            Err(e) => return Err(io_error("lock")(e.into())),
        }
    }
}
