//! The crash test: while a producer writes `p<partition>-<n>` to a four-partition topic, a
//! driver process (`kwire-stream-sink`) consumes it, appending every processed record to a log
//! file that it fsyncs before each commit; the test kills it with SIGKILL at random moments at
//! least 20 times and restarts it, then lets a last one drain the topic. The log must show every
//! produced record processed at least once, every commit and every resume position covered by
//! records processed before it (none skipped), and stored offsets that never went backwards.
//! Once with the file store, once with ZooKeeper, which is stopped and started again in the
//! middle.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_client::{Client, ProduceOptions, ProduceRecord};
use kwire_stores::FileStore;
use kwire_stream::ZkStore;
use offset_store::OffsetStore;

use support::{cluster, create_topic, exit_within, tp, unique, Cluster, Rng};

const PARTITIONS: i32 = 4;
const KILLS: u32 = 21;

struct Run {
    cluster: Cluster,
    topic: String,
    group: String,
    store: String,
    log: PathBuf,
    stderr: PathBuf,
}

impl Run {
    fn spawn(&self, drain: bool) -> Child {
        let stderr = File::options().create(true).append(true).open(&self.stderr).expect("stderr file");
        let mut command = Command::new(env!("CARGO_BIN_EXE_kwire-stream-sink"));
        command
            .args(["--bootstrap", &self.cluster.bootstrap, "--group", &self.group, "--topic", &self.topic])
            .args(["--store", &self.store, "--log"])
            .arg(&self.log)
            .args(["--max-per-partition", "25"])
            .stdout(Stdio::null())
            .stderr(stderr);
        if drain {
            command.arg("--exit-when-idle");
        }
        command.spawn().expect("the sink starts")
    }

