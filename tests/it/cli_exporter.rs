//! `kwire exporter` on the real cluster: what a scrape serves equals `kafka-consumer-groups
//! --describe`, and the body is valid OpenMetrics for the reference parser (Python's
//! `prometheus_client`, installed by scripts/test into target/py-test).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::exporter::{regex_escape, samples_of, Exporter};
use crate::support::{self, create_topic, kafka_tool, kwire, produce_with_kafka, stderr, stdout, unique};

/// The exporter for the groups `group_regex` matches, refreshing every second.
fn start(cluster: &support::Cluster, group_regex: &str) -> Exporter {
    Exporter::start_with(cluster, group_regex, &[])
}

/// The Python with `prometheus_client` (scripts/test installs it), or `None` outside CI.
fn python() -> Option<PathBuf> {
    let python = std::env::var_os("KWIRE_TEST_PYTHON")
        .map_or_else(|| support::repo_root().join("target/py-test/bin/python"), PathBuf::from);
    let ok = Command::new(&python)
        .args(["-c", "import prometheus_client"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "{} has no prometheus_client (scripts/test installs it)",
            python.display()
        );
        eprintln!("note: no prometheus_client at {}; skipping the parser check", python.display());
        return None;
    }
    Some(python)
}

/// Every sample of an OpenMetrics text as `{"name", "labels", "value"}`, read by
/// prometheus_client's OpenMetrics parser (which fails on anything malformed).
fn parse_openmetrics(python: &PathBuf, body: &str) -> Vec<Value> {
    const SCRIPT: &str = r"
import sys, json
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        out.append({'name': s.name, 'labels': s.labels, 'value': s.value})
print(json.dumps(out))
";
    let mut child = Command::new(python)
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(body.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the OpenMetrics parser refused the body: {}\n{body}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap()
}

#[test]
fn a_scrape_equals_kafka_consumer_groups_and_parses_as_openmetrics() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("kwire-it-exporter");
    let group = unique("kwire-it-exporter-g");
    create_topic(&cluster, &topic, 2, 1);
    produce_with_kafka(&cluster, &topic, 40, 10);
    let out =
        kwire(&cluster, &["commit", "--group", &group, &format!("{topic}:0=10"), &format!("{topic}:1=3")]);
    assert!(out.status.success(), "{}", stderr(&out));

    let exporter = start(&cluster, &format!("^{}$", regex_escape(&group)));
    let deadline = Instant::now() + Duration::from_secs(60);
    let body = loop {
        let (status, body) = exporter.get("/metrics");
        assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
        if body.contains(&format!("consumergroup=\"{group}\"")) {
            break body;
        }
        assert!(Instant::now() < deadline, "the group never appeared:\n{body}");
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(body.ends_with("# EOF\n"), "{body}");
    assert!(body.contains("kwire_exporter_stale 0"), "{body}");
    assert_eq!(exporter.get("/healthz").0, "HTTP/1.1 200 OK");
    assert_eq!(exporter.get("/nothing").0, "HTTP/1.1 404 Not Found");

    // kafka-consumer-groups: GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
    let described = kafka_tool(
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        &["--bootstrap-server", &cluster.bootstrap, "--describe", "--group", &group],
    );
    let mut expected = Vec::new();
    for line in stdout(&described).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 6 && f[1] == topic {
            expected.push((
                f[2].to_owned(),
                f[3].parse::<i64>().unwrap(),
                f[4].parse::<i64>().unwrap(),
                f[5].parse::<i64>().unwrap(),
            ));
        }
    }
    assert_eq!(expected.len(), 2, "{}", stdout(&described));

    let Some(python) = python() else { return };
    let samples = parse_openmetrics(&python, &body);
    let value = |name: &str, partition: &str, with_group: bool| {
        samples
            .iter()
            .find(|s| {
                s["name"] == name
                    && s["labels"]["topic"] == topic.as_str()
                    && s["labels"]["partition"] == partition
                    && (!with_group || s["labels"]["consumergroup"] == group.as_str())
            })
            .and_then(|s| s["value"].as_f64())
            .unwrap_or_else(|| panic!("no {name} for partition {partition}"))
    };
    for (partition, current, end, lag) in expected {
        assert_eq!(value("kafka_consumergroup_current_offset", &partition, true) as i64, current);
        assert_eq!(value("kafka_topic_partition_current_offset", &partition, false) as i64, end);
        assert_eq!(value("kafka_consumergroup_lag", &partition, true) as i64, lag);
        assert_eq!(value("kwire_consumergroup_consumable", &partition, true) as i64, lag);
        assert_eq!(value("kwire_consumergroup_lost", &partition, true) as i64, 0);
        assert!(value("kwire_consumergroup_lag_seconds", &partition, true) >= 0.0);
    }
}

/// The groups of the cost test.
const GROUPS: usize = 200;

