//! The pipelined `Fetcher` against the real cluster: the next Fetch to a broker is on the wire
//! before the previous response's chunk is consumed, the byte limits are in every request and
//! hold for every response, and a leader moved in the middle of a read loses and doubles no
//! record.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_client::{Client, ClientConfig, FetchOptions, FetchRange, FetchedChunk, Fetcher, TopicPartition};
use kafka_wire::protocol::ApiKey;

use crate::support::leaders::{leader_and_replicas, move_leader};
use crate::support::traffic::{numbers_after, Detail, Traffic};
use crate::support::{self, create_topic, Cluster};

const TIMEOUT: Duration = Duration::from_secs(60);
/// Records per partition in the pipelining test.
const PER_PARTITION: i64 = 2_000;
/// Records in the leader-move test.
const RECORDS: i64 = 20_000;

/// A client whose Fetch frames are recorded, requests with their decoded text.
fn client_with_trace(runtime: &tokio::runtime::Runtime, cluster: &Cluster) -> (Arc<Client>, Traffic) {
    let mut config = ClientConfig::new(&cluster.bootstrap).unwrap();
    let traffic = Traffic::record(&mut config, ApiKey::FETCH, Detail::RequestText);
    let client = runtime.block_on(Client::connect(config)).unwrap();
    (Arc::new(client), traffic)
}

/// The leader's address of `tp` in the client's metadata.
fn leader_addr(client: &Client, tp: &TopicPartition) -> String {
    let m = client.cached_metadata().expect("metadata after a fetch");
    let leader = m.topic(&tp.topic).unwrap().partitions.iter().find(|p| p.partition == tp.partition).unwrap();
    m.broker(leader.leader.expect("a leader")).unwrap().addr()
}

/// Drains `fetcher`, checking every partition's offsets arrive in order, once each, and
/// handing each chunk to `each`; returns the number of records.
async fn drain_in_order(
    fetcher: &mut Fetcher,
    next: &mut BTreeMap<TopicPartition, i64>,
    mut each: impl FnMut(&FetchedChunk),
) -> usize {
    let mut records = 0;
    while let Some((tp, chunk)) = fetcher.next().await {
        let chunk = chunk.unwrap_or_else(|e| panic!("{tp}: {e}"));
        let at = next.entry(tp.clone()).or_insert(0);
        for r in &chunk.fetched.records {
            assert_eq!(r.offset, *at, "{tp}: a record lost or doubled");
            *at += 1;
        }
        records += chunk.fetched.records.len();
        each(&chunk);
    }
    records
}

/// The bytes of a chunk's record values.
fn value_bytes(chunk: &FetchedChunk) -> usize {
    chunk.fetched.records.iter().map(|r| r.value.as_ref().map_or(0, bytes::Bytes::len)).sum()
}

