//! Share groups (KIP-932) with a real Java share consumer (`ConsoleShareConsumer`): `group list`
//! and `group describe` show what the coordinator has (type, state, epochs, assignment) and the
//! share-partition start offsets Kafka's own `kafka-share-groups --describe` shows; every write
//! path refuses the group with exit 5, `--force` included; the exporter leaves it out.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::exporter::{regex_escape, samples_of, Exporter};
use crate::support::{
    self, create_topic, json, kafka_tool, kwire, output_with_stdin, stderr, stdout, unique, Cluster,
    ConsoleConsumer,
};

/// `group describe --format json`, polled for up to 90 s (a JVM starting on a busy machine, the
/// assignment, the share partition's first fetch) until `ready` holds.
fn describe_until(cluster: &Cluster, group: &str, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let out = kwire(cluster, &["group", "describe", group, "--format", "json"]);
        if out.status.success() {
            let doc = json(&out);
            if ready(&doc) {
                return doc;
            }
            assert!(Instant::now() < deadline, "group {group} never {what}: {doc}");
        } else {
            assert!(Instant::now() < deadline, "group {group}: {}", stderr(&out));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn produce(cluster: &Cluster, topic: &str, partition: i32, records: usize) {
    let lines = vec!["record"; records].join("\n");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kwire"));
    command
        .args(["produce", topic, "--partition", &partition.to_string()])
        .env("KWIRE_BOOTSTRAP", &cluster.bootstrap);
    let out = output_with_stdin(&mut command, Some(&lines));
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The partition's committed (share start) offset in a describe document, `None` when absent.
fn start_offset(doc: &Value, partition: i64) -> Option<i64> {
    doc["partitions"].as_array()?.iter().find(|p| p["partition"] == partition)?["committed"].as_i64()
}

/// `kafka-share-groups --describe --group G`: (topic, partition) → START-OFFSET (`None` for `-`).
fn java_start_offsets(cluster: &Cluster, group: &str) -> Vec<(String, i64, Option<i64>)> {
    let out = kafka_tool(
        "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
        &["--bootstrap-server", &cluster.bootstrap, "--describe", "--group", group],
    );
    let mut rows: Vec<(String, i64, Option<i64>)> = stdout(&out)
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split_whitespace().collect();
            match cells.as_slice() {
                [g, topic, partition, start] if *g == group => {
                    Some(((*topic).to_owned(), partition.parse().ok()?, start.parse().ok()))
                }
                _ => None,
            }
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn a_share_group_is_described_with_its_start_offsets_and_its_writes_refused_while_a_java_share_consumer_runs()
{
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("kwire-it-share");
    let group = unique("kwire-it-share-g");
    create_topic(&cluster, &topic, 3, 1);
    // Before the group exists: with share.auto.offset.reset=latest (the default) a share
    // partition starts at the end its first ShareFetch sees, so at 20 or later.
    produce(&cluster, &topic, 1, 20);
    let consumer = ConsoleConsumer::start(&cluster, &topic, &group, "share");
    let all: Vec<Value> = (0..3).map(|p| serde_json::json!({"topic": topic, "partition": p})).collect();
    describe_until(&cluster, &group, "had its one member assigned every partition", |d| {
        d["state"] == "Stable"
            && d["members"].as_array().map(Vec::len) == Some(1)
            && d["members"][0]["assignment"].as_array() == Some(&all)
    });
    // The share coordinator keeps a partition's state once a record was delivered from it, which
    // needs records after the consumer's first fetch: 5 more each round until it has some.
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut end = 20;
    let doc = loop {
        produce(&cluster, &topic, 1, 5);
        end += 5;
        let doc = describe_until(&cluster, &group, "answered", |_| true);
        if start_offset(&doc, 1).is_some() {
            break doc;
        }
        assert!(Instant::now() < deadline, "no start offset in partition 1: {doc}");
        std::thread::sleep(Duration::from_secs(2));
    };
    assert_eq!(doc["type"], "share", "{doc}");
    assert_eq!(doc["position"], "share_start_offset", "{doc}");
    assert_eq!(doc["assignor"], "simple", "{doc}");
    let member = &doc["members"][0];
    assert_eq!(member["client_id"], "console-share-consumer", "{doc}");
    assert_eq!(member["subscribed_topics"], serde_json::json!([topic]), "{doc}");
    assert_eq!(member["target_assignment"], Value::Null, "{doc}");
    assert!(member["member_epoch"].as_i64().unwrap() >= 1, "{doc}");
    assert!(doc["group_epoch"].as_i64().unwrap() >= 1, "{doc}");
    let start = start_offset(&doc, 1).unwrap();
    assert!((20..end).contains(&start), "{doc}");
    let p1 = doc["partitions"].as_array().unwrap().iter().find(|p| p["partition"] == 1).unwrap();
    assert_eq!((p1["end"].as_i64(), p1["lag"].as_i64()), (Some(end), Some(end - start)), "{doc}");
    // The same start offsets as Kafka's own tool, partitions without one included. They move
    // while the consumer acknowledges what it got: compare until both read the same moment.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let doc = describe_until(&cluster, &group, "answered", |_| true);
        let ours: Vec<(String, i64, Option<i64>)> =
            (0..3).map(|p| (topic.clone(), p, start_offset(&doc, p))).collect();
        let java = java_start_offsets(&cluster, &group);
        if java == ours {
            break;
        }
        assert!(Instant::now() < deadline, "kafka-share-groups {java:?} != kwire {ours:?}");
    }

    let list = json(&kwire(&cluster, &["group", "list", "--format", "json"]));
    let listed = list["groups"].as_array().unwrap().iter().find(|g| g["group"] == group.as_str());
    let listed = listed.unwrap_or_else(|| panic!("{group} not listed: {list}"));
    assert_eq!(
        (listed["type"].as_str(), listed["state"].as_str()),
        (Some("share"), Some("Stable")),
        "{list}"
    );
    let text = stdout(&kwire(&cluster, &["group", "describe", &group]));
    assert!(text.contains("type share  state Stable"), "{text}");
    assert!(text.contains("share-partition start offset"), "{text}");
    assert!(text.contains(&format!("assigned {topic}[0,1,2]")), "{text}");

    // Every write path, forced or not: OffsetCommit cannot move a share-partition start offset.
    let file = std::env::temp_dir().join(format!("{}.json", unique("kwire-share")));
    let store = format!("file:{}", file.display());
    let spec = format!("{topic}:1=0");
    let commit = kwire(&cluster, &["commit", "--group", &group, "--store", &store, &spec]);
    assert!(commit.status.success(), "{}", stderr(&commit));
    let writes: [Vec<&str>; 4] = [
        vec!["reset", "--group", &group, "--topic", &topic, "--to", "earliest", "--execute"],
        vec!["reset", "--group", &group, "--topic", &topic, "--to", "earliest", "--execute", "--force"],
        vec!["commit", "--group", &group, &spec],
        vec!["migrate", "--group", &group, "--from", &store, "--to", "kafka", "--execute"],
    ];
    for args in writes {
        let out = kwire(&cluster, &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(5), "{args:?}: {err}");
        assert!(err.contains(&format!("group `{group}` is a share group")), "{args:?}: {err}");
        assert!(err.contains("nothing was written"), "{args:?}: {err}");
    }
    let _ = std::fs::remove_file(file);
    let doc = describe_until(&cluster, &group, "kept its start offset", |_| true);
    assert!(start_offset(&doc, 1).is_some_and(|o| o >= start), "{doc}");

    // The exporter leaves share groups out: one full refresh, no series names the group.
    let exporter = Exporter::start_with(&cluster, &format!("^{}$", regex_escape(&group)), &[]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let body = loop {
        let (status, body) = exporter.get("/metrics");
        let refreshed =
            samples_of(&body).iter().any(|s| s.0 == "kwire_exporter_refreshes_total" && s.2 >= 1.0);
        if status.contains("200") && refreshed {
            break body;
        }
        assert!(Instant::now() < deadline, "no refresh: {status} {body}");
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(!body.contains(&group), "{body}");
    assert!(body.contains("kwire_exporter_groups 0"), "{body}");
    consumer.stop();
}
