//! `kwire group list` and `kwire group describe GROUP`: state, members, and per partition the
//! committed offset against the log, as three well-defined numbers (lag, consumable, lost).

use std::collections::{BTreeMap, BTreeSet};

use kafka_client::{GroupMember, GroupType, TopicPartition};
use offset_engine::{
    stored_lag, Isolation, Lag, LeaderEpoch, LogState, LogView, Offset, Sample, Stored, TimeLag, TopicId,
};
use serde_json::{json, Value};
use std::time::Duration;

use super::not_authorized::{self, Refusal};
use super::time_lag::{
    catch_up_state, catch_up_text, first_unconsumed_timestamps, format_ms, sample_of, time_lag_text,
    time_numbers, TimeNumbers,
};
use super::Context;
use crate::cli::{Format, GroupCommand, GroupDescribeArgs, TimeLagArg};
use crate::exit::Failure;
use crate::output::{out, outln, print_json, Table};
use crate::store::{self, StoreSpec};

pub async fn run(ctx: &Context, command: &GroupCommand) -> Result<(), Failure> {
    match command {
        GroupCommand::List => list(ctx).await,
        GroupCommand::Describe(args) => describe(ctx, args).await,
        GroupCommand::Check(args) => super::check::run(ctx, args).await,
        GroupCommand::Watch(args) => super::watch::run(ctx, args).await,
    }
}

async fn list(ctx: &Context) -> Result<(), Failure> {
    let client = ctx.client().await?;
    let groups = client.list_groups().await?;
    match ctx.format() {
        Format::Json => print_json(&json!({
            "groups": groups.iter().map(|g| json!({
                "group": g.group_id,
                "protocol_type": g.protocol_type,
                "state": g.state,
                "type": g.group_type,
                "coordinator": g.coordinator,
            })).collect::<Vec<_>>(),
        })),
        Format::Text => {
            let mut t = Table::new(["GROUP", "STATE", "TYPE", "PROTOCOL", "COORDINATOR"]);
            for g in &groups {
                t.row([
                    g.group_id.clone(),
                    g.state.clone().unwrap_or_default(),
                    g.group_type.clone().unwrap_or_default(),
                    g.protocol_type.clone(),
                    g.coordinator.to_string(),
                ]);
            }
            out!("{}", t.render());
        }
    }
    Ok(())
}

/// One partition's row: what is stored against what the log holds.
pub struct PartitionRow {
    pub tp: TopicPartition,
    /// What the store holds; `None` when nothing is stored.
    pub stored: Option<Stored>,
    pub log: LogState,
    pub lag: Lag,
}

impl PartitionRow {
    pub fn committed(&self) -> Option<i64> {
        self.stored.as_ref().map(|s| s.offset.0)
    }

    pub fn leader_epoch(&self) -> Option<i32> {
        self.stored.as_ref().and_then(|s| s.leader_epoch.map(|e| e.0))
    }

    pub fn commit_timestamp_ms(&self) -> Option<i64> {
        self.stored.as_ref().and_then(|s| s.commit_timestamp_ms)
    }
}

/// Stored offsets of `group` in `store` joined with the live log of every partition of the
/// topics involved (the stored topics plus `extra_topics`); NOT_AUTHORIZED when an ACL refuses
/// any of them (naming each), for commands that need them all.
pub async fn partition_rows(
    ctx: &Context,
    client: &std::sync::Arc<kafka_client::Client>,
    store: &StoreSpec,
    group: &str,
    topics: Option<&[String]>,
    isolation: Isolation,
) -> Result<Vec<PartitionRow>, Failure> {
    let rows = partition_rows_or_refused(ctx, client, store, group, topics, isolation).await?;
    if !rows.refused.is_empty() {
        return Err(not_authorized::refused(&rows.refused));
    }
    Ok(rows.rows)
}

/// The rows of [`partition_rows_or_refused`]: the authorized partitions', and what the ACLs
/// refused.
pub struct GroupRows {
    pub rows: Vec<PartitionRow>,
    /// Sorted; a topic Metadata refused is one entry (with its stored partitions, if any, each
    /// its own), a partition ListOffsets refused is one entry.
    pub refused: Vec<Refusal>,
}

