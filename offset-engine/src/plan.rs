//! Planning: stored positions + log views in, exactly one entry per partition out.
//!
//! For each partition the engine first decides where reading starts (`from`) and why, then the
//! rate limits decide where it stops (`until`). Planned ranges satisfy
//! `log_start <= from <= until <= end` (end per isolation), always.
//!
//! Kafka's "unknown" values are normalised first and never compared as real ones: the all-zero
//! topic id and a negative leader epoch are `None`, an `end_offset_for_stored_epoch` of `-1` is
//! no evidence, a timestamp lookup of `-1` is "no record at or after the time".
//!
//! Classification order for a partition whose log was found (the first match wins):
//! 1. invalid input (inconsistent view, negative stored offset) → skipped;
//! 2. `previous_until > end` → `EndWentBackwards`, skipped until the caller re-queries;
//! 3. nothing stored → `NewPartition`, start policy;
//! 4. both topic ids known and different → `TopicRecreated`, out-of-range policy;
//! 5. the stored leader epoch above the log's, and no pair of topic ids to prove the log is the
//!    same → `LeaderEpochBackwards` (most likely a recreation the offsets do not show), handled
//!    as a recreation by the out-of-range policy. With both ids known and equal the log *is*
//!    the same, so the lower epoch is a stale answer: the partition goes on to the next steps,
//!    and its entry carries no epoch (committing the stale one would move the stored epoch
//!    backwards, and the stored one may be older than the records read);
//! 6. `end_offset_for_stored_epoch < stored` → `Truncated`, out-of-range policy;
//! 7. `stored > high_watermark` → `OffsetAheadOfLog`, out-of-range policy;
//! 8. `stored < log_start` → `DataLoss`, out-of-range policy;
//! 9. read_committed and `last_stable < stored <= high_watermark` → skipped, waiting for the
//!    transaction to close (lag 0, not negative);
//! 10. otherwise resume at `stored`.
//!
//! A plan's own commit is always accepted by [`crate::merge_commit`]: a range resumed at the
//! stored offset never carries a lower id or epoch than the stored ones, and every other range
//! is a reset.
//!
//! No silent skip: when the resulting `from` is beyond the consumer's position in the current
//! log, the anomaly's `skipped` counts every record in between (see [`Anomaly`]). No
//! starvation: see [`RateCarry`] for the bound under a total cap.

use crate::anomaly::{Anomaly, AnomalyKind};
use crate::lag::{validated_lag, Lag};
use crate::model::{
    InvalidInput, Isolation, LeaderEpoch, LogState, LogView, Offset, Stored, TopicId, TopicPartition,
};
use crate::policy::{OutOfRangePolicy, StartPolicy, TimeLookup};
use crate::rate::{share_in_order, BatchCap, Limits, RateCarry, NOT_WAITING};

/// Everything the engine needs to plan one batch.
#[derive(Debug, Clone, Default)]
pub struct PlanRequest {
    /// Where to start a partition that has nothing stored.
    pub start: StartPolicy,
    /// What to do when the stored offset cannot be used (`TopicRecreated`, `Truncated`,
    /// `OffsetAheadOfLog`, `DataLoss`).
    pub out_of_range: OutOfRangePolicy,
    /// Which end ranges stop at: the high watermark or the last stable offset.
    pub isolation: Isolation,
    /// Caps on the records planned, per partition and for the whole batch.
    pub limits: Limits,
    /// The previous plan's [`Plan::carry`]; empty for the first batch.
    pub carry: RateCarry,
    /// One input per partition; the plan has one entry for each, in this order.
    pub partitions: Vec<PartitionInput>,
}

/// One partition's facts, as the caller gathered them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInput {
    /// Which partition these facts are about; copied to its [`PlanEntry`].
    pub tp: TopicPartition,
    /// The committed position, `None` when nothing is stored.
    pub stored: Option<Stored>,
    /// What the broker said about the partition's log (or that it does not exist).
    pub log: LogState,
    /// OffsetForLeaderEpoch's answer for the stored leader epoch: the end offset (exclusive) of
    /// that epoch in the current log. `None` when the caller did not ask or the broker did not
    /// know (`-1`). Below `stored` means the log was truncated under the consumer.
    pub end_offset_for_stored_epoch: Option<Offset>,
    /// The `until` this partition had in the previous plan of the same stream, if it was
    /// planned. An `end` below it is `EndWentBackwards`.
    pub previous_until: Option<Offset>,
    /// The resolved offset for [`StartPolicy::Timestamp`].
    pub timestamp_offset: Option<TimeLookup>,
}

