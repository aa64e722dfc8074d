//! `kwire offsets` and `kwire group` agree with Kafka's own tools on the same partitions.

use std::collections::BTreeMap;

use crate::support::{
    self, create_topic, get_offset_shell, json, kafka_tool, kwire, produce_with_kafka, stderr, stdout,
    unique, Cluster,
};

fn kwire_offsets(cluster: &Cluster, topic: &str, at: &str) -> BTreeMap<i64, serde_json::Value> {
    let doc = json(&kwire(cluster, &["offsets", topic, "--at", at, "--format", "json"]));
    doc["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["partition"].as_i64().unwrap(), p.clone()))
        .collect()
}

#[test]
fn offsets_equal_get_offset_shell_for_earliest_latest_and_a_timestamp() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("offsets");
    create_topic(&cluster, &topic, 4, 3);
    produce_with_kafka(&cluster, &topic, 400, 20);
    for (at, time) in [("earliest", "-2"), ("latest", "-1")] {
        let ours = kwire_offsets(&cluster, &topic, at);
        let theirs = get_offset_shell(&cluster, &topic, time);
        assert_eq!(ours.len(), 4);
        for (p, offset) in &theirs {
            assert_eq!(ours[&i64::from(*p)]["offset"].as_i64(), Some(*offset), "{at} partition {p}");
        }
    }
    // A time before every record: the first offset; a time after every record: none.
    let ours = kwire_offsets(&cluster, &topic, "2001-01-01T00:00:00Z");
    let theirs = get_offset_shell(&cluster, &topic, "978307200000");
    for (p, offset) in &theirs {
        assert_eq!(ours[&i64::from(*p)]["offset"].as_i64(), Some(*offset));
    }
    // A time after every record (but not in the future): no offset, said explicitly.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let after_all =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() - 1000;
    let none = kwire_offsets(&cluster, &topic, &after_all.to_string());
    assert!(none.values().all(|p| p["offset"].is_null()), "no record at or after {after_all}: {none:?}");
    let future = kwire(&cluster, &["offsets", &topic, "--at", "2999-01-01T00:00:00Z"]);
    assert_eq!(future.status.code(), Some(1));
    assert!(stderr(&future).contains("in the future"), "{}", stderr(&future));
    let latest = kwire_offsets(&cluster, &topic, "latest");
    let total: i64 = latest.values().map(|p| p["high_watermark"].as_i64().unwrap()).sum();
    assert_eq!(total, 400);
    assert!(latest.values().all(|p| p["log_start"] == 0 && p["last_stable"] == p["high_watermark"]));
}

#[test]
fn a_time_in_seconds_is_refused_with_a_hint() {
    let Some(cluster) = support::cluster() else { return };
    let out = kwire(&cluster, &["offsets", "any", "--at", "1732874400"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("looks like seconds"), "{}", stderr(&out));
}

#[test]
fn group_describe_agrees_with_kafka_consumer_groups() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("lag");
    let group = unique("lag-group");
    create_topic(&cluster, &topic, 3, 3);
    produce_with_kafka(&cluster, &topic, 300, 20);
    kafka_tool(
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        &[
            "--bootstrap-server",
            &cluster.bootstrap,
            "--reset-offsets",
            "--group",
            &group,
            "--topic",
            &format!("{topic}:0,1"),
            "--to-offset",
            "7",
            "--execute",
        ],
    );
    let doc = json(&kwire(&cluster, &["group", "describe", &group, "--topic", &topic, "--format", "json"]));
    assert_eq!(doc["state"], "Empty");
    let rows: BTreeMap<i64, &serde_json::Value> =
        doc["partitions"].as_array().unwrap().iter().map(|p| (p["partition"].as_i64().unwrap(), p)).collect();
    assert_eq!(rows.len(), 3, "{doc}");
    // Partition 2 has nothing committed: a state, not −1 arithmetic.
    assert!(rows[&2]["committed"].is_null() && rows[&2]["lag"].is_null());
    assert_eq!(rows[&2]["consumable"], rows[&2]["end"]);

    let out = kafka_tool(
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        &["--bootstrap-server", &cluster.bootstrap, "--describe", "--group", &group],
    );
    let mut compared = 0;
    for line in stdout(&out).lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() < 6 || cols[1] != topic {
            continue;
        }
        let partition: i64 = cols[2].parse().unwrap();
        let row = rows[&partition];
        assert_eq!(row["committed"].as_i64(), cols[3].parse::<i64>().ok(), "committed p{partition}");
        assert_eq!(row["end"].as_i64(), cols[4].parse::<i64>().ok(), "end p{partition}");
        assert_eq!(row["lag"].as_i64(), cols[5].parse::<i64>().ok(), "lag p{partition}");
        compared += 1;
    }
    assert_eq!(compared, 2, "kafka-consumer-groups lists the two committed partitions: {}", stdout(&out));
}

#[test]
fn an_unknown_group_is_a_one_line_error_with_exit_4() {
    let Some(cluster) = support::cluster() else { return };
    let group = unique("nobody");
    let out = kwire(&cluster, &["group", "describe", &group]);
    assert_eq!(out.status.code(), Some(4));
    assert!(stderr(&out).contains(&format!("unknown group `{group}`")), "{}", stderr(&out));
}

#[test]
fn group_list_shows_a_group_with_commits() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("listed");
    let group = unique("listed-group");
    create_topic(&cluster, &topic, 1, 3);
    kafka_tool(
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        &[
            "--bootstrap-server",
            &cluster.bootstrap,
            "--reset-offsets",
            "--group",
            &group,
            "--topic",
            &topic,
            "--to-earliest",
            "--execute",
        ],
    );
    let doc = json(&kwire(&cluster, &["group", "list", "--format", "json"]));
    let g = doc["groups"].as_array().unwrap().iter().find(|g| g["group"] == group.as_str());
    assert!(g.is_some_and(|g| g["state"] == "Empty"), "{doc}");
}
