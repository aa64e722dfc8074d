//! The engine's anomalies and outcomes as JSON: `kind` plus the numbers, field names the same
//! as in the engine and the README.

use offset_engine::{Anomaly, FromReason, Outcome, SkipReason, UntilReason};
use serde_json::{json, Value};

pub fn anomaly(a: &Anomaly) -> Value {
    let mut v = match a {
        Anomaly::TopicRecreated { stored_topic_id, topic_id, stored, log_start, end, skipped } => json!({
            "stored_topic_id": stored_topic_id.to_string(), "topic_id": topic_id.to_string(),
            "stored": stored.0, "log_start": log_start.0, "end": end.0, "skipped": skipped,
        }),
        Anomaly::LeaderEpochBackwards {
            stored,
            stored_leader_epoch,
            leader_epoch,
            log_start,
            end,
            skipped,
            reread,
        } => json!({
            "stored": stored.0, "stored_leader_epoch": stored_leader_epoch.0, "leader_epoch": leader_epoch.0,
            "log_start": log_start.0, "end": end.0, "skipped": skipped, "reread": reread,
        }),
        Anomaly::OffsetAheadOfLog { stored, log_start, high_watermark } => json!({
            "stored": stored.0, "log_start": log_start.0, "high_watermark": high_watermark.0,
        }),
        Anomaly::Truncated { stored, divergence, lost, skipped } => json!({
            "stored": stored.0, "divergence": divergence.0, "lost": lost, "skipped": skipped,
        }),
        Anomaly::DataLoss { stored, log_start, lost, skipped } => json!({
            "stored": stored.0, "log_start": log_start.0, "lost": lost, "skipped": skipped,
        }),
        Anomaly::NewPartition { log_start, end, skipped } => json!({
            "log_start": log_start.0, "end": end.0, "skipped": skipped,
        }),
        Anomaly::PartitionGone { stored } | Anomaly::TopicGone { stored } => {
            json!({ "stored": stored.map(|s| s.0) })
        }
        Anomaly::EndWentBackwards { previous_until, end } => json!({
            "previous_until": previous_until.0, "end": end.0,
        }),
    };
    v["kind"] = json!(a.kind().as_str());
    v["message"] = json!(a.to_string());
    v
}

pub fn skip_reason(r: &SkipReason) -> &'static str {
    match r {
        SkipReason::PartitionGone => "partition_gone",
        SkipReason::TopicGone => "topic_gone",
        SkipReason::EndWentBackwards => "end_went_backwards",
        SkipReason::AwaitingStable { .. } => "awaiting_stable",
        SkipReason::TimestampNotResolved => "timestamp_not_resolved",
        SkipReason::InvalidInput(_) => "invalid_input",
    }
}

pub fn from_reason(r: FromReason) -> String {
    match r {
        FromReason::Stored => "stored".to_owned(),
        FromReason::StartEarliest => "start_earliest".to_owned(),
        FromReason::StartLatest => "start_latest".to_owned(),
        FromReason::StartTimestamp => "start_timestamp".to_owned(),
        FromReason::NoRecordAtOrAfterTimestamp => "no_record_at_or_after_timestamp".to_owned(),
        FromReason::OutOfRange(policy) => format!("out_of_range_{}", format!("{policy:?}").to_lowercase()),
    }
}

pub fn until_reason(r: UntilReason) -> &'static str {
    match r {
        UntilReason::End => "end",
        UntilReason::PartitionCap => "partition_cap",
        UntilReason::BatchCap => "batch_cap",
    }
}

/// What happened to a partition, as one word for tables: `read`, `skip:<reason>`, `fail`.
pub fn action(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Range(r) => format!("read ({})", from_reason(r.from_reason)),
        Outcome::Skipped { reason } => format!("skip ({})", skip_reason(reason)),
        Outcome::Failed { kind } => format!("fail ({kind})"),
    }
}
