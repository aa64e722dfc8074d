//! `--store spark:CKPT` against real Spark (PySpark and the Kafka connector from
//! `scripts/spark install`): Structured Streaming queries with a Kafka source, a file sink and a
//! checkpoint, run to the end of the topic (`trigger(availableNow)`), then kwire on the
//! checkpoint they left. One Spark session (`tests/it/spark/queries.py`) serves every test of
//! this file, one query at a time.
//!
//! Without Spark installed these tests print a note and pass; with `CI` or
//! `KWIRE_REQUIRE_CLUSTER` set (as `scripts/test` does, after installing it) they fail instead.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

use crate::support::{
    self, consumer_groups_describe, create_topic, create_topic_retrying, delete_topic_and_wait,
    get_offset_shell, kwire, stderr, unique, Cluster,
};

/// The running Spark session and the file its logs go to.
struct Spark {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    log: PathBuf,
}

impl Spark {
    /// A session of the pinned Spark `version` (`scripts/spark`'s `KWIRE_SPARK_VERSION`).
    fn start(cluster: &Cluster, version: &str) -> Option<Spark> {
        let vars = support::spark_env_of(version)?;
        let python = &vars["KWIRE_SPARK_PYTHON"];
        let log = std::env::temp_dir().join(unique("kwire-spark-session")).with_extension("log");
        let mut child = Command::new(python)
            .arg(support::repo_root().join("tests/it/spark/queries.py"))
            .env("KWIRE_SPARK_JARS", &vars["KWIRE_SPARK_JARS"])
            .env("PYSPARK_SUBMIT_ARGS", &vars["PYSPARK_SUBMIT_ARGS"])
            .env("KWIRE_BOOTSTRAP", &cluster.bootstrap)
            .env("PYSPARK_PYTHON", python)
            .env("PYTHONPATH", support::repo_root().join("python"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("the Spark python runs");
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut spark = Spark { _child: child, stdin, stdout, log };
        let ready = spark.answer();
        assert_eq!(ready["ready"], true, "{ready}");
        let major = ready["spark"].as_str().unwrap_or_default();
        assert!(major.starts_with(&format!("{version}.")), "asked for Spark {version}, got {ready}");
        Some(spark)
    }

    fn answer(&mut self) -> Value {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).expect("reading the Spark session");
        if n == 0 {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            let tail: String = log
                .lines()
                .rev()
                .take(40)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n");
            panic!("the Spark session ended; its log ({}):\n{tail}", self.log.display());
        }
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not JSON from the Spark session ({e}): {line}"))
    }

    /// Runs examples/pyspark/batch_loop.py's loop in this session with `args`; the answer has
    /// `records` and per-round `rounds` timings.
    fn batch_loop(&mut self, args: &[&str]) -> Value {
        writeln!(self.stdin, "{}", json!({"op": "batch_loop", "args": args}))
            .expect("the Spark session reads");
        self.stdin.flush().expect("the Spark session reads");
        self.answer()
    }

    /// Runs the query Kafka `topic` → JSON files in `output`, checkpoint `ckpt`, to the end of
    /// the topic; `Err` carries Spark's error text.
    fn run(&mut self, topic: &str, ckpt: &Path, output: &Path) -> Result<(), String> {
        self.run_with(topic, ckpt, output, &SinkRun::default())
    }

    /// [`run`](Self::run) with the file sink's compact interval and a batch size set.
    fn run_with(&mut self, topic: &str, ckpt: &Path, output: &Path, how: &SinkRun) -> Result<(), String> {
        let mut cmd = json!({"op": "run", "topic": topic, "checkpoint": ckpt, "output": output, "fail_on_data_loss": true});
        if let Some(n) = how.compact_interval {
            cmd["compact_interval"] = json!(n);
        }
        if let Some(n) = how.max_offsets_per_trigger {
            cmd["max_offsets_per_trigger"] = json!(n);
        }
        if let Some(r) = how.retention {
            cmd["retention"] = json!(r);
        }
        self.ask(&cmd).map(drop)
    }

    /// Spark's own compaction of `output`'s sink log: its `FileStreamSinkLog` with `retention`
    /// adds compaction batch `batch` with no files. Returns the retention in ms as Spark parsed it.
    fn compact(&mut self, output: &Path, batch: u64, retention: &str, interval: u32) -> Result<i64, String> {
        let cmd = json!({"op": "compact", "path": output, "batch": batch, "retention": retention, "compact_interval": interval});
        Ok(self.ask(&cmd)?["retention_ms"].as_i64().expect("retention_ms"))
    }

    /// `spark.read.json(output)`: every record's value, read through the sink's log.
    fn read(&mut self, output: &Path) -> Result<Vec<String>, String> {
        let answer = self.ask(&json!({"op": "read", "path": output}))?;
        let values = answer["values"].as_array().expect("values");
        Ok(values.iter().map(|v| v.as_str().unwrap_or_default().to_owned()).collect())
    }

    fn ask(&mut self, cmd: &Value) -> Result<Value, String> {
        writeln!(self.stdin, "{cmd}").expect("the Spark session reads");
        self.stdin.flush().expect("the Spark session reads");
        let answer = self.answer();
        match answer["ok"].as_bool() {
            Some(true) => Ok(answer),
            _ => Err(answer["error"].as_str().unwrap_or_default().to_owned()),
        }
    }
}

/// How a query runs: its file sink log's compact interval (Spark's default 10 when `None`),
/// at most this many records per batch (all available in one batch when `None`) and its file
/// sink's `retention` option.
#[derive(Debug, Default)]
struct SinkRun {
    compact_interval: Option<u32>,
    max_offsets_per_trigger: Option<u32>,
    retention: Option<&'static str>,
}

/// The session every test of this file shares (started by the first), one query at a time.
fn spark(cluster: &Cluster) -> Option<MutexGuard<'static, Spark>> {
    static SPARK: OnceLock<Option<Mutex<Spark>>> = OnceLock::new();
    SPARK
        .get_or_init(|| Spark::start(cluster, "4").map(Mutex::new))
        .as_ref()
        .map(|m| m.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
}

/// The Spark 3.5 session (`KWIRE_SPARK_VERSION=3.5`), for the tests of Spark 3.5's format.
fn spark_3_5(cluster: &Cluster) -> Option<MutexGuard<'static, Spark>> {
    static SPARK: OnceLock<Option<Mutex<Spark>>> = OnceLock::new();
    SPARK
        .get_or_init(|| Spark::start(cluster, "3.5").map(Mutex::new))
        .as_ref()
        .map(|m| m.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(unique(&format!("kwire-spark-{name}")));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Produces `values` with keys spread over the partitions.
fn produce(cluster: &Cluster, topic: &str, values: impl Iterator<Item = String>) {
    let lines = values.enumerate().fold(String::new(), |mut out, (i, v)| {
        let _ = writeln!(out, "key-{i},{v}");
        out
    });
    let mut child = Command::new(env!("CARGO_BIN_EXE_kwire"))
        .args(["produce", topic, "--key-separator", ","])
        .env("KWIRE_BOOTSTRAP", &cluster.bootstrap)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kwire runs");
    child.stdin.take().unwrap().write_all(lines.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "produce: {}", stderr(&out));
}

/// One record the file sink wrote.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct SinkRow {
    value: String,
    partition: i32,
    offset: i64,
}

/// Every record of the committed output: the data files the sink's own log lists (what a
/// reader of the sink sees; a file of a batch that failed is not listed).
fn sink_rows(output: &Path) -> Vec<SinkRow> {
    let mut listed = BTreeSet::new();
    for entry in std::fs::read_dir(output.join("_spark_metadata")).unwrap().flatten() {
        let name = entry.file_name().into_string().unwrap();
        if name.starts_with('.') {
            continue;
        }
        for line in std::fs::read_to_string(entry.path()).unwrap().lines().skip(1) {
            let v: Value = serde_json::from_str(line).unwrap();
            let path = v["path"].as_str().unwrap().trim_start_matches("file://").to_owned();
            listed.insert(PathBuf::from(path));
        }
    }
    let mut rows = Vec::new();
    for file in listed {
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            rows.push(SinkRow {
                value: v["value"].as_str().unwrap().to_owned(),
                partition: v["partition"].as_i64().unwrap() as i32,
                offset: v["offset"].as_i64().unwrap(),
            });
        }
    }
    rows.sort();
    rows
}

