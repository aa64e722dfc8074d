//! Failover on the real cluster: one broker — the coordinator of a group and the leader of
//! some partitions — is stopped and started again while log ranges (three ListOffsets per
//! leader) and the group's committed offsets are read in a loop. Every call must succeed within
//! its deadline with exactly the numbers the produce counts and commits give, before, during
//! and after leadership and the coordinator move.
//!
//! Stopping a broker disturbs every test using the cluster, so this is its own test binary
//! rather than a module of `tests/it`: cargo runs test binaries one after another, so no other
//! integration test sees the broker go away (inside one binary, tests run in parallel). Each
//! test function takes one lock, stops one broker (~16 s, controlled shutdown) and starts it
//! again (~11 s); the broker is restarted by a guard even when the test fails. This file's
//! test reads offsets; `exporter_stale`'s scrapes `kwire exporter`; `recreated_without_ids`'s
//! gives a stored position a real leader epoch ≥ 1 before its topic is recreated (issue 33);
//! `group_churn`'s runs six `kwire consume --group` members through kills, joins and the
//! coordinator's restart (issue 35).

#[path = "it/support/mod.rs"]
mod support;

#[path = "failover/exporter_stale.rs"]
mod exporter_stale;

#[path = "failover/group_churn.rs"]
mod group_churn;

#[path = "failover/recreated_without_ids.rs"]
mod recreated_without_ids;

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_client::{
    Client, ClientConfig, CommittedOffset, NewTopic, OffsetToCommit, ProduceOptions, ProduceRecord,
    TopicPartition,
};
use support::runtime;

/// Tests that stop brokers take this lock: tests of one binary run in parallel, and two
/// stops at once would take two of the three replicas away.
static BROKER_STOPS: Mutex<()> = Mutex::new(());

/// The deadline each call gets; leadership moves within a few seconds of a controlled
/// shutdown, so a call that needs longer has hung.
const DEADLINE: Duration = Duration::from_secs(20);
const PARTITIONS: i32 = 6;

/// Produces `records_in(partition)` records `TOPIC-PARTITION/i` to each of `tps`.
async fn produce_each(client: &Client, tps: &[TopicPartition], records_in: fn(i32) -> i64) {
    for tp in tps {
        let records = (0..records_in(tp.partition))
            .map(|i| ProduceRecord::new(None, Some(Bytes::from(format!("{tp}/{i}")))))
            .collect();
        client.produce(&tp.topic, tp.partition, records, &ProduceOptions::default()).await.unwrap();
    }
}

/// A new group (named `prefix-…`) whose coordinator is one of `nodes`, with that coordinator;
/// `None` when 30 tries found none.
async fn group_coordinated_by_one_of(client: &Client, prefix: &str, nodes: &[i32]) -> Option<(String, i32)> {
    for _ in 0..30 {
        let group = support::unique(prefix);
        let coordinator = client.coordinator(&group).await.unwrap().node_id.unwrap();
        if nodes.contains(&coordinator) {
            return Some((group, coordinator));
        }
    }
    None
}

/// Commits `committed_at(partition)` for each of `tps` as `group`'s offsets; every partition
/// must be accepted.
async fn commit_each(
    client: &Client,
    group: &str,
    tps: &[TopicPartition],
    committed_at: fn(i32) -> i64,
    metadata: Option<&str>,
) {
    let commits: Vec<OffsetToCommit> = tps
        .iter()
        .map(|tp| OffsetToCommit {
            tp: tp.clone(),
            offset: committed_at(tp.partition),
            leader_epoch: None,
            metadata: metadata.map(str::to_owned),
        })
        .collect();
    let results = client.commit_offsets(group, &commits, DEADLINE).await.unwrap();
    assert!(results.values().all(Result::is_ok), "{results:?}");
}

/// `group`'s committed offsets of `topic`, every partition answered.
async fn committed_in(
    client: &Client,
    group: &str,
    topic: &str,
) -> BTreeMap<TopicPartition, CommittedOffset> {
    client
        .committed_offsets(group, Some(&[topic.to_owned()]), DEADLINE)
        .await
        .and_then(kafka_client::CommittedOffsets::complete)
        .unwrap()
}

fn cluster_script(args: &[&str]) -> std::process::Output {
    Command::new(support::repo_root().join("scripts/cluster"))
        .args(args)
        .output()
        .expect("scripts/cluster runs")
}

/// Starts broker `n` again when dropped — also while unwinding from a failed assertion.
struct Restart(i32);

impl Restart {
    fn now(self) {
        drop(self);
    }
}

impl Drop for Restart {
    fn drop(&mut self) {
        let out = cluster_script(&["start-broker", &self.0.to_string()]);
        if !out.status.success() {
            eprintln!("restarting broker {} failed: {}", self.0, support::stderr(&out));
        }
    }
}

fn records_in(partition: i32) -> i64 {
    3 + 2 * i64::from(partition)
}

fn committed_at(partition: i32) -> i64 {
    records_in(partition) - 1
}

/// What one loop round saw.
#[derive(Debug)]
struct Round {
    started: Instant,
    took: Duration,
    /// `None` when every number was right; the first problem otherwise.
    problem: Option<String>,
    /// Leaders the log ranges named.
    leaders: Vec<Option<i32>>,
}

