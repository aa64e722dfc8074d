//! `kwire offsets TOPIC... [--at earliest|latest|max-timestamp|<millis>|<RFC 3339>]` — per
//! partition the log range (log start, high watermark, last stable offset), the leader and its
//! epoch, and the offset for the requested point.

use std::collections::BTreeMap;

use kafka_client::{ClientError, ListedOffset, LogRange, OffsetQuery, TopicPartition};
use serde_json::json;

use super::not_authorized::{self, Refusal};
use super::Context;
use crate::cli::{At, Format, OffsetsArgs};
use crate::exit::Failure;
use crate::output::{out, outln, Table};

pub async fn run(ctx: &Context, args: &OffsetsArgs) -> Result<(), Failure> {
    let client = ctx.client().await?;
    let (partitions, mut refused) = ctx.partitions_or_refused(&client, &args.topics).await?;
    let query = match args.at {
        At::Earliest => OffsetQuery::Earliest,
        At::Latest => OffsetQuery::Latest,
        At::MaxTimestamp => OffsetQuery::MaxTimestamp,
        At::Time(ms) => OffsetQuery::Timestamp(ms),
    };
    let isolation = args.isolation;
    let timeout = ctx.global.timeout;
    let (ranges, at) = tokio::join!(
        client.log_ranges(&partitions, timeout),
        client.list_offsets(&partitions, query, isolation, timeout)
    );
    let rows = merge(ranges, at, &mut refused)?;
    refused.sort();
    let principal = ctx.principal();
    // Authorized and refused rows in one order: by topic, a refused whole topic where its
    // partitions would be.
    let mut lines: Vec<(&str, Option<i32>, Line<'_>)> = rows
        .iter()
        .map(|(tp, row)| (&*tp.topic, Some(tp.partition), Line::Found(row)))
        .chain(refused.iter().map(|r| (r.topic.as_str(), r.partition, Line::Refused(r))))
        .collect();
    lines.sort_by_key(|(topic, partition, _)| (*topic, *partition));
    match ctx.format() {
        Format::Json => ctx.emit_json(json!({
            "at": args.at.to_string(),
            "isolation": args.isolation.to_string(),
            "partitions": lines.iter().map(|(topic, partition, line)| match line {
                Line::Found((range, at)) => json!({
                    "topic": topic,
                    "partition": partition,
                    "log_start": range.log_start,
                    "high_watermark": range.high_watermark,
                    "last_stable": range.last_stable,
                    "leader": range.leader,
                    "leader_epoch": range.leader_epoch,
                    "offset": at.offset,
                    "timestamp": at.timestamp,
                    "error": null,
                }),
                Line::Refused(r) => r.json_row(principal, &[
                    "log_start", "high_watermark", "last_stable", "leader", "leader_epoch", "offset", "timestamp",
                ]),
            }).collect::<Vec<_>>(),
        })),
        Format::Text => {
            let mut table = Table::new([
                "TOPIC",
                "PARTITION",
                "LOG_START",
                "HIGH_WATERMARK",
                "LAST_STABLE",
                "LEADER",
                "EPOCH",
                "OFFSET",
            ]);
            for (topic, partition, line) in &lines {
                match line {
                    Line::Found((range, at)) => table.row([
                        (*topic).to_owned(),
                        partition.map(|p| p.to_string()).unwrap_or_default(),
                        range.log_start.to_string(),
                        range.high_watermark.to_string(),
                        range.last_stable.to_string(),
                        range.leader.map_or_else(|| "none".to_owned(), |l| l.to_string()),
                        range.leader_epoch.map_or_else(|| "-".to_owned(), |e| e.to_string()),
                        at.offset.map_or_else(|| "none".to_owned(), |o| o.to_string()),
                    ]),
                    Line::Refused(r) => {
                        table.row_with_note([r.topic.clone(), r.partition_cell()], &r.marker(principal));
                    }
                }
            }
            outln!("offsets at {} ({})", args.at, args.isolation);
            out!("{}", table.render());
        }
    }
    if !refused.is_empty() {
        return Err(not_authorized::partial(&refused, rows.len()));
    }
    Ok(())
}

type Row = (LogRange, ListedOffset);

/// One row of the output: a partition's numbers, or what an ACL refused.
enum Line<'a> {
    Found(&'a Row),
    Refused(&'a Refusal),
}

/// Each partition's log range and listed offset; a partition an ACL refused in either answer
/// goes to `refused` instead, any other error fails the command.
fn merge(
    ranges: BTreeMap<TopicPartition, Result<LogRange, ClientError>>,
    mut at: BTreeMap<TopicPartition, Result<ListedOffset, ClientError>>,
    refused: &mut Vec<Refusal>,
) -> Result<BTreeMap<TopicPartition, Row>, Failure> {
    let mut rows = BTreeMap::new();
    for (tp, range) in ranges {
        let listed =
            at.remove(&tp).unwrap_or_else(|| Err(ClientError::UnknownTopic { topic: tp.topic.to_string() }));
        match (range, listed) {
            (Ok(range), Ok(listed)) => {
                rows.insert(tp, (range, listed));
            }
            (Err(e), _) | (_, Err(e)) => match Refusal::of(&tp.topic, Some(tp.partition), &e) {
                Some(r) => refused.push(r),
                None => return Err(Failure::client(&tp, &e)),
            },
        }
    }
    Ok(rows)
}
