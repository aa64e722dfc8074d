//! The batching, idempotent [`Producer`] against the real cluster: what it writes is what
//! Kafka's own consumer and kcat read, with every codec; connections cut after a Produce
//! request reached the broker neither duplicate nor reorder records when it is idempotent (and
//! do duplicate them when it is not); and a full buffer makes `send` wait instead of growing.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_client::{
    partition_for_key, Client, ClientConfig, ClientError, Deliveries, ProduceRecord, Producer, ProducerConfig,
};
use kafka_wire::protocol::records::Compression;
use kafka_wire::protocol::ApiKey;

use crate::support;
use crate::support::produced::{assert_once_in_key_order, duplicates, keyed, read_back, send_each, ReadBack};
use crate::support::proxy::{Fault, Proxy};
use crate::support::traffic::{Detail, Traffic};

/// Records of the idempotent run through cut connections (the 200,000).
const IDEMPOTENT_RECORDS: usize = 200_000;
/// Records of the run without idempotence: enough for cuts to land after appends.
const PLAIN_RECORDS: usize = 50_000;
/// `buffer_memory` of the back-pressure test.
const BUFFER_LIMIT: usize = 8 * 1024 * 1024;

#[test]
fn records_from_every_codec_are_read_back_by_the_java_consumer_and_kcat() {
    let Some(cluster) = support::cluster() else { return };
    support::multi_thread_runtime().block_on(async {
        let client = Arc::new(Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap());
        let topic = support::new_topic_with_leaders(&client, "producer-codecs", 3).await;
        let codecs =
            [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd];
        let mut expected = Vec::new();
        for codec in codecs {
            let config = ProducerConfig { compression: codec, ..ProducerConfig::default() };
            let producer = Producer::new(Arc::clone(&client), config).unwrap();
            let mut deliveries = Vec::new();
            for i in 0..200 {
                let value = format!("{}-{i}", codec.name());
                expected.push(value.clone());
                let record = ProduceRecord::new(Some(Bytes::from(format!("k{i}"))), Some(Bytes::from(value)));
                deliveries.push(producer.send(&topic, record).await.unwrap());
            }
            producer.close().await;
            for d in deliveries {
                let written = d.wait().await.unwrap();
                assert!(written.offset.is_some(), "{codec:?}: {written:?}");
            }
        }
        expected.sort();

        let out = support::kafka_tool(
            "org.apache.kafka.tools.consumer.ConsoleConsumer",
            &[
                "--bootstrap-server",
                &cluster.bootstrap,
                "--topic",
                &topic,
                "--from-beginning",
                "--max-messages",
                &expected.len().to_string(),
                "--timeout-ms",
                "30000",
                "--isolation-level",
                "read_committed",
            ],
        );
        let mut java: Vec<String> = support::stdout(&out).lines().map(str::to_owned).collect();
        java.sort();
        assert_eq!(java, expected, "the Java consumer's reading");

        match Command::new("kcat")
            .args(["-b", &cluster.bootstrap, "-C", "-t", &topic, "-e", "-q", "-f", "%s\n"])
            .output()
        {
            Ok(out) => {
                assert!(out.status.success(), "kcat failed: {}", support::stderr(&out));
                let mut kcat: Vec<String> = support::stdout(&out).lines().map(str::to_owned).collect();
                kcat.sort();
                assert_eq!(kcat, expected, "kcat's reading");
            }
            Err(e) => assert!(std::env::var("CI").is_err(), "kcat is required in CI: {e}"),
        }
    });
}

