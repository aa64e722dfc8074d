//! Partition offsets from the leaders: earliest, latest, max-timestamp, by time, and a
//! partition's whole log range (log start, high watermark, last stable offset, leader epoch).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::cluster::client::Client;
use crate::cluster::router::{LeaderAnswer, PartitionResults, TopicPartition};
use crate::error::{BrokerRef, ClientError};
use kafka_vocab::Isolation;
use kafka_wire::protocol::messages::{
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsResponse, ListOffsetsTopic,
};
use kafka_wire::protocol::names::validate_topics;
use kafka_wire::protocol::TaggedFields;

/// Which offset to ask a partition's leader for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetQuery {
    /// The log start offset.
    Earliest,
    /// The high watermark (read_uncommitted) or last stable offset (read_committed).
    Latest,
    /// The offset of the record with the highest timestamp (KIP-734, ListOffsets v7+).
    MaxTimestamp,
    /// The first offset whose timestamp is at or after this many milliseconds since the epoch.
    Timestamp(i64),
}

impl OffsetQuery {
    fn wire_timestamp(self) -> i64 {
        match self {
            Self::Earliest => -2,
            Self::Latest => -1,
            Self::MaxTimestamp => -3,
            Self::Timestamp(ms) => ms,
        }
    }
}

/// A leader's answer to one [`OffsetQuery`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListedOffset {
    /// `None` when no record is at or after the requested time (Kafka's −1).
    pub offset: Option<i64>,
    /// The record's timestamp for time queries, when the broker gives one.
    pub timestamp: Option<i64>,
    /// The leader epoch of the offset's record, when the broker gives one (v4+).
    pub leader_epoch: Option<i32>,
}

/// A partition's log as its leader sees it. Offsets are Kafka's: `log_start` is the first
/// offset still stored, `high_watermark` one past the last replicated record,
/// `last_stable` one past the last record not in an open transaction (`<= high_watermark`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogRange {
    /// The first offset still stored (inclusive).
    pub log_start: i64,
    /// One past the last record replicated to all in-sync replicas (exclusive).
    pub high_watermark: i64,
    /// One past the last record not in an open transaction (exclusive; equals
    /// `high_watermark` on brokers without transactions).
    pub last_stable: i64,
    /// The current leader's epoch, when the broker reports it.
    pub leader_epoch: Option<i32>,
    /// The leader's node id when the range was read.
    pub leader: Option<i32>,
}

impl LogRange {
    /// The log's start and high watermark, without the last stable offset.
    pub fn bounds(&self) -> LogBounds {
        LogBounds { log_start: self.log_start, high_watermark: self.high_watermark }
    }
}

/// A partition's log start and high watermark, read without the last stable offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogBounds {
    /// The first offset still stored (inclusive).
    pub log_start: i64,
    /// One past the last record replicated to all in-sync replicas (exclusive).
    pub high_watermark: i64,
}

/// `log_start <= last_stable <= high_watermark` from answers the leader gave at different
/// moments (one ListOffsets request per query, and producers write in between). The high
/// watermark and the last stable offset only grow, so answers can cross: a high watermark
/// answered before records were replicated lies below a last stable offset answered after
/// them, and a log start answered after retention moved it can lie past a high watermark
/// answered before. Then `last_stable` is lowered to `high_watermark` (both were readable
/// ends when the later answer came) and `high_watermark` raised to `log_start` (the log's high
/// watermark is never below its start); a last stable offset below the log start becomes the
/// log start (nothing readable under read_committed). The result claims no offset readable
/// that was not, and a plan built on it sees a log instead of refusing the partition as
/// inconsistent. `last_stable` is `None` for a broker without transactions (it is then the
/// high watermark). Returns `(log_start, last_stable, high_watermark)`.
fn consistent(log_start: i64, last_stable: Option<i64>, high_watermark: i64) -> (i64, i64, i64) {
    let high_watermark = high_watermark.max(log_start);
    let last_stable = last_stable.unwrap_or(high_watermark).clamp(log_start, high_watermark);
    (log_start, last_stable, high_watermark)
}

