//! `kwire migrate --group G --from STORE --to STORE [--execute]`: copy a group's offsets from
//! one store to another (ZooKeeper → Kafka is the common one). Shows the diff; writes only with
//! `--execute`, then reads back.

use kafka_wire::protocol::Uuid;
use kafka_wire::store::StoredOffset;
use serde_json::json;

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
    match ctx.format() {
        Format::Json => print_json(&json!({
            "group": args.group, "from": args.from.to_string(), "to": args.to.to_string(),
            "executed": args.execute,
            "partitions": diff.iter().map(|(tp, before, s)| json!({
                "topic": tp.topic, "partition": tp.partition, "before": before, "after": s.offset.0,
            })).collect::<Vec<_>>(),
        })),
        Format::Text => {
            let mut t = Table::new([
                "TOPIC",
                "PARTITION",
                &format!("IN {}", args.to),
                &format!("FROM {}", args.from),
                "",
            ]);
            for (tp, before, s) in &diff {
                t.row([
                    tp.topic.clone(),
                    tp.partition.to_string(),
                    before.map_or_else(|| "none".to_owned(), |b| b.to_string()),
                    s.offset.0.to_string(),
                    if *before == Some(s.offset.0) { String::new() } else { "changes".to_owned() },
                ]);
            }
            crate::output::emit(&t.render());
            if !args.execute {
                outln!("dry run: {changes} partition(s) would change (add --execute to write)");
            }
        }
    }
    if args.execute {
        let offsets: Vec<StoredOffset> = source
            .iter()
            .map(|(tp, s)| StoredOffset {
                topic: tp.topic.clone(),
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
        store::save(&args.to, ctx.store_access(&client), &args.group, &offsets, args.force).await?;
        progress.done();
        if ctx.format() == Format::Text {
            outln!("copied {} offset(s) to the {} store and read them back", offsets.len(), args.to);
        }
    }
    Ok(())
}
