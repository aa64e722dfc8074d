//! Issue 35's loss test: six `kwire consume --group` processes share a 24-partition topic while
//! records are being written; members are killed (SIGKILL) and added, the broker that
//! coordinates the group (and leads some of the partitions) is stopped and started again, and
//! then, during the rebalance a new member starts, a broker that only leads partitions.
//!
//! - Every record is printed at least once.
//! - A record printed more than once was printed by a killed member: the duplicates are the
//!   window a SIGKILL leaves uncommitted (at most `auto.commit.interval.ms` of records), never a
//!   revocation, a rebalance or the coordinator moving. Their count is printed.
//! - The survivors, stopped with SIGTERM, exit 0, and the group's commits are then the ends of
//!   the log: nothing printed is left uncommitted, nothing unprinted is committed.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_client::{Client, ClientConfig, NewTopic, ProduceRecord, Producer, ProducerConfig, TopicPartition};

use super::support;
use super::{cluster_script, committed_in, Restart, BROKER_STOPS, DEADLINE};

const PARTITIONS: i32 = 24;
/// Records are written in rounds of one per partition, this far apart, for the whole churn.
const ROUNDS: usize = 300;
const ROUND_EVERY: Duration = Duration::from_millis(100);
/// How long the members get to print the last records once the writing has stopped (a killed
/// member's partitions are idle until its session expires: 45 s under KIP-848's default).
const CATCH_UP: Duration = Duration::from_secs(120);

/// `(partition, offset)` of one printed record, and which member printed it.
type Printed = Arc<Mutex<Vec<(i32, i64, usize)>>>;

