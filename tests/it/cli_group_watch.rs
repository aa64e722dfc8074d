//! `kwire group watch` on the real cluster: plain lines when stdout is not a terminal (on the
//! Kafka, file and ZooKeeper stores), and the live view driven in tmux: it shows the numbers,
//! refreshes in place, and answers its keys.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::support::{self, create_topic, kwire, stderr, stdout, unique, Cluster};

/// A one-partition topic with 100 records; `group` committed at 40 in `store`.
fn committed_at_40(cluster: &Cluster, name: &str, store: &str) -> (String, String) {
    let topic = unique(&format!("kwire-it-watch-{name}"));
    let group = unique(&format!("kwire-it-watch-{name}-g"));
    create_topic(cluster, &topic, 1, 1);
    let records: String = (0..100).map(|i| format!("r{i}")).collect::<Vec<_>>().join("\n");
    let mut produce = Command::new(env!("CARGO_BIN_EXE_kwire"))
        .args(["produce", &topic])
        .env("KWIRE_BOOTSTRAP", &cluster.bootstrap)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut produce.stdin.take().unwrap(), records.as_bytes()).unwrap();
    assert!(produce.wait().unwrap().success());
    let out = kwire(cluster, &["commit", "--group", &group, "--store", store, &format!("{topic}:0=40")]);
    assert!(out.status.success(), "{}", stderr(&out));
    (topic, group)
}

fn plain_lines(cluster: &Cluster, store: &str) {
    let (topic, group) = committed_at_40(cluster, store.split(':').next().unwrap(), store);
    let out =
        kwire(cluster, &["group", "watch", &group, "--store", store, "--interval", "300ms", "--count", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "one line per partition per refresh: {text}");
    for line in &lines {
        assert!(
            line.contains(&format!(
                " group={group} topic={topic} partition=0 committed=40 end=100 lag=60 consumable=60 lost=0 "
            )),
            "{line}"
        );
        assert!(!line.contains('\u{1b}'), "no terminal codes in plain lines: {line}");
    }
    // Two samples, nothing moving, records waiting.
    assert!(lines[1].ends_with(" health=STOP"), "{}", lines[1]);
}

#[test]
fn plain_lines_when_stdout_is_not_a_terminal_on_the_kafka_store() {
    let Some(cluster) = support::cluster() else { return };
    plain_lines(&cluster, "kafka");
}

#[test]
fn plain_lines_on_the_file_store() {
    let Some(cluster) = support::cluster() else { return };
    let path = std::env::temp_dir().join(format!("{}.json", unique("kwire-watch")));
    plain_lines(&cluster, &format!("file:{}", path.display()));
    let _ = std::fs::remove_file(path);
}

#[test]
fn plain_lines_on_the_zookeeper_store() {
    let Some(cluster) = support::cluster() else { return };
    assert!(cluster.zookeeper.is_some(), "the cluster's ZooKeeper must be configured");
    plain_lines(&cluster, "zk");
}

/// tmux on its own socket, so nothing here touches anyone else's sessions.
struct Tmux {
    socket: String,
    session: String,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux").args(["-L", &self.socket]).args(args).output().expect("tmux runs")
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", &self.session]).stdout).into_owned()
    }

    /// The screen once `ready` holds, polled for up to 60 s.
    fn wait_for(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            assert!(Instant::now() < deadline, "never saw {what}:\n{screen}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

fn has_tmux() -> bool {
    let found = Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success());
    if !found {
        assert!(std::env::var_os("CI").is_none(), "tmux is missing (scripts/test installs it)");
        eprintln!("note: tmux not installed; skipping the terminal test");
    }
    found
}

#[test]
fn the_live_view_in_tmux_shows_the_numbers_refreshes_and_answers_its_keys() {
    let Some(cluster) = support::cluster() else { return };
    if !has_tmux() {
        return;
    }
    let (topic, group) = committed_at_40(&cluster, "tmux", "kafka");
    let tmux = Tmux { socket: unique("kwire-watch"), session: "watch".to_owned() };
    let command = format!(
        "{} -b {} group watch {group} --interval 500ms",
        env!("CARGO_BIN_EXE_kwire"),
        cluster.bootstrap
    );
    let out = tmux.run(&["new-session", "-d", "-s", &tmux.session, "-x", "220", "-y", "30", &command]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let screen = tmux.wait_for("the partition's numbers and its health", |s| s.contains("STOP"));
    let row = screen.lines().find(|l| l.contains(&topic) && l.contains("STOP")).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    // GROUP TOPIC PARTITION COMMITTED END LAG CONSUMABLE LOST ...
    assert_eq!(&cells[..8], [group.as_str(), topic.as_str(), "0", "40", "100", "60", "60", "0"], "{screen}");
    assert!(screen.starts_with("kwire group watch"), "drawn from the top left:\n{screen}");
    assert!(!screen.contains("\\u{1b}"), "terminal codes must reach the terminal, not the text:\n{screen}");

    // Redrawn in place: the clock in the status line moves, and the screen never scrolls.
    let first = screen.lines().next().unwrap().to_owned();
    let later = tmux.wait_for("a refresh", |s| s.lines().next().is_some_and(|l| l != first));
    assert_eq!(later.matches("kwire group watch").count(), 1, "{later}");

    tmux.run(&["send-keys", "-t", &tmux.session, "s"]);
    tmux.wait_for("the sort to change", |s| s.contains("sort: lag (s)"));
    tmux.run(&["send-keys", "-t", &tmux.session, "f"]);
    tmux.wait_for("the filter to change", |s| s.contains("filter: not OK (f)") && s.contains(&topic));
    tmux.run(&["send-keys", "-t", &tmux.session, "q"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while tmux.run(&["has-session", "-t", &tmux.session]).status.success() {
        assert!(Instant::now() < deadline, "q did not quit:\n{}", tmux.screen());
        std::thread::sleep(Duration::from_millis(100));
    }
}