/// [`partition_rows`] keeping the authorized rows when an ACL refuses some topics or
/// partitions: each refused one is a [`Refusal`] instead of a row.
///
/// A group's offsets read from Kafka without named topics cover only the topics the principal
/// may describe: the coordinator leaves the others out of its answer, so they cannot be listed.
pub async fn partition_rows_or_refused(
    ctx: &Context,
    client: &std::sync::Arc<kafka_client::Client>,
    store: &StoreSpec,
    group: &str,
    topics: Option<&[String]>,
    isolation: Isolation,
) -> Result<GroupRows, Failure> {
    let loaded = store::load_or_refused(store, ctx.store_access(client), group, topics).await?;
    // A partition the store refused is a refusal, never a row with nothing committed.
    let mut refused = Vec::new();
    let mut store_refused: BTreeSet<TopicPartition> = BTreeSet::new();
    for (tp, reason) in &loaded.refused {
        let client_error = reason.downcast_ref::<kafka_client::ClientError>();
        match (client_error, client_error.and_then(|e| Refusal::of(&tp.topic, Some(tp.partition), e))) {
            (_, Some(r)) => refused.push(r),
            (Some(e), None) => return Err(Failure::client(tp, e)),
            (None, None) => return Err(Failure::new(crate::exit::Exit::STORE, format!("{tp}: {reason}"))),
        }
        store_refused.insert(tp.clone());
    }
    rows_against_log(ctx, client, loaded.stored, topics, isolation, refused, &store_refused).await
}

/// The share-partition start offsets (KIP-932) of share group `group` in place of committed
/// offsets, limited to `topics` when given, joined with the live log as
/// [`partition_rows_or_refused`] does: lag is what the group has not yet acknowledged.
pub async fn share_group_rows(
    ctx: &Context,
    client: &std::sync::Arc<kafka_client::Client>,
    group: &str,
    topics: Option<&[String]>,
    isolation: Isolation,
) -> Result<GroupRows, Failure> {
    let starts = client.share_group_start_offsets(group, ctx.global.timeout).await?;
    let stored: store::StoredOffsets = starts
        .into_iter()
        .filter(|(tp, _)| topics.is_none_or(|names| names.iter().any(|n| **n == *tp.topic)))
        .filter_map(|(tp, s)| Some((tp, Stored::from_wire(s.offset, s.leader_epoch, None, None)?)))
        .collect();
    rows_against_log(ctx, client, stored, topics, isolation, Vec::new(), &BTreeSet::new()).await
}

