//! The named situations a plan reports, each with the numbers that explain it.
//!
//! An anomaly is information, not a decision: what happens to the partition is decided by the
//! request's policies and shows in the entry's outcome. See the crate README for the table of
//! triggers and default actions.

use std::fmt;

use crate::model::{LeaderEpoch, Offset, TopicId};

/// One named situation found while planning a partition (rules R1–R5, R9 in
/// `offset-rules.md`). All offsets follow the crate's convention: `stored` is the next offset the
/// consumer would read, ends are exclusive.
///
/// **No silent skip.** Where the plan moves reading forward past records the consumer has not
/// read, the anomaly counts them in `skipped`: every offset between the consumer's position in
/// the current log and the planned `from` — the stored offset for `DataLoss`, the divergence
/// for `Truncated`, offset 0 of the new log for `TopicRecreated` and `NewPartition` (nothing of
/// it has been read). That includes records deleted before anyone read them (retention,
/// DeleteRecords) and records a policy jumped over (`Latest`, a start timestamp). `skipped` is
/// 0 when nothing is planned (a `Failed` or skipped outcome) or reading resumes at or before
/// the position. See [`Anomaly::skipped`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Anomaly {
    /// The stored offset was committed against another incarnation of the topic: the ids differ.
    /// Nothing in the new topic has been read; `skipped = from` (records `[0, from)` of it).
    TopicRecreated {
        /// The id the stored offset was committed against (the old incarnation).
        stored_topic_id: TopicId,
        /// The id of the topic as it exists now.
        topic_id: TopicId,
        /// The stored offset, a position in the old topic; not used for reading.
        stored: Offset,
        /// The first offset of the new log.
        log_start: Offset,
        /// The new log's exclusive end, per isolation.
        end: Offset,
        /// Records `[0, from)` of the new log that will never be read.
        skipped: u64,
    },
    /// The stored leader epoch is above the log's current one, and the topic ids do not prove
    /// that the log is the one the position was read from (either side has no id: Kafka before
    /// 2.8, a Metadata answer without ids, or a store that keeps none — Kafka's own group store
    /// keeps the epoch but no id). Leader epochs only grow along a topic's life, so this is
    /// the sign of a topic deleted and recreated (its epochs start again at 0) whose new log
    /// already reaches past the stored offset, where the offsets alone show nothing. The one
    /// other cause is a stale answer (a broker whose metadata lags); a caller that can re-query
    /// should do so once before acting on it.
    ///
    /// Handled as a recreation: the stored offset is not used for reading, and nothing of the
    /// log is taken as read, so `skipped = from` (records `[0, from)`). If the log was the same
    /// after all, reading from `from` reads `[from, stored)` again: `reread`. Whichever it was,
    /// `skipped` bounds what is passed over.
    LeaderEpochBackwards {
        /// The stored offset; not used for reading.
        stored: Offset,
        /// The leader epoch stored with it.
        stored_leader_epoch: LeaderEpoch,
        /// The log's current leader epoch, below `stored_leader_epoch`.
        leader_epoch: LeaderEpoch,
        /// The first offset of the log.
        log_start: Offset,
        /// The log's exclusive end, per isolation.
        end: Offset,
        /// Records `[0, from)` of the log that will never be read (if it is a new log).
        skipped: u64,
        /// `max(0, stored − from)`: records read a second time if it is the same log.
        reread: u64,
    },
    /// The stored offset is beyond the log's high watermark, and the topic id is the same or
    /// unknown, and there is no leader-epoch evidence of truncation. Every policy resumes at or
    /// below the stored offset, so nothing is skipped.
    OffsetAheadOfLog {
        /// The stored offset, above `high_watermark`.
        stored: Offset,
        /// The first offset still in the log.
        log_start: Offset,
        /// The log's exclusive end under read_uncommitted, below `stored`.
        high_watermark: Offset,
    },
    /// The log diverged from what the consumer read (unclean leader election, KIP-320):
    /// the stored leader epoch ends at `divergence`, below `stored`. The records in
    /// `[divergence, stored)` the consumer saw are gone; `lost = stored − divergence`. The log
    /// now holds other records from `divergence` on, none of them read:
    /// `skipped = max(0, from − divergence)` (retention past the divergence, or the policy).
    Truncated {
        /// The stored offset, above `divergence`.
        stored: Offset,
        /// The exclusive end of the stored leader epoch in the current log (OffsetForLeaderEpoch):
        /// from this offset on, the log holds records the consumer did not read.
        divergence: Offset,
        /// `stored − divergence`: records the consumer read that are no longer in the log.
        lost: u64,
        /// `max(0, from − divergence)`: records of the current log from the divergence on that
        /// will never be read.
        skipped: u64,
    },
    /// Retention or DeleteRecords moved the log start past the stored offset:
    /// `lost = log_start − stored` records were never read. `skipped = from − stored`: the lost
    /// records plus any the policy jumped over (`Latest`).
    DataLoss {
        /// The stored offset, below `log_start`.
        stored: Offset,
        /// The first offset still in the log.
        log_start: Offset,
        /// `log_start − stored`: records deleted before the consumer read them.
        lost: u64,
        /// `from − stored`: the lost records plus any the policy jumped over; at least `lost`
        /// when a range is planned, 0 when none is.
        skipped: u64,
    },
    /// Nothing is stored for this partition (a new partition, or a new consumer). A `log_start`
    /// above 0 means records were deleted before anyone read them. `skipped = from`: those,
    /// plus any the start policy jumped over (`Latest`, a timestamp).
    NewPartition {
        /// The first offset still in the log; above 0 when records were deleted unread.
        log_start: Offset,
        /// The log's exclusive end, per isolation.
        end: Offset,
        /// `from`: records `[0, from)` that will never be read.
        skipped: u64,
    },
    /// The topic exists but the partition does not. The stored offset, if any, is left alone.
    PartitionGone {
        /// The stored offset, untouched; `None` when nothing is stored.
        stored: Option<Offset>,
    },
    /// The topic does not exist. The stored offset, if any, is left alone.
    TopicGone {
        /// The stored offset, untouched; `None` when nothing is stored.
        stored: Option<Offset>,
    },
    /// The end is below the `until` of the previous plan: a lagging replica or a stale lookup
    /// answered (KAFKA-7703). Re-query before trusting it.
    EndWentBackwards {
        /// The exclusive `until` this partition had in the previous plan.
        previous_until: Offset,
        /// The exclusive end answered now (per isolation), below `previous_until`.
        end: Offset,
    },
}

