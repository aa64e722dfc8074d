//! The Spark store on checkpoint folders laid out as Spark 3.5 / 4.x lays them out (the real
//! Spark runs are in tests/it/spark_store.rs): which batch is read, what a save writes, and
//! that damage, a live query, a racing query or a foreign folder leave everything unwritten.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use kafka_wire::protocol::Uuid;
use kwire_stores::spark::checkpoint::Origin;
use kwire_stores::spark::log::SourceLine;
use kwire_stores::spark::topic_ids;
use kwire_stores::{SparkStore, SparkStoreError};
use offset_store::StoredOffset;

const META: &str =
    r#"{"batchWatermarkMs":7,"batchTimestampMs":1764600000000,"conf":{"spark.sql.shuffle.partitions":"2"}}"#;

fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "kwire-spark-store-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(path: &Path, text: &[u8]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A checkpoint whose batches `committed` have offsets and commits, and `pending` offsets only;
/// batch N's Kafka source holds `events` partitions 0 and 1 at `10 * N` and `10 * N + 1`, and a
/// second, file source.
fn checkpoint(name: &str, committed: std::ops::Range<u64>, pending: Option<u64>) -> PathBuf {
    let dir = temp_dir(name);
    write(&dir.join("metadata"), br#"{"id":"5b1a3c4e-0000-4000-8000-000000000001"}"#);
    write(&dir.join("sources/0/0"), b"\0v1\n{\"events\":{\"0\":0,\"1\":0}}");
    for n in committed.clone().chain(pending) {
        let text = format!(
            "v1\n{META}\n{{\"events\":{{\"0\":{},\"1\":{}}}}}\n{{\"logOffset\":{n}}}",
            10 * n,
            10 * n + 1
        );
        write(&dir.join(format!("offsets/{n}")), text.as_bytes());
        write(&dir.join(format!("offsets/.{n}.crc")), b"crc");
    }
    for n in committed {
        write(&dir.join(format!("commits/{n}")), b"v1\n{\"nextBatchWatermarkMs\":7}");
    }
    dir
}

fn offset(topic: &str, partition: i32, offset: i64) -> StoredOffset {
    StoredOffset {
        topic: topic.into(),
        partition,
        offset,
        leader_epoch: None,
        topic_id: None,
        commit_timestamp_ms: None,
    }
}

fn offsets_of(store: &SparkStore) -> Vec<(String, i32, i64)> {
    let mut v: Vec<_> = store.load().unwrap().into_iter().map(|o| (o.topic, o.partition, o.offset)).collect();
    v.sort();
    v
}

/// A store that does not take the freshly written test files for a live query.
fn idle(dir: &Path) -> SparkStore {
    SparkStore::new(dir).running_window(Duration::ZERO)
}

#[test]
fn the_newest_committed_batch_is_read_and_a_later_uncommitted_batch_is_reported() {
    // Batch ids past 9 sort differently as text: 10 is newer than 9.
    let dir = checkpoint("pending", 0..11, Some(11));
    let store = idle(&dir);
    assert_eq!(offsets_of(&store), [("events".into(), 0, 100), ("events".into(), 1, 101)]);
    let ckpt = store.describe().unwrap();
    assert_eq!(ckpt.origin, Origin::Committed(10));
    assert_eq!(ckpt.query_id.as_deref(), Some("5b1a3c4e-0000-4000-8000-000000000001"));
    let pending = ckpt.pending.unwrap();
    assert_eq!(pending.id, 11);
    assert!(matches!(&pending.offsets.sources[0], SourceLine::Kafka(k) if k["events"][&1] == 111));
    assert_eq!(ckpt.sources[1], SourceLine::Other("{\"logOffset\":10}".into()));
}

#[test]
fn a_query_that_never_finished_a_batch_resumes_from_its_starting_offsets() {
    let dir = checkpoint("never-committed", 0..0, Some(0));
    let store = idle(&dir);
    assert_eq!(offsets_of(&store), [("events".into(), 0, 0), ("events".into(), 1, 0)]);
    assert_eq!(store.describe().unwrap().origin, Origin::Start);
    // Its first kwire batch keeps the file source's line of the planned batch.
    store.save(&[offset("events", 1, 5)]).unwrap();
    let written = fs::read_to_string(dir.join("offsets/1")).unwrap();
    assert!(written.ends_with("{\"events\":{\"0\":0,\"1\":5}}\n{\"logOffset\":0}"), "{written}");
}

#[test]
fn a_save_writes_the_next_batch_in_sparks_format_and_leaves_old_batches_alone() {
    let dir = checkpoint("save", 0..3, Some(3));
    fs::set_permissions(dir.join("offsets/2"), fs::Permissions::from_mode(0o640)).unwrap();
    let before: Vec<_> = (0..4).map(|n| fs::read(dir.join(format!("offsets/{n}"))).unwrap()).collect();
    let store = idle(&dir);
    store.save(&[offset("events", 0, 3), offset("events", 2, 9)]).unwrap();
    // One above the newest batch, pending included; the committed batch's other partitions.
    assert_eq!(
        fs::read_to_string(dir.join("offsets/4")).unwrap(),
        format!("v1\n{META}\n{{\"events\":{{\"0\":3,\"1\":21,\"2\":9}}}}\n{{\"logOffset\":2}}")
    );
    assert_eq!(fs::read_to_string(dir.join("commits/4")).unwrap(), "v1\n{\"nextBatchWatermarkMs\":7}");
    assert_eq!(fs::metadata(dir.join("offsets/4")).unwrap().permissions().mode() & 0o777, 0o640);
    for (n, bytes) in before.iter().enumerate() {
        assert_eq!(&fs::read(dir.join(format!("offsets/{n}"))).unwrap(), bytes, "offsets/{n} untouched");
    }
    assert!(!dir.join("commits/3").exists(), "the uncommitted batch stays uncommitted");
    assert_eq!(
        offsets_of(&store),
        [("events".into(), 0, 3), ("events".into(), 1, 21), ("events".into(), 2, 9)]
    );
    let leftovers: Vec<_> = fs::read_dir(dir.join("offsets"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains("tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

fn with_id(o: StoredOffset, id: u8) -> StoredOffset {
    StoredOffset { topic_id: Some(Uuid([id; 16])), ..o }
}

fn ids_of(store: &SparkStore) -> Vec<(i32, Option<Uuid>)> {
    let mut v: Vec<_> = store.load().unwrap().into_iter().map(|o| (o.partition, o.topic_id)).collect();
    v.sort();
    v
}

#[test]
fn a_save_records_the_topic_ids_in_kwires_side_file_and_loads_carry_them() {
    let dir = checkpoint("topic-ids", 0..2, None);
    let store = idle(&dir);
    assert_eq!(ids_of(&store), [(0, None), (1, None)], "Spark keeps no ids");
    store.save(&[with_id(offset("events", 0, 3), 7)]).unwrap();
    let side = fs::read_to_string(dir.join(topic_ids::FILE_NAME)).unwrap();
    assert_eq!(
        side,
        format!(
            "{{\"format\":\"kwire-spark-topic-ids\",\"version\":1,\"batch\":2,\"topic_ids\":{{\"events\":\"{}\"}}}}\n",
            Uuid([7; 16])
        )
    );
    // The topic's id applies to every partition of it, the ones carried over too.
    assert_eq!(ids_of(&store), [(0, Some(Uuid([7; 16]))), (1, Some(Uuid([7; 16])))]);
    // A later save without ids keeps the recorded view; one with a new id replaces it.
    store.save(&[offset("events", 1, 4)]).unwrap();
    assert_eq!(ids_of(&store), [(0, Some(Uuid([7; 16]))), (1, Some(Uuid([7; 16])))]);
    store.save(&[with_id(offset("events", 1, 0), 8)]).unwrap();
    assert_eq!(ids_of(&store), [(0, Some(Uuid([8; 16]))), (1, Some(Uuid([8; 16])))]);
    assert_eq!(topic_ids::read(&dir).unwrap().unwrap().batch, 4);
    let leftovers: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains("tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn recorded_ids_apply_to_sparks_later_batches_but_not_to_a_checkpoint_restored_from_before() {
    let dir = checkpoint("topic-ids-later", 0..2, None);
    let store = idle(&dir);
    store.save(&[with_id(offset("events", 0, 3), 7)]).unwrap();
    // Spark runs batch 3 after kwire's batch 2: same topics by name, the ids still apply.
    write(&dir.join("offsets/3"), format!("v1\n{META}\n{{\"events\":{{\"0\":30,\"1\":31}}}}").as_bytes());
    write(&dir.join("commits/3"), b"v1\n{\"nextBatchWatermarkMs\":7}");
    assert_eq!(ids_of(&store), [(0, Some(Uuid([7; 16]))), (1, Some(Uuid([7; 16])))]);
    // Batches 2 and 3 gone (an older copy of the checkpoint): kwire's view is not of this one.
    for f in ["offsets/2", "commits/2", "offsets/3", "commits/3"] {
        fs::remove_file(dir.join(f)).unwrap();
    }
    assert_eq!(ids_of(&store), [(0, None), (1, None)]);
}

#[test]
fn a_damaged_side_file_is_an_error_naming_it_and_a_save_writes_nothing() {
    let dir = checkpoint("topic-ids-damaged", 0..2, None);
    write(&dir.join(topic_ids::FILE_NAME), b"{\"format\":\"kwire-spark-topic-ids\"");
    let store = idle(&dir);
    let err = store.load().unwrap_err();
    assert!(
        matches!(&err, SparkStoreError::Corrupt { path, .. } if path.ends_with(topic_ids::FILE_NAME)),
        "{err}"
    );
    let err = store.save(&[offset("events", 0, 3)]).unwrap_err();
    assert!(err.to_string().contains(topic_ids::FILE_NAME), "{err}");
    assert!(!dir.join("offsets/2").exists(), "nothing written");
}

#[test]
fn a_damaged_or_half_written_checkpoint_is_an_error_naming_file_and_line_and_nothing_is_written() {
    for (file, text, line) in [
        ("offsets/2", &b"v1\n{}\n{\"events\":{\"0\":"[..], Some(3)),
        ("offsets/2", b"", None),
        ("offsets/2", b"v1", None),
        ("commits/2", b"v1\n", None),
        ("commits/2", b"v1\nnull", Some(2)),
        ("offsets/2", b"v1\n{\"x\":1\n-", Some(2)),
    ] {
        let dir = checkpoint("corrupt", 0..3, None);
        write(&dir.join(file), text);
        let store = idle(&dir);
        let err = store.load().unwrap_err();
        match &err {
            SparkStoreError::Corrupt { path, line: l, .. } => {
                assert_eq!(path, &dir.join(file), "{err}");
                assert_eq!(*l, line, "{file} {text:?}: {err}");
            }
            other => panic!("{file} {text:?}: {other}"),
        }
        assert!(err.to_string().contains(&dir.join(file).display().to_string()), "{err}");
        assert!(store.save(&[offset("events", 0, 1)]).is_err());
        assert!(!dir.join("offsets/3").exists() && !dir.join("commits/3").exists());
    }
}

#[test]
fn a_checkpoint_from_a_newer_spark_is_refused_by_version() {
    let dir = checkpoint("newer", 0..2, None);
    write(&dir.join("offsets/1"), b"v9\n{}\n-");
    let err = idle(&dir).load().unwrap_err();
    assert!(matches!(err, SparkStoreError::UnsupportedVersion { found: 9, newest: 1, .. }), "{err}");
}

#[test]
fn a_recently_written_batch_means_the_query_may_be_running_and_force_overrides() {
    let dir = checkpoint("running", 0..2, None);
    let err = SparkStore::new(&dir).save(&[offset("events", 0, 1)]).unwrap_err();
    assert!(matches!(err, SparkStoreError::QueryRunning { .. }), "{err}");
    assert!(err.to_string().contains("--force"), "{err}");
    assert!(!dir.join("offsets/2").exists());
    SparkStore::new(&dir).force(true).save(&[offset("events", 0, 1)]).unwrap();
    assert!(dir.join("commits/2").exists());
}

#[test]
fn a_stray_commit_file_for_the_next_batch_is_refused_and_kept() {
    let dir = checkpoint("stray-commit", 0..2, None);
    write(&dir.join("commits/2"), b"v1\n{\"nextBatchWatermarkMs\":0}");
    let err = idle(&dir).save(&[offset("events", 0, 1)]).unwrap_err();
    assert!(matches!(&err, SparkStoreError::Corrupt { path, .. } if path == &dir.join("commits/2")), "{err}");
    assert!(!dir.join("offsets/2").exists(), "nothing written");
    assert_eq!(fs::read_to_string(dir.join("commits/2")).unwrap(), "v1\n{\"nextBatchWatermarkMs\":0}");
}

#[test]
fn a_topic_no_kafka_source_reads_is_refused() {
    let dir = checkpoint("foreign-topic", 0..1, None);
    let err = idle(&dir).save(&[offset("other", 0, 1)]).unwrap_err();
    assert!(matches!(err, SparkStoreError::Invalid { .. }), "{err}");
    assert!(err.to_string().contains("`other`"), "{err}");
    assert!(!dir.join("offsets/1").exists());
}

#[test]
fn a_folder_that_is_not_a_checkpoint_is_refused_and_left_unchanged() {
    let dir = temp_dir("not-a-checkpoint");
    write(&dir.join("notes.txt"), b"hello");
    let store = idle(&dir);
    assert!(matches!(store.load(), Err(SparkStoreError::NotACheckpoint { .. })));
    assert!(matches!(store.save(&[offset("events", 0, 1)]), Err(SparkStoreError::NotACheckpoint { .. })));
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "no lock file or folder created");
    assert!(matches!(idle(&dir.join("missing")).load(), Err(SparkStoreError::NotACheckpoint { .. })));
}

#[test]
fn a_symbolic_link_in_place_of_a_batch_file_is_refused() {
    let dir = checkpoint("symlink", 0..2, None);
    fs::remove_file(dir.join("offsets/1")).unwrap();
    std::os::unix::fs::symlink(dir.join("offsets/0"), dir.join("offsets/1")).unwrap();
    let err = idle(&dir).load().unwrap_err();
    assert!(matches!(err, SparkStoreError::NotRegular { kind: "symbolic link", .. }), "{err}");
}

#[test]
fn reading_ten_thousand_batches_of_a_thousand_partitions_reads_only_the_newest() {
    let dir = temp_dir("many-batches");
    let line: String = {
        let parts: Vec<String> = (0..1000).map(|p| format!("\"{p}\":{}", 1000 + p)).collect();
        format!("{{\"big\":{{{}}}}}", parts.join(","))
    };
    let text = format!("v1\n{META}\n{line}");
    for n in 0..10_000u64 {
        // Every batch but the newest is damaged: reading any of them would fail the load.
        let body = if n == 9_999 { text.as_bytes() } else { b"v1\n{broken" };
        write(&dir.join(format!("offsets/{n}")), body);
        write(&dir.join(format!("commits/{n}")), b"v1\n{\"nextBatchWatermarkMs\":0}");
    }
    let store = idle(&dir);
    let started = std::time::Instant::now();
    let loaded = store.load().unwrap();
    let took = started.elapsed();
    assert_eq!(loaded.len(), 1000);
    assert_eq!(loaded.iter().find(|o| o.partition == 999).unwrap().offset, 1999);
    eprintln!("load of 10,000 batches x 1,000 partitions: {took:?}");
    let _ = fs::remove_dir_all(&dir);
}

fn with_sink(dir: &Path, output: &Path) -> SparkStore {
    idle(dir).file_sink(Some(kwire_stores::spark::FileSink {
        output: output.to_path_buf(),
        compact_interval: 10,
        retention: None,
    }))
}

#[test]
fn a_save_with_a_file_sink_writes_the_sinks_entry_and_a_sink_that_has_the_batch_stops_everything() {
    let dir = checkpoint("sink", 0..2, None);
    let output = temp_dir("sink-out");
    write(&output.join("_spark_metadata/0"), b"v1");
    write(&output.join("_spark_metadata/1"), b"v1");
    write(&output.join("_spark_metadata/.1.crc"), b"crc");
    with_sink(&dir, &output).save(&[offset("events", 0, 3)]).unwrap();
    assert!(dir.join("commits/2").exists());
    assert_eq!(fs::read(output.join("_spark_metadata/2")).unwrap(), b"v1");

    // The sink already has batch 3 (another query's, or one that ran on): nothing written.
    write(&output.join("_spark_metadata/3"), b"v1");
    let err = with_sink(&dir, &output).save(&[offset("events", 0, 4)]).unwrap_err();
    assert!(matches!(err, SparkStoreError::Sink { .. }), "{err:?}");
    assert!(err.to_string().contains("_spark_metadata/3"), "{err}");
    assert!(!dir.join("offsets/3").exists() && !dir.join("commits/3").exists());

    // No log folder at the named sink: refused, nothing written.
    let err = with_sink(&dir, &dir.join("nowhere")).save(&[offset("events", 0, 4)]).unwrap_err();
    assert!(err.to_string().contains("nowhere/_spark_metadata"), "{err}");
    assert!(!dir.join("offsets/3").exists());
}
