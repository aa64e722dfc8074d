//! Partition leadership on the cluster, read and moved with Kafka's own tools.

use super::{kafka_tool, stdout, Cluster};

/// `(leader, replicas)` of partition 0, read from kafka-topics --describe on the cluster.
pub fn leader_and_replicas(cluster: &Cluster, topic: &str) -> (i32, Vec<i32>) {
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

/// Makes `new_leader` the first (preferred) replica of partition 0 and elects it.
pub fn move_leader(cluster: &Cluster, topic: &str, replicas: &[i32], new_leader: i32) {
    let mut order = vec![new_leader];
    order.extend(replicas.iter().filter(|r| **r != new_leader));
    let order: Vec<String> = order.iter().map(ToString::to_string).collect();
    let plan = std::env::temp_dir().join(format!("{topic}.json"));
    let text = format!(
        r#"{{"version":1,"partitions":[{{"topic":"{topic}","partition":0,"replicas":[{}]}}]}}"#,
        order.join(",")
    );
    std::fs::write(&plan, text).expect("plan written");
    let plan_path = plan.display().to_string();
    kafka_tool(
        "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
        &["--bootstrap-server", &cluster.bootstrap, "--reassignment-json-file", &plan_path, "--execute"],
    );
    let _ = std::fs::remove_file(&plan);
    let election = ["--election-type", "PREFERRED", "--topic", topic, "--partition", "0"];
    let mut args = vec!["--bootstrap-server", cluster.bootstrap.as_str()];
    args.extend(election);
    kafka_tool("org.apache.kafka.tools.LeaderElectionCommand", &args);
}
