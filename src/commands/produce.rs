//! `kwire produce TOPIC`: lines from stdin as records — like `kcat -P`. With
//! `--key-separator`, the text before the first separator is the key; without `--partition`,
//! records go where the Java client's partitioner would put their key. Sent through the
//! library's [`Producer`]: batched per partition, several requests in flight, idempotent.
//! With `--transactional-id`, the input is written in one transaction (or one per
//! `--txn-every` records), committed at the end; a failure aborts the open one.

use kafka_client::{
    apply_producer_properties, Deliveries, Producer, ProducerConfig, RecordRef, TopicPartition,
};
use kafka_wire::protocol::records::Compression;
use serde_json::json;

use super::Context;
use crate::cli::{Format, ProduceArgs};
use crate::command_config;
use crate::exit::{Exit, Failure};
use crate::line_reader::LineReader;
use crate::output::{outln, print_json};

/// Bytes per batch: librdkafka's default `batch.size` (Java's 16 KiB makes many more
/// requests for a bulk load from a pipe).
const BATCH_SIZE: usize = 1_000_000;

/// Bytes the producer's batches may hold (`buffer.memory`), a quarter of Java's 32 MiB: a
/// bulk load from a pipe always fills the buffer, so this is most of the command's memory.
/// Eight batches of [`BATCH_SIZE`] still keep three brokers busy: on scripts/bench-cluster,
/// 1,000,000 records took as long as with 16 MiB (medians of 6: 100 B 0.64 vs 0.63 s, 1 KB
/// 1.63 vs 1.62 s) at a peak RSS of 16–21 MiB instead of 15–30 MiB.
const BUFFER_MEMORY: usize = 8 << 20;

pub async fn run(ctx: &Context, args: &ProduceArgs) -> Result<(), Failure> {
    let config = producer_config(ctx, args)?;
    let client = ctx.client().await?;
    ctx.partitions_awaiting(&client, std::slice::from_ref(&args.topic), config.topic_propagation).await?;
    let transactional = config.transactional_id.is_some();
    let producer = Producer::new(client, config).map_err(|e| Failure::new(Exit::USAGE, e.to_string()))?;
    if transactional {
        producer.init_transactions().await.map_err(|e| Failure::client(&args.topic, &e))?;
        producer.begin_transaction().await.map_err(|e| Failure::client(&args.topic, &e))?;
    }
    let outcome = send_input(&producer, args, transactional).await;
    if transactional {
        let ended = match &outcome {
            Ok(_) => producer.commit_transaction().await,
            // Best effort: the coordinator aborts an abandoned transaction at its timeout anyway.
            Err(_) => producer.abort_transaction().await,
        };
        if let (Ok(_), Err(e)) = (&outcome, ended) {
            producer.close().await;
            return Err(Failure::client(&args.topic, &e));
        }
    }
    producer.close().await;
    let (sent, pending) = outcome?;
    pending.wait().await.map_err(|e| Failure::client(&args.topic, &e))?;
    match ctx.format() {
        Format::Json => print_json(&json!({"topic": args.topic, "records": sent})),
        Format::Text => outln!("produced {sent} record(s) to {}", args.topic),
    }
    Ok(())
}

/// kwire's defaults (librdkafka's batch size, an 8 MiB buffer (16 MiB when compressing), `--timeout` as the delivery
/// timeout and a quarter of it per Produce request unless `request.timeout.ms` is given), then the producer settings of `--command-config` and `-X` (Java's names and
/// checks), then `--compression` and `--transactional-id` when given.
fn producer_config(ctx: &Context, args: &ProduceArgs) -> Result<ProducerConfig, Failure> {
    let mut config = ProducerConfig {
        batch_size: BATCH_SIZE,
        buffer_memory: BUFFER_MEMORY,
        delivery_timeout: ctx.global.timeout,
        ..ProducerConfig::default()
    };
    let mut pairs = command_config::pairs(ctx.global.command_config.as_deref(), &ctx.global.property)?;
    let request_timeout_given = pairs.iter().any(|(k, _)| k.trim() == "request.timeout.ms");
    if let Some(codec) = args.compression {
        pairs.push(("compression.type".into(), Compression::from(codec).name().into()));
    }
    if let Some(id) = &args.transactional_id {
        pairs.push(("transactional.id".into(), id.clone()));
    }
    let buffer_given = pairs.iter().any(|(k, _)| k.trim() == "buffer.memory");
    apply_producer_properties(&mut config, pairs).map_err(|e| Failure::new(Exit::USAGE, e.to_string()))?;
    if !buffer_given && config.compression != Compression::None {
        // An open compressing batch is charged its records and room for their compressed copy
        // (about twice its records) until it is sealed: twice the buffer holds as many batches
        // of records as the uncompressed default. The room is reserved, not written: the peak
        // RSS stays that of the records (500,000 × 1 KB lz4 on the test cluster: 0.65 s and
        // 18.5 MiB at 8 MiB, 0.56 s and 22.8 MiB at 16 MiB, as before memory was counted).
        config.buffer_memory = 2 * BUFFER_MEMORY;
    }
    if !request_timeout_given {
        // `--timeout` bounds each record's delivery; a Produce request gets a quarter of it (as
        // Java's 30 s of 120 s), so an answer lost on the way is retried before the deadline.
        config.request_timeout = Some((config.delivery_timeout / 4).max(std::time::Duration::from_secs(1)));
    }
    if args.txn_every.is_some() && config.transactional_id.is_none() {
        return Err(Failure::new(Exit::USAGE, "--txn-every needs a transactional id (--transactional-id)"));
    }
    Ok(config)
}

