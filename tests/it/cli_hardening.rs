//! Issue 19's findings, tried as a careless user or an attacker would: absurd timeouts, names
//! Kafka cannot take, batches the coordinator takes only in part, CSV rows that do not apply,
//! control characters and passwords on their way to the terminal, and a ZooKeeper address that
//! answers garbage. Each reproduces the finding first: before the fix these panicked (exit 101),
//! hung for the whole timeout, or printed what they should not have.

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{self, json, kwire, kwire_bare, stderr, stdout, unique, Cluster};

/// The one-line error an absurd or illegal value must produce: exit 1, no panic, no trace.
fn assert_usage_error(out: &Output, what: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{what}: {err}");
    assert_eq!(err.lines().count(), 1, "{what}: one line: {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
}

/// A new topic of `partitions` partitions, each holding the lines of `records`.
fn topic_with_records(cluster: &Cluster, prefix: &str, partitions: u32, records: &str) -> String {
    let topic = unique(prefix);
    let created = kwire(
        cluster,
        &["topic", "create", &topic, "--partitions", &partitions.to_string(), "--replication-factor", "3"],
    );
    assert!(created.status.success(), "{}", stderr(&created));
    for partition in 0..partitions {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kwire"))
            .args(["produce", &topic, "--partition", &partition.to_string()])
            .env("KWIRE_BOOTSTRAP", &cluster.bootstrap)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(records.as_bytes()).unwrap();
        assert!(child.wait().unwrap().success());
    }
    topic
}

fn temp_path(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(unique("kwire-hardening"));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn absurd_timeouts_are_a_one_line_usage_error_never_a_panic() {
    for absurd in ["18446744073709551615", "200000000000000d", "9300000000000000000", "25h"] {
        let out = kwire_bare(&["-b", "127.0.0.1:1", "--timeout", absurd, "metadata"]);
        assert_usage_error(&out, absurd);
        assert!(stderr(&out).contains("maximum timeout of 24h"), "{}", stderr(&out));
    }
    let zk = kwire_bare(&[
        "-b",
        "127.0.0.1:1",
        "--zookeeper",
        "127.0.0.1:1",
        "--timeout",
        "7000000000000000000",
        "group",
        "describe",
        "g",
        "--store",
        "zk",
    ]);
    assert_usage_error(&zk, "zk 7000000000000000000");
}

#[test]
fn the_largest_timeout_allowed_works_against_kafka_and_zookeeper() {
    let Some(cluster) = support::cluster() else { return };
    let out = kwire(&cluster, &["--timeout", "24h", "metadata", "--format", "json"]);
    assert_eq!(json(&out)["brokers"].as_array().map(Vec::len), Some(3));
    // The session timeout asked of ZooKeeper is capped before zookeeper-client adds it to a clock.
    let group = unique("hardening-zk-timeout");
    let zk = kwire(&cluster, &["--timeout", "24h", "group", "describe", &group, "--store", "zk"]);
    assert_eq!(zk.status.code(), Some(4), "unknown group, not a panic: {}", stderr(&zk));
}

#[test]
fn a_300_character_topic_is_refused_locally_without_touching_the_network() {
    let long = "t".repeat(300);
    // 127.0.0.1:1 refuses connections: reaching the network would be exit 2, not 1.
    for args in [
        vec!["metadata", long.as_str()],
        vec!["offsets", long.as_str()],
        vec!["consume", long.as_str()],
        vec!["plan", "--group", "g", "--topic", long.as_str()],
        vec!["topic", "create", long.as_str()],
    ] {
        let mut all = vec!["-b", "127.0.0.1:1"];
        all.extend_from_slice(&args);
        let out = kwire_bare(&all);
        assert_usage_error(&out, args[0]);
        let err = stderr(&out);
        assert!(err.contains("300 characters") && err.contains("at most 249"), "{err}");
        assert!(err.len() < 300, "the name is cut in the message: {err}");
    }
    let illegal = kwire_bare(&["-b", "127.0.0.1:1", "commit", "--group", "g", "a b:0=1"]);
    assert_usage_error(&illegal, "space in a topic");
    assert!(stderr(&illegal).contains("ASCII letters, digits"), "{}", stderr(&illegal));
}

#[test]
fn a_32768_byte_group_is_refused_locally_without_touching_the_network() {
    let group = "g".repeat(32_768);
    for args in [
        vec!["group", "describe", group.as_str()],
        vec!["commit", "--group", group.as_str(), "t:0=1"],
        vec!["reset", "--group", group.as_str(), "--topic", "t", "--to", "earliest"],
    ] {
        let mut all = vec!["-b", "127.0.0.1:1"];
        all.extend_from_slice(&args);
        let started = Instant::now();
        let out = kwire_bare(&all);
        assert_usage_error(&out, args[0]);
        assert!(started.elapsed() < Duration::from_secs(5), "no retrying for the timeout");
        let err = stderr(&out);
        assert!(err.contains("32768 bytes") && err.contains("at most 32767"), "{err}");
    }
}

#[test]
fn the_library_refuses_an_illegal_name_before_sending_it() {
    let Some(cluster) = support::cluster() else { return };
    let runtime = crate::support::runtime();
    runtime.block_on(async {
        let config = kafka_client::ClientConfig::new(&cluster.bootstrap).unwrap();
        let client = kafka_client::Client::connect(config).await.unwrap();
        let started = Instant::now();
        let err = client.describe_group(&"g".repeat(40_000), Duration::from_secs(30)).await.unwrap_err();
        assert!(matches!(err, kafka_client::ClientError::InvalidName(_)), "{err}");
        let err = client.refresh_metadata(&["x".repeat(300)]).await.unwrap_err();
        assert!(matches!(err, kafka_client::ClientError::InvalidName(_)), "{err}");
        assert!(started.elapsed() < Duration::from_secs(2), "refused at once");
    });
}

#[test]
fn the_library_takes_a_timeout_of_any_size_without_overflowing_the_clock() {
    let Some(cluster) = support::cluster() else { return };
    let topic = topic_with_records(&cluster, "hardening-duration-max", 1, "a\nb\n");
    let runtime = crate::support::runtime();
    runtime.block_on(async {
        use kafka_client::{FetchOptions, FetchRange, Isolation, OffsetQuery, TopicPartition};
        let mut config = kafka_client::ClientConfig::new(&cluster.bootstrap).unwrap();
        config.request_timeout = Duration::MAX;
        let client = kafka_client::Client::connect(config).await.unwrap();
        let tp = TopicPartition::new(topic.as_str(), 0);
        // Each of these added the timeout to `Instant::now()` and panicked.
        let listed = client
            .list_offsets(
                std::slice::from_ref(&tp),
                OffsetQuery::Latest,
                Isolation::ReadUncommitted,
                Duration::MAX,
            )
            .await;
        assert_eq!(listed[&tp].as_ref().unwrap().offset, Some(2));
        let options = FetchOptions { timeout: Duration::MAX, ..FetchOptions::default() };
        let fetched = client.fetch_range(&[FetchRange::new(tp.clone(), 0, 2)], &options).await;
        assert_eq!(fetched[&tp].as_ref().unwrap().records.len(), 2);
        let group = unique("hardening-duration-max-group");
        let err = client.describe_group(&group, Duration::MAX).await.map(|d| d.state);
        assert!(err.is_ok(), "{err:?}");
        let none = client.committed_offsets(&group, None, Duration::MAX).await.unwrap();
        assert!(none.offsets.is_empty() && none.is_complete(), "{none:?}");
        let gone = unique("hardening-never-created");
        let deleted = client.delete_topics(std::slice::from_ref(&gone), Duration::from_secs(2)).await;
        assert!(deleted[&gone].is_err(), "an unknown topic is an error, not a panic");
        let created = client.create_topics(&[kafka_client::NewTopic::new(&gone, 1, 3)], Duration::MAX).await;
        assert!(created[&gone].is_ok(), "{:?}", created[&gone]);
    });
}

#[test]
fn migrate_with_one_refused_topic_reports_exactly_what_was_written() {
    let Some(cluster) = support::cluster() else { return };
    let topic = topic_with_records(&cluster, "hardening-migrate", 2, "a\nb\nc\nd\ne\nf\n");
    let group = unique("hardening-migrate-group");
    let path = temp_path("offsets.json");
    let store = format!("file:{}", path.display());
    let ok = kwire(&cluster, &["commit", "--group", &group, "--store", &store, &format!("{topic}:0=1")]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let ok = kwire(&cluster, &["commit", "--group", &group, "--store", &store, &format!("{topic}:1=2")]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    // The stored file also names a topic the cluster does not have (deleted since, say): the
    // coordinator refuses that partition and takes the others.
    let gone = unique("hardening-gone");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut extra = doc["offsets"][0].clone();
    extra["topic"] = Value::from(gone.as_str());
    extra.as_object_mut().unwrap().remove("topic_id");
    doc["offsets"].as_array_mut().unwrap().push(extra);
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();

    let out = kwire(
        &cluster,
        &["migrate", "--group", &group, "--from", &store, "--to", "kafka", "--execute", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(7), "partly written: {}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(report["executed"], true);
    let status: Vec<(String, i64, String)> = report["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["topic"].as_str().unwrap().to_owned(),
                p["partition"].as_i64().unwrap(),
                p["status"].to_string(),
            )
        })
        .collect();
    assert_eq!(
        status,
        [
            (gone.clone(), 0, "\"refused\"".to_owned()),
            (topic.clone(), 0, "\"written\"".to_owned()),
            (topic.clone(), 1, "\"written\"".to_owned()),
        ],
        "{report}"
    );
    let refused =
        report["partitions"].as_array().unwrap().iter().find(|p| p["topic"] == gone.as_str()).unwrap();
    assert!(refused["error"].as_str().unwrap().contains("UNKNOWN_TOPIC_OR_PARTITION"), "{refused}");
    let err = stderr(&out);
    assert!(
        err.contains("partly written: 2 of 3") && err.contains(&gone) && err.lines().count() == 1,
        "{err}"
    );

    // What the report calls written really is in Kafka.
    let described = json(&kwire(&cluster, &["group", "describe", &group, "--format", "json"]));
    let committed: Vec<Value> =
        described["partitions"].as_array().unwrap().iter().map(|p| p["committed"].clone()).collect();
    assert_eq!(committed, [Value::from(1), Value::from(2)], "{described}");

    // The text form says the same in a STATUS column.
    let text =
        kwire(&cluster, &["migrate", "--group", &group, "--from", &store, "--to", "kafka", "--execute"]);
    assert_eq!(text.status.code(), Some(7));
    let table = stdout(&text);
    assert!(table.lines().next().unwrap().ends_with("STATUS"), "{table}");
    let line = |name: &str, p: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().take(2).eq([name, p]))
            .unwrap_or_else(|| panic!("no row {name} {p}: {table}"))
            .to_owned()
    };
    assert!(line(&gone, "0").contains("refused: "), "{table}");
    assert!(line(&topic, "1").ends_with("written"), "{table}");
}

#[test]
fn reset_from_a_csv_with_a_foreign_topic_and_a_missing_partition_never_drops_rows_silently() {
    let Some(cluster) = support::cluster() else { return };
    let topic = topic_with_records(&cluster, "hardening-csv", 2, "a\nb\nc\nd\n");
    let group = unique("hardening-csv-group");
    let csv = temp_path("plan.csv");
    std::fs::write(&csv, format!("{topic},0,1\n{topic},1,1\nsome-other-topic,0,5\n{topic},7,1\n")).unwrap();
    let to = format!("file:{}", csv.display());
    let base = ["reset", "--group", group.as_str(), "--topic", topic.as_str(), "--to", to.as_str()];

    let refused = kwire(&cluster, &[&base[..], &["--execute"]].concat());
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    let err = stderr(&refused);
    assert!(err.contains("2 row(s) do not apply, nothing written"), "{err}");
    assert!(err.contains("`some-other-topic` is not named in --topic"), "{err}");
    assert!(err.contains("partition 7 of") && err.contains("does not exist"), "{err}");
    assert_eq!(kwire(&cluster, &["group", "describe", &group]).status.code(), Some(4), "nothing was written");

    // Only a missing partition: "not found".
    let only_missing = temp_path("missing.csv");
    std::fs::write(&only_missing, format!("{topic},0,1\n{topic},9,1\n")).unwrap();
    let out = kwire(
        &cluster,
        &["reset", "--group", &group, "--topic", &topic, "--to", &format!("file:{}", only_missing.display())],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));

    // --skip-unknown writes the rows that apply and lists the others as skipped.
    let done = kwire(&cluster, &[&base[..], &["--execute", "--skip-unknown", "--format", "json"]].concat());
    let doc = json(&done);
    let skipped: Vec<(String, i64)> = doc["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["topic"].as_str().unwrap().to_owned(), s["partition"].as_i64().unwrap()))
        .collect();
    assert_eq!(skipped, [("some-other-topic".to_owned(), 0), (topic.clone(), 7)], "{doc}");
    assert!(doc["partitions"].as_array().unwrap().iter().all(|p| p["status"] == "written"), "{doc}");
    let text = kwire(&cluster, &[&base[..], &["--skip-unknown"]].concat());
    assert!(text.status.success(), "{}", stderr(&text));
    let out = stdout(&text);
    assert!(
        out.contains("skipped CSV row some-other-topic,0,5: topic `some-other-topic` is not named"),
        "{out}"
    );
    let described = json(&kwire(&cluster, &["group", "describe", &group, "--format", "json"]));
    let committed: Vec<Value> =
        described["partitions"].as_array().unwrap().iter().map(|p| p["committed"].clone()).collect();
    assert_eq!(committed, [Value::from(1), Value::from(1)], "{described}");
}

#[test]
fn control_characters_from_arguments_and_brokers_reach_the_terminal_escaped() {
    // From an argument: the error echoes the name escaped, in one line.
    let out = kwire_bare(&["-b", "127.0.0.1:1", "metadata", "evil\u{1b}]0;owned\u{7}\u{1b}[2J\ntopic"]);
    let err = stderr(&out);
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    assert!(err.contains("\\u{1b}"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err:?}");
    // Through clap's own error (an unknown flag echoes the argument).
    let out = kwire_bare(&["metadata", "--\u{1b}[31mflag"]);
    assert!(!stderr(&out).contains('\u{1b}'), "{:?}", stderr(&out));
    assert_eq!(out.status.code(), Some(1));

    // From a broker: a group id may hold any character, and group list prints what the
    // coordinator returns.
    let Some(cluster) = support::cluster() else { return };
    let topic = topic_with_records(&cluster, "hardening-escape", 1, "a\n");
    let group = format!("{}\u{1b}[31mred\u{202e}\nforged line", unique("hardening-escape"));
    let committed = kwire(&cluster, &["commit", "--group", &group, &format!("{topic}:0=1")]);
    assert!(committed.status.success(), "{}", stderr(&committed));
    for args in [vec!["group", "list"], vec!["group", "describe", group.as_str()]] {
        let out = kwire(&cluster, &args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let text = stdout(&out);
        assert!(!text.contains('\u{1b}') && !text.contains('\u{202e}'), "{args:?}: {text:?}");
        assert!(
            text.contains("[31mred\\u{202e}\\nforged line") && text.contains("\\u{1b}"),
            "{args:?}: {text}"
        );
        assert!(
            !text.lines().any(|l| l.starts_with("forged line")),
            "{args:?}: a name cannot start a line: {text}"
        );
    }
    // JSON keeps the exact name (a JSON escape means the same character).
    let doc = json(&kwire(&cluster, &["group", "describe", &group, "--format", "json"]));
    assert_eq!(doc["group"], group.as_str());
}

#[test]
fn a_password_in_an_address_is_never_echoed() {
    let out = kwire_bare(&["-b", "user:SECRETPASS@host:9092", "metadata"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("SECRETPASS") && err.contains("user:***@host:9092"), "{err}");

    let Some(cluster) = support::cluster() else { return };
    let zk = kwire(
        &cluster,
        &[
            "--zookeeper",
            "admin:SECRETPASS@127.0.0.1:1",
            "--timeout",
            "1s",
            "group",
            "describe",
            "g",
            "--store",
            "zk",
        ],
    );
    let err = stderr(&zk);
    assert_eq!(zk.status.code(), Some(2), "{err}");
    assert!(!err.contains("SECRETPASS") && err.contains("admin:***@127.0.0.1:1"), "{err}");
}

#[test]
fn help_does_not_print_the_environments_addresses() {
    let out = Command::new(env!("CARGO_BIN_EXE_kwire"))
        .arg("--help")
        .env("KWIRE_BOOTSTRAP", "secret-broker.internal:9092")
        .env("KWIRE_ZOOKEEPER", "secret-zk.internal:2181/prod")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = stdout(&out);
    assert!(help.contains("[env: KWIRE_BOOTSTRAP]") && help.contains("[env: KWIRE_ZOOKEEPER]"), "{help}");
    assert!(!help.contains("secret-broker") && !help.contains("secret-zk"), "{help}");
    assert!(help.contains("at most 24h"), "{help}");
}

#[test]
fn a_zookeeper_address_that_answers_garbage_is_named_not_just_a_timeout() {
    let Some(cluster) = support::cluster() else { return };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(16) {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 64];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let out = kwire(
        &cluster,
        &["--zookeeper", &addr, "--timeout", "2s", "group", "describe", "g", "--store", "zk"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("{addr} answered with bytes that are not ZooKeeper's")), "{err}");
    assert!(err.contains("HTTP/1.1 400 Bad Request\\r\\n"), "{err}");

    let refused = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let out = kwire(
        &cluster,
        &["--zookeeper", &refused, "--timeout", "2s", "group", "describe", "g", "--store", "zk"],
    );
    assert!(stderr(&out).contains("refused the connection"), "{}", stderr(&out));
}
