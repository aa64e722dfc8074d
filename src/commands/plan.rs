//! `kwire plan`: the engine's plan for a group's next batch against the live cluster — per
//! partition `[from, until)`, the anomaly with its numbers, and the action the policies took.
//! Nothing is written. Exit code 3 when an anomaly met a `fail` policy.

use offset_engine::{plan, Limits, Outcome, PartitionInput, PlanRequest, TopicPartition};
use serde_json::json;

use super::group::{partition_rows_or_refused, GroupRows};
use super::not_authorized::{self, Refusal};
use super::Context;
use crate::anomaly_json::{action, anomaly, until_reason};
use crate::cli::{Format, FormatArg, OutOfRangeArg, PlanArgs, StartArg};
use crate::exit::{Exit, Failure};
use crate::output::{out, outln, Table};

pub async fn run(ctx: &Context, args: &PlanArgs) -> Result<(), Failure> {
    let Computed { plan: planned, refused } = compute(ctx, args).await?;
    let failed = planned.entries.iter().any(|e| matches!(e.outcome, Outcome::Failed { .. }));
    if ctx.global.format == FormatArg::Spark {
        if !refused.is_empty() {
            return Err(spark_not_authorized(&refused));
        }
        if failed {
            return Err(spark_refusal(&planned));
        }
        crate::output::print_json(&spark_json(&planned));
        return Ok(());
    }
    let principal = ctx.principal();
    match ctx.format() {
        Format::Json => ctx.emit_json(json(args, &planned, &refused, principal)),
        Format::Text => {
            let mut t = Table::new(["TOPIC", "PARTITION", "FROM", "UNTIL", "RECORDS", "ACTION", "ANOMALY"]);
            for line in lines(&planned, &refused) {
                let e = match line {
                    Line::Entry(e) => e,
                    Line::Refused(r) => {
                        t.row_with_note([r.topic.clone(), r.partition_cell()], &r.marker(principal));
                        continue;
                    }
                };
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
    if !refused.is_empty() {
        return Err(not_authorized(&planned, &refused));
    }
    if failed {
        return Err(anomaly_failure());
    }
    Ok(())
}

/// A plan and what the ACLs refused: the engine planned only the authorized partitions.
pub struct Computed {
    pub plan: offset_engine::Plan,
    /// Sorted; see [`GroupRows::refused`](super::group::GroupRows::refused).
    pub refused: Vec<Refusal>,
}

/// One line of a plan's listing: a planned partition or a refusal, by topic then partition.
enum Line<'a> {
    Entry(&'a offset_engine::PlanEntry),
    Refused(&'a Refusal),
}

fn lines<'a>(planned: &'a offset_engine::Plan, refused: &'a [Refusal]) -> Vec<Line<'a>> {
    let mut lines: Vec<(&str, Option<i32>, Line<'a>)> = planned
        .entries
        .iter()
        .map(|e| (&*e.tp.topic, Some(e.tp.partition), Line::Entry(e)))
        .chain(refused.iter().map(|r| (r.topic.as_str(), r.partition, Line::Refused(r))))
        .collect();
    lines.sort_by_key(|(topic, partition, _)| (*topic, *partition));
    lines.into_iter().map(|(_, _, line)| line).collect()
}

/// Exit 10 once a plan with refused partitions was shown; says when an anomaly also met a
/// `fail` policy among the authorized ones.
pub fn not_authorized(planned: &offset_engine::Plan, refused: &[Refusal]) -> Failure {
    let mut failure = not_authorized::partial(refused, planned.entries.len());
    if planned.failures().next().is_some() {
        failure.message.push_str("; an anomaly also met the `fail` policy (see the plan)");
    }
    failure
}

/// Why `--format spark` printed nothing when an ACL refused a partition (exit 10): a job must
/// not read a batch without them.
fn spark_not_authorized(refused: &[Refusal]) -> Failure {
    let mut failure = not_authorized::refused(refused);
    failure.message.push_str("; no Spark offsets printed (the batch would miss them)");
    failure
}

/// The failure of a plan an anomaly stopped, once the plan itself was shown (exit 3).
pub fn anomaly_failure() -> Failure {
    Failure::new(
        Exit::ANOMALY,
        "an anomaly met the `fail` policy (see the plan); choose --on-out-of-range or reset the offsets",
    )
}

/// The engine's plan for `args` against the live cluster, of the partitions the ACLs let this
/// principal see, and the refused ones (nothing printed, nothing written).
pub async fn compute(ctx: &Context, args: &PlanArgs) -> Result<Computed, Failure> {
    let client = ctx.client().await?;
    let isolation = args.isolation;
    let GroupRows { rows, refused } =
        partition_rows_or_refused(ctx, &client, &args.store, &args.group, Some(&args.topics), isolation)
            .await?;
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
    Ok(Computed { plan: plan(&request), refused })
}

/// `--format json`: the plan with, per partition, the range, the action and the anomaly, and
/// each refused topic or partition as a row with its `error` (null on the planned ones).
pub fn json(
    args: &PlanArgs,
    planned: &offset_engine::Plan,
    refused: &[Refusal],
    principal: &str,
) -> serde_json::Value {
    json!({
        "group": args.group,
        "store": args.store.to_string(),
        "isolation": args.isolation.to_string(),
        "records": planned.records,
        "partitions": lines(planned, refused).into_iter().map(|line| {
            let e = match line {
                Line::Entry(e) => e,
                Line::Refused(r) => return r.json_row(principal, &[
                    "from", "until", "records", "until_reason", "action", "anomaly", "lag", "consumable", "lost",
                ]),
            };
            let range = e.range();
            json!({
                "topic": &*e.tp.topic,
                "partition": e.tp.partition,
                "from": range.map(|r| r.from.0),
                "until": range.map(|r| r.until.0),
                "records": range.map(offset_engine::PlannedRange::records),
                "until_reason": range.map(|r| until_reason(r.until_reason)),
                "action": action(&e.outcome),
                "anomaly": e.anomaly.as_deref().map(anomaly),
                "lag": e.lag.lag(),
                "consumable": e.lag.consumable(),
                "lost": e.lag.lost(),
                "error": null,
            })
        }).collect::<Vec<_>>(),
    })
}

/// Why `--format spark` printed nothing (exit 3): each partition an anomaly stopped, and why.
pub fn spark_refusal(planned: &offset_engine::Plan) -> Failure {
    let failures: Vec<String> = planned
        .failures()
        .map(|e| {
            let why = e.anomaly.as_ref().map_or_else(|| action(&e.outcome), ToString::to_string);
            format!("{}:{}: {why}", crate::output::escape(&e.tp.topic), e.tp.partition)
        })
        .collect();
    Failure::new(
        Exit::ANOMALY,
        format!(
            "an anomaly met the `fail` policy, no Spark offsets printed; choose --on-out-of-range or reset the \
             offsets: {}",
            failures.join("; ")
        ),
    )
}

/// `--format spark`: the batch as the options of `spark.read.format("kafka")`, one JSON
/// document: `assign` (the planned partitions), `startingOffsets` and `endingOffsets` (Spark's
/// offset JSON, `[from, until)` per partition), and `records`. Spark's JSON objects are given as
/// objects; pass each to Spark as text (`json.dumps`). When an anomaly met a `fail` policy
/// nothing is printed on stdout (a job must not read part of a batch): the failure names each
/// failed partition, exit 3.
pub fn spark_json(planned: &offset_engine::Plan) -> serde_json::Value {
    let parse =
        |text: String| serde_json::from_str::<serde_json::Value>(&text).unwrap_or(serde_json::Value::Null);
    let mut assign: std::collections::BTreeMap<&str, Vec<i32>> = std::collections::BTreeMap::new();
    for e in planned.entries.iter().filter(|e| e.range().is_some()) {
        assign.entry(&e.tp.topic).or_default().push(e.tp.partition);
    }
    json!({
        "assign": assign,
        "startingOffsets": parse(offset_engine::formats::offsets_to_spark_json(&planned.starting_offsets())),
        "endingOffsets": parse(offset_engine::formats::offsets_to_spark_json(&planned.ending_offsets())),
        "records": planned.records,
    })
}
