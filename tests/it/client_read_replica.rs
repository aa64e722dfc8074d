//! Preferred read replicas (KIP-392) against the real cluster, whose brokers sit in racks
//! r1–r3 with `RackAwareReplicaSelector` (scripts/cluster): a client in a follower's rack
//! reads from that follower after its first Fetch, and goes back to the leader when the
//! follower's connection fails — every record exactly once either way.

use std::sync::Arc;
use std::time::Duration;

use kafka_client::{Client, ClientConfig, FetchOptions, FetchRange, Fetcher, NewTopic, TopicPartition};
use kafka_wire::protocol::ApiKey;

use crate::support::proxy::{Fault, Proxy};
use crate::support::traffic::{Detail, Traffic};
use crate::support::{self, Cluster};

const TIMEOUT: Duration = Duration::from_secs(60);
const RECORDS: i64 = 20_000;

/// A partition of replication 3 holding [`RECORDS`] records, with its leader and one follower.
struct Replicated {
    tp: TopicPartition,
    leader: String,
    follower: i32,
    follower_addr: String,
    other_addr: String,
}

fn replicated_topic(runtime: &tokio::runtime::Runtime, cluster: &Cluster, prefix: &str) -> Replicated {
    let topic = support::unique(prefix);
    let direct = runtime.block_on(Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap())).unwrap();
    let created = runtime.block_on(direct.create_topics(&[NewTopic::new(&topic, 1, 3)], TIMEOUT));
    created[&topic].as_ref().unwrap();
    support::produce_with_kafka(cluster, &topic, RECORDS as u32, 100);
    let metadata = runtime.block_on(direct.refresh_metadata(std::slice::from_ref(&topic))).unwrap();
    let partition = metadata.topic(&topic).unwrap().partitions[0].clone();
    assert_eq!(partition.isr.as_slice().len(), 3, "not every replica in sync: {partition:?}");
    let leader = partition.leader.expect("a leader");
    let others: Vec<i32> = partition.replicas.as_slice().iter().copied().filter(|&r| r != leader).collect();
    let addr = |node: i32| metadata.broker(node).expect("the replica's broker").addr();
    for b in &metadata.brokers {
        assert_eq!(
            b.rack.as_deref(),
            Some(format!("r{}", b.node_id).as_str()),
            "broker {} has no rack r{0}: the cluster lacks scripts/cluster's broker.rack settings \
             (restart it with the current scripts/cluster)",
            b.node_id
        );
    }
    Replicated {
        tp: TopicPartition::new(topic.as_str(), 0),
        leader: addr(leader),
        follower: others[0],
        follower_addr: addr(others[0]),
        other_addr: addr(others[1]),
    }
}

/// A client in `rack` whose Fetch requests are logged, connecting through `address_map`.
fn client_in_rack(
    runtime: &tokio::runtime::Runtime,
    cluster: &Cluster,
    rack: &str,
    address_map: &[(&str, &str)],
) -> (Arc<Client>, Traffic) {
    let mut config = ClientConfig::new(&cluster.bootstrap).unwrap();
    config.client_rack = Some(rack.to_owned());
    config.request_timeout = Duration::from_secs(10);
    for (from, to) in address_map {
        config.address_map.insert((*from).to_owned(), (*to).to_owned());
    }
    let traffic = Traffic::record(&mut config, ApiKey::FETCH, Detail::Sizes);
    (Arc::new(runtime.block_on(Client::connect(config)).unwrap()), traffic)
}

/// Small responses, so that reading the partition takes many rounds.
fn options() -> FetchOptions {
    FetchOptions {
        max_bytes: 64 * 1024,
        partition_max_bytes: 64 * 1024,
        timeout: TIMEOUT,
        ..FetchOptions::default()
    }
}

/// Reads chunks until `stop` says so or the range ends, checking every offset arrives once and
/// in order; returns whether the range is complete.
async fn read(fetcher: &mut Fetcher, next: &mut i64, mut stop: impl FnMut(i64) -> bool) -> bool {
    while let Some((tp, chunk)) = fetcher.next().await {
        let chunk = chunk.unwrap_or_else(|e| panic!("{tp}: {e}"));
        for r in &chunk.fetched.records {
            assert_eq!(r.offset, *next, "{tp}: a record lost or doubled");
            *next += 1;
        }
        if chunk.complete {
            return true;
        }
        if stop(*next) {
            return false;
        }
    }
    true
}