fn by_partition(doc: &Value) -> BTreeMap<i64, Value> {
    doc["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["partition"].as_i64().unwrap(), p.clone()))
        .collect()
}

/// Waits until the newest batch file of `ckpt` is older than the store's running window, so a
/// write without `--force` is not refused as "the query looks alive".
fn wait_until_quiet(ckpt: &Path) {
    let newest = ["offsets", "commits"]
        .iter()
        .filter_map(|d| std::fs::read_dir(ckpt.join(d)).ok())
        .flat_map(Iterator::flatten)
        .filter_map(|e| e.metadata().ok()?.modified().ok())
        .max();
    if let Some(age) = newest.and_then(|m| SystemTime::now().duration_since(m).ok()) {
        let window = kwire_stores::spark::DEFAULT_RUNNING_WINDOW + Duration::from_millis(200);
        if let Some(left) = window.checked_sub(age) {
            std::thread::sleep(left);
        }
    }
}

fn kwire_ok(cluster: &Cluster, args: &[&str]) -> Output {
    let out = kwire(cluster, args);
    assert!(out.status.success(), "kwire {args:?} failed ({:?}): {}", out.status.code(), stderr(&out));
    out
}

#[test]
fn a_stopped_query_shows_what_spark_committed_and_its_lag_and_migrates_to_a_kafka_group() {
    let Some(cluster) = support::cluster() else { return };
    let Some(mut spark) = spark(&cluster) else { return };
    let topic = unique("spark-lag");
    let (dir, group) = (temp_dir("lag"), unique("spark-lag-group"));
    let (ckpt, output) = (dir.join("ckpt"), dir.join("out"));
    create_topic(&cluster, &topic, 6, 3);
    produce(&cluster, &topic, (0..600).map(|i| format!("a-{i}")));
    spark.run(&topic, &ckpt, &output).unwrap();
    produce(&cluster, &topic, (0..60).map(|i| format!("b-{i}")));

    // What the sink holds per partition: every record once, up to an offset.
    let rows = sink_rows(&output);
    assert_eq!(rows.len(), 600);
    let mut sunk: BTreeMap<i64, i64> = BTreeMap::new();
    for r in &rows {
        let next = sunk.entry(i64::from(r.partition)).or_default();
        *next = (*next).max(r.offset + 1);
    }
    let end = get_offset_shell(&cluster, &topic, "-1");
    let store = format!("spark:{}", ckpt.display());
    let doc = support::json(&kwire_ok(
        &cluster,
        &["group", "describe", "any-name", "--store", &store, "--topic", &topic, "--format", "json"],
    ));
    assert_eq!(doc["checkpoint"]["committed_batch"], 0, "{doc}");
    assert!(doc["checkpoint"]["pending_batch"].is_null());
    let parts = by_partition(&doc);
    assert_eq!(parts.len(), 6);
    let mut lag = 0;
    for (p, row) in &parts {
        let committed = sunk.get(p).copied().unwrap_or(0);
        assert_eq!(row["committed"], committed, "partition {p}: {row}");
        assert_eq!(row["lag"], end[&(*p as i32)] - committed, "partition {p}: {row}");
        lag += row["lag"].as_i64().unwrap();
    }
    assert_eq!(lag, 60);

    // Burrow-style monitors read Kafka groups: migrate, then Kafka's own tool sees the position.
    wait_until_quiet(&ckpt);
    kwire_ok(&cluster, &["migrate", "--group", &group, "--from", &store, "--to", "kafka", "--execute"]);
    let described = consumer_groups_describe(&cluster, &group, &topic);
    for (p, row) in &parts {
        assert_eq!(described[&(*p as i32)].0, row["committed"].as_i64().unwrap(), "partition {p}");
    }
}

#[test]
fn seed_000_on_spark_a_recreated_topic_is_named_before_the_restart_and_reset_repairs_it() {
    let Some(cluster) = support::cluster() else { return };
    let Some(mut spark) = spark(&cluster) else { return };
    let topic = unique("spark-recreated");
    let dir = temp_dir("recreated");
    let (ckpt, output) = (dir.join("ckpt"), dir.join("out"));
    create_topic(&cluster, &topic, 6, 3);
    produce(&cluster, &topic, (0..600).map(|i| format!("old-{i}")));
    spark.run(&topic, &ckpt, &output).unwrap();
    let before: BTreeMap<i32, i64> = get_offset_shell(&cluster, &topic, "-1");
    delete_topic_and_wait(&cluster, &topic);
    create_topic_retrying(&cluster, &topic, 6);
    produce(&cluster, &topic, (0..120).map(|i| format!("new-{i}")));
    let after = get_offset_shell(&cluster, &topic, "-1");

    let store = format!("spark:{}", ckpt.display());
    let plan =
        kwire(&cluster, &["plan", "--group", "q", "--store", &store, "--topic", &topic, "--format", "json"]);
    assert_eq!(plan.status.code(), Some(3), "{}", stderr(&plan));
    let doc: Value = serde_json::from_slice(&plan.stdout).unwrap();
    let mut named = 0;
    for (p, row) in by_partition(&doc) {
        let (stored, end) = (before[&(p as i32)], after[&(p as i32)]);
        if stored > end {
            // Spark keeps no topic id: a recreated topic is an offset ahead of the log.
            assert!(
                matches!(row["anomaly"]["kind"].as_str(), Some("offset_ahead_of_log" | "topic_recreated")),
                "partition {p}: {row}"
            );
            assert_eq!(row["anomaly"]["stored"], stored, "{row}");
            assert_eq!(row["anomaly"]["high_watermark"], end, "{row}");
            named += 1;
        }
    }
    assert!(named > 0, "some partition had more records before: {before:?} {after:?}");

    // The control: restarted without a reset, Spark fails the way the seeds describe.
    let control = dir.join("ckpt-control");
    let copied = Command::new("cp").arg("-r").arg(&ckpt).arg(&control).status().unwrap();
    assert!(copied.success());
    let failure = spark.run(&topic, &control, &dir.join("out-control")).unwrap_err();
    assert!(
        failure.contains("offset was changed from") || failure.contains("data may have been lost"),
        "Spark's own failure: {failure}"
    );

    wait_until_quiet(&ckpt);
    kwire_ok(
        &cluster,
        &["reset", "--group", "q", "--store", &store, "--topic", &topic, "--to", "earliest", "--execute"],
    );
    spark.run(&topic, &ckpt, &output).expect("the restarted query runs after the reset");
    let rows = sink_rows(&output);
    let new: Vec<_> = rows.iter().filter(|r| r.value.starts_with("new-")).collect();
    let distinct: BTreeSet<_> = new.iter().map(|r| &r.value).collect();
    assert_eq!((new.len(), distinct.len()), (120, 120), "exactly the new records, once each");
    assert_eq!(rows.len(), 600 + 120, "nothing of the old topic again");
}

#[test]
fn retention_past_the_checkpoint_is_data_loss_with_the_count_before_spark_fails() {
    let Some(cluster) = support::cluster() else { return };
    let Some(mut spark) = spark(&cluster) else { return };
    let topic = unique("spark-retention");
    let dir = temp_dir("retention");
    let (ckpt, output) = (dir.join("ckpt"), dir.join("out"));
    create_topic(&cluster, &topic, 6, 3);
    produce(&cluster, &topic, (0..300).map(|i| format!("a-{i}")));
    spark.run(&topic, &ckpt, &output).unwrap();
    let committed = get_offset_shell(&cluster, &topic, "-1");
    produce(&cluster, &topic, (0..600).map(|i| format!("b-{i}")));
    let end = get_offset_shell(&cluster, &topic, "-1");
    // Delete past the checkpoint on every partition: 10 records beyond what Spark processed.
    let deletes: Vec<String> =
        committed.iter().map(|(p, c)| format!("{p}={}", (c + 10).min(end[p]))).collect();
    let mut args = vec!["topic", "delete-records", topic.as_str()];
    args.extend(deletes.iter().map(String::as_str));
    kwire_ok(&cluster, &args);

    let store = format!("spark:{}", ckpt.display());
    let plan =
        kwire(&cluster, &["plan", "--group", "q", "--store", &store, "--topic", &topic, "--format", "json"]);
    assert_eq!(plan.status.code(), Some(3), "{}", stderr(&plan));
    let doc: Value = serde_json::from_slice(&plan.stdout).unwrap();
    for (p, row) in by_partition(&doc) {
        let lost = (committed[&(p as i32)] + 10).min(end[&(p as i32)]) - committed[&(p as i32)];
        if lost > 0 {
            assert_eq!(row["anomaly"]["kind"], "data_loss", "partition {p}: {row}");
            assert_eq!(row["lost"], lost, "partition {p}: {row}");
        }
    }
    let failure = spark.run(&topic, &ckpt, &output).unwrap_err();
    assert!(
        failure.to_lowercase().contains("data") && failure.contains("lost"),
        "Spark's own failure: {failure}"
    );
}

#[test]
fn seed_004_the_pyspark_batch_loop_reads_every_record_once_and_stores_every_partition() {
    let Some(cluster) = support::cluster() else { return };
    let Some(mut spark) = spark(&cluster) else { return };
    let topic = unique("spark-loop");
    let dir = temp_dir("loop");
    let (output, store) = (dir.join("out"), format!("file:{}", dir.join("offsets.json").display()));
    create_topic(&cluster, &topic, 6, 3);
    produce(&cluster, &topic, (0..600).map(|i| format!("r-{i}")));
    let output_arg = output.display().to_string();
    let args = [
        "--topic",
        &topic,
        "--group",
        "loop",
        "--store",
        &store,
        "--output",
        &output_arg,
        "--max-per-partition",
        "40",
        "--bootstrap",
        &cluster.bootstrap,
    ];
    let answer = spark.batch_loop(&args);
    assert_eq!(answer["ok"], true, "{answer}");
    assert_eq!(answer["records"], 600, "{answer}");
    let rounds = answer["rounds"].as_array().unwrap();
    assert!(rounds.len() >= 3, "at most 40 per partition and round: {answer}");
    eprintln!("batch loop rounds (records, kwire plan ms, spark ms, kwire commit ms): {rounds:?}");

    // Every record exactly once in the committed output (no crash here: nothing re-read).
    let mut values = Vec::new();
    for batch in std::fs::read_dir(&output).unwrap().flatten() {
        assert!(batch.path().join("_SUCCESS").exists(), "{}", batch.path().display());
        for part in std::fs::read_dir(batch.path()).unwrap().flatten() {
            let name = part.file_name().into_string().unwrap();
            if name.starts_with("part-") {
                for line in std::fs::read_to_string(part.path()).unwrap().lines() {
                    let v: Value = serde_json::from_str(line).unwrap();
                    values.push(v["value"].as_str().unwrap().to_owned());
                }
            }
        }
    }
    values.sort();
    let distinct: BTreeSet<_> = values.iter().collect();
    assert_eq!((values.len(), distinct.len()), (600, 600));

    // Every partition's stored offset is the end of its log, not only the last one's.
    let end = get_offset_shell(&cluster, &topic, "-1");
    let doc = support::json(&kwire_ok(
        &cluster,
        &["group", "describe", "loop", "--store", &store, "--format", "json"],
    ));
    for (p, row) in by_partition(&doc) {
        assert_eq!(row["committed"], end[&(p as i32)], "partition {p}: {row}");
    }
    // Caught up: the next plan has nothing, and the loop reads nothing again.
    let again = spark.batch_loop(&args);
    assert_eq!(again["records"], 0, "{again}");
}

#[test]
fn plan_format_spark_is_the_batch_as_spark_read_options_and_prints_nothing_when_it_fails() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("spark-format");
    let dir = temp_dir("format");
    let store = format!("file:{}", dir.join("offsets.json").display());
    create_topic(&cluster, &topic, 2, 3);
    produce(&cluster, &topic, (0..100).map(|i| format!("v-{i}")));
    let end = get_offset_shell(&cluster, &topic, "-1");
    kwire_ok(
        &cluster,
        &["commit", "--group", "g", "--store", &store, &format!("{topic}:0=1"), &format!("{topic}:1=0")],
    );
    let doc = support::json(&kwire_ok(
        &cluster,
        &[
            "plan",
            "--group",
            "g",
            "--store",
            &store,
            "--topic",
            &topic,
            "--max-per-partition",
            "5",
            "--format",
            "spark",
        ],
    ));
    let (e0, e1) = (end[&0], end[&1]);
    assert_eq!(doc["assign"], json!({ &topic: [0, 1] }), "{doc}");
    assert_eq!(doc["startingOffsets"], json!({ &topic: {"0": 1, "1": 0} }), "{doc}");
    assert_eq!(doc["endingOffsets"], json!({ &topic: {"0": (1 + 5).min(e0), "1": 5.min(e1)} }), "{doc}");
    assert_eq!(doc["records"], (5.min(e0 - 1) + 5.min(e1)), "{doc}");

    // An offset past the log: nothing a job could read by mistake, the partition named.
    kwire_ok(
        &cluster,
        &["commit", "--group", "g", "--store", &store, "--force", &format!("{topic}:0={}", e0 + 50)],
    );
    let failed =
        kwire(&cluster, &["plan", "--group", "g", "--store", &store, "--topic", &topic, "--format", "spark"]);
    assert_eq!(failed.status.code(), Some(3), "{}", stderr(&failed));
    assert!(failed.stdout.is_empty(), "{}", support::stdout(&failed));
    assert!(stderr(&failed).contains(&format!("{topic}:0")), "{}", stderr(&failed));

    let other = kwire(&cluster, &["metadata", &topic, "--format", "spark"]);
    assert_eq!(other.status.code(), Some(1), "--format spark is for plan only: {}", stderr(&other));
}

