//! The exporter's snapshot: what the last refresh read, kept as numbers (a few dozen bytes per
//! group partition, the label strings once per group and per partition), and rendered as
//! OpenMetrics text at each scrape in bounded chunks. Neither the snapshot nor a scrape holds
//! the whole body, which is about twelve lines per group partition (1,000 groups × 100
//! partitions: well over 100 MB of text).
//!
//! Names and labels follow kafka_exporter (danielqsj) where it has the number
//! (`kafka_consumergroup_current_offset`, `kafka_consumergroup_lag`,
//! `kafka_topic_partition_current_offset`, `kafka_topic_partition_oldest_offset`,
//! `kafka_consumergroup_members`, labels `consumergroup`, `topic`, `partition`); kwire's own
//! start with `kwire_`. A group of a non-Kafka store carries a `store` label naming it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_client::TopicPartition;
use offset_engine::{lag, Health, Isolation, Lag, LogView, Offset};

/// One partition of a topic some group has offsets in.
#[derive(Debug)]
pub(super) struct PartitionSnap {
    pub tp: TopicPartition,
    /// Its log bounds; `None` when they could not be read (its series are left out).
    pub view: Option<LogView>,
}

/// One group of the cluster or of a store.
#[derive(Debug)]
pub(super) struct GroupSnap {
    /// The non-Kafka store the group is kept in (its `store` label); `None` for the cluster's.
    pub store: Option<String>,
    pub group: String,
    /// Whether its offsets were read (its series are left out otherwise).
    pub up: bool,
    /// Its member count, for a cluster group whose coordinator answered.
    pub members: Option<usize>,
    /// Its rows, `Snapshot::rows[rows.start..rows.end]`: the groups' ranges follow each other
    /// in the order of [`Snapshot::groups`], so a row's group is found by bisection.
    pub rows: std::ops::Range<u32>,
}

/// One group partition (24 bytes: a refresh of 100,000 keeps 2.4 MB): an index into
/// [`Snapshot::partitions`] (whose `view` is known), the committed offset and what was derived
/// from the health window and the first unconsumed record at the refresh. Its group is the one
/// whose `rows` hold it.
#[derive(Debug, Clone, Copy)]
pub(super) struct RowSnap {
    pub partition: u32,
    pub committed: i64,
    /// Age of the first unconsumed record; [`RowSnap::UNKNOWN`] when unknown.
    lag_ms: u64,
    pub health: Option<Health>,
}

impl RowSnap {
    const UNKNOWN: u64 = u64::MAX;

    /// A row with its time lag and health not known yet.
    pub fn new(partition: u32, committed: i64) -> Self {
        Self { partition, committed, lag_ms: Self::UNKNOWN, health: None }
    }

    /// Age of the first unconsumed record; `None` when unknown.
    pub fn lag_ms(&self) -> Option<u64> {
        (self.lag_ms != Self::UNKNOWN).then_some(self.lag_ms)
    }

    pub fn set_lag_ms(&mut self, lag_ms: Option<u64>) {
        // An age of 585 million years is not told apart from unknown.
        self.lag_ms = lag_ms.map_or(Self::UNKNOWN, |ms| ms.min(Self::UNKNOWN - 1));
    }
}

/// What the last successful refresh saw.
#[derive(Debug, Default)]
pub(super) struct Snapshot {
    pub partitions: Vec<PartitionSnap>,
    pub groups: Vec<GroupSnap>,
    pub rows: Vec<RowSnap>,
    pub refreshed_at: Option<Instant>,
    pub refreshed_at_ms: i64,
    pub duration: Duration,
    /// Requests the refresh sent, by API.
    pub requests: BTreeMap<String, u64>,
}

impl Snapshot {
    /// Groups whose offsets could not be read.
    pub fn group_errors(&self) -> usize {
        self.groups.iter().filter(|g| !g.up).count()
    }

    /// Row `i`, its group, partition and log bounds.
    fn row_parts(&self, i: usize) -> Option<(&RowSnap, &GroupSnap, &TopicPartition, LogView)> {
        let row = self.rows.get(i)?;
        let g = self.groups.partition_point(|g| g.rows.end as usize <= i);
        let group = self.groups.get(g)?;
        let partition = self.partitions.get(row.partition as usize)?;
        Some((row, group, &partition.tp, partition.view?))
    }
}

