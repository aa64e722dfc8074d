//! Replacing the store file: a new temporary file with an unpredictable name, created
//! exclusively (`O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC`) in the store's folder, given the old
//! file's permission bits and group, written, fsynced, renamed over the store file, and the
//! folder fsynced. A crash at any point leaves the old file or the new one, never a torn one;
//! a planted file or symbolic link under a temporary name makes the creation fail (and the
//! next attempt picks another name), never a write elsewhere.
//!
//! Temporary files are named `.NAME.tmp-` followed by 16 lowercase hex digits from the
//! kernel's random source. One left by a killed writer is removed by the next writer, under
//! the lock, when it is a regular file owned by that writer's user and older than
//! [`STALE_TEMP_AGE`].

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{no_follow_flags, FileStoreError};

/// How old a leftover temporary file must be before a writer removes it. Writers of this
/// version hold the lock while their temporary file exists, so any found under the lock is a
/// dead writer's; the age spares a writer that takes no lock (an older kwire).
pub const STALE_TEMP_AGE: Duration = Duration::from_secs(600);

/// Random hex digits in a temporary name.
const RANDOM_DIGITS: usize = 16;
/// Tries at a fresh temporary name when one is taken.
const NAME_TRIES: usize = 8;

/// Who the new file belongs to and what it may be read by.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ownership {
    /// Permission bits (the lower 12 bits).
    pub mode: u32,
    /// The old file's owner and group, to carry over; `None` for a new store file.
    pub owner: Option<(u32, u32)>,
}

fn temp_prefix(name: &OsStr) -> OsString {
    let mut prefix = OsString::from(".");
    prefix.push(name);
    prefix.push(".tmp-");
    prefix
}