/// The anomaly's name without its numbers; `as_str` is the stable snake_case name used in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AnomalyKind {
    /// `topic_recreated`: [`Anomaly::TopicRecreated`].
    TopicRecreated,
    /// `offset_ahead_of_log`: [`Anomaly::OffsetAheadOfLog`].
    OffsetAheadOfLog,
    /// `truncated`: [`Anomaly::Truncated`].
    Truncated,
    /// `data_loss`: [`Anomaly::DataLoss`].
    DataLoss,
    /// `new_partition`: [`Anomaly::NewPartition`].
    NewPartition,
    /// `partition_gone`: [`Anomaly::PartitionGone`].
    PartitionGone,
    /// `topic_gone`: [`Anomaly::TopicGone`].
    TopicGone,
    /// `end_went_backwards`: [`Anomaly::EndWentBackwards`].
    EndWentBackwards,
    /// `leader_epoch_backwards`: [`Anomaly::LeaderEpochBackwards`].
    LeaderEpochBackwards,
}

impl AnomalyKind {
    /// Every kind, in declaration order.
    pub const ALL: [AnomalyKind; 9] = [
        AnomalyKind::TopicRecreated,
        AnomalyKind::OffsetAheadOfLog,
        AnomalyKind::Truncated,
        AnomalyKind::DataLoss,
        AnomalyKind::NewPartition,
        AnomalyKind::PartitionGone,
        AnomalyKind::TopicGone,
        AnomalyKind::EndWentBackwards,
        AnomalyKind::LeaderEpochBackwards,
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
            AnomalyKind::LeaderEpochBackwards => "leader_epoch_backwards",
        }
    }
}

impl fmt::Display for AnomalyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Anomaly {
    /// The variant without its numbers; its `as_str` is the name used in JSON.
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
            Anomaly::LeaderEpochBackwards { .. } => AnomalyKind::LeaderEpochBackwards,
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

    /// Records the consumer never read and, with this plan, never will: every offset between
    /// its position in the current log and the planned `from` (see the type's docs). Summed
    /// over the ranges a consumer processes, it is exactly the number of records it passed
    /// over.
    pub const fn skipped(&self) -> u64 {
        match *self {
            Anomaly::TopicRecreated { skipped, .. }
            | Anomaly::LeaderEpochBackwards { skipped, .. }
            | Anomaly::Truncated { skipped, .. }
            | Anomaly::DataLoss { skipped, .. }
            | Anomaly::NewPartition { skipped, .. } => skipped,
            Anomaly::OffsetAheadOfLog { .. }
            | Anomaly::PartitionGone { .. }
            | Anomaly::TopicGone { .. }
            | Anomaly::EndWentBackwards { .. } => 0,
        }
    }