/// Most lines handed to the producer at once (what it appends under one lock).
const LINES_PER_SEND: usize = 256;

/// Sends stdin's lines; returns how many and the results not yet seen. With
/// `transactional`, commits and begins a new transaction every `--txn-every` records.
async fn send_input(
    producer: &Producer,
    args: &ProduceArgs,
    transactional: bool,
) -> Result<(u64, Deliveries), Failure> {
    // Results not yet seen, in send order; the finished ones at the front are checked and
    // dropped as we go, so this holds about what the producer buffers.
    let mut pending = Deliveries::default();
    let mut input = LineReader::read_ahead(std::io::stdin())
        .map_err(|e| Failure::new(Exit::USAGE, format!("stdin: cannot start the thread reading it: {e}")))?;
    let separator = args.key_separator.as_deref().map(str::as_bytes);
    let fixed = args.partition.map(|p| TopicPartition::new(args.topic.as_str(), p));
    let txn_every = args.txn_every.filter(|_| transactional);
    let mut sent = 0u64;
    // The lines already read go together, waiting for no more input: a slow pipe's line is
    // sent when it comes, a bulk load's in runs. Each is copied into its batch straight from
    // the read buffer.
    while let Some(chunk) =
        input.next_chunk().map_err(|e| Failure::new(Exit::USAGE, format!("stdin line {}: {e}", sent + 1)))?
    {
        let mut lines = chunk.lines().peekable();
        while lines.peek().is_some() {
            // With --txn-every, a run ends where a transaction does.
            let room = txn_every.map_or(LINES_PER_SEND, |n| {
                usize::try_from(n - sent % n).unwrap_or(usize::MAX).min(LINES_PER_SEND)
            });
            let mut count = 0u64;
            let run = lines.by_ref().take(room).map(|line| {
                count += 1;
                record_of(line, separator)
            });
            match &fixed {
                Some(tp) => producer.send_all_to(tp, run, &mut pending).await,
                None => producer.send_all(&args.topic, run, &mut pending).await,
            }
            .map_err(|e| Failure::client(&args.topic, &e))?;
            sent += count;
            check_finished(&mut pending)?;
            if txn_every.is_some_and(|n| sent.is_multiple_of(n)) {
                producer.commit_transaction().await.map_err(|e| Failure::client(&args.topic, &e))?;
                check_finished(&mut pending)?;
                producer.begin_transaction().await.map_err(|e| Failure::client(&args.topic, &e))?;
            }
        }
    }
    Ok((sent, pending))
}

/// A line as a record: with `separator`, the text before its first occurrence is the key.
fn record_of<'a>(line: &'a [u8], separator: Option<&[u8]>) -> RecordRef<'a> {
    let split = separator.and_then(|sep| memchr::memmem::find(line, sep).map(|at| (at, sep.len())));
    match split {
        Some((at, len)) => RecordRef::new(Some(&line[..at]), Some(&line[at + len..])),
        None => RecordRef::new(None, Some(line)),
    }
}

/// Drops the finished results at the front; the first failure ends the command.
fn check_finished(pending: &mut Deliveries) -> Result<(), Failure> {
    pending.take_finished().map(drop).map_err(|e| {
        let partition = pending.front_partition().map(ToString::to_string).unwrap_or_default();
        Failure::client(partition, &e)
    })
}