/// `stored` joined with the live log of every partition of its topics plus `topics`;
/// `refused` holds what was refused before (and more is added), `store_refused` the
/// partitions the store refused, which get no row.
async fn rows_against_log(
    ctx: &Context,
    client: &std::sync::Arc<kafka_client::Client>,
    stored: store::StoredOffsets,
    topics: Option<&[String]>,
    isolation: Isolation,
    mut refused: Vec<Refusal>,
    store_refused: &BTreeSet<TopicPartition>,
) -> Result<GroupRows, Failure> {
    let timeout = ctx.global.timeout;
    let mut names: BTreeSet<String> = stored.keys().map(|tp| tp.topic.to_string()).collect();
    names.extend(topics.unwrap_or_default().iter().cloned());
    let names: Vec<String> = names.into_iter().collect();
    let metadata = client.refresh_metadata(&names).await?;
    let mut partitions: BTreeSet<TopicPartition> = BTreeSet::new();
    for name in &names {
        let stored_here = stored.keys().filter(|tp| *tp.topic == **name);
        match metadata.topic(name) {
            // Metadata hides a refused topic's partitions: the stored ones are each refused,
            // else the topic as a whole.
            Some(t) if t.error.is_authorization() => {
                let before = refused.len();
                refused.extend(stored_here.map(|tp| Refusal {
                    topic: name.clone(),
                    partition: Some(tp.partition),
                    code: t.error,
                }));
                if refused.len() == before {
                    refused.push(Refusal { topic: name.clone(), partition: None, code: t.error });
                }
            }
            t => {
                partitions.extend(stored_here.cloned());
                partitions.extend(
                    t.iter()
                        .flat_map(|t| &t.partitions)
                        .map(|p| TopicPartition::new(name.clone(), p.partition)),
                );
            }
        }
    }
    partitions.retain(|tp| !store_refused.contains(tp));
    let live: Vec<TopicPartition> = partitions
        .iter()
        .filter(|tp| {
            metadata
                .topic(&tp.topic)
                .is_some_and(|t| t.partitions.iter().any(|p| p.partition == tp.partition))
        })
        .cloned()
        .collect();
    let ranges = client.log_ranges(&live, timeout).await;
    let mut rows = Vec::new();
    for tp in partitions {
        let topic = metadata.topic(&tp.topic).filter(|t| t.error.is_ok() || !t.partitions.is_empty());
        let log = match (topic, ranges.get(&tp)) {
            (None, _) => LogState::TopicNotFound,
            (Some(_), None) => LogState::PartitionNotFound,
            (Some(t), Some(Ok(r))) => {
                let mut view = LogView::new(r.log_start, r.high_watermark);
                view.last_stable = Offset(r.last_stable);
                view.leader_epoch = r.leader_epoch.and_then(LeaderEpoch::from_wire);
                view.topic_id = t.topic_id.and_then(|id| TopicId::from_wire(id.0));
                LogState::Found(view)
            }
            (Some(_), Some(Err(e))) => match Refusal::of(&tp.topic, Some(tp.partition), e) {
                Some(r) => {
                    refused.push(r);
                    continue;
                }
                None => return Err(Failure::client(&tp, e)),
            },
        };
        let s = stored.get(&tp).copied();
        rows.push(PartitionRow {
            // Against the stored topic id: an offset of a recreated topic has no lag in the new
            // one, and read_committed waiting for a transaction is lag 0, not negative.
            lag: stored_lag(s.as_ref(), &log, isolation),
            stored: s,
            log,
            tp,
        });
    }
    refused.sort();
    Ok(GroupRows { rows, refused })
}

fn end_of(log: &LogState, isolation: Isolation) -> Option<i64> {
    match log {
        LogState::Found(v) => Some(v.end(isolation).0),
        _ => None,
    }
}

