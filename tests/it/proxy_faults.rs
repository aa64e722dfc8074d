//! Issue 36: `kwire proxy --fault` bends chosen pairs between a real cluster and a client, and
//! kwire's producer is proven under what it injects.
//!
//! - The idempotent producer, with Produce answers dropped, held past its request timeout after
//!   the broker wrote the batch, refused with NOT_LEADER_OR_FOLLOWER, and connections cut after
//!   requests were forwarded: every record once, each key in order. The same faults without
//!   idempotence duplicate records (the control: the faults are real).
//! - Every fault applied is in the proxy's JSON line of its pair (`"fault"`: rule and action)
//!   and counted per rule in its summary; the made error answers decode as the API's response.

use std::sync::Arc;
use std::time::Duration;

use kafka_client::Producer;
use kafka_client::{Client, ClientConfig, ProducerConfig};
use serde_json::Value;

use crate::support;
use crate::support::kwire_proxy::{KwireProxy, ProxyRun};
use crate::support::produced::{assert_once_in_key_order, duplicates, read_back, send_each, ReadBack};

/// Written in `WAVES` waves, each flushed before the next: a Produce request or more per
/// partition leader and wave, enough requests for every rule to fire.
const RECORDS: usize = 3_000;
const WAVES: usize = 20;
/// The producer's request timeout: a held answer (`HOLD_MS`) outlasts it.
const REQUEST_TIMEOUT: Duration = Duration::from_millis(1_500);
const HOLD_MS: u64 = 2_500;

/// The rules of the producer runs, as `--fault` values.
fn produce_faults() -> Vec<String> {
    vec![
        "api=Produce,first=3,action=error,error=NOT_LEADER_OR_FOLLOWER".to_owned(),
        "api=Produce,every=6,action=drop-response".to_owned(),
        format!("api=Produce,every=8,action=hold,hold_ms={HOLD_MS}"),
        "api=Produce,every=10,action=cut-after".to_owned(),
    ]
}

/// Writes `RECORDS` keyed records through a `kwire proxy` applying `produce_faults`; returns
/// what the cluster holds, how many sends failed, and what the proxy printed.
fn produce_through_faults(cluster: &support::Cluster, idempotence: bool) -> (ReadBack, usize, ProxyRun) {
    let rules = produce_faults();
    let mut args = vec!["--fault-seed", "7"];
    for r in &rules {
        args.extend(["--fault", r.as_str()]);
    }
    let proxy = KwireProxy::start(cluster, &args);
    let rt = support::multi_thread_runtime();
    let direct = rt.block_on(Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap())).unwrap();
    let topic = rt.block_on(support::new_topic_with_leaders(&direct, "proxy-faults", 3));
    let failed = rt.block_on(async {
        let mut config = ClientConfig::new(&proxy.bootstrap).unwrap();
        config.request_timeout = REQUEST_TIMEOUT;
        let client = Arc::new(Client::connect(config).await.unwrap());
        let config =
            ProducerConfig { idempotence, linger: Duration::from_millis(2), ..ProducerConfig::default() };
        let producer = Producer::new(client, config).unwrap();
        let mut failed = 0;
        for wave in 0..WAVES {
            let first = wave * RECORDS / WAVES;
            let results = send_each(&producer, &topic, first..(wave + 1) * RECORDS / WAVES).await;
            failed += results.iter().filter(|r| r.is_err()).count();
        }
        producer.close().await;
        failed
    });
    let read = rt.block_on(read_back(&direct, &topic, 3));
    (read, failed, proxy.stop())
}

/// The `"fault"` objects of the pairs the proxy printed, as (rule, action) text.
fn faults_applied(run: &ProxyRun) -> Vec<(String, String)> {
    run.pairs()
        .iter()
        .filter_map(|p| p.get("fault"))
        .map(|f| (f["rule"].as_str().unwrap_or("").to_owned(), f["action"].as_str().unwrap_or("").to_owned()))
        .collect()
}

#[test]
fn an_idempotent_producer_writes_each_record_once_in_order_through_dropped_held_refused_and_cut_answers() {
    let Some(cluster) = support::cluster() else { return };
    let (read, failed, run) = produce_through_faults(&cluster, true);
    assert_eq!(failed, 0, "sends that failed: {}", run.stderr);
    assert_once_in_key_order(&read, RECORDS);

    let applied = faults_applied(&run);
    for (n, action) in
        ["error NOT_LEADER_OR_FOLLOWER", "drop-response", "hold the response", "cut-after"].iter().enumerate()
    {
        let rule = format!("--fault #{}", n + 1);
        assert!(
            applied.iter().any(|(r, a)| *r == rule && a.starts_with(action)),
            "no pair names {rule} ({action}): {applied:?}"
        );
        assert!(
            run.stderr.contains(&format!("fault rule {rule} (")),
            "the summary counts {rule}: {}",
            run.stderr
        );
    }
    // The proxy's own answers decode as Produce responses carrying the error per partition.
    let refused: Vec<&Value> =
        run.pairs().into_iter().filter(|p| p["fault"]["rule"] == "--fault #1").collect();
    assert_eq!(refused.len(), 3, "`first=3` answers three requests");
    for pair in refused {
        assert_eq!(pair["api"], "Produce");
        let partitions = pair["response"]["body"]["responses"][0]["partition_responses"].as_array().unwrap();
        assert!(!partitions.is_empty() && partitions.iter().all(|p| p["error_code"] == 6), "{pair}");
    }
}

#[test]
fn without_idempotence_the_same_faults_duplicate_records() {
    let Some(cluster) = support::cluster() else { return };
    let (read, _, run) = produce_through_faults(&cluster, false);
    assert!(!faults_applied(&run).is_empty(), "no fault applied: {}", run.stderr);
    assert!(
        duplicates(&read) > 0,
        "a dropped or held answer to a written batch, retried without idempotence, must duplicate it"
    );
}