fn topic_id(cluster: &Cluster, topic: &str) -> String {
    let doc = support::json(&kwire_ok(cluster, &["metadata", topic, "--format", "json"]));
    doc["topics"][0]["topic_id"].as_str().expect("the topic has an id").to_owned()
}

#[test]
fn a_topic_recreated_and_refilled_past_the_checkpoint_is_named_by_the_topic_id_kwire_recorded() {
    let Some(cluster) = support::cluster() else { return };
    let Some(mut spark) = spark(&cluster) else { return };
    let topic = unique("spark-topic-id");
    let dir = temp_dir("topic-id");
    let (ckpt, output) = (dir.join("ckpt"), dir.join("out"));
    let store = format!("spark:{}", ckpt.display());
    create_topic(&cluster, &topic, 6, 3);
    produce(&cluster, &topic, (0..120).map(|i| format!("a-{i}")));
    spark.run(&topic, &ckpt, &output).unwrap();
    let old_id = topic_id(&cluster, &topic);

    // kwire moves the query past the `b-` records: batch 1, and the side file with the id.
    produce(&cluster, &topic, (0..60).map(|i| format!("b-{i}")));
    kwire_ok(&cluster, &reset_to_latest(&store, &topic, &[]));
    let side_path = ckpt.join(kwire_stores::spark::topic_ids::FILE_NAME);
    let side = std::fs::read(&side_path).expect("kwire wrote its topic-id file");
    let recorded = kwire_stores::spark::topic_ids::parse(&side).unwrap();
    assert_eq!(recorded.batch, 1);
    assert_eq!(recorded.ids[&topic].to_string(), old_id);

    // Spark ignores the side file: a query started on this checkpoint resumes from kwire's
    // batch (the `b-` records skipped, the `c-` ones read), and leaves the file as it was.
    produce(&cluster, &topic, (0..60).map(|i| format!("c-{i}")));
    spark.run(&topic, &ckpt, &output).expect("Spark runs on a checkpoint holding kwire's side file");
    let rows = sink_rows(&output);
    let prefixes: BTreeMap<&str, usize> = rows.iter().fold(BTreeMap::new(), |mut m, r| {
        *m.entry(&r.value[..2]).or_default() += 1;
        m
    });
    assert_eq!(prefixes, BTreeMap::from([("a-", 120), ("c-", 60)]), "{rows:?}");
    assert!(ckpt.join("commits/2").exists(), "Spark committed its own batch after kwire's");
    assert_eq!(std::fs::read(&side_path).unwrap(), side, "Spark left the side file alone");
    let stored: BTreeMap<i64, i64> = by_partition(&support::json(&kwire_ok(
        &cluster,
        &["group", "describe", "q", "--store", &store, "--topic", &topic, "--format", "json"],
    )))
    .into_iter()
    .map(|(p, row)| (p, row["committed"].as_i64().unwrap()))
    .collect();

    // Recreated and refilled past every stored offset: nothing is ahead of the log, and only
    // the recorded id tells.
    delete_topic_and_wait(&cluster, &topic);
    create_topic_retrying(&cluster, &topic, 6);
    let mut n = 0;
    loop {
        produce(&cluster, &topic, (n..n + 600).map(|i| format!("new-{i}")));
        n += 600;
        let end = get_offset_shell(&cluster, &topic, "-1");
        if stored.iter().all(|(p, s)| end[&(*p as i32)] > *s) {
            break;
        }
        assert!(n < 6000, "partitions stay below the stored offsets: {end:?} {stored:?}");
    }
    let new_id = topic_id(&cluster, &topic);
    assert_ne!(new_id, old_id);
    let plan =
        kwire(&cluster, &["plan", "--group", "q", "--store", &store, "--topic", &topic, "--format", "json"]);
    assert_eq!(plan.status.code(), Some(3), "{}", stderr(&plan));
    let doc: Value = serde_json::from_slice(&plan.stdout).unwrap();
    let parts = by_partition(&doc);
    assert_eq!(parts.len(), 6);
    for (p, row) in parts {
        let anomaly = &row["anomaly"];
        assert_eq!(anomaly["kind"], "topic_recreated", "partition {p}: {row}");
        assert_eq!(anomaly["stored_topic_id"], old_id.as_str(), "partition {p}: {row}");
        assert_eq!(anomaly["topic_id"], new_id.as_str(), "partition {p}: {row}");
        assert_eq!(anomaly["stored"], stored[&p], "partition {p}: {row}");
    }

    // The control: without kwire's side file the same checkpoint looks fine (Spark's view).
    std::fs::remove_file(&side_path).unwrap();
    let blind = kwire_ok(
        &cluster,
        &["plan", "--group", "q", "--store", &store, "--topic", &topic, "--format", "json"],
    );
    for (p, row) in by_partition(&support::json(&blind)) {
        assert!(row["anomaly"].is_null(), "partition {p}: {row}");
    }
}

