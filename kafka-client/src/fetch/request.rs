//! A Fetch request built from what one round wants of one broker's partitions and that
//! broker's fetch session, sans-IO: no socket, no clock. The session itself (which partitions
//! an incremental request lists, which it forgets) is `cluster/fetch_session.rs`; the round
//! that sends the request is [`Client::fetch_range`](crate::Client::fetch_range)'s
//! (`ranges.rs`).
//!
//! Offsets are Kafka offsets (`fetch_offset`, the first one wanted, inclusive); byte counts are
//! compressed record bytes, as the broker counts them (`partition_max_bytes` per partition,
//! `max_bytes` per response).

use std::cmp::Reverse;
use std::collections::HashMap;
use std::time::Duration;

use crate::cluster::fetch_session::{PartitionFetch, SessionRequest};
use crate::cluster::route_plan::LeaderBatch;
use kafka_vocab::{Isolation, TopicPartition};
use kafka_wire::protocol::messages::fetch::{self, READ_COMMITTED, READ_UNCOMMITTED};
use kafka_wire::protocol::messages::{FetchPartition, FetchRequest, FetchTopic, ForgottenTopic};
use kafka_wire::protocol::{TaggedFields, Uuid};

use super::progress::Want;

/// The first Fetch version with sessions (KIP-227).
pub(super) const SESSIONS_FROM: i16 = 7;

/// What a Fetch request says besides its partitions: [`FetchOptions`](crate::FetchOptions)'
/// limits and isolation, and the client's rack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RequestFields<'a> {
    /// How long the broker may wait for `min_bytes` (`max_wait_ms`, saturating at `i32::MAX`
    /// milliseconds).
    pub(super) max_wait: Duration,
    /// Bytes the broker waits for before answering.
    pub(super) min_bytes: i32,
    /// Cap on the response's record bytes (v3+).
    pub(super) max_bytes: i32,
    /// `isolation_level` (v4+).
    pub(super) isolation: Isolation,
    /// `rack_id` (v11+; empty for `None`): a leader names a preferred read replica in this rack.
    pub(super) rack: Option<&'a str>,
}

/// The partitions of one leader's batch with what to ask of each. Partitions that made no
/// progress last round go first: a broker always sends the first batch of the first partition
/// with data, however large.
pub(super) fn wanted_in_order(
    batch: &LeaderBatch,
    requested: &HashMap<TopicPartition, Want>,
) -> Vec<(TopicPartition, PartitionFetch)> {
    let mut parts: Vec<(&TopicPartition, Option<i32>, Want)> =
        batch.iter().filter_map(|(tp, epoch)| Some((tp, *epoch, *requested.get(tp)?))).collect();
    parts.sort_by_key(|(tp, _, want)| (Reverse(want.stalls), (*tp).clone()));
    parts
        .into_iter()
        .map(|(tp, leader_epoch, want)| {
            (
                tp.clone(),
                PartitionFetch { fetch_offset: want.position, max_bytes: want.max_bytes, leader_epoch },
            )
        })
        .collect()
}