impl PartitionInput {
    /// A partition with a stored position and a found log; the optional facts are `None`.
    pub fn new(tp: TopicPartition, stored: Option<Stored>, log: LogState) -> Self {
        PartitionInput {
            tp,
            stored,
            log,
            end_offset_for_stored_epoch: None,
            previous_until: None,
            timestamp_offset: None,
        }
    }
}

/// The result of planning: one entry per input partition, in input order. The default is the
/// plan of no partitions, to pass to [`plan_into`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// One per [`PlanRequest::partitions`], in the same order.
    pub entries: Vec<PlanEntry>,
    /// Pass into the next request's [`PlanRequest::carry`].
    pub carry: RateCarry,
    /// The total cap that applied, if any.
    pub batch_cap: Option<BatchCap>,
    /// Σ (until − from) over the ranges; saturates at `u64::MAX`.
    pub records: u64,
}

/// What the plan says about one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanEntry {
    /// The partition, as in its input.
    pub tp: TopicPartition,
    /// A range to read, a skip, or a policy failure.
    pub outcome: Outcome,
    /// The situation found, if any. Always `Some` when the outcome is `Failed`, and for the
    /// skips `PartitionGone`, `TopicGone` and `EndWentBackwards`.
    ///
    /// Boxed because it is rarely set and an `Anomaly` is 72 bytes (`TopicRecreated`'s two topic
    /// ids and four numbers): inline, it made every entry of a million-partition plan 64 bytes
    /// larger (see the crate README's speed section). Read it with `entry.anomaly.as_deref()`.
    pub anomaly: Option<Box<Anomaly>>,
    /// Lag of the stored position against the log view (see [`crate::stored_lag`]).
    pub lag: Lag,
    /// The log's topic id and leader epoch when planned, to commit with the `until`.
    pub topic_id: Option<TopicId>,
    /// See `topic_id`; `None` when the log view had no (or a negative) epoch, or no log was
    /// found, and when the view's epoch is a stale answer: below the stored epoch of the same
    /// topic id (see the classification order).
    pub leader_epoch: Option<LeaderEpoch>,
}

impl PlanEntry {
    /// The planned range, if the outcome is one.
    pub fn range(&self) -> Option<&PlannedRange> {
        match &self.outcome {
            Outcome::Range(r) => Some(r),
            _ => None,
        }
    }
}

/// Exactly one per partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Read `[from, until)`.
    Range(PlannedRange),
    /// Not planned this time, for a reason that is not a policy failure.
    Skipped {
        /// Why there is no range.
        reason: SkipReason,
    },
    /// The policy turned the anomaly of this kind (in [`PlanEntry::anomaly`]) into a failure.
    Failed {
        /// The kind of [`PlanEntry::anomaly`], whose numbers explain the failure.
        kind: AnomalyKind,
    },
}

/// A half-open range `[from, until)` with `log_start <= from <= until <= end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PlannedRange {
    /// The first offset to read (inclusive).
    pub from: Offset,
    /// One past the last offset to read (exclusive); the offset to commit once the range is
    /// processed. Equal to `from` for an empty range.
    pub until: Offset,
    /// Why reading starts at `from`.
    pub from_reason: FromReason,
    /// Why reading stops at `until`.
    pub until_reason: UntilReason,
}

impl PlannedRange {
    /// `until − from`, the number of offsets in the range (0 when empty). Under
    /// read_committed or with compaction, fewer records may actually be returned.
    pub const fn records(&self) -> u64 {
        self.from.records_until(self.until)
    }
}

/// Why reading starts at `from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FromReason {
    /// The stored offset, which is inside the log.
    Stored,
    /// Nothing stored; the start policy chose the log start.
    StartEarliest,
    /// Nothing stored; the start policy chose the end.
    StartLatest,
    /// Nothing stored; the offset resolved for the start timestamp (clamped into the log).
    StartTimestamp,
    /// Nothing stored and no record at or after the start timestamp: the end.
    NoRecordAtOrAfterTimestamp,
    /// The out-of-range policy moved the start away from an unusable stored offset.
    OutOfRange(OutOfRangePolicy),
}

