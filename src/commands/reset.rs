//! `kwire reset` and `kwire commit`: write a group's offsets — planned with
//! kafka-consumer-groups semantics and shown before/after/lag as a dry run unless `--execute`,
//! then written and read back. Nothing is written unless every partition's target is valid; a
//! store that takes only some partitions (Kafka's coordinator answers per partition) is reported
//! partition by partition, exit 7.

use std::collections::BTreeMap;

use kafka_client::{Isolation as WireIsolation, OffsetQuery, TopicPartition as WireTp};
use kafka_wire::protocol::Uuid;
use offset_engine::formats::{from_csv, to_csv};
use offset_engine::policy::timestamp_before;
use offset_engine::{
    plan_reset, LogState, Offset, ResetInput, ResetReason, ResetTarget, TimeLookup, TopicPartition,
};
use offset_store::StoredOffset;
use serde_json::json;

use super::group::{partition_rows_or_refused, PartitionRow};
use super::not_authorized;
use super::written::WriteReport;
use super::Context;
use crate::cli::{CommitArgs, Format, ResetArgs, ResetTo};
use crate::exit::{Exit, Failure};
use crate::output::{out, outln, print_json, Table};
use crate::store;

pub async fn reset(ctx: &Context, args: &ResetArgs) -> Result<(), Failure> {
    let client = ctx.client().await?;
    let isolation = args.isolation;
    let rows = writable_rows(ctx, &client, &args.store, &args.group, &args.topics, isolation).await?;
    let now = crate::time::now_ms();
    let (target, lookups, file) = match &args.to {
        ResetTo::Earliest => (ResetTarget::Earliest, None, None),
        ResetTo::Latest => (ResetTarget::Latest, None, None),
        ResetTo::Current => (ResetTarget::Current, None, None),
        ResetTo::Offset(n) => (ResetTarget::Offset(Offset(*n)), None, None),
        ResetTo::Shift(n) => (ResetTarget::ShiftBy(*n), None, None),
        ResetTo::Datetime(ms) => (
            ResetTarget::Timestamp { timestamp_ms: *ms },
            Some(resolve(ctx, &client, &rows, *ms).await?),
            None,
        ),
        ResetTo::Duration(ms) => {
            let at = timestamp_before(now, *ms).map_err(|e| Failure::new(Exit::USAGE, e.to_string()))?;
            (ResetTarget::Duration { duration_ms: *ms }, Some(resolve(ctx, &client, &rows, at).await?), None)
        }
        ResetTo::File(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::new(Exit::USAGE, format!("cannot read {}: {e}", path.display())))?;
            let entries =
                from_csv(&text).map_err(|e| Failure::new(Exit::USAGE, format!("{}: {e}", path.display())))?;
            let (map, skipped) = split_csv_rows(entries, &args.topics, &rows);
            if !skipped.is_empty() && !args.skip_unknown {
                return Err(csv_rows_refused(path, &skipped));
            }
            (ResetTarget::FromFile, None, Some((map, skipped)))
        }
    };
    let skipped: &[SkippedRow] = file.as_ref().map_or(&[], |(_, s)| s.as_slice());
    let file = file.as_ref().map(|(map, _)| map);
    let inputs: Vec<ResetInput> = rows
        .iter()
        .map(|r| {
            let mut input = ResetInput::new(engine_tp(&r.tp), r.stored, r.log);
            input.time_lookup = lookups.as_ref().and_then(|l| l.get(&r.tp).copied());
            input.file_offset =
                file.as_ref().and_then(|f| f.get(&(r.tp.topic.to_string(), r.tp.partition)).copied());
            input
        })
        .collect();
    let entries = plan_reset(target, isolation, &inputs);
    let errors: Vec<String> = entries
        .iter()
        .filter_map(|e| {
            e.outcome.as_ref().err().map(|err| format!("{}-{}: {err}", e.tp.topic, e.tp.partition))
        })
        .collect();
    let planned: Vec<(WireTp, Option<Offset>, Offset, ResetReason, offset_engine::Lag)> = entries
        .iter()
        .filter_map(|e| {
            let to = e.outcome.as_ref().ok()?;
            Some((
                WireTp::new(e.tp.topic.to_string(), e.tp.partition),
                e.before,
                to.offset,
                to.reason,
                to.lag,
            ))
        })
        .collect();

    let (report, failure) = if args.execute && errors.is_empty() {
        let unreadable = unreadable(&client, &args.store, &args.topics).await?;
        if !unreadable.is_empty() {
            return Err(not_authorized::nothing_written(&unreadable));
        }
        let offsets = to_store(&rows, planned.iter().map(|(tp, _, to, _, _)| (tp.clone(), to.0)), now);
        WriteReport::of(
            store::save(&args.store, ctx.store_access(&client), &args.group, &offsets, args.force).await,
        )
    } else {
        (WriteReport::DryRun, None)
    };

    if args.export {
        let csv: Vec<(TopicPartition, Offset)> =
            planned.iter().map(|(tp, _, to, _, _)| (engine_tp(tp), *to)).collect();
        out!("{}", to_csv(&csv));
        for row in skipped {
            eprintln!("kwire: {}", crate::output::escape(&row.to_string()));
        }
    } else {
        match ctx.format() {
            Format::Json => print_json(&json!({
                "group": args.group,
                "store": args.store.to_string(),
                "executed": report.wrote(),
                "partitions": planned.iter().map(|(tp, before, to, reason, lag)| {
                    let (status, error) = report.json(tp);
                    json!({
                        "topic": tp.topic, "partition": tp.partition,
                        "before": before.map(|b| b.0), "after": to.0,
                        "reason": reason_text(reason), "lag": lag.lag(),
                        "status": status, "error": error,
                    })
                }).collect::<Vec<_>>(),
                "skipped": skipped.iter().map(|row| json!({
                    "topic": row.topic, "partition": row.partition, "offset": row.offset, "reason": row.reason,
                })).collect::<Vec<_>>(),
                "errors": errors,
            })),
            Format::Text => {
                let mut header = vec!["TOPIC", "PARTITION", "BEFORE", "AFTER", "LAG_AFTER", "NOTE"];
                if report.has_status() {
                    header.push("STATUS");
                }
                let mut t = Table::new(header);
                for (tp, before, to, reason, lag) in &planned {
                    let mut row = vec![
                        tp.topic.to_string(),
                        tp.partition.to_string(),
                        before.map_or_else(|| "none".to_owned(), |b| b.0.to_string()),
                        to.0.to_string(),
                        lag.lag().map(|l| l.to_string()).unwrap_or_default(),
                        reason_text(reason),
                    ];
                    if report.has_status() {
                        row.push(report.cell(tp));
                    }
                    t.row(row);
                }
                out!("{}", t.render());
                for row in skipped {
                    outln!("{row}");
                }
                match report {
                    WriteReport::DryRun if errors.is_empty() => {
                        outln!("dry run: nothing written (add --execute to write)");
                    }
                    WriteReport::All => outln!("written to the {} store and read back", args.store),
                    _ => {}
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(Failure::new(Exit::REFUSED, format!("nothing written: {}", errors.join("; "))));
    }
    failure.map_or(Ok(()), Err)
}

/// The rows of every partition of `topics` a write covers; NOT_AUTHORIZED naming every topic
/// and partition an ACL refused, before anything is planned or written (a write that skipped
/// them would look complete).
async fn writable_rows(
    ctx: &Context,
    client: &std::sync::Arc<kafka_client::Client>,
    store: &crate::store::StoreSpec,
    group: &str,
    topics: &[String],
    isolation: offset_engine::Isolation,
) -> Result<Vec<PartitionRow>, Failure> {
    let rows = partition_rows_or_refused(ctx, client, store, group, Some(topics), isolation).await?;
    if !rows.refused.is_empty() {
        return Err(not_authorized::nothing_written(&rows.refused));
    }
    Ok(rows.rows)
}

/// The `topics` whose offsets Kafka's coordinator would refuse to commit: it takes the
/// partitions of the topics the principal may READ and refuses the others one by one (a partial
/// write), so the topics it may describe but not read are found before anything is sent
/// (KIP-430). Other stores do not check Kafka's ACLs; a broker that does not say (before 2.3)
/// leaves it to the coordinator.
async fn unreadable(
    client: &kafka_client::Client,
    store: &crate::store::StoreSpec,
    topics: &[String],
) -> Result<Vec<not_authorized::Refusal>, Failure> {
    if *store != crate::store::StoreSpec::Kafka {
        return Ok(Vec::new());
    }
    let operations = client.topic_authorized_operations(topics).await?;
    Ok(operations
        .into_iter()
        .filter(|(_, ops)| ops.is_some_and(|o| !o.allows_read()))
        .map(|(topic, _)| not_authorized::Refusal {
            topic,
            partition: None,
            code: kafka_wire::protocol::ErrorCode::TOPIC_AUTHORIZATION_FAILED,
        })
        .collect())
}

/// A row of a `--to file:CSV` that names no partition the reset covers.
#[derive(Debug)]
struct SkippedRow {
    topic: String,
    partition: i32,
    offset: i64,
    reason: String,
    /// The topic is not named in `--topic` (else: the partition does not exist).
    foreign: bool,
}

impl std::fmt::Display for SkippedRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "skipped CSV row {},{},{}: {}", self.topic, self.partition, self.offset, self.reason)
    }
}