pub(crate) async fn describe(ctx: &Context, args: &GroupDescribeArgs) -> Result<(), Failure> {
    let client = ctx.client().await?;
    let isolation = args.isolation;
    let description = match args.store {
        StoreSpec::Kafka => Some(client.describe_group(&args.group, ctx.global.timeout).await?),
        _ => None,
    };
    let topics = (!args.topics.is_empty()).then_some(args.topics.as_slice());
    // A share group has no committed offsets: its position is the share-partition start offset.
    let share = description.as_ref().is_some_and(|d| d.group_type == GroupType::Share);
    let load = || async {
        if share {
            share_group_rows(ctx, &client, &args.group, topics, isolation).await
        } else {
            partition_rows_or_refused(ctx, &client, &args.store, &args.group, topics, isolation).await
        }
    };
    let GroupRows { mut rows, mut refused } = load().await?;
    let gap = args.sample.or((args.time_lag == TimeLagArg::Estimate).then_some(Duration::from_secs(2)));
    let mut earlier: BTreeMap<TopicPartition, Sample> = BTreeMap::new();
    if let Some(gap) = gap {
        let at = crate::time::now_ms();
        earlier.extend(rows.iter().filter_map(|r| sample_of(r, isolation, at).map(|s| (r.tp.clone(), s))));
        tokio::time::sleep(gap).await;
        GroupRows { rows, refused } = load().await?;
    }
    let timestamps = if args.time_lag == TimeLagArg::Fetch {
        first_unconsumed_timestamps(&client, &rows, isolation, ctx.global.timeout).await
    } else {
        BTreeMap::new()
    };
    let checkpoint = match &args.store {
        StoreSpec::Spark(path) => Some(crate::checkpoint::read(path)?),
        _ => None,
    };
    let dead = description.as_ref().is_none_or(|d| d.state == "Dead" && d.members.is_empty())
        && checkpoint.as_ref().is_none_or(|c| c.committed.is_none() && c.pending.is_none());
    // With refusals the group may well have offsets this principal cannot see.
    if dead && refused.is_empty() && rows.iter().all(|r| r.committed().is_none()) {
        return Err(Failure::new(
            crate::exit::Exit::NOT_FOUND,
            format!("unknown group `{}`: no members and no offsets in the {} store", args.group, args.store),
        ));
    }
    let now = crate::time::now_ms();
    let numbers: Vec<TimeNumbers> = rows
        .iter()
        .map(|r| {
            let before = earlier.get(&r.tp).map(std::slice::from_ref).unwrap_or_default();
            time_numbers(args.time_lag, r, isolation, now, &timestamps, before)
        })
        .collect();
    // Per topic: lag, consumable and lost summed, and the largest known time lag.
    let mut totals: BTreeMap<&str, (i64, i64, u64, Option<u64>)> = BTreeMap::new();
    for (r, n) in rows.iter().zip(&numbers) {
        let t = totals.entry(&*r.tp.topic).or_default();
        t.0 += r.lag.lag().unwrap_or(0);
        t.1 += r.lag.consumable().unwrap_or(0);
        t.2 += r.lag.lost().unwrap_or(0);
        t.3 = t.3.max(n.time_lag.ms());
    }
    match ctx.format() {
        Format::Json => ctx.emit_json(json!({
            "group": args.group,
            "store": args.store.to_string(),
            "state": description.as_ref().map(|d| d.state.clone()),
            "type": description.as_ref().map(|d| d.group_type.as_str()),
            "assignor": description.as_ref().map(|d| d.protocol.clone()).filter(|p| !p.is_empty()),
            "group_epoch": description.as_ref().and_then(|d| d.epochs).map(|e| e.group_epoch),
            "assignment_epoch": description.as_ref().and_then(|d| d.epochs).map(|e| e.assignment_epoch),
            "coordinator": description.as_ref().and_then(|d| d.coordinator.node_id),
            // What `committed` holds: a share group's share-partition start offsets.
            "position": if share { "share_start_offset" } else { "committed_offset" },
            "members": description.as_ref().map(|d| d.members.iter().map(member_json).collect::<Vec<_>>()).unwrap_or_default(),
            "checkpoint": checkpoint.as_ref().map(crate::checkpoint::json),
            "time_lag_mode": match args.time_lag {
                TimeLagArg::Fetch => "fetch",
                TimeLagArg::Estimate => "estimate",
                TimeLagArg::Off => "off",
            },
            "partitions": ordered(&rows, &refused).into_iter().map(|line| {
                let (r, n) = match line {
                    Line::Row(i) => (&rows[i], &numbers[i]),
                    Line::Refused(r) => return r.json_row(ctx.principal(), REFUSED_ABSENT),
                };
                let mut row = row_json(r, isolation, now);
                if let Some(o) = row.as_object_mut() {
                    o.insert("time_lag_ms".into(), json!(n.time_lag.ms()));
                    o.insert("time_lag_unknown".into(), json!(match n.time_lag {
                        TimeLag::Unknown(why) => Some(why.as_str()),
                        _ => None,
                    }));
                    o.insert("catch_up_ms".into(), json!(n.catch_up.and_then(|c| c.ms())));
                    o.insert("catch_up".into(), json!(catch_up_state(n.catch_up)));
                    o.insert("error".into(), Value::Null);
                }
                row
            }).collect::<Vec<_>>(),
            "topics": totals.iter().map(|(t, (lag, consumable, lost, time_lag))| json!({
                "topic": t, "lag": lag, "consumable": consumable, "lost": lost, "time_lag_ms": time_lag,
            })).collect::<Vec<_>>(),
        })),
        Format::Text => {
            match &description {
                Some(d) => {
                    let epochs = d.epochs.map_or_else(String::new, |e| {
                        format!("  epoch {}  assignment epoch {}", e.group_epoch, e.assignment_epoch)
                    });
                    let assignor = if d.protocol.is_empty() {
                        String::new()
                    } else {
                        format!("  assignor {}", d.protocol)
                    };
                    outln!(
                        "group {}  type {}  state {}  coordinator {}  members {}{assignor}{epochs}",
                        args.group,
                        d.group_type.as_str(),
                        d.state,
                        d.coordinator,
                        d.members.len()
                    );
                }
                None => outln!("group {}  store {}", args.group, args.store),
            }
            if share {
                outln!("share group: COMMITTED is the share-partition start offset (KIP-932): records below it are acknowledged");
            }
            for line in checkpoint.iter().flat_map(crate::checkpoint::text) {
                outln!("{line}");
            }
            if let Some(d) = &description {
                for m in &d.members {
                    let classic = m
                        .classic_assignment
                        .as_deref()
                        .map_or_else(String::new, |a| format!("  assigned {}", partition_list(a)));
                    let consumer = m.consumer.as_ref().map_or_else(|| classic.clone(), |c| {
                        let target = match &c.target_assignment {
                            Some(target) if *target != c.assignment => {
                                format!("  target {}", partition_list(target))
                            }
                            _ => String::new(),
                        };
                        format!(
                            "  epoch {}  assigned {}{target}",
                            c.member_epoch,
                            partition_list(&c.assignment)
                        )
                    });
                    outln!(
                        "  member {}  client {}  host {}{consumer}",
                        m.member_id,
                        m.client_id,
                        m.client_host
                    );
                }
            }
            let sampled = gap.is_some();
            let mut header = vec![
                "TOPIC",
                "PARTITION",
                "COMMITTED",
                "LOG_START",
                "END",
                "LAG",
                "CONSUMABLE",
                "LOST",
                "TIME_LAG",
                "EPOCH",
                "AGE",
            ];
            if sampled {
                header.push("CATCH_UP");
            }
            let mut t = Table::new(header);
            for line in ordered(&rows, &refused) {
                let (r, n) = match line {
                    Line::Row(i) => (&rows[i], &numbers[i]),
                    Line::Refused(r) => {
                        t.row_with_note([r.topic.clone(), r.partition_cell()], &r.marker(ctx.principal()));
                        continue;
                    }
                };
                let log_start = match &r.log {
                    LogState::Found(v) => v.log_start.0.to_string(),
                    LogState::PartitionNotFound => "gone".to_owned(),
                    LogState::TopicNotFound => "topic gone".to_owned(),
                };
                let mut cells = vec![
                    r.tp.topic.to_string(),
                    r.tp.partition.to_string(),
                    r.committed().map_or_else(|| "none".to_owned(), |c| c.to_string()),
                    log_start,
                    end_of(&r.log, isolation).map(|e| e.to_string()).unwrap_or_default(),
                    r.lag.lag().map_or_else(|| "-".to_owned(), |l| l.to_string()),
                    r.lag.consumable().map_or_else(|| "-".to_owned(), |c| c.to_string()),
                    r.lag.lost().map_or_else(|| "-".to_owned(), |l| l.to_string()),
                    time_lag_text(n.time_lag),
                    r.leader_epoch().map(|e| e.to_string()).unwrap_or_default(),
                    r.commit_timestamp_ms().map(|ts| format_age(now - ts)).unwrap_or_default(),
                ];
                if sampled {
                    cells.push(catch_up_text(n.catch_up));
                }
                t.row(cells);
            }
            out!("\n{}", t.render());
            let mut tt = Table::new(["TOPIC", "LAG", "CONSUMABLE", "LOST", "MAX_TIME_LAG"]);
            for (topic, (lag, consumable, lost, time_lag)) in &totals {
                tt.row([
                    (*topic).to_owned(),
                    lag.to_string(),
                    consumable.to_string(),
                    lost.to_string(),
                    time_lag.map_or_else(|| "-".to_owned(), format_ms),
                ]);
            }
            out!("\ntotals\n{}", tt.render());
        }
    }
    if !refused.is_empty() {
        return Err(not_authorized::partial(&refused, rows.len()));
    }
    Ok(())
}

