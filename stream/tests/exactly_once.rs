//! The exactly-once crash test: `kwire-stream-pipe` copies a four-partition topic to another,
//! each batch's output and input offsets in one transaction; the test kills it with SIGKILL at
//! random moments 10 times, restarting it each time, then lets a last one drain the input. The
//! output read read_committed must hold every input record exactly once (in input order per
//! partition), and the group's committed offsets must equal the input's ends.

mod support;

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kafka_wire::client::{Client, FetchOptions, FetchRange, Isolation};

use support::{cluster, create_topic, produce, tp, unique, values, Cluster, Rng};

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
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(status) = last.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = last.kill();
            panic!("the last pipe did not drain the input in 180 s");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
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
    let offsets = client
        .committed_offsets(&group, None, Duration::from_secs(30))
        .await
        .expect("offsets")
        .complete()
        .expect("every partition");
    let offsets: BTreeMap<i32, i64> = offsets.iter().map(|(tp, c)| (tp.partition, c.offset)).collect();
    let ends: BTreeMap<i32, i64> = (0..PARTITIONS).map(|p| (p, PER_PARTITION as i64)).collect();
    assert_eq!(offsets, ends, "the group's committed offsets are the input's ends");

    let uncommitted = read_all(&client, &output, Isolation::ReadUncommitted).await;
    let aborted: usize =
        uncommitted.values().map(Vec::len).sum::<usize>() - PARTITIONS as usize * PER_PARTITION;
    eprintln!(
        "exactly-once crash test: {KILLS} kills, {aborted} output records of aborted transactions, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
