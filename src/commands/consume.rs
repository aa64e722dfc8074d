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
use kafka_client::{
    Client, FetchOptions, FetchRange, FetchedRecord, Fetcher, Isolation, OffsetQuery, TopicPartition,
};
use serde_json::json;

use super::stop_signal::wait_for_stop;
use super::Context;
use crate::cli::{ConsumeArgs, ConsumeFrom, Format};
use crate::exit::{Exit, Failure};
use crate::output::{acts_on_terminal, emit, escape, is_printable_ascii, json_safe, Progress};

/// How long `--follow` waits after a round that found nothing new.
const FOLLOW_POLL: std::time::Duration = std::time::Duration::from_millis(200);

pub async fn run(ctx: &Context, args: &ConsumeArgs) -> Result<(), Failure> {
    if let Some(group) = &args.group {
        return super::consume_group::run(ctx, args, group).await;
    }
    if args.topics.len() > 1 {
        return Err(Failure::new(
            Exit::USAGE,
            "several topics are read with --group; without one, consume reads one topic",
        ));
    }
    if !args.follow {
        return consume(ctx, args).await;
    }
    tokio::select! {
        done = consume(ctx, args) => done,
        () = wait_for_stop() => Ok(()),
    }
}

/// The fetch settings: `-X` / `--command-config`'s consumer fetch keys (`fetch.max.bytes`,
/// `max.partition.fetch.bytes`, `fetch.max.wait.ms`, `kwire.fetch.max.decompressed.bytes`...)
/// over the defaults, with the command's isolation and timeout.
fn fetch_options(
    ctx: &Context,
    isolation: Isolation,
    timeout: std::time::Duration,
) -> Result<FetchOptions, Failure> {
    let mut config = kafka_client::ConsumerConfig::default();
    let pairs = crate::command_config::pairs(ctx.global.command_config.as_deref(), &ctx.global.property)?;
    kafka_client::apply_consumer_properties(&mut config, pairs)
        .map_err(|e| Failure::new(Exit::USAGE, e.to_string()))?;
    Ok(FetchOptions { isolation, timeout, ..config.fetch })
}

