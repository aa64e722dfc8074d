//! Test support for the stream crate's integration tests: the cluster (the same rules as the
//! root `tests/it/support`: skipped with a note outside CI, a failure in CI when missing), unique
//! names, and topic administration through kwire's own client.

#![allow(dead_code)]

use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_client::{Client, ClientConfig, NewTopic, ProduceOptions, ProduceRecord, TopicPartition};
use kafka_wire::protocol::Uuid;

/// Addresses of the running local cluster.
#[derive(Debug, Clone)]
pub struct Cluster {
    pub bootstrap: String,
    pub zookeeper: String,
}

fn required() -> bool {
    ["CI", "KWIRE_REQUIRE_CLUSTER"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|s| !s.is_empty() && s != "false"))
}

fn reachable(addr: &str) -> bool {
    addr.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .is_some_and(|a| TcpStream::connect_timeout(&a, Duration::from_secs(3)).is_ok())
}

/// The cluster (brokers and ZooKeeper) to test against, or `None` with a note outside CI.
pub fn cluster() -> Option<Cluster> {
    let bootstrap = std::env::var("KWIRE_BOOTSTRAP").ok().filter(|s| !s.is_empty());
    let zookeeper = std::env::var("KWIRE_ZOOKEEPER").ok().filter(|s| !s.is_empty());
    let (Some(bootstrap), Some(zookeeper)) = (bootstrap, zookeeper) else {
        assert!(!required(), "KWIRE_BOOTSTRAP / KWIRE_ZOOKEEPER are not set, and CI requires the cluster");
        eprintln!("note: KWIRE_BOOTSTRAP or KWIRE_ZOOKEEPER not set; skipping (eval \"$(scripts/cluster env --export)\")");
        return None;
    };
    let first = bootstrap.split(',').next().unwrap_or_default().to_owned();
    if !reachable(&first) {
        assert!(!required(), "the cluster at {bootstrap} is not reachable, and CI requires it");
        eprintln!("note: cluster at {bootstrap} not reachable; skipping");
        return None;
    }
    Some(Cluster { bootstrap, zookeeper })
}

/// A name no other test (or earlier run) uses.
pub fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    format!("{prefix}-{}-{}-{nanos:x}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

pub async fn client(cluster: &Cluster) -> Arc<Client> {
    let config = ClientConfig::new(&cluster.bootstrap).expect("bootstrap parses");
    Arc::new(Client::connect(config).await.expect("cluster reachable"))
}

/// Creates `topic` (replication 3), retrying while a deleted topic of the same name is still
/// being removed; its id.
pub async fn create_topic(client: &Client, topic: &str, partitions: i32) -> Uuid {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut results =
            client.create_topics(&[NewTopic::new(topic, partitions, 3)], Duration::from_secs(30)).await;
        match results.remove(topic) {
            Some(Ok(created)) => {
                if let Some(id) = created.topic_id {
                    return id;
                }
                let metadata = client.refresh_metadata(&[topic.to_owned()]).await.expect("metadata");
                return metadata.topic(topic).and_then(|t| t.topic_id).expect("a created topic has an id");
            }
            other => {
                assert!(Instant::now() < deadline, "cannot create {topic}: {other:?}");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

pub async fn delete_topic(client: &Client, topic: &str) {
    let mut results = client.delete_topics(&[topic.to_owned()], Duration::from_secs(60)).await;
    let outcome = results.remove(topic);
    assert!(matches!(outcome, Some(Ok(()))), "delete {topic}: {outcome:?}");
}

/// Produces `values` to one partition (acks all); the base offset.
pub async fn produce(client: &Client, topic: &str, partition: i32, values: &[String]) -> i64 {
    let records: Vec<ProduceRecord> =
        values.iter().map(|v| ProduceRecord::new(None, Some(v.clone().into_bytes().into()))).collect();
    let produced = client
        .produce(topic, partition, records, &ProduceOptions::default())
        .await
        .unwrap_or_else(|e| panic!("produce to {topic}-{partition}: {e}"));
    produced.base_offset.expect("acks=all gives a base offset")
}

/// `count` values `"<prefix>-<partition>-<n>"` for `n` in `start..start+count`.
pub fn values(prefix: &str, partition: i32, start: usize, count: usize) -> Vec<String> {
    (start..start + count).map(|n| format!("{prefix}-{partition}-{n}")).collect()
}

pub fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition::new(topic, partition)
}

/// xorshift64*: random kill moments without a dependency; the seed is printed, named after the
/// test (`what`), so a failing run can be told apart.
pub struct Rng(u64);

impl Rng {
    pub fn new(what: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x9E37_79B9_7F4A_7C15, |d| d.as_nanos() as u64);
        let seed = nanos | 1;
        eprintln!("{what} seed {seed}");
        Self(seed)
    }

    /// A number in `[0, n)` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}

/// Waits for `child` to exit, polling every 50 ms; after `within`, kills it and returns `None`
/// (the caller panics with what it was waiting for).
pub async fn exit_within(
    child: &mut std::process::Child,
    within: Duration,
) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
