//! The library client's produce and fetch against the real cluster: round trips through every
//! codec, the Java partitioner, exact ranges, acks=0, and transactions written by the Java
//! producer.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use kafka_client::{
    partition_for_key, Acks, Client, ClientConfig, ClientError, FetchOptions, FetchRange, FetchedPartition,
    Isolation, LogRange, NewTopic, ProduceOptions, ProduceRecord, TopicPartition,
};
use kafka_wire::protocol::records::{Compression, Header};

use crate::support::runtime;
use crate::support::{self, java};

const TIMEOUT: Duration = Duration::from_secs(60);

async fn client(cluster: &support::Cluster) -> Client {
    Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap()
}

async fn new_topic(client: &Client, prefix: &str, partitions: i32) -> String {
    let name = support::unique(prefix);
    let created = client.create_topics(&[NewTopic::new(&name, partitions, 3)], TIMEOUT).await;
    created[&name].as_ref().unwrap_or_else(|e| panic!("create {name}: {e}"));
    name
}

async fn fetch_one(
    client: &Client,
    tp: &TopicPartition,
    from: i64,
    until: i64,
    options: &FetchOptions,
) -> FetchedPartition {
    let mut out = client.fetch_range(&[FetchRange::new(tp.clone(), from, until)], options).await;
    out.remove(tp).unwrap().unwrap_or_else(|e| panic!("fetch {tp} [{from}, {until}): {e}"))
}

fn text(s: impl Into<String>) -> Bytes {
    Bytes::from(s.into())
}

/// Records that exercise every field: null and empty keys, a tombstone, headers with null
/// values, explicit timestamps out of order, and a value large enough for codecs to matter.
fn varied_records(tag: &str) -> Vec<ProduceRecord> {
    let big = "kwire ".repeat(4_000);
    vec![
        ProduceRecord {
            key: Some(text(format!("{tag}-k0"))),
            value: Some(text(format!("{tag}-v0"))),
            headers: vec![
                Header { key: "trace".to_owned(), value: Some(text("abc")) },
                Header { key: "empty".to_owned(), value: None },
            ],
            timestamp: Some(1_700_000_000_000),
        },
        ProduceRecord { timestamp: Some(1_699_999_999_000), ..ProduceRecord::new(None, Some(text(big))) },
        ProduceRecord { timestamp: Some(1_700_000_000_500), ..ProduceRecord::new(Some(Bytes::new()), None) },
        ProduceRecord {
            headers: vec![Header { key: "h".to_owned(), value: Some(Bytes::from_static(&[0, 255, 7])) }],
            timestamp: Some(1_700_000_001_000),
            ..ProduceRecord::new(
                Some(text(format!("{tag}-k3"))),
                Some(Bytes::from_static(&[0xde, 0xad, 0xbe, 0xef])),
            )
        },
    ]
}

#[test]
fn every_compression_codec_round_trips_keys_values_headers_and_timestamps() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let client = client(&cluster).await;
        let topic = new_topic(&client, "codecs", Compression::ALL.len() as i32).await;
        for (partition, codec) in Compression::ALL.into_iter().enumerate() {
            let tp = TopicPartition::new(topic.as_str(), partition as i32);
            let sent = varied_records(codec.name());
            let options = ProduceOptions { compression: codec, ..ProduceOptions::default() };
            let produced = client
                .produce(&topic, tp.partition, sent.clone(), &options)
                .await
                .unwrap_or_else(|e| panic!("{codec}: {e}"));
            let base = produced.base_offset.expect("acks=all gives an offset");
            let got = fetch_one(&client, &tp, base, base + sent.len() as i64, &FetchOptions::default()).await;
            assert_eq!(got.records.len(), sent.len(), "{codec}");
            for (i, (s, r)) in sent.iter().zip(&got.records).enumerate() {
                assert_eq!(r.offset, base + i as i64, "{codec} record {i}");
                assert_eq!(r.key, s.key, "{codec} record {i} key");
                assert_eq!(r.value, s.value, "{codec} record {i} value");
                assert_eq!(r.headers, s.headers, "{codec} record {i} headers");
                assert_eq!(r.timestamp, s.timestamp, "{codec} record {i} timestamp");
            }
            assert_eq!(got.next_offset, base + sent.len() as i64);
            assert_eq!(got.high_watermark, base + sent.len() as i64);
        }
    });
}