#[test]
fn a_refresh_of_200_groups_costs_requests_per_broker_not_per_group_and_equals_kafka_consumer_groups() {
    let Some(cluster) = support::cluster() else { return };
    let brokers = cluster.brokers().len() as u64;
    let topic = unique("kwire-it-exporter-cost");
    let prefix = unique("kwire-it-exporter-cost-g");
    create_topic(&cluster, &topic, 6, 1);
    produce_with_kafka(&cluster, &topic, 120, 10);
    // One live member on the consumer protocol, counted with ConsumerGroupDescribe; started
    // first so that its JVM starts while the groups commit.
    let live = format!("{prefix}-live");
    let consumer = support::ConsoleConsumer::start(&cluster, &topic, &live, "consumer");
    let groups: Vec<String> = (0..GROUPS).map(|i| format!("{prefix}-{i:03}")).collect();
    for (i, group) in groups.iter().enumerate() {
        // Three distinct committed offsets per partition: three Fetch rounds for the time lag.
        let at = 1 + i % 3;
        let specs: Vec<String> = (0..6).map(|p| format!("{topic}:{p}={}", at + p)).collect();
        let mut args = vec!["commit", "--group", group];
        args.extend(specs.iter().map(String::as_str));
        let out = kwire(&cluster, &args);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    // Every group exists before the exporter's first refresh, so one FindCoordinator finds all.
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let out = kwire(&cluster, &["group", "describe", &live, "--format", "json"]);
        if out.status.success() && support::json(&out)["members"].as_array().map(Vec::len) == Some(1) {
            break;
        }
        assert!(Instant::now() < deadline, "the live member never joined: {}", stderr(&out));
        std::thread::sleep(Duration::from_millis(500));
    }
    let exporter = start(&cluster, &format!("^{}-", regex_escape(&prefix)));
    let deadline = Instant::now() + Duration::from_secs(120);
    let samples = loop {
        let (status, body) = exporter.get("/metrics");
        assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
        let samples = samples_of(&body);
        let get = |name: &str, key: &str, value: &str| {
            samples
                .iter()
                .find(|(n, l, _)| n == name && l.get(key).is_some_and(|v| v == value))
                .map(|s| s.2 as i64)
        };
        let refreshes =
            samples.iter().find(|s| s.0 == "kwire_exporter_refreshes_total").map_or(0, |s| s.2 as i64);
        // A refresh after the first, with every group and the live member in it.
        if refreshes >= 2
            && get("kwire_consumergroup_up", "consumergroup", &groups[GROUPS - 1]) == Some(1)
            && get("kafka_consumergroup_members", "consumergroup", &live) == Some(1)
        {
            break samples;
        }
        assert!(Instant::now() < deadline, "the groups or the live member never appeared:\n{body}");
        std::thread::sleep(Duration::from_millis(500));
    };
    consumer.stop();

    let requests = |name: &str, api: &str| {
        samples.iter().find(|(n, l, _)| n == name && l["api"] == api).map_or(0, |s| s.2 as u64)
    };
    let refresh = |api: &str| requests("kwire_exporter_refresh_requests", api);
    let per_refresh: u64 =
        samples.iter().filter(|s| s.0 == "kwire_exporter_refresh_requests").map(|s| s.2 as u64).sum();
    let report =
        format!("{:?}", samples.iter().filter(|s| s.0.starts_with("kwire_exporter_re")).collect::<Vec<_>>());
    assert_eq!(refresh("ListGroups"), brokers, "{report}");
    assert!(refresh("ListOffsets") <= 2 * brokers, "earliest and latest per leader: {report}");
    assert!(refresh("OffsetFetch") <= brokers, "one per coordinator: {report}");
    assert!(refresh("DescribeGroups") <= brokers, "{report}");
    assert!((1..=brokers).contains(&refresh("ConsumerGroupDescribe")), "{report}");
    assert!(refresh("Metadata") <= 2, "{report}");
    assert!(refresh("Fetch") <= 3 * brokers, "three rounds per leader: {report}");
    assert_eq!(refresh("FindCoordinator"), 0, "coordinators stay cached: {report}");
    assert_eq!(
        requests("kwire_exporter_requests_total", "FindCoordinator"),
        1,
        "one FindCoordinator for all {GROUPS} groups: {report}"
    );
    assert!(per_refresh <= 11 * brokers + 2 && per_refresh * 5 < GROUPS as u64, "{report}");

    // Every tenth group against kafka-consumer-groups --describe.
    let sample: Vec<&String> = groups.iter().step_by(10).collect();
    let mut args = vec!["--bootstrap-server", cluster.bootstrap.as_str(), "--describe"];
    for g in &sample {
        args.extend(["--group", g.as_str()]);
    }
    let described = kafka_tool("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", &args);
    let mut compared = 0;
    for line in stdout(&described).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 6 || f[1] != topic {
            continue;
        }
        let value = |name: &str| {
            samples
                .iter()
                .find(|(n, l, _)| {
                    n == name
                        && l.get("topic").is_some_and(|t| t == &topic)
                        && l["partition"] == f[2]
                        && (!name.starts_with("kafka_consumergroup") || l["consumergroup"] == f[0])
                })
                .map_or_else(|| panic!("no {name} for {line}"), |s| s.2 as i64)
        };
        assert_eq!(value("kafka_consumergroup_current_offset"), f[3].parse::<i64>().unwrap(), "{line}");
        assert_eq!(value("kafka_topic_partition_current_offset"), f[4].parse::<i64>().unwrap(), "{line}");
        assert_eq!(value("kafka_consumergroup_lag"), f[5].parse::<i64>().unwrap(), "{line}");
        compared += 1;
    }
    assert_eq!(compared, sample.len() * 6, "{}", stdout(&described));
    for g in &sample {
        let members = samples
            .iter()
            .find(|(n, l, _)| n == "kafka_consumergroup_members" && l["consumergroup"] == g.as_str())
            .map(|s| s.2 as i64);
        assert_eq!(members, Some(0), "{g} has no members");
    }
}

