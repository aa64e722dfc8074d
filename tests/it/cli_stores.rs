//! The three offset stores through the CLI: ZooKeeper (read and written by ZooKeeper's own
//! client in the Kafka 0.8 layout), the file store, and migration between stores.

use std::process::Command;

use crate::support::{
    self, create_topic, json, kafka_tool, kwire, produce_with_kafka, stderr, stdout, unique, Cluster,
};

fn zk_cli(cluster: &Cluster, args: &[&str]) -> String {
    let zk = cluster.zookeeper.clone().expect("KWIRE_ZOOKEEPER is set with the cluster");
    let mut all = vec!["-server", zk.as_str()];
    all.extend_from_slice(args);
    stdout(&kafka_tool("org.apache.zookeeper.ZooKeeperMain", &all))
}

#[test]
fn offsets_written_by_zookeepers_own_client_are_read_and_written_back_in_the_old_layout() {
    let Some(cluster) = support::cluster() else { return };
    assert!(cluster.zookeeper.is_some(), "the cluster's ZooKeeper must be configured");
    let topic = unique("zk-old");
    let group = unique("zk-old-group");
    create_topic(&cluster, &topic, 2, 3);
    produce_with_kafka(&cluster, &topic, 100, 10);
    // What a Kafka 0.8 consumer or a Spark job's Curator code leaves behind.
    for path in [
        "/consumers".to_owned(),
        format!("/consumers/{group}"),
        format!("/consumers/{group}/offsets"),
        format!("/consumers/{group}/offsets/{topic}"),
    ] {
        let _ = Command::new(support::repo_root().join("scripts/cluster"))
            .args(["tool", "org.apache.zookeeper.ZooKeeperMain", "-server"])
            .arg(cluster.zookeeper.as_deref().unwrap())
            .args(["create", &path, ""])
            .output();
    }
    zk_cli(&cluster, &["create", &format!("/consumers/{group}/offsets/{topic}/0"), "42"]);

    let doc = json(&kwire(&cluster, &["group", "describe", &group, "--store", "zk", "--format", "json"]));
    let p0 = doc["partitions"].as_array().unwrap().iter().find(|p| p["partition"] == 0).unwrap();
    assert_eq!(p0["committed"], 42);
    assert_eq!(p0["lag"], 8, "50 records in partition 0, committed 42");

    let out = kwire(&cluster, &["commit", "--group", &group, "--store", "zk", &format!("{topic}:1=17")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let read = zk_cli(&cluster, &["get", &format!("/consumers/{group}/offsets/{topic}/1")]);
    assert_eq!(read.lines().last().map(str::trim), Some("17"), "old readers see decimal text: {read}");
    let children = zk_cli(&cluster, &["ls", &format!("/consumers/{group}/offsets/{topic}")]);
    assert_eq!(
        children.lines().last().map(str::trim),
        Some("[0, 1]"),
        "nothing else under the topic: {children}"
    );
}

#[test]
fn migrating_from_zookeeper_to_kafka_is_a_dry_run_until_execute_and_then_reads_back() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("migrate");
    let group = unique("migrate-group");
    create_topic(&cluster, &topic, 3, 3);
    produce_with_kafka(&cluster, &topic, 30, 10);
    let written = kwire(
        &cluster,
        &["commit", "--group", &group, "--store", "zk", &format!("{topic}:0=1"), &format!("{topic}:2=3")],
    );
    assert!(written.status.success(), "{}", stderr(&written));
    let dry = json(&kwire(
        &cluster,
        &["migrate", "--group", &group, "--from", "zk", "--to", "kafka", "--format", "json"],
    ));
    assert_eq!(dry["executed"], false);
    assert_eq!(dry["partitions"].as_array().unwrap().len(), 2);
    assert_eq!(
        kwire(&cluster, &["group", "describe", &group]).status.code(),
        Some(4),
        "dry run wrote nothing"
    );
    let done = kwire(&cluster, &["migrate", "--group", &group, "--from", "zk", "--to", "kafka", "--execute"]);
    assert!(done.status.success(), "{}", stderr(&done));
    let doc = json(&kwire(&cluster, &["group", "describe", &group, "--format", "json"]));
    let committed: Vec<_> =
        doc["partitions"].as_array().unwrap().iter().map(|p| p["committed"].clone()).collect();
    assert_eq!(committed, [serde_json::json!(1), serde_json::Value::Null, serde_json::json!(3)]);
}

#[test]
fn a_corrupt_offset_file_is_an_error_naming_the_file_never_empty() {
    let Some(cluster) = support::cluster() else { return };
    let dir = std::env::temp_dir().join(unique("kwire-corrupt"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("offsets.json");
    std::fs::write(
        &path,
        "{\"format\":\"kwire-offsets\",\"version\":1,\"group\":\"g\",\"offsets\":[{\"topic\"",
    )
    .unwrap();
    let out = kwire(&cluster, &["group", "describe", "g", "--store", &format!("file:{}", path.display())]);
    assert_eq!(out.status.code(), Some(6));
    let err = stderr(&out);
    assert!(err.contains("offsets.json") && err.lines().count() == 1, "{err}");
    let bad_store = kwire(&cluster, &["group", "describe", "g", "--store", "s3://bucket"]);
    assert_eq!(bad_store.status.code(), Some(1));
    let said = stderr(&bad_store);
    assert!(
        said.contains("unknown store `s3://bucket`: use kafka, zk") && said.contains("file:PATH"),
        "{said}"
    );
}
