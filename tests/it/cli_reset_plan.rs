//! `kwire reset`, `commit` and `plan` on the real cluster, including the seeds' situations:
//! a topic recreated under stored offsets, retention past the stored offset, partitions added.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use crate::support::{
    self, create_topic, create_topic_retrying, delete_topic_and_wait, json, kafka_tool, kwire,
    produce_with_kafka, stderr, stdout, unique,
};

fn temp_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(unique("kwire-it"));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn by_partition(doc: &Value) -> BTreeMap<i64, Value> {
    doc["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["partition"].as_i64().unwrap(), p.clone()))
        .collect()
}

#[test]
fn reset_execute_is_what_kafka_consumer_groups_then_describes() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("reset");
    let group = unique("reset-group");
    create_topic(&cluster, &topic, 2, 3);
    produce_with_kafka(&cluster, &topic, 100, 10);
    // Dry run writes nothing.
    let dry = json(&kwire(
        &cluster,
        &["reset", "--group", &group, "--topic", &topic, "--to", "offset:10", "--format", "json"],
    ));
    assert_eq!(dry["executed"], false);
    let described = kwire(&cluster, &["group", "describe", &group]);
    assert_eq!(described.status.code(), Some(4), "a dry run must not create the group");

    let done = json(&kwire(
        &cluster,
        &[
            "reset",
            "--group",
            &group,
            "--topic",
            &topic,
            "--to",
            "offset:10",
            "--execute",
            "--format",
            "json",
        ],
    ));
    assert_eq!(done["executed"], true);
    let out = kafka_tool(
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        &["--bootstrap-server", &cluster.bootstrap, "--describe", "--group", &group],
    );
    let committed: Vec<i64> = stdout(&out)
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(topic.as_str()))
        .map(|l| l.split_whitespace().nth(3).unwrap().parse().unwrap())
        .collect();
    assert_eq!(committed, [10, 10]);

    // Shift past the end is clamped with a reason, like kafka-consumer-groups.
    let shifted = json(&kwire(
        &cluster,
        &["reset", "--group", &group, "--topic", &topic, "--to", "shift:1000", "--format", "json"],
    ));
    for p in by_partition(&shifted).values() {
        assert_eq!(p["after"], 50);
        assert!(p["reason"].as_str().unwrap().contains("past the end"), "{p}");
    }
    // --export prints the CSV kafka-consumer-groups reads, and file: reads it back.
    let export =
        kwire(&cluster, &["reset", "--group", &group, "--topic", &topic, "--to", "earliest", "--export"]);
    let csv = stdout(&export);
    assert_eq!(csv, format!("{topic},0,0\n{topic},1,0\n"));
    let path = temp_file("plan.csv");
    std::fs::write(&path, format!("{topic},0,3\n{topic},1,4\n")).unwrap();
    let from_file = json(&kwire(
        &cluster,
        &[
            "reset",
            "--group",
            &group,
            "--topic",
            &topic,
            "--to",
            &format!("file:{}", path.display()),
            "--execute",
            "--format",
            "json",
        ],
    ));
    let rows = by_partition(&from_file);
    assert_eq!((rows[&0]["after"].as_i64(), rows[&1]["after"].as_i64()), (Some(3), Some(4)));
}

