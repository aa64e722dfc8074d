//! `kwire consume TOPIC... --group G` (kcat's `-G`): several topics read as one group member,
//! what was printed committed — never more —, so the next member of the group goes on where
//! the printing stopped; Ctrl-C / SIGTERM commits what was printed, leaves the group, exit 0.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{self, kwire, stdout, Cluster};

fn topic_with_records(cluster: &Cluster, prefix: &str, records: usize) -> String {
    let topic = support::unique(prefix);
    let created =
        kwire(cluster, &["topic", "create", &topic, "--partitions", "2", "--replication-factor", "1"]);
    assert!(created.status.success(), "{}", support::stderr(&created));
    let lines: String = (0..records).map(|i| format!("k{i}:v{i}")).collect::<Vec<_>>().join("\n");
    let mut produce = Command::new(env!("CARGO_BIN_EXE_kwire"));
    produce.args(["produce", &topic, "--key-separator", ":"]).env("KWIRE_BOOTSTRAP", &cluster.bootstrap);
    let out = support::output_with_stdin(&mut produce, Some(&lines));
    assert!(out.status.success(), "{}", support::stderr(&out));
    topic
}

/// The group's committed offsets summed over `topic`'s partitions.
fn committed(cluster: &Cluster, group: &str, topic: &str) -> i64 {
    let out = kwire(cluster, &["--format", "json", "group", "describe", group]);
    assert!(out.status.success(), "{}", support::stderr(&out));
    let doc = support::json(&out);
    doc["partitions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["topic"] == topic)
        .filter_map(|p| p["committed"].as_i64())
        .sum()
}

#[test]
fn a_group_member_reading_two_topics_commits_what_it_printed_and_the_next_one_goes_on_from_there() {
    let Some(cluster) = support::cluster() else { return };
    let (a, b) = (topic_with_records(&cluster, "cg-a", 10), topic_with_records(&cluster, "cg-b", 10));
    let group = support::unique("cg-group");

    let first = kwire(&cluster, &["--format", "json", "consume", &a, &b, "--group", &group, "--count", "15"]);
    assert!(first.status.success(), "{}", support::stderr(&first));
    let printed: Vec<serde_json::Value> =
        stdout(&first).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(printed.len(), 15);
    assert_eq!(
        committed(&cluster, &group, &a) + committed(&cluster, &group, &b),
        15,
        "only what was printed"
    );

    let second = kwire(&cluster, &["--format", "json", "consume", &a, &b, "--group", &group, "--count", "5"]);
    assert!(second.status.success(), "{}", support::stderr(&second));
    let rest: Vec<serde_json::Value> =
        stdout(&second).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let key = |r: &serde_json::Value| {
        (r["topic"].as_str().unwrap().to_owned(), r["partition"].as_i64(), r["offset"].as_i64())
    };
    let mut all: Vec<_> = printed.iter().chain(&rest).map(key).collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 20, "the second member printed exactly the five the first did not");
}

#[test]
fn sigterm_commits_what_was_printed_leaves_the_group_and_exits_0() {
    let Some(cluster) = support::cluster() else { return };
    let topic = topic_with_records(&cluster, "cg-term", 12);
    let group = support::unique("cg-term-group");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kwire"))
        .args(["consume", &topic, "--group", &group, "-X", "group.protocol=consumer"])
        .env("KWIRE_BOOTSTRAP", &cluster.bootstrap)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let started = Instant::now();
    for _ in 0..12 {
        assert!(started.elapsed() < Duration::from_secs(60));
        lines.next().expect("a record line").unwrap();
    }
    // Following: it is still a member, waiting for more.
    std::thread::sleep(Duration::from_millis(500));
    assert!(child.try_wait().unwrap().is_none(), "--group follows");
    Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    assert_eq!(committed(&cluster, &group, &topic), 12);
    let described = kwire(&cluster, &["--format", "json", "group", "describe", &group]);
    let doc = support::json(&described);
    assert_eq!(doc["members"].as_array().map_or(0, Vec::len), 0, "it left the group: {doc}");
}

#[test]
fn group_flags_that_cannot_apply_are_usage_errors() {
    let Some(cluster) = support::cluster() else { return };
    for (args, says) in [
        (vec!["consume", "t", "--group", "g", "--partition", "0"], "--partition cannot be used with --group"),
        (
            vec!["consume", "t", "--group", "g", "--from", "5"],
            "--from OFFSET or @TIME cannot be used with --group",
        ),
        (vec!["consume", "t", "u"], "several topics are read with --group"),
        (vec!["-X", "group.protocol=eager", "consume", "t", "--group", "g"], "group.protocol"),
    ] {
        let out = kwire(&cluster, &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", support::stderr(&out));
        assert!(support::stderr(&out).contains(says), "{args:?}: {}", support::stderr(&out));
    }
}
