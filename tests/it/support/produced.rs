//! Records written by a test's producer and read back: keyed records whose values count the
//! sends, the read-back per partition, and the checks of "each once, in order per key".

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use kafka_client::{
    Client, ClientError, FetchOptions, FetchRange, ProduceRecord, Producer, ProducerConfig, TopicPartition,
};

/// Per partition, (key, value) text in offset order.
pub type ReadBack = BTreeMap<i32, Vec<(String, String)>>;

/// Every record of `topic`, per partition in offset order, as (key, value) text.
pub async fn read_back(
    client: &Client,
    topic: &str,
    partitions: i32,
) -> BTreeMap<i32, Vec<(String, String)>> {
    let mut out = BTreeMap::new();
    for p in 0..partitions {
        let tp = TopicPartition::new(topic, p);
        let mut records = Vec::new();
        let mut from = 0;
        loop {
            let got = client
                .fetch_range(&[FetchRange::new(tp.clone(), from, i64::MAX)], &FetchOptions::default())
                .await;
            let part = got[&tp].as_ref().unwrap();
            for r in &part.records {
                let text = |b: &Option<Bytes>| {
                    String::from_utf8_lossy(b.as_deref().unwrap_or_default()).into_owned()
                };
                records.push((text(&r.key), text(&r.value)));
            }
            if part.next_offset >= part.high_watermark || part.records.is_empty() {
                break;
            }
            from = part.next_offset;
        }
        out.insert(p, records);
    }
    out
}

pub fn keyed(i: usize) -> ProduceRecord {
    ProduceRecord::new(Some(Bytes::from(format!("k{}", i % 97))), Some(Bytes::from(format!("{i}"))))
}

/// Sends the keyed records `values` (their values) one `send` at a time, flushes, and waits
/// for every result.
pub async fn send_each(
    producer: &Producer,
    topic: &str,
    values: std::ops::Range<usize>,
) -> Vec<Result<(), ClientError>> {
    let count = values.len();
    let mut deliveries = Vec::with_capacity(count);
    for i in values {
        deliveries.push(producer.send(topic, keyed(i)).await.unwrap_or_else(|e| panic!("send {i}: {e:?}")));
    }
    producer.flush().await;
    let mut results = Vec::with_capacity(count);
    for d in deliveries {
        results.push(d.wait().await.map(|_| ()));
    }
    results
}

/// Per partition, the values read back in order; how many values appear more than once.
pub fn duplicates(read: &BTreeMap<i32, Vec<(String, String)>>) -> usize {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for records in read.values() {
        for (_, v) in records {
            *seen.entry(v.as_str()).or_default() += 1;
        }
    }
    seen.values().filter(|n| **n > 1).count()
}

/// Asserts that `read` holds `count` records, no value twice, and each key's values in send
/// order within its partition.
pub fn assert_once_in_key_order(read: &ReadBack, count: usize) {
    let total: usize = read.values().map(Vec::len).sum();
    assert_eq!(duplicates(read), 0, "duplicated values");
    assert_eq!(total, count, "every record exactly once");
    // Per partition, each key's values in send order (values grow with the send index).
    for (p, records) in read {
        let mut last: HashMap<&str, usize> = HashMap::new();
        for (k, v) in records {
            let v: usize = v.parse().unwrap();
            if let Some(prev) = last.insert(k.as_str(), v) {
                assert!(prev < v, "partition {p}: key {k} has {v} after {prev}");
            }
        }
    }
}

/// Writes the records `values` to `topic`, each with its number as key and value, with a
/// producer of its own, and waits until they are flushed.
pub async fn produce_numbered(client: &std::sync::Arc<Client>, topic: &str, values: std::ops::Range<usize>) {
    let producer = Producer::new(std::sync::Arc::clone(client), ProducerConfig::default()).unwrap();
    for i in values {
        let text = Bytes::from(format!("{i}"));
        producer.send(topic, ProduceRecord::new(Some(text.clone()), Some(text))).await.unwrap();
    }
    producer.flush().await;
}
