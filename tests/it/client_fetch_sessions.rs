//! Incremental fetch sessions (KIP-227) against the real cluster: a read of 1,000 partitions
//! in many rounds sends one full Fetch per broker, then only incremental ones listing the
//! partitions that moved, and every record arrives.

use std::collections::HashMap;
use std::time::Duration;

use kafka_client::{Client, ClientConfig, FetchOptions, FetchRange, NewTopic, TopicPartition};
use kafka_wire::protocol::ApiKey;

use crate::support;
use crate::support::traffic::{numbers_after, Detail, Traffic};

const TIMEOUT: Duration = Duration::from_secs(120);
const PARTITIONS: i32 = 1_000;
const PER_PARTITION: i64 = 3;

/// One traced Fetch request: its broker, session epoch and how many partitions it listed.
#[derive(Debug, Clone)]
struct SentFetch {
    broker: String,
    session_epoch: i64,
    partitions: usize,
}

/// A client whose Fetch requests are recorded with their decoded text.
async fn client_recording_fetches(cluster: &support::Cluster) -> (Client, Traffic) {
    let mut config = ClientConfig::new(&cluster.bootstrap).unwrap();
    let traffic = Traffic::record(&mut config, ApiKey::FETCH, Detail::RequestText);
    (Client::connect(config).await.unwrap(), traffic)
}

#[test]
fn a_read_of_1000_partitions_in_many_rounds_sends_one_full_fetch_per_broker_then_incremental_ones() {
    let Some(cluster) = support::cluster() else { return };
    let topic = support::unique("fetch-sessions");
    let runtime = crate::support::runtime();
    let (client, sent) = runtime.block_on(async {
        let (client, sent) = client_recording_fetches(&cluster).await;
        let created = client.create_topics(&[NewTopic::new(&topic, PARTITIONS, 1)], TIMEOUT).await;
        created[&topic].as_ref().unwrap_or_else(|e| panic!("create {topic}: {e}"));
        (client, sent)
    });
    support::produce_with_kafka(&cluster, &topic, (PARTITIONS as u32) * PER_PARTITION as u32, 100);

    let ranges: Vec<FetchRange> = (0..PARTITIONS)
        .map(|p| FetchRange::new(TopicPartition::new(topic.as_str(), p), 0, PER_PARTITION))
        .collect();
    // 16 KiB per response: ~500 KB of records take many rounds per broker.
    let options = FetchOptions { max_bytes: 16 * 1024, timeout: TIMEOUT, ..FetchOptions::default() };
    let fetched = runtime.block_on(client.fetch_range(&ranges, &options));

    assert_eq!(fetched.len(), PARTITIONS as usize);
    for (tp, result) in &fetched {
        let part = result.as_ref().unwrap_or_else(|e| panic!("{tp}: {e}"));
        let offsets: Vec<i64> = part.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, (0..PER_PARTITION).collect::<Vec<_>>(), "{tp}");
        assert!(part.records.iter().all(|r| r.value.as_ref().is_some_and(|v| v.len() == 100)), "{tp}");
    }

    let sent: Vec<SentFetch> = sent
        .requests()
        .into_iter()
        .map(|f| SentFetch {
            session_epoch: numbers_after(&f.text, "session_epoch").first().copied().unwrap_or(-1),
            partitions: f.text.matches("FetchPartition {").count(),
            broker: f.broker,
        })
        .collect();
    let mut full: HashMap<&str, usize> = HashMap::new();
    let mut incremental = 0;
    for f in &sent {
        match f.session_epoch {
            0 => *full.entry(f.broker.as_str()).or_default() += 1,
            e if e > 0 => {
                incremental += 1;
                assert!(
                    f.partitions < PARTITIONS as usize,
                    "an incremental fetch listed every partition: {f:?}"
                );
            }
            e => panic!("a sessionless fetch (epoch {e}) to a Kafka 4 broker: {f:?}"),
        }
    }
    eprintln!(
        "{} Fetch requests: {} full ({full:?}), {incremental} incremental; partitions listed: {:?}",
        sent.len(),
        full.values().sum::<usize>(),
        sent.iter().map(|f| f.partitions).collect::<Vec<_>>()
    );
    assert!(full.values().all(|&n| n == 1), "more than one full fetch to a broker: {full:?}");
    assert!(incremental > full.len(), "expected many rounds of incremental fetches, got {incremental}");

    // `kwire consume` reads every partition at once through the pipelined Fetcher: with
    // `--trace`, one full Fetch per broker opens its session and lists all the partitions it
    // leads, so the whole topic takes a handful of requests, not one per partition.
    let out = support::kwire(&cluster, &["--trace", "consume", &topic]);
    assert!(out.status.success(), "{}", support::stderr(&out));
    assert_eq!(support::stdout(&out).lines().count(), (PARTITIONS as usize) * PER_PARTITION as usize);
    let epochs: Vec<i64> = support::stderr(&out)
        .split("\"session_epoch\":")
        .skip(1)
        .filter_map(|rest| rest.split(|c: char| c != '-' && !c.is_ascii_digit()).next()?.parse().ok())
        .collect();
    let cli_full = epochs.iter().filter(|&&e| e == 0).count();
    let cli_incremental = epochs.iter().filter(|&&e| e > 0).count();
    eprintln!("kwire --trace consume: {cli_full} full and {cli_incremental} incremental Fetch requests");
    assert_eq!(cli_full, cluster.brokers().len(), "one full fetch per broker: {epochs:?}");
    assert!(
        epochs.len() < PARTITIONS as usize / 10,
        "{} Fetch requests for {PARTITIONS} partitions",
        epochs.len()
    );
    assert!(epochs.iter().all(|&e| e >= 0), "a sessionless fetch: {epochs:?}");
}