#[test]
fn keyed_records_land_where_the_java_producer_puts_the_same_keys() {
    let Some(cluster) = support::cluster() else { return };
    let keys: Vec<String> = ["kafka", "abc", "", "hello world"]
        .into_iter()
        .map(str::to_owned)
        .chain((0..40).map(|i| format!("key-{i}")))
        .collect();
    let rt = runtime();
    let (client, java_topic, kwire_topic) = rt.block_on(async {
        let client = client(&cluster).await;
        let java_topic = new_topic(&client, "keyed-java", 12).await;
        let kwire_topic = new_topic(&client, "keyed-kwire", 12).await;
        (client, java_topic, kwire_topic)
    });
    let mut args = vec![cluster.bootstrap.clone(), java_topic.clone()];
    args.extend(keys.iter().cloned());
    let java: BTreeMap<String, i32> = java::run("KeyedProduce.java", &args)
        .lines()
        .filter_map(|l| {
            let (key, partition) = l.rsplit_once(' ')?;
            Some((key.to_owned(), partition.parse().ok()?))
        })
        .collect();
    assert_eq!(java.len(), keys.len(), "Java printed a partition per key: {java:?}");
    rt.block_on(async {
        let records =
            keys.iter().map(|k| ProduceRecord::new(Some(text(k.clone())), Some(text(k.clone())))).collect();
        let produced =
            client.produce_by_key(&kwire_topic, records, &ProduceOptions::default()).await.unwrap();
        for (key, partition) in keys.iter().zip(&produced.partitions) {
            assert_eq!(Some(partition), java.get(key), "key {key:?}");
            assert_eq!(partition_for_key(key.as_bytes(), 12), Some(*partition));
        }
        // Vectors printed by Java's Utils.murmur2 (see the partitioner's unit tests).
        assert_eq!(java["kafka"], 4);
        assert_eq!(java[""], 9);
        assert_eq!(java["key-3"], 11);
        // And the records are really there: each partition's records are the keys sent to it.
        for (tp, result) in &produced.results {
            let base = result.as_ref().unwrap().base_offset.unwrap();
            let expected: Vec<&String> = keys
                .iter()
                .zip(&produced.partitions)
                .filter(|(_, p)| **p == tp.partition)
                .map(|(k, _)| k)
                .collect();
            let got =
                fetch_one(&client, tp, base, base + expected.len() as i64, &FetchOptions::default()).await;
            let got_keys: Vec<String> = got
                .records
                .iter()
                .map(|r| String::from_utf8_lossy(r.key.as_deref().unwrap()).into_owned())
                .collect();
            assert_eq!(got_keys, expected.into_iter().cloned().collect::<Vec<_>>(), "{tp}");
        }
    });
}

