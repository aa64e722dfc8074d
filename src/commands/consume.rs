//! `kwire consume TOPIC`: records with partition, offset, timestamp, key, headers and value —
//! like `kcat -C`, but reading exact ranges from the leaders without joining a group.
//!
//! Each partition is read in chunks of offsets sized to about [`CHUNK_BYTES`] of records, so
//! memory does not grow with the partition; the next chunk is fetched while the current one
//! is printed.
//!
//! Without `--follow` it reads up to each partition's end as listed when it starts. With it,
//! it goes on in rounds until a signal or `--count`: list the ends, read what is new up to them;
//! a round with nothing new waits [`FOLLOW_POLL`] (an idle topic costs one ListOffsets per
//! leader per round).
//! Each batch is printed (and flushed) whole before the next fetch, so a signal never cuts a
//! line.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use kafka_wire::client::{
    Client, FetchOptions, FetchRange, FetchedPartition, FetchedRecord, OffsetQuery, TopicPartition,
};
use serde_json::json;

use super::stop_signal::wait_for_stop;
use super::Context;
use crate::cli::{ConsumeArgs, ConsumeFrom, Format};
use crate::exit::{Exit, Failure};
use crate::output::{emit, escape_text, json_safe, Progress};

/// Record bytes (keys and values) a chunk of offsets is sized to hold, once the first chunk
/// showed how large the partition's records are.
const CHUNK_BYTES: usize = 16 << 20;
/// Offsets in a partition's first chunk.
const FIRST_CHUNK: i64 = 16_384;
/// How long `--follow` waits after a round that found nothing new.
const FOLLOW_POLL: std::time::Duration = std::time::Duration::from_millis(200);

pub async fn run(ctx: &Context, args: &ConsumeArgs) -> Result<(), Failure> {
    if !args.follow {
        return consume(ctx, args).await;
    }
    tokio::select! {
        done = consume(ctx, args) => done,
        () = wait_for_stop() => Ok(()),
    }
}

async fn consume(ctx: &Context, args: &ConsumeArgs) -> Result<(), Failure> {
    let client = ctx.client().await?;
    let timeout = ctx.global.timeout;
    let mut partitions = ctx.partitions_of(&client, std::slice::from_ref(&args.topic)).await?;
    if let Some(p) = args.partition {
        partitions.retain(|tp| tp.partition == p);
        if partitions.is_empty() {
            return Err(Failure::new(Exit::NOT_FOUND, format!("unknown partition {}-{p}", args.topic)));
        }
    }
    let isolation = args.isolation;
    let ends = client.list_offsets(&partitions, OffsetQuery::Latest, isolation, timeout).await;
    let starts = match args.from {
        ConsumeFrom::Earliest => {
            client.list_offsets(&partitions, OffsetQuery::Earliest, isolation, timeout).await
        }
        ConsumeFrom::Latest => ends.clone(),
        ConsumeFrom::Time(ms) => {
            client.list_offsets(&partitions, OffsetQuery::Timestamp(ms), isolation, timeout).await
        }
        ConsumeFrom::Offset(_) => std::collections::BTreeMap::default(),
    };
    let mut remaining = args.count.unwrap_or(u64::MAX);
    // A count gives a goal to report progress against; without one there is nothing to show.
    let progress = args.count.map(|_| Progress::new());
    let total = args.count.unwrap_or(0);
    // Where each partition's reading goes on with --follow.
    let mut positions = BTreeMap::new();
    for tp in partitions {
        if remaining == 0 {
            break;
        }
        let end = ends
            .get(&tp)
            .cloned()
            .unwrap_or_else(|| {
                Err(kafka_wire::client::ClientError::UnknownTopic { topic: tp.topic.to_string() })
            })
            .map_err(|e| Failure::client(&tp, &e))?
            .offset
            .unwrap_or(0);
        let from = match args.from {
            ConsumeFrom::Offset(o) => o,
            _ => starts
                .get(&tp)
                .cloned()
                .unwrap_or_else(|| {
                    Err(kafka_wire::client::ClientError::UnknownTopic { topic: tp.topic.to_string() })
                })
                .map_err(|e| Failure::client(&tp, &e))?
                .offset
                .unwrap_or(end),
        };
        let until = end.min(from.saturating_add(i64::try_from(remaining).unwrap_or(i64::MAX)));
        positions.insert(tp.clone(), from.max(0));
        if from >= until {
            continue;
        }
        let options = FetchOptions { isolation, timeout, ..FetchOptions::default() };
        let mut next =
            Some(fetch_chunk(&client, &tp, from, from.saturating_add(FIRST_CHUNK).min(until), options));
        while let Some(chunk) = next.take() {
            let chunk_from = chunk.from;
            let part = chunk.wait().await?;
            // The next chunk is on its way while this one is printed.
            let reached = part.next_offset;
            if reached > chunk_from && reached < until && remaining > record_count(&part) {
                let size = chunk_offsets(&part, reached - chunk_from);
                next = Some(fetch_chunk(
                    &client,
                    &tp,
                    reached,
                    reached.saturating_add(size).min(until),
                    options,
                ));
            }
            remaining = print_batch(&tp, &part.records, remaining, ctx.format());
            positions.insert(tp.clone(), reached);
            if let Some(progress) = &progress {
                progress.say(&format!("{} of {total} records", total - remaining));
            }
        }
    }
    if !args.follow {
        return Ok(());
    }
    let options = FetchOptions { isolation, timeout, ..FetchOptions::default() };
    let followed: Vec<TopicPartition> = positions.keys().cloned().collect();
    while remaining > 0 {
        let goal = i64::try_from(remaining).unwrap_or(i64::MAX);
        // Each round reads up to the ends listed now: a range ending at the log's end completes
        // with the response that reaches it, so a quiet partition never holds up the others.
        let ends = client.list_offsets(&followed, OffsetQuery::Latest, isolation, timeout).await;
        let mut ranges = Vec::new();
        for (tp, end) in ends {
            let end = end.map_err(|e| Failure::client(&tp, &e))?.offset.unwrap_or(0);
            let from = positions.get(&tp).copied().unwrap_or(end);
            if end > from {
                ranges.push(FetchRange::new(tp, from, end.min(from.saturating_add(goal))));
            }
        }
        if ranges.is_empty() {
            tokio::time::sleep(FOLLOW_POLL).await;
            continue;
        }
        for (tp, result) in client.fetch_range(&ranges, &options).await {
            let part = result.map_err(|e| Failure::client(&tp, &e))?;
            remaining = print_batch(&tp, &part.records, remaining, ctx.format());
            positions.insert(tp, part.next_offset);
            if let Some(progress) = &progress {
                progress.say(&format!("{} of {total} records", total - remaining));
            }
        }
    }
    Ok(())
}