#[test]
fn a_client_in_a_followers_rack_fetches_from_that_follower_after_the_first_fetch() {
    let Some(cluster) = support::cluster() else { return };
    let runtime = support::multi_thread_runtime();
    let p = replicated_topic(&runtime, &cluster, "read-replica");
    let (client, fetches) = client_in_rack(&runtime, &cluster, &format!("r{}", p.follower), &[]);

    let mut fetcher =
        Fetcher::new(Arc::clone(&client), &[FetchRange::new(p.tp.clone(), 0, RECORDS)], options());
    let mut next = 0;
    assert!(runtime.block_on(read(&mut fetcher, &mut next, |_| false)));
    assert_eq!(next, RECORDS, "every record read exactly once");

    let sent = fetches.request_brokers();
    let to = |addr: &str| sent.iter().filter(|b| *b == addr).count();
    eprintln!(
        "{} Fetches: leader {} {}, follower {} {}, other {} {}",
        sent.len(),
        p.leader,
        to(&p.leader),
        p.follower_addr,
        to(&p.follower_addr),
        p.other_addr,
        to(&p.other_addr)
    );
    assert_eq!(sent.first(), Some(&p.leader), "the first Fetch goes to the leader: {sent:?}");
    assert_eq!(sent.get(1), Some(&p.follower_addr), "the leader named the follower in the client's rack");
    assert_eq!(to(&p.other_addr), 0, "the broker in another rack was read: {sent:?}");
    // The follower's high watermark may trail the leader's just after the records were
    // written: a follower at its end, short of the range, is checked with the leader, which
    // names the follower again. Those are the only Fetches the leader gets after the first.
    assert!(to(&p.leader) <= 3, "the leader kept serving: {sent:?}");
    for (i, b) in sent.iter().enumerate().skip(1) {
        if *b == p.leader {
            assert!(i + 1 == sent.len() || sent[i + 1] == p.follower_addr, "{sent:?}");
        }
    }
    assert!(to(&p.follower_addr) > 10 * to(&p.leader), "the follower served the rounds: {sent:?}");
}

#[test]
fn a_follower_whose_connection_fails_sends_the_reader_back_to_the_leader_losing_and_doubling_nothing() {
    let Some(cluster) = support::cluster() else { return };
    let runtime = support::multi_thread_runtime();
    let p = replicated_topic(&runtime, &cluster, "read-replica-cut");
    let proxy = Proxy::start(&p.follower_addr);
    let (client, fetches) =
        client_in_rack(&runtime, &cluster, &format!("r{}", p.follower), &[(&p.follower_addr, proxy.addr())]);

    let mut fetcher =
        Fetcher::new(Arc::clone(&client), &[FetchRange::new(p.tp.clone(), 0, RECORDS)], options());
    let mut next = 0;
    // Read a few chunks from the follower, then cut every response it sends.
    let complete = runtime.block_on(read(&mut fetcher, &mut next, |at| at >= RECORDS / 4));
    assert!(!complete, "the range ended before the fault");
    // The trace names the address connected to: the follower's proxy.
    let follower = proxy.addr().to_owned();
    let before = fetches.request_brokers();
    assert!(
        before.iter().filter(|b| **b == follower).count() >= 2,
        "the follower was not read before the fault: {before:?}"
    );
    proxy.set(Fault::Cut);
    assert!(runtime.block_on(read(&mut fetcher, &mut next, |_| false)));
    assert_eq!(next, RECORDS, "every record read exactly once");

    let after: Vec<String> = fetches.request_brokers()[before.len()..].to_vec();
    let to_leader = after.iter().filter(|b| **b == p.leader).count();
    let to_follower = after.iter().filter(|b| **b == follower).count();
    eprintln!("after the fault: {to_leader} Fetches to the leader, {to_follower} to the follower: {after:?}");
    // At most the Fetch(es) in flight at the cut and one retry went to the follower; the
    // leader served the rest (it is asked without the rack, so it serves instead of naming
    // the follower again).
    assert!(to_follower <= 2, "the reader kept going to the failed follower: {after:?}");
    assert!(to_leader > 5, "the leader did not serve the rest: {after:?}");
    assert!(after.iter().all(|b| *b != p.other_addr), "{after:?}");
    drop(proxy);
}

#[test]
fn kwire_consume_with_client_rack_traces_its_fetches_going_to_the_follower_in_that_rack() {
    let Some(cluster) = support::cluster() else { return };
    let runtime = support::multi_thread_runtime();
    let p = replicated_topic(&runtime, &cluster, "read-replica-cli");
    let rack = format!("client.rack=r{}", p.follower);
    let out = support::kwire(&cluster, &["consume", &p.tp.topic, "-X", &rack, "--trace"]);
    assert!(out.status.success(), "{}", support::stderr(&out));
    assert_eq!(support::stdout(&out).lines().count(), RECORDS as usize, "every record printed once");
    let trace = support::stderr(&out);
    // `-> host:port Fetch vN request ...`: the broker of each Fetch, in order.
    let fetches: Vec<&str> = trace
        .lines()
        .filter(|l| l.starts_with("-> ") && l.contains(" Fetch v") && l.contains(" request "))
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    let rack_id = format!("\"rack_id\":\"r{}\"", p.follower);
    assert!(trace.contains(&rack_id), "no Fetch carried {rack_id}");
    assert_eq!(fetches.first(), Some(&p.leader.as_str()), "{fetches:?}");
    assert_eq!(fetches.get(1), Some(&p.follower_addr.as_str()), "{fetches:?}");
    let to_follower = fetches.iter().filter(|b| **b == p.follower_addr).count();
    assert!(to_follower > fetches.len() / 2, "{fetches:?}");
    assert!(!fetches.contains(&p.other_addr.as_str()), "{fetches:?}");
}
