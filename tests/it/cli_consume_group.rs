//! `kwire consume TOPIC... --group G` (kcat's `-G`): several topics read as one group member,
//! what was printed committed — never more —, so the next member of the group goes on where
//! the printing stopped; Ctrl-C / SIGTERM commits what was printed, leaves the group, exit 0.

use std::collections::BTreeMap;
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

/// A member process whose stdout lines are collected until it exits; its stderr goes to a
/// file, shown when the test fails.
struct Running {
    child: std::process::Child,
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    reader: std::thread::JoinHandle<()>,
    stderr: std::path::PathBuf,
}

impl Running {
    fn spawn(command: &mut Command) -> Self {
        let stderr = std::env::temp_dir().join(support::unique("kwire-member-stderr"));
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = std::sync::Arc::clone(&lines);
        let reader = std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Self { child, lines, reader, stderr }
    }

    /// SIGTERM (both kcat and kwire leave the group on it), then the exit; what it wrote to
    /// stderr.
    fn stop(mut self) -> String {
        Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status().unwrap();
        let started = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(30) {
                self.child.kill().unwrap();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        self.reader.join().unwrap();
        let stderr = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let _ = std::fs::remove_file(&self.stderr);
        stderr
    }
}

/// Issue 35's interop with librdkafka: two `kcat -G` members and a `kwire consume --group`
/// member in one classic group. Once stable, every partition is owned by exactly one of the
/// three; `kwire group describe` names the kwire member by its client id with the partitions it
/// was given (read from the member's assignment, as Java's tool reads it), and
/// kafka-consumer-groups --describe gives the same owner for every partition; every record is
/// printed by some member.
#[test]
fn kwire_and_kcat_g_members_split_a_classic_group_and_kafkas_tool_agrees() {
    const PARTITIONS: i64 = 6;
    let Some(cluster) = support::cluster() else { return };
    let topic = support::unique("cg-kcat");
    let created =
        kwire(&cluster, &["topic", "create", &topic, "--partitions", "6", "--replication-factor", "1"]);
    assert!(created.status.success(), "{}", support::stderr(&created));
    let lines: String = (0..60).map(|i| format!("k{i}:v{i}")).collect::<Vec<_>>().join("\n");
    let mut produce = Command::new(env!("CARGO_BIN_EXE_kwire"));
    produce.args(["produce", &topic, "--key-separator", ":"]).env("KWIRE_BOOTSTRAP", &cluster.bootstrap);
    let out = support::output_with_stdin(&mut produce, Some(&lines));
    assert!(out.status.success(), "{}", support::stderr(&out));

    let group = support::unique("cg-kcat-group");
    let kwire_client = support::unique("kwire-member");
    let kcat = std::env::var("KWIRE_KCAT").unwrap_or_else(|_| "kcat".to_owned());
    let mut members = Vec::new();
    for name in ["kcat-a", "kcat-b"] {
        members.push(Running::spawn(Command::new(&kcat).args([
            "-b",
            &cluster.bootstrap,
            "-G",
            &group,
            &topic,
            "-q",
            // Unbuffered: into a pipe, kcat's stdout is otherwise flushed only at exit.
            "-u",
            "-f",
            "%p %o\\n",
            "-X",
            "auto.offset.reset=earliest",
            "-X",
            &format!("client.id={name}"),
        ])));
    }
    members.push(Running::spawn(
        Command::new(env!("CARGO_BIN_EXE_kwire"))
            .args(["--format", "json", "consume", &topic, "--group", &group, "-X"])
            .arg(format!("client.id={kwire_client}"))
            .env("KWIRE_BOOTSTRAP", &cluster.bootstrap),
    ));

    let started = Instant::now();
    let (kwire_owns, owners) = loop {
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "no stable split of the group among kcat and kwire"
        );
        std::thread::sleep(Duration::from_secs(1));
        let described = kwire(&cluster, &["--format", "json", "group", "describe", &group]);
        if !described.status.success() {
            continue;
        }
        let doc = support::json(&described);
        let described_members = doc["members"].as_array().cloned().unwrap_or_default();
        let mut owner: BTreeMap<i64, String> = BTreeMap::new();
        let mut disjoint = true;
        for m in &described_members {
            for tp in m["assignment"].as_array().into_iter().flatten() {
                let p = tp["partition"].as_i64().unwrap();
                disjoint &= owner.insert(p, m["member_id"].as_str().unwrap().to_owned()).is_none();
            }
        }
        let kwire_member = described_members.iter().find(|m| m["client_id"] == kwire_client.as_str());
        // Stable: every member has taken its share (mid-rebalance, the last generation's
        // assignments are still what the coordinator describes).
        let all_assigned =
            described_members.iter().all(|m| m["assignment"].as_array().is_some_and(|a| !a.is_empty()));
        if doc["state"] != "Stable"
            || described_members.len() != 3
            || !all_assigned
            || !disjoint
            || owner.len() != PARTITIONS as usize
        {
            continue;
        }
        let Some(kwire_member) = kwire_member else { continue };
        let kwire_owns: Vec<i64> = kwire_member["assignment"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tp| tp["partition"].as_i64().unwrap())
            .collect();
        assert!(
            kwire_member["client_host"].as_str().is_some_and(|h| !h.is_empty()),
            "the kwire member's host: {kwire_member}"
        );
        let java: BTreeMap<i64, String> = support::group_owners(&cluster, &group, &topic)
            .into_iter()
            .map(|(p, id)| (i64::from(p), id))
            .collect();
        if java == owner && !kwire_owns.is_empty() {
            break (kwire_owns, owner);
        }
    };
    let kcat_owned = owners.len() - kwire_owns.len();
    assert!(kcat_owned > 0, "kcat owns nothing: {owners:?}");

    // Every record printed by some member (kcat: "partition offset", kwire: JSON), counted again
    // once they have stopped and flushed.
    let printed: Vec<_> = members.iter().map(|m| std::sync::Arc::clone(&m.lines)).collect();
    let seen_so_far = || {
        let mut seen = std::collections::BTreeSet::new();
        for lines in &printed {
            for line in lines.lock().unwrap().iter() {
                let key = match serde_json::from_str::<serde_json::Value>(line) {
                    Ok(doc) => (doc["partition"].as_i64(), doc["offset"].as_i64()),
                    Err(_) => {
                        let mut cols = line.split(' ').map(|c| c.parse::<i64>().ok());
                        (cols.next().flatten(), cols.next().flatten())
                    }
                };
                if let (Some(p), Some(o)) = key {
                    seen.insert((p, o));
                }
            }
        }
        seen
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen_so_far().len() < 60 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(300));
    }
    let stderrs: Vec<String> = members.into_iter().map(Running::stop).collect();
    let seen = seen_so_far();
    assert_eq!(
        seen.len(),
        60,
        "records printed by the three members: {seen:?}\nthe members' stderr (kcat-a, kcat-b, kwire):\n{}",
        stderrs.join("\n----\n")
    );
}
