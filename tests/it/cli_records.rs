//! `kwire produce` and `kwire consume` against kcat (Debian's package): the same records,
//! with every compression codec, `kwire produce --transactional-id` read by kcat with
//! read_committed (the id given as a flag or as `transactional.id` in a properties file), and
//! `kwire topic` admin reproducing offset situations.

use std::process::Command;

use serde_json::Value;

use crate::support::{self, json, kwire, stderr, stdout, unique, Cluster};

fn kwire_stdin(cluster: &Cluster, args: &[&str], input: &str) -> std::process::Output {
    support::output_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_kwire")).args(args).env("KWIRE_BOOTSTRAP", &cluster.bootstrap),
        Some(input),
    )
}

/// kcat's JSON for every record of `topic`, or `None` (with a note) when kcat is missing
/// outside CI; in CI a missing kcat fails the test.
fn kcat_records(cluster: &Cluster, topic: &str) -> Option<Vec<Value>> {
    let out = match Command::new("kcat")
        .args(["-C", "-b", &cluster.bootstrap, "-t", topic, "-o", "beginning", "-e", "-J", "-q"])
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            assert!(std::env::var("CI").is_err(), "kcat is required in CI: {e}");
            eprintln!("note: kcat not installed; skipping the comparison");
            return None;
        }
    };
    assert!(out.status.success(), "kcat failed: {}", stderr(&out));
    Some(stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect())
}

#[test]
fn consume_equals_kcat_for_records_produced_with_every_codec() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("codecs");
    let created =
        kwire(&cluster, &["topic", "create", &topic, "--partitions", "3", "--replication-factor", "3"]);
    assert!(created.status.success(), "{}", stderr(&created));
    let mut expected = 0;
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let lines: String =
            (0..20).map(|i| format!("key-{i}\tvalue {codec} {i} ünïcode")).collect::<Vec<_>>().join("\n");
        let out = kwire_stdin(
            &cluster,
            &["produce", &topic, "--key-separator", "\t", "--compression", codec],
            &lines,
        );
        assert!(out.status.success(), "{codec}: {}", stderr(&out));
        expected += 20;
    }
    let ours: Vec<Value> = stdout(&kwire(&cluster, &["consume", &topic, "--format", "json"]))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(ours.len(), expected);
    // Keys land where the Java client's murmur2 partitioner puts them: the same key, the same partition.
    for r in &ours {
        let same_key: Vec<&Value> = ours.iter().filter(|o| o["key"] == r["key"]).collect();
        assert!(same_key.iter().all(|o| o["partition"] == r["partition"]));
    }
    let Some(theirs) = kcat_records(&cluster, &topic) else { return };
    let key = |v: &Value| (v["partition"].as_i64().unwrap(), v["offset"].as_i64().unwrap());
    let mut theirs: Vec<&Value> = theirs.iter().collect();
    theirs.sort_by_key(|v| key(v));
    let mut ours_sorted: Vec<&Value> = ours.iter().collect();
    ours_sorted.sort_by_key(|v| key(v));
    assert_eq!(theirs.len(), ours_sorted.len());
    for (k, o) in theirs.iter().zip(&ours_sorted) {
        assert_eq!(key(k), key(o));
        assert_eq!(k["key"], o["key"]);
        assert_eq!(k["payload"], o["value"]);
        assert_eq!(k["ts"], o["timestamp"]);
    }
}