/// The fields of an authorized partition's JSON row that a refused one has as null.
const REFUSED_ABSENT: &[&str] = &[
    "committed",
    "log_start",
    "high_watermark",
    "last_stable",
    "end",
    "lag",
    "consumable",
    "lost",
    "leader_epoch",
    "commit_age_ms",
    "log",
    "time_lag_ms",
    "time_lag_unknown",
    "catch_up_ms",
    "catch_up",
];

/// One line of a partition listing: a row (by index) or a refusal.
pub enum Line<'a> {
    Row(usize),
    Refused(&'a Refusal),
}

/// `rows` and `refused` in one order, by topic then partition; a topic refused as a whole comes
/// first among its topic's lines.
pub fn ordered<'a>(rows: &[PartitionRow], refused: &'a [Refusal]) -> Vec<Line<'a>> {
    let mut lines: Vec<(&str, Option<i32>, Line<'a>)> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (&*r.tp.topic, Some(r.tp.partition), Line::Row(i)))
        .chain(refused.iter().map(|r| (r.topic.as_str(), r.partition, Line::Refused(r))))
        .collect();
    lines.sort_by_key(|(topic, partition, _)| (*topic, *partition));
    lines.into_iter().map(|(_, _, line)| line).collect()
}

fn member_json(m: &GroupMember) -> Value {
    let partitions = |list: &[TopicPartition]| {
        list.iter().map(|tp| json!({"topic": tp.topic, "partition": tp.partition})).collect::<Vec<_>>()
    };
    let c = m.consumer.as_ref();
    json!({
        "member_id": m.member_id, "client_id": m.client_id, "client_host": m.client_host,
        "group_instance_id": m.group_instance_id,
        "member_epoch": c.map(|c| c.member_epoch),
        "rack_id": c.and_then(|c| c.rack_id.clone()),
        "subscribed_topics": c.map(|c| c.subscribed_topics.clone()),
        "subscribed_topic_regex": c.and_then(|c| c.subscribed_topic_regex.clone()),
        "assignment": m.assignment().map(partitions),
        "target_assignment": c.and_then(|c| c.target_assignment.as_deref()).map(partitions),
    })
}