#[test]
fn a_zookeeper_store_group_is_exported_with_a_store_label_and_equals_group_describe_store_zk() {
    let Some(cluster) = support::cluster() else { return };
    let zk = cluster.zookeeper.clone().expect("KWIRE_ZOOKEEPER is set with the cluster");
    exports_a_store_group_as_group_describe_reads_it(&cluster, &format!("zk:{zk}"), "zk");
}

#[test]
fn a_file_store_group_is_exported_with_a_store_label_and_equals_group_describe_store_file() {
    let Some(cluster) = support::cluster() else { return };
    let dir = std::env::temp_dir().join(unique("kwire-it-exporter-file"));
    std::fs::create_dir_all(&dir).unwrap();
    let store = format!("file:{}", dir.join("offsets.json").display());
    exports_a_store_group_as_group_describe_reads_it(&cluster, &store, "file");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Commits a group into `store` only, then checks the exporter's series of it (all labelled
/// `store`) against `kwire group describe --store`.
fn exports_a_store_group_as_group_describe_reads_it(cluster: &support::Cluster, store: &str, kind: &str) {
    let topic = unique(&format!("kwire-it-exporter-{kind}"));
    let group = unique(&format!("kwire-it-exporter-{kind}-g"));
    create_topic(cluster, &topic, 2, 1);
    produce_with_kafka(cluster, &topic, 40, 10);
    let out = kwire(
        cluster,
        &["commit", "--store", store, "--group", &group, &format!("{topic}:0=4"), &format!("{topic}:1=9")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let described = kwire(cluster, &["group", "describe", &group, "--store", store, "--format", "json"]);
    assert!(described.status.success(), "{}", stderr(&described));
    let described = support::json(&described);

    let exporter = Exporter::start_with(cluster, &format!("^{}$", regex_escape(&group)), &["--store", store]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let samples = loop {
        let (status, body) = exporter.get("/metrics");
        assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
        if body.contains(&format!("consumergroup=\"{group}\"")) {
            break samples_of(&body);
        }
        assert!(Instant::now() < deadline, "the {kind} group never appeared:\n{body}");
        std::thread::sleep(Duration::from_millis(300));
    };
    // Only in the store: every series of the group says so, and none is unlabelled.
    let of_group: Vec<_> =
        samples.iter().filter(|(_, l, _)| l.get("consumergroup") == Some(&group)).collect();
    assert!(
        of_group.iter().all(|(_, l, _)| l.get("store").map(String::as_str) == Some(store)),
        "{of_group:?}"
    );
    let value = |name: &str, partition: i64| {
        samples
            .iter()
            .find(|(n, l, _)| {
                n == name && l.get("consumergroup") == Some(&group) && l["partition"] == partition.to_string()
            })
            .map_or_else(|| panic!("no {name} for partition {partition}"), |s| s.2 as i64)
    };
    let partitions = described["partitions"].as_array().expect("partitions");
    assert_eq!(partitions.len(), 2, "{described}");
    for p in partitions {
        let partition = p["partition"].as_i64().unwrap();
        assert_eq!(
            value("kafka_consumergroup_current_offset", partition),
            p["committed"].as_i64().unwrap(),
            "{p}"
        );
        assert_eq!(value("kafka_consumergroup_lag", partition), p["lag"].as_i64().unwrap(), "{p}");
        assert_eq!(
            value("kwire_consumergroup_consumable", partition),
            p["consumable"].as_i64().unwrap(),
            "{p}"
        );
        assert_eq!(value("kwire_consumergroup_lost", partition), p["lost"].as_i64().unwrap(), "{p}");
    }
    let up = samples
        .iter()
        .find(|(n, l, _)| n == "kwire_consumergroup_up" && l.get("consumergroup") == Some(&group));
    assert_eq!(up.map(|s| s.2 as i64), Some(1));
}

#[test]
fn a_store_the_exporter_cannot_list_is_refused_up_front() {
    let Some(cluster) = support::cluster() else { return };
    let refused = Command::new(env!("CARGO_BIN_EXE_kwire"))
        .args(["exporter", "--listen", "127.0.0.1:0", "--store", "spark:/nonexistent/checkpoint"])
        .env("KWIRE_BOOTSTRAP", &cluster.bootstrap)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("--store spark:"), "{}", stderr(&refused));
}
