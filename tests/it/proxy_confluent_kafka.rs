//! confluent-kafka (Python on librdkafka 2.16) through `kwire proxy`: a transaction aborted
//! and one committed, and a consumer group of two members — working unchanged, with the
//! conversation's transaction and group frames seen and decoded in the proxy's trace.
//! scripts/test installs confluent-kafka into target/py-test.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::kwire_proxy::{KwireProxy, ProxyRun};
use crate::support::{self, create_topic, kafka_tool, repo_root, stderr, stdout, unique, Cluster};

/// The Python with confluent-kafka (scripts/test installs it; `KWIRE_TEST_PYTHON` overrides).
fn python() -> PathBuf {
    let python = std::env::var_os("KWIRE_TEST_PYTHON")
        .map_or_else(|| repo_root().join("target/py-test/bin/python"), PathBuf::from);
    let out = Command::new(&python).args(["-c", "import confluent_kafka"]).output();
    assert!(
        out.as_ref().is_ok_and(|o| o.status.success()),
        "{} cannot import confluent_kafka (scripts/test installs it into target/py-test): {out:?}",
        python.display()
    );
    python
}

fn run_script(script: &str, args: &[&str]) -> Value {
    let path = repo_root().join("tests/it/py").join(script);
    let out: Output = Command::new(python()).arg(&path).args(args).output().expect("python runs");
    assert!(out.status.success(), "{script} failed: {}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    let last = text.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{script} printed no JSON ({e}): {text}"))
}

/// The values of a topic's records read directly from the cluster with `isolation`.
fn values(cluster: &Cluster, topic: &str, isolation: &str) -> Vec<String> {
    let out = Command::new("kcat")
        .args(["-C", "-b", &cluster.bootstrap, "-t", topic, "-o", "beginning", "-e", "-q"])
        .args(["-X", &format!("isolation.level={isolation}"), "-f", "%s\n"])
        .output()
        .expect("kcat runs");
    assert!(out.status.success(), "kcat: {}", stderr(&out));
    stdout(&out).lines().map(str::to_owned).collect()
}

/// No notice, every Metadata response names only proxy listeners, no frame undecodable.
fn assert_clean(run: &ProxyRun, ports: &[u16]) {
    assert!(run.notices().is_empty(), "notices: {:?}", run.notices());
    let announced = run.announced_ports();
    assert!(!announced.is_empty(), "no Metadata response decoded");
    for port in announced {
        assert!(ports.iter().any(|p| i64::from(*p) == port), "Metadata names port {port}, not {ports:?}");
    }
    assert_eq!(run.undecodable(), Vec::<i64>::new(), "undecodable frames");
}

#[test]
fn a_librdkafka_transaction_aborted_through_the_proxy_is_invisible_to_read_committed() {
    // Transactions on the 4.1 cluster: transaction.version must stay as scripts/cluster left it.
    let _feature = support::transaction_version::shared();
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("proxy-rdk-txn");
    create_topic(&cluster, &topic, 1, 3);
    let proxy = KwireProxy::start(&cluster, &[]);
    let done =
        run_script("confluent_txn_abort.py", &[&proxy.bootstrap, &topic, &unique("proxy-rdk-tx"), "10"]);
    assert_eq!(done["delivered"], serde_json::json!({"aborted": 10, "committed": 10}), "{done}");

    let committed = values(&cluster, &topic, "read_committed");
    assert_eq!(committed.len(), 10, "{committed:?}");
    assert!(committed.iter().all(|v| v.starts_with("committed-")), "{committed:?}");
    // The aborted records were written (read_uncommitted sees them): the abort hid them.
    let all = values(&cluster, &topic, "read_uncommitted");
    assert_eq!(all.iter().filter(|v| v.starts_with("aborted-")).count(), 10, "{all:?}");

    let ports = proxy.listener_ports();
    let run = proxy.stop();
    assert_clean(&run, &ports);
    let end_txns: Vec<(bool, i64)> = run
        .pairs()
        .into_iter()
        .filter(|p| p["api_key"] == 26)
        .map(|p| {
            let committed = p["request"]["body"]["committed"].as_bool().unwrap_or_else(|| panic!("{p}"));
            (committed, p["response"]["body"]["error_code"].as_i64().unwrap_or(-1))
        })
        .collect();
    assert_eq!(end_txns, vec![(false, 0), (true, 0)], "EndTxn (committed, error_code) in order");
    let apis = run.api_keys();
    // InitProducerId, FindCoordinator (transaction coordinator), Produce, EndTxn.
    for key in [22, 10, 0, 26] {
        assert!(apis.contains(&key), "API key {key} not seen: {apis:?}");
    }
}

#[test]
fn a_librdkafka_consumer_group_of_two_joins_consumes_and_commits_through_the_proxy() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("proxy-rdk-group");
    let group = unique("proxy-rdk-group");
    create_topic(&cluster, &topic, 2, 2);
    let proxy = KwireProxy::start(&cluster, &[]);
    let done = run_script("confluent_group.py", &[&proxy.bootstrap, &topic, &group, "40", "2"]);
    // Which member got which partition is the assignor's choice; each has one of the two.
    let mut assignments: Vec<Vec<i64>> =
        serde_json::from_value(done["assignments"].clone()).unwrap_or_else(|e| panic!("{e}: {done}"));
    assignments.sort();
    assert_eq!(assignments, vec![vec![0], vec![1]], "{done}");
    assert_eq!(done["counts"], serde_json::json!([20, 20]), "{done}");

    // The commits reached the cluster: read directly, the group is at the end of both partitions.
    let described = stdout(&kafka_tool(
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        &["--bootstrap-server", &cluster.bootstrap, "--describe", "--group", &group],
    ));
    let current: Vec<i64> = described
        .lines()
        .filter(|l| l.contains(&topic))
        .filter_map(|l| l.split_whitespace().nth(3)?.parse().ok())
        .collect();
    assert_eq!(current, vec![20, 20], "{described}");

    let ports = proxy.listener_ports();
    let run = proxy.stop();
    assert_clean(&run, &ports);
    let apis = run.api_keys();
    // FindCoordinator, JoinGroup, SyncGroup, Fetch, OffsetCommit, Produce.
    for key in [10, 11, 14, 1, 8, 0] {
        assert!(apis.contains(&key), "API key {key} not seen: {apis:?}");
    }
    let members: BTreeSet<&str> = run
        .pairs()
        .into_iter()
        .filter(|p| p["api_key"] == 14)
        .filter_map(|p| p["request"]["body"]["member_id"].as_str())
        .collect();
    assert_eq!(members.len(), 2, "SyncGroup from two members: {members:?}");
    let client_ids: BTreeSet<&str> = run.pairs().iter().filter_map(|p| p["client_id"].as_str()).collect();
    assert!(client_ids.contains("member-0") && client_ids.contains("member-1"), "{client_ids:?}");
}
