//! A memory budget sizes the direct stream's batches by bytes (issue 37): after the first
//! batch, which is planned from the configured guess, each batch's records fit in the budget
//! at the size measured from the batch before; every record is still read exactly once, and
//! records each larger than the budget still move, one per batch.

mod support;

use std::sync::Arc;
use std::time::Duration;

use kwire_stores::FileStore;
use kwire_stream::memory_budget::record_bytes;
use kwire_stream::{DirectStream, MemoryBudget, StreamConfig};

use support::{client, cluster, create_topic, produce, unique};

/// `count` values of `size` bytes for `partition`, each starting with its number.
fn sized_values(partition: i32, count: usize, size: usize) -> Vec<String> {
    (0..count)
        .map(|n| {
            let head = format!("{partition}-{n}-");
            format!("{head}{}", "x".repeat(size - head.len()))
        })
        .collect()
}

/// Reads the stream dry, committing each batch: per batch, its record count and the bytes its
/// records take; and every value read, per partition, in order.
async fn drain(stream: &mut DirectStream<FileStore>) -> (Vec<(usize, u64)>, Vec<Vec<String>>) {
    let mut batches = Vec::new();
    let mut seen = vec![Vec::new(); 3];
    for _ in 0..1_000 {
        let batch = stream.next_batch().await.expect("batch");
        let count = batch.record_count();
        if count == 0 {
            stream.commit(&batch).await.expect("commit");
            return (batches, seen);
        }
        batches.push((count, batch.records().map(|(_, _, r)| record_bytes(r)).sum()));
        for (_, partition, r) in batch.records() {
            let value = String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned();
            seen[usize::try_from(partition).unwrap()].push(value);
        }
        let report = stream.commit(&batch).await.expect("commit");
        assert!(report.rejected.is_empty(), "{report:?}");
    }
    panic!("the stream never ran dry");
}

fn stream_over(
    client: &Arc<kafka_client::Client>,
    topic: &str,
    budget: MemoryBudget,
) -> DirectStream<FileStore> {
    let dir = std::env::temp_dir().join(unique("kwire-stream-memory"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = StreamConfig::new("memory-budget", [topic.to_owned()])
        .memory_budget(budget)
        .poll_interval(Duration::from_millis(50));
    DirectStream::new(Arc::clone(client), FileStore::new(dir.join("offsets.json")), config).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_after_the_first_fit_the_budget_at_the_measured_record_size_and_nothing_is_lost() {
    let Some(cluster) = cluster() else { return };
    let client = client(&cluster).await;
    let topic = unique("stream-memory-budget");
    create_topic(&client, &topic, 3).await;
    let written: Vec<Vec<String>> = (0..3).map(|p| sized_values(p, 60, 1_000)).collect();
    for (p, values) in (0..).zip(&written) {
        produce(&client, &topic, p, values).await;
    }

    // The guess (500 B) is half the real size: the first batch takes twice its share.
    let budget = MemoryBudget { bytes: 20_000, initial_record_bytes: 500 };
    let mut stream = stream_over(&client, &topic, budget);
    let (batches, seen) = drain(&mut stream).await;

    assert_eq!(seen, written, "every record once, in order per partition");
    assert_eq!(batches[0].0, 40, "the first batch is planned from the guess: 20,000 / 500");
    let measured = stream.measured_record_bytes().expect("a record size was measured");
    assert!((1_000..1_300).contains(&measured), "1,000-byte values and their struct: {measured}");
    let cap = budget.bytes / measured;
    let last = batches.len() - 1;
    for (i, &(count, bytes)) in batches.iter().enumerate().skip(1) {
        assert!(bytes <= budget.bytes, "batch {i}: {count} records take {bytes} bytes, over the budget");
        // Every batch but the last has backlog to spare: it is as large as the budget allows.
        if i < last {
            assert_eq!(count as u64, cap, "batch {i} of {batches:?}");
        }
    }
    assert_eq!(batches.len() as u64, 1 + (180 - 40_u64).div_ceil(cap), "{batches:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_each_larger_than_the_budget_are_read_one_per_batch() {
    let Some(cluster) = cluster() else { return };
    let client = client(&cluster).await;
    let topic = unique("stream-memory-tiny");
    create_topic(&client, &topic, 1).await;
    let written = sized_values(0, 5, 2_000);
    produce(&client, &topic, 0, &written).await;

    let mut stream = stream_over(&client, &topic, MemoryBudget { bytes: 100, initial_record_bytes: 2_000 });
    let (batches, seen) = drain(&mut stream).await;

    assert_eq!(seen[0], written);
    assert_eq!(batches.iter().map(|b| b.0).collect::<Vec<_>>(), vec![1; 5], "{batches:?}");
}