/// Why reading stops at `until`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UntilReason {
    /// Everything up to the end (per isolation).
    End,
    /// [`Limits::max_per_partition`].
    PartitionCap,
    /// The batch's total cap (`max_per_batch` or time budget, see [`Plan::batch_cap`]).
    BatchCap,
}

/// Why a partition has no range and no failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SkipReason {
    /// The topic exists but has no such partition (the anomaly is `PartitionGone`).
    PartitionGone,
    /// The topic does not exist (the anomaly is `TopicGone`).
    TopicGone,
    /// The end is below the previous `until`: re-query the end (bounded retries, R3); once the
    /// retries are spent, plan again without `previous_until` to classify it.
    EndWentBackwards,
    /// read_committed, and the stored offset is past the last stable offset but within the high
    /// watermark: nothing is readable until the open transaction ends.
    AwaitingStable {
        /// The stored offset, in `(last_stable, high_watermark]`.
        stored: Offset,
        /// The log's current last stable offset (exclusive end under read_committed).
        last_stable: Offset,
    },
    /// [`StartPolicy::Timestamp`] without a [`PartitionInput::timestamp_offset`].
    TimestampNotResolved,
    /// The partition's input is inconsistent; nothing about it is trusted.
    InvalidInput(InvalidInput),
}

/// Plans one batch. Deterministic: the same request gives the same plan.
///
/// Memory traffic, not arithmetic, is what a plan of a million partitions costs: the entries
/// are written once (in freshly mapped pages the kernel must zero first), so every further
/// pass over them reads and writes them again. The per-partition cap, the backlogs for the
/// total cap and the record count are therefore taken while each entry is built; only a total
/// cap that binds walks the entries a second time.
pub fn plan(request: &PlanRequest) -> Plan {
    let mut out = Plan::default();
    plan_into(request, &mut out);
    out
}

/// [`plan`], written into `out` (whatever it held is replaced), reusing the memory of its
/// entries: a loop that plans every batch keeps one `Plan` and gets the same plan as from
/// [`plan`], without mapping (and the kernel zeroing) fresh pages for each batch's entries.
pub fn plan_into(request: &PlanRequest, out: &mut Plan) {
    let isolation = request.isolation;
    let per_cap = request.limits.max_per_partition;
    let batch_cap = request.limits.batch_cap();
    let n = request.partitions.len();
    let entries = &mut out.entries;
    entries.clear();
    entries.reserve(n);
    // Sized once: a million partitions would otherwise regrow (and copy) it ~20 times.
    let mut backlogs: Vec<u64> = Vec::with_capacity(if batch_cap.is_some() { n } else { 0 });
    let mut records = 0u64;
    for p in &request.partitions {
        let mut e = plan_partition(request, p, isolation);
        // Per-partition cap first, then the batch cap over what remains.
        if let Outcome::Range(r) = &mut e.outcome {
            if let Some(cap) = per_cap {
                if r.records() > cap {
                    r.until = r.from.saturating_add(cap);
                    r.until_reason = UntilReason::PartitionCap;
                }
            }
            records = records.saturating_add(r.records());
            if batch_cap.is_some() {
                backlogs.push(r.records());
            }
        }
        entries.push(e);
    }

    // The queue of partitions passed over under a total cap (see `RateCarry`): a partition
    // planned with a range leaves it (and is ranked with its place when the cap is shared), a
    // gone one leaves it, any other keeps its place.
    let this_batch = request.carry.batches();
    let mut carry = request.carry.following();
    let waiting_since: Option<Vec<u64>> = if carry.is_empty() {
        None
    } else {
        let mut since = Vec::with_capacity(backlogs.len());
        for e in entries.iter() {
            match e.outcome {
                Outcome::Range(_) => since.push(carry.take(&e.tp).unwrap_or(NOT_WAITING)),
                Outcome::Skipped { reason: SkipReason::PartitionGone | SkipReason::TopicGone } => {
                    carry.take(&e.tp);
                }
                Outcome::Skipped { .. } | Outcome::Failed { .. } => {}
            }
        }
        Some(since)
    };
    if let Some(cap) = batch_cap {
        if let Some(granted) =
            apply_batch_cap(entries, &backlogs, cap.records, waiting_since.as_deref(), this_batch, &mut carry)
        {
            records = granted;
        }
    }
    out.carry = carry;
    out.batch_cap = batch_cap;
    out.records = records;
}