/// Splits a CSV's rows into the offsets for partitions the reset covers (a topic named in
/// `--topic`, a partition that exists) and the rows that do not apply, each with its reason.
fn split_csv_rows(
    entries: Vec<(TopicPartition, Offset)>,
    topics: &[String],
    rows: &[PartitionRow],
) -> (BTreeMap<(String, i32), Offset>, Vec<SkippedRow>) {
    let found: std::collections::HashSet<(&str, i32)> = rows
        .iter()
        .filter(|r| matches!(r.log, LogState::Found(_)))
        .map(|r| (&*r.tp.topic, r.tp.partition))
        .collect();
    let mut map = BTreeMap::new();
    let mut skipped = Vec::new();
    for (tp, offset) in entries {
        let (topic, partition) = (tp.topic.to_string(), tp.partition);
        let exists = found.contains(&(topic.as_str(), partition));
        let foreign = !topics.contains(&topic);
        if foreign || !exists {
            let reason = if foreign {
                format!("topic `{topic}` is not named in --topic")
            } else {
                format!("partition {partition} of `{topic}` does not exist")
            };
            skipped.push(SkippedRow { topic, partition, offset: offset.0, reason, foreign });
        } else {
            map.insert((topic, partition), offset);
        }
    }
    (map, skipped)
}