/// How many values start with each prefix (the part before `-`).
fn prefixes<'a>(values: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, usize> {
    values.into_iter().fold(BTreeMap::new(), |mut m, v| {
        *m.entry(v.split('-').next().unwrap_or_default().to_owned()).or_default() += 1;
        m
    })
}

fn sink_log_file(output: &Path, name: &str) -> String {
    let path = output.join("_spark_metadata").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The entry lines (after `v1`) of sink log files.
fn entry_lines(output: &Path, names: &[&str]) -> Vec<String> {
    names
        .iter()
        .flat_map(|n| sink_log_file(output, n).lines().skip(1).map(str::to_owned).collect::<Vec<_>>())
        .collect()
}

/// The arguments of `kwire reset --to latest --execute --force` of `topic` in the Spark
/// checkpoint `store` (group `q`), followed by `extra` (the `--spark-sink*` flags a test writes
/// the sink with).
fn reset_to_latest<'a>(store: &'a str, topic: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["reset", "--group", "q", "--store", store, "--topic", topic, "--to", "latest"];
    args.extend(["--execute", "--force"]);
    args.extend(extra);
    args
}

fn copy_dir(from: &Path, to: &Path) {
    let copied = Command::new("cp").arg("-r").arg(from).arg(to).status().unwrap();
    assert!(copied.success(), "cp -r {} {}", from.display(), to.display());
}

