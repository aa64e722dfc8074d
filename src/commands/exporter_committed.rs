//! The committed offsets one exporter refresh reads, kept compact until the partitions are
//! known: each group's offsets become 16-byte rows (topic number, partition, offset) as soon as
//! they arrive, so the client's per-group maps of one batch of groups are all that is ever held
//! at once. The cluster's groups are read here, with the exporter's only call of
//! `committed_offsets_of_groups`.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use kafka_client::{Client, ClientError, CommittedOffsets, TopicPartition};

/// Groups asked per `committed_offsets_of_groups` call: one OffsetFetch per coordinator per
/// batch, the next batch asked while the last one's answers become rows. It bounds what the client and the coordinator
/// hold for one answer (250 groups of 100 partitions: 25,000 offsets, about 0.5 MB on the wire)
/// whatever the number of groups, at a few requests per thousand groups.
pub(super) const GROUPS_PER_ASK: usize = 250;

/// One group: where it is kept, and its rows (`None` when its offsets could not be read).
#[derive(Debug)]
pub(super) struct CommittedGroup {
    /// The non-Kafka store the group is kept in (its `store` label); `None` for the cluster's.
    pub store: Option<String>,
    pub group: String,
    pub rows: Option<Range<usize>>,
}

/// Every group's committed offsets, with the topic names kept once.
#[derive(Debug, Default)]
pub(super) struct Committed {
    /// The topics any group has offsets in, in the order first seen.
    pub topics: Vec<Arc<str>>,
    topic_numbers: HashMap<Arc<str>, u32>,
    pub groups: Vec<CommittedGroup>,
    /// `(topic number, partition, next offset to read)`, a group's in the order given.
    pub rows: Vec<(u32, i32, i64)>,
}

impl Committed {
    /// Adds a group with its offsets, or the failure to read them.
    pub fn push_group<E>(
        &mut self,
        store: Option<String>,
        group: String,
        offsets: Result<impl IntoIterator<Item = (TopicPartition, i64)>, E>,
    ) {
        let rows = offsets.ok().map(|offsets| {
            let start = self.rows.len();
            let mut last: Option<(Arc<str>, u32)> = None;
            for (tp, offset) in offsets {
                let topic = match &last {
                    Some((name, n)) if Arc::ptr_eq(name, &tp.topic) || **name == *tp.topic => *n,
                    _ => {
                        let n = self.topic_number(&tp.topic);
                        last = Some((tp.topic.clone(), n));
                        n
                    }
                };
                self.rows.push((topic, tp.partition, offset));
            }
            start..self.rows.len()
        });
        self.groups.push(CommittedGroup { store, group, rows });
    }

    fn topic_number(&mut self, topic: &Arc<str>) -> u32 {
        if let Some(&n) = self.topic_numbers.get(topic) {
            return n;
        }
        let n = u32::try_from(self.topics.len()).unwrap_or(u32::MAX);
        self.topics.push(topic.clone());
        self.topic_numbers.insert(topic.clone(), n);
        n
    }
}

/// Reads the committed offsets of the cluster's `groups` into `into`, [`GROUPS_PER_ASK`]
/// groups per call, each batch's answers made into rows while the next batch is asked.
pub(super) async fn read_cluster_groups(
    client: &Client,
    groups: &[String],
    timeout: Duration,
    into: &mut Committed,
) {
    let mut batches = groups.chunks(GROUPS_PER_ASK);
    let Some(first) = batches.next() else { return };
    let mut answer = client.committed_offsets_of_groups(first, timeout).await;
    for batch in batches {
        let absorb = async { absorb(into, answer) };
        let (next, ()) = tokio::join!(client.committed_offsets_of_groups(batch, timeout), absorb);
        answer = next;
    }
    absorb(into, answer);
}

/// One batch's answers, made rows.
fn absorb(into: &mut Committed, answer: BTreeMap<String, Result<CommittedOffsets, ClientError>>) {
    for (group, result) in answer {
        // A group with any partition refused is not served partly: its `up` series says 0.
        let offsets =
            result.and_then(CommittedOffsets::complete).map(|m| m.into_iter().map(|(tp, c)| (tp, c.offset)));
        into.push_group(None, group, offsets);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_group_keeps_its_rows_and_each_topic_is_numbered_once() {
        let mut committed = Committed::default();
        let tp = |t: &str, p| TopicPartition::new(t, p);
        committed.push_group::<()>(
            None,
            "a".into(),
            Ok(vec![(tp("x", 0), 5), (tp("x", 1), 6), (tp("y", 0), 7)]),
        );
        committed.push_group(Some("zk".into()), "b".into(), Err::<Vec<(TopicPartition, i64)>, _>("refused"));
        committed.push_group::<()>(None, "c".into(), Ok(vec![(tp("y", 2), 8)]));
        assert_eq!(committed.topics, [Arc::from("x"), Arc::from("y")]);
        assert_eq!(committed.rows, [(0, 0, 5), (0, 1, 6), (1, 0, 7), (1, 2, 8)]);
        let rows: Vec<_> = committed.groups.iter().map(|g| (g.group.as_str(), g.rows.clone())).collect();
        assert_eq!(rows, [("a", Some(0..3)), ("b", None), ("c", Some(3..4))]);
        assert_eq!(committed.groups[1].store.as_deref(), Some("zk"));
    }
}