/// Appends `v` as an OpenMetrics label value: backslash, double quote and newline escaped.
pub(super) fn push_label(buf: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => buf.push_str("\\\\"),
            '"' => buf.push_str("\\\""),
            '\n' => buf.push_str("\\n"),
            c => buf.push(c),
        }
    }
}

fn push_store(buf: &mut String, store: Option<&str>) {
    if let Some(store) = store {
        buf.push_str(",store=\"");
        push_label(buf, store);
        buf.push('"');
    }
}

fn push_tp(buf: &mut String, tp: &TopicPartition) {
    buf.push_str("topic=\"");
    push_label(buf, &tp.topic);
    let _ = write!(buf, "\",partition=\"{}\"", tp.partition);
}

/// The group series families, in the order they are served.
#[derive(Debug, Clone, Copy)]
enum Family {
    PartitionUp,
    PartitionCurrent,
    PartitionOldest,
    GroupUp,
    Members,
    Current,
    Lag,
    Consumable,
    Lost,
    LagSeconds,
    Health,
}

const FAMILIES: [Family; 11] = [
    Family::PartitionUp,
    Family::PartitionCurrent,
    Family::PartitionOldest,
    Family::GroupUp,
    Family::Members,
    Family::Current,
    Family::Lag,
    Family::Consumable,
    Family::Lost,
    Family::LagSeconds,
    Family::Health,
];

impl Family {
    /// `(name, type, help)`.
    fn header(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Family::PartitionUp => (
                "kwire_topic_partition_up",
                "gauge",
                "1 when the partition's log bounds were read in the last refresh (0: its series are left out).",
            ),
            Family::PartitionCurrent => {
                ("kafka_topic_partition_current_offset", "gauge", "High watermark of the partition.")
            }
            Family::PartitionOldest => {
                ("kafka_topic_partition_oldest_offset", "gauge", "Log start offset of the partition.")
            }
            Family::GroupUp => {
                ("kwire_consumergroup_up", "gauge", "1 when the group's offsets were read in the last refresh.")
            }
            Family::Members => ("kafka_consumergroup_members", "gauge", "Members of the group."),
            Family::Current => ("kafka_consumergroup_current_offset", "gauge", "Committed offset of the group."),
            Family::Lag => ("kafka_consumergroup_lag", "gauge", "High watermark minus committed offset."),
            Family::Consumable => ("kwire_consumergroup_consumable", "gauge", "Records still in the log to be read."),
            Family::Lost => ("kwire_consumergroup_lost", "gauge", "Records deleted before the group read them."),
            Family::LagSeconds => (
                "kwire_consumergroup_lag_seconds",
                "gauge",
                "Age of the first unconsumed record (0 caught up).",
            ),
            Family::Health => ("kwire_consumergroup_health", "stateset", "Health over the window of refreshes."),
        }
    }

    fn items(self, snap: &Snapshot) -> usize {
        match self {
            Family::PartitionUp | Family::PartitionCurrent | Family::PartitionOldest => snap.partitions.len(),
            Family::GroupUp | Family::Members => snap.groups.len(),
            _ => snap.rows.len(),
        }
    }

    /// Appends the lines of item `i` (none when it has no value).
    fn write(self, snap: &Snapshot, i: usize, buf: &mut String) {
        let name = self.header().0;
        match self {
            Family::PartitionUp | Family::PartitionCurrent | Family::PartitionOldest => {
                let Some(p) = snap.partitions.get(i) else { return };
                let value = match (self, p.view) {
                    (Family::PartitionUp, view) => i64::from(view.is_some()),
                    (Family::PartitionCurrent, Some(v)) => v.high_watermark.0,
                    (_, Some(v)) => v.log_start.0,
                    (_, None) => return,
                };
                buf.push_str(name);
                buf.push('{');
                push_tp(buf, &p.tp);
                let _ = writeln!(buf, "}} {value}");
            }
            Family::GroupUp | Family::Members => {
                let Some(g) = snap.groups.get(i) else { return };
                let value = match self {
                    Family::GroupUp => u8::from(g.up) as usize,
                    _ => match g.members {
                        Some(m) => m,
                        None => return,
                    },
                };
                buf.push_str(name);
                buf.push_str("{consumergroup=\"");
                push_label(buf, &g.group);
                buf.push('"');
                push_store(buf, g.store.as_deref());
                let _ = writeln!(buf, "}} {value}");
            }
            _ => {
                let Some((row, group, tp, view)) = snap.row_parts(i) else { return };
                let l: Lag = lag(Some(Offset(row.committed)), &view, Isolation::ReadUncommitted);
                let labels = |buf: &mut String| {
                    buf.push_str("{consumergroup=\"");
                    push_label(buf, &group.group);
                    buf.push_str("\",");
                    push_tp(buf, tp);
                    push_store(buf, group.store.as_deref());
                };
                if let Family::Health = self {
                    let Some(health) = row.health else { return };
                    for state in Health::ALL {
                        buf.push_str(name);
                        labels(buf);
                        let _ =
                            writeln!(buf, ",{name}=\"{}\"}} {}", state.as_str(), u8::from(state == health));
                    }
                    return;
                }
                let value = |buf: &mut String, v: &dyn std::fmt::Display| {
                    buf.push_str(name);
                    labels(buf);
                    let _ = writeln!(buf, "}} {v}");
                };
                match self {
                    Family::Current => value(buf, &row.committed),
                    Family::Lag => {
                        if let Some(v) = l.lag() {
                            value(buf, &v);
                        }
                    }
                    Family::Consumable => {
                        if let Some(v) = l.consumable() {
                            value(buf, &v);
                        }
                    }
                    Family::Lost => {
                        if let Some(v) = l.lost() {
                            value(buf, &v);
                        }
                    }
                    _ => {
                        if let Some(ms) = row.lag_ms() {
                            value(buf, &format_args!("{:.3}", ms as f64 / 1000.0));
                        }
                    }
                }
            }
        }
    }
}