/// A topic whose ranges end first is forgotten in the session while the other is still read
/// (Fetch v13+ names it by topic id): the forgotten partitions carry the id the session was
/// given for that topic, never a missing or zero one, and both topics arrive whole.
#[test]
fn a_topic_whose_ranges_end_first_is_forgotten_by_the_id_its_session_knows() {
    const LONG: i64 = 1_000;
    const SHORT: i64 = 3;
    let Some(cluster) = support::cluster() else { return };
    let (long, short) = (support::unique("fetch-long"), support::unique("fetch-short"));
    let runtime = crate::support::runtime();
    let (client, sent) = runtime.block_on(async {
        let (client, sent) = client_recording_fetches(&cluster).await;
        let created =
            client.create_topics(&[NewTopic::new(&long, 3, 1), NewTopic::new(&short, 3, 1)], TIMEOUT).await;
        for name in [&long, &short] {
            created[name].as_ref().unwrap_or_else(|e| panic!("create {name}: {e}"));
        }
        (client, sent)
    });
    support::produce_with_kafka(&cluster, &long, 3 * LONG as u32, 100);
    support::produce_with_kafka(&cluster, &short, 3 * SHORT as u32, 100);
    let short_id = runtime.block_on(async {
        let metadata = client.refresh_metadata(std::slice::from_ref(&short)).await.unwrap();
        metadata.topic(&short).and_then(|t| t.topic_id).expect("Kafka 4 gives every topic an id")
    });
    // A range that ends where its log ends, per partition: every partition of `short` is done
    // after its first answer, `long`'s take many 16 KiB responses.
    let mut ranges = Vec::new();
    for p in 0..3 {
        ranges.push(FetchRange::new(TopicPartition::new(long.as_str(), p), 0, LONG));
        ranges.push(FetchRange::new(TopicPartition::new(short.as_str(), p), 0, SHORT));
    }
    let options = FetchOptions { max_bytes: 16 * 1024, timeout: TIMEOUT, ..FetchOptions::default() };
    let fetched = runtime.block_on(client.fetch_range(&ranges, &options));
    for (tp, result) in &fetched {
        let want = if *tp.topic == *long { LONG } else { SHORT };
        let part = result.as_ref().unwrap_or_else(|e| panic!("{tp}: {e}"));
        assert_eq!(part.records.iter().map(|r| r.offset).collect::<Vec<_>>(), (0..want).collect::<Vec<_>>());
    }
    let sent: Vec<String> = sent.requests().into_iter().map(|f| f.text).collect();
    // Each request that forgets partitions, from its forgotten topics on.
    let forgotten: Vec<&str> = sent
        .iter()
        .filter_map(|r| r.find("forgotten_topics_data: Some([ForgottenTopic").map(|at| &r[at..]))
        .collect();
    let named = format!("topic_id: Some({short_id:?})");
    assert!(
        forgotten.iter().any(|f| f.contains(&named)),
        "no Fetch forgot {short} by its id: {forgotten:#?}"
    );
    for f in forgotten {
        assert!(!f.contains("topic_id: None") && !f.contains("AAAAAAAAAAAAAAAAAAAAAA"), "{f}");
    }
}
