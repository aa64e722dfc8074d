//! The health window of every group partition the exporter watches, kept compact: the refresh
//! times once, the log end once per partition, and per group one flat array of committed
//! offsets (`window` slots per group partition) with the partitions' indexes, no per-partition
//! allocation or string key. A group partition or partition that a refresh did not read leaves
//! the window (its history restarts when it is read again), so the last `k` entries of each
//! line up with the last `k` refresh times.
//!
//! The contract with the refresh: the partitions it passes to [`Tracks::begin`] are sorted and
//! unique (by topic, then partition), and each group's rows given to [`Tracks::record_group`]
//! are sorted by partition index. A group partition's history is then found by walking the
//! group's previous entries alongside its rows, carrying each previous partition index to the
//! current one.

use std::collections::{HashMap, VecDeque};

use kafka_client::TopicPartition;
use offset_engine::{evaluate_health, Health, HealthConfig, HealthFacts, LogView, Sample};

use super::exporter_snapshot::{PartitionSnap, RowSnap};

/// One group's window: for entry `i`, `partitions[i]` (an index into the partitions of the
/// refresh that recorded it) and the oldest-first committed offsets
/// `committed[i * window..][..lens[i]]`.
#[derive(Debug)]
struct GroupTrack {
    /// The refresh that last recorded it.
    seq: u64,
    partitions: Vec<u32>,
    lens: Vec<u16>,
    committed: Vec<i64>,
}

/// Samples of the last `window` refreshes.
#[derive(Debug)]
pub(super) struct Tracks {
    window: usize,
    seq: u64,
    times: VecDeque<i64>,
    /// The partitions of the current refresh, to find where a partition of the next one was.
    index: HashMap<TopicPartition, u32>,
    /// By partition index of the current refresh: its high watermarks, oldest first; `None`
    /// when its bounds were not read.
    ends: Vec<Option<VecDeque<i64>>>,
    /// By partition index of the previous refresh: its index in the current one, if still read.
    carry: Vec<Option<u32>>,
    /// By group key (the store label and the group id).
    groups: HashMap<String, GroupTrack>,
    /// Scratch for one evaluation, kept to spare an allocation per group partition.
    samples: Vec<Sample>,
}

impl Tracks {
    pub fn new(window: usize) -> Self {
        Self {
            // A window holds at most `u16::MAX` samples (the CLI allows 1,000).
            window: window.clamp(1, usize::from(u16::MAX)),
            seq: 0,
            times: VecDeque::new(),
            index: HashMap::new(),
            ends: Vec::new(),
            carry: Vec::new(),
            groups: HashMap::new(),
            samples: Vec::new(),
        }
    }

    /// Starts a refresh at `now_ms` over `partitions` (sorted and unique), whose `view` is
    /// `None` where their bounds could not be read.
    pub fn begin(&mut self, now_ms: i64, partitions: &[PartitionSnap]) {
        self.seq += 1;
        push(&mut self.times, now_ms, self.window);
        let mut previous_ends = std::mem::take(&mut self.ends);
        self.carry = vec![None; previous_ends.len()];
        let mut index = HashMap::with_capacity(partitions.len());
        for (i, p) in partitions.iter().enumerate() {
            let i = u32::try_from(i).unwrap_or(u32::MAX);
            let before = self.index.get(&p.tp).map(|&b| b as usize);
            let ends = p.view.map(|view| {
                let mut ends = before
                    .and_then(|b| previous_ends.get_mut(b).and_then(Option::take))
                    .unwrap_or_else(|| VecDeque::with_capacity(self.window));
                push(&mut ends, view.high_watermark.0, self.window);
                ends
            });
            if let (Some(b), true) = (before, ends.is_some()) {
                if let Some(slot) = self.carry.get_mut(b) {
                    *slot = Some(i);
                }
            }
            self.ends.push(ends);
            index.insert(p.tp.clone(), i);
        }
        self.index = index;
    }

    /// Records one group's committed offsets, `rows` (sorted by partition index, each on a
    /// partition whose bounds this refresh read), under `key`, and sets each row's health from
    /// the window; `anomaly` says whether the engine names an anomaly for a row.
    pub fn record_group(
        &mut self,
        key: &str,
        rows: &mut [RowSnap],
        partitions: &[PartitionSnap],
        anomaly: impl Fn(&RowSnap, &LogView) -> bool,
    ) {
        let (seq, window) = (self.seq, self.window);
        let before = self.groups.remove(key);
        let mut track = GroupTrack {
            seq,
            partitions: Vec::with_capacity(rows.len()),
            lens: Vec::with_capacity(rows.len()),
            committed: Vec::with_capacity(rows.len() * window),
        };
        let mut next = 0;
        for row in rows.iter_mut() {
            let mut history: &[i64] = &[];
            if let Some(before) = &before {
                while let Some(&was) = before.partitions.get(next) {
                    match self.carry.get(was as usize).copied().flatten() {
                        Some(now) if now > row.partition => break,
                        Some(now) if now == row.partition => {
                            let len = usize::from(before.lens[next]);
                            history = &before.committed[next * window..next * window + len];
                            next += 1;
                            break;
                        }
                        // Gone, or a partition this group has no row on any more.
                        _ => next += 1,
                    }
                }
            }
            let kept = &history[history.len().saturating_sub(window - 1)..];
            let start = track.committed.len();
            track.committed.extend_from_slice(kept);
            track.committed.push(row.committed);
            let len = kept.len() + 1;
            track.committed.resize(start + window, 0);
            track.partitions.push(row.partition);
            track.lens.push(u16::try_from(len).unwrap_or(u16::MAX));
            let (Some(Some(ends)), Some(view)) = (
                self.ends.get(row.partition as usize),
                partitions.get(row.partition as usize).and_then(|p| p.view),
            ) else {
                row.health = None;
                continue;
            };
            let facts = HealthFacts {
                log_start: view.log_start.0,
                anomaly: anomaly(row, &view),
                last_commit_ms: None,
            };
            row.health =
                evaluate(&mut self.samples, &self.times, ends, &track.committed[start..start + len], facts);
        }
        self.groups.insert(key.to_owned(), track);
    }

