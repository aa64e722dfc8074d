//! The health window of every group partition the exporter watches, kept compact: the refresh
//! times once, the log end once per partition, and per group partition only its committed
//! offsets (one `i64` per refresh in the window). A group partition or partition that a refresh
//! did not read leaves the window (its history restarts when it is read again), so the last
//! `k` entries of each line up with the last `k` refresh times.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use kafka_wire::client::TopicPartition;
use offset_engine::{evaluate_health, Health, HealthConfig, HealthFacts, LogView, Sample};

#[derive(Debug)]
struct Track {
    /// The refresh that last recorded it.
    seq: u64,
    committed: VecDeque<i64>,
}

/// Samples of the last `window` refreshes.
#[derive(Debug)]
pub(super) struct Tracks {
    window: usize,
    seq: u64,
    times: VecDeque<i64>,
    ends: HashMap<TopicPartition, VecDeque<i64>>,
    /// By (group key: the store label and the group id), partition.
    committed: HashMap<(Arc<str>, TopicPartition), Track>,
}

impl Tracks {
    pub fn new(window: usize) -> Self {
        Self {
            window: window.max(1),
            seq: 0,
            times: VecDeque::new(),
            ends: HashMap::new(),
            committed: HashMap::new(),
        }
    }

    /// Starts a refresh at `now_ms` that read the log bounds `views`.
    pub fn begin(&mut self, now_ms: i64, views: &BTreeMap<TopicPartition, LogView>) {
        self.seq += 1;
        push(&mut self.times, now_ms, self.window);
        self.ends.retain(|tp, _| views.contains_key(tp));
        for (tp, view) in views {
            let window = self.window;
            let ends = self.ends.entry(tp.clone()).or_insert_with(|| VecDeque::with_capacity(window));
            push(ends, view.high_watermark.0, window);
        }
    }

    /// Records group `key`'s `committed` offset on `tp` (whose bounds this refresh read as
    /// `view`) and evaluates the window.
    pub fn health(
        &mut self,
        key: &Arc<str>,
        tp: &TopicPartition,
        committed: i64,
        view: &LogView,
        anomaly: bool,
    ) -> Option<Health> {
        let (seq, window) = (self.seq, self.window);
        let track = self
            .committed
            .entry((key.clone(), tp.clone()))
            .or_insert_with(|| Track { seq, committed: VecDeque::with_capacity(window) });
        track.seq = seq;
        push(&mut track.committed, committed, window);
        let ends = self.ends.get(tp)?;
        let k = track.committed.len().min(ends.len()).min(self.times.len());
        let samples: Vec<Sample> = (0..k)
            .map(|i| Sample {
                at_ms: self.times[self.times.len() - k + i],
                end: ends[ends.len() - k + i],
                committed: Some(track.committed[track.committed.len() - k + i]),
            })
            .collect();
        let now = *self.times.back()?;
        let facts = HealthFacts { log_start: view.log_start.0, anomaly, last_commit_ms: None };
        evaluate_health(&samples, facts, now, HealthConfig::default())
    }

    /// Ends the refresh: group partitions it did not record leave the window.
    pub fn finish(&mut self) {
        let seq = self.seq;
        self.committed.retain(|_, t| t.seq == seq);
    }
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

    fn views(ends: &[(i32, i64)]) -> BTreeMap<TopicPartition, LogView> {
        ends.iter().map(|&(p, end)| (TopicPartition::new("t", p), LogView::new(0, end))).collect()
    }

    /// One refresh: the partitions' ends, then `(partition, committed)` of group `g`.
    fn refresh(
        tracks: &mut Tracks,
        at: i64,
        ends: &[(i32, i64)],
        committed: &[(i32, i64)],
    ) -> Vec<Option<Health>> {
        let views = views(ends);
        tracks.begin(at, &views);
        let key: Arc<str> = "\0g".into();
        let out = committed
            .iter()
            .map(|&(p, c)| {
                let tp = TopicPartition::new("t", p);
                tracks.health(&key, &tp, c, &views[&tp], false)
            })
            .collect();
        tracks.finish();
        out
    }

    #[test]
    fn the_window_gives_each_group_partition_its_own_committed_history_against_the_shared_ends() {
        let mut tracks = Tracks::new(3);
        assert_eq!(refresh(&mut tracks, 0, &[(0, 100), (1, 100)], &[(0, 10), (1, 10)]), [None, None]);
        assert_eq!(
            refresh(&mut tracks, 1000, &[(0, 200), (1, 200)], &[(0, 10), (1, 120)]),
            [Some(Health::Stall), Some(Health::Ok)]
        );
        // Partition 0 committed 10 → 10 → 150, its lag 90 → 190 → 150 (not growing at every
        // step); partition 1 moved backwards.
        assert_eq!(
            refresh(&mut tracks, 2000, &[(0, 300), (1, 300)], &[(0, 150), (1, 100)]),
            [Some(Health::Ok), Some(Health::Rewind)]
        );
        assert_eq!(tracks.committed.values().map(|t| t.committed.len()).max(), Some(3));
        // A window of three: the first sample (lag 90) is gone, partition 0's lag 190 → 150 → 150.
        assert_eq!(
            refresh(&mut tracks, 3000, &[(0, 400), (1, 400)], &[(0, 250), (1, 100)])[0],
            Some(Health::Ok)
        );
        assert!(tracks.committed.values().all(|t| t.committed.len() == 3));
    }

    #[test]
    fn a_group_partition_not_read_by_a_refresh_starts_its_window_again() {
        let mut tracks = Tracks::new(5);
        refresh(&mut tracks, 0, &[(0, 100)], &[(0, 10)]);
        refresh(&mut tracks, 1000, &[(0, 200)], &[(0, 10)]);
        // The partition's bounds could not be read: neither it nor the group partition is kept.
        refresh(&mut tracks, 2000, &[], &[]);
        assert!(tracks.committed.is_empty() && tracks.ends.is_empty());
        // Read again: one sample, too few for a verdict on a lagging partition (no stale STALL).
        // A window of three: the first sample (lag 90) is gone, partition 0's lag 190 → 150 → 150.
        assert_eq!(refresh(&mut tracks, 3000, &[(0, 300)], &[(0, 10)]), [None]);
        assert_eq!(refresh(&mut tracks, 4000, &[(0, 400)], &[(0, 10)]), [Some(Health::Stall)]);
    }
}
