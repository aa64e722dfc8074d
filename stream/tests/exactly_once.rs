//! The exactly-once crash test: `kwire-stream-pipe` copies a four-partition topic to another,
//! each batch's output and input offsets in one transaction; the test kills it with SIGKILL at
//! random moments 10 times, restarting it each time, then lets a last one drain the input. The
//! output read read_committed must hold every input record exactly once (in input order per
//! partition), and the group's committed offsets must equal the input's ends.

mod support;

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kafka_client::{Client, FetchOptions, FetchRange, Isolation};

use support::{cluster, create_topic, exit_within, produce, tp, unique, values, Cluster, Rng};

const PARTITIONS: i32 = 4;
const PER_PARTITION: usize = 2_500;
const KILLS: u32 = 10;

fn spawn(cluster: &Cluster, input: &str, output: &str, group: &str, txn_id: &str, drain: bool) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kwire-stream-pipe"));
    command
        .args(["--bootstrap", &cluster.bootstrap, "--group", group, "--topic", input, "--output", output])
        .args(["--transactional-id", txn_id, "--max-per-partition", "100"])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    if drain {
        command.arg("--exit-when-idle");
    }
    command.spawn().expect("the pipe starts")
}

/// Waits until no transaction is open on `topic` (last stable offset = high watermark on every
/// partition): EndTxn is answered once the coordinator has decided, and the commit markers
/// reach the partitions after that, so a read_committed read right after a commit can stop
/// short of its records.
async fn wait_for_markers(client: &Client, topic: &str) {
    let partitions: Vec<_> = (0..PARTITIONS).map(|p| tp(topic, p)).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ranges = client.log_ranges(&partitions, Duration::from_secs(10)).await;
        let open: Vec<_> = ranges
            .iter()
            .filter(|(_, r)| !r.as_ref().is_ok_and(|r| r.last_stable == r.high_watermark))
            .map(|(tp, r)| format!("{tp}: {r:?}"))
            .collect();
        if open.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "transactions still open on {topic} after 30 s: {open:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Asserts that `group` has committed `end` for every input partition (the input's ends).
async fn assert_committed_ends(client: &Client, group: &str, end: i64) {
    let offsets = client
        .committed_offsets(group, None, Duration::from_secs(30))
        .await
        .expect("offsets")
        .complete()
        .expect("every partition");
    let offsets: BTreeMap<i32, i64> = offsets.iter().map(|(tp, c)| (tp.partition, c.offset)).collect();
    let ends: BTreeMap<i32, i64> = (0..PARTITIONS).map(|p| (p, end)).collect();
    assert_eq!(offsets, ends, "the group's committed offsets are the input's ends");
}

/// Every value of `topic` read at `isolation`, per partition in offset order.
async fn read_all(client: &Client, topic: &str, isolation: Isolation) -> BTreeMap<i32, Vec<String>> {
    let options = FetchOptions { isolation, ..FetchOptions::default() };
    let ranges: Vec<FetchRange> =
        (0..PARTITIONS).map(|p| FetchRange { partition: tp(topic, p), from: 0, until: i64::MAX }).collect();
    let results = client.fetch_range(&ranges, &options).await;
    let mut out = BTreeMap::new();
    for (tp, result) in results {
        let fetched = result.unwrap_or_else(|e| panic!("reading {tp}: {e}"));
        let read = fetched
            .records
            .iter()
            .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
            .collect();
        out.insert(tp.partition, read);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkilled_ten_times_the_pipe_outputs_every_input_record_exactly_once_with_matching_offsets() {
    let Some(cluster) = cluster() else { return };
    let started = Instant::now();
    let client = support::client(&cluster).await;
    let input = unique("eos-in");
    let output = unique("eos-out");
    let group = unique("eos-group");
    let txn_id = unique("eos-txn");
    create_topic(&client, &input, PARTITIONS).await;
    create_topic(&client, &output, PARTITIONS).await;
    for p in 0..PARTITIONS {
        for chunk in 0..PER_PARTITION / 500 {
            produce(&client, &input, p, &values("in", p, chunk * 500, 500)).await;
        }
    }

    let mut rng = Rng::new("exactly-once crash test");
    for kill in 0..KILLS {
        let mut child = spawn(&cluster, &input, &output, &group, &txn_id, false);
        tokio::time::sleep(Duration::from_millis(300 + rng.below(1_500))).await;
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the pipe exited by itself before kill {kill}: {status}");
        }
        child.kill().expect("SIGKILL");
        let _ = child.wait();
    }
    let mut last = spawn(&cluster, &input, &output, &group, &txn_id, true);
    let status = exit_within(&mut last, Duration::from_secs(180))
        .await
        .expect("the last pipe did not drain the input in 180 s");
    assert!(status.success(), "the last pipe failed: {status}");

    wait_for_markers(&client, &output).await;
    let committed = read_all(&client, &output, Isolation::ReadCommitted).await;
    for p in 0..PARTITIONS {
        assert_eq!(
            committed.get(&p).map(Vec::as_slice),
            Some(values("in", p, 0, PER_PARTITION).as_slice()),
            "output partition {p} read read_committed: every input record once, in order"
        );
    }
    assert_committed_ends(&client, &group, PER_PARTITION as i64).await;

    let uncommitted = read_all(&client, &output, Isolation::ReadUncommitted).await;
    let aborted: usize =
        uncommitted.values().map(Vec::len).sum::<usize>() - PARTITIONS as usize * PER_PARTITION;
    eprintln!(
        "exactly-once crash test: {KILLS} kills, {aborted} output records of aborted transactions, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// What a traced pipe (`--trace`) sent so far, read from its stderr.
#[derive(Debug, Default)]
struct Sent {
    /// EndTxn requests: batches committed (or being committed).
    end_txns: usize,
    /// Each Fetch request's fetch offsets, with the EndTxn count when it went out.
    fetches: Vec<(usize, Vec<i64>)>,
    /// Set when the pipe was stopped (SIGSTOP) on a read ahead: the EndTxn count then.
    stopped_at: Option<usize>,
}

fn fetch_offsets(line: &str) -> Vec<i64> {
    line.split("fetch_offset: ")
        .skip(1)
        .filter_map(|rest| rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .collect()
}

/// Starts a traced pipe whose stderr is read into `sent`. With `stop_on_read_ahead` (batches
/// of `batch` offsets per partition), the reader stops the pipe (SIGSTOP) the moment a Fetch
/// asks for the batch after the one being copied — `batch × (committed + 1)` — after at least
/// one commit: the copy of batch `committed + 1` is under way and the next one is read ahead.
fn spawn_traced(
    cluster: &Cluster,
    names: [&str; 4],
    drain: bool,
    stop_on_read_ahead: Option<i64>,
) -> (Child, std::sync::Arc<std::sync::Mutex<Sent>>) {
    use std::io::BufRead;
    let [input, output, group, txn_id] = names;
    let mut command = Command::new(env!("CARGO_BIN_EXE_kwire-stream-pipe"));
    command
        .args(["--bootstrap", &cluster.bootstrap, "--group", group, "--topic", input, "--output", output])
        .args(["--transactional-id", txn_id, "--max-per-partition", "100", "--trace"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if drain {
        command.arg("--exit-when-idle");
    }
    let mut child = command.spawn().expect("the pipe starts");
    let pid = child.id().to_string();
    let sent = std::sync::Arc::new(std::sync::Mutex::new(Sent::default()));
    let lines = std::io::BufReader::new(child.stderr.take().expect("stderr piped"));
    let shared = std::sync::Arc::clone(&sent);
    std::thread::spawn(move || {
        for line in lines.lines() {
            let Ok(line) = line else { break };
            let mut sent = shared.lock().unwrap();
            if line.starts_with("-> EndTxn ") {
                sent.end_txns += 1;
            } else if line.starts_with("-> Fetch ") {
                let offsets = fetch_offsets(&line);
                let committed = sent.end_txns;
                if let Some(batch) = stop_on_read_ahead {
                    let ahead = batch * (committed as i64 + 1);
                    if sent.stopped_at.is_none() && committed >= 1 && offsets.contains(&ahead) {
                        let _ = Command::new("kill").args(["-STOP", &pid]).status();
                        sent.stopped_at = Some(committed);
                    }
                }
                sent.fetches.push((committed, offsets));
            } else if !line.starts_with("-> ") {
                eprintln!("{line}");
            }
        }
    });
    (child, sent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipe_killed_mid_batch_after_reading_ahead_copies_that_batch_again_and_never_the_one_read_ahead() {
    const BATCH: i64 = 100;
    const RECORDS: usize = 1_000;
    let Some(cluster) = cluster() else { return };
    let client = support::client(&cluster).await;
    let (input, output) = (unique("eos-ahead-in"), unique("eos-ahead-out"));
    let (group, txn_id) = (unique("eos-ahead-group"), unique("eos-ahead-txn"));
    create_topic(&client, &input, PARTITIONS).await;
    create_topic(&client, &output, PARTITIONS).await;
    for p in 0..PARTITIONS {
        for chunk in 0..RECORDS / 500 {
            produce(&client, &input, p, &values("in", p, chunk * 500, 500)).await;
        }
    }
    let names = [input.as_str(), output.as_str(), group.as_str(), txn_id.as_str()];

    // Stopped on a read ahead; if batch `committed + 1`'s EndTxn went out before the stop
    // took effect, that was not the middle of a batch: go on, and stop on the next one.
    let (mut child, sent) = spawn_traced(&cluster, names, false, Some(BATCH));
    let deadline = Instant::now() + Duration::from_secs(120);
    let committed = loop {
        assert!(
            Instant::now() < deadline,
            "no read ahead in the middle of a batch: {:?}",
            sent.lock().unwrap()
        );
        assert!(child.try_wait().expect("wait").is_none(), "the pipe exited by itself");
        let stopped = sent.lock().unwrap().stopped_at;
        if let Some(committed) = stopped {
            // Every line written before the stop is read.
            tokio::time::sleep(Duration::from_millis(300)).await;
            let mut sent = sent.lock().unwrap();
            if sent.end_txns == committed {
                break committed;
            }
            sent.stopped_at = None;
            drop(sent);
            let _ = Command::new("kill").args(["-CONT", &child.id().to_string()]).status();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let in_progress = BATCH * committed as i64..BATCH * (committed as i64 + 1);
    eprintln!("killed while copying offsets {in_progress:?} with the batch after it read ahead");

    let (mut last, restarted) = spawn_traced(&cluster, names, true, None);
    let status = exit_within(&mut last, Duration::from_secs(180))
        .await
        .expect("the restarted pipe did not drain the input in 180 s");
    assert!(status.success(), "the restarted pipe failed: {status}");
    let first = restarted.lock().unwrap().fetches.first().cloned().expect("the restart fetched");
    assert!(
        !first.1.is_empty() && first.1.iter().all(|o| *o == in_progress.start),
        "the restart reads the batch that was being copied again, from {}: {first:?}",
        in_progress.start
    );

    wait_for_markers(&client, &output).await;
    let committed_output = read_all(&client, &output, Isolation::ReadCommitted).await;
    let everything = read_all(&client, &output, Isolation::ReadUncommitted).await;
    for p in 0..PARTITIONS {
        assert_eq!(
            committed_output.get(&p).map(Vec::as_slice),
            Some(values("in", p, 0, RECORDS).as_slice()),
            "output partition {p} read read_committed: every input record once, in order"
        );
        // What the killed pipe left in its aborted transaction: records of the batch being
        // copied only — nothing of the batch read ahead was output.
        let mut aborted = everything.get(&p).cloned().unwrap_or_default();
        for value in &committed_output[&p] {
            let at = aborted.iter().position(|v| v == value).expect("a committed record is in the log");
            aborted.remove(at);
        }
        let wanted = values("in", p, in_progress.start as usize, BATCH as usize);
        assert!(
            aborted.iter().all(|v| wanted.contains(v)),
            "partition {p}: aborted output outside {in_progress:?}: {aborted:?}"
        );
    }
    assert_committed_ends(&client, &group, RECORDS as i64).await;
}