#[test]
fn a_kwire_batch_that_is_a_file_sinks_compaction_batch_is_compacted_into_its_log_with_spark_sink() {
    let Some(cluster) = support::cluster() else { return };
    let Some(mut spark) = spark(&cluster) else { return };
    let topic = unique("spark-sink-compact");
    let dir = temp_dir("sink-compact");
    let (ckpt, output) = (dir.join("ckpt"), dir.join("out"));
    let (ckpt_control, output_control) = (dir.join("ckpt-control"), dir.join("out-control"));
    let store = format!("spark:{}", ckpt.display());
    let every3 = SinkRun { compact_interval: Some(3), max_offsets_per_trigger: None, retention: None };
    create_topic(&cluster, &topic, 6, 3);
    // Batches 0 and 1 (one per run), then `b-` records the reset skips.
    produce(&cluster, &topic, (0..60).map(|i| format!("a-{i}")));
    spark.run_with(&topic, &ckpt, &output, &every3).unwrap();
    produce(&cluster, &topic, (60..120).map(|i| format!("a-{i}")));
    spark.run_with(&topic, &ckpt, &output, &every3).unwrap();
    assert!(ckpt.join("commits/1").exists() && !ckpt.join("offsets/2").exists(), "one batch per run");
    produce(&cluster, &topic, (0..60).map(|i| format!("b-{i}")));
    copy_dir(&ckpt, &ckpt_control);
    copy_dir(&output, &output_control);

    // kwire's batch 2 is the sink's compaction batch at interval 3: 2.compact, every entry of
    // batches 0 and 1 (kwire's own batch wrote no files).
    let output_arg = output.display().to_string();
    let sink = ["--spark-sink", &output_arg, "--spark-sink-compact-interval", "3"];
    kwire_ok(&cluster, &reset_to_latest(&store, &topic, &sink));
    assert!(ckpt.join("commits/2").exists());
    assert!(!output.join("_spark_metadata/2").exists());
    let compacted = sink_log_file(&output, "2.compact");
    assert!(compacted.starts_with("v1\n"), "{compacted}");
    assert_eq!(
        compacted.lines().skip(1).map(str::to_owned).collect::<Vec<_>>(),
        entry_lines(&output, &["0", "1"])
    );
    let read = spark.read(&output).expect("spark.read of the sink folder after kwire's batch");
    assert_eq!(prefixes(read.iter().map(String::as_str)), BTreeMap::from([("a".into(), 120)]));

    // The control: the same write without --spark-sink leaves batch 2 out of the sink's log.
    kwire_ok(&cluster, &reset_to_latest(&format!("spark:{}", ckpt_control.display()), &topic, &[]));
    assert!(!output_control.join("_spark_metadata/2.compact").exists());

    // Restarted: batches 3, 4 and the next compaction batch 5 (30 records each).
    produce(&cluster, &topic, (0..90).map(|i| format!("d-{i}")));
    let every3_by30 =
        SinkRun { compact_interval: Some(3), max_offsets_per_trigger: Some(30), retention: None };
    spark.run_with(&topic, &ckpt, &output, &every3_by30).expect("the query runs past its next compaction");
    assert!(ckpt.join("commits/5").exists(), "Spark committed batches 3 to 5");
    assert!(output.join("_spark_metadata/5.compact").exists(), "Spark compacted batch 5");
    let rows = sink_rows(&output);
    let expected = BTreeMap::from([("a".into(), 120), ("d".into(), 90)]);
    assert_eq!(prefixes(rows.iter().map(|r| r.value.as_str())), expected, "no b- record");
    let read = spark.read(&output).expect("spark.read after Spark's compaction");
    assert_eq!(prefixes(read.iter().map(String::as_str)), expected);

    // The control fails the way the README records: Spark's compaction needs batch 2's entry,
    // and a reader of the sink folder needs it once Spark wrote batch 3.
    let failure = spark.run_with(&topic, &ckpt_control, &output_control, &every3_by30).unwrap_err();
    assert!(
        failure.contains("BATCH_METADATA_NOT_FOUND") && failure.contains("_spark_metadata/2.compact"),
        "Spark's own failure: {failure}"
    );
    let failure = spark.read(&output_control).unwrap_err();
    assert!(failure.contains("_spark_metadata/2.compact") && failure.contains("doesn't exist"), "{failure}");
}

