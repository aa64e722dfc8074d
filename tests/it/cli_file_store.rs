//! `--store file:PATH` through real `kwire` processes (issue 19): concurrent commits to one
//! file, a linked or special store path, a file too large to load within `--timeout`.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use kwire_stores::FileStore;

use crate::support::{self, create_topic, kwire, stderr, unique, Cluster};

#[path = "../../stores/tests/support/compact_document.rs"]
mod compact_document;
use compact_document::compact_document;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(unique(name));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn spawn_kwire(cluster: &Cluster, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_kwire"))
        .args(args)
        .env("KWIRE_BOOTSTRAP", &cluster.bootstrap)
        .env_remove("KWIRE_ZOOKEEPER")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kwire binary runs")
}

/// Waits for `child`, killing it and failing after a minute: a hang guard, not a measurement.
fn finish_without_hanging(mut child: Child) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("kwire hung on the store path");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn twenty_concurrent_kwire_commit_processes_to_one_file_all_land() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("file-concurrent");
    let group = unique("file-concurrent-group");
    create_topic(&cluster, &topic, 20, 1);
    let path = temp_dir("kwire-file-concurrent").join("offsets.json");
    let store = format!("file:{}", path.display());
    let children: Vec<(i32, Child)> = (0..20)
        .map(|p| {
            let assignment = format!("{topic}:{p}={}", 100 + p);
            (
                p,
                spawn_kwire(
                    &cluster,
                    &["commit", "--group", &group, "--store", &store, "--force", &assignment],
                ),
            )
        })
        .collect();
    for (p, child) in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "commit of partition {p} exited {:?}: {}",
            out.status.code(),
            stderr(&out)
        );
    }
    let mut stored: Vec<(i32, i64)> =
        FileStore::new(&path).load(&group).unwrap().iter().map(|o| (o.partition, o.offset)).collect();
    stored.sort_unstable();
    let want: Vec<(i32, i64)> = (0..20).map(|p| (p, 100 + i64::from(p))).collect();
    assert_eq!(stored, want, "every commit that exited 0 is in the file");
    assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
}

#[test]
fn a_symlinked_store_path_is_refused_and_its_target_left_alone() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("file-link");
    create_topic(&cluster, &topic, 1, 1);
    let dir = temp_dir("kwire-file-link");
    let victim = dir.join("victim");
    std::fs::write(&victim, "secret\n").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = dir.join("offsets.json");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let store = format!("file:{}", link.display());
    let out =
        kwire(&cluster, &["commit", "--group", "g", "--store", &store, "--force", &format!("{topic}:0=5")]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("symbolic link") && err.lines().count() == 1, "{err}");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink(), "the link is not replaced");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "secret\n");
}

#[test]
fn a_fifo_as_the_store_path_is_refused_without_hanging() {
    let Some(cluster) = support::cluster() else { return };
    let fifo = temp_dir("kwire-file-fifo").join("offsets.json");
    mkfifo(&fifo);
    let store = format!("file:{}", fifo.display());
    let out = finish_without_hanging(spawn_kwire(&cluster, &["group", "describe", "g", "--store", &store]));
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains("is a FIFO, not a regular file"), "{}", stderr(&out));
}

/// `mkfifo(1)`: the root package does not depend on a syscall crate.
fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
    assert!(status.success());
}

#[test]
fn a_file_of_one_point_six_million_entries_respects_the_timeout() {
    let Some(cluster) = support::cluster() else { return };
    let dir = temp_dir("kwire-file-huge");
    let path = dir.join("offsets.json");
    // 87 MB of compact entries like the 93 MB file, 1,000 partitions per topic.
    let doc = compact_document(1_600_000);
    std::fs::write(&path, doc).unwrap();
    let store = format!("file:{}", path.display());
    let out = finish_without_hanging(spawn_kwire(
        &cluster,
        &["group", "describe", "g", "--store", &store, "--timeout", "1s"],
    ));
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("took longer than the timeout (1s)") && err.lines().count() == 1, "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
