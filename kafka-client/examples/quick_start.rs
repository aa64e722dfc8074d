//! The README's library example: a partition's log bounds and its last records.
//!
//! `cargo run -p kafka-client --example quick_start` after `scripts/demo` (which creates
//! `kwire-demo`), or with `KWIRE_BOOTSTRAP` naming any cluster that has that topic.
//!
//! The lines between the ANCHOR comments are the README's Rust block, character for character:
//! `scripts/check-docs-links` fails when the two differ, and the book includes them from here.

// ANCHOR: body
use std::time::Duration;

use kafka_client::{Client, ClientConfig, FetchOptions, FetchRange, TopicPartition};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bootstrap = std::env::var("KWIRE_BOOTSTRAP").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let client = Client::connect(ClientConfig::new(&bootstrap)?).await?;
    let tp = TopicPartition::new("kwire-demo", 0);
    // One result per partition asked: log start, high watermark, last stable offset, leader.
    let mut ranges = client.log_ranges(std::slice::from_ref(&tp), Duration::from_secs(10)).await;
    let log = ranges.remove(&tp).ok_or("no answer")??;
    println!("{tp}: log [{}, {})", log.log_start, log.high_watermark);
    // The last three records: [from, until), so `until` itself is not read.
    let last = FetchRange::new(tp, (log.high_watermark - 3).max(log.log_start), log.high_watermark);
    for (tp, fetched) in client.fetch_range(&[last], &FetchOptions::default()).await {
        for record in fetched?.records {
            println!("{tp}@{}: {:?}", record.offset, record.value);
        }
    }
    Ok(())
}
// ANCHOR_END: body
