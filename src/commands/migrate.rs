//! `kwire migrate --group G --from STORE --to STORE [--execute]`: copy a group's offsets from
//! one store to another (ZooKeeper → Kafka is the common one). Shows the diff; writes only with
//! `--execute`, then reads back, and lists each partition as written or refused.

use kafka_wire::protocol::Uuid;
use offset_store::StoredOffset;
use serde_json::json;

use super::written::WriteReport;
use super::Context;
use crate::cli::{Format, MigrateArgs};
use crate::exit::{Exit, Failure};
use crate::output::{outln, print_json, Progress, Table};
use crate::store;

pub async fn run(ctx: &Context, args: &MigrateArgs) -> Result<(), Failure> {
    if args.from == args.to {
        return Err(Failure::new(Exit::USAGE, format!("--from and --to are the same store ({})", args.from)));
    }
    let client = ctx.client().await?;
    let topics = (!args.topics.is_empty()).then_some(args.topics.as_slice());
    let progress = Progress::new();
    progress.say(&format!("reading group {} from the {} store", args.group, args.from));
    let source = store::load(&args.from, ctx.store_access(&client), &args.group, topics).await?;
    if source.is_empty() {
        return Err(Failure::new(
            Exit::NOT_FOUND,
            format!("group `{}` has no offsets in the {} store", args.group, args.from),
        ));
    }
    progress.say(&format!("read {} offset(s); reading the {} store", source.len(), args.to));
    let target = store::load(&args.to, ctx.store_access(&client), &args.group, topics).await?;
    progress.done();
    let diff: Vec<_> = source.iter().map(|(tp, s)| (tp, target.get(tp).map(|t| t.offset.0), s)).collect();
    let changes = diff.iter().filter(|(_, before, s)| *before != Some(s.offset.0)).count();
    let (report, failure) = if args.execute {
        let offsets: Vec<StoredOffset> = source
            .iter()
            .map(|(tp, s)| StoredOffset {
                topic: tp.topic.to_string(),
                partition: tp.partition,
                offset: s.offset.0,
                leader_epoch: s.leader_epoch.map(|e| e.0),
                topic_id: s.topic_id.map(|id| Uuid(id.0)),
                commit_timestamp_ms: s.commit_timestamp_ms.or(Some(crate::time::now_ms())),
            })
            .collect();
        progress.say(&format!(
            "writing {} offset(s) to the {} store and reading them back",
            offsets.len(),
            args.to
        ));
        let saved = store::save(&args.to, ctx.store_access(&client), &args.group, &offsets, args.force).await;
        progress.done();
        WriteReport::of(saved)
    } else {
        (WriteReport::DryRun, None)
    };
    match ctx.format() {
        Format::Json => print_json(&json!({
            "group": args.group, "from": args.from.to_string(), "to": args.to.to_string(),
            "executed": report.wrote(),
            "partitions": diff.iter().map(|(tp, before, s)| {
                let (status, error) = report.json(tp);
                json!({
                    "topic": tp.topic, "partition": tp.partition, "before": before, "after": s.offset.0,
                    "status": status, "error": error,
                })
            }).collect::<Vec<_>>(),
        })),
        Format::Text => {
            let in_to = format!("IN {}", args.to);
            let from = format!("FROM {}", args.from);
            let mut header = vec!["TOPIC", "PARTITION", in_to.as_str(), from.as_str(), ""];
            if report.has_status() {
                header.push("STATUS");
            }
            let mut t = Table::new(header);
            for (tp, before, s) in &diff {
                let mut row = vec![
                    tp.topic.to_string(),
                    tp.partition.to_string(),
                    before.map_or_else(|| "none".to_owned(), |b| b.to_string()),
                    s.offset.0.to_string(),
                    if *before == Some(s.offset.0) { String::new() } else { "changes".to_owned() },
                ];
                if report.has_status() {
                    row.push(report.cell(tp));
                }
                t.row(row);
            }
            crate::output::emit(&t.render());
            match &report {
                WriteReport::DryRun => {
                    outln!("dry run: {changes} partition(s) would change (add --execute to write)");
                }
                WriteReport::All => {
                    outln!("copied {} offset(s) to the {} store and read them back", diff.len(), args.to);
                }
                WriteReport::Partly { .. } | WriteReport::Failed => {}
            }
        }
    }
    failure.map_or(Ok(()), Err)
}
