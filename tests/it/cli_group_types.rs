//! Groups on both of Kafka 4's consumer protocols, with real Java consumers: `group describe`
//! shows what the coordinator has (type, state, members, epochs, assignments), and every write
//! path refuses an active group with exit 5 before anything reaches the broker.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{self, create_topic, json, kwire, stderr, unique, Cluster, ConsoleConsumer};

/// `group describe --format json` once the group has `members` members in state `state`,
/// polled for up to 90 s (a JVM starting on a busy machine, then a rebalance).
fn describe_when(cluster: &Cluster, group: &str, state: &str, members: usize) -> Value {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let out = kwire(cluster, &["group", "describe", group, "--format", "json"]);
        if out.status.success() {
            let doc = json(&out);
            if doc["state"] == state && doc["members"].as_array().map(Vec::len) == Some(members) {
                return doc;
            }
            assert!(Instant::now() < deadline, "group {group} never reached {state} with {members}: {doc}");
        } else {
            assert!(Instant::now() < deadline, "group {group}: {}", stderr(&out));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn partitions(v: &Value) -> Vec<(String, i64)> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list of partitions: {v}"))
        .iter()
        .map(|p| (p["topic"].as_str().unwrap().to_owned(), p["partition"].as_i64().unwrap()))
        .collect()
}

/// Every write path a user has against a group: reset, commit, migrate into Kafka.
fn every_write_is_refused_with_exit_5(cluster: &Cluster, group: &str, topic: &str, protocol: &str) {
    let file = std::env::temp_dir().join(format!("{}.json", unique("kwire-active")));
    let store = format!("file:{}", file.display());
    let commit = kwire(cluster, &["commit", "--group", group, "--store", &store, &format!("{topic}:0=0")]);
    assert!(commit.status.success(), "{}", stderr(&commit));
    let spec = format!("{topic}:0=0");
    let writes: [Vec<&str>; 3] = [
        vec!["reset", "--group", group, "--topic", topic, "--to", "earliest", "--execute"],
        vec!["commit", "--group", group, &spec],
        vec!["migrate", "--group", group, "--from", &store, "--to", "kafka", "--execute"],
    ];
    for args in writes {
        let out = kwire(cluster, &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(5), "{args:?}: {err}");
        assert!(err.contains("active member(s)"), "{args:?}: {err}");
        assert!(err.contains(&format!("{protocol} protocol")), "{args:?}: {err}");
    }
    let _ = std::fs::remove_file(file);
}

fn a_group_with_a_live_java_consumer(protocol: &str) {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("kwire-it-gtype");
    let group = unique(&format!("kwire-it-{protocol}"));
    create_topic(&cluster, &topic, 3, 1);
    let consumer = ConsoleConsumer::start(&cluster, &topic, &group, protocol);
    let doc = describe_when(&cluster, &group, "Stable", 1);
    assert_eq!(doc["type"], if protocol == "consumer" { "consumer" } else { "classic" }, "{doc}");
    let member = &doc["members"][0];
    assert_eq!(member["client_id"], "console-consumer", "{doc}");
    if protocol == "consumer" {
        // The coordinator assigned all three partitions to the one member, and it has them.
        let all: Vec<(String, i64)> = (0..3).map(|p| (topic.clone(), p)).collect();
        assert_eq!(partitions(&member["assignment"]), all, "{doc}");
        assert_eq!(partitions(&member["target_assignment"]), all, "{doc}");
        assert!(member["member_epoch"].as_i64().unwrap() >= 1, "{doc}");
        assert!(doc["group_epoch"].as_i64().unwrap() >= 1, "{doc}");
        assert_eq!(doc["assignment_epoch"], doc["group_epoch"], "{doc}");
        assert_eq!(member["subscribed_topics"], serde_json::json!([topic]), "{doc}");
    } else {
        assert_eq!(member["member_epoch"], Value::Null, "{doc}");
        assert_eq!(doc["group_epoch"], Value::Null, "{doc}");
    }
    let text = support::stdout(&kwire(&cluster, &["group", "describe", &group]));
    assert!(text.contains(&format!("type {}  state Stable", doc["type"].as_str().unwrap())), "{text}");

    every_write_is_refused_with_exit_5(&cluster, &group, &topic, doc["type"].as_str().unwrap());

    // Once the consumer has left, the same reset goes through: the refusal was the state check.
    consumer.stop();
    describe_when(&cluster, &group, "Empty", 0);
    let reset =
        kwire(&cluster, &["reset", "--group", &group, "--topic", &topic, "--to", "earliest", "--execute"]);
    assert!(reset.status.success(), "{}", stderr(&reset));
}

#[test]
fn a_consumer_protocol_group_is_described_and_its_writes_refused_while_a_java_consumer_runs() {
    a_group_with_a_live_java_consumer("consumer");
}

#[test]
fn a_classic_group_is_described_and_its_writes_refused_while_a_java_consumer_runs() {
    a_group_with_a_live_java_consumer("classic");
}