/// Shares `cap` among the ranged entries, whose backlogs (after the per-partition cap) are
/// `backlogs` in entry order (see [`crate::rate::share`]), and queues in `carry` the partitions
/// with backlog that got no record: since their old place if they had one, since `this_batch`
/// otherwise (with a cap of at least one record: under a zero cap nobody was owed anything).
/// Returns the records granted in total, or `None` when the cap does not bind (nothing changes).
fn apply_batch_cap(
    entries: &mut [PlanEntry],
    backlogs: &[u64],
    cap: u64,
    waiting_since: Option<&[u64]>,
    this_batch: u64,
    carry: &mut RateCarry,
) -> Option<u64> {
    let total: u128 = backlogs.iter().map(|&b| u128::from(b)).sum();
    if total <= u128::from(cap) {
        // Everyone gets all of their backlog.
        return None;
    }
    let grants = share_in_order(backlogs, cap, waiting_since);
    let mut granted = 0u64;
    // The ranged entries again, in the same order as `backlogs`.
    let ranged = entries.iter_mut().filter(|e| e.range().is_some());
    for (i, (e, (&g, &backlog))) in ranged.zip(grants.iter().zip(backlogs)).enumerate() {
        let tp = &e.tp;
        if let Outcome::Range(r) = &mut e.outcome {
            if g < backlog {
                r.until = r.from.saturating_add(g);
                r.until_reason = UntilReason::BatchCap;
            }
            granted = granted.saturating_add(r.records());
            if g == 0 && backlog > 0 {
                let since = waiting_since.map_or(NOT_WAITING, |w| w[i]);
                if since != NOT_WAITING {
                    carry.wait(tp.clone(), since);
                } else if cap > 0 {
                    carry.wait(tp.clone(), this_batch);
                }
            }
        }
    }
    Some(granted)
}

fn plan_partition(req: &PlanRequest, p: &PartitionInput, isolation: Isolation) -> PlanEntry {
    // Kafka's "unknown" values (zero topic id, epoch -1) are `None` wherever they are read
    // below: the ids compared in `classify_stored`, the id and epoch put in the entry.
    let stored = p.stored.as_ref();
    let stored_offset = stored.map(|s| s.offset);
    let view = match &p.log {
        LogState::Found(v) => v,
        LogState::PartitionNotFound => {
            return skipped(
                p,
                SkipReason::PartitionGone,
                Some(Anomaly::PartitionGone { stored: stored_offset }),
                Lag::Unknown,
            )
        }
        LogState::TopicNotFound => {
            return skipped(
                p,
                SkipReason::TopicGone,
                Some(Anomaly::TopicGone { stored: stored_offset }),
                Lag::Unknown,
            )
        }
    };
    let invalid = view.validate().and_then(|()| stored.map_or(Ok(()), Stored::validate));
    if let Err(e) = invalid {
        return skipped(p, SkipReason::InvalidInput(e), None, Lag::Unknown);
    }
    let (outcome, anomaly) = decide(req, p, stored, view, isolation);
    // Nothing of a recreated topic's new log was committed: no lag against the old offset.
    let committed = match anomaly {
        Some(Anomaly::TopicRecreated { .. } | Anomaly::LeaderEpochBackwards { .. }) => None,
        _ => stored_offset,
    };
    // The view and the stored offset were validated above.
    let lag = validated_lag(committed, view, isolation);
    // Every record between the consumer's position and `from` is counted (no silent skip).
    let anomaly = match (&outcome, anomaly) {
        (Outcome::Range(r), Some(a)) => Some(a.reading_from(r.from)),
        (_, a) => a,
    };
    PlanEntry {
        tp: p.tp.clone(),
        outcome,
        anomaly: anomaly.map(Box::new),
        lag,
        topic_id: match &view.topic_id {
            Some(id) if !id.is_zero() => Some(*id),
            _ => None,
        },
        leader_epoch: epoch_to_commit(stored, view),
    }
}

