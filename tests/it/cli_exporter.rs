//! `kwire exporter` on the real cluster: what a scrape serves equals `kafka-consumer-groups
//! --describe`, and the body is valid OpenMetrics for the reference parser (Python's
//! `prometheus_client`, installed by scripts/test into target/py-test).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{self, create_topic, kafka_tool, kwire, produce_with_kafka, stderr, stdout, unique};

/// The exporter, killed when dropped.
struct Exporter {
    child: Child,
    addr: String,
}

impl Exporter {
    fn start(cluster: &support::Cluster, group_regex: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kwire"))
            .args(["exporter", "--listen", "127.0.0.1:0", "--interval", "1s", "--group", group_regex])
            .env("KWIRE_BOOTSTRAP", &cluster.bootstrap)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_owned();
        Self { child, addr }
    }

    /// `(status line, body)` of a GET.
    fn get(&self, path: &str) -> (String, String) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(stream, "GET {path} HTTP/1.1\r\nHost: {}\r\n\r\n", self.addr).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
        (head.lines().next().unwrap_or_default().to_owned(), body.to_owned())
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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

    let exporter = Exporter::start(&cluster, &format!("^{}$", regex_escape(&group)));
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

/// The group ids the tests make are `[a-z0-9-]`; escape anything else for the regex.
fn regex_escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| if c.is_ascii_alphanumeric() || c == '-' { vec![c] } else { vec!['\\', c] })
        .collect()
}
