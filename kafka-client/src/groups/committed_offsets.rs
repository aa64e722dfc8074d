//! What OffsetFetch answers for one group, partition by partition: the committed offsets of the
//! partitions it answered, and each partition (or named topic) it refused with that refusal's
//! own error, so a partial answer stays partial instead of failing the whole call.

use std::collections::BTreeMap;

use crate::cluster::router::TopicPartition;
use crate::error::{BrokerRef, ClientError};
use kafka_wire::protocol::messages::{offset_fetch, OffsetFetchResponseTopic};
use kafka_wire::protocol::{ErrorCode, Recovery};

/// A group's committed position for one partition. `offset` is the next offset to read
/// (Kafka's convention).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    /// The next offset the group will read (one past the last record it processed).
    pub offset: i64,
    /// `None` when the commit carried no epoch or the broker predates OffsetFetch v5.
    pub leader_epoch: Option<i32>,
    /// The metadata string stored with the commit; `None` when it is empty or absent.
    pub metadata: Option<String>,
}

/// One group's committed offsets as the coordinator answered them.
///
/// The contract: every partition asked for is in exactly one place — `offsets` (a commit),
/// `refused` (the coordinator answered it with an error of its own: TOPIC_AUTHORIZATION_FAILED,
/// UNKNOWN_TOPIC_OR_PARTITION, ...), `refused_topics` (the whole topic, when a named topic's
/// partitions could not be learned because Metadata refused it) — or absent, which means nothing
/// is committed for it. Errors of the group as a whole (GROUP_AUTHORIZATION_FAILED, a
/// coordinator that moved or is loading, a connection error) are never here: they fail the call.
///
/// A caller that needs every partition (to write, or to plan a batch) calls
/// [`complete`](Self::complete); one that can show a partial answer reads both maps.
#[derive(Debug, Clone, Default)]
pub struct CommittedOffsets {
    /// The next offset to read of each partition with a commit.
    pub offsets: BTreeMap<TopicPartition, CommittedOffset>,
    /// Each partition the coordinator refused, with its error ([`ClientError::Kafka`] naming the
    /// coordinator, OffsetFetch, the code and `group `G` topic-partition`).
    pub refused: BTreeMap<TopicPartition, ClientError>,
    /// Each named topic refused before the coordinator was asked (Metadata refused it, so its
    /// partitions are unknown), with Metadata's error. Empty when no topics were named.
    pub refused_topics: BTreeMap<String, ClientError>,
}

impl CommittedOffsets {
    /// Whether nothing was refused.
    pub fn is_complete(&self) -> bool {
        self.refused.is_empty() && self.refused_topics.is_empty()
    }

    /// The offsets when nothing was refused; else the first refusal (whole topics first, then
    /// partitions, each in order) as the call's error, the way the call failed before it kept
    /// partial answers.
    pub fn complete(self) -> Result<BTreeMap<TopicPartition, CommittedOffset>, ClientError> {
        if let Some((_, e)) = self.refused_topics.into_iter().next() {
            return Err(e);
        }
        if let Some((_, e)) = self.refused.into_iter().next() {
            return Err(e);
        }
        Ok(self.offsets)
    }
}

/// Whether a partition's OffsetFetch error belongs to the group rather than to the partition:
/// before v2 a coordinator reports its group errors on every partition, and a coordinator that
/// moved or is loading is worth asking again. Those fail the call (and are retried where the
/// code says so); any other code is that partition's refusal.
fn is_group_error(code: ErrorCode) -> bool {
    matches!(code.recovery(), Recovery::Retry | Recovery::RefindCoordinator)
        || matches!(
            code,
            ErrorCode::GROUP_AUTHORIZATION_FAILED
                | ErrorCode::GROUP_ID_NOT_FOUND
                | ErrorCode::INVALID_GROUP_ID
        )
}