/// `send_all` (what `kwire produce` uses): keyed records land on their key's partition and
/// null-key ones stick to one, each record's offset is where it was read back, in send order;
/// a record larger than `max_request_size` in the middle of a run fails it there, the records
/// before it written and the ones after it left in the caller's iterator.
#[test]
fn send_all_writes_runs_of_records_in_order_and_stops_at_a_record_that_cannot_go() {
    const RECORDS: usize = 2_000;
    let Some(cluster) = support::cluster() else { return };
    support::multi_thread_runtime().block_on(async {
        let client = Arc::new(Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap());
        let topic = support::new_topic_with_leaders(&client, "producer-send-all", 3).await;
        let producer = Producer::new(Arc::clone(&client), ProducerConfig::default()).unwrap();
        let mut deliveries = Deliveries::default();
        let records: Vec<ProduceRecord> = (0..RECORDS)
            .map(|i| {
                if i % 3 == 0 {
                    ProduceRecord::new(None, Some(Bytes::from(format!("{i}"))))
                } else {
                    keyed(i)
                }
            })
            .collect();
        for run in records.chunks(300) {
            producer.send_all(&topic, run.iter().cloned(), &mut deliveries).await.unwrap();
        }
        assert_eq!(deliveries.len(), RECORDS);
        producer.flush().await;
        let written = deliveries.try_metadata().expect("every batch is done after flush").unwrap();
        let read = read_back(&client, &topic, 3).await;
        for (i, (record, meta)) in records.iter().zip(&written).enumerate() {
            if let Some(key) = &record.key {
                assert_eq!(meta.partition.partition, partition_for_key(key, 3).unwrap(), "record {i}");
            }
            let offset = usize::try_from(meta.offset.unwrap()).unwrap();
            let (_, value) = &read[&meta.partition.partition][offset];
            assert_eq!(value, &format!("{i}"), "record {i} at {}@{offset}", meta.partition);
        }
        assert_eq!(read.values().map(Vec::len).sum::<usize>(), RECORDS);

        let huge = ProduceRecord::new(None, Some(Bytes::from(vec![b'x'; 2 << 20])));
        let mut run = (0..5).map(keyed).chain([huge]).chain((5..9).map(keyed));
        let mut partial = Deliveries::default();
        let err = producer.send_all(&topic, run.by_ref(), &mut partial).await.unwrap_err();
        assert!(err.to_string().contains("max_request_size"), "{err}");
        assert_eq!(partial.len(), 5, "the records before the large one were sent");
        assert_eq!(run.count(), 4, "the records after it were left to the caller");
        partial.wait().await.unwrap();
        producer.close().await;
    });
}

/// A proxy in front of every broker, and a client whose connections all go through them.
/// Null-key records move on to the next partition each time a batch fills (the sticky
/// partitioner): 1,200 values of 1,000 bytes in 16 KiB batches (~75 batches) over 6 partitions
/// give each partition about 200. kwire once stayed on partition 0 after the first round —
/// 1,000,000 records of `kwire produce` put 995,100 there, one broker doing all the writing.
/// And a record moves on exactly when its partition's batch cannot take it: the record that
/// did not fit once started a batch of its own on the old partition, which lingered out alone
/// under load (a third of `kwire produce`'s 1 KB batches held one record).
#[test]
fn null_key_records_are_spread_over_every_partition_batch_by_batch() {
    const RECORDS: usize = 1_200;
    let Some(cluster) = support::cluster() else { return };
    support::multi_thread_runtime().block_on(async {
        let client = Arc::new(Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap());
        let topic = support::new_topic_with_leaders(&client, "producer-sticky", 6).await;
        // Batches go when full (or at the flush), not by linger: every batch boundary is the
        // partitioner's.
        let config = ProducerConfig {
            batch_size: 16 * 1024,
            linger: Duration::from_secs(60),
            ..ProducerConfig::default()
        };
        let producer = Producer::new(Arc::clone(&client), config).unwrap();
        let value = Bytes::from(vec![b'v'; 1_000]);
        let mut deliveries = Vec::with_capacity(RECORDS);
        for _ in 0..RECORDS {
            deliveries
                .push(producer.send(&topic, ProduceRecord::new(None, Some(value.clone()))).await.unwrap());
        }
        for (i, pair) in deliveries.windows(2).enumerate() {
            let stays = pair[0].partition() == pair[1].partition();
            let joined = pair[0].same_batch(&pair[1]);
            assert_eq!(
                stays,
                joined,
                "records {i} and {}: same partition {stays}, same batch {joined}",
                i + 1
            );
        }
        producer.flush().await;
        for d in deliveries {
            d.wait().await.unwrap();
        }
        producer.close().await;
        let per_partition: Vec<usize> = read_back(&client, &topic, 6).await.values().map(Vec::len).collect();
        assert_eq!(per_partition.iter().sum::<usize>(), RECORDS);
        assert!(
            per_partition.iter().all(|n| (100..=300).contains(n)),
            "records per partition {per_partition:?}: expected about {} each",
            RECORDS / 6
        );
    });
}

