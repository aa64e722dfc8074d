//! The named situations a plan reports, each with the numbers that explain it.
//!
//! An anomaly is information, not a decision: what happens to the partition is decided by the
//! request's policies and shows in the entry's outcome. See the crate README for the table of
//! triggers and default actions.

use std::fmt;

use crate::model::{Offset, TopicId};

/// One named situation found while planning a partition (rules R1–R5, R9 in
/// `offset-rules.md`). All offsets follow the crate's convention: `stored` is the next offset the
/// consumer would read, ends are exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Anomaly {
    /// The stored offset was committed against another incarnation of the topic: the ids differ.
    /// Nothing in `[log_start, end)` of the new topic has been read.
    TopicRecreated {
        stored_topic_id: TopicId,
        topic_id: TopicId,
        stored: Offset,
        log_start: Offset,
        end: Offset,
    },
    /// The stored offset is beyond the log's high watermark, and the topic id is the same or
    /// unknown, and there is no leader-epoch evidence of truncation.
    OffsetAheadOfLog { stored: Offset, log_start: Offset, high_watermark: Offset },
    /// The log diverged from what the consumer read (unclean leader election, KIP-320):
    /// the stored leader epoch ends at `divergence`, below `stored`. The records in
    /// `[divergence, stored)` the consumer saw are gone; `lost = stored − divergence`.
    Truncated { stored: Offset, divergence: Offset, lost: u64 },
    /// Retention or DeleteRecords moved the log start past the stored offset:
    /// `lost = log_start − stored` records were never read.
    DataLoss { stored: Offset, log_start: Offset, lost: u64 },
    /// Nothing is stored for this partition (a new partition, or a new consumer). A `log_start`
    /// above 0 means records were deleted before anyone read them.
    NewPartition { log_start: Offset, end: Offset },
    /// The topic exists but the partition does not. The stored offset, if any, is left alone.
    PartitionGone { stored: Option<Offset> },
    /// The topic does not exist. The stored offset, if any, is left alone.
    TopicGone { stored: Option<Offset> },
    /// The end is below the `until` of the previous plan: a lagging replica or a stale lookup
    /// answered (KAFKA-7703). Re-query before trusting it.
    EndWentBackwards { previous_until: Offset, end: Offset },
}

/// The anomaly's name without its numbers; `as_str` is the stable snake_case name used in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AnomalyKind {
    TopicRecreated,
    OffsetAheadOfLog,
    Truncated,
    DataLoss,
    NewPartition,
    PartitionGone,
    TopicGone,
    EndWentBackwards,
}

impl AnomalyKind {
    /// Every kind, in declaration order.
    pub const ALL: [AnomalyKind; 8] = [
        AnomalyKind::TopicRecreated,
        AnomalyKind::OffsetAheadOfLog,
        AnomalyKind::Truncated,
        AnomalyKind::DataLoss,
        AnomalyKind::NewPartition,
        AnomalyKind::PartitionGone,
        AnomalyKind::TopicGone,
        AnomalyKind::EndWentBackwards,
    ];

    /// Stable snake_case name (`topic_recreated`, `offset_ahead_of_log`, …).
    pub const fn as_str(self) -> &'static str {
        match self {
            AnomalyKind::TopicRecreated => "topic_recreated",
            AnomalyKind::OffsetAheadOfLog => "offset_ahead_of_log",
            AnomalyKind::Truncated => "truncated",
            AnomalyKind::DataLoss => "data_loss",
            AnomalyKind::NewPartition => "new_partition",
            AnomalyKind::PartitionGone => "partition_gone",
            AnomalyKind::TopicGone => "topic_gone",
            AnomalyKind::EndWentBackwards => "end_went_backwards",
        }
    }
}

impl fmt::Display for AnomalyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Anomaly {
    pub const fn kind(&self) -> AnomalyKind {
        match self {
            Anomaly::TopicRecreated { .. } => AnomalyKind::TopicRecreated,
            Anomaly::OffsetAheadOfLog { .. } => AnomalyKind::OffsetAheadOfLog,
            Anomaly::Truncated { .. } => AnomalyKind::Truncated,
            Anomaly::DataLoss { .. } => AnomalyKind::DataLoss,
            Anomaly::NewPartition { .. } => AnomalyKind::NewPartition,
            Anomaly::PartitionGone { .. } => AnomalyKind::PartitionGone,
            Anomaly::TopicGone { .. } => AnomalyKind::TopicGone,
            Anomaly::EndWentBackwards { .. } => AnomalyKind::EndWentBackwards,
        }
    }

    /// Records known to be skipped or rolled back because of this situation, when the anomaly
    /// defines such a number (`DataLoss`, `Truncated`; `NewPartition` counts records deleted
    /// before anyone read them, i.e. `log_start`).
    pub fn lost(&self) -> Option<u64> {
        match *self {
            Anomaly::DataLoss { lost, .. } | Anomaly::Truncated { lost, .. } => Some(lost),
            Anomaly::NewPartition { log_start, .. } => Some(log_start.0.max(0).unsigned_abs()),
            _ => None,
        }
    }
}

impl fmt::Display for Anomaly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Anomaly::TopicRecreated { stored_topic_id, topic_id, stored, log_start, end } => write!(
                f,
                "topic recreated: stored offset {stored} belongs to topic id {stored_topic_id}, \
                 the log is now topic id {topic_id} with [{log_start}, {end})"
            ),
            Anomaly::OffsetAheadOfLog { stored, log_start, high_watermark } => write!(
                f,
                "stored offset {stored} is ahead of the log [{log_start}, {high_watermark}) by {}",
                stored.0.saturating_sub(high_watermark.0)
            ),
            Anomaly::Truncated { stored, divergence, lost } => write!(
                f,
                "log truncated at {divergence} below stored offset {stored}: {lost} records \
                 read earlier no longer exist"
            ),
            Anomaly::DataLoss { stored, log_start, lost } => write!(
                f,
                "log start {log_start} passed stored offset {stored}: {lost} records were never read"
            ),
            Anomaly::NewPartition { log_start, end } => {
                write!(f, "nothing stored; log is [{log_start}, {end})")?;
                if log_start.0 > 0 {
                    write!(f, ", {log_start} records were deleted before any read")?;
                }
                Ok(())
            }
            Anomaly::PartitionGone { stored } => {
                f.write_str("partition not found")?;
                fmt_stored(f, *stored)
            }
            Anomaly::TopicGone { stored } => {
                f.write_str("topic not found")?;
                fmt_stored(f, *stored)
            }
            Anomaly::EndWentBackwards { previous_until, end } => {
                write!(f, "end {end} is below the previous plan's until {previous_until}; re-query")
            }
        }
    }
}

fn fmt_stored(f: &mut fmt::Formatter<'_>, stored: Option<Offset>) -> fmt::Result {
    match stored {
        Some(s) => write!(f, "; stored offset {s} kept"),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_are_the_json_names() {
        let names: Vec<&str> = AnomalyKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "topic_recreated",
                "offset_ahead_of_log",
                "truncated",
                "data_loss",
                "new_partition",
                "partition_gone",
                "topic_gone",
                "end_went_backwards"
            ]
        );
    }

    #[test]
    fn data_loss_message_carries_its_numbers() {
        let a = Anomaly::DataLoss { stored: Offset(100), log_start: Offset(250), lost: 150 };
        assert_eq!(a.kind(), AnomalyKind::DataLoss);
        assert_eq!(a.lost(), Some(150));
        let text = a.to_string();
        assert!(text.contains("250") && text.contains("100") && text.contains("150"));
    }
}