/// The failure for CSV rows that do not apply, without `--skip-unknown`: nothing is written.
/// A row for a topic not named in `--topic` is a usage error; rows that only name partitions
/// that do not exist are "not found".
fn csv_rows_refused(path: &std::path::Path, skipped: &[SkippedRow]) -> Failure {
    let exit = if skipped.iter().any(|r| r.foreign) { Exit::USAGE } else { Exit::NOT_FOUND };
    let rows: Vec<String> =
        skipped.iter().map(|r| format!("{},{},{} ({})", r.topic, r.partition, r.offset, r.reason)).collect();
    Failure::new(
        exit,
        format!(
            "{}: {} row(s) do not apply, nothing written (pass --skip-unknown to skip them): {}",
            path.display(),
            skipped.len(),
            rows.join("; ")
        ),
    )
}

pub async fn commit(ctx: &Context, args: &CommitArgs) -> Result<(), Failure> {
    let client = ctx.client().await?;
    let mut topics: Vec<String> = args.offsets.iter().map(|(tp, _)| tp.topic.to_string()).collect();
    topics.sort();
    topics.dedup();
    let rows = writable_rows(
        ctx,
        &client,
        &args.store,
        &args.group,
        &topics,
        offset_engine::Isolation::ReadUncommitted,
    )
    .await?;
    let mut problems = Vec::new();
    for (tp, offset) in &args.offsets {
        match rows.iter().find(|r| &r.tp == tp).map(|r| &r.log) {
            Some(LogState::Found(v))
                if (*offset < v.log_start.0 || *offset > v.high_watermark.0) && !args.force =>
            {
                problems.push(format!(
                    "{tp}: offset {offset} is outside the log [{}, {}] (pass --force to write it anyway)",
                    v.log_start.0, v.high_watermark.0
                ));
            }
            Some(LogState::Found(_)) => {}
            Some(LogState::TopicNotFound) | None if !rows.iter().any(|r| r.tp.topic == tp.topic) => {
                return Err(Failure::new(Exit::NOT_FOUND, format!("unknown topic `{}`", tp.topic)));
            }
            _ => return Err(Failure::new(Exit::NOT_FOUND, format!("unknown partition {tp}"))),
        }
    }
    if !problems.is_empty() {
        return Err(Failure::new(Exit::REFUSED, format!("nothing written: {}", problems.join("; "))));
    }
    let unreadable = unreadable(&client, &args.store, &topics).await?;
    if !unreadable.is_empty() {
        return Err(not_authorized::nothing_written(&unreadable));
    }
    let offsets = to_store(&rows, args.offsets.iter().cloned(), crate::time::now_ms());
    let (report, failure) = WriteReport::of(
        store::save(&args.store, ctx.store_access(&client), &args.group, &offsets, args.force).await,
    );
    if let WriteReport::Failed = report {
        // Nothing was written; the failure says why.
        return failure.map_or(Ok(()), Err);
    }
    match ctx.format() {
        Format::Json => ctx.emit_json(json!({
            "group": args.group, "store": args.store.to_string(),
            "committed": args.offsets.iter().map(|(tp, o)| {
                let (status, error) = report.json(tp);
                json!({ "topic": tp.topic, "partition": tp.partition, "committed": o, "status": status, "error": error })
            }).collect::<Vec<_>>(),
        })),
        Format::Text => match report {
            WriteReport::All => outln!(
                "committed {} offset(s) for group {} in the {} store",
                args.offsets.len(),
                args.group,
                args.store
            ),
            _ => {
                let mut t = Table::new(["TOPIC", "PARTITION", "OFFSET", "STATUS"]);
                for (tp, o) in &args.offsets {
                    t.row([tp.topic.to_string(), tp.partition.to_string(), o.to_string(), report.cell(tp)]);
                }
                out!("{}", t.render());
            }
        },
    }
    failure.map_or(Ok(()), Err)
}