async fn client_through_proxies(cluster: &support::Cluster) -> (Arc<Client>, Vec<Proxy>) {
    let direct = Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap();
    let metadata = direct.refresh_metadata(&[]).await.unwrap();
    let mut config = ClientConfig::new(&cluster.bootstrap).unwrap();
    config.request_timeout = Duration::from_secs(10);
    let mut proxies = Vec::new();
    for broker in &metadata.brokers {
        let proxy = Proxy::start(&broker.addr());
        config.address_map.insert(broker.addr(), proxy.addr().to_owned());
        proxies.push(proxy);
    }
    (Arc::new(Client::connect(config).await.unwrap()), proxies)
}

/// Sets the flag when dropped, so the cutting thread stops even when the test panics.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Cuts one response in every [`CUT_EVERY`] of each proxy (mostly Produce responses while
/// records flow, each after the broker appended the batch), until `stop`.
fn keep_cutting(proxies: &[Proxy], stop: &AtomicBool) {
    let mut armed_at: Vec<usize> = proxies.iter().map(Proxy::frames).collect();
    while !stop.load(Ordering::SeqCst) {
        for (p, at) in proxies.iter().zip(&mut armed_at) {
            if p.frames() >= *at + CUT_EVERY {
                p.once(Fault::Cut);
                *at = p.frames();
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// One response in this many is cut.
const CUT_EVERY: usize = 25;

/// Produces `count` keyed records with connections cut after requests reached the broker;
/// returns what was read back and how many connections the proxies saw.
fn produce_through_cuts(
    cluster: &support::Cluster,
    idempotence: bool,
    count: usize,
) -> (ReadBack, Vec<Result<(), ClientError>>, usize) {
    let rt = support::multi_thread_runtime();
    let (client, proxies) = rt.block_on(client_through_proxies(cluster));
    let direct = rt.block_on(Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap())).unwrap();
    let topic = rt.block_on(support::new_topic_with_leaders(&direct, "producer-cuts", 3));
    let stop = AtomicBool::new(false);
    let (results, read) = std::thread::scope(|s| {
        s.spawn(|| keep_cutting(&proxies, &stop));
        let stopper = StopOnDrop(&stop);
        let results = rt.block_on(async {
            let config =
                ProducerConfig { idempotence, linger: Duration::from_millis(2), ..ProducerConfig::default() };
            let producer = Producer::new(Arc::clone(&client), config).unwrap();
            let results = send_each(&producer, &topic, 0..count).await;
            producer.close().await;
            results
        });
        drop(stopper);
        let read = rt.block_on(read_back(&direct, &topic, 3));
        (results, read)
    });
    let connections = proxies.iter().map(Proxy::connections).sum();
    (read, results, connections)
}

#[test]
fn connections_cut_after_produce_requests_leave_every_record_once_and_in_order_when_idempotent() {
    let Some(cluster) = support::cluster() else { return };
    let (read, results, connections) = produce_through_cuts(&cluster, true, IDEMPOTENT_RECORDS);
    assert!(connections > 10, "the proxies cut only {connections} connections");
    let failed: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).take(3).collect();
    assert!(failed.is_empty(), "records failed: {failed:?}");
    assert_once_in_key_order(&read, IDEMPOTENT_RECORDS);
}

#[test]
fn without_idempotence_the_same_cuts_append_records_twice() {
    let Some(cluster) = support::cluster() else { return };
    let (read, results, _) = produce_through_cuts(&cluster, false, PLAIN_RECORDS);
    assert!(results.iter().all(Result::is_ok));
    let total: usize = read.values().map(Vec::len).sum();
    assert!(duplicates(&read) > 0 && total > PLAIN_RECORDS, "no duplicates among {total} records");
}

#[test]
fn a_full_buffer_makes_send_wait_while_no_broker_answers_and_memory_stays_under_the_limit() {
    let Some(cluster) = support::cluster() else { return };
    support::multi_thread_runtime().block_on(async {
        let (client, proxies) = client_through_proxies(&cluster).await;
        let topic = support::new_topic_with_leaders(&client, "producer-full", 3).await;
        let config = ProducerConfig {
            buffer_memory: BUFFER_LIMIT,
            delivery_timeout: Duration::from_secs(20),
            ..ProducerConfig::default()
        };
        let producer = Producer::new(Arc::clone(&client), config).unwrap();
        // One record through: the producer id and metadata are in hand.
        producer.send(&topic, keyed(0)).await.unwrap().wait().await.unwrap();
        for p in &proxies {
            p.set(Fault::Delay(Duration::from_secs(3600)));
        }
        let value = Bytes::from(vec![b'x'; 1024]);
        let mut sent = 0usize;
        let mut deliveries = Vec::new();
        let blocked = loop {
            let record = ProduceRecord::new(None, Some(value.clone()));
            match tokio::time::timeout(Duration::from_secs(2), producer.send(&topic, record)).await {
                Ok(d) => {
                    deliveries.push(d.unwrap());
                    sent += 1;
                    assert!(
                        producer.buffered_bytes() <= BUFFER_LIMIT,
                        "{} bytes held",
                        producer.buffered_bytes()
                    );
                }
                Err(_) => break true,
            }
            if sent > 20_000 {
                break false;
            }
        };
        assert!(blocked, "send never waited after {sent} records of 1 KiB");
        assert!(sent * 1024 > BUFFER_LIMIT * 3 / 4, "send waited after only {sent} records");
        assert!(producer.buffered_bytes() <= BUFFER_LIMIT);
        drop(proxies); // no broker at all now: records fail at their delivery timeout
        let last = deliveries.pop().unwrap().wait().await.unwrap_err();
        assert!(matches!(last, ClientError::DeadlineExceeded { .. }), "{last}");
        producer.flush().await;
        assert_eq!(producer.buffered_bytes(), 0, "failed records give their memory back");
    });
}

#[test]
fn produce_requests_carry_batches_while_they_fit_max_request_size_and_a_larger_record_fails_at_once() {
    const MAX_REQUEST: usize = 40 * 1024;
    const RECORDS: usize = 3_000;
    let Some(cluster) = support::cluster() else { return };
    support::multi_thread_runtime().block_on(async {
        let mut config = ClientConfig::new(&cluster.bootstrap).unwrap();
        let traffic = Traffic::record(&mut config, ApiKey::PRODUCE, Detail::Sizes);
        let client = Arc::new(Client::connect(config).await.unwrap());
        // Four partitions per broker, batches of 16 KiB lingering long enough to pile up: one
        // request per broker would hold about 64 KiB of them.
        let topic = support::new_topic_with_leaders(&client, "producer-request-size", 12).await;
        let config = ProducerConfig {
            batch_size: 16 * 1024,
            linger: Duration::from_millis(50),
            max_request_size: MAX_REQUEST,
            ..ProducerConfig::default()
        };
        let producer = Producer::new(Arc::clone(&client), config).unwrap();

        let too_large = ProduceRecord::new(None, Some(Bytes::from(vec![b'x'; MAX_REQUEST])));
        let e = producer.send(&topic, too_large).await.unwrap_err();
        assert!(e.to_string().contains("larger than max_request_size (40960 bytes)"), "{e}");

        let value = "v".repeat(1000);
        let mut deliveries = Vec::with_capacity(RECORDS);
        for i in 0..RECORDS {
            let record = ProduceRecord::new(
                Some(Bytes::from(format!("k{i}"))),
                Some(Bytes::from(format!("{i:05}{value}"))),
            );
            deliveries.push(producer.send(&topic, record).await.unwrap());
        }
        producer.flush().await;
        for d in deliveries {
            d.wait().await.unwrap();
        }
        let read = read_back(&client, &topic, 12).await;
        assert_eq!(read.values().map(Vec::len).sum::<usize>(), RECORDS);
        assert_eq!(duplicates(&read), 0);

        let frames: Vec<usize> = traffic.requests().iter().map(|f| f.len).collect();
        // A frame is its batches plus the request's own header and names (well under 1 KiB).
        let largest = frames.iter().copied().max().unwrap();
        assert!(largest <= MAX_REQUEST + 1024, "a {largest}-byte Produce request");
        assert!(frames.iter().any(|f| *f > 17 * 1024), "no request held more than one batch: {frames:?}");
    });
}