#[test]
fn an_exact_range_returns_exactly_its_offsets_when_the_log_has_more() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let client = client(&cluster).await;
        let topic = new_topic(&client, "ranges", 2).await;
        // Five batches of ten per partition, so ranges start and end inside batches.
        for partition in 0..2 {
            for batch in 0..5 {
                let records = (0..10)
                    .map(|i| ProduceRecord::new(None, Some(text(format!("p{partition}-{}", batch * 10 + i)))))
                    .collect();
                client.produce(&topic, partition, records, &ProduceOptions::default()).await.unwrap();
            }
        }
        let p0 = TopicPartition::new(topic.as_str(), 0);
        let p1 = TopicPartition::new(topic.as_str(), 1);
        // Tiny per-partition limits force one batch per round: several rounds.
        let options = FetchOptions { partition_max_bytes: 1, ..FetchOptions::default() };
        let got = client
            .fetch_range(&[FetchRange::new(p0.clone(), 13, 37), FetchRange::new(p1.clone(), 0, 1)], &options)
            .await;
        let r0 = got[&p0].as_ref().unwrap();
        let offsets: Vec<i64> = r0.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, (13..37).collect::<Vec<_>>());
        let values: Vec<&[u8]> = r0.records.iter().map(|r| r.value.as_deref().unwrap()).collect();
        assert_eq!(values.first(), Some(&&b"p0-13"[..]));
        assert_eq!(values.last(), Some(&&b"p0-36"[..]));
        assert_eq!((r0.next_offset, r0.high_watermark, r0.log_start), (37, 50, Some(0)));
        let r1 = got[&p1].as_ref().unwrap();
        assert_eq!(r1.records.iter().map(|r| r.offset).collect::<Vec<_>>(), vec![0]);
        // A range reaching past the end stops at the high watermark.
        let tail = fetch_one(&client, &p1, 45, 1_000, &FetchOptions::default()).await;
        assert_eq!(tail.records.iter().map(|r| r.offset).collect::<Vec<_>>(), (45..50).collect::<Vec<_>>());
        assert_eq!(tail.next_offset, 50);
        // An empty range sends nothing and returns nothing.
        assert!(fetch_one(&client, &p1, 7, 7, &FetchOptions::default()).await.records.is_empty());
    });
}

/// `log_ranges` asks three ListOffsets per leader (earliest, latest, latest under
/// read_committed): one query per request, answered at different moments. While records are
/// written between the answers, each range is still `log_start <= last_stable <=
/// high_watermark` and no end goes back. (A high watermark answered before a write and a last
/// stable offset answered after it made `kwire plan` skip the partition as an inconsistent log
/// view, and the Spark batch loop then committed a round without it.)
#[test]
fn log_ranges_read_while_records_are_written_are_ordered_and_never_go_back() {
    // At least this many reads, and on until the writer has written WRITES rounds meanwhile
    // (its first write to the new topic can take a while on a loaded machine), for at most
    // READING_AT_MOST.
    const ROUNDS: usize = 300;
    const WRITES: usize = 10;
    const READING_AT_MOST: Duration = Duration::from_secs(60);
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let client = client(&cluster).await;
        // The writer has connections of its own, as another application's producer would: its
        // writes land between the reader's requests to the same leader.
        let writer = self::client(&cluster).await;
        let topic = new_topic(&client, "moving-ranges", 6).await;
        let tps: Vec<TopicPartition> = (0..6).map(|p| TopicPartition::new(topic.as_str(), p)).collect();
        let reading = AtomicBool::new(true);
        let written = AtomicUsize::new(0);
        let write = async {
            while reading.load(Ordering::Relaxed) {
                let batches = tps
                    .iter()
                    .map(|tp| (tp.clone(), vec![ProduceRecord::new(None, Some(text("v")))]))
                    .collect();
                for (tp, result) in writer.produce_batches(batches, &ProduceOptions::default()).await {
                    result.unwrap_or_else(|e| panic!("produce to {tp}: {e}"));
                }
                written.fetch_add(1, Ordering::Relaxed);
            }
        };
        let read = async {
            let mut last: BTreeMap<TopicPartition, LogRange> = BTreeMap::new();
            let started = std::time::Instant::now();
            for round in 0.. {
                let enough = round >= ROUNDS && written.load(Ordering::Relaxed) > WRITES;
                if enough || started.elapsed() > READING_AT_MOST {
                    break;
                }
                let ranges = client.log_ranges(&tps, TIMEOUT).await;
                for tp in &tps {
                    let range = *ranges[tp].as_ref().unwrap_or_else(|e| panic!("{tp}: {e}"));
                    assert!(
                        0 <= range.log_start
                            && range.log_start <= range.last_stable
                            && range.last_stable <= range.high_watermark,
                        "round {round}: {tp}: {range:?}"
                    );
                    if let Some(before) = last.get(tp) {
                        assert!(
                            range.high_watermark >= before.high_watermark
                                && range.last_stable >= before.last_stable,
                            "round {round}: {tp} went back: {before:?} -> {range:?}"
                        );
                    }
                    last.insert(tp.clone(), range);
                }
            }
            reading.store(false, Ordering::Relaxed);
            last
        };
        let ((), last) = tokio::join!(write, read);
        // The ranges were read while the log moved: every partition got records meanwhile.
        let writes = written.load(Ordering::Relaxed);
        assert!(writes > WRITES, "only {writes} rounds of writes while reading for {READING_AT_MOST:?}");
        for (tp, range) in &last {
            assert!(range.high_watermark > 0, "{tp}: {range:?}");
        }
    });
}