impl Client {
    /// Asks each partition's leader for `query`, one ListOffsets request per leader broker,
    /// in parallel; one result per partition.
    ///
    /// `isolation` changes only what [`OffsetQuery::Latest`] means, but asking read_committed
    /// needs ListOffsets v2 (Kafka 0.11) whatever the query, and [`OffsetQuery::MaxTimestamp`]
    /// needs v7 (Kafka 3.0): an older leader fails those partitions with
    /// [`ClientError::NotSupported`]. Leaderless partitions and retriable errors
    /// are retried until `timeout` as [`route_by_leader`](Self::route_by_leader) describes.
    pub async fn list_offsets(
        &self,
        partitions: &[TopicPartition],
        query: OffsetQuery,
        isolation: Isolation,
        timeout: Duration,
    ) -> PartitionResults<ListedOffset> {
        let api = kafka_wire::protocol::messages::list_offsets::SPEC.key;
        self.route_by_leader(api, partitions, timeout, |target, tps| async move {
            let (version, response) = self
                .send_built(&target.broker, |version| build_request(&tps, query, isolation, version))
                .await?;
            if query == OffsetQuery::MaxTimestamp {
                crate::kafka_release::MAX_TIMESTAMP_OFFSETS.check(version, &target.broker)?;
            }
            if isolation == Isolation::ReadCommitted {
                crate::kafka_release::READ_COMMITTED_OFFSETS.check(version, &target.broker)?;
            }
            Ok(listed_of(version, response))
        })
        .await
    }

    /// One ListOffsets request to `leader` for `partitions`, without Metadata and without
    /// retries: for partitions whose leaders the caller learned elsewhere. The leader answers
    /// each partition, so one it refuses (TOPIC_AUTHORIZATION_FAILED, NOT_LEADER_OR_FOLLOWER,
    /// ...) is that partition's [`ClientError::Kafka`] next to the others' offsets, as in
    /// [`list_offsets`](Self::list_offsets); a partition missing from the answer is a
    /// [`ClientError::Protocol`]. The `Err` of the outer result is a failure of the whole
    /// request (connection, a broker too old for `query` or `isolation`).
    pub async fn list_offsets_on(
        &self,
        leader: &BrokerRef,
        partitions: &[TopicPartition],
        query: OffsetQuery,
        isolation: Isolation,
    ) -> Result<PartitionResults<ListedOffset>, ClientError> {
        let api = kafka_wire::protocol::messages::list_offsets::SPEC.key;
        validate_topics(partitions.iter().map(|tp| &*tp.topic))?;
        let batch: Vec<(TopicPartition, Option<i32>)> =
            partitions.iter().map(|tp| (tp.clone(), None)).collect();
        let (version, response) =
            self.send_built(leader, |version| build_request(&batch, query, isolation, version)).await?;
        if query == OffsetQuery::MaxTimestamp {
            crate::kafka_release::MAX_TIMESTAMP_OFFSETS.check(version, leader)?;
        }
        if isolation == Isolation::ReadCommitted {
            crate::kafka_release::READ_COMMITTED_OFFSETS.check(version, leader)?;
        }
        let mut answered: BTreeMap<TopicPartition, LeaderAnswer<ListedOffset>> =
            listed_of(version, response).into_iter().collect();
        Ok(partitions
            .iter()
            .map(|tp| {
                let result = match answered.remove(tp) {
                    Some(Ok(listed)) => Ok(listed),
                    Some(Err(code)) => {
                        Err(ClientError::Kafka { broker: leader.clone(), api, code, context: tp.to_string() })
                    }
                    None => Err(ClientError::Protocol {
                        broker: leader.clone(),
                        message: format!("the response has no entry for {tp}"),
                    }),
                };
                (tp.clone(), result)
            })
            .collect())
    }

