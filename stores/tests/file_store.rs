//! The file offset store against concurrent writers and a hostile folder (issue 19): lost
//! updates, planted links and special files, permissions, size and time bounds.
//!
//! Writers in other processes are this test binary run again with [`CHILD_ENV`] set: it then
//! runs only `child_writer_process`, which commits the partitions it is told to and exits.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use kafka_wire::protocol::Uuid;
use kwire_stores::file::{FileStore, FileStoreError, MAX_FILE_SIZE};
use offset_store::StoredOffset;
use proptest::prelude::*;

#[path = "support/compact_document.rs"]
mod compact_document;
use compact_document::compact_document;

/// Set to `PATH|GROUP|TOPIC|FIRST|COUNT|OFFSET` in a child writer process.
const CHILD_ENV: &str = "KWIRE_TEST_FILE_STORE_CHILD";

fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "kwire-file-store-it-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn offset(topic: &str, partition: i32, offset: i64) -> StoredOffset {
    StoredOffset {
        topic: topic.into(),
        partition,
        offset,
        leader_epoch: Some(2),
        topic_id: Some(Uuid([9; 16])),
        commit_timestamp_ms: Some(1_732_874_400_000),
    }
}

fn sorted(mut v: Vec<StoredOffset>) -> Vec<StoredOffset> {
    v.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    v
}

/// `n` threads, released at once, each merging its own partition into one file.
fn concurrent_thread_writers(n: i32) {
    let path = temp_dir(&format!("threads-{n}")).join("offsets.json");
    let barrier = Arc::new(Barrier::new(n as usize));
    let writers: Vec<_> = (0..n)
        .map(|p| {
            let (path, barrier) = (path.clone(), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                FileStore::new(&path).merge("g", &[offset("t", p, 1000 + i64::from(p))])
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap().unwrap();
    }
    let want: Vec<_> = (0..n).map(|p| offset("t", p, 1000 + i64::from(p))).collect();
    assert_eq!(sorted(FileStore::new(&path).load("g").unwrap()), want);
}

#[test]
fn twenty_concurrent_writers_all_land() {
    concurrent_thread_writers(20);
}

#[test]
fn a_hundred_concurrent_writers_all_land() {
    concurrent_thread_writers(100);
}

#[test]
fn readers_during_concurrent_writes_never_see_a_torn_or_empty_file() {
    let path = temp_dir("readers").join("offsets.json");
    FileStore::new(&path).merge("g", &[offset("t", 0, 0)]).unwrap();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let (path, done) = (path.clone(), Arc::clone(&done));
            std::thread::spawn(move || {
                let mut loads = 0u32;
                let mut seen = 1;
                while !done.load(Ordering::SeqCst) || loads == 0 {
                    let now =
                        FileStore::new(&path).load("g").expect("every load reads a whole document").len();
                    assert!(now >= seen, "a partition disappeared: {now} after {seen}");
                    seen = now;
                    loads += 1;
                }
            })
        })
        .collect();
    let writers: Vec<_> = (1..40)
        .map(|p| {
            let path = path.clone();
            std::thread::spawn(move || FileStore::new(&path).merge("g", &[offset("t", p, 1)]).unwrap())
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(FileStore::new(&path).load("g").unwrap().len(), 40);
}

#[test]
fn a_folder_where_the_lock_file_cannot_be_created_is_an_error_naming_the_lock_file() {
    let dir = temp_dir("no-lock");
    let path = dir.join("offsets.json");
    // A folder at the lock file's name stands for any lock file that cannot be opened.
    fs::create_dir(dir.join(".offsets.json.lock")).unwrap();
    let err = FileStore::new(&path).merge("g", &[offset("t", 0, 1)]).unwrap_err();
    assert!(matches!(err, FileStoreError::LockIo { .. }), "{err}");
    assert!(
        err.to_string().contains("writers' lock file") && err.to_string().contains(".offsets.json.lock"),
        "{err}"
    );
    assert!(!path.exists());
}

/// Runs this binary as a writer process committing `count` partitions from `first`.
fn spawn_child(path: &Path, topic: &str, first: i32, count: i32, offset: i64) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_writer_process", "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, format!("{}|g|{topic}|{first}|{count}|{offset}", path.display()))
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("the test binary runs again as a writer")
}