#[test]
fn a_kwire_batch_that_is_a_plain_file_sink_batch_gets_v1_alone_and_the_query_compacts_past_it() {
    let Some(cluster) = support::cluster() else { return };
    let Some(mut spark) = spark(&cluster) else { return };
    let topic = unique("spark-sink-plain");
    let dir = temp_dir("sink-plain");
    let (ckpt, output) = (dir.join("ckpt"), dir.join("out"));
    let store = format!("spark:{}", ckpt.display());
    let every3 = SinkRun { compact_interval: Some(3), max_offsets_per_trigger: None, retention: None };
    create_topic(&cluster, &topic, 6, 3);
    produce(&cluster, &topic, (0..60).map(|i| format!("a-{i}")));
    spark.run_with(&topic, &ckpt, &output, &every3).unwrap();
    produce(&cluster, &topic, (0..30).map(|i| format!("b-{i}")));
    let output_arg = output.display().to_string();
    let reset = |sink: &str| {
        kwire(
            &cluster,
            &reset_to_latest(&store, &topic, &["--spark-sink", sink, "--spark-sink-compact-interval", "3"]),
        )
    };

    // A sink folder without a log is refused, one line naming it, and nothing is written.
    let nowhere = dir.join("nowhere");
    let refused = reset(&nowhere.display().to_string());
    assert_eq!(refused.status.code(), Some(6), "{}", stderr(&refused));
    let text = stderr(&refused);
    assert_eq!(text.trim().lines().count(), 1, "{text}");
    assert!(text.contains(&format!("{}/_spark_metadata", nowhere.display())), "{text}");
    assert!(!ckpt.join("offsets/1").exists(), "nothing written");

    // Batch 1 is a plain batch at interval 3: `v1` alone, as Spark writes a batch with no files.
    let out = reset(&output_arg);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(ckpt.join("commits/1").exists());
    assert_eq!(sink_log_file(&output, "1"), "v1");
    let read = spark.read(&output).expect("spark.read of the sink folder after kwire's batch");
    assert_eq!(prefixes(read.iter().map(String::as_str)), BTreeMap::from([("a".into(), 60)]));

    // Restarted: batches 2 (a compaction, which needs batch 1's entry) and 3.
    produce(&cluster, &topic, (0..60).map(|i| format!("d-{i}")));
    let by30 = SinkRun { compact_interval: Some(3), max_offsets_per_trigger: Some(30), retention: None };
    spark.run_with(&topic, &ckpt, &output, &by30).expect("the query runs past its next compaction");
    assert!(ckpt.join("commits/3").exists(), "Spark committed batches 2 and 3");
    assert!(output.join("_spark_metadata/2.compact").exists());
    let expected = BTreeMap::from([("a".into(), 60), ("d".into(), 60)]);
    assert_eq!(prefixes(sink_rows(&output).iter().map(|r| r.value.as_str())), expected, "no b- record");
    let read = spark.read(&output).expect("spark.read after Spark's compaction");
    assert_eq!(prefixes(read.iter().map(String::as_str)), expected);

    // A later kwire write goes on from Spark's newest batch, never over Spark's files.
    let newest = kwire_stores::spark::checkpoint::batch_ids(&ckpt.join("commits")).unwrap();
    let next = newest.last().unwrap() + 1;
    produce(&cluster, &topic, (0..6).map(|i| format!("e-{i}")));
    let out = reset(&output_arg);
    assert!(out.status.success(), "{}", stderr(&out));
    let written = sink_log_file(&output, &kwire_stores::spark::sink::file_name(next, 3));
    assert!(written.starts_with("v1"), "{written}");
    assert!(spark.read(&output).is_ok(), "spark.read after the second kwire batch");
}