/// One `kwire consume --group` process, its output read by two threads.
struct Member {
    index: usize,
    child: Child,
    readers: Vec<JoinHandle<()>>,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Member {
    fn spawn(
        cluster: &support::Cluster,
        topic: &str,
        group: &str,
        settings: &[&str],
        index: usize,
        printed: &Printed,
    ) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_kwire"));
        command.args(["--format", "json", "consume", topic, "--group", group]);
        for setting in settings {
            command.args(["-X", setting]);
        }
        let mut child = command
            .env("KWIRE_BOOTSTRAP", &cluster.bootstrap)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kwire runs");
        let out = BufReader::new(child.stdout.take().unwrap());
        let printed = Arc::clone(printed);
        let stdout_reader = std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                let doc: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("member {index} printed a line that is not JSON ({e}): {line}")
                });
                let (Some(partition), Some(offset)) = (doc["partition"].as_i64(), doc["offset"].as_i64())
                else {
                    panic!("member {index} printed a record without partition and offset: {line}");
                };
                let partition = i32::try_from(partition).unwrap();
                printed.lock().unwrap().push((partition, offset, index));
            }
        });
        let err = BufReader::new(child.stderr.take().unwrap());
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let lines = Arc::clone(&stderr);
        let stderr_reader = std::thread::spawn(move || {
            for line in err.lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line);
            }
        });
        Self { index, child, readers: vec![stdout_reader, stderr_reader], stderr }
    }

    /// SIGKILL: nothing is committed or left on the way out.
    fn kill(mut self) -> usize {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        for r in self.readers {
            r.join().unwrap();
        }
        self.index
    }

    /// SIGTERM, and the exit: it must commit what it printed, leave and exit 0 within 30 s.
    fn stop(mut self) -> Result<(), String> {
        Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status().unwrap();
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > Duration::from_secs(30) {
                self.child.kill().unwrap();
                self.child.wait().unwrap();
                return Err(format!(
                    "member {} did not exit within 30 s of SIGTERM: {}",
                    self.index,
                    self.tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        for r in std::mem::take(&mut self.readers) {
            r.join().unwrap();
        }
        if status.success() {
            Ok(())
        } else {
            Err(format!("member {} exited with {status}: {}", self.index, self.tail()))
        }
    }

    fn tail(&self) -> String {
        let lines = self.stderr.lock().unwrap();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }
}

/// Writes `ROUNDS` rounds of one record per partition, on a runtime of its own; returns how
/// many records failed to be written.
fn keep_writing(bootstrap: String, topic: String) -> JoinHandle<usize> {
    std::thread::spawn(move || {
        support::runtime().block_on(async {
            let client = Arc::new(Client::connect(ClientConfig::new(&bootstrap).unwrap()).await.unwrap());
            let producer = Producer::new(Arc::clone(&client), ProducerConfig::default()).unwrap();
            let mut deliveries = Vec::with_capacity(ROUNDS * PARTITIONS as usize);
            for round in 0..ROUNDS {
                for p in 0..PARTITIONS {
                    let record = ProduceRecord::new(None, Some(Bytes::from(format!("{round}/{p}"))));
                    deliveries.push(
                        producer.send_to(TopicPartition::new(topic.as_str(), p), record).await.unwrap(),
                    );
                }
                tokio::time::sleep(ROUND_EVERY).await;
            }
            producer.flush().await;
            let mut failed = 0;
            for d in deliveries {
                failed += usize::from(d.wait().await.is_err());
            }
            producer.close().await;
            failed
        })
    })
}

fn churn(settings: &[&str], prefix: &str) {
    let Some(cluster) = support::cluster() else { return };
    let _serial = BROKER_STOPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let rt = support::runtime();
    let client = rt.block_on(Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap())).unwrap();
    let topic = support::unique(prefix);
    let created = rt.block_on(client.create_topics(&[NewTopic::new(&topic, PARTITIONS, 3)], DEADLINE));
    created[&topic].as_ref().unwrap();
    let group = support::unique(&format!("{prefix}-group"));
    let coordinator = rt.block_on(client.coordinator(&group)).unwrap().node_id.unwrap();
    let tps: Vec<TopicPartition> = (0..PARTITIONS).map(|p| TopicPartition::new(topic.as_str(), p)).collect();

    let printed: Printed = Arc::default();
    let mut next_index = 0;
    // Every member's stderr (assignments, revocations, commit failures), for a failure's message.
    let mut stderrs: BTreeMap<usize, Arc<Mutex<Vec<String>>>> = BTreeMap::new();
    let mut spawn = |live: &mut BTreeMap<usize, Member>| {
        let m = Member::spawn(&cluster, &topic, &group, settings, next_index, &printed);
        stderrs.insert(next_index, Arc::clone(&m.stderr));
        live.insert(next_index, m);
        next_index += 1;
    };
    let mut live = BTreeMap::new();
    for _ in 0..6 {
        spawn(&mut live);
    }
    let writer = keep_writing(cluster.bootstrap.clone(), topic.clone());
    let mut killed = BTreeSet::new();

    std::thread::sleep(Duration::from_secs(6));
    for i in [0, 1] {
        killed.insert(live.remove(&i).unwrap().kill());
    }
    std::thread::sleep(Duration::from_secs(3));
    spawn(&mut live);
    spawn(&mut live);
    std::thread::sleep(Duration::from_secs(3));
    {
        let restart = Restart(coordinator);
        let out = cluster_script(&["stop-broker", &coordinator.to_string()]);
        assert!(out.status.success(), "stop-broker: {}", support::stderr(&out));
        std::thread::sleep(Duration::from_secs(2));
        restart.now();
    }
    killed.insert(live.remove(&2).unwrap().kill());
    spawn(&mut live);
    {
        // While the group rebalances for the member just started: a broker that leads some
        // partitions but does not coordinate the group stops and comes back, so members fetch
        // from new leaders in the middle of taking partitions over.
        let leader = (1..=3).find(|n| *n != coordinator).unwrap();
        let restart = Restart(leader);
        let out = cluster_script(&["stop-broker", &leader.to_string()]);
        assert!(out.status.success(), "stop-broker: {}", support::stderr(&out));
        std::thread::sleep(Duration::from_secs(2));
        restart.now();
    }
    let failed_writes = writer.join().unwrap();
    assert_eq!(failed_writes, 0, "records the producer could not write");

    let ranges = rt.block_on(client.log_ranges(&tps, DEADLINE));
    let ends: BTreeMap<i32, i64> =
        tps.iter().map(|tp| (tp.partition, ranges[tp].as_ref().unwrap().high_watermark)).collect();
    let total: i64 = ends.values().sum();
    assert_eq!(total, (ROUNDS * PARTITIONS as usize) as i64, "the log holds every record written");
    let started = Instant::now();
    let missing = loop {
        let seen: BTreeSet<(i32, i64)> = printed.lock().unwrap().iter().map(|(p, o, _)| (*p, *o)).collect();
        let missing: Vec<(i32, i64)> = ends
            .iter()
            .flat_map(|(p, end)| (0..*end).map(move |o| (*p, o)))
            .filter(|k| !seen.contains(k))
            .collect();
        if missing.is_empty() || started.elapsed() > CATCH_UP {
            break missing;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    let stops: Vec<String> = std::mem::take(&mut live).into_values().filter_map(|m| m.stop().err()).collect();
    assert!(
        missing.is_empty(),
        "{} records never printed within {CATCH_UP:?} of the last write, the first {:?}",
        missing.len(),
        &missing[..missing.len().min(10)]
    );
    assert!(stops.is_empty(), "survivors that did not stop cleanly:\n{}", stops.join("\n\n"));

    let mut printers: BTreeMap<(i32, i64), Vec<usize>> = BTreeMap::new();
    for (p, o, m) in printed.lock().unwrap().iter() {
        printers.entry((*p, *o)).or_default().push(*m);
    }
    let doubled: Vec<(&(i32, i64), &Vec<usize>)> = printers.iter().filter(|(_, m)| m.len() > 1).collect();
    let unexplained: Vec<_> =
        doubled.iter().filter(|(_, m)| !m.iter().any(|i| killed.contains(i))).take(10).collect();
    if let Some(((partition, _), _)) = unexplained.first() {
        let about = format!("{topic}-{partition}");
        let said: Vec<String> = stderrs
            .iter()
            .flat_map(|(i, lines)| {
                let lines = lines.lock().unwrap();
                lines
                    .iter()
                    .filter(|l| {
                        l.contains(&format!("{about} ")) || l.ends_with(&about) || l.contains("commit")
                    })
                    .map(|l| format!("member {i}: {l}"))
                    .collect::<Vec<_>>()
            })
            .collect();
        panic!(
            "records printed twice with no killed member among their printers (partition, offset) -> members: \
             {unexplained:?}\nwhat the members said about {about} and commits:\n{}",
            said.join("\n")
        );
    }
    eprintln!(
        "{prefix}: {total} records, {} printed twice or more, all by a member later killed ({killed:?})",
        doubled.len()
    );

    let committed = rt.block_on(committed_in(&client, &group, &topic));
    let committed: BTreeMap<i32, i64> = committed.iter().map(|(tp, c)| (tp.partition, c.offset)).collect();
    assert_eq!(committed, ends, "the group's commits once every survivor stopped");
}

#[test]
fn a_classic_cooperative_group_through_kills_joins_and_a_coordinator_restart_prints_every_record() {
    churn(
        &[
            "group.protocol=classic",
            "partition.assignment.strategy=cooperative-sticky",
            "session.timeout.ms=10000",
            "heartbeat.interval.ms=1000",
        ],
        "churn-classic",
    );
}

#[test]
fn a_kip_848_group_through_kills_joins_and_a_coordinator_restart_prints_every_record() {
    churn(&["group.protocol=consumer"], "churn-848");
}