/// The group and topic series of a snapshot, produced a chunk at a time.
pub(super) struct Series {
    snap: Arc<Snapshot>,
    family: usize,
    item: usize,
}

impl Series {
    /// All series of `snap`; none when `stale` (data that old is not served as current).
    pub fn new(snap: Arc<Snapshot>, stale: bool) -> Self {
        Self { snap, family: if stale { FAMILIES.len() } else { 0 }, item: 0 }
    }

    /// Appends lines to `buf` until it holds at least `chunk` bytes or the series end; `false`
    /// when nothing was left.
    pub fn fill(&mut self, buf: &mut String, chunk: usize) -> bool {
        if self.family >= FAMILIES.len() {
            return false;
        }
        while buf.len() < chunk {
            let Some(&family) = FAMILIES.get(self.family) else { break };
            if self.item == 0 {
                let (name, kind, help) = family.header();
                let _ = writeln!(buf, "# TYPE {name} {kind}\n# HELP {name} {help}");
            }
            if self.item < family.items(&self.snap) {
                family.write(&self.snap, self.item, buf);
                self.item += 1;
            } else {
                self.family += 1;
                self.item = 0;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> Snapshot {
        let view = |start, end| Some(LogView::new(start, end));
        Snapshot {
            partitions: vec![
                PartitionSnap { tp: TopicPartition::new("t\"1", 0), view: view(5, 40) },
                PartitionSnap { tp: TopicPartition::new("t\"1", 1), view: None },
            ],
            groups: vec![
                GroupSnap { store: None, group: "g\\a".into(), up: true, members: Some(2), rows: 0..1 },
                GroupSnap { store: None, group: "empty".into(), up: true, members: Some(0), rows: 1..1 },
                GroupSnap {
                    store: Some("file:/x".into()),
                    group: "g".into(),
                    up: true,
                    members: None,
                    rows: 1..2,
                },
                GroupSnap { store: None, group: "down".into(), up: false, members: None, rows: 2..2 },
            ],
            rows: vec![
                RowSnap { partition: 0, committed: 30, lag_ms: 1500, health: Some(Health::Warn) },
                RowSnap::new(0, 2),
            ],
            ..Snapshot::default()
        }
    }

    fn render(snap: Snapshot, stale: bool, chunk: usize) -> String {
        let mut series = Series::new(Arc::new(snap), stale);
        let (mut body, mut buf) = (String::new(), String::new());
        while series.fill(&mut buf, chunk) {
            body.push_str(&buf);
            buf.clear();
        }
        body
    }

    #[test]
    fn the_series_render_the_numbers_with_escaped_labels_whatever_the_chunk_size() {
        let body = render(snapshot(), false, 1 << 20);
        assert_eq!(render(snapshot(), false, 1), body);
        for line in [
            "kwire_topic_partition_up{topic=\"t\\\"1\",partition=\"0\"} 1",
            "kwire_topic_partition_up{topic=\"t\\\"1\",partition=\"1\"} 0",
            "kafka_topic_partition_current_offset{topic=\"t\\\"1\",partition=\"0\"} 40",
            "kafka_topic_partition_oldest_offset{topic=\"t\\\"1\",partition=\"0\"} 5",
            "kwire_consumergroup_up{consumergroup=\"g\\\\a\"} 1",
            "kwire_consumergroup_up{consumergroup=\"g\",store=\"file:/x\"} 1",
            "kwire_consumergroup_up{consumergroup=\"down\"} 0",
            "kafka_consumergroup_members{consumergroup=\"g\\\\a\"} 2",
            "kafka_consumergroup_current_offset{consumergroup=\"g\\\\a\",topic=\"t\\\"1\",partition=\"0\"} 30",
            "kafka_consumergroup_lag{consumergroup=\"g\\\\a\",topic=\"t\\\"1\",partition=\"0\"} 10",
            "kwire_consumergroup_consumable{consumergroup=\"g\\\\a\",topic=\"t\\\"1\",partition=\"0\"} 10",
            "kwire_consumergroup_lost{consumergroup=\"g\\\\a\",topic=\"t\\\"1\",partition=\"0\"} 0",
            "kwire_consumergroup_lag_seconds{consumergroup=\"g\\\\a\",topic=\"t\\\"1\",partition=\"0\"} 1.500",
            "kwire_consumergroup_health{consumergroup=\"g\\\\a\",topic=\"t\\\"1\",partition=\"0\",kwire_consumergroup_health=\"WARN\"} 1",
            "kwire_consumergroup_health{consumergroup=\"g\\\\a\",topic=\"t\\\"1\",partition=\"0\",kwire_consumergroup_health=\"OK\"} 0",
            // Below log start: all 38 records behind, 3 of them deleted unread.
            "kafka_consumergroup_lag{consumergroup=\"g\",topic=\"t\\\"1\",partition=\"0\",store=\"file:/x\"} 38",
            "kwire_consumergroup_lost{consumergroup=\"g\",topic=\"t\\\"1\",partition=\"0\",store=\"file:/x\"} 3",
        ] {
            assert!(body.lines().any(|l| l == line), "no line {line} in\n{body}");
        }
        // Unread partition, unknown time lag and health, a store group's members: left out.
        assert!(!body
            .lines()
            .any(|l| l.starts_with("kafka_topic_partition_current_offset") && l.contains("\"1\"}")));
        assert_eq!(body.lines().filter(|l| l.starts_with("kwire_consumergroup_lag_seconds{")).count(), 1);
        assert_eq!(
            body.lines().filter(|l| l.starts_with("kwire_consumergroup_health{")).count(),
            Health::ALL.len()
        );
        assert_eq!(body.lines().filter(|l| l.starts_with("kafka_consumergroup_members{")).count(), 2);
        // A group without rows between two with rows: each row is served under its own group.
        assert_eq!(body.lines().filter(|l| l.contains("consumergroup=\"empty\"")).count(), 2);
        // Each family once, its samples together.
        assert_eq!(body.matches("# TYPE ").count(), FAMILIES.len());
    }

    #[test]
    fn a_stale_snapshot_serves_no_series() {
        assert_eq!(render(snapshot(), true, 1 << 20), "");
    }
}
