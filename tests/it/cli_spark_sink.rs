//! `kwire reset --store spark:CKPT --spark-sink OUTPUT` on checkpoints laid out as Spark 4.1
//! leaves them (the real Spark runs are in spark_store.rs), for the two states where the
//! checkpoint and its file sink's log disagree about the newest batch:
//!
//! - Spark died after the sink's entry for batch N and before `commits/N`: `offsets/N` and
//!   `_spark_metadata/N` are there, `commits/N` is not. Restarted, Spark re-runs batch N and its
//!   file sink skips it ("Skipping already committed batch", `FileStreamSink.addBatch`: the log
//!   has N). kwire writes batch N+1, one above the newest offsets file, which the log does
//!   not have: nothing to refuse.
//! - The checkpoint is behind its sink's log: its newest batch was deleted by hand to re-run it,
//!   or an older copy of the checkpoint was restored. Spark would re-run that batch and its sink
//!   would skip it, losing its records without an error; kwire's batch would be one the log
//!   already has, so it refuses, naming the sink's file, and writes nothing.
//!
//! And `--spark-sink-retention` values Spark's `retention` option would not take.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::{self, create_topic, kwire, produce_with_kafka, stderr, unique};

const META: &str = r#"{"batchWatermarkMs":0,"batchTimestampMs":1764600000000,"conf":{"spark.sql.streaming.stateStore.providerClass":"org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider","spark.sql.shuffle.partitions":"2","spark.sql.streaming.multipleWatermarkPolicy":"min"}}"#;

/// A Spark 4.1 checkpoint of a query reading `topic` (2 partitions) into the file sink at
/// `output`: `offsets/N` for each of `offsets`, `commits/N` for each of `commits`, and the
/// sink's log entries for `sink` (one data file each), every file with its `.N.crc` as Hadoop's
/// local file system writes it. Batch N's offsets are `N` and `N + 1`.
fn checkpoint(dir: &Path, topic: &str, offsets: &[u64], commits: &[u64], sink: &[u64]) -> (PathBuf, PathBuf) {
    let (ckpt, output) = (dir.join("ckpt"), dir.join("out"));
    let put = |path: PathBuf, text: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let crc = path.with_file_name(format!(".{}.crc", path.file_name().unwrap().to_str().unwrap()));
        std::fs::write(&path, text).unwrap();
        std::fs::write(crc, b"crc\0").unwrap();
    };
    put(ckpt.join("metadata"), r#"{"id":"6a1d2e4f-0000-4000-8000-00000000c11e"}"#);
    put(ckpt.join("sources/0/0"), &format!("\0v1\n{{\"{topic}\":{{\"0\":0,\"1\":0}}}}"));
    for n in offsets {
        put(
            ckpt.join(format!("offsets/{n}")),
            &format!("v1\n{META}\n{{\"{topic}\":{{\"0\":{n},\"1\":{}}}}}", n + 1),
        );
    }
    for n in commits {
        put(ckpt.join(format!("commits/{n}")), "v1\n{\"nextBatchWatermarkMs\":0}");
    }
    std::fs::create_dir_all(output.join("_spark_metadata")).unwrap();
    for n in sink {
        let file = output.join(format!("part-0000{n}-0b7c.c000.json"));
        std::fs::write(&file, format!("{{\"value\":\"batch-{n}\"}}\n")).unwrap();
        let entry = format!(
            r#"{{"path":"file://{}","size":20,"isDir":false,"modificationTime":1764600000000,"blockReplication":1,"blockSize":33554432,"action":"add"}}"#,
            file.display()
        );
        put(output.join(format!("_spark_metadata/{n}")), &format!("v1\n{entry}"));
    }
    (ckpt, output)
}

/// Every file under `dir` (hidden ones included) with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                todo.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

fn reset_to_earliest(
    cluster: &support::Cluster,
    ckpt: &Path,
    topic: &str,
    output: &Path,
) -> std::process::Output {
    let store = format!("spark:{}", ckpt.display());
    let output = output.display().to_string();
    let args = ["reset", "--group", "q", "--store", &store, "--topic", topic, "--to", "earliest"];
    let args = [&args[..], &["--execute", "--force", "--spark-sink", &output]].concat();
    kwire(cluster, &args)
}