    /// Waits until the log holds `starts` start lines; panics if the sink exits first.
    async fn wait_for_start(&self, child: &mut Child, starts: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = fs::read_to_string(&self.log).unwrap_or_default();
            if text.lines().filter(|l| l.starts_with("S ")).count() >= starts {
                return;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the sink exited by itself ({status}):\n{}", self.stderr_tail());
            }
            assert!(Instant::now() < deadline, "the sink did not start in 30 s:\n{}", self.stderr_tail());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    fn stderr_tail(&self) -> String {
        let text = fs::read_to_string(&self.stderr).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

/// Produces `p<partition>-<n>` in rounds of 10 per partition until told to stop; the count per
/// partition.
async fn producer(client: Arc<Client>, topic: String, stop: Arc<AtomicBool>) -> Vec<usize> {
    let mut counts = vec![0usize; PARTITIONS as usize];
    while !stop.load(Ordering::SeqCst) {
        let batches = (0..PARTITIONS)
            .map(|p| {
                let start = counts[p as usize];
                let records = (start..start + 10)
                    .map(|n| ProduceRecord::new(None, Some(format!("p{p}-{n}").into_bytes().into())))
                    .collect();
                (tp(&topic, p), records)
            })
            .collect();
        let results = client.produce_batches(batches, &ProduceOptions::default()).await;
        for p in 0..PARTITIONS {
            match results.get(&tp(&topic, p)) {
                Some(Ok(produced)) => {
                    assert_eq!(
                        produced.base_offset,
                        Some(counts[p as usize] as i64),
                        "one producer, in order"
                    );
                    counts[p as usize] += 10;
                }
                other => panic!("produce to partition {p} failed: {other:?}"),
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    counts
}

/// What the log shows, checked line by line.
#[derive(Debug, Default)]
struct Checked {
    starts: usize,
    resumes: usize,
    records: usize,
    commits: usize,
    duplicates: usize,
}

fn check_log(log: &Path, counts: &[usize]) -> Result<Checked, String> {
    let text = fs::read_to_string(log).map_err(|e| e.to_string())?;
    let mut processed: Vec<BTreeSet<i64>> = vec![BTreeSet::new(); counts.len()];
    let mut position: Vec<i64> = vec![0; counts.len()];
    let mut checked = Checked::default();
    for (n, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split(' ').collect();
        if fields[0] == "S" {
            checked.starts += 1;
            continue;
        }
        let partition = fields.get(2).and_then(|p| p.parse::<usize>().ok()).filter(|p| *p < counts.len());
        let offset = fields.get(3).and_then(|o| o.parse::<i64>().ok());
        let (Some(p), Some(offset)) = (partition, offset) else {
            return Err(format!("line {}: cannot parse `{line}`", n + 1));
        };
        match fields[0] {
            "R" => {
                let expected = format!("p{p}-{offset}");
                if fields.get(4) != Some(&expected.as_str()) {
                    return Err(format!("line {}: offset {offset} of partition {p} is `{line}`", n + 1));
                }
                if !processed[p].insert(offset) {
                    checked.duplicates += 1;
                }
                checked.records += 1;
            }
            kind @ ("C" | "L") => {
                if offset < position[p] {
                    return Err(format!(
                        "line {}: partition {p} stored offset went backwards from {} to {offset}",
                        n + 1,
                        position[p]
                    ));
                }
                // Everything below a commit (or a resume position) was processed before it.
                if let Some(missing) = (0..offset).find(|o| !processed[p].contains(o)) {
                    return Err(format!(
                        "line {}: `{line}` but offset {missing} of partition {p} was never processed",
                        n + 1
                    ));
                }
                position[p] = offset;
                if kind == "L" {
                    checked.resumes += 1;
                } else {
                    checked.commits += 1;
                }
            }
            _ => return Err(format!("line {}: unknown line `{line}`", n + 1)),
        }
    }
    for (p, &count) in counts.iter().enumerate() {
        if let Some(missing) = (0..count as i64).find(|o| !processed[p].contains(o)) {
            return Err(format!("partition {p}: record p{p}-{missing} was produced but never processed"));
        }
    }
    Ok(checked)
}

/// Stops the cluster's ZooKeeper (SIGTERM to the pid in `scripts/cluster`'s pid file, after
/// checking the process is that ZooKeeper) and starts it again on drop if the test did not.
struct ZooKeeperRestart {
    stopped: bool,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the crate is in the workspace").to_path_buf()
}

fn cluster_dir() -> PathBuf {
    std::env::var_os("KWIRE_CLUSTER_DIR").map_or_else(|| repo_root().join("target/cluster"), PathBuf::from)
}

impl ZooKeeperRestart {
    fn stop() -> Self {
        let dir = cluster_dir();
        let pid = fs::read_to_string(dir.join("run/zookeeper.pid")).expect("ZooKeeper's pid file");
        let pid = pid.trim().to_owned();
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).expect("ZooKeeper is running");
        let tag = format!("-Dkwire.cluster.node={}/zookeeper", dir.display());
        assert!(
            cmdline.split(|b| *b == 0).any(|arg| arg == tag.as_bytes()),
            "pid {pid} is not the cluster's ZooKeeper"
        );
        let status = Command::new("kill").args(["-TERM", &pid]).status().expect("kill runs");
        assert!(status.success(), "kill -TERM {pid}");
        let deadline = Instant::now() + Duration::from_secs(20);
        while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "ZooKeeper {pid} did not stop");
        Self { stopped: true }
    }

    fn start(&mut self) {
        let out =
            Command::new(repo_root().join("scripts/cluster")).arg("up").output().expect("scripts/cluster");
        assert!(out.status.success(), "scripts/cluster up: {}", String::from_utf8_lossy(&out.stderr));
        self.stopped = false;
    }
}

impl Drop for ZooKeeperRestart {
    fn drop(&mut self) {
        if self.stopped {
            let _ = Command::new(repo_root().join("scripts/cluster")).arg("up").output();
        }
    }
}

async fn crash_run(cluster: Cluster, store: &str, restart_zookeeper: bool) {
    let started = Instant::now();
    let client = support::client(&cluster).await;
    let topic = unique("stream-crash");
    let group = unique("stream-crash-group");
    let dir = std::env::temp_dir().join(unique("kwire-stream-crash"));
    fs::create_dir_all(&dir).unwrap();
    let store = store.replace("{dir}", &dir.display().to_string());
    let run = Run {
        cluster: cluster.clone(),
        topic: topic.clone(),
        group: group.clone(),
        store: store.clone(),
        log: dir.join("processed.log"),
        stderr: dir.join("sink.stderr"),
    };
    create_topic(&client, &topic, PARTITIONS).await;
    let stop = Arc::new(AtomicBool::new(false));
    let production = tokio::spawn(producer(client.clone(), topic.clone(), stop.clone()));

    let mut rng = Rng::new("crash test");
    let mut kills = 0;
    let mut zookeeper_down_ms = 0;
    while kills < KILLS {
        let mut child = run.spawn(false);
        // Wait until this sink has started (its `S` line), then kill it at a random moment of
        // its life: connecting, loading, fetching, writing the log or committing.
        run.wait_for_start(&mut child, kills as usize + 1).await;
        tokio::time::sleep(Duration::from_millis(rng.below(700))).await;
        if restart_zookeeper && kills == KILLS / 2 {
            // ZooKeeper goes away under a running driver and comes back.
            let down = Instant::now();
            let mut zk = tokio::task::spawn_blocking(ZooKeeperRestart::stop).await.unwrap();
            tokio::time::sleep(Duration::from_millis(500)).await;
            zk = tokio::task::spawn_blocking(move || {
                zk.start();
                zk
            })
            .await
            .unwrap();
            drop(zk);
            zookeeper_down_ms = down.elapsed().as_millis();
            tokio::time::sleep(Duration::from_millis(rng.below(500))).await;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the sink exited by itself ({status}):\n{}", run.stderr_tail());
        }
        child.kill().expect("SIGKILL");
        child.wait().expect("reaped");
        kills += 1;
    }
    stop.store(true, Ordering::SeqCst);
    let counts = production.await.expect("producer");

    let mut last = run.spawn(true);
    let Some(status) = exit_within(&mut last, Duration::from_secs(60)).await else {
        panic!("the last sink did not drain the topic in 60 s:\n{}", run.stderr_tail());
    };
    assert!(status.success(), "the last sink failed ({status}):\n{}", run.stderr_tail());

    let checked = check_log(&run.log, &counts).unwrap_or_else(|e| panic!("{e}\n{}", run.stderr_tail()));
    let reopened: Box<dyn OffsetStore> = if let Some(path) = store.strip_prefix("file:") {
        Box::new(FileStore::new(path))
    } else {
        Box::new(
            ZkStore::connect(&cluster.zookeeper, Duration::from_secs(10), Duration::from_secs(30))
                .await
                .unwrap(),
        )
    };
    let stored: BTreeMap<i32, i64> =
        reopened.load(&group, None).await.unwrap().into_iter().map(|o| (o.partition, o.offset)).collect();
    let produced: BTreeMap<i32, i64> =
        counts.iter().enumerate().map(|(p, c)| (p as i32, *c as i64)).collect();
    assert_eq!(stored, produced, "the store ends at the end of every partition");
    assert_eq!(checked.starts, KILLS as usize + 1, "every start is in the log: {checked:?}");
    eprintln!(
        "crash test ({store}): {kills} SIGKILLs, {} records produced, {} processed ({} duplicates), {} commits, \
         {} starts ({} resumed partitions), ZooKeeper down {zookeeper_down_ms} ms, {:.1} s",
        counts.iter().sum::<usize>(),
        checked.records,
        checked.duplicates,
        checked.commits,
        checked.starts,
        checked.resumes,
        started.elapsed().as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkilled_driver_with_the_file_store_processes_everything_and_never_moves_back() {
    let Some(cluster) = cluster() else { return };
    crash_run(cluster, "file:{dir}/offsets.json", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkilled_driver_with_zookeeper_restarted_in_the_middle_processes_everything() {
    let Some(cluster) = cluster() else { return };
    let store = format!("zk:{}", cluster.zookeeper);
    crash_run(cluster, &store, true).await;
}

#[test]
fn the_log_check_finds_a_skip_a_rewind_and_a_missing_record() {
    let dir = std::env::temp_dir().join(unique("kwire-stream-crash-check"));
    fs::create_dir_all(&dir).unwrap();
    let log = dir.join("log");
    let check = |text: &str, counts: &[usize]| {
        fs::write(&log, text).unwrap();
        check_log(&log, counts)
    };
    let good = "S 1\nL t 0 0\nR t 0 0 p0-0\nR t 0 1 p0-1\nC t 0 2\nS 2\nL t 0 2\nR t 0 1 p0-1\n";
    let checked = check(good, &[2]).unwrap();
    assert_eq!(
        (checked.starts, checked.resumes, checked.records, checked.duplicates, checked.commits),
        (2, 2, 3, 1, 1)
    );
    let skipped = "R t 0 0 p0-0\nC t 0 2\nR t 0 1 p0-1\n";
    assert!(check(skipped, &[2]).unwrap_err().contains("offset 1 of partition 0 was never processed"));
    let rewound = "R t 0 0 p0-0\nR t 0 1 p0-1\nC t 0 2\nC t 0 1\n";
    assert!(check(rewound, &[2]).unwrap_err().contains("went backwards from 2 to 1"));
    let missing = "R t 0 0 p0-0\nC t 0 1\n";
    assert!(check(missing, &[2]).unwrap_err().contains("p0-1 was produced but never processed"));
    let wrong = "R t 0 0 p0-1\n";
    assert!(check(wrong, &[1]).unwrap_err().contains("offset 0 of partition 0"));
}