/// The writer process's entry point (see the module doc); without [`CHILD_ENV`] it does nothing.
#[test]
fn child_writer_process() {
    let Ok(spec) = std::env::var(CHILD_ENV) else { return };
    let parts: Vec<&str> = spec.split('|').collect();
    let [path, group, topic, first, count, value] = parts[..] else { panic!("bad {CHILD_ENV}: {spec}") };
    let (first, count): (i32, i32) = (first.parse().unwrap(), count.parse().unwrap());
    let value: i64 = value.parse().unwrap();
    let batch: Vec<_> = (first..first + count).map(|p| offset(topic, p, value + i64::from(p))).collect();
    if let Err(e) = FileStore::new(path).merge(group, &batch) {
        eprintln!("child writer failed: {e}");
        std::process::exit(7);
    }
}

#[test]
fn a_hundred_writer_processes_all_land() {
    let path = temp_dir("processes").join("offsets.json");
    let children: Vec<_> = (0..100).map(|p| spawn_child(&path, "t", p, 1, 500)).collect();
    for mut c in children {
        assert!(c.wait().unwrap().success(), "every writer process exits 0");
    }
    let want: Vec<_> = (0..100).map(|p| offset("t", p, 500 + i64::from(p))).collect();
    assert_eq!(sorted(FileStore::new(&path).load("g").unwrap()), want);
}

/// How one writer of the property below commits: in a thread or in its own process, its
/// partitions in `rounds` batches.
#[derive(Debug, Clone)]
struct Writer {
    in_process: bool,
    partitions: i32,
    rounds: i32,
}