#[test]
fn records_sent_with_acks_zero_arrive_and_the_connection_stays_usable() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let client = client(&cluster).await;
        let topic = new_topic(&client, "acks0", 1).await;
        let tp = TopicPartition::new(topic.as_str(), 0);
        let fire = ProduceOptions { acks: Acks::NoResponse, ..ProduceOptions::default() };
        for i in 0..3 {
            let produced = client
                .produce(&topic, 0, vec![ProduceRecord::new(None, Some(text(format!("fire-{i}"))))], &fire)
                .await;
            assert_eq!(produced.unwrap().base_offset, None);
        }
        // Then acks=all on the same connection: its response must be matched to its own request.
        // (acks=all, not 1: the fetch below reads up to the high watermark, which an acks=1
        // answer may precede on a busy cluster.)
        let all = ProduceOptions { acks: Acks::All, ..ProduceOptions::default() };
        let produced =
            client.produce(&topic, 0, vec![ProduceRecord::new(None, Some(text("acked")))], &all).await;
        assert_eq!(produced.unwrap().base_offset, Some(3));
        let got = fetch_one(&client, &tp, 0, 4, &FetchOptions::default()).await;
        let values: Vec<&[u8]> = got.records.iter().map(|r| r.value.as_deref().unwrap()).collect();
        assert_eq!(values, vec![&b"fire-0"[..], b"fire-1", b"fire-2", b"acked"]);
    });
}

#[test]
fn fetching_from_below_the_log_start_names_the_offset_and_the_log_range() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let client = client(&cluster).await;
        let topic = new_topic(&client, "below-start", 1).await;
        let tp = TopicPartition::new(topic.as_str(), 0);
        let records = (0..10).map(|i| ProduceRecord::new(None, Some(text(format!("{i}"))))).collect();
        client.produce(&topic, 0, records, &ProduceOptions::default()).await.unwrap();
        let deleted = client.delete_records(&[(tp.clone(), 6)], TIMEOUT).await;
        assert_eq!(deleted[&tp].as_ref().unwrap(), &6);
        let got = client.fetch_range(&[FetchRange::new(tp.clone(), 2, 8)], &FetchOptions::default()).await;
        let err = got[&tp].as_ref().unwrap_err();
        let ClientError::OffsetOutOfRange { offset, requested, log_start, high_watermark, .. } = err else {
            panic!("{err}")
        };
        assert_eq!((*offset, *requested, *log_start, *high_watermark), (2, (2, 8), Some(6), Some(10)));
        let text = err.to_string();
        assert!(text.contains("offset 2") && text.contains("[2, 8)") && text.contains("[6, 10)"), "{text}");
        // From the new log start on, the same partition reads fine.
        let rest = fetch_one(&client, &tp, 6, 10, &FetchOptions::default()).await;
        assert_eq!(rest.records.len(), 4);
        assert_eq!(rest.log_start, Some(6));
    });
}

