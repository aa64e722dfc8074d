//! Where a newly assigned partition starts reading: its committed offset checked against the
//! log by offset-engine's rules before the first fetch, never `auto.offset.reset` alone.
//!
//! For each partition: the group's commit (with its leader epoch, and the topic id kwire keeps
//! in the commit's metadata), the log's bounds, the topic id and leader epoch Metadata reports,
//! and OffsetForLeaderEpoch's end of the committed epoch (the truncation check, KIP-320) go
//! into one [`offset_engine::plan`]. The plan's range start is the position; its anomaly
//! (`topic_recreated`, `data_loss`, `offset_ahead_of_log`, `truncated`,
//! `leader_epoch_backwards`, `new_partition`) goes with it to the application, and a policy
//! failure (the default for an unusable commit) keeps the partition from being read.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use crate::cluster::client::Client;
use crate::cluster::router::TopicPartition;
use crate::error::ClientError;
use crate::groups::commit_metadata::topic_id_from_metadata;
use offset_engine::{
    Anomaly, FromReason, LeaderEpoch, LogState, LogView, Offset, OutOfRangePolicy, Outcome, PartitionInput,
    PlanRequest, SkipReason, StartPolicy, Stored, TopicId,
};

/// Where one partition starts, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartPosition {
    /// The partition.
    pub partition: TopicPartition,
    /// The first offset to read (inclusive).
    pub offset: i64,
    /// Why reading starts there: the committed offset, the start policy (nothing committed) or
    /// the out-of-range policy (a commit the log cannot honour).
    pub reason: FromReason,
    /// What the engine found about the commit, with its numbers (`None`: the commit is inside
    /// the log, on the same topic and leader epoch line).
    pub anomaly: Option<Anomaly>,
    /// The committed leader epoch, carried on so that the next commit never goes below it.
    pub committed_leader_epoch: Option<i32>,
    /// The topic id Metadata reported, committed with the partition's offsets.
    pub topic_id: Option<kafka_vocab::Uuid>,
}

/// Why a partition cannot start.
#[derive(Debug, Clone)]
pub enum StartRefusal {
    /// The chosen policy (`fail`, or `auto.offset.reset=none` with nothing committed) turned
    /// this anomaly into a refusal.
    Policy(Anomaly),
    /// The topic or partition does not exist (any more).
    Gone(Anomaly),
    /// The facts gathered contradict each other (a log start above the end, ...).
    InvalidInput(String),
    /// The commit, the log or Metadata could not be read.
    Unavailable(ClientError),
}

impl std::fmt::Display for StartRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Policy(a) => write!(f, "the offset policy refuses to start: {a}"),
            Self::Gone(a) => write!(f, "{a}"),
            Self::InvalidInput(text) => write!(f, "inconsistent facts about the log: {text}"),
            Self::Unavailable(e) => write!(f, "{e}"),
        }
    }
}

/// How to decide.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StartRules {
    pub(crate) start: StartPolicy,
    pub(crate) out_of_range: OutOfRangePolicy,
    pub(crate) isolation: kafka_vocab::Isolation,
    pub(crate) timeout: Duration,
}