async fn round(client: &Client, tps: &[TopicPartition], group: &str, topic: &str) -> Round {
    let started = Instant::now();
    let check = async {
        let ranges = client.log_ranges(tps, DEADLINE).await;
        let mut leaders = Vec::new();
        for tp in tps {
            let range = match &ranges[tp] {
                Ok(r) => r,
                Err(e) => return (Some(format!("log range of {tp}: {e}")), leaders),
            };
            leaders.push(range.leader);
            let want = records_in(tp.partition);
            if (range.log_start, range.high_watermark, range.last_stable) != (0, want, want) {
                return (Some(format!("{tp}: {range:?}, expected [0, {want})")), leaders);
            }
        }
        let committed = match client
            .committed_offsets(group, Some(&[topic.to_owned()]), DEADLINE)
            .await
            .and_then(kafka_client::CommittedOffsets::complete)
        {
            Ok(c) => c,
            Err(e) => return (Some(format!("committed offsets: {e}")), leaders),
        };
        let want: BTreeMap<TopicPartition, i64> =
            tps.iter().map(|tp| (tp.clone(), committed_at(tp.partition))).collect();
        let got: BTreeMap<TopicPartition, i64> =
            committed.iter().map(|(tp, c)| (tp.clone(), c.offset)).collect();
        if got != want {
            return (Some(format!("committed {got:?}, expected {want:?}")), leaders);
        }
        if let Some((tp, c)) = committed.iter().find(|(_, c)| c.metadata.as_deref() != Some("failover")) {
            return (Some(format!("{tp}: metadata of {c:?}")), leaders);
        }
        (None, leaders)
    };
    // The calls have their own deadlines; this only turns a hang into a failure.
    let (problem, leaders) = tokio::time::timeout(DEADLINE * 2, check)
        .await
        .unwrap_or_else(|_| (Some(format!("no answer within {:?}", DEADLINE * 2)), Vec::new()));
    Round { started, took: started.elapsed(), problem, leaders }
}

#[test]
fn offsets_and_group_offsets_stay_right_while_the_coordinator_and_leader_broker_restarts() {
    let Some(cluster) = support::cluster() else { return };
    let _serial = BROKER_STOPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    runtime().block_on(async {
        let client = Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap();
        let topic = support::unique("failover");
        let created = client.create_topics(&[NewTopic::new(&topic, PARTITIONS, 3)], DEADLINE).await;
        created[&topic].as_ref().unwrap();
        let tps: Vec<TopicPartition> =
            (0..PARTITIONS).map(|p| TopicPartition::new(topic.as_str(), p)).collect();
        produce_each(&client, &tps, records_in).await;
        let metadata = client.refresh_metadata(std::slice::from_ref(&topic)).await.unwrap();
        let leader_of: BTreeMap<i32, i32> = metadata
            .topic(&topic)
            .unwrap()
            .partitions
            .iter()
            .map(|p| (p.partition, p.leader.unwrap()))
            .collect();

        // A group whose coordinator also leads partitions of the topic: one stop moves both.
        let leaders: Vec<i32> = leader_of.values().copied().collect();
        let (group, victim) = group_coordinated_by_one_of(&client, "failover-group", &leaders)
            .await
            .expect("some group's coordinator leads a partition");
        commit_each(&client, &group, &tps, committed_at, Some("failover")).await;

        let first = round(&client, &tps, &group, &topic).await;
        assert_eq!(first.problem, None, "before any stop");

        // Query in a loop while the broker stops and starts again.
        let phase = std::cell::Cell::new("running");
        let mut stopped_at = None;
        let mut restarted_at = None;
        let queries = async {
            let mut rounds = Vec::new();
            loop {
                let r = round(&client, &tps, &group, &topic).await;
                rounds.push(r);
                if phase.get() == "done" {
                    return rounds;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        };
        let disturb = async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let restart = Restart(victim);
            let n = victim.to_string();
            let out =
                tokio::task::spawn_blocking(move || cluster_script(&["stop-broker", &n])).await.unwrap();
            assert!(out.status.success(), "stop-broker: {}", support::stderr(&out));
            stopped_at = Some(Instant::now());
            // Some rounds with the broker down, then the restart.
            tokio::time::sleep(Duration::from_secs(2)).await;
            tokio::task::spawn_blocking(move || restart.now()).await.unwrap();
            restarted_at = Some(Instant::now());
            tokio::time::sleep(Duration::from_millis(500)).await;
            phase.set("done");
        };
        let (rounds, ()) = tokio::join!(queries, disturb);
        let (stopped_at, restarted_at) = (stopped_at.unwrap(), restarted_at.unwrap());

        let report: Vec<String> = rounds
            .iter()
            .map(|r| format!("{:?} took {:?}: {:?} {:?}", r.started, r.took, r.problem, r.leaders))
            .collect();
        let report = report.join("\n");
        for r in &rounds {
            assert_eq!(r.problem, None, "a round failed; all rounds:\n{report}");
            assert!(r.took < DEADLINE, "a round took {:?}:\n{report}", r.took);
        }
        let down: Vec<&Round> =
            rounds.iter().filter(|r| r.started >= stopped_at && r.started < restarted_at).collect();
        assert!(down.len() >= 2, "rounds while broker {victim} was down:\n{report}");
        for r in &down {
            assert!(r.leaders.iter().all(|l| *l != Some(victim)), "leadership moved off {victim}:\n{report}");
        }
        assert!(rounds.iter().any(|r| r.started >= restarted_at), "a round after the restart:\n{report}");
        let coordinator = client.coordinator(&group).await.unwrap();
        assert_ne!(coordinator.node_id, None);

        // The group offsets themselves, in full, once more after it all.
        let committed = committed_in(&client, &group, &topic).await;
        assert_eq!(
            committed.get(&tps[0]),
            Some(&CommittedOffset {
                offset: committed_at(0),
                leader_epoch: None,
                metadata: Some("failover".into())
            })
        );
    });
}