    /// Log start, high watermark and last stable offset for each partition (three queries per
    /// leader, sent together), with the leader and its epoch.
    pub async fn log_ranges(
        &self,
        partitions: &[TopicPartition],
        timeout: Duration,
    ) -> PartitionResults<LogRange> {
        let (earliest, latest, stable) = tokio::join!(
            self.list_offsets(partitions, OffsetQuery::Earliest, Isolation::ReadUncommitted, timeout),
            self.list_offsets(partitions, OffsetQuery::Latest, Isolation::ReadUncommitted, timeout),
            self.list_offsets(partitions, OffsetQuery::Latest, Isolation::ReadCommitted, timeout),
        );
        let metadata = self.cached_metadata();
        let mut out = BTreeMap::new();
        for (tp, start) in earliest {
            let end = latest.get(&tp).cloned().unwrap_or_else(|| missing(&tp));
            let lso = stable.get(&tp).cloned().unwrap_or_else(|| missing(&tp));
            let leader = metadata
                .as_ref()
                .and_then(|m| m.topic(&tp.topic))
                .and_then(|t| t.partitions.iter().find(|p| p.partition == tp.partition))
                .and_then(|p| p.leader);
            let range = start.and_then(|start| {
                let end = end?;
                // A broker before 0.11 has no transactions: its last stable offset is the high
                // watermark, and it cannot answer the read_committed query.
                let lso = match lso {
                    Ok(lso) => lso.offset,
                    Err(e) if e.is_unsupported() => None,
                    Err(e) => return Err(e),
                };
                let (Some(log_start), Some(high_watermark)) = (start.offset, end.offset) else {
                    return Err(ClientError::Protocol {
                        broker: crate::error::BrokerRef { node_id: leader, addr: "leader".to_owned() },
                        message: format!("no earliest or latest offset for {tp}"),
                    });
                };
                let (log_start, last_stable, high_watermark) = consistent(log_start, lso, high_watermark);
                Ok(LogRange {
                    log_start,
                    high_watermark,
                    last_stable,
                    leader_epoch: end.leader_epoch,
                    leader,
                })
            });
            out.insert(tp, range);
        }
        out
    }
}

impl Client {
    /// Log start and high watermark of each partition: two ListOffsets per leader (earliest and
    /// latest), all of its partitions of every topic in each. That is the fewest ListOffsets can
    /// do: a leader refuses a partition named twice in one request (INVALID_REQUEST), so the two
    /// queries cannot share one; the last stable offset would be a third, because the isolation
    /// level belongs to the whole request ([`log_ranges`](Self::log_ranges) asks it).
    pub async fn log_bounds(
        &self,
        partitions: &[TopicPartition],
        timeout: Duration,
    ) -> PartitionResults<LogBounds> {
        let (earliest, latest) = tokio::join!(
            self.list_offsets(partitions, OffsetQuery::Earliest, Isolation::ReadUncommitted, timeout),
            self.list_offsets(partitions, OffsetQuery::Latest, Isolation::ReadUncommitted, timeout),
        );
        let mut out = BTreeMap::new();
        for (tp, start) in earliest {
            let end = latest.get(&tp).cloned().unwrap_or_else(|| missing(&tp));
            let bounds = start.and_then(|start| {
                let end = end?;
                match (start.offset, end.offset) {
                    (Some(log_start), Some(high_watermark)) => {
                        let (log_start, _, high_watermark) = consistent(log_start, None, high_watermark);
                        Ok(LogBounds { log_start, high_watermark })
                    }
                    _ => Err(ClientError::Protocol {
                        broker: crate::error::BrokerRef { node_id: None, addr: "leader".to_owned() },
                        message: format!("no earliest or latest offset for {tp}"),
                    }),
                }
            });
            out.insert(tp, bounds);
        }
        out
    }
}

fn missing<T>(tp: &TopicPartition) -> Result<T, ClientError> {
    Err(ClientError::Protocol {
        broker: crate::error::BrokerRef { node_id: None, addr: "cluster".to_owned() },
        message: format!("no answer for {tp}"),
    })
}

/// A leader's ListOffsets answer, partition by partition: the offset, or the partition's own
/// error code (a refused partition does not hide the others).
fn listed_of(
    version: i16,
    response: ListOffsetsResponse,
) -> Vec<(TopicPartition, LeaderAnswer<ListedOffset>)> {
    let mut answers = Vec::new();
    for topic in response.topics {
        for p in topic.partitions {
            let tp = TopicPartition::new(topic.name.clone(), p.partition_index);
            let answer = if p.error_code.is_ok() {
                let offset = if version == 0 {
                    p.old_style_offsets.as_deref().and_then(|o| o.first().copied())
                } else {
                    p.offset
                };
                Ok(ListedOffset {
                    offset: offset.filter(|o| *o >= 0),
                    timestamp: p.timestamp.filter(|t| *t >= 0),
                    leader_epoch: p.leader_epoch.filter(|e| *e >= 0),
                })
            } else {
                Err(p.error_code)
            };
            answers.push((tp, answer));
        }
    }
    answers
}

