//! `kwire produce TOPIC`: lines from stdin as records — like `kcat -P`. With
//! `--key-separator`, the text before the first separator is the key; without `--partition`,
//! records go where the Java client's partitioner would put their key. Sent through the
//! library's [`Producer`]: batched per partition, several requests in flight, idempotent.

use std::collections::VecDeque;
use std::io::BufRead as _;

use bytes::Bytes;
use kafka_wire::client::{DeliveryFuture, ProduceRecord, Producer, ProducerConfig, TopicPartition};
use serde_json::json;

use super::Context;
use crate::cli::{Format, ProduceArgs};
use crate::exit::{Exit, Failure};
use crate::output::{outln, print_json};

/// Bytes per batch: librdkafka's default `batch.size` (Java's 16 KiB makes many more
/// requests for a bulk load from a pipe).
const BATCH_SIZE: usize = 1_000_000;

pub async fn run(ctx: &Context, args: &ProduceArgs) -> Result<(), Failure> {
    let client = ctx.client().await?;
    let config = ProducerConfig {
        compression: args.compression.into(),
        batch_size: BATCH_SIZE,
        delivery_timeout: ctx.global.timeout,
        ..ProducerConfig::default()
    };
    if !config.compression.is_available() {
        return Err(Failure::new(
            Exit::USAGE,
            format!("{} is not compiled into this kwire", config.compression.name()),
        ));
    }
    ctx.partitions_of(&client, std::slice::from_ref(&args.topic)).await?;
    let producer = Producer::new(client, config).map_err(|e| Failure::new(Exit::USAGE, e.to_string()))?;
    // Results not yet seen, in send order; the finished ones at the front are checked and
    // dropped as we go, so this holds about what the producer buffers.
    let mut pending: VecDeque<DeliveryFuture> = VecDeque::new();
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut line = String::new();
    let mut sent = 0u64;
    loop {
        line.clear();
        let read = input
            .read_line(&mut line)
            .map_err(|e| Failure::new(Exit::USAGE, format!("stdin line {}: {e}", sent + 1)))?;
        if read == 0 {
            break;
        }
        let text = line.strip_suffix('\n').unwrap_or(&line);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let (key, value) = match args.key_separator.as_deref().and_then(|sep| text.split_once(sep)) {
            Some((k, v)) => (Some(Bytes::copy_from_slice(k.as_bytes())), v),
            None => (None, text),
        };
        let record = ProduceRecord::new(key, Some(Bytes::copy_from_slice(value.as_bytes())));
        let delivery = match args.partition {
            Some(p) => producer.send_to(TopicPartition::new(args.topic.as_str(), p), record).await,
            None => producer.send(&args.topic, record).await,
        }
        .map_err(|e| Failure::client(&args.topic, &e))?;
        pending.push_back(delivery);
        sent += 1;
        check_finished(&mut pending)?;
    }
    producer.close().await;
    for delivery in pending {
        delivery.wait().await.map_err(|e| Failure::client(&args.topic, &e))?;
    }
    match ctx.format() {
        Format::Json => print_json(&json!({"topic": args.topic, "records": sent})),
        Format::Text => outln!("produced {sent} record(s) to {}", args.topic),
    }
    Ok(())
}

/// Drops the finished results at the front; the first failure ends the command.
fn check_finished(pending: &mut VecDeque<DeliveryFuture>) -> Result<(), Failure> {
    while let Some(result) = pending.front().and_then(DeliveryFuture::try_result) {
        if let Err(e) = result {
            let partition = pending.front().map(|d| d.partition().to_string()).unwrap_or_default();
            return Err(Failure::client(partition, &e));
        }
        pending.pop_front();
    }
    Ok(())
}