/// The view's leader epoch, unless it is below the stored epoch of the same (known) topic id:
/// then the view is a stale answer about this log, and no epoch is committed. (Without both
/// ids the lower epoch is [`Anomaly::LeaderEpochBackwards`], whose reset commits the view's.)
fn epoch_to_commit(stored: Option<&Stored>, view: &LogView) -> Option<LeaderEpoch> {
    let epoch = LeaderEpoch::known(view.leader_epoch)?;
    let Some(stored) = stored else { return Some(epoch) };
    let below_stored = LeaderEpoch::known(stored.leader_epoch).is_some_and(|s| epoch < s);
    let same_topic = match (TopicId::known(stored.topic_id), TopicId::known(view.topic_id)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    };
    if below_stored && same_topic {
        None
    } else {
        Some(epoch)
    }
}

/// The outcome and the anomaly (before `skipped` is set) for a partition whose view and stored
/// offset are valid.
#[inline]
fn decide(
    req: &PlanRequest,
    p: &PartitionInput,
    stored: Option<&Stored>,
    view: &LogView,
    isolation: Isolation,
) -> (Outcome, Option<Anomaly>) {
    let end = view.end(isolation);
    let range = |from: Offset, from_reason| {
        Outcome::Range(PlannedRange { from, until: end, from_reason, until_reason: UntilReason::End })
    };

    if let Some(prev) = p.previous_until {
        if prev > end {
            return (
                Outcome::Skipped { reason: SkipReason::EndWentBackwards },
                Some(Anomaly::EndWentBackwards { previous_until: prev, end }),
            );
        }
    }

    let Some(stored) = stored else {
        let anomaly = Anomaly::NewPartition { log_start: view.log_start, end, skipped: 0 };
        let outcome = match req.start {
            StartPolicy::Earliest => range(view.log_start, FromReason::StartEarliest),
            StartPolicy::Latest => range(end, FromReason::StartLatest),
            // ListOffsets' `-1` is "no record at or after the time", never an offset.
            StartPolicy::Timestamp { .. } => match p.timestamp_offset.map(TimeLookup::normalized) {
                Some(Ok(TimeLookup::Offset(o))) => {
                    range(clamp(o, view.log_start, end), FromReason::StartTimestamp)
                }
                Some(Ok(TimeLookup::NoRecordAtOrAfter)) => range(end, FromReason::NoRecordAtOrAfterTimestamp),
                Some(Err(e)) => return (Outcome::Skipped { reason: SkipReason::InvalidInput(e) }, None),
                None => Outcome::Skipped { reason: SkipReason::TimestampNotResolved },
            },
            StartPolicy::Fail => Outcome::Failed { kind: AnomalyKind::NewPartition },
        };
        return (outcome, Some(anomaly));
    };

    // OffsetForLeaderEpoch's `-1`: the broker does not know the epoch, so there is no evidence.
    let end_for_epoch = p.end_offset_for_stored_epoch.filter(|o| o.0 >= 0);
    let s = stored.offset;
    if let Some((anomaly, nearest)) = classify_stored(stored, view, end_for_epoch, end) {
        let policy = req.out_of_range;
        let outcome = match policy {
            OutOfRangePolicy::Fail => Outcome::Failed { kind: anomaly.kind() },
            OutOfRangePolicy::Earliest => range(view.log_start, FromReason::OutOfRange(policy)),
            OutOfRangePolicy::Latest => range(end, FromReason::OutOfRange(policy)),
            OutOfRangePolicy::Clamp => range(nearest, FromReason::OutOfRange(policy)),
        };
        return (outcome, Some(anomaly));
    }

    if s > end {
        // Only reachable under read_committed: last_stable < stored <= high_watermark.
        return (
            Outcome::Skipped {
                reason: SkipReason::AwaitingStable { stored: s, last_stable: view.last_stable },
            },
            None,
        );
    }
    (range(s, FromReason::Stored), None)
}