/// The file sink's `retention` the retention test's query runs with, and how long it waits
/// for the first batch's files to expire (the kwire write and Spark's own compaction of a copy
/// both take place within seconds of the second batch, well inside the retention).
const RETENTION: &str = "20s";
const PAST_RETENTION: Duration = Duration::from_secs(22);

#[test]
fn a_kwire_compaction_batch_with_spark_sink_retention_drops_what_sparks_own_compaction_drops() {
    let Some(cluster) = support::cluster() else { return };
    let Some(mut spark) = spark(&cluster) else { return };
    let topic = unique("spark-sink-retention");
    let dir = temp_dir("sink-retention");
    let (ckpt, output, output_spark) = (dir.join("ckpt"), dir.join("out"), dir.join("out-spark"));
    let store = format!("spark:{}", ckpt.display());
    let run =
        SinkRun { compact_interval: Some(3), max_offsets_per_trigger: None, retention: Some(RETENTION) };
    create_topic(&cluster, &topic, 6, 3);
    // Batch 0 (`a-`), left to expire; batch 1 (`b-`) fresh; then `x-` records the reset skips.
    produce(&cluster, &topic, (0..60).map(|i| format!("a-{i}")));
    spark.run_with(&topic, &ckpt, &output, &run).unwrap();
    std::thread::sleep(PAST_RETENTION);
    produce(&cluster, &topic, (0..60).map(|i| format!("b-{i}")));
    spark.run_with(&topic, &ckpt, &output, &run).unwrap();
    assert!(ckpt.join("commits/1").exists() && !ckpt.join("offsets/2").exists(), "one batch per run");
    produce(&cluster, &topic, (0..30).map(|i| format!("x-{i}")));
    copy_dir(&output, &output_spark);

    // kwire's batch 2 is the sink's compaction batch at interval 3.
    let output_arg = output.display().to_string();
    let sink = [
        "--spark-sink",
        &output_arg,
        "--spark-sink-compact-interval",
        "3",
        "--spark-sink-retention",
        RETENTION,
    ];
    kwire_ok(&cluster, &reset_to_latest(&store, &topic, &sink));
    // Spark's own compaction of the same log, with the same retention, moments later: the
    // oracle for what Spark drops.
    let millis =
        spark.compact(&output_spark, 2, RETENTION, 3).expect("Spark's FileStreamSinkLog compacts the copy");
    assert_eq!(millis, 20_000, "Spark parsed {RETENTION}");
    let kwire_compact = sink_log_file(&output, "2.compact");
    let spark_compact = sink_log_file(&output_spark, "2.compact");
    assert_eq!(kwire_compact, spark_compact, "kwire's 2.compact is Spark's, byte for byte");
    // What both dropped: every entry of batch 0 (older than the retention), none of batch 1.
    let kept: Vec<String> = kwire_compact.lines().skip(1).map(str::to_owned).collect();
    assert_eq!(kept, entry_lines(&output, &["1"]));
    assert!(!entry_lines(&output, &["0"]).is_empty(), "batch 0 wrote files");
    let read = spark.read(&output).expect("spark.read of the sink folder after kwire's compaction");
    assert_eq!(prefixes(read.iter().map(String::as_str)), BTreeMap::from([("b".into(), 60)]), "a- expired");

    // Restarted (with its retention): batch 3 after kwire's compaction, no `x-` record.
    produce(&cluster, &topic, (0..60).map(|i| format!("c-{i}")));
    spark.run_with(&topic, &ckpt, &output, &run).expect("the query resumes after kwire's compaction batch");
    assert!(ckpt.join("commits/3").exists(), "Spark committed batch 3");
    assert_eq!(sink_log_file(&output, "2.compact"), kwire_compact, "Spark kept kwire's compaction");
    let read = spark.read(&output).expect("spark.read after the restarted query's batch");
    assert_eq!(
        prefixes(read.iter().map(String::as_str)),
        BTreeMap::from([("b".into(), 60), ("c".into(), 60)])
    );
}