    /// Where the consumer stands in the current log for this anomaly, when reading resumes
    /// forward from it: what [`Anomaly::skipped`] is counted from.
    pub(crate) const fn position(&self) -> Option<Offset> {
        match *self {
            Anomaly::TopicRecreated { .. }
            | Anomaly::LeaderEpochBackwards { .. }
            | Anomaly::NewPartition { .. } => Some(Offset(0)),
            Anomaly::Truncated { divergence, .. } => Some(divergence),
            Anomaly::DataLoss { stored, .. } => Some(stored),
            _ => None,
        }
    }

    /// The anomaly with `skipped` set for reading from `from`.
    #[must_use]
    pub(crate) const fn reading_from(mut self, from: Offset) -> Anomaly {
        let n = match self.position() {
            Some(p) => p.records_until(from),
            None => 0,
        };
        match &mut self {
            Anomaly::LeaderEpochBackwards { skipped, reread, stored, .. } => {
                *skipped = n;
                *reread = from.records_until(*stored);
            }
            Anomaly::TopicRecreated { skipped, .. }
            | Anomaly::Truncated { skipped, .. }
            | Anomaly::DataLoss { skipped, .. }
            | Anomaly::NewPartition { skipped, .. } => *skipped = n,
            _ => {}
        }
        self
    }
}

impl fmt::Display for Anomaly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Anomaly::TopicRecreated { stored_topic_id, topic_id, stored, log_start, end, .. } => write!(
                f,
                "topic recreated: stored offset {stored} belongs to topic id {stored_topic_id}, \
                 the log is now topic id {topic_id} with [{log_start}, {end})"
            )?,
            Anomaly::LeaderEpochBackwards {
                stored,
                stored_leader_epoch,
                leader_epoch,
                log_start,
                end,
                ..
            } => {
                write!(
                    f,
                    "leader epoch went from {stored_leader_epoch} to {leader_epoch} with no topic id to \
                     compare: the topic was most likely deleted and recreated (or the answer was \
                     stale); stored offset {stored} is not used, the log is [{log_start}, {end})"
                )?;
            }
            Anomaly::OffsetAheadOfLog { stored, log_start, high_watermark } => write!(
                f,
                "stored offset {stored} is ahead of the log [{log_start}, {high_watermark}) by {}",
                stored.0.saturating_sub(high_watermark.0)
            )?,
            Anomaly::Truncated { stored, divergence, lost, .. } => write!(
                f,
                "log truncated at {divergence} below stored offset {stored}: {lost} records \
                 read earlier no longer exist"
            )?,
            Anomaly::DataLoss { stored, log_start, lost, .. } => write!(
                f,
                "log start {log_start} passed stored offset {stored}: {lost} records were never read"
            )?,
            Anomaly::NewPartition { log_start, end, .. } => {
                write!(f, "nothing stored; log is [{log_start}, {end})")?;
                if log_start.0 > 0 {
                    write!(f, ", {log_start} records were deleted before any read")?;
                }
            }
            Anomaly::PartitionGone { stored } => {
                f.write_str("partition not found")?;
                fmt_stored(f, *stored)?;
            }
            Anomaly::TopicGone { stored } => {
                f.write_str("topic not found")?;
                fmt_stored(f, *stored)?;
            }
            Anomaly::EndWentBackwards { previous_until, end } => {
                write!(f, "end {end} is below the previous plan's until {previous_until}; re-query")?;
            }
        }
        let skipped = self.skipped();
        if skipped > 0 {
            write!(f, "; {skipped} unread records before the planned start are passed over")?;
        }
        if let Anomaly::LeaderEpochBackwards { reread, .. } = self {
            if *reread > 0 {
                write!(f, "; {reread} records are read again if it is the same log")?;
            }
        }
        Ok(())
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
                "end_went_backwards",
                "leader_epoch_backwards"
            ]
        );
    }

    #[test]
    fn data_loss_message_carries_its_numbers() {
        let a = Anomaly::DataLoss { stored: Offset(100), log_start: Offset(250), lost: 150, skipped: 0 };
        assert_eq!(a.kind(), AnomalyKind::DataLoss);
        assert_eq!(a.lost(), Some(150));
        let text = a.to_string();
        assert!(text.contains("250") && text.contains("100") && text.contains("150"));
        let clamped = a.reading_from(Offset(250));
        assert_eq!(clamped.skipped(), 150);
        assert!(clamped.to_string().contains("150 unread records before the planned start"), "{clamped}");
        assert_eq!(a.reading_from(Offset(900)).skipped(), 800, "Latest jumps over [250, 900) too");
    }
}