#[test]
fn a_transaction_aborted_by_the_java_producer_is_invisible_to_read_committed() {
    // Transactions on the 4.1 cluster: transaction.version must stay as scripts/cluster left it.
    let _feature = support::transaction_version::shared();
    let Some(cluster) = support::cluster() else { return };
    let rt = runtime();
    let (client, topic) = rt.block_on(async {
        let client = client(&cluster).await;
        let topic = new_topic(&client, "txn", 1).await;
        (client, topic)
    });
    let tp = TopicPartition::new(topic.as_str(), 0);
    let (aborted, committed, open) = (5, 3, 2);
    // Java: 5 aborted, 3 committed, then 2 in a transaction it keeps open until stdin closes.
    let mut java = java::command(
        "AbortedTxn.java",
        &[&cluster.bootstrap, &topic, "0", &aborted.to_string(), &committed.to_string(), &open.to_string()],
    )
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("java runs");
    let mut lines = BufReader::new(java.stdout.take().unwrap()).lines();
    let mut written: Vec<(String, i64, String)> = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if line == "ready" {
            break;
        }
        let mut parts = line.split(' ');
        if let (Some(kind), Some(offset), Some(value)) = (parts.next(), parts.next(), parts.next()) {
            written.push((kind.to_owned(), offset.parse().unwrap(), value.to_owned()));
        }
    }
    assert_eq!(written.len(), aborted + committed + open, "Java wrote every record: {written:?}");
    let offsets_of = |kind: &str| -> Vec<i64> {
        written.iter().filter(|(k, _, _)| k == kind).map(|(_, o, _)| *o).collect()
    };
    let first_open = offsets_of("open")[0];
    let end = written.iter().map(|(_, o, _)| *o).max().unwrap() + 1;
    rt.block_on(async {
        // While the last transaction is open, the last stable offset is its first offset.
        let committed_view = FetchOptions { isolation: Isolation::ReadCommitted, ..FetchOptions::default() };
        let got = fetch_one(&client, &tp, 0, end, &committed_view).await;
        let values: Vec<String> = got
            .records
            .iter()
            .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap()).into_owned())
            .collect();
        assert_eq!(values, vec!["committed-0", "committed-1", "committed-2"]);
        assert_eq!(got.records.iter().map(|r| r.offset).collect::<Vec<_>>(), offsets_of("committed"));
        assert_eq!(got.last_stable, Some(first_open));
        assert_eq!(got.high_watermark, end);
        assert_eq!(got.next_offset, first_open, "read_committed stops at the last stable offset");
        let ranges = client.log_ranges(std::slice::from_ref(&tp), TIMEOUT).await;
        assert_eq!(ranges[&tp].as_ref().unwrap().last_stable, first_open);

        // read_uncommitted sees every data record, aborted and open ones too, never a marker.
        let all = fetch_one(&client, &tp, 0, end, &FetchOptions::default()).await;
        let mut expected: Vec<i64> = written.iter().map(|(_, o, _)| *o).collect();
        expected.sort_unstable();
        assert_eq!(all.records.iter().map(|r| r.offset).collect::<Vec<_>>(), expected);
    });
    drop(java.stdin.take());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(java.wait().unwrap().success());
    assert_eq!(rest.last().map(String::as_str), Some("done"));
    rt.block_on(async {
        // Once the open transaction is aborted too, the committed three are still all there is,
        // and the last stable offset caught up with the high watermark.
        let committed_view = FetchOptions { isolation: Isolation::ReadCommitted, ..FetchOptions::default() };
        let ranges = client.log_ranges(std::slice::from_ref(&tp), TIMEOUT).await;
        let range = *ranges[&tp].as_ref().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(range.last_stable, range.high_watermark);
        let got = fetch_one(&client, &tp, 0, range.high_watermark, &committed_view).await;
        assert_eq!(got.records.iter().map(|r| r.offset).collect::<Vec<_>>(), offsets_of("committed"));
        assert_eq!(got.next_offset, range.high_watermark);
    });
}
