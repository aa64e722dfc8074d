//! The idempotent producer while the leader of the partitions it writes to is stopped and
//! started again: 200,000 keyed records, every one in the log exactly once and, per key, in
//! send order — read back after the broker is back.
//!
//! Stopping a broker disturbs every test using the cluster, so this is its own test binary (as
//! tests/failover.rs is): cargo runs test binaries one after another, so no other integration
//! test sees the broker go away. The broker is restarted by a guard even when the test fails.

#[path = "it/support/mod.rs"]
mod support;

use std::collections::{BTreeMap, HashMap};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_client::{
    Client, ClientConfig, FetchOptions, FetchRange, NewTopic, ProduceRecord, Producer, ProducerConfig,
    TopicPartition,
};

const DEADLINE: Duration = Duration::from_secs(30);
const PARTITIONS: i32 = 3;
const RECORDS: usize = 200_000;

fn cluster_script(args: &[&str]) -> std::process::Output {
    Command::new(support::repo_root().join("scripts/cluster"))
        .args(args)
        .output()
        .expect("scripts/cluster runs")
}

/// Starts broker `n` again when dropped — also while unwinding from a failed assertion.
struct Restart(i32);

impl Drop for Restart {
    fn drop(&mut self) {
        let out = cluster_script(&["start-broker", &self.0.to_string()]);
        if !out.status.success() {
            eprintln!("restarting broker {} failed: {}", self.0, support::stderr(&out));
        }
    }
}

#[test]
fn records_sent_while_their_leader_restarts_are_written_once_and_in_order() {
    let Some(cluster) = support::cluster() else { return };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let client = Arc::new(Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap());
        let topic = support::unique("producer-failover");
        let created = client.create_topics(&[NewTopic::new(&topic, PARTITIONS, 3)], DEADLINE).await;
        created[&topic].as_ref().unwrap();
        let mut leader = None;
        for _ in 0..50 {
            let m = client.refresh_metadata(std::slice::from_ref(&topic)).await.unwrap();
            leader = m.topic(&topic).and_then(|t| t.partitions.first()).and_then(|p| p.leader);
            if leader.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let victim = leader.expect("partition 0 has a leader");

        let producer = Arc::new(Producer::new(Arc::clone(&client), ProducerConfig::default()).unwrap());
        let sending = {
            let (producer, topic) = (Arc::clone(&producer), topic.clone());
            tokio::spawn(async move {
                let mut deliveries = Vec::with_capacity(RECORDS);
                for i in 0..RECORDS {
                    let record = ProduceRecord::new(
                        Some(Bytes::from(format!("k{}", i % 101))),
                        Some(Bytes::from(i.to_string())),
                    );
                    deliveries.push(producer.send(&topic, record).await.unwrap());
                    if i % 1000 == 0 {
                        // Spread the records over the stop and the restart (~40 s).
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
                producer.flush().await;
                let mut failed = Vec::new();
                for d in deliveries {
                    if let Err(e) = d.wait().await {
                        failed.push(e.to_string());
                    }
                }
                failed
            })
        };
        tokio::time::sleep(Duration::from_secs(2)).await;
        let restart = Restart(victim);
        let n = victim.to_string();
        let stopped = Instant::now();
        let out = tokio::task::spawn_blocking(move || cluster_script(&["stop-broker", &n])).await.unwrap();
        assert!(out.status.success(), "stop-broker: {}", support::stderr(&out));
        tokio::time::sleep(Duration::from_secs(2)).await;
        tokio::task::spawn_blocking(move || drop(restart)).await.unwrap();
        eprintln!("broker {victim} stopped and started again in {:?}", stopped.elapsed());
        let failed = sending.await.unwrap();
        assert!(failed.is_empty(), "{} records failed, e.g. {:?}", failed.len(), failed.first());
        producer.close().await;

        let mut values: HashMap<String, usize> = HashMap::new();
        for p in 0..PARTITIONS {
            let tp = TopicPartition::new(&topic, p);
            let mut last: BTreeMap<String, usize> = BTreeMap::new();
            let mut from = 0;
            loop {
                let got = client
                    .fetch_range(&[FetchRange::new(tp.clone(), from, i64::MAX)], &FetchOptions::default())
                    .await;
                let part = got[&tp].as_ref().unwrap();
                for r in &part.records {
                    let key = String::from_utf8_lossy(r.key.as_deref().unwrap()).into_owned();
                    let value = String::from_utf8_lossy(r.value.as_deref().unwrap()).into_owned();
                    let n: usize = value.parse().unwrap();
                    if let Some(prev) = last.insert(key.clone(), n) {
                        assert!(prev < n, "{tp}: key {key} has {n} after {prev}");
                    }
                    *values.entry(value).or_default() += 1;
                }
                if part.records.is_empty() || part.next_offset >= part.high_watermark {
                    break;
                }
                from = part.next_offset;
            }
        }
        let twice = values.values().filter(|n| **n > 1).count();
        assert_eq!(twice, 0, "values written more than once");
        assert_eq!(values.len(), RECORDS, "every record once");
    });
}