fn writer() -> impl Strategy<Value = Writer> {
    (prop::bool::weighted(0.25), 1..6i32, 1..3i32).prop_map(|(in_process, partitions, rounds)| Writer {
        in_process,
        partitions,
        rounds,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any interleaving of writers committing disjoint partitions (threads and processes, a
    /// file that already holds other partitions or none) leaves every partition's last value.
    #[test]
    fn disjoint_writers_in_any_interleaving_leave_every_partition(
        writers in prop::collection::vec(writer(), 2..8),
        preexisting in 0..20i32,
    ) {
        let path = temp_dir("property").join("offsets.json");
        let before: Vec<_> = (0..preexisting).map(|p| offset("old", p, i64::from(p))).collect();
        if preexisting > 0 {
            FileStore::new(&path).save("g", &before).unwrap();
        }
        let barrier = Arc::new(Barrier::new(writers.len()));
        let handles: Vec<_> = writers.iter().enumerate().map(|(w, spec)| {
            let (path, barrier, spec) = (path.clone(), Arc::clone(&barrier), spec.clone());
            std::thread::spawn(move || {
                let topic = format!("w{w}");
                barrier.wait();
                for round in 0..spec.rounds {
                    let value = 100 * i64::from(round);
                    if spec.in_process {
                        let status = spawn_child(&path, &topic, 0, spec.partitions, value).wait().unwrap();
                        assert!(status.success(), "writer process {w} failed");
                    } else {
                        let batch: Vec<_> =
                            (0..spec.partitions).map(|p| offset(&topic, p, value + i64::from(p))).collect();
                        FileStore::new(&path).merge("g", &batch).unwrap();
                    }
                }
            })
        }).collect();
        for h in handles {
            h.join().unwrap();
        }
        let mut want = before;
        for (w, spec) in writers.iter().enumerate() {
            let last = 100 * i64::from(spec.rounds - 1);
            want.extend((0..spec.partitions).map(|p| offset(&format!("w{w}"), p, last + i64::from(p))));
        }
        prop_assert_eq!(sorted(FileStore::new(&path).load("g").unwrap()), sorted(want));
        fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}

/// A file nobody else may touch, standing for the victim of a planted link.
fn victim(dir: &Path) -> PathBuf {
    let victim = dir.join("victim-secret");
    fs::write(&victim, "root's secret\n").unwrap();
    fs::set_permissions(&victim, fs::Permissions::from_mode(0o600)).unwrap();
    victim
}

fn assert_untouched(victim: &Path) {
    assert_eq!(fs::read_to_string(victim).unwrap(), "root's secret\n", "the link's target was written");
    assert_eq!(fs::metadata(victim).unwrap().mode() & 0o777, 0o600);
}

#[test]
fn links_planted_under_the_lock_name_and_the_old_temporary_names_write_nothing_elsewhere() {
    let dir = temp_dir("planted");
    let victim = victim(&dir);
    let path = dir.join("offsets.json");
    // The names the old writer used (`.NAME.tmp-PID`) for the next pids, all links to the victim.
    let pid = std::process::id();
    for p in pid..pid + 200 {
        std::os::unix::fs::symlink(&victim, dir.join(format!(".offsets.json.tmp-{p}"))).unwrap();
    }
    FileStore::new(&path).merge("g", &[offset("t", 0, 1)]).unwrap();
    assert_untouched(&victim);
    assert!(fs::symlink_metadata(dir.join(format!(".offsets.json.tmp-{pid}"))).unwrap().is_symlink());

    // The one predictable name left, the lock file, as a link: refused, nothing written.
    fs::remove_file(dir.join(".offsets.json.lock")).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join(".offsets.json.lock")).unwrap();
    let err = FileStore::new(&path).merge("g", &[offset("t", 1, 1)]).unwrap_err();
    assert!(matches!(err, FileStoreError::Symlink { .. }), "{err}");
    assert!(err.to_string().contains(".offsets.json.lock"), "{err}");
    assert_untouched(&victim);
    assert_eq!(
        FileStore::new(&path).load("g").unwrap().len(),
        1,
        "the refused write left the store as it was"
    );
}

#[test]
fn a_store_path_that_is_a_link_is_refused_and_never_replaced() {
    let dir = temp_dir("linked-store");
    let victim = victim(&dir);
    let path = dir.join("offsets.json");
    std::os::unix::fs::symlink(&victim, &path).unwrap();
    let err = FileStore::new(&path).merge("g", &[offset("t", 0, 1)]).unwrap_err();
    assert!(matches!(err, FileStoreError::Symlink { .. }), "{err}");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    let err = FileStore::new(&path).load("g").unwrap_err();
    assert!(matches!(err, FileStoreError::Symlink { .. }), "{err}");
    assert!(fs::symlink_metadata(&path).unwrap().is_symlink(), "the link stays a link");
    assert_untouched(&victim);
    assert!(!dir.join(".offsets.json.lock").exists(), "no lock file before the path is accepted");
}

#[test]
fn a_followed_link_has_its_target_replaced_and_stays_a_link() {
    let dir = temp_dir("followed-link");
    let real = dir.join("real.json");
    FileStore::new(&real).save("g", &[offset("t", 0, 1)]).unwrap();
    let link = dir.join("offsets.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    FileStore::new(&link).follow_symlinks(true).merge("g", &[offset("t", 1, 2)]).unwrap();
    assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(FileStore::new(&real).load("g").unwrap().len(), 2);
    assert!(dir.join(".real.json.lock").exists(), "locked beside the target");
}

/// Runs `f` on another thread and fails if it has not returned within a minute: a hang guard,
/// not a measurement.
fn without_hanging<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    rx.recv_timeout(Duration::from_secs(60)).expect("returned instead of hanging")
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(rustix::fs::CWD, path, rustix::fs::FileType::Fifo, rustix::fs::Mode::from(0o600), 0)
        .unwrap();
}

#[test]
fn a_fifo_socket_or_folder_at_the_store_path_is_refused_without_hanging() {
    let dir = temp_dir("special");
    let fifo = dir.join("fifo.json");
    mkfifo(&fifo);
    let socket = dir.join("socket.json");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let folder = dir.join("folder.json");
    fs::create_dir(&folder).unwrap();
    for (path, kind) in [(fifo, "FIFO"), (socket, "socket"), (folder, "folder")] {
        let (p, k) = (path.clone(), kind);
        let (load, merge) = without_hanging(move || {
            let store = FileStore::new(&p);
            (store.load("g").map(|_| ()), store.merge("g", &[offset("t", 0, 1)]))
        });
        for err in [load.unwrap_err(), merge.unwrap_err()] {
            assert!(matches!(err, FileStoreError::NotRegular { kind, .. } if kind == k), "{err}");
            assert!(err.to_string().contains(kind), "{err}");
        }
    }
}

#[test]
fn a_fifo_planted_as_the_lock_file_is_refused_without_hanging() {
    let dir = temp_dir("fifo-lock");
    mkfifo(&dir.join(".offsets.json.lock"));
    let path = dir.join("offsets.json");
    let err = without_hanging(move || FileStore::new(&path).merge("g", &[offset("t", 0, 1)])).unwrap_err();
    assert!(matches!(err, FileStoreError::NotRegular { kind: "FIFO", .. }), "{err}");
    assert!(!dir.join("offsets.json").exists());
}

#[test]
fn a_0600_store_stays_0600_under_umask_022_and_new_files_are_0600() {
    // 022 is the usual umask: setting it explicitly changes nothing for the other tests here.
    rustix::process::umask(rustix::fs::Mode::from(0o022));
    let dir = temp_dir("modes");
    let path = dir.join("offsets.json");
    FileStore::new(&path).merge("g", &[offset("t", 0, 1)]).unwrap();
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600, "a new store file");
    assert_eq!(fs::metadata(dir.join(".offsets.json.lock")).unwrap().mode() & 0o777, 0o600, "its lock file");
    FileStore::new(&path).merge("g", &[offset("t", 1, 1)]).unwrap();
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600, "rewritten");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    FileStore::new(&path).merge("g", &[offset("t", 2, 1)]).unwrap();
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o640, "a mode the user chose is kept");
    let shared = dir.join("shared.json");
    FileStore::new(&shared).new_file_mode(0o660).merge("g", &[offset("t", 0, 1)]).unwrap();
    assert_eq!(fs::metadata(&shared).unwrap().mode() & 0o777, 0o660, "asked for, umask or not");
}