/// Records of 1,000 bytes that lz4 squeezes ≈ 80 to 1: 100,000 of them written by kcat in
/// 1 MB batches are ≈ 100 MB decompressed but ≈ 1.3 MB on the wire, so one Fetch answer for the
/// partition (up to 1 MiB) holds more than the 64 MiB a response may decompress.
#[test]
fn consume_reads_a_highly_compressible_topic_whose_one_fetch_decompresses_past_the_64_mib_budget() {
    const RECORDS: usize = 100_000;
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("compressible");
    let created =
        kwire(&cluster, &["topic", "create", &topic, "--partitions", "1", "--replication-factor", "1"]);
    assert!(created.status.success(), "{}", stderr(&created));
    let lines: String = (0..RECORDS).map(|i| format!("{i:<999}\n").replace(' ', "x")).collect();
    let produced = match Command::new("kcat")
        .args(["-P", "-b", &cluster.bootstrap, "-t", &topic, "-p", "0"])
        .args(["-X", "compression.codec=lz4", "-X", "batch.size=1000000", "-X", "linger.ms=100"])
        .args(["-X", "acks=all"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Ok(child) => support::wait_with_stdin(child, &lines),
        Err(e) => {
            assert!(std::env::var("CI").is_err(), "kcat is required in CI: {e}");
            eprintln!("note: kcat not installed; skipping");
            return;
        }
    };
    assert!(produced.status.success(), "kcat -P failed: {}", stderr(&produced));

    let out = kwire(&cluster, &["consume", &topic, "--from", "earliest"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), RECORDS, "every record once");
    // Text lines are `partition offset timestamp key headers value`, tab-separated.
    for (i, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(fields[1], i.to_string(), "offsets in order: {}", &line[..line.len().min(80)]);
        assert_eq!(fields.last().copied(), Some(format!("{i:<999}").replace(' ', "x").as_str()));
    }
}

/// A topic created a moment ago may be unknown to the broker that answers Metadata (the
/// controller's record reaches each broker after CreateTopics returns): `kwire produce` waits
/// for it up to `topic.metadata.propagation.max.ms`, as librdkafka does, saying so; a topic
/// that never appears is the usual NOT_FOUND error after that window.
#[test]
fn produce_waits_for_a_topic_created_after_it_started_and_names_one_that_never_appears() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("late-topic");
    let mut produce = Command::new(env!("CARGO_BIN_EXE_kwire"));
    produce
        .args(["produce", &topic, "--format", "json"])
        .env("KWIRE_BOOTSTRAP", &cluster.bootstrap)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = produce.spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    let created =
        kwire(&cluster, &["topic", "create", &topic, "--partitions", "2", "--replication-factor", "1"]);
    assert!(created.status.success(), "{}", stderr(&created));
    let out = support::wait_with_stdin(child, "one\ntwo\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out)["records"], 2);
    assert!(
        stderr(&out).contains(&format!("topic `{topic}` is not in the brokers' metadata yet")),
        "{}",
        stderr(&out)
    );

    let never = unique("never-created");
    let started = std::time::Instant::now();
    let out =
        kwire_stdin(&cluster, &["-X", "topic.metadata.propagation.max.ms=3000", "produce", &never], "x\n");
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).ends_with(&format!("unknown topic `{never}`\n")), "{}", stderr(&out));
    // Backoff steps are at most 1 s: the wait ends less than a step before the window does.
    assert!(started.elapsed() >= std::time::Duration::from_secs(2), "the window was not waited");
}

#[test]
fn consume_reads_exactly_the_requested_range() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("range");
    assert!(kwire(&cluster, &["topic", "create", &topic, "--partitions", "1", "--replication-factor", "3"])
        .status
        .success());
    let lines: String = (0..50).map(|i| i.to_string()).collect::<Vec<_>>().join("\n");
    assert!(kwire_stdin(&cluster, &["produce", &topic, "--partition", "0"], &lines).status.success());
    let out = kwire(
        &cluster,
        &["consume", &topic, "--partition", "0", "--from", "10", "--count", "5", "--format", "json"],
    );
    let offsets: Vec<i64> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["offset"].as_i64().unwrap())
        .collect();
    assert_eq!(offsets, [10, 11, 12, 13, 14]);
    // Delete records moves the log start; offsets shows it.
    let moved = json(&kwire(&cluster, &["topic", "delete-records", &topic, "0=20", "--format", "json"]));
    assert_eq!(moved["partitions"][0]["log_start"], 20);
    let offsets = json(&kwire(&cluster, &["offsets", &topic, "--at", "earliest", "--format", "json"]));
    assert_eq!(offsets["partitions"][0]["log_start"], 20);
    assert_eq!(offsets["partitions"][0]["offset"], 20);
    // Growing and deleting.
    assert!(kwire(&cluster, &["topic", "add-partitions", &topic, "3"]).status.success());
    let meta = json(&kwire(&cluster, &["metadata", &topic, "--format", "json"]));
    assert_eq!(meta["topics"][0]["partitions"].as_array().unwrap().len(), 3);
    assert!(kwire(&cluster, &["topic", "delete", &topic]).status.success());
    assert_eq!(kwire(&cluster, &["metadata", &topic]).status.code(), Some(4));
    assert_eq!(kwire(&cluster, &["topic", "delete", &topic]).status.code(), Some(4));
}