/// The start of each of `partitions`, from `group`'s commits (none without a group); a
/// partition in `known` is planned from that position instead (a position the log no longer
/// has, found while reading).
pub(crate) async fn start_positions(
    client: &Client,
    group: Option<&str>,
    partitions: &[TopicPartition],
    known: &BTreeMap<TopicPartition, Stored>,
    rules: StartRules,
) -> BTreeMap<TopicPartition, Result<StartPosition, StartRefusal>> {
    let mut out = BTreeMap::new();
    if partitions.is_empty() {
        return out;
    }
    let unknown: Vec<TopicPartition> =
        partitions.iter().filter(|tp| !known.contains_key(tp)).cloned().collect();
    let committed = match group.filter(|_| !unknown.is_empty()) {
        Some(group) => match client.committed_offsets_of_partitions(group, &unknown, rules.timeout).await {
            Ok(c) => Some(c),
            Err(e) => {
                for tp in partitions {
                    out.insert(tp.clone(), Err(StartRefusal::Unavailable(e.clone())));
                }
                return out;
            }
        },
        None => None,
    };
    let topics: Vec<String> =
        partitions.iter().map(|tp| tp.topic.to_string()).collect::<BTreeSet<_>>().into_iter().collect();
    let metadata = match client.refresh_metadata(&topics).await {
        Ok(m) => m,
        Err(e) => {
            for tp in partitions {
                out.insert(tp.clone(), Err(StartRefusal::Unavailable(e.clone())));
            }
            return out;
        }
    };
    let ranges = client.log_ranges(partitions, rules.timeout).await;
    let mut inputs = Vec::with_capacity(partitions.len());
    let mut committed_epochs: HashMap<TopicPartition, Option<i32>> = HashMap::new();
    let mut topic_ids: HashMap<TopicPartition, Option<kafka_vocab::Uuid>> = HashMap::new();
    for tp in partitions {
        if let Some(refused) = committed.as_ref().and_then(|c| c.refused.get(tp)) {
            out.insert(tp.clone(), Err(StartRefusal::Unavailable(refused.clone())));
            continue;
        }
        let commit = committed.as_ref().and_then(|c| c.offsets.get(tp));
        let stored = match known.get(tp) {
            Some(stored) => Some(*stored),
            None => commit.and_then(|c| {
                let id = topic_id_from_metadata(c.metadata.as_deref()).map(|id| id.0);
                Stored::from_wire(c.offset, c.leader_epoch, id, None)
            }),
        };
        committed_epochs.insert(tp.clone(), stored.and_then(|s| s.leader_epoch).map(|e| e.0));
        let topic = metadata.topic(&tp.topic).filter(|t| t.error.is_ok() || !t.partitions.is_empty());
        let log = match topic {
            None => LogState::TopicNotFound,
            Some(t) if !t.partitions.iter().any(|p| p.partition == tp.partition) => {
                LogState::PartitionNotFound
            }
            Some(t) => match ranges.get(tp) {
                Some(Ok(r)) => {
                    topic_ids.insert(tp.clone(), t.topic_id.and_then(kafka_vocab::Uuid::known));
                    let mut view = LogView::new(r.log_start, r.high_watermark);
                    view.last_stable = Offset(r.last_stable);
                    view.leader_epoch = r.leader_epoch.and_then(LeaderEpoch::from_wire);
                    view.topic_id = t.topic_id.and_then(|id| TopicId::from_wire(id.0));
                    LogState::Found(view)
                }
                Some(Err(e)) => {
                    out.insert(tp.clone(), Err(StartRefusal::Unavailable(e.clone())));
                    continue;
                }
                None => {
                    let e = ClientError::InvalidArgument { message: format!("no log range answer for {tp}") };
                    out.insert(tp.clone(), Err(StartRefusal::Unavailable(e)));
                    continue;
                }
            },
        };
        inputs.push(PartitionInput::new(tp.clone(), stored, log));
    }
    epoch_ends(client, &mut inputs, rules.timeout).await;
    let request = PlanRequest {
        start: rules.start,
        out_of_range: rules.out_of_range,
        isolation: rules.isolation,
        partitions: inputs,
        ..PlanRequest::default()
    };
    let plan = offset_engine::plan(&request);
    for (entry, input) in plan.entries.into_iter().zip(&request.partitions) {
        let tp = entry.tp.clone();
        let anomaly = entry.anomaly.map(|a| *a);
        let start = |offset: i64, reason: FromReason, anomaly: Option<Anomaly>| StartPosition {
            partition: tp.clone(),
            offset,
            reason,
            anomaly,
            committed_leader_epoch: committed_epochs.get(&tp).copied().flatten(),
            topic_id: topic_ids.get(&tp).copied().flatten(),
        };
        let result = match (entry.outcome, anomaly) {
            (Outcome::Range(r), anomaly) => Ok(start(r.from.0, r.from_reason, anomaly)),
            // Readable once the open transaction ends: the fetch waits there.
            (Outcome::Skipped { reason: SkipReason::AwaitingStable { stored, .. } }, anomaly) => {
                Ok(start(stored.0, FromReason::Stored, anomaly))
            }
            (Outcome::Skipped { reason: SkipReason::InvalidInput(invalid) }, _) => {
                Err(StartRefusal::InvalidInput(format!("{invalid:?}")))
            }
            (Outcome::Skipped { .. }, Some(a)) => Err(StartRefusal::Gone(a)),
            (Outcome::Failed { .. }, Some(a)) => Err(StartRefusal::Policy(a)),
            (outcome, None) => Err(StartRefusal::InvalidInput(format!(
                "the plan gave {outcome:?} for {} without saying why",
                input.tp
            ))),
        };
        out.insert(tp, result);
    }
    out
}

/// OffsetForLeaderEpoch for each commit with a leader epoch on the same topic id: where that
/// epoch ends in today's log (a truncation under the commit shows here). Partitions the leader
/// does not answer are planned without it.
async fn epoch_ends(client: &Client, inputs: &mut [PartitionInput], timeout: Duration) {
    let asks: Vec<(TopicPartition, i32)> = inputs
        .iter()
        .filter_map(|p| {
            let stored = p.stored?;
            let epoch = stored.leader_epoch?;
            let LogState::Found(view) = p.log else { return None };
            let same_log = match (stored.topic_id, view.topic_id) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            };
            same_log.then(|| (p.tp.clone(), epoch.0))
        })
        .collect();
    if asks.is_empty() {
        return;
    }
    let answers = client.offset_for_leader_epoch(&asks, timeout).await;
    for p in inputs.iter_mut() {
        if let Some(Ok(end)) = answers.get(&p.tp) {
            p.end_offset_for_stored_epoch = end.end_offset.and_then(Offset::from_wire);
        }
    }
}