#[test]
fn a_spark_3_5_query_is_read_by_kwire_and_resumes_from_a_batch_kwire_wrote() {
    let Some(cluster) = support::cluster() else { return };
    let Some(mut spark) = spark_3_5(&cluster) else { return };
    let topic = unique("spark35");
    let dir = temp_dir("spark35");
    let (ckpt, output) = (dir.join("ckpt"), dir.join("out"));
    let store = format!("spark:{}", ckpt.display());
    create_topic(&cluster, &topic, 6, 3);
    produce(&cluster, &topic, (0..600).map(|i| format!("a-{i}")));
    spark.run(&topic, &ckpt, &output).unwrap();

    // What Spark 3.5 committed is what its sink wrote, per partition.
    let mut sunk: BTreeMap<i64, i64> = BTreeMap::new();
    for r in sink_rows(&output) {
        let next = sunk.entry(i64::from(r.partition)).or_default();
        *next = (*next).max(r.offset + 1);
    }
    let doc = support::json(&kwire_ok(
        &cluster,
        &["group", "describe", "q", "--store", &store, "--topic", &topic, "--format", "json"],
    ));
    assert_eq!(doc["checkpoint"]["committed_batch"], 0, "{doc}");
    let parts = by_partition(&doc);
    assert_eq!(parts.len(), 6);
    for (p, row) in &parts {
        assert_eq!(row["committed"], sunk.get(p).copied().unwrap_or(0), "partition {p}: {row}");
    }

    // kwire writes batch 1 past the `b-` records (with the sink's entry); Spark 3.5 resumes there.
    produce(&cluster, &topic, (0..60).map(|i| format!("b-{i}")));
    let output_arg = output.display().to_string();
    kwire_ok(&cluster, &reset_to_latest(&store, &topic, &["--spark-sink", &output_arg]));
    assert_eq!(sink_log_file(&output, "1"), "v1");
    produce(&cluster, &topic, (0..60).map(|i| format!("c-{i}")));
    spark.run(&topic, &ckpt, &output).expect("Spark 3.5 resumes from kwire's batch");
    assert!(ckpt.join("commits/2").exists(), "Spark 3.5 committed its batch after kwire's");
    let expected = BTreeMap::from([("a".into(), 600), ("c".into(), 60)]);
    assert_eq!(prefixes(sink_rows(&output).iter().map(|r| r.value.as_str())), expected);
    let read = spark.read(&output).expect("spark.read with Spark 3.5");
    assert_eq!(prefixes(read.iter().map(String::as_str)), expected);
}