#[test]
fn reset_into_a_checkpoint_behind_its_file_sinks_log_exits_6_naming_the_sink_file_and_writes_nothing() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("cli-spark-sink-behind");
    create_topic(&cluster, &topic, 2, 3);
    produce_with_kafka(&cluster, &topic, 20, 10);
    let dir = std::env::temp_dir().join(unique("kwire-cli-spark-sink-behind"));
    // Spark ran batches 0 to 2; batch 2's offsets and commit were deleted to re-run it.
    let (ckpt, output) = checkpoint(&dir, &topic, &[0, 1], &[0, 1], &[0, 1, 2]);
    let before = snapshot(&dir);

    let out = reset_to_earliest(&cluster, &ckpt, &topic, &output);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let text = stderr(&out);
    assert_eq!(text.trim().lines().count(), 1, "{text}");
    let named = output.join("_spark_metadata/2");
    assert!(text.contains(&format!("{}:", named.display())), "{text}");
    assert!(text.contains("already has batch 2") && text.contains("nothing written"), "{text}");

    // Every file byte for byte as it was; the one new file is kwire's empty writers' lock in
    // the checkpoint folder (created before the checkpoint is read under it, never removed;
    // Spark reads only its own subfolders and `metadata`).
    let mut after = snapshot(&dir);
    assert_eq!(after.remove(&ckpt.join(kwire_stores::spark::LOCK_FILE)), Some(Vec::new()));
    assert_eq!(after, before);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn reset_after_spark_died_between_its_sink_entry_and_its_commit_writes_the_batch_after_the_pending_one() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("cli-spark-sink-pending");
    create_topic(&cluster, &topic, 2, 3);
    produce_with_kafka(&cluster, &topic, 20, 10);
    let dir = std::env::temp_dir().join(unique("kwire-cli-spark-sink-pending"));
    // Batch 1: offsets and the sink's entry written, the commit not.
    let (ckpt, output) = checkpoint(&dir, &topic, &[0, 1], &[0], &[0, 1]);
    let before = snapshot(&dir);

    let out = reset_to_earliest(&cluster, &ckpt, &topic, &output);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(output.join("_spark_metadata/2")).unwrap(), b"v1");
    assert!(ckpt.join("offsets/2").exists() && ckpt.join("commits/2").exists());
    let offsets = std::fs::read_to_string(ckpt.join("offsets/2")).unwrap();
    assert!(offsets.ends_with(&format!("{{\"{topic}\":{{\"0\":0,\"1\":0}}}}")), "{offsets}");
    // The pending batch and the sink's entry for it are left as Spark wrote them.
    let after = snapshot(&dir);
    for (path, bytes) in &before {
        assert_eq!(after.get(path), Some(bytes), "{} changed", path.display());
    }
    assert!(!ckpt.join("commits/1").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_spark_sink_retention_spark_would_not_accept_is_a_usage_error_naming_the_value() {
    for bad in ["7 days", "1.5h", "10sec"] {
        let out = support::kwire_bare(&[
            "reset",
            "--group",
            "q",
            "--store",
            "spark:/nonexistent",
            "--topic",
            "t",
            "--to",
            "earliest",
            "--spark-sink",
            "/nonexistent",
            "--spark-sink-retention",
            bad,
        ]);
        assert_eq!(out.status.code(), Some(1), "{bad}: {}", stderr(&out));
        let text = stderr(&out);
        assert!(text.contains("--spark-sink-retention") && text.contains(&format!("`{bad}`")), "{text}");
    }
    // The environment variable is read the same way.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kwire"))
        .args(["reset", "--group", "q", "--store", "spark:/nonexistent", "--topic", "t", "--to", "earliest"])
        .env_remove("KWIRE_BOOTSTRAP")
        .env("KWIRE_SPARK_SINK_RETENTION", "7x")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("`7x`"), "{}", stderr(&out));
}