#[test]
fn commit_outside_the_log_writes_nothing_and_exits_5() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("commit");
    let group = unique("commit-group");
    create_topic(&cluster, &topic, 2, 3);
    produce_with_kafka(&cluster, &topic, 20, 10);
    let out =
        kwire(&cluster, &["commit", "--group", &group, &format!("{topic}:0=5"), &format!("{topic}:1=500")]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(stderr(&out).contains("outside the log [0, 10]"), "{}", stderr(&out));
    assert_eq!(kwire(&cluster, &["group", "describe", &group]).status.code(), Some(4), "nothing was written");
    let ok =
        kwire(&cluster, &["commit", "--group", &group, &format!("{topic}:0=5"), &format!("{topic}:1=10")]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let doc = json(&kwire(&cluster, &["group", "describe", &group, "--format", "json"]));
    let rows = by_partition(&doc);
    assert_eq!((rows[&0]["committed"].as_i64(), rows[&1]["committed"].as_i64()), (Some(5), Some(10)));
}

#[test]
fn topic_recreated_with_fewer_records_is_named_and_never_a_negative_range() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("recreated");
    let group = unique("recreated-group");
    let store = format!("file:{}", temp_file("offsets.json").display());
    create_topic(&cluster, &topic, 1, 3);
    produce_with_kafka(&cluster, &topic, 500, 10);
    let ok = kwire(&cluster, &["commit", "--group", &group, "--store", &store, &format!("{topic}:0=500")]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    delete_topic_and_wait(&cluster, &topic);
    create_topic_retrying(&cluster, &topic, 1);
    produce_with_kafka(&cluster, &topic, 120, 10);

    let failed = kwire(
        &cluster,
        &["plan", "--group", &group, "--store", &store, "--topic", &topic, "--format", "json"],
    );
    assert_eq!(failed.status.code(), Some(3), "{}", stderr(&failed));
    let doc: Value = serde_json::from_slice(&failed.stdout).unwrap();
    let p = &by_partition(&doc)[&0];
    assert_eq!(p["anomaly"]["kind"], "topic_recreated", "{p}");
    assert_eq!(p["anomaly"]["stored"], 500);
    assert_eq!(p["anomaly"]["end"], 120);
    assert!(p["from"].is_null(), "a failed partition gets no range");

    let resumed = json(&kwire(
        &cluster,
        &[
            "plan",
            "--group",
            &group,
            "--store",
            &store,
            "--topic",
            &topic,
            "--on-out-of-range",
            "earliest",
            "--format",
            "json",
        ],
    ));
    let p = &by_partition(&resumed)[&0];
    assert_eq!((p["from"].as_i64(), p["until"].as_i64()), (Some(0), Some(120)), "{p}");
}

#[test]
fn records_deleted_past_the_stored_offset_are_data_loss_with_the_exact_count() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("retention");
    let group = unique("retention-group");
    create_topic(&cluster, &topic, 1, 3);
    produce_with_kafka(&cluster, &topic, 100, 10);
    assert!(kwire(&cluster, &["commit", "--group", &group, &format!("{topic}:0=10")]).status.success());
    let spec = temp_file("delete.json");
    std::fs::write(
        &spec,
        format!(r#"{{"partitions":[{{"topic":"{topic}","partition":0,"offset":60}}],"version":1}}"#),
    )
    .unwrap();
    kafka_tool(
        "org.apache.kafka.tools.DeleteRecordsCommand",
        &["--bootstrap-server", &cluster.bootstrap, "--offset-json-file", spec.to_str().unwrap()],
    );
    let out = kwire(&cluster, &["plan", "--group", &group, "--topic", &topic, "--format", "json"]);
    assert_eq!(out.status.code(), Some(3));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &by_partition(&doc)[&0];
    assert_eq!(p["anomaly"]["kind"], "data_loss");
    assert_eq!(p["anomaly"]["lost"], 50);
    assert_eq!(p["lost"], 50);
    let clamp = json(&kwire(
        &cluster,
        &["plan", "--group", &group, "--topic", &topic, "--on-out-of-range", "clamp", "--format", "json"],
    ));
    let p = &by_partition(&clamp)[&0];
    assert_eq!((p["from"].as_i64(), p["until"].as_i64()), (Some(60), Some(100)));
}

#[test]
fn partitions_added_later_start_at_earliest() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("grown");
    let group = unique("grown-group");
    create_topic(&cluster, &topic, 2, 3);
    produce_with_kafka(&cluster, &topic, 40, 10);
    assert!(kwire(
        &cluster,
        &["commit", "--group", &group, &format!("{topic}:0=20"), &format!("{topic}:1=20")]
    )
    .status
    .success());
    kafka_tool(
        "org.apache.kafka.tools.TopicCommand",
        &["--bootstrap-server", &cluster.bootstrap, "--alter", "--topic", &topic, "--partitions", "4"],
    );
    produce_with_kafka(&cluster, &topic, 40, 10);
    let doc = json(&kwire(&cluster, &["plan", "--group", &group, "--topic", &topic, "--format", "json"]));
    let rows = by_partition(&doc);
    assert_eq!(rows.len(), 4, "{doc}");
    for p in [2, 3] {
        assert_eq!(rows[&p]["anomaly"]["kind"], "new_partition");
        assert_eq!(rows[&p]["from"], 0, "new partitions must not start at latest");
        assert_eq!(rows[&p]["until"], 10);
    }
    assert_eq!(rows[&0]["from"], 20);
}
