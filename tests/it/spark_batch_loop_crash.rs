//! Seed 004 on real PySpark: `examples/pyspark/batch_loop.py` consumes a 6-partition topic
//! under a live producer while its driver (the Python process and the JVM it started, one
//! process group) is killed with SIGKILL at random moments, then restarted. The loop says each
//! commit's offsets on stderr before it stores them (a `committing` line), so the test sees
//! each commit, including one killed half-way.
//!
//! The kill moments come from a seed printed at the start; `KWIRE_SPARK_KILL_SEED=N` replays
//! one. `KWIRE_SPARK_KILLS` sets the number of kills (default and minimum 10).
//!
//! Without Spark installed this test prints a note and passes; with `CI` or
//! `KWIRE_REQUIRE_CLUSTER` set (as `scripts/test` does, after installing it) it fails instead.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use crate::support::{self, create_topic, get_offset_shell, kwire, stderr, unique, Cluster};

const PARTITIONS: i32 = 6;
const MIN_KILLS: usize = 10;
/// How long a driver may take to finish its first round (JVM start included).
const FIRST_ROUND_TIMEOUT: Duration = Duration::from_secs(180);
/// How long the last run, not killed, may take to read what is left.
const LAST_RUN_TIMEOUT: Duration = Duration::from_secs(300);

/// xorshift64*: the kill moments, reproducible from the printed seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

/// A live producer, slower than the loop reads (60 records/s; a round reads up to 1,000 per
/// partition, so one round takes the whole backlog a restart left and the last run catches up
/// at once): chunks of records `p-N` (key `k-N`) through `kwire produce` until stopped;
/// `acked` holds every value of a chunk kwire reported written.
struct Producer {
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Vec<String>>>,
    thread: std::thread::JoinHandle<()>,
}

impl Producer {
    fn start(cluster: &Cluster, topic: &str) -> Producer {
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let (bootstrap, topic) = (cluster.bootstrap.clone(), topic.to_owned());
        let (stop2, acked2) = (stop.clone(), acked.clone());
        let thread = std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop2.load(Ordering::SeqCst) {
                let values: Vec<String> = (n..n + 30).map(|i| format!("p-{i}")).collect();
                n += 30;
                let lines = values.iter().fold(String::new(), |mut out, v| {
                    let _ = writeln!(out, "k{v},{v}");
                    out
                });
                let mut child = spawn_kwire_produce(&topic, &bootstrap);
                child.stdin.take().unwrap().write_all(lines.as_bytes()).unwrap();
                let out = child.wait_with_output().unwrap();
                assert!(out.status.success(), "produce: {}", stderr(&out));
                acked2.lock().unwrap().extend(values);
                std::thread::sleep(Duration::from_millis(500));
            }
        });
        Producer { stop, acked, thread }
    }

    fn stop(self) -> Vec<String> {
        self.stop.store(true, Ordering::SeqCst);
        if let Err(panic) = self.thread.join() {
            panic!("the live producer failed: {}", support::panic_text(&*panic));
        }
        Arc::try_unwrap(self.acked).unwrap().into_inner().unwrap()
    }
}

/// `kwire produce TOPIC` with stdin and stderr piped.
fn spawn_kwire_produce(topic: &str, bootstrap: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_kwire"))
        .args(["produce", topic, "--key-separator", ","])
        .env("KWIRE_BOOTSTRAP", bootstrap)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kwire produce starts")
}

/// One run of the example's driver, in its own process group, its stderr copied to `log`;
/// `rounds` receives a message per finished round.
struct Driver {
    child: Child,
    rounds: Receiver<()>,
    pgid: u32,
}