/// One chunk's fetch, running on its own task.
struct Chunk {
    tp: TopicPartition,
    from: i64,
    task: tokio::task::JoinHandle<Result<FetchedPartition, kafka_wire::client::ClientError>>,
}

impl Chunk {
    async fn wait(self) -> Result<FetchedPartition, Failure> {
        let result = self.task.await.map_err(|e| {
            Failure::new(Exit::CLUSTER, format!("{}: the fetch ended without a result: {e}", self.tp))
        })?;
        result.map_err(|e| Failure::client(&self.tp, &e))
    }
}

/// Starts reading `[from, until)` of `tp`.
fn fetch_chunk(
    client: &Arc<Client>,
    tp: &TopicPartition,
    from: i64,
    until: i64,
    options: FetchOptions,
) -> Chunk {
    let client = Arc::clone(client);
    let range = FetchRange::new(tp.clone(), from, until);
    let task = tokio::spawn(async move {
        let tp = range.partition.clone();
        let mut results = client.fetch_range(std::slice::from_ref(&range), &options).await;
        results.remove(&tp).unwrap_or_else(|| {
            Err(kafka_wire::client::ClientError::InvalidArgument { message: format!("no result for {tp}") })
        })
    });
    Chunk { tp: tp.clone(), from, task }
}

fn record_count(part: &FetchedPartition) -> u64 {
    u64::try_from(part.records.len()).unwrap_or(u64::MAX)
}

/// Offsets for the next chunk: [`CHUNK_BYTES`] at the size of the records of `part`, which
/// covered `offsets` offsets.
fn chunk_offsets(part: &FetchedPartition, offsets: i64) -> i64 {
    let data = |b: Option<&bytes::Bytes>| b.map_or(0, bytes::Bytes::len);
    let bytes: usize = part.records.iter().map(|r| 1 + data(r.key.as_ref()) + data(r.value.as_ref())).sum();
    let per_offset = bytes / usize::try_from(offsets.max(1)).unwrap_or(1);
    i64::try_from(CHUNK_BYTES / per_offset.max(1)).unwrap_or(FIRST_CHUNK).clamp(1024, 1 << 22)
}

/// Prints up to `remaining` of `records` in one write; returns how many may still be printed.
fn print_batch(tp: &TopicPartition, records: &[FetchedRecord], mut remaining: u64, format: Format) -> u64 {
    let mut text = String::new();
    for record in records.iter().take(usize::try_from(remaining).unwrap_or(usize::MAX)) {
        text.push_str(&render(tp, record, format));
        text.push('\n');
        remaining = remaining.saturating_sub(1);
    }
    if !text.is_empty() {
        match format {
            Format::Json => emit(&json_safe(&text)),
            Format::Text => emit(&escape_text(&text)),
        }
    }
    remaining
}

fn render(tp: &TopicPartition, r: &FetchedRecord, format: Format) -> String {
    match format {
        Format::Json => {
            let (key, key_encoding) = encode(r.key.as_deref());
            let (value, value_encoding) = encode(r.value.as_deref());
            json!({
                "topic": tp.topic,
                "partition": tp.partition,
                "offset": r.offset,
                "timestamp": r.timestamp,
                "key": key,
                "key_encoding": key_encoding,
                "headers": r.headers.iter().map(|h| {
                    let (value, encoding) = encode(h.value.as_deref());
                    json!({"key": h.key, "value": value, "value_encoding": encoding})
                }).collect::<Vec<_>>(),
                "value": value,
                "value_encoding": value_encoding,
            })
            .to_string()
        }
        Format::Text => {
            let text = |b: Option<&[u8]>| match encode(b) {
                (serde_json::Value::String(s), "utf8") => s,
                (serde_json::Value::String(s), enc) => format!("{enc}:{s}"),
                _ => "(null)".to_owned(),
            };
            let headers = r
                .headers
                .iter()
                .map(|h| format!("{}={}", h.key, text(h.value.as_deref())))
                .collect::<Vec<_>>()
                .join(",");
            format!(
                "{}\t{}\t{}\t{}\t{}\t{}",
                tp.partition,
                r.offset,
                r.timestamp.map(|t| t.to_string()).unwrap_or_default(),
                text(r.key.as_deref()),
                headers,
                text(r.value.as_deref())
            )
        }
    }
}

/// Printable UTF-8 stays text; anything else is base64, and says so.
fn encode(bytes: Option<&[u8]>) -> (serde_json::Value, &'static str) {
    match bytes {
        None => (serde_json::Value::Null, "null"),
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) if !s.chars().any(|c| c.is_control() && c != '\t') => (json!(s), "utf8"),
            _ => (json!(base64::engine::general_purpose::STANDARD.encode(b)), "base64"),
        },
    }
}