/// The Fetch request at `version`: below v7 every wanted partition, sessionless; from v7 the
/// session's request (`plan`) — its partitions and forgotten partitions, id and epoch.
pub(super) fn build_request(
    wanted: &[(TopicPartition, PartitionFetch)],
    plan: &SessionRequest,
    ids: &HashMap<String, Uuid>,
    fields: &RequestFields<'_>,
    version: i16,
) -> FetchRequest {
    let sessions = version >= SESSIONS_FROM;
    let send = if sessions { plan.send.as_slice() } else { wanted };
    let mut topics: Vec<FetchTopic> = Vec::new();
    for (tp, want) in send {
        let partition = FetchPartition {
            partition: tp.partition,
            current_leader_epoch: (version >= 9).then_some(want.leader_epoch.unwrap_or(-1)),
            fetch_offset: want.fetch_offset,
            last_fetched_epoch: (version >= 12).then_some(-1),
            log_start_offset: (version >= 5).then_some(-1),
            partition_max_bytes: want.max_bytes,
            replica_directory_id: None,
            high_watermark: None,
            tagged_fields: TaggedFields::default(),
        };
        match topics.last_mut() {
            Some(last) if last.topic.as_deref() == Some(&*tp.topic) => last.partitions.push(partition),
            _ => topics.push(FetchTopic {
                topic: Some(tp.topic.to_string()),
                topic_id: ids.get(&*tp.topic).copied(),
                partitions: vec![partition],
                tagged_fields: TaggedFields::default(),
            }),
        }
    }
    let mut forgotten: Vec<ForgottenTopic> = Vec::new();
    if sessions {
        for tp in &plan.forget {
            match forgotten.last_mut() {
                Some(last) if last.topic.as_deref() == Some(&*tp.topic) => {
                    last.partitions.push(tp.partition);
                }
                _ => forgotten.push(ForgottenTopic {
                    topic: Some(tp.topic.to_string()),
                    topic_id: ids.get(&*tp.topic).copied(),
                    partitions: vec![tp.partition],
                    tagged_fields: TaggedFields::default(),
                }),
            }
        }
    }
    FetchRequest {
        cluster_id: None,
        replica_id: Some(fetch::CONSUMER_REPLICA_ID),
        replica_state: None,
        max_wait_ms: i32::try_from(fields.max_wait.as_millis()).unwrap_or(i32::MAX),
        min_bytes: fields.min_bytes,
        max_bytes: Some(fields.max_bytes),
        isolation_level: Some(match fields.isolation {
            Isolation::ReadUncommitted => READ_UNCOMMITTED,
            Isolation::ReadCommitted => READ_COMMITTED,
        }),
        session_id: Some(if sessions { plan.session_id } else { 0 }),
        session_epoch: Some(if sessions { plan.session_epoch } else { -1 }),
        topics,
        forgotten_topics_data: Some(forgotten),
        rack_id: Some(fields.rack.unwrap_or_default().to_owned()),
        tagged_fields: TaggedFields::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::fetch_session::FetchSession;
    use crate::fetch::ranges::FetchOptions;

    type Shape<'a> = Vec<(Option<&'a str>, Vec<(i32, i64, i32, Option<i32>)>)>;

    #[test]
    fn stalled_partitions_go_first_and_topics_stay_grouped() {
        let a0 = TopicPartition::new("a", 0);
        let a1 = TopicPartition::new("a", 1);
        let b0 = TopicPartition::new("b", 0);
        let batch: LeaderBatch = vec![(a0.clone(), Some(3)), (a1.clone(), None), (b0.clone(), Some(1))];
        let requested: HashMap<TopicPartition, Want> = [
            (a0, Want { position: 5, max_bytes: 100, stalls: 0 }),
            (a1, Want { position: 6, max_bytes: 200, stalls: 0 }),
            (b0, Want { position: 7, max_bytes: 400, stalls: 2 }),
        ]
        .into_iter()
        .collect();
        let wanted = wanted_in_order(&batch, &requested);
        let plan = FetchSession::default().next_request(&wanted);
        let fields = FetchOptions::default().request_fields(None);
        let r = build_request(&wanted, &plan, &HashMap::new(), &fields, 12);
        assert_eq!((r.session_id, r.session_epoch), (Some(0), Some(0)));
        let shape: Shape<'_> = r
            .topics
            .iter()
            .map(|t| {
                let ps = t
                    .partitions
                    .iter()
                    .map(|p| (p.partition, p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch))
                    .collect();
                (t.topic.as_deref(), ps)
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                (Some("b"), vec![(0, 7, 400, Some(1))]),
                (Some("a"), vec![(0, 5, 100, Some(3)), (1, 6, 200, Some(-1))]),
            ]
        );
        assert_eq!(r.isolation_level, Some(READ_UNCOMMITTED));
    }

    fn want(p: i32, position: i64) -> (TopicPartition, PartitionFetch) {
        (
            TopicPartition::new("t", p),
            PartitionFetch { fetch_offset: position, max_bytes: 100, leader_epoch: None },
        )
    }

    #[test]
    fn an_incremental_fetch_lists_only_moved_partitions_and_forgets_finished_ones() {
        let mut session = FetchSession::default();
        let first = session.next_request(&[want(0, 5), want(1, 6), want(2, 7)]);
        session.answered(&first, 77);
        // Partition 0 moved on, 1 did not, 2 is finished.
        let wanted = [want(0, 9), want(1, 6)];
        let plan = session.next_request(&wanted);
        let fields = FetchOptions::default().request_fields(None);
        let r = build_request(&wanted, &plan, &HashMap::new(), &fields, 12);
        assert_eq!((r.session_id, r.session_epoch), (Some(77), Some(1)));
        let sent: Vec<(i32, i64)> = r
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| (p.partition, p.fetch_offset)))
            .collect();
        assert_eq!(sent, [(0, 9)]);
        let forgotten = r.forgotten_topics_data.unwrap_or_default();
        assert_eq!(forgotten.len(), 1);
        assert_eq!(
            (forgotten[0].topic.as_deref(), forgotten[0].partitions.as_slice()),
            (Some("t"), &[2][..])
        );
    }

    #[test]
    fn a_broker_below_fetch_v7_gets_every_partition_without_a_session() {
        let mut session = FetchSession::default();
        let first = session.next_request(&[want(0, 5), want(1, 6)]);
        session.answered(&first, 77);
        let wanted = [want(0, 9), want(1, 6)];
        let plan = session.next_request(&wanted);
        let fields = FetchOptions::default().request_fields(None);
        let r = build_request(&wanted, &plan, &HashMap::new(), &fields, 6);
        assert_eq!((r.session_id, r.session_epoch), (Some(0), Some(-1)));
        assert_eq!(r.topics.iter().map(|t| t.partitions.len()).sum::<usize>(), 2);
        assert_eq!(r.forgotten_topics_data, Some(Vec::new()));
    }
}