/// Store entries for `offsets`, carrying each partition's live topic id so a later
/// recreation of the topic is recognised.
fn to_store(
    rows: &[PartitionRow],
    offsets: impl Iterator<Item = (WireTp, i64)>,
    now: i64,
) -> Vec<StoredOffset> {
    offsets
        .map(|(tp, offset)| {
            let topic_id = rows.iter().find(|r| r.tp == tp).and_then(|r| match &r.log {
                LogState::Found(v) => v.topic_id.map(|id| Uuid(id.0)),
                _ => None,
            });
            StoredOffset {
                topic: tp.topic.to_string(),
                partition: tp.partition,
                offset,
                leader_epoch: None,
                topic_id,
                commit_timestamp_ms: Some(now),
            }
        })
        .collect()
}

/// The first offset at or after `at_ms` per partition, from the leaders.
async fn resolve(
    ctx: &Context,
    client: &kafka_client::Client,
    rows: &[PartitionRow],
    at_ms: i64,
) -> Result<BTreeMap<WireTp, TimeLookup>, Failure> {
    let tps: Vec<WireTp> =
        rows.iter().filter(|r| matches!(r.log, LogState::Found(_))).map(|r| r.tp.clone()).collect();
    let found = client
        .list_offsets(&tps, OffsetQuery::Timestamp(at_ms), WireIsolation::ReadUncommitted, ctx.global.timeout)
        .await;
    let mut out = BTreeMap::new();
    for (tp, result) in found {
        let listed = result.map_err(|e| Failure::client(&tp, &e))?;
        out.insert(tp, listed.offset.map_or(TimeLookup::NoRecordAtOrAfter, TimeLookup::from_wire));
    }
    Ok(out)
}

fn engine_tp(tp: &WireTp) -> TopicPartition {
    TopicPartition::new(&*tp.topic, tp.partition)
}

fn reason_text(reason: &ResetReason) -> String {
    match reason {
        ResetReason::AsRequested => String::new(),
        ResetReason::ClampedToLogStart { requested } => {
            format!("{requested} is below the log start: clamped")
        }
        ResetReason::ClampedToEnd { requested } => format!("{requested} is past the end: clamped"),
        ResetReason::NoRecordAtOrAfterTimestamp => "no record at or after the time: end".to_owned(),
    }
}