/// The anomaly that makes `stored` unusable as it is, and the nearest valid position for
/// [`OutOfRangePolicy::Clamp`] (inside `[log_start, end]`).
#[inline]
fn classify_stored(
    stored: &Stored,
    view: &LogView,
    end_for_epoch: Option<Offset>,
    end: Offset,
) -> Option<(Anomaly, Offset)> {
    let s = stored.offset;
    // By reference: copying the two 17-byte options cost more than the rest of the check.
    if let (Some(old), Some(new)) = (&stored.topic_id, &view.topic_id) {
        // The all-zero id is "unknown", never compared.
        if old != new && !old.is_zero() && !new.is_zero() {
            let (old, new) = (*old, *new);
            return Some((
                Anomaly::TopicRecreated {
                    stored_topic_id: old,
                    topic_id: new,
                    stored: s,
                    log_start: view.log_start,
                    end,
                    skipped: 0,
                },
                view.log_start,
            ));
        }
    }
    if let Some((stored_leader_epoch, leader_epoch)) = epoch_went_backwards(stored, view) {
        return Some((
            Anomaly::LeaderEpochBackwards {
                stored: s,
                stored_leader_epoch,
                leader_epoch,
                log_start: view.log_start,
                end,
                skipped: 0,
                reread: 0,
            },
            view.log_start,
        ));
    }
    if let Some(divergence) = end_for_epoch {
        if divergence < s {
            return Some((
                Anomaly::Truncated { stored: s, divergence, lost: divergence.records_until(s), skipped: 0 },
                clamp(divergence, view.log_start, end),
            ));
        }
    }
    if s > view.high_watermark {
        return Some((
            Anomaly::OffsetAheadOfLog {
                stored: s,
                log_start: view.log_start,
                high_watermark: view.high_watermark,
            },
            end,
        ));
    }
    if s < view.log_start {
        return Some((
            Anomaly::DataLoss {
                stored: s,
                log_start: view.log_start,
                lost: s.records_until(view.log_start),
                skipped: 0,
            },
            view.log_start,
        ));
    }
    None
}

/// `(stored epoch, log epoch)` when the log's leader epoch is below the stored one and the
/// topic ids cannot show that the log is the same: both known and equal is a stale answer
/// instead (see [`epoch_to_commit`]); both known and different was a recreation already.
fn epoch_went_backwards(stored: &Stored, view: &LogView) -> Option<(LeaderEpoch, LeaderEpoch)> {
    let stored_epoch = LeaderEpoch::known(stored.leader_epoch)?;
    let log_epoch = LeaderEpoch::known(view.leader_epoch)?;
    let ids_known = TopicId::known(stored.topic_id).is_some() && TopicId::known(view.topic_id).is_some();
    (log_epoch < stored_epoch && !ids_known).then_some((stored_epoch, log_epoch))
}

fn clamp(o: Offset, low: Offset, high: Offset) -> Offset {
    // Callers guarantee low <= high (validated view); written without `Ord::clamp`, which
    // panics when that does not hold.
    if o < low {
        low
    } else if o > high {
        high
    } else {
        o
    }
}

fn skipped(p: &PartitionInput, reason: SkipReason, anomaly: Option<Anomaly>, lag: Lag) -> PlanEntry {
    let (topic_id, leader_epoch) = match p.log {
        LogState::Found(v) => (TopicId::known(v.topic_id), LeaderEpoch::known(v.leader_epoch)),
        _ => (None, None),
    };
    PlanEntry {
        tp: p.tp.clone(),
        outcome: Outcome::Skipped { reason },
        anomaly: anomaly.map(Box::new),
        lag,
        topic_id,
        leader_epoch,
    }
}

impl Plan {
    /// `(tp, from)` of every planned range, in plan order.
    pub fn starting_offsets(&self) -> Vec<(TopicPartition, Offset)> {
        self.entries.iter().filter_map(|e| e.range().map(|r| (e.tp.clone(), r.from))).collect()
    }

    /// `(tp, until)` of every planned range, in plan order.
    pub fn ending_offsets(&self) -> Vec<(TopicPartition, Offset)> {
        self.entries.iter().filter_map(|e| e.range().map(|r| (e.tp.clone(), r.until))).collect()
    }

    /// The entries whose outcome is a failure.
    pub fn failures(&self) -> impl Iterator<Item = &PlanEntry> {
        self.entries.iter().filter(|e| matches!(e.outcome, Outcome::Failed { .. }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan of a million partitions writes a million entries into freshly mapped pages, so
    /// the entry's size is the plan's cost (see the crate README's speed section). 184 bytes
    /// while the anomaly was inline.
    #[test]
    fn plan_entry_with_a_boxed_anomaly_stays_at_120_bytes() {
        assert!(std::mem::size_of::<PlanEntry>() <= 120, "{}", std::mem::size_of::<PlanEntry>());
        assert_eq!(std::mem::size_of::<Option<Box<Anomaly>>>(), 8);
    }
}