impl Driver {
    fn start(spark: &BTreeMap<String, String>, args: &[String], log: &Path) -> Driver {
        let mut child = Command::new(support::repo_root().join("scripts/spark"))
            .arg("run")
            .arg(support::repo_root().join("examples/pyspark/batch_loop.py"))
            .args(args)
            .env("SPARK_MASTER", "local[1]")
            .env("KWIRE_SPARK_JARS", &spark["KWIRE_SPARK_JARS"])
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("scripts/spark run starts");
        let pgid = child.id();
        let err = child.stderr.take().expect("piped");
        let mut log = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
        let (tx, rounds) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = writeln!(log, "{line}");
                // A round's line (Spark's console progress, if on, may precede it after a `\r`).
                if line.contains("{\"records\"") {
                    let _ = tx.send(());
                }
            }
        });
        Driver { child, rounds, pgid }
    }

    /// SIGKILL to the driver's whole group (Python, spark-submit's JVM, a kwire it runs), then
    /// waits until every process of the group is gone.
    fn kill(mut self) {
        let group = format!("-{}", self.pgid);
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.wait();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Command::new("kill")
            .args(["-0", "--", &group])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
        {
            assert!(Instant::now() < deadline, "process group {group} still alive 30 s after SIGKILL");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// The offsets of each commit the loop attempted, in order: the `{"committing": [[topic,
/// partition, until], ...]}` lines the loop printed before storing them (a line cut by a kill
/// does not parse and is skipped).
fn attempted_commits(log: &Path, topic: &str) -> Vec<BTreeMap<i32, i64>> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(&line[line.find("{\"committing\"")?..]).ok())
        .map(|line| {
            line["committing"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|r| r[0].as_str() == Some(topic))
                .filter_map(|r| Some((i32::try_from(r[1].as_i64()?).ok()?, r[2].as_i64()?)))
                .collect()
        })
        .collect()
}

