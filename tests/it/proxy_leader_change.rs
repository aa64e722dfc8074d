//! A partition's leader moves while a Java producer writes through `kwire proxy`: the old
//! leader answers NOT_LEADER_OR_FOLLOWER with the new leader's endpoint (KIP-951
//! `node_endpoints`, Produce v10+), and the proxy must have rewritten that endpoint to one of
//! its own listeners, or the producer would follow it straight to the broker.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::kwire_proxy::KwireProxy;
use crate::support::{self, create_topic, kafka_tool, repo_root, stderr, stdout, unique, Cluster};

/// `(leader, replicas)` of partition 0, read from kafka-topics --describe on the cluster.
fn leader_and_replicas(cluster: &Cluster, topic: &str) -> (i32, Vec<i32>) {
    let out = kafka_tool(
        "org.apache.kafka.tools.TopicCommand",
        &["--bootstrap-server", &cluster.bootstrap, "--describe", "--topic", topic],
    );
    let text = stdout(&out);
    let line = text.lines().find(|l| l.contains("Partition: 0")).unwrap_or_else(|| panic!("{text}"));
    let after = |key: &str| {
        let rest = &line[line.find(key).unwrap_or_else(|| panic!("{key} in {line}")) + key.len()..];
        rest.split_whitespace().next().unwrap_or_default().to_owned()
    };
    let leader = after("Leader:").parse().expect("leader id");
    let replicas = after("Replicas:").split(',').map(|r| r.parse().expect("replica id")).collect();
    (leader, replicas)
}

#[test]
fn a_leader_change_under_a_producer_names_the_new_leader_at_a_proxy_listener() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("proxy-leader");
    create_topic(&cluster, &topic, 1, 3);
    let (leader, replicas) = leader_and_replicas(&cluster, &topic);
    let proxy = KwireProxy::start(&cluster, &[]);
    // 30 s of writing: time for two Java tools to run under load while it goes on.
    let records = 6000;
    let mut producer = Command::new(repo_root().join("scripts/cluster"))
        .args(["tool", "org.apache.kafka.tools.ProducerPerformance", "--topic", &topic])
        .args(["--num-records", &records.to_string(), "--record-size", "20", "--throughput", "200"])
        .args(["--producer-props", &format!("bootstrap.servers={}", proxy.bootstrap), "acks=all"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ProducerPerformance starts");
    // Once the producer writes through the proxy, make another replica the preferred leader
    // and elect it.
    proxy.wait_for_api("Produce", Duration::from_secs(90));
    let new_leader = *replicas.iter().find(|r| **r != leader).expect("another replica");
    let mut order = vec![new_leader];
    order.extend(replicas.iter().filter(|r| **r != new_leader));
    let plan = std::env::temp_dir().join(format!("{topic}.json"));
    let order_text: Vec<String> = order.iter().map(ToString::to_string).collect();
    std::fs::write(
        &plan,
        format!(
            r#"{{"version":1,"partitions":[{{"topic":"{topic}","partition":0,"replicas":[{}]}}]}}"#,
            order_text.join(",")
        ),
    )
    .expect("plan written");
    let plan_path = plan.display().to_string();
    kafka_tool(
        "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
        &["--bootstrap-server", &cluster.bootstrap, "--reassignment-json-file", &plan_path, "--execute"],
    );
    let _ = std::fs::remove_file(&plan);
    kafka_tool(
        "org.apache.kafka.tools.LeaderElectionCommand",
        &[
            "--bootstrap-server",
            &cluster.bootstrap,
            "--election-type",
            "PREFERRED",
            "--topic",
            &topic,
            "--partition",
            "0",
        ],
    );
    assert!(
        producer.try_wait().is_ok_and(|s| s.is_none()),
        "the producer finished before the leader moved: nothing to observe"
    );
    let produced = producer.wait_with_output().expect("ProducerPerformance ran");
    assert!(produced.status.success(), "{}{}", stdout(&produced), stderr(&produced));
    assert_eq!(leader_and_replicas(&cluster, &topic).0, new_leader, "the leader moved");

    let ports = proxy.listener_ports();
    let run = proxy.stop();
    assert!(run.notices().is_empty(), "notices: {:?}", run.notices());
    let endpoints: Vec<&serde_json::Value> = run
        .pairs()
        .into_iter()
        .filter(|p| p["api_key"] == 0)
        .filter_map(|p| p["response"]["body"]["node_endpoints"].as_array())
        .flatten()
        .collect();
    assert!(
        !endpoints.is_empty(),
        "no Produce response named a new leader (node_endpoints) through the proxy"
    );
    for endpoint in &endpoints {
        let port = endpoint["port"].as_i64().and_then(|p| u16::try_from(p).ok());
        assert!(
            endpoint["host"] == "127.0.0.1" && port.is_some_and(|p| ports.contains(&p)),
            "a new-leader endpoint not at a proxy listener ({ports:?}): {endpoint}"
        );
    }
    assert!(endpoints.iter().any(|e| e["node_id"] == new_leader), "{endpoints:?}");

    // Every record arrived exactly once, read directly from the cluster.
    let direct = Command::new("kcat")
        .args(["-C", "-b", &cluster.bootstrap, "-t", &topic, "-o", "beginning", "-e", "-q", "-f", "%o\n"])
        .output()
        .expect("kcat runs");
    assert_eq!(stdout(&direct).lines().count(), records, "{}", stderr(&direct));
}
