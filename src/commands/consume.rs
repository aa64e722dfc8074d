//! `kwire consume TOPIC`: records with partition, offset, timestamp, key, headers and value —
//! like `kcat -C`, but reading exact ranges from the leaders without joining a group.
//!
//! Every partition is read at once through one [`Fetcher`]: one Fetch per leader broker
//! covering all its partitions, the next one sent while the previous response is printed, at
//! most two responses held per broker, so memory does not grow with the partitions' length.
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
    Client, FetchOptions, FetchRange, FetchedRecord, Fetcher, OffsetQuery, TopicPartition,
};
use serde_json::json;

use super::stop_signal::wait_for_stop;
use super::Context;
use crate::cli::{ConsumeArgs, ConsumeFrom, Format};
use crate::exit::{Exit, Failure};
use crate::output::{emit, escape_text, json_safe, Progress};

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
    let mut ranges = Vec::new();
    for tp in partitions {
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
        if from < until {
            ranges.push(FetchRange::new(tp, from, until));
        }
    }
    let options = FetchOptions { isolation, timeout, ..FetchOptions::default() };
    remaining = print_ranges(&client, &ranges, options, remaining, &mut positions, ctx.format(), |left| {
        if let Some(progress) = &progress {
            progress.say(&format!("{} of {total} records", total - left));
        }
    })
    .await?;
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
        remaining =
            print_ranges(&client, &ranges, options, remaining, &mut positions, ctx.format(), |left| {
                if let Some(progress) = &progress {
                    progress.say(&format!("{} of {total} records", total - left));
                }
            })
            .await?;
    }
    Ok(())
}

/// Reads `ranges` through one [`Fetcher`] (every leader at once, the next fetch to a broker on
/// its way while a chunk is printed), printing each chunk whole until `remaining` records are
/// printed; returns how many may still be printed. `positions` follows each partition's reading.
async fn print_ranges(
    client: &Arc<Client>,
    ranges: &[FetchRange],
    options: FetchOptions,
    mut remaining: u64,
    positions: &mut BTreeMap<TopicPartition, i64>,
    format: Format,
    report: impl Fn(u64),
) -> Result<u64, Failure> {
    if ranges.is_empty() || remaining == 0 {
        return Ok(remaining);
    }
    let mut fetcher = Fetcher::new(Arc::clone(client), ranges, options);
    while let Some((tp, chunk)) = fetcher.next().await {
        let chunk = chunk.map_err(|e| Failure::client(&tp, &e))?;
        remaining = print_batch(&tp, &chunk.fetched.records, remaining, format);
        positions.insert(tp, chunk.fetched.next_offset);
        report(remaining);
        if remaining == 0 {
            break;
        }
    }
    Ok(remaining)
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