/// One group's OffsetFetch topics, after the group-level error was checked: a commit per
/// partition (−1, "nothing committed", is left out), a refusal per partition answered with a
/// partition error, and the call's error for a group error found on a partition.
pub(crate) fn committed_of(
    broker: &BrokerRef,
    group: &str,
    topics: Vec<OffsetFetchResponseTopic>,
) -> Result<CommittedOffsets, ClientError> {
    let mut out = CommittedOffsets::default();
    for topic in topics {
        // One name per topic, shared by its partitions' keys.
        let name: std::sync::Arc<str> = topic.name.into();
        for p in topic.partitions {
            let tp = TopicPartition::new(&name, p.partition_index);
            if !p.error_code.is_ok() {
                let error = ClientError::Kafka {
                    broker: broker.clone(),
                    api: offset_fetch::SPEC.key,
                    code: p.error_code,
                    context: format!("group `{group}` {tp}"),
                };
                if is_group_error(p.error_code) {
                    return Err(error);
                }
                out.refused.insert(tp, error);
                continue;
            }
            if p.committed_offset >= 0 {
                out.offsets.insert(
                    tp,
                    CommittedOffset {
                        offset: p.committed_offset,
                        leader_epoch: p.committed_leader_epoch.filter(|e| *e >= 0),
                        metadata: p.metadata.filter(|m| !m.is_empty()),
                    },
                );
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use kafka_wire::protocol::messages::OffsetFetchResponse;
    use kafka_wire::protocol::Body;

    fn coordinator() -> BrokerRef {
        BrokerRef { node_id: Some(1), addr: "b1:9092".to_owned() }
    }

    fn code_of(e: &ClientError) -> Option<ErrorCode> {
        match e {
            ClientError::Kafka { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// A v8 answer as a coordinator gives it to a principal that may read the group and topic
    /// `a` but not describe topic `b`: `a`'s commits, TOPIC_AUTHORIZATION_FAILED on each of
    /// `b`'s partitions.
    #[rustfmt::skip]
    const MIXED_V8: &[u8] = &[
        0, 0, 0, 0, // throttle_time_ms
        2, // groups: 1
        2, b'g', // group_id "g"
        3, // topics: 2
        2, b'a', // "a"
        3, // partitions: 2
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 42, 0, 0, 0, 3, 1, 0, 0, 0, // 0: offset 42, epoch 3, "", NONE
        0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, // 1: none
        0, // topic tags
        2, b'b', // "b"
        2, // partitions: 1
        0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 29, 0, // 0: TOPIC_AUTHORIZATION_FAILED
        0, // topic tags
        0, 0, 0, // group error NONE, group tags
        0, // body tags
    ];

    #[test]
    fn a_coordinator_refusing_one_topic_keeps_the_other_topics_commits_and_refuses_its_partitions() {
        let response = OffsetFetchResponse::decode_body(Bytes::from_static(MIXED_V8), 8).unwrap();
        let group = response.groups.unwrap().remove(0);
        assert!(group.error_code.is_ok());
        let answer = committed_of(&coordinator(), "g", group.topics).unwrap();
        assert!(!answer.is_complete());
        assert_eq!(
            answer.offsets.into_iter().collect::<Vec<_>>(),
            [(
                TopicPartition::new("a", 0),
                CommittedOffset { offset: 42, leader_epoch: Some(3), metadata: None }
            )]
        );
        let refused: Vec<_> = answer.refused.iter().map(|(tp, e)| (tp.clone(), code_of(e))).collect();
        assert_eq!(refused, [(TopicPartition::new("b", 0), Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED))]);
        let text = answer.refused[&TopicPartition::new("b", 0)].to_string();
        assert!(text.contains("for group `g` b-0: TOPIC_AUTHORIZATION_FAILED"), "{text}");
        assert!(answer.refused_topics.is_empty());
    }

    #[test]
    fn a_group_error_reported_on_a_partition_fails_the_call() {
        // Before v2 the group's errors come on every partition.
        #[rustfmt::skip]
        let body = [
            0, 0, 0, 1, 0, 1, b't', // topics: 1, "t"
            0, 0, 0, 1, 0, 0, 0, 0, // partitions: 1, index 0
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // committed_offset -1
            0xff, 0xff, // metadata null
            0, 30, // GROUP_AUTHORIZATION_FAILED
        ];
        let response = OffsetFetchResponse::decode_body(Bytes::copy_from_slice(&body), 1).unwrap();
        let e = committed_of(&coordinator(), "g", response.topics.unwrap()).unwrap_err();
        assert_eq!(code_of(&e), Some(ErrorCode::GROUP_AUTHORIZATION_FAILED));
        // A coordinator still loading is the call's error too, so that it is asked again.
        let mut loading = body;
        loading[body.len() - 1] = 14;
        let response = OffsetFetchResponse::decode_body(Bytes::copy_from_slice(&loading), 1).unwrap();
        let e = committed_of(&coordinator(), "g", response.topics.unwrap()).unwrap_err();
        assert!(e.is_retriable(), "{e}");
    }

    #[test]
    fn complete_answers_the_offsets_or_the_first_refusal() {
        let refusal = |code| ClientError::Kafka {
            broker: coordinator(),
            api: offset_fetch::SPEC.key,
            code,
            context: String::new(),
        };
        let mut answer = CommittedOffsets::default();
        answer.offsets.insert(
            TopicPartition::new("a", 0),
            CommittedOffset { offset: 1, leader_epoch: None, metadata: None },
        );
        assert_eq!(answer.clone().complete().unwrap().len(), 1);
        answer.refused.insert(TopicPartition::new("b", 0), refusal(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
        answer.refused_topics.insert("c".to_owned(), refusal(ErrorCode::TOPIC_AUTHORIZATION_FAILED));
        let e = answer.complete().unwrap_err();
        assert_eq!(code_of(&e), Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED));
    }
}