#[test]
fn a_rewrite_as_root_keeps_the_files_owner_and_group() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("note: not root; the owner can only be kept by root");
        return;
    }
    let dir = temp_dir("owner");
    let path = dir.join("offsets.json");
    FileStore::new(&path).merge("g", &[offset("t", 0, 1)]).unwrap();
    std::os::unix::fs::chown(&path, Some(4242), Some(4343)).unwrap();
    FileStore::new(&path).merge("g", &[offset("t", 1, 1)]).unwrap();
    let meta = fs::metadata(&path).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (4242, 4343));
}

#[test]
fn a_temporary_file_left_by_a_killed_writer_is_removed_by_the_next_writer_once_old() {
    let dir = temp_dir("stale");
    let path = dir.join("offsets.json");
    let old = dir.join(".offsets.json.tmp-00112233445566ff");
    let young = dir.join(".offsets.json.tmp-ffeeddccbbaa9988");
    let foreign = dir.join(".offsets.json.tmp-notours");
    for p in [&old, &young, &foreign] {
        fs::write(p, "half a document").unwrap();
    }
    let long_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    fs::File::options().write(true).open(&old).unwrap().set_modified(long_ago).unwrap();
    fs::File::options().write(true).open(&foreign).unwrap().set_modified(long_ago).unwrap();
    // An old link of our pattern: removing it removes the link, never its target.
    let victim = victim(&dir);
    let link = dir.join(".offsets.json.tmp-0000000000000000");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    FileStore::new(&path).merge("g", &[offset("t", 0, 1)]).unwrap();
    assert!(!old.exists(), "an old temporary file of ours is removed");
    assert!(young.exists(), "a recent one may be a live writer's (an older kwire takes no lock)");
    assert!(foreign.exists(), "another naming pattern is not ours");
    assert!(fs::symlink_metadata(&link).is_ok(), "a link is not a file of ours");
    assert_untouched(&victim);
}

