//! `kwire group check GROUP`: samples the group over a short window, classifies every
//! partition with the engine's health rules, and prints one line with the worst state, in the
//! monitoring-plugin convention (exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN).

use std::collections::BTreeMap;

use kafka_client::TopicPartition;
use offset_engine::{evaluate_health, Health, HealthConfig, HealthFacts, Lag, LogState, Sample};
use serde_json::json;

use super::group::{partition_rows, PartitionRow};
use super::time_lag::{first_unconsumed_timestamps, format_ms, sample_of, time_numbers};
use super::Context;
use crate::cli::{Format, GroupCheckArgs, TimeLagArg};
use crate::exit::{CheckStatus, Exit, Failure};
use crate::output::{outln, print_json};

/// One partition's verdict.
struct Verdict {
    tp: TopicPartition,
    health: Option<Health>,
    lag: Option<i64>,
    time_lag_ms: Option<u64>,
}

/// The plugin status a partition's health makes.
fn status_of(health: Option<Health>) -> CheckStatus {
    match health {
        None => CheckStatus::Unknown,
        Some(Health::Ok) => CheckStatus::Ok,
        // A rewind is worth a look but is usually a deliberate reset.
        Some(Health::Warn | Health::Rewind) => CheckStatus::Warning,
        Some(Health::Stall | Health::Stop | Health::Lost | Health::Anomaly) => CheckStatus::Critical,
    }
}

/// Whether the row shows an anomaly the engine names: a position ahead of the log (negative
/// lag: offset ahead of the log or truncated), stored for another incarnation of the topic, or
/// for a partition or topic that is gone.
fn anomaly(row: &PartitionRow) -> bool {
    row.stored.is_some()
        && match row.lag {
            Lag::Committed { lag, .. } => lag < 0,
            Lag::NothingCommitted { .. } | Lag::Unknown => true,
        }
}

pub async fn run(ctx: &Context, args: &GroupCheckArgs) -> Result<(), Failure> {
    match check(ctx, args).await {
        Ok(()) => Ok(()),
        Err(f) if f.message.is_empty() => Err(f),
        Err(f) => {
            // Anything that kept the check from running is UNKNOWN, said on stdout.
            report(ctx, args, CheckStatus::Unknown, &f.message, &[], None);
            Err(Failure::exit_only(CheckStatus::Unknown.exit()))
        }
    }
}