fn build_request(
    tps: &[(TopicPartition, Option<i32>)],
    query: OffsetQuery,
    isolation: Isolation,
    version: i16,
) -> ListOffsetsRequest {
    let mut topics: BTreeMap<&str, Vec<ListOffsetsPartition>> = BTreeMap::new();
    for (tp, epoch) in tps {
        topics.entry(&*tp.topic).or_default().push(ListOffsetsPartition {
            partition_index: tp.partition,
            current_leader_epoch: (version >= 4).then_some(epoch.unwrap_or(-1)),
            timestamp: query.wire_timestamp(),
            max_num_offsets: (version == 0).then_some(1),
            tagged_fields: TaggedFields::default(),
        });
    }
    ListOffsetsRequest {
        replica_id: -1,
        isolation_level: (version >= 2).then_some(isolation.wire()),
        topics: topics
            .into_iter()
            .map(|(name, partitions)| ListOffsetsTopic {
                name: name.to_owned(),
                partitions,
                tagged_fields: TaggedFields::default(),
            })
            .collect(),
        timeout_ms: (version >= 10).then_some(30_000),
        tagged_fields: TaggedFields::default(),
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use kafka_wire::protocol::{Body, ErrorCode};

    /// A v5 answer as a leader gives it to a principal that may describe topic `a` but not `b`:
    /// `a`'s offsets, TOPIC_AUTHORIZATION_FAILED for `b`'s partition.
    #[rustfmt::skip]
    const MIXED_V5: &[u8] = &[
        0, 0, 0, 0, // throttle_time_ms
        0, 0, 0, 2, // topics: 2
        0, 1, b'a', 0, 0, 0, 2, // "a", partitions: 2
        0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 2, // 0: offset 7, epoch 2
        0, 0, 0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 2, // 1: offset 9
        0, 1, b'b', 0, 0, 0, 1, // "b", partitions: 1
        0, 0, 0, 0, 0, 29, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // 0: TOPIC_AUTHORIZATION_FAILED
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // offset -1, epoch -1
    ];

    #[test]
    fn a_leader_refusing_one_topic_answers_the_other_topics_offsets_and_the_refused_partition_code() {
        let response = ListOffsetsResponse::decode_body(Bytes::from_static(MIXED_V5), 5).unwrap();
        let listed = listed_of(5, response);
        let offset = |o| Ok(ListedOffset { offset: Some(o), timestamp: None, leader_epoch: Some(2) });
        assert_eq!(
            listed,
            [
                (TopicPartition::new("a", 0), offset(7)),
                (TopicPartition::new("a", 1), offset(9)),
                (TopicPartition::new("b", 0), Err(ErrorCode::TOPIC_AUTHORIZATION_FAILED)),
            ]
        );
    }

    #[test]
    fn answers_that_agree_are_kept() {
        assert_eq!(consistent(10, Some(15), 20), (10, 15, 20));
        assert_eq!(consistent(10, None, 20), (10, 20, 20));
        assert_eq!(consistent(0, Some(0), 0), (0, 0, 0));
    }

    #[test]
    fn a_last_stable_offset_answered_after_more_records_were_replicated_is_lowered_to_the_high_watermark() {
        // Latest (high watermark) answered 1014; 30 records replicated; read_committed answered 1044.
        assert_eq!(consistent(0, Some(1044), 1014), (0, 1014, 1014));
    }

    #[test]
    fn a_log_start_answered_after_retention_passed_the_high_watermark_answer_raises_it() {
        assert_eq!(consistent(500, Some(300), 300), (500, 500, 500));
        assert_eq!(consistent(500, None, 300), (500, 500, 500));
    }

    #[test]
    fn a_last_stable_offset_below_the_log_start_becomes_the_log_start() {
        assert_eq!(consistent(500, Some(400), 900), (500, 500, 900));
    }

    proptest::proptest! {
        /// Any three answers give `0 <= log_start <= last_stable <= high_watermark`, never a
        /// readable end past what was answered for it.
        #[test]
        fn any_answers_give_an_ordered_range(
            start in 0i64..1_000,
            lso in proptest::option::of(0i64..1_000),
            hw in 0i64..1_000,
        ) {
            let (s, l, h) = consistent(start, lso, hw);
            proptest::prop_assert!(0 <= s && s <= l && l <= h);
            proptest::prop_assert_eq!(s, start);
            proptest::prop_assert!(h == hw.max(start));
            proptest::prop_assert!(l <= lso.unwrap_or(h).max(start));
        }
    }
}