/// `topic[0,1,2] other[4]` (the list is sorted, so each topic's partitions are together);
/// `-` when empty.
fn partition_list(list: &[TopicPartition]) -> String {
    if list.is_empty() {
        return "-".to_owned();
    }
    let mut by_topic: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for tp in list {
        by_topic.entry(&*tp.topic).or_default().push(tp.partition.to_string());
    }
    by_topic.iter().map(|(t, ps)| format!("{t}[{}]", ps.join(","))).collect::<Vec<_>>().join(" ")
}

fn row_json(r: &PartitionRow, isolation: Isolation, now: i64) -> Value {
    let (log_start, high_watermark, last_stable) = match &r.log {
        LogState::Found(v) => (Some(v.log_start.0), Some(v.high_watermark.0), Some(v.last_stable.0)),
        _ => (None, None, None),
    };
    json!({
        "topic": r.tp.topic,
        "partition": r.tp.partition,
        "committed": r.committed(),
        "log_start": log_start,
        "high_watermark": high_watermark,
        "last_stable": last_stable,
        "end": end_of(&r.log, isolation),
        "lag": r.lag.lag(),
        "consumable": r.lag.consumable(),
        "lost": r.lag.lost(),
        "leader_epoch": r.leader_epoch(),
        "commit_age_ms": r.commit_timestamp_ms().map(|ts| now - ts),
        "log": match r.log {
            LogState::Found(_) => "found",
            LogState::PartitionNotFound => "partition_gone",
            LogState::TopicNotFound => "topic_gone",
        },
    })
}

fn format_age(ms: i64) -> String {
    let s = ms / 1000;
    match s {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}
