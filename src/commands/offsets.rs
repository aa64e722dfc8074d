//! `kwire offsets TOPIC... [--at earliest|latest|max-timestamp|<millis>|<RFC 3339>]` — per
//! partition the log range (log start, high watermark, last stable offset), the leader and its
//! epoch, and the offset for the requested point.

use std::collections::BTreeMap;

use kafka_wire::client::{ClientError, ListedOffset, LogRange, OffsetQuery, TopicPartition};
use serde_json::json;

use super::Context;
use crate::cli::{At, Format, OffsetsArgs};
use crate::exit::Failure;
use crate::output::{out, outln, Table};

pub async fn run(ctx: &Context, args: &OffsetsArgs) -> Result<(), Failure> {
    let client = ctx.client().await?;
    let partitions = ctx.partitions_of(&client, &args.topics).await?;
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
    let rows = merge(ranges, at)?;
    match ctx.format() {
        Format::Json => ctx.emit_json(json!({
            "at": args.at.to_string(),
            "isolation": args.isolation.to_string(),
            "partitions": rows.iter().map(|(tp, (range, at))| json!({
                "topic": tp.topic,
                "partition": tp.partition,
                "log_start": range.log_start,
                "high_watermark": range.high_watermark,
                "last_stable": range.last_stable,
                "leader": range.leader,
                "leader_epoch": range.leader_epoch,
                "offset": at.offset,
                "timestamp": at.timestamp,
            })).collect::<Vec<_>>(),
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
            for (tp, (range, at)) in &rows {
                table.row([
                    tp.topic.to_string(),
                    tp.partition.to_string(),
                    range.log_start.to_string(),
                    range.high_watermark.to_string(),
                    range.last_stable.to_string(),
                    range.leader.map_or_else(|| "none".to_owned(), |l| l.to_string()),
                    range.leader_epoch.map_or_else(|| "-".to_owned(), |e| e.to_string()),
                    at.offset.map_or_else(|| "none".to_owned(), |o| o.to_string()),
                ]);
            }
            outln!("offsets at {} ({})", args.at, args.isolation);
            out!("{}", table.render());
        }
    }
    Ok(())
}

type Row = (LogRange, ListedOffset);

fn merge(
    ranges: BTreeMap<TopicPartition, Result<LogRange, ClientError>>,
    mut at: BTreeMap<TopicPartition, Result<ListedOffset, ClientError>>,
) -> Result<BTreeMap<TopicPartition, Row>, Failure> {
    let mut rows = BTreeMap::new();
    for (tp, range) in ranges {
        let range = range.map_err(|e| Failure::client(&tp, &e))?;
        let listed = at
            .remove(&tp)
            .unwrap_or_else(|| Err(ClientError::UnknownTopic { topic: tp.topic.to_string() }))
            .map_err(|e| Failure::client(&tp, &e))?;
        rows.insert(tp, (range, listed));
    }
    Ok(rows)
}