    /// Ends the refresh: groups it did not record leave the window.
    pub fn finish(&mut self) {
        let seq = self.seq;
        self.groups.retain(|_, g| g.seq == seq);
    }
}

/// The health over the last `k` samples that `times`, `ends` and `committed` (each oldest
/// first, ending at this refresh) all have.
fn evaluate(
    samples: &mut Vec<Sample>,
    times: &VecDeque<i64>,
    ends: &VecDeque<i64>,
    committed: &[i64],
    facts: HealthFacts,
) -> Option<Health> {
    let k = committed.len().min(ends.len()).min(times.len());
    samples.clear();
    samples.extend((0..k).map(|i| Sample {
        at_ms: times[times.len() - k + i],
        end: ends[ends.len() - k + i],
        committed: Some(committed[committed.len() - k + i]),
    }));
    let now = *times.back()?;
    evaluate_health(samples, facts, now, HealthConfig::default())
}

fn push(q: &mut VecDeque<i64>, v: i64, window: usize) {
    q.push_back(v);
    while q.len() > window {
        q.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One refresh: the partitions' ends (`None`: bounds not read), then `(partition, committed)`
    /// of group `g`.
    fn refresh(
        tracks: &mut Tracks,
        at: i64,
        ends: &[(i32, Option<i64>)],
        committed: &[(i32, i64)],
    ) -> Vec<Option<Health>> {
        let partitions: Vec<PartitionSnap> = ends
            .iter()
            .map(|&(p, end)| PartitionSnap {
                tp: TopicPartition::new("t", p),
                view: end.map(|e| LogView::new(0, e)),
            })
            .collect();
        tracks.begin(at, &partitions);
        let mut rows: Vec<RowSnap> = committed
            .iter()
            .map(|&(p, c)| {
                let i = partitions.iter().position(|x| x.tp.partition == p).unwrap();
                RowSnap::new(u32::try_from(i).unwrap(), c)
            })
            .collect();
        tracks.record_group("\0g", &mut rows, &partitions, |_, _| false);
        tracks.finish();
        rows.iter().map(|r| r.health).collect()
    }

    fn lens(tracks: &Tracks) -> Vec<u16> {
        tracks.groups.values().flat_map(|g| g.lens.iter().copied()).collect()
    }

    #[test]
    fn the_window_gives_each_group_partition_its_own_committed_history_against_the_shared_ends() {
        let mut tracks = Tracks::new(3);
        let ends = |e| [(0, Some(e)), (1, Some(e))];
        assert_eq!(refresh(&mut tracks, 0, &ends(100), &[(0, 10), (1, 10)]), [None, None]);
        assert_eq!(
            refresh(&mut tracks, 1000, &ends(200), &[(0, 10), (1, 120)]),
            [Some(Health::Stall), Some(Health::Ok)]
        );
        // Partition 0 committed 10 → 10 → 150, its lag 90 → 190 → 150 (not growing at every
        // step); partition 1 moved backwards.
        assert_eq!(
            refresh(&mut tracks, 2000, &ends(300), &[(0, 150), (1, 100)]),
            [Some(Health::Ok), Some(Health::Rewind)]
        );
        assert_eq!(lens(&tracks).into_iter().max(), Some(3));
        // A window of three: the first sample (lag 90) is gone, partition 0's lag 190 → 150 → 150.
        assert_eq!(refresh(&mut tracks, 3000, &ends(400), &[(0, 250), (1, 100)])[0], Some(Health::Ok));
        assert!(lens(&tracks).iter().all(|&l| l == 3));
    }

    #[test]
    fn a_group_partition_not_read_by_a_refresh_starts_its_window_again() {
        let mut tracks = Tracks::new(5);
        refresh(&mut tracks, 0, &[(0, Some(100))], &[(0, 10)]);
        refresh(&mut tracks, 1000, &[(0, Some(200))], &[(0, 10)]);
        // The partition's bounds could not be read: neither it nor the group partition is kept.
        refresh(&mut tracks, 2000, &[(0, None)], &[]);
        assert!(lens(&tracks).is_empty() && tracks.ends.iter().all(Option::is_none));
        // Read again: one sample, too few for a verdict on a lagging partition (no stale STALL).
        assert_eq!(refresh(&mut tracks, 3000, &[(0, Some(300))], &[(0, 10)]), [None]);
        assert_eq!(refresh(&mut tracks, 4000, &[(0, Some(400))], &[(0, 10)]), [Some(Health::Stall)]);
    }

    #[test]
    fn a_partition_that_appears_before_another_keeps_each_group_partition_its_own_history() {
        let mut tracks = Tracks::new(3);
        refresh(&mut tracks, 0, &[(1, Some(100)), (3, Some(100))], &[(1, 10), (3, 50)]);
        // Partitions 0 and 2 appear around them: the indexes of 1 and 3 move from 0, 1 to 1, 3.
        let all = |e| [(0, Some(e)), (1, Some(e)), (2, Some(e)), (3, Some(e))];
        assert_eq!(
            refresh(&mut tracks, 1000, &all(200), &[(0, 5), (1, 10), (2, 5), (3, 40)]),
            [None, Some(Health::Stall), None, Some(Health::Rewind)]
        );
        assert_eq!(lens(&tracks), [1, 2, 1, 2]);
    }
}