async fn check(ctx: &Context, args: &GroupCheckArgs) -> Result<(), Failure> {
    let client = ctx.client().await?;
    let isolation = args.isolation;
    let topics = (!args.topics.is_empty()).then_some(args.topics.as_slice());
    let mut windows: BTreeMap<TopicPartition, Vec<Sample>> = BTreeMap::new();
    let mut rows = Vec::new();
    for i in 0..args.samples {
        if i > 0 {
            tokio::time::sleep(args.interval).await;
        }
        rows = partition_rows(ctx, &client, &args.store, &args.group, topics, isolation).await?;
        let at = crate::time::now_ms();
        for r in &rows {
            if let Some(s) = sample_of(r, isolation, at) {
                windows.entry(r.tp.clone()).or_default().push(s);
            }
        }
    }
    if rows.iter().all(|r| r.committed().is_none()) {
        return Err(Failure::new(
            Exit::NOT_FOUND,
            format!("group `{}` has no offsets in the {} store", args.group, args.store),
        ));
    }
    let timestamps = first_unconsumed_timestamps(&client, &rows, isolation, ctx.global.timeout).await;
    let now = crate::time::now_ms();
    let config =
        HealthConfig { stop_after_ms: u64::try_from(args.stop_after.as_millis()).unwrap_or(u64::MAX) };
    let verdicts: Vec<Verdict> = rows
        .iter()
        .filter(|r| r.stored.is_some())
        .map(|r| {
            let window = windows.get(&r.tp).map(Vec::as_slice).unwrap_or_default();
            let log_start = match &r.log {
                LogState::Found(v) => v.log_start.0,
                _ => 0,
            };
            let facts =
                HealthFacts { log_start, anomaly: anomaly(r), last_commit_ms: r.commit_timestamp_ms() };
            let time = time_numbers(TimeLagArg::Fetch, r, isolation, now, &timestamps, &[]);
            Verdict {
                tp: r.tp.clone(),
                health: evaluate_health(window, facts, now, config),
                lag: r.lag.lag(),
                time_lag_ms: time.time_lag.ms(),
            }
        })
        .collect();

    let total_lag: i64 = verdicts.iter().filter_map(|v| v.lag).filter(|l| *l > 0).sum();
    let max_time_lag = verdicts.iter().filter_map(|v| v.time_lag_ms).max();
    let mut status = verdicts.iter().map(|v| status_of(v.health)).max().unwrap_or(CheckStatus::Unknown);
    let mut reasons = Vec::new();
    if let Some(max) = args.max_lag {
        if u64::try_from(total_lag).is_ok_and(|l| l > max) {
            status = status.max(CheckStatus::Critical);
            reasons.push(format!("lag {total_lag} > {max}"));
        }
    }
    if let (Some(max), Some(worst)) = (args.max_time_lag, max_time_lag) {
        if u128::from(worst) > max.as_millis() {
            status = status.max(CheckStatus::Critical);
            reasons.push(format!("time lag {} > {}", format_ms(worst), format_ms(max.as_millis() as u64)));
        }
    }
    let mut counts: BTreeMap<Health, Vec<String>> = BTreeMap::new();
    for v in &verdicts {
        if let Some(h) = v.health {
            counts.entry(h).or_default().push(v.tp.to_string());
        }
    }
    let mut states: Vec<String> = Vec::new();
    for (h, tps) in counts.iter().rev() {
        if *h == Health::Ok {
            states.push(format!("OK {}", tps.len()));
        } else {
            let shown: Vec<&str> = tps.iter().take(3).map(String::as_str).collect();
            let more = if tps.len() > 3 { format!(" +{}", tps.len() - 3) } else { String::new() };
            states.push(format!("{} {} ({}{more})", h.as_str(), tps.len(), shown.join(", ")));
        }
    }
    let time_lag = max_time_lag.map_or_else(|| "unknown".to_owned(), format_ms);
    let mut summary = format!(
        "group {}: {} partitions: {}; lag {total_lag}, max time lag {time_lag}",
        args.group,
        verdicts.len(),
        states.join(", ")
    );
    if !reasons.is_empty() {
        summary = format!("{summary}; {}", reasons.join(", "));
    }
    let perf = format!(
        "lag={total_lag};;{} time_lag_ms={}",
        args.max_lag.map(|m| m.to_string()).unwrap_or_default(),
        max_time_lag.map(|t| t.to_string()).unwrap_or_default()
    );
    report(ctx, args, status, &summary, &verdicts, Some((&perf, total_lag, max_time_lag)));
    match status {
        CheckStatus::Ok => Ok(()),
        s => Err(Failure::exit_only(s.exit())),
    }
}

/// The one line (text) or one document (JSON).
fn report(
    ctx: &Context,
    args: &GroupCheckArgs,
    status: CheckStatus,
    summary: &str,
    verdicts: &[Verdict],
    numbers: Option<(&str, i64, Option<u64>)>,
) {
    match ctx.format() {
        Format::Json => print_json(&json!({
            "group": args.group,
            "store": args.store.to_string(),
            "status": status.as_str(),
            "exit": status.exit().value(),
            "summary": summary,
            "samples": args.samples,
            "interval_ms": u64::try_from(args.interval.as_millis()).unwrap_or(u64::MAX),
            "lag": numbers.map(|n| n.1),
            "time_lag_ms": numbers.and_then(|n| n.2),
            "partitions": verdicts.iter().map(|v| json!({
                "topic": v.tp.topic,
                "partition": v.tp.partition,
                "health": v.health.map(|h| h.as_str()),
                "lag": v.lag,
                "time_lag_ms": v.time_lag_ms,
            })).collect::<Vec<_>>(),
        })),
        Format::Text => match numbers {
            Some((perf, ..)) => outln!("{} - {summary} | {perf}", status.as_str()),
            None => outln!("{} - {summary}", status.as_str()),
        },
    }
}