fn random_suffix() -> io::Result<String> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut bytes = [0u8; RANDOM_DIGITS / 2];
    let mut filled = 0;
    while filled < bytes.len() {
        match rustix::rand::getrandom(&mut bytes[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(bytes
        .iter()
        .flat_map(|b| [char::from(HEX[usize::from(b >> 4)]), char::from(HEX[usize::from(b & 15)])])
        .collect())
}

/// Whether `file_name` is one of this writer's temporary names for the store file `name`.
fn is_temp_name(file_name: &OsStr, prefix: &OsStr) -> bool {
    file_name.as_bytes().strip_prefix(prefix.as_bytes()).is_some_and(|rest| {
        rest.len() == RANDOM_DIGITS && rest.iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    })
}

/// Removes the temporary files of `name` in `dir` that a killed writer left: only names of
/// our pattern, only regular files (never following a link), only ours, only old ones.
/// Best effort: a file that cannot be inspected or removed stays. Call it under the lock.
pub(crate) fn remove_stale_temps(dir: &Path, name: &OsStr) {
    let prefix = temp_prefix(name);
    let Ok(entries) = fs::read_dir(dir) else { return };
    let me = rustix::process::geteuid().as_raw();
    let now = SystemTime::now();
    for entry in entries.flatten() {
        if !is_temp_name(&entry.file_name(), &prefix) {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = fs::symlink_metadata(&path) else { continue };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|a| a >= STALE_TEMP_AGE);
        if meta.file_type().is_file() && meta.uid() == me && old {
            let _ = fs::remove_file(&path);
        }
    }
}

/// Whether the rename may replace a file already at the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Install {
    /// Replace what is there (the file store's document).
    Replace,
    /// Fail with `AlreadyExists` when something is there (`renameat2(RENAME_NOREPLACE)`): a
    /// Spark batch file is written once, and a query that wrote the same batch id first wins.
    CreateNew,
}

/// Puts `bytes` at `target` (in `dir`, named `name`) as described in the module doc.
pub(crate) fn replace(
    dir: &Path,
    name: &OsStr,
    target: &Path,
    bytes: &[u8],
    owner: Ownership,
) -> Result<(), FileStoreError> {
    install(dir, name, target, bytes, owner, Install::Replace)
}

/// [`replace`], or with [`Install::CreateNew`] the same steps ending in a rename that never
/// replaces an existing file.
pub(crate) fn install(
    dir: &Path,
    name: &OsStr,
    target: &Path,
    bytes: &[u8],
    owner: Ownership,
    how: Install,
) -> Result<(), FileStoreError> {
    let prefix = temp_prefix(name);
    let (tmp, mut file) = create_temp(dir, &prefix)?;
    let io = |op: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| FileStoreError::Io { path, op, source }
    };
    let result = (|| {
        carry_over(&file, &tmp, owner)?;
        file.write_all(bytes).map_err(io("write", &tmp))?;
        file.sync_all().map_err(io("fsync", &tmp))?;
        drop(file);
        match how {
            Install::Replace => fs::rename(&tmp, target).map_err(io("rename into place", target))?,
            Install::CreateNew => {
                use rustix::fs::{renameat_with, RenameFlags, CWD};
                renameat_with(CWD, &tmp, CWD, target, RenameFlags::NOREPLACE)
                    .map_err(io::Error::from)
                    .map_err(io("rename into place (no replace)", target))?;
            }
        }
        File::open(dir).and_then(|d| d.sync_all()).map_err(io("fsync the folder of", target))
    })();
    if result.is_err() {
        // Our own file (created exclusively above): remove it, whatever it failed at.
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn create_temp(dir: &Path, prefix: &OsStr) -> Result<(PathBuf, File), FileStoreError> {
    let mut last = None;
    for _ in 0..NAME_TRIES {
        let suffix = random_suffix().map_err(|source| FileStoreError::Io {
            path: dir.to_path_buf(),
            op: "draw a random name in",
            source,
        })?;
        let mut file_name = prefix.to_os_string();
        file_name.push(suffix);
        let tmp = dir.join(file_name);
        let opened = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(no_follow_flags())
            .open(&tmp);
        match opened {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some((tmp, e)),
            Err(source) => return Err(FileStoreError::Io { path: tmp, op: "create", source }),
        }
    }
    let (path, source) = last.expect("NAME_TRIES > 0");
    Err(FileStoreError::Io { path, op: "create (every random name was taken)", source })
}

/// Gives the new file the old one's group (and owner, when running as root) and permission
/// bits. A group that cannot be carried over is an error only when the bits grant the group
/// anything: otherwise the group decides nothing.
fn carry_over(file: &File, tmp: &Path, owner: Ownership) -> Result<(), FileStoreError> {
    if let Some((uid, gid)) = owner.owner {
        let meta = file.metadata().map_err(|source| FileStoreError::Io {
            path: tmp.to_path_buf(),
            op: "inspect",
            source,
        })?;
        let root = rustix::process::geteuid().is_root();
        let want_uid = (root && uid != meta.uid()).then_some(uid);
        let want_gid = (gid != meta.gid()).then_some(gid);
        if want_uid.is_some() || want_gid.is_some() {
            if let Err(source) = std::os::unix::fs::fchown(file, want_uid, want_gid) {
                if owner.mode & 0o070 != 0 {
                    return Err(FileStoreError::Io {
                        path: tmp.to_path_buf(),
                        op: "give the old file's group (its permissions grant the group access) to",
                        source,
                    });
                }
            }
        }
    }
    file.set_permissions(fs::Permissions::from_mode(owner.mode & 0o7777)).map_err(|source| {
        FileStoreError::Io { path: tmp.to_path_buf(), op: "set the permissions of", source }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_random_pattern_counts_as_a_temporary_name() {
        let prefix = temp_prefix(OsStr::new("offsets.json"));
        assert!(is_temp_name(OsStr::new(".offsets.json.tmp-0123456789abcdef"), &prefix));
        for other in [
            ".offsets.json.tmp-0123456789ABCDEF",
            ".offsets.json.tmp-12345",
            ".offsets.json.tmp-0123456789abcdef0",
            ".offsets.json.lock",
            ".other.json.tmp-0123456789abcdef",
            "offsets.json",
        ] {
            assert!(!is_temp_name(OsStr::new(other), &prefix), "{other}");
        }
    }

    #[test]
    fn create_new_never_replaces_a_file_another_writer_put_there_first() {
        let dir = std::env::temp_dir().join(format!("kwire-replace-create-new-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let target = dir.join("7");
        fs::write(&target, b"theirs").unwrap();
        let owner = Ownership { mode: 0o644, owner: None };
        let err = install(&dir, OsStr::new("7"), &target, b"ours", owner, Install::CreateNew).unwrap_err();
        assert!(
            matches!(&err, FileStoreError::Io { source, .. } if source.kind() == io::ErrorKind::AlreadyExists),
            "{err}"
        );
        assert_eq!(fs::read(&target).unwrap(), b"theirs");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "the temporary file is removed");
        install(&dir, OsStr::new("8"), &dir.join("8"), b"ours", owner, Install::CreateNew).unwrap();
        assert_eq!(fs::read(dir.join("8")).unwrap(), b"ours");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn random_names_differ() {
        let a = random_suffix().unwrap();
        let b = random_suffix().unwrap();
        assert_eq!(a.len(), RANDOM_DIGITS);
        assert_ne!(a, b);
    }
}
