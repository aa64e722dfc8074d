//! `kwire plan`: the engine's plan for a group's next batch against the live cluster — per
//! partition `[from, until)`, the anomaly with its numbers, and the action the policies took.
//! Nothing is written. Exit code 3 when an anomaly met a `fail` policy.

use offset_engine::{plan, Limits, Outcome, PartitionInput, PlanRequest, TopicPartition};
use serde_json::json;

use super::group::partition_rows;
use super::Context;
use crate::anomaly_json::{action, anomaly, until_reason};
use crate::cli::{Format, OutOfRangeArg, PlanArgs, StartArg};
use crate::exit::{Exit, Failure};
use crate::output::{out, outln, print_json, Table};

pub async fn run(ctx: &Context, args: &PlanArgs) -> Result<(), Failure> {
    let client = ctx.client().await?;
    let isolation = args.isolation;
    let rows = partition_rows(ctx, &client, &args.store, &args.group, Some(&args.topics), isolation).await?;
    let request = PlanRequest {
        start: match args.start {
            StartArg::Earliest => offset_engine::StartPolicy::Earliest,
            StartArg::Latest => offset_engine::StartPolicy::Latest,
            StartArg::Fail => offset_engine::StartPolicy::Fail,
        },
        out_of_range: match args.on_out_of_range {
            OutOfRangeArg::Fail => offset_engine::OutOfRangePolicy::Fail,
            OutOfRangeArg::Earliest => offset_engine::OutOfRangePolicy::Earliest,
            OutOfRangeArg::Latest => offset_engine::OutOfRangePolicy::Latest,
            OutOfRangeArg::Clamp => offset_engine::OutOfRangePolicy::Clamp,
        },
        isolation,
        limits: Limits {
            max_per_partition: args.max_per_partition,
            max_per_batch: args.max_total,
            time_budget: None,
        },
        carry: offset_engine::RateCarry::default(),
        partitions: rows
            .into_iter()
            .map(|r| PartitionInput::new(TopicPartition::new(&*r.tp.topic, r.tp.partition), r.stored, r.log))
            .collect(),
    };
    let planned = plan(&request);
    let failed = planned.entries.iter().any(|e| matches!(e.outcome, Outcome::Failed { .. }));
    match ctx.format() {
        Format::Json => print_json(&json!({
            "group": args.group,
            "store": args.store.to_string(),
            "isolation": args.isolation.to_string(),
            "records": planned.records,
            "partitions": planned.entries.iter().map(|e| {
                let range = e.range();
                json!({
                    "topic": &*e.tp.topic,
                    "partition": e.tp.partition,
                    "from": range.map(|r| r.from.0),
                    "until": range.map(|r| r.until.0),
                    "records": range.map(offset_engine::PlannedRange::records),
                    "until_reason": range.map(|r| until_reason(r.until_reason)),
                    "action": action(&e.outcome),
                    "anomaly": e.anomaly.as_ref().map(anomaly),
                    "lag": e.lag.lag(),
                    "consumable": e.lag.consumable(),
                    "lost": e.lag.lost(),
                })
            }).collect::<Vec<_>>(),
        })),
        Format::Text => {
            let mut t = Table::new(["TOPIC", "PARTITION", "FROM", "UNTIL", "RECORDS", "ACTION", "ANOMALY"]);
            for e in &planned.entries {
                let range = e.range();
                t.row([
                    e.tp.topic.to_string(),
                    e.tp.partition.to_string(),
                    range.map(|r| r.from.0.to_string()).unwrap_or_default(),
                    range.map(|r| r.until.0.to_string()).unwrap_or_default(),
                    range.map(|r| r.records().to_string()).unwrap_or_default(),
                    action(&e.outcome),
                    e.anomaly.as_ref().map(ToString::to_string).unwrap_or_default(),
                ]);
            }
            outln!("plan for group {} ({} store, {})", args.group, args.store, args.isolation);
            out!("{}", t.render());
            outln!("{} records in the batch", planned.records);
        }
    }
    if failed {
        return Err(Failure::new(
            Exit::ANOMALY,
            "an anomaly met the `fail` policy (see the plan); choose --on-out-of-range or reset the offsets",
        ));
    }
    Ok(())
}