async fn consume(ctx: &Context, args: &ConsumeArgs) -> Result<(), Failure> {
    let client = ctx.client().await?;
    let timeout = ctx.global.timeout;
    let mut partitions = ctx.partitions_of(&client, &args.topics).await?;
    if let Some(p) = args.partition {
        partitions.retain(|tp| tp.partition == p);
        if partitions.is_empty() {
            return Err(Failure::new(Exit::NOT_FOUND, format!("unknown partition {}-{p}", args.topics[0])));
        }
    }
    let isolation = args.isolation;
    let ends = client.list_offsets(&partitions, OffsetQuery::Latest, isolation, timeout).await;
    let from = args.from.unwrap_or(ConsumeFrom::Earliest);
    let starts = match from {
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
            .unwrap_or_else(|| Err(kafka_client::ClientError::UnknownTopic { topic: tp.topic.to_string() }))
            .map_err(|e| Failure::client(&tp, &e))?
            .offset
            .unwrap_or(0);
        let from = match from {
            ConsumeFrom::Offset(o) => o,
            _ => starts
                .get(&tp)
                .cloned()
                .unwrap_or_else(|| {
                    Err(kafka_client::ClientError::UnknownTopic { topic: tp.topic.to_string() })
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
    let options = fetch_options(ctx, isolation, timeout)?;
    remaining = print_ranges(&client, &ranges, options, remaining, &mut positions, ctx.format(), |left| {
        if let Some(progress) = &progress {
            progress.say(&format!("{} of {total} records", total - left));
        }
    })
    .await?;
    if !args.follow {
        return Ok(());
    }
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
    // One buffer for every chunk's text: a chunk of 1 KB records is megabytes, and a fresh
    // string for each would be grown (copied) and its pages faulted in again every time.
    let mut text = String::new();
    while let Some((tp, chunk)) = fetcher.next().await {
        let chunk = chunk.map_err(|e| Failure::client(&tp, &e))?;
        remaining = print_records(&mut text, &tp, &chunk.fetched.records, remaining, format);
        positions.insert(tp, chunk.fetched.next_offset);
        report(remaining);
        if remaining == 0 {
            break;
        }
    }
    Ok(remaining)
}

/// Prints up to `remaining` of `records` in one write, rendered into `text` (cleared first,
/// its capacity kept for the next chunk); returns how many may still be printed.
pub(super) fn print_records(
    text: &mut String,
    tp: &TopicPartition,
    records: &[FetchedRecord],
    mut remaining: u64,
    format: Format,
) -> u64 {
    text.clear();
    for record in records.iter().take(usize::try_from(remaining).unwrap_or(usize::MAX)) {
        match format {
            Format::Json => text.push_str(&render_json(tp, record)),
            Format::Text => render_text(text, tp, record),
        }
        text.push('\n');
        remaining = remaining.saturating_sub(1);
    }
    if !text.is_empty() {
        match format {
            Format::Json => emit(&json_safe(text)),
            // Every field of a text line is safe for a terminal as written (`render_text`).
            Format::Text => emit(text),
        }
    }
    remaining
}

fn render_json(tp: &TopicPartition, r: &FetchedRecord) -> String {
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

/// Appends one record's text line (without its newline): partition, offset, timestamp, key,
/// headers (`k=v,...`) and value, tab-separated; a field is written as [`push_field`] says, a
/// header key [`escape`]d. Nothing in the line can act on a terminal or end the line.
fn render_text(out: &mut String, tp: &TopicPartition, r: &FetchedRecord) {
    use std::fmt::Write as _;
    let _ = write!(out, "{}\t{}\t", tp.partition, r.offset);
    if let Some(t) = r.timestamp {
        let _ = write!(out, "{t}");
    }
    out.push('\t');
    push_field(out, r.key.as_deref());
    out.push('\t');
    for (i, h) in r.headers.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&escape(&h.key));
        out.push('=');
        push_field(out, h.value.as_deref());
    }
    out.push('\t');
    push_field(out, r.value.as_deref());
}

/// A field as text: UTF-8 that a terminal shows unchanged (tab allowed) is written as it is;
/// anything else — a control character, a bidirectional override, invalid UTF-8 — as `base64:`
/// and its base64; a null as `(null)`. Written without an intermediate copy.
fn push_field(out: &mut String, bytes: Option<&[u8]>) {
    let Some(b) = bytes else {
        out.push_str("(null)");
        return;
    };
    if is_printable_ascii(b) {
        // ASCII is UTF-8: this conversion cannot fail.
        out.push_str(std::str::from_utf8(b).unwrap_or_default());
        return;
    }
    match std::str::from_utf8(b) {
        Ok(s) if !s.chars().any(|c| acts_on_terminal(c) && c != '\t') => out.push_str(s),
        _ => {
            out.push_str("base64:");
            base64::engine::general_purpose::STANDARD.encode_string(b, out);
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

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use kafka_wire::protocol::records::{Header, TimestampType};

    fn record(
        key: Option<&'static [u8]>,
        value: Option<&'static [u8]>,
        headers: Vec<Header>,
    ) -> FetchedRecord {
        FetchedRecord {
            offset: 7,
            timestamp: Some(1_000),
            timestamp_type: TimestampType::CreateTime,
            key: key.map(Bytes::from_static),
            value: value.map(Bytes::from_static),
            headers,
            leader_epoch: None,
        }
    }

    fn line(r: &FetchedRecord) -> String {
        let mut out = String::new();
        render_text(&mut out, &TopicPartition::new("t", 3), r);
        out
    }

    #[test]
    fn a_text_line_has_every_field_with_null_and_tab_kept() {
        let h = vec![
            Header { key: "h".to_owned(), value: Some(Bytes::from_static(b"x")) },
            Header { key: "n".to_owned(), value: None },
        ];
        assert_eq!(line(&record(None, Some(b"a\tb"), h)), "3\t7\t1000\t(null)\th=x,n=(null)\ta\tb");
    }

    #[test]
    fn control_characters_and_invalid_utf8_are_written_as_base64() {
        // A C0 character, DEL, a C1 character (U+0085, two bytes in UTF-8) and invalid UTF-8.
        for (bytes, b64) in [
            (&b"a\x1bb"[..], "YRti"),
            (&b"\x7f"[..], "fw=="),
            (&b"\xc2\x85"[..], "woU="),
            (&b"\xff"[..], "/w=="),
        ] {
            let mut out = String::new();
            push_field(&mut out, Some(bytes));
            assert_eq!(out, format!("base64:{b64}"), "{bytes:?}");
        }
        let mut out = String::new();
        push_field(&mut out, Some("é ok".as_bytes()));
        assert_eq!(out, "é ok");
        // A bidirectional override would make the line display in another order.
        let mut out = String::new();
        push_field(&mut out, Some("evil\u{202e}gpj".as_bytes()));
        assert_eq!(out, "base64:ZXZpbOKArmdwag==");
    }

    #[test]
    fn a_header_key_cannot_end_the_line_or_reach_the_terminal() {
        let h = vec![Header { key: "k\n0\t9\u{1b}".to_owned(), value: Some(Bytes::from_static(b"v")) }];
        assert_eq!(line(&record(None, Some(b"x"), h)), "3\t7\t1000\t(null)\tk\\n0\\t9\\u{1b}=v\tx");
    }
}