#[test]
fn a_pipelined_fetcher_sends_the_next_fetch_before_the_previous_chunk_is_consumed_within_the_byte_limits() {
    let Some(cluster) = support::cluster() else { return };
    let runtime = support::multi_thread_runtime();
    let (client, fetches) = client_with_trace(&runtime, &cluster);
    let topic = runtime.block_on(support::new_topic_with_leaders(&client, "fetcher-pipeline", 6));
    support::produce_with_kafka(&cluster, &topic, 6 * PER_PARTITION as u32, 100);

    let max_bytes = 40 * 1024;
    let partition_max_bytes = 32 * 1024;
    let options =
        FetchOptions { max_bytes, partition_max_bytes, timeout: TIMEOUT, ..FetchOptions::default() };
    let ranges: Vec<FetchRange> =
        (0..6).map(|p| FetchRange::new(TopicPartition::new(topic.as_str(), p), 0, PER_PARTITION)).collect();
    let mut fetcher = Fetcher::new(Arc::clone(&client), &ranges, options);

    runtime.block_on(async {
        let (tp, first) = fetcher.next().await.expect("a first chunk");
        let first = first.unwrap_or_else(|e| panic!("{tp}: {e}"));
        assert!(!first.complete, "{tp} complete after one response of at most {max_bytes} bytes");
        // The first chunk is not consumed (next() is not called): its broker's next Fetch must
        // still go out, with the position the first response reached.
        let broker = leader_addr(&client, &tp);
        let waited = Instant::now();
        while fetches.requests_to(&broker) < 2 {
            assert!(waited.elapsed() < TIMEOUT, "no second Fetch to {broker} while its first chunk was held");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Every leader was sent its first Fetch before that first chunk was handed out, so
        // they all go out while nothing is consumed.
        let leaders: std::collections::BTreeSet<String> =
            ranges.iter().map(|r| leader_addr(&client, &r.partition)).collect();
        assert!(leaders.len() > 1, "the partitions' leaders: {leaders:?}");
        for other in leaders {
            while fetches.requests_to(&other) < 1 {
                assert!(waited.elapsed() < TIMEOUT, "no Fetch to {other}: not every leader is read at once");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }

        let mut next = BTreeMap::from([(tp.clone(), 0)]);
        for r in &first.fetched.records {
            assert_eq!(r.offset, next[&tp]);
            *next.get_mut(&tp).unwrap() += 1;
        }
        let mut chunks_data = vec![value_bytes(&first)];
        // Drain the rest, measuring each chunk's record bytes.
        let records = first.fetched.records.len()
            + drain_in_order(&mut fetcher, &mut next, |chunk| chunks_data.push(value_bytes(chunk))).await;
        assert_eq!(records, 6 * PER_PARTITION as usize);
        assert!(next.values().all(|&n| n == PER_PARTITION), "{next:?}");
        let biggest = chunks_data.iter().copied().max().unwrap_or(0);
        assert!(
            biggest <= partition_max_bytes as usize,
            "a partition's chunk held {biggest} value bytes, above max.partition.fetch.bytes"
        );
    });

    let requests = fetches.requests();
    for r in &requests {
        assert_eq!(numbers_after(&r.text, "max_bytes").first(), Some(&i64::from(max_bytes)), "{}", r.text);
        let per_partition = numbers_after(&r.text, "partition_max_bytes");
        assert!(per_partition.iter().all(|&b| b == i64::from(partition_max_bytes)), "{}", r.text);
    }
    // A response's records stay within fetch.max.bytes (the frame adds headers and, per
    // partition, its bounds: well under 2 KiB here).
    let responses: Vec<usize> = fetches.responses().iter().map(|f| f.len).collect();
    let largest = responses.iter().copied().max().unwrap_or(0);
    assert!(largest <= max_bytes as usize + 2048, "a Fetch response of {largest} bytes");
    assert!(largest > max_bytes as usize / 2, "no response came near the limit: {responses:?}");
    eprintln!("{} Fetch requests, responses of {responses:?} bytes", requests.len());
}

#[test]
fn a_leader_moved_under_a_pipelined_fetcher_loses_and_doubles_no_record() {
    let Some(cluster) = support::cluster() else { return };
    let runtime = support::multi_thread_runtime();
    let (client, fetches) = client_with_trace(&runtime, &cluster);
    let topic = support::unique("fetcher-leader-move");
    create_topic(&cluster, &topic, 1, 3);
    support::produce_with_kafka(&cluster, &topic, RECORDS as u32, 100);
    let (leader, replicas) = leader_and_replicas(&cluster, &topic);

    let tp = TopicPartition::new(topic.as_str(), 0);
    let options = FetchOptions {
        max_bytes: 32 * 1024,
        partition_max_bytes: 32 * 1024,
        timeout: TIMEOUT,
        ..FetchOptions::default()
    };
    let mut fetcher = Fetcher::new(Arc::clone(&client), &[FetchRange::new(tp.clone(), 0, RECORDS)], options);
    let mut next = BTreeMap::new();
    let before = runtime.block_on(async {
        let mut records = 0;
        for _ in 0..3 {
            let (tp, chunk) = fetcher.next().await.expect("a chunk before the move");
            let chunk = chunk.unwrap_or_else(|e| panic!("{tp}: {e}"));
            let at = next.entry(tp.clone()).or_insert(0);
            for r in &chunk.fetched.records {
                assert_eq!(r.offset, *at);
                *at += 1;
            }
            records += chunk.fetched.records.len();
        }
        records
    });
    let old = leader_addr(&client, &tp);
    let live = client.cached_metadata().expect("metadata");
    let new_leader = replicas
        .iter()
        .copied()
        .find(|&r| r != leader && live.broker(r).is_some())
        .expect("another live replica");
    move_leader(&cluster, &topic, &replicas, new_leader);
    assert_eq!(leader_and_replicas(&cluster, &topic).0, new_leader, "the leader did not move");

    let after = runtime.block_on(drain_in_order(&mut fetcher, &mut next, |_| {}));
    assert_eq!(before + after, RECORDS as usize);
    assert_eq!(next.get(&tp), Some(&RECORDS));
    let now = leader_addr(&client, &tp);
    assert_ne!(now, old, "metadata still names the old leader");
    assert!(fetches.requests_to(&now) > 0, "no Fetch went to the new leader {now}");
}

/// Issue 37: one zstd batch that decompresses to 4 MB (4,000 records of 1 KB), read under a
/// 256 KiB decompressed budget — streamed, a budget's worth per round, every record once and in
/// order, no chunk of records holding much more than the budget; and the same batch under an
/// absolute cap of 1 MiB is refused with an error naming the partition and the batch's offset.
#[test]
fn a_batch_larger_than_the_decompressed_budget_is_streamed_and_one_past_the_cap_is_named() {
    const RECORDS: i64 = 4_000;
    let Some(cluster) = support::cluster() else { return };
    let runtime = support::multi_thread_runtime();
    let client = runtime.block_on(async {
        Arc::new(Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap())
    });
    let topic = runtime.block_on(support::new_topic_with_leaders(&client, "fetcher-one-big-batch", 1));
    let options = kafka_client::ProduceOptions {
        compression: kafka_wire::protocol::records::Compression::Zstd,
        ..kafka_client::ProduceOptions::default()
    };
    runtime.block_on(async {
        let records = (0..RECORDS)
            .map(|i| kafka_client::ProduceRecord::new(None, Some(bytes::Bytes::from(format!("{i:x<1000}")))))
            .collect();
        // One call, one batch: 4 MB of values, a few KB on the wire.
        client.produce(&topic, 0, records, &options).await.unwrap();
    });
    let tp = TopicPartition::new(topic.as_str(), 0);
    let ranges = [FetchRange::new(tp.clone(), 0, RECORDS)];
    let budget = 256 * 1024;

    let options =
        FetchOptions { max_decompressed_bytes: budget, timeout: TIMEOUT, ..FetchOptions::default() };
    let mut fetcher = Fetcher::new(Arc::clone(&client), &ranges, options);
    let (mut largest, mut chunks) = (0, 0);
    let mut next = BTreeMap::new();
    let records = runtime.block_on(drain_in_order(&mut fetcher, &mut next, |chunk| {
        largest = largest.max(value_bytes(chunk));
        chunks += 1;
    }));
    assert_eq!(records as i64, RECORDS, "every record once");
    assert!(chunks >= 8, "4 MB under a 256 KiB budget came in {chunks} chunks");
    // The budget, plus the one 32 KiB decompression chunk the last record kept was read in.
    assert!(largest <= budget + 32 * 1024, "a chunk of {largest} value bytes under a {budget}-byte budget");

    let capped = FetchOptions {
        max_decompressed_bytes: budget,
        decode: kafka_wire::protocol::records::DecodeOptions {
            max_decompressed_size: 1 << 20,
            ..kafka_wire::protocol::records::DecodeOptions::default()
        },
        timeout: TIMEOUT,
        ..FetchOptions::default()
    };
    let mut fetcher = Fetcher::new(Arc::clone(&client), &ranges, capped);
    let error = runtime.block_on(async {
        loop {
            match fetcher.next().await {
                Some((_, Ok(_))) => {}
                Some((_, Err(e))) => break e,
                None => panic!("a batch of 4 MB was read under a 1 MiB cap"),
            }
        }
    });
    let kafka_client::ClientError::Records { partition, offset, .. } = &error else { panic!("{error}") };
    assert_eq!((partition, *offset), (&tp, 0), "{error}");
    let text = error.to_string();
    assert!(text.contains(&format!("{tp} from offset 0")) && text.contains("1048576"), "{text}");
}

/// Issue 37: compressible records (1 KB values of one repeated byte, lz4: ≈ 200× smaller on
/// the wire) read through a small decompressed budget — every record once and in order, and no
/// chunk holding more decompressed bytes than a response's share plus the one batch a response
/// always yields; without the budget the same read hands out far larger chunks.
#[test]
fn a_decompressed_budget_bounds_what_each_chunk_holds_and_every_record_still_comes_once() {
    const PARTITIONS: i32 = 3;
    const BATCHES: i64 = 40;
    const PER_BATCH: i64 = 50;
    let Some(cluster) = support::cluster() else { return };
    let runtime = support::multi_thread_runtime();
    let client = runtime.block_on(async {
        Arc::new(Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap())
    });
    let topic = runtime.block_on(support::new_topic_with_leaders(&client, "fetcher-budget", PARTITIONS));
    let options = kafka_client::ProduceOptions {
        compression: kafka_wire::protocol::records::Compression::Lz4,
        ..kafka_client::ProduceOptions::default()
    };
    runtime.block_on(async {
        for p in 0..PARTITIONS {
            for _ in 0..BATCHES {
                let records = (0..PER_BATCH)
                    .map(|_| {
                        kafka_client::ProduceRecord::new(None, Some(bytes::Bytes::from(vec![b'k'; 1_000])))
                    })
                    .collect();
                client.produce(&topic, p, records, &options).await.unwrap();
            }
        }
    });
    let ranges: Vec<FetchRange> = (0..PARTITIONS)
        .map(|p| FetchRange::new(TopicPartition::new(topic.as_str(), p), 0, BATCHES * PER_BATCH))
        .collect();
    let largest_chunk = |budget: usize| {
        let options =
            FetchOptions { max_decompressed_bytes: budget, timeout: TIMEOUT, ..FetchOptions::default() };
        let mut fetcher = Fetcher::new(Arc::clone(&client), &ranges, options);
        let mut largest = 0;
        let mut next = BTreeMap::new();
        let records = runtime.block_on(drain_in_order(&mut fetcher, &mut next, |chunk| {
            largest = largest.max(value_bytes(chunk));
        }));
        assert_eq!(records as i64, i64::from(PARTITIONS) * BATCHES * PER_BATCH, "budget {budget}");
        largest
    };
    // Three lanes at most (one per broker), two responses each: a share of ≥ 100 KB / 6.
    let budget = 100 * 1024;
    let batch = (PER_BATCH * 1_000) as usize;
    let bounded = largest_chunk(budget);
    assert!(bounded <= budget / 2 + batch, "a chunk of {bounded} bytes under a {budget}-byte budget");
    let unbounded = largest_chunk(usize::MAX);
    assert!(
        unbounded > 4 * bounded,
        "without a budget the largest chunk is {unbounded} bytes, with one {bounded}"
    );
}