#[test]
fn a_writer_that_cannot_get_the_lock_times_out_naming_the_lock_file() {
    let dir = temp_dir("held");
    let path = dir.join("offsets.json");
    FileStore::new(&path).merge("g", &[offset("t", 0, 1)]).unwrap();
    let held = fs::File::open(dir.join(".offsets.json.lock")).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let err = FileStore::new(&path)
        .timeout(Duration::from_millis(50))
        .merge("g", &[offset("t", 1, 1)])
        .unwrap_err();
    assert!(matches!(err, FileStoreError::Locked { .. }), "{err}");
    assert!(err.to_string().contains(".offsets.json.lock"), "{err}");
    assert_eq!(FileStore::new(&path).load("g").unwrap().len(), 1, "nothing written");
    drop(held);
    FileStore::new(&path).merge("g", &[offset("t", 1, 1)]).unwrap();
}

#[test]
fn a_file_of_one_point_six_million_entries_stops_at_the_timeout() {
    let dir = temp_dir("huge");
    let path = dir.join("offsets.json");
    fs::write(&path, compact_document(1_600_000)).unwrap();
    let store = FileStore::new(&path).timeout(Duration::from_millis(1));
    let err = store.load("g").unwrap_err();
    assert!(matches!(err, FileStoreError::TimedOut { .. }), "{err}");
    assert!(err.to_string().contains("took longer than the timeout"), "{err}");
    let err = store.merge("g", &[offset("t", 0, 1)]).unwrap_err();
    assert!(matches!(err, FileStoreError::TimedOut { .. }), "{err}");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_over_the_size_cap_is_refused_before_it_is_read() {
    let dir = temp_dir("cap");
    let path = dir.join("offsets.json");
    let file = fs::File::create(&path).unwrap();
    file.set_len(MAX_FILE_SIZE + 1).unwrap(); // sparse: no disk used
    let err = FileStore::new(&path).load("g").unwrap_err();
    assert!(matches!(err, FileStoreError::TooLarge { .. }), "{err}");
    assert!(err.to_string().contains(&MAX_FILE_SIZE.to_string()), "{err}");
}

#[test]
fn duplicates_are_found_among_many_entries() {
    let dir = temp_dir("dups");
    let path = dir.join("offsets.json");
    let mut doc = compact_document(50_000);
    doc.truncate(doc.len() - 3);
    doc.push_str(r#",{"topic":"topic-3","partition":7,"offset":1}]}"#);
    fs::write(&path, doc).unwrap();
    let err = FileStore::new(&path).load("g").unwrap_err();
    assert!(err.to_string().contains("topic-3:7 appears twice"), "{err}");
}

#[test]
fn a_batch_that_would_make_the_file_unreadable_is_refused_and_nothing_written() {
    let dir = temp_dir("invalid");
    let path = dir.join("offsets.json");
    FileStore::new(&path).merge("g", &[offset("t", 0, 1)]).unwrap();
    for batch in
        [vec![offset("t", 1, 1), offset("t", 1, 2)], vec![offset("t", 2, -1)], vec![offset("", 0, 1)]]
    {
        let err = FileStore::new(&path).merge("g", &batch).unwrap_err();
        assert!(matches!(err, FileStoreError::Invalid { .. }), "{err}");
    }
    assert_eq!(FileStore::new(&path).load("g").unwrap(), vec![offset("t", 0, 1)]);
}