fn stored(cluster: &Cluster, store: &str) -> BTreeMap<i32, i64> {
    let out = kwire(cluster, &["group", "describe", "loop", "--store", store, "--format", "json"]);
    assert!(out.status.success(), "describe: {}", stderr(&out));
    support::json(&out)["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| Some((p["partition"].as_i64()? as i32, p["committed"].as_i64()?)))
        .collect()
}

fn assert_not_behind(later: &BTreeMap<i32, i64>, earlier: &BTreeMap<i32, i64>, what: &str) {
    for (p, o) in earlier {
        let now = later.get(p).copied().unwrap_or(-1);
        assert!(now >= *o, "{what}: partition {p} went back from {o} to {now} ({earlier:?} -> {later:?})");
    }
}

/// Every record of the output folders Spark finished (`_SUCCESS`): (partition, offset, value).
fn output_records(output: &Path) -> Vec<(i32, i64, String)> {
    let mut records = Vec::new();
    for batch in std::fs::read_dir(output).into_iter().flatten().flatten() {
        if !batch.path().join("_SUCCESS").exists() {
            continue;
        }
        for part in std::fs::read_dir(batch.path()).unwrap().flatten() {
            if !part.file_name().to_string_lossy().starts_with("part-") {
                continue;
            }
            for line in std::fs::read_to_string(part.path()).unwrap().lines() {
                let v: Value = serde_json::from_str(line).unwrap();
                records.push((
                    v["partition"].as_i64().unwrap() as i32,
                    v["offset"].as_i64().unwrap(),
                    v["value"].as_str().unwrap().to_owned(),
                ));
            }
        }
    }
    records
}

#[test]
fn seed_004_a_batch_loop_driver_killed_at_random_moments_skips_nothing_and_never_goes_back() {
    let Some(cluster) = support::cluster() else { return };
    let Some(spark) = support::spark_env() else { return };
    let started = Instant::now();
    let seed =
        std::env::var("KWIRE_SPARK_KILL_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
        });
    let kills = std::env::var("KWIRE_SPARK_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(MIN_KILLS)
        .max(MIN_KILLS);
    eprintln!("kill moments from KWIRE_SPARK_KILL_SEED={seed}, {kills} kills");
    let mut rng = Rng(seed);

    let topic = unique("spark-crash-loop");
    let dir = std::env::temp_dir().join(unique("kwire-spark-crash"));
    std::fs::create_dir_all(&dir).unwrap();
    let (output, log) = (dir.join("out"), dir.join("driver.log"));
    let store = format!("file:{}", dir.join("offsets.json").display());
    let args: Vec<String> = [
        "--topic",
        &topic,
        "--group",
        "loop",
        "--store",
        &store,
        "--output",
        &output.display().to_string(),
        "--max-per-partition",
        "1000",
        "--bootstrap",
        &cluster.bootstrap,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();

    create_topic(&cluster, &topic, PARTITIONS as u32, 3);
    let producer = Producer::start(&cluster, &topic);
    let mut snapshots: Vec<BTreeMap<i32, i64>> = Vec::new();
    let mut killed = 0;
    let mut runs = 0;
    while killed < kills {
        // A driver run with the producer gone finishes alone, and the loop would start drivers
        // for ever: the producer's failure ends the test instead.
        if producer.thread.is_finished() {
            producer.stop();
            panic!("the live producer stopped before the test asked it to");
        }
        runs += 1;
        let mut driver = Driver::start(&spark, &args, &log);
        // Kill at a random moment after the driver finished 0 to 2 rounds of this run: inside a
        // plan, a Spark read or write, a commit, or between them.
        let wait_rounds = rng.below(3);
        let mut finished_alone = false;
        for _ in 0..=wait_rounds {
            match driver.rounds.recv_timeout(FIRST_ROUND_TIMEOUT) {
                Ok(()) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    finished_alone = true;
                    break;
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no round of the batch loop in {FIRST_ROUND_TIMEOUT:?}; its log:\n{}", tail(&log))
                }
            }
        }
        if finished_alone {
            let status = driver.child.wait().unwrap();
            assert!(status.success(), "the driver failed ({status}); its log:\n{}", tail(&log));
        } else {
            std::thread::sleep(Duration::from_millis(rng.below(2500)));
            driver.kill();
            killed += 1;
        }
        // The store after the kill: one of the commits attempted, never behind the last snapshot.
        let now = stored(&cluster, &store);
        assert!(
            attempted_commits(&log, &topic).contains(&now),
            "the stored offsets {now:?} are no commit the loop made"
        );
        if let Some(last) = snapshots.last() {
            assert_not_behind(&now, last, &format!("the store after kill {killed}"));
        }
        snapshots.push(now);
    }
    let acked = producer.stop();
    // The last run, not killed: reads until the plan has nothing left.
    let mut last = Driver::start(&spark, &args, &log);
    let deadline = Instant::now() + LAST_RUN_TIMEOUT;
    let status = loop {
        if let Some(status) = last.child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            last.kill();
            panic!("the last driver run did not catch up in {LAST_RUN_TIMEOUT:?}; its log:\n{}", tail(&log));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "the last driver run failed ({status}); its log:\n{}", tail(&log));

    // Every commit names every partition (seed 004 kept only the last one's), and no commit
    // moves a partition back.
    let attempts = attempted_commits(&log, &topic);
    for (i, pair) in attempts.windows(2).enumerate() {
        assert_not_behind(&pair[1], &pair[0], &format!("commit {}", i + 1));
    }
    for (i, attempt) in attempts.iter().enumerate() {
        assert_eq!(attempt.len(), PARTITIONS as usize, "commit {i} names every partition: {attempt:?}");
    }
    // Every partition's stored offset is the end of its log.
    let end = get_offset_shell(&cluster, &topic, "-1");
    let end_stored = stored(&cluster, &store);
    assert_eq!(end_stored, end, "every partition's stored offset is the end of its log");
    // Every produced record is in the output at least once, every offset of every partition
    // [0, end) too (none skipped), and nothing else.
    let records = output_records(&output);
    let values: BTreeSet<&str> = records.iter().map(|(_, _, v)| v.as_str()).collect();
    let produced: BTreeSet<&str> = acked.iter().map(String::as_str).collect();
    let missing: Vec<_> = produced.difference(&values).take(10).collect();
    assert!(missing.is_empty(), "produced but not in the output: {missing:?} ...");
    assert_eq!(values, produced, "the output holds only produced records");
    for (p, e) in &end {
        let offsets: BTreeSet<i64> = records.iter().filter(|r| r.0 == *p).map(|r| r.1).collect();
        assert_eq!(offsets.len() as i64, *e, "partition {p}: every offset of [0, {e}) read");
        assert_eq!(offsets.last().copied(), e.checked_sub(1).filter(|l| *l >= 0), "partition {p}");
    }
    let duplicates = records.len() - values.len();
    eprintln!(
        "seed 004 crash loop: {} records produced, {killed} kills in {runs} runs, {} commits, {duplicates} \
         records read twice (re-read batches), {:.1} s",
        produced.len(),
        attempts.len(),
        started.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
