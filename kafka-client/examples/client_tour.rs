//! A tour of the tokio client, read-only: connect, read the cluster's metadata, ask every
//! partition of one topic for its log bounds and the offset of an hour ago, and fetch the last
//! few records of each partition.
//!
//! `cargo run -p kafka-client --example client_tour -- [BOOTSTRAP] [TOPIC]`
//!
//! `BOOTSTRAP` is a comma-separated `host:port` list (default: `$KWIRE_BOOTSTRAP`, else
//! `127.0.0.1:9092`); `TOPIC` defaults to the first topic that is not internal.

use std::error::Error;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kafka_client::{Client, ClientConfig, FetchOptions, FetchRange, Isolation, OffsetQuery, TopicPartition};

/// How many records to show from the end of each partition.
const LAST: i64 = 3;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let bootstrap = args
        .next()
        .or_else(|| std::env::var("KWIRE_BOOTSTRAP").ok())
        .unwrap_or_else(|| "127.0.0.1:9092".to_owned());
    let config = ClientConfig::new(&bootstrap)?;
    let client = Client::connect(config).await?;

    // Metadata for every topic; it is also the cache the client routes by.
    let metadata = client.refresh_metadata(&[]).await?;
    println!("cluster {}", metadata.cluster_id.as_deref().unwrap_or("(no id: broker before 0.10.1)"));
    for broker in &metadata.brokers {
        println!("  broker {} at {}", broker.node_id, broker.addr());
    }
    let topic = match args.next() {
        Some(topic) => topic,
        None => match metadata.topics.iter().find(|t| !t.is_internal) {
            Some(t) => t.name.clone(),
            None => {
                println!("no topics yet; create one and run again");
                return Ok(());
            }
        },
    };
    let Some(info) = metadata.topic(&topic) else {
        return Err(format!("topic `{topic}` is not in the cluster's metadata").into());
    };
    let partitions: Vec<TopicPartition> =
        info.partitions.iter().map(|p| TopicPartition::new(topic.as_str(), p.partition)).collect();

    // Log start, high watermark and last stable offset, each from the partition's leader.
    let timeout = Duration::from_secs(10);
    let ranges = client.log_ranges(&partitions, timeout).await;
    let hour_ago = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis().saturating_sub(3_600_000);
    let since = client
        .list_offsets(
            &partitions,
            OffsetQuery::Timestamp(i64::try_from(hour_ago)?),
            Isolation::ReadUncommitted,
            timeout,
        )
        .await;
    let mut wanted = Vec::new();
    for tp in &partitions {
        // The client answers for every partition asked; `get` keeps the example panic-free anyway.
        match ranges.get(tp).ok_or("no answer")? {
            Ok(range) => {
                let since = match since.get(tp) {
                    Some(Ok(listed)) => {
                        listed.offset.map_or("none (no newer record)".to_owned(), |o| o.to_string())
                    }
                    Some(Err(e)) => format!("error: {e}"),
                    None => "no answer".to_owned(),
                };
                println!(
                    "{tp}: log [{}, {}), last stable {}, leader {:?}; first offset of the last hour: {since}",
                    range.log_start, range.high_watermark, range.last_stable, range.leader
                );
                let from = (range.high_watermark - LAST).max(range.log_start);
                wanted.push(FetchRange::new(tp.clone(), from, range.high_watermark));
            }
            Err(e) => println!("{tp}: {e}"),
        }
    }

    // The last records of each partition: `[from, until)`, so `until` itself is not read.
    let fetched = client.fetch_range(&wanted, &FetchOptions { timeout, ..FetchOptions::default() }).await;
    for (tp, result) in &fetched {
        match result {
            Ok(partition) => {
                for record in &partition.records {
                    let value = record.value.as_deref().map(String::from_utf8_lossy);
                    println!("{tp}@{}: {}", record.offset, value.as_deref().unwrap_or("(null)"));
                }
            }
            Err(e) => println!("{tp}: {e}"),
        }
    }
    Ok(())
}