#[test]
fn produce_with_a_transactional_id_commits_every_n_records_for_read_committed_readers() {
    // Transactions on the 4.1 cluster: transaction.version must stay as scripts/cluster left it.
    let _feature = support::transaction_version::shared();
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("txn-produce");
    assert!(kwire(&cluster, &["topic", "create", &topic, "--partitions", "2", "--replication-factor", "3"])
        .status
        .success());
    let lines: String = (0..250).map(|i| format!("k{i}\tv{i}")).collect::<Vec<_>>().join("\n");
    let txn_id = unique("txn-produce-id");
    let args =
        ["produce", &topic, "--key-separator", "\t", "--transactional-id", &txn_id, "--txn-every", "100"];
    let out = kwire_stdin(&cluster, &args, &lines);
    assert!(out.status.success(), "{}", support::stderr(&out));
    match Command::new("kcat")
        .args([
            "-b",
            &cluster.bootstrap,
            "-C",
            "-t",
            &topic,
            "-e",
            "-q",
            "-X",
            "isolation.level=read_committed",
        ])
        .args(["-f", "%s\n"])
        .output()
    {
        Ok(read) => {
            let mut values: Vec<String> = stdout(&read).lines().map(str::to_owned).collect();
            values.sort();
            let mut expected: Vec<String> = (0..250).map(|i| format!("v{i}")).collect();
            expected.sort();
            assert_eq!(values, expected, "kcat's read_committed reading");
        }
        Err(e) => assert!(std::env::var("CI").is_err(), "kcat is required in CI: {e}"),
    }
    // --txn-every needs a transactional id.
    let refused = kwire_stdin(&cluster, &["produce", &topic, "--txn-every", "10"], "x");
    assert!(!refused.status.success());
}

#[test]
fn produce_takes_its_transactional_id_from_a_properties_file_and_refuses_java_conflicts() {
    // Transactions on the 4.1 cluster: transaction.version must stay as scripts/cluster left it.
    let _feature = support::transaction_version::shared();
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("txn-props");
    assert!(kwire(&cluster, &["topic", "create", &topic, "--partitions", "3", "--replication-factor", "1"])
        .status
        .success());
    let dir = std::env::temp_dir().join(unique("kwire-producer-props"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("producer.properties");
    let txn_id = unique("txn-props-id");
    std::fs::write(
        &file,
        format!("transactional.id={txn_id}\nlinger.ms=1\nacks=all\ncompression.type=lz4\n"),
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let lines: String = (0..120).map(|i| format!("v{i}")).collect::<Vec<_>>().join("\n");
    let out =
        kwire_stdin(&cluster, &["produce", &topic, "--command-config", file, "--txn-every", "50"], &lines);
    assert!(out.status.success(), "{}", stderr(&out));
    // Transactional: the transaction coordinator knows the id from the file.
    let described = support::kafka_tool(
        "org.apache.kafka.tools.TransactionsCommand",
        &["--bootstrap-server", &cluster.bootstrap, "describe", "--transactional-id", &txn_id],
    );
    assert!(stdout(&described).contains(&txn_id), "{}", stdout(&described));
    // EndTxn is answered before the markers reach the partitions: read until they have.
    let mut committed = 0;
    for _ in 0..50 {
        let read = kwire(&cluster, &["consume", &topic, "--isolation", "read-committed"]);
        assert!(read.status.success(), "{}", stderr(&read));
        committed = stdout(&read).lines().count();
        if committed == 120 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(committed, 120, "records read_committed");

    // Java's checks: an explicit idempotent producer needs acks=all and at most 5 in flight;
    // a transactional one needs idempotence.
    for (props, says) in [
        (&["-X", "enable.idempotence=true", "-X", "acks=1"][..], "acks=all"),
        (
            &["-X", "enable.idempotence=true", "-X", "max.in.flight.requests.per.connection=6"][..],
            "at most 5",
        ),
        (&["--command-config", file, "-X", "enable.idempotence=false"][..], "transactional.id: "),
        (&["--command-config", file, "-X", "acks=1"][..], "transactional.id: "),
        (&["-X", "acks=2"][..], "acks: "),
    ] {
        let mut args = vec!["produce", topic.as_str()];
        args.extend_from_slice(props);
        let refused = kwire_stdin(&cluster, &args, "x");
        assert_eq!(refused.status.code(), Some(1), "{props:?}: {}", stderr(&refused));
        let message = stderr(&refused);
        assert_eq!(message.trim_end().lines().count(), 1, "{props:?}: {message}");
        assert!(message.contains(says), "{props:?}: {message}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
