//! The plan of a call routed to partition leaders: no socket, no clock, only the partitions
//! asked for, what each one's leader (or the metadata) said, and what that means for the next
//! step. [`Client::route_to`](crate::Client::route_to) (`router.rs`) drives it: it refreshes
//! the metadata when the plan wants it, sends the batches the plan shards, hands each answer
//! to [`merge`](RoutePlan::merge), and waits its backoff, or gives up, while partitions are left.
//!
//! ```text
//!   new: sorted, deduplicated; a topic name breaking Kafka's rules is its result at once
//!    │
//!    ▼
//!   wants_refresh? ── yes ──► Metadata for topics() ── fails ──► the caller tries again after
//!    │ no: the cached         │ answered                    its backoff while the error is
//!    │ snapshot               │                             retriable and time is left; else
//!    ▼                        │                             metadata_failed: the error for all
//!   shard ◄───────────────────┘
//!    │  one batch per node `choose` picks. No such topic or partition, or a topic the ACLs
//!    │  hide: a result. No node: kept, with a refresh first.
//!    ▼
//!   merge, once per batch sent: a value or a fatal code is a result; a retriable code (or a
//!    │  retriable failure of the whole request) is kept, with a refresh where it says so
//!    ▼
//!   is_done? ── yes ──► finish
//!    │ no: the caller waits its backoff, then wants_refresh? again; no time left for the wait:
//!    ▼
//!   give_up: each partition left fails with DeadlineExceeded around its last error
//! ```

use std::collections::{BTreeMap, HashMap};

use crate::cluster::metadata::{ClusterMetadata, PartitionInfo};
use crate::error::{BrokerRef, ClientError};
use kafka_vocab::TopicPartition;
use kafka_wire::protocol::names::validate_topic;
use kafka_wire::protocol::{ApiKey, ErrorCode, Recovery};

/// One partition's answer within a many-partition call.
pub type PartitionResults<T> = BTreeMap<TopicPartition, Result<T, ClientError>>;

/// What the leader said about one partition: a value, or a Kafka error code.
pub type LeaderAnswer<T> = Result<T, ErrorCode>;

/// The partitions sent to one leader, each with the leader epoch metadata gave for it.
pub type LeaderBatch = Vec<(TopicPartition, Option<i32>)>;

/// What a partition's leader is known as when a request is built for it.
#[derive(Debug, Clone)]
pub struct LeaderTarget {
    /// The leader broker, as metadata names it.
    pub broker: BrokerRef,
    /// The leader epoch from metadata, for requests that fence on it.
    pub leader_epoch: Option<i32>,
}

/// Where a call routed by leader stands between its steps.
#[derive(Debug)]
pub(crate) struct RoutePlan<T> {
    /// The call, for the errors' words.
    api: ApiKey,
    /// The topics of the valid partitions asked for, sorted: what a metadata refresh names.
    topics: Vec<String>,
    /// The partitions to send at the next step, in the order they are sharded.
    pending: Vec<TopicPartition>,
    /// The partitions whose answer is final.
    results: PartitionResults<T>,
    /// For each partition to try again, the error that made it: what it fails with when the
    /// deadline comes first.
    last_errors: HashMap<TopicPartition, ClientError>,
    /// A step said the metadata is stale (a partition without a leader, a code or a failure
    /// saying leadership may have moved).
    refresh: bool,
    /// Whether a step was sharded. Before the first, a cached snapshot is used only if it
    /// knows every partition asked for; after, as long as no step asked for a refresh.
    sharded: bool,
}

impl<T> RoutePlan<T> {
    /// The plan for `partitions` (sorted, duplicates dropped). A partition whose topic name
    /// breaks Kafka's rules has that as its result before anything is sent.
    pub(crate) fn new(api: ApiKey, partitions: &[TopicPartition]) -> Self {
        let mut results = BTreeMap::new();
        let mut pending = partitions.to_vec();
        pending.sort();
        pending.dedup();
        pending.retain(|tp| match validate_topic(&tp.topic) {
            Ok(()) => true,
            Err(e) => {
                results.insert(tp.clone(), Err(e.into()));
                false
            }
        });
        let mut topics: Vec<String> = pending.iter().map(|tp| tp.topic.to_string()).collect();
        topics.dedup();
        Self { api, topics, pending, results, last_errors: HashMap::new(), refresh: false, sharded: false }
    }

    /// The topics to refresh metadata for.
    pub(crate) fn topics(&self) -> &[String] {
        &self.topics
    }

    /// Whether nothing is left to send: once every batch of a step is merged, whether every
    /// partition has its result.
    pub(crate) fn is_done(&self) -> bool {
        self.pending.is_empty()
    }

    /// Whether the next step must refresh metadata rather than use `cached`: there is none,
    /// a step asked for it, or (before the first step) it lacks a partition asked for. Cached
    /// metadata that knows every partition is used as is: a leader that moved answers
    /// NOT_LEADER_OR_FOLLOWER (or its connection fails), which asks for a refresh.
    pub(crate) fn wants_refresh(&self, cached: Option<&ClusterMetadata>) -> bool {
        cached.is_none_or(|m| self.refresh || (!self.sharded && !self.pending.iter().all(|tp| knows(m, tp))))
    }

    /// Splits the partitions to send by the node `choose` picks from `metadata` (its leader,
    /// or a replica to read from), one batch per node, in node id order; each target carries
    /// the leader epoch of the first partition of its batch. A partition `metadata` says
    /// cannot be sent gets its result; one with no node (or a node the broker list lacks) is
    /// kept for the next step, after a refresh, with LEADER_NOT_AVAILABLE as its last error.
    pub(crate) fn shard(
        &mut self,
        metadata: &ClusterMetadata,
        choose: impl Fn(&TopicPartition, &PartitionInfo, &ClusterMetadata) -> Option<i32>,
    ) -> Vec<(LeaderTarget, LeaderBatch)> {
        self.refresh = false;
        self.sharded = true;
        let mut by_node: BTreeMap<i32, (LeaderTarget, LeaderBatch)> = BTreeMap::new();
        for tp in std::mem::take(&mut self.pending) {
            let partition = match locate(metadata, &tp, self.api) {
                Ok(partition) => partition,
                Err(e) => {
                    self.results.insert(tp, Err(e));
                    continue;
                }
            };
            let node =
                choose(&tp, partition, metadata).and_then(|id| metadata.broker(id).map(|b| (id, b.addr())));
            match node {
                Some((id, addr)) => {
                    let target = || LeaderTarget {
                        broker: BrokerRef { node_id: Some(id), addr },
                        leader_epoch: partition.leader_epoch,
                    };
                    by_node
                        .entry(id)
                        .or_insert_with(|| (target(), Vec::new()))
                        .1
                        .push((tp, partition.leader_epoch));
                }
                None => {
                    let err = from_metadata(self.api, ErrorCode::LEADER_NOT_AVAILABLE, tp.to_string());
                    self.retry(tp, err, true);
                }
            }
        }
        by_node.into_values().collect()
    }

    /// Takes in what `broker` answered for the partitions it was `asked` about. Per partition:
    /// a value is its result; an error code is retried when its recovery says so (after a
    /// refresh for a stale leader or coordinator), else it is the result; a partition the
    /// answer lacks is a protocol error. A failure of the whole request is retried for every
    /// partition asked, after a refresh, when retriable (the broker is gone or slow:
    /// leadership may have moved), else it is each one's result.
    pub(crate) fn merge(
        &mut self,
        broker: &BrokerRef,
        asked: Vec<TopicPartition>,
        outcome: Result<Vec<(TopicPartition, LeaderAnswer<T>)>, ClientError>,
    ) {
        match outcome {
            Ok(answers) => {
                let mut answered: HashMap<TopicPartition, LeaderAnswer<T>> = answers.into_iter().collect();
                for tp in asked {
                    let answer = answered.remove(&tp);
                    self.take_answer(broker, tp, answer);
                }
            }
            Err(e) if e.is_retriable() => {
                for tp in asked {
                    self.retry(tp, e.clone(), true);
                }
            }
            Err(e) => {
                for tp in asked {
                    self.results.insert(tp, Err(e.clone()));
                }
            }
        }
    }

    /// The results when the metadata a step needs could not be had: `e` for every partition
    /// left.
    pub(crate) fn metadata_failed(mut self, e: &ClientError) -> PartitionResults<T> {
        for tp in std::mem::take(&mut self.pending) {
            self.results.insert(tp, Err(e.clone()));
        }
        self.results
    }

    /// The results when the deadline comes before another step: every partition left fails
    /// with [`ClientError::DeadlineExceeded`] around its last error.
    pub(crate) fn give_up(mut self) -> PartitionResults<T> {
        for tp in std::mem::take(&mut self.pending) {
            let last = self.last_errors.remove(&tp).unwrap_or_else(|| ClientError::Protocol {
                broker: BrokerRef { node_id: None, addr: "cluster".to_owned() },
                message: "no answer".to_owned(),
            });
            let what = format!("{} for {tp}", self.api);
            self.results.insert(tp, Err(ClientError::DeadlineExceeded { what, last_error: Box::new(last) }));
        }
        self.results
    }

    /// The results, once [`is_done`](Self::is_done).
    pub(crate) fn finish(self) -> PartitionResults<T> {
        debug_assert!(self.pending.is_empty(), "finish with partitions left: {:?}", self.pending);
        self.results
    }

    /// What `broker` answered for `tp` (`None`: its answer lacks it).
    fn take_answer(&mut self, broker: &BrokerRef, tp: TopicPartition, answer: Option<LeaderAnswer<T>>) {
        let code = match answer {
            Some(Ok(value)) => {
                self.results.insert(tp, Ok(value));
                return;
            }
            Some(Err(code)) => code,
            None => {
                let message = format!("the response has no entry for {tp}");
                self.results.insert(tp, Err(ClientError::Protocol { broker: broker.clone(), message }));
                return;
            }
        };
        let err = ClientError::Kafka { broker: broker.clone(), api: self.api, code, context: tp.to_string() };
        let refresh = match code.recovery() {
            Recovery::RefreshMetadata | Recovery::RefindCoordinator => true,
            Recovery::Retry => false,
            Recovery::Fatal | Recovery::None => {
                self.results.insert(tp, Err(err));
                return;
            }
        };
        self.retry(tp, err, refresh);
    }

    /// Keeps `tp` for the next step, `err` as its last error; `refresh`: the metadata first.
    fn retry(&mut self, tp: TopicPartition, err: ClientError, refresh: bool) {
        self.refresh |= refresh;
        self.last_errors.insert(tp.clone(), err);
        self.pending.push(tp);
    }
}

/// Whether `metadata` lists `tp`'s topic with that partition.
fn knows(metadata: &ClusterMetadata, tp: &TopicPartition) -> bool {
    metadata.topic(&tp.topic).is_some_and(|t| t.partitions.iter().any(|p| p.partition == tp.partition))
}

/// `tp` in `metadata`, or why it cannot be sent: its topic does not exist, is refused by the
/// ACLs (Metadata hides the partitions of such a topic: each asked for is refused with
/// Metadata's code, not reported missing), or lacks the partition.
fn locate<'m>(
    metadata: &'m ClusterMetadata,
    tp: &TopicPartition,
    api: ApiKey,
) -> Result<&'m PartitionInfo, ClientError> {
    let topic = metadata
        .topic(&tp.topic)
        .filter(|t| t.error != ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
        .ok_or_else(|| ClientError::UnknownTopic { topic: tp.topic.to_string() })?;
    if topic.error.is_authorization() {
        return Err(from_metadata(ApiKey::METADATA, topic.error, format!("topic `{}`", tp.topic)));
    }
    topic
        .partitions
        .iter()
        .find(|p| p.partition == tp.partition)
        .ok_or_else(|| from_metadata(api, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, tp.to_string()))
}

/// An error code that metadata, not a broker's answer, gave `context`.
fn from_metadata(api: ApiKey, code: ErrorCode, context: String) -> ClientError {
    ClientError::Kafka {
        broker: BrokerRef { node_id: None, addr: "metadata".to_owned() },
        api,
        code,
        context,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::metadata::{BrokerInfo, TopicInfo};
    use kafka_wire::protocol::BrokerIds;

    const API: ApiKey = ApiKey::LIST_OFFSETS;

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        TopicPartition::new(topic, partition)
    }

    /// Partition `partition` led by `leader` at `epoch`, replicated on brokers 1 to 3.
    fn led(partition: i32, leader: Option<i32>, epoch: i32) -> PartitionInfo {
        PartitionInfo {
            partition,
            leader,
            leader_epoch: Some(epoch),
            replicas: BrokerIds::from(vec![1, 2, 3]),
            isr: BrokerIds::from(vec![1, 2, 3]),
            offline: BrokerIds::from(Vec::new()),
            error: ErrorCode::NONE,
        }
    }

    fn topic(name: &str, error: ErrorCode, partitions: Vec<PartitionInfo>) -> TopicInfo {
        TopicInfo { name: name.to_owned(), topic_id: None, is_internal: false, error, partitions }
    }

    /// Brokers `hN:9092` for each id of `brokers`, and `topics`.
    fn cluster(brokers: &[i32], topics: Vec<TopicInfo>) -> ClusterMetadata {
        ClusterMetadata {
            generation: 1,
            cluster_id: None,
            controller_id: None,
            brokers: brokers
                .iter()
                .map(|&node_id| BrokerInfo { node_id, host: format!("h{node_id}"), port: 9092, rack: None })
                .collect(),
            topics,
        }
    }

    /// Brokers 1 and 2; topic `t` with partitions 0 (led by 1) and 1 (led by 2), epoch 5.
    fn two_leaders() -> ClusterMetadata {
        cluster(&[1, 2], vec![topic("t", ErrorCode::NONE, vec![led(0, Some(1), 5), led(1, Some(2), 5)])])
    }

    fn by_leader(_: &TopicPartition, partition: &PartitionInfo, _: &ClusterMetadata) -> Option<i32> {
        partition.leader
    }

    fn node(id: i32) -> BrokerRef {
        BrokerRef { node_id: Some(id), addr: format!("h{id}:9092") }
    }

    /// The error metadata gives a partition (spelled out, not through [`from_metadata`]).
    fn from_metadata_of(api: ApiKey, code: ErrorCode, context: &str) -> ClientError {
        let broker = BrokerRef { node_id: None, addr: "metadata".to_owned() };
        ClientError::Kafka { broker, api, code, context: context.to_owned() }
    }

    fn kafka(broker: BrokerRef, code: ErrorCode, context: &str) -> ClientError {
        ClientError::Kafka { broker, api: API, code, context: context.to_owned() }
    }

    fn deadline(tp: &str, last: ClientError) -> ClientError {
        ClientError::DeadlineExceeded { what: format!("ListOffsets for {tp}"), last_error: Box::new(last) }
    }

    /// `got` is exactly `want` (compared by `Debug`: `ClientError` has no `PartialEq`).
    fn assert_results(got: &PartitionResults<i64>, want: Vec<(TopicPartition, Result<i64, ClientError>)>) {
        let want: PartitionResults<i64> = want.into_iter().collect();
        assert_eq!(format!("{got:#?}"), format!("{want:#?}"));
    }

    /// What a shard sent, as (node, target epoch, partitions with their epochs).
    fn sent(batches: &[(LeaderTarget, LeaderBatch)]) -> Vec<(BrokerRef, Option<i32>, LeaderBatch)> {
        batches.iter().map(|(t, b)| (t.broker.clone(), t.leader_epoch, b.clone())).collect()
    }

    /// A plan for `partitions` after one step sharded by leader on [`two_leaders`], and what it
    /// sent.
    fn after_shard(partitions: &[TopicPartition]) -> (RoutePlan<i64>, Vec<(LeaderTarget, LeaderBatch)>) {
        let mut plan = RoutePlan::new(API, partitions);
        let batches = plan.shard(&two_leaders(), by_leader);
        (plan, batches)
    }

    #[test]
    fn a_new_plan_sorts_drops_duplicates_and_answers_a_bad_topic_name_at_once() {
        let plan: RoutePlan<i64> =
            RoutePlan::new(API, &[tp("b", 1), tp("a", 0), tp("b", 1), tp("a b", 0), tp("b", 0)]);
        assert_eq!(plan.pending, [tp("a", 0), tp("b", 0), tp("b", 1)]);
        assert_eq!(plan.topics(), ["a", "b"], "the bad name is not asked of Metadata");
        assert!(!plan.is_done());
        let bad = plan.results.get(&tp("a b", 0)).expect("the bad name has its result");
        assert!(matches!(bad, Err(ClientError::InvalidName(e)) if e.name == "a b"), "{bad:?}");
        assert_eq!(plan.results.len(), 1);
    }

    #[test]
    fn a_plan_of_bad_topic_names_only_is_done_before_any_step() {
        let plan: RoutePlan<i64> = RoutePlan::new(API, &[tp("", 0), tp("..", 1)]);
        assert!(plan.is_done());
        assert!(plan.topics().is_empty());
        let results = plan.finish();
        assert_eq!(results.len(), 2);
        assert!(results.values().all(|r| matches!(r, Err(ClientError::InvalidName(_)))), "{results:?}");
    }

    #[test]
    fn without_cached_metadata_the_first_step_refreshes() {
        let plan: RoutePlan<i64> = RoutePlan::new(API, &[tp("t", 0)]);
        assert!(plan.wants_refresh(None));
    }

    #[test]
    fn cached_metadata_is_used_only_if_it_knows_every_partition_asked_for() {
        let cached = two_leaders();
        let known: RoutePlan<i64> = RoutePlan::new(API, &[tp("t", 0), tp("t", 1)]);
        assert!(!known.wants_refresh(Some(&cached)));
        let partition_unknown: RoutePlan<i64> = RoutePlan::new(API, &[tp("t", 0), tp("t", 2)]);
        assert!(partition_unknown.wants_refresh(Some(&cached)));
        let topic_unknown: RoutePlan<i64> = RoutePlan::new(API, &[tp("t", 0), tp("u", 0)]);
        assert!(topic_unknown.wants_refresh(Some(&cached)));
    }

    #[test]
    fn after_a_step_cached_metadata_is_used_unless_the_step_asked_for_a_refresh() {
        let (mut plan, _) = after_shard(&[tp("t", 0), tp("t", 1)]);
        plan.merge(&node(1), vec![tp("t", 0)], Ok(vec![(tp("t", 0), Err(ErrorCode::REQUEST_TIMED_OUT))]));
        plan.merge(&node(2), vec![tp("t", 1)], Ok(vec![(tp("t", 1), Ok(1))]));
        // As before the plan: after a step, the cache is not checked for the partitions.
        assert!(!plan.wants_refresh(Some(&cluster(&[], Vec::new()))));
        assert!(plan.wants_refresh(None));

        let batches = plan.shard(&two_leaders(), by_leader);
        assert_eq!(sent(&batches), [(node(1), Some(5), vec![(tp("t", 0), Some(5))])]);
        plan.merge(
            &node(1),
            vec![tp("t", 0)],
            Ok(vec![(tp("t", 0), Err(ErrorCode::NOT_LEADER_OR_FOLLOWER))]),
        );
        assert!(plan.wants_refresh(Some(&two_leaders())));
    }

    #[test]
    fn shard_batches_by_leader_in_node_order_with_the_epochs_metadata_gives() {
        let metadata = cluster(
            &[1, 2],
            vec![
                topic("t", ErrorCode::NONE, vec![led(0, Some(2), 7), led(1, Some(1), 3), led(2, Some(2), 8)]),
                topic("u", ErrorCode::NONE, vec![led(0, Some(1), 4)]),
            ],
        );
        let mut plan: RoutePlan<i64> = RoutePlan::new(API, &[tp("u", 0), tp("t", 2), tp("t", 1), tp("t", 0)]);
        let batches = plan.shard(&metadata, by_leader);
        assert_eq!(
            sent(&batches),
            [
                (node(1), Some(3), vec![(tp("t", 1), Some(3)), (tp("u", 0), Some(4))]),
                (node(2), Some(7), vec![(tp("t", 0), Some(7)), (tp("t", 2), Some(8))]),
            ]
        );
        assert!(plan.results.is_empty());
        assert!(!plan.wants_refresh(Some(&metadata)));
    }

    #[test]
    fn shard_sends_to_the_node_choose_picks_with_the_leaders_epoch() {
        let metadata = cluster(&[1, 2, 3], vec![topic("t", ErrorCode::NONE, vec![led(0, Some(1), 9)])]);
        let mut plan: RoutePlan<i64> = RoutePlan::new(API, &[tp("t", 0)]);
        let batches = plan.shard(&metadata, |_, p, m| {
            assert_eq!(m.brokers.len(), 3, "choose sees the metadata");
            p.replicas.as_slice().last().copied()
        });
        assert_eq!(sent(&batches), [(node(3), Some(9), vec![(tp("t", 0), Some(9))])]);
    }

    #[test]
    fn shard_answers_a_topic_metadata_lacks_or_says_does_not_exist() {
        let metadata = cluster(&[1], vec![topic("gone", ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, Vec::new())]);
        let mut plan: RoutePlan<i64> = RoutePlan::new(API, &[tp("gone", 0), tp("never", 3)]);
        assert!(plan.shard(&metadata, by_leader).is_empty());
        assert!(plan.is_done());
        assert!(!plan.wants_refresh(Some(&metadata)), "an unknown topic is an answer, not a retry");
        assert_results(
            &plan.finish(),
            vec![
                (tp("gone", 0), Err(ClientError::UnknownTopic { topic: "gone".to_owned() })),
                (tp("never", 3), Err(ClientError::UnknownTopic { topic: "never".to_owned() })),
            ],
        );
    }

    #[test]
    fn shard_answers_a_topic_the_acls_refuse_with_metadatas_code() {
        let metadata =
            cluster(&[1], vec![topic("secret", ErrorCode::TOPIC_AUTHORIZATION_FAILED, Vec::new())]);
        let mut plan: RoutePlan<i64> = RoutePlan::new(API, &[tp("secret", 0), tp("secret", 1)]);
        assert!(plan.shard(&metadata, by_leader).is_empty());
        let refused = || {
            Err(from_metadata_of(ApiKey::METADATA, ErrorCode::TOPIC_AUTHORIZATION_FAILED, "topic `secret`"))
        };
        assert_results(&plan.finish(), vec![(tp("secret", 0), refused()), (tp("secret", 1), refused())]);
    }

    #[test]
    fn shard_answers_a_partition_the_topic_lacks_with_unknown_topic_or_partition() {
        let mut plan: RoutePlan<i64> = RoutePlan::new(API, &[tp("t", 5)]);
        assert!(plan.shard(&two_leaders(), by_leader).is_empty());
        assert_results(
            &plan.finish(),
            vec![(tp("t", 5), Err(from_metadata_of(API, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "t-5")))],
        );
    }

    #[test]
    fn a_partition_without_a_leader_is_retried_after_a_refresh() {
        // t-0 has no leader; t-1's leader is not in the broker list.
        let metadata =
            cluster(&[1], vec![topic("t", ErrorCode::NONE, vec![led(0, None, 5), led(1, Some(9), 5)])]);
        let mut plan: RoutePlan<i64> = RoutePlan::new(API, &[tp("t", 0), tp("t", 1)]);
        assert!(plan.shard(&metadata, by_leader).is_empty());
        assert!(!plan.is_done());
        assert_eq!(plan.pending, [tp("t", 0), tp("t", 1)]);
        assert!(plan.wants_refresh(Some(&metadata)));
        assert_results(
            &plan.give_up(),
            vec![
                (
                    tp("t", 0),
                    Err(deadline("t-0", from_metadata_of(API, ErrorCode::LEADER_NOT_AVAILABLE, "t-0"))),
                ),
                (
                    tp("t", 1),
                    Err(deadline("t-1", from_metadata_of(API, ErrorCode::LEADER_NOT_AVAILABLE, "t-1"))),
                ),
            ],
        );
    }

    #[test]
    fn merge_takes_values_as_results_and_a_missing_entry_as_a_protocol_error() {
        let (mut plan, _) = after_shard(&[tp("t", 0), tp("t", 1)]);
        // The answer lacks t-1, and names a partition nobody asked for: it is ignored.
        plan.merge(
            &node(1),
            vec![tp("t", 0), tp("t", 1)],
            Ok(vec![(tp("t", 0), Ok(42)), (tp("u", 9), Ok(1))]),
        );
        assert!(plan.is_done());
        let missing = ClientError::Protocol {
            broker: node(1),
            message: "the response has no entry for t-1".to_owned(),
        };
        assert_results(&plan.finish(), vec![(tp("t", 0), Ok(42)), (tp("t", 1), Err(missing))]);
    }

    #[test]
    fn merge_retries_a_stale_leader_or_coordinator_code_after_a_refresh() {
        for code in
            [ErrorCode::NOT_LEADER_OR_FOLLOWER, ErrorCode::FENCED_LEADER_EPOCH, ErrorCode::NOT_COORDINATOR]
        {
            let (mut plan, _) = after_shard(&[tp("t", 0)]);
            plan.merge(&node(1), vec![tp("t", 0)], Ok(vec![(tp("t", 0), Err(code))]));
            assert_eq!(plan.pending, [tp("t", 0)], "{code:?}");
            assert!(plan.wants_refresh(Some(&two_leaders())), "{code:?}");
            assert_results(
                &plan.give_up(),
                vec![(tp("t", 0), Err(deadline("t-0", kafka(node(1), code, "t-0"))))],
            );
        }
    }

    #[test]
    fn merge_retries_a_busy_code_without_a_refresh() {
        let (mut plan, _) = after_shard(&[tp("t", 0)]);
        plan.merge(&node(1), vec![tp("t", 0)], Ok(vec![(tp("t", 0), Err(ErrorCode::REQUEST_TIMED_OUT))]));
        assert_eq!(plan.pending, [tp("t", 0)]);
        assert!(!plan.wants_refresh(Some(&two_leaders())));
        assert_results(
            &plan.give_up(),
            vec![(tp("t", 0), Err(deadline("t-0", kafka(node(1), ErrorCode::REQUEST_TIMED_OUT, "t-0"))))],
        );
    }

    #[test]
    fn merge_gives_a_fatal_code_or_none_as_the_result() {
        let (mut plan, _) = after_shard(&[tp("t", 0), tp("t", 1)]);
        plan.merge(
            &node(1),
            vec![tp("t", 0), tp("t", 1)],
            Ok(vec![(tp("t", 0), Err(ErrorCode::OFFSET_OUT_OF_RANGE)), (tp("t", 1), Err(ErrorCode::NONE))]),
        );
        assert!(plan.is_done());
        assert!(!plan.wants_refresh(Some(&two_leaders())));
        assert_results(
            &plan.finish(),
            vec![
                (tp("t", 0), Err(kafka(node(1), ErrorCode::OFFSET_OUT_OF_RANGE, "t-0"))),
                (tp("t", 1), Err(kafka(node(1), ErrorCode::NONE, "t-1"))),
            ],
        );
    }

    #[test]
    fn a_retriable_failure_of_the_whole_request_retries_every_partition_asked_after_a_refresh() {
        let (mut plan, _) = after_shard(&[tp("t", 0), tp("t", 1)]);
        let timeout = ClientError::Timeout { broker: node(1), api: API, after_ms: 30_000 };
        plan.merge(&node(1), vec![tp("t", 0)], Err(timeout.clone()));
        plan.merge(&node(2), vec![tp("t", 1)], Ok(vec![(tp("t", 1), Ok(7))]));
        assert_eq!(plan.pending, [tp("t", 0)]);
        assert!(plan.wants_refresh(Some(&two_leaders())));
        assert_results(
            &plan.give_up(),
            vec![(tp("t", 0), Err(deadline("t-0", timeout))), (tp("t", 1), Ok(7))],
        );
    }

    #[test]
    fn a_fatal_failure_of_the_whole_request_is_each_partitions_result() {
        let (mut plan, _) = after_shard(&[tp("t", 0), tp("t", 1)]);
        let refused = ClientError::InvalidArgument { message: "no".to_owned() };
        plan.merge(&node(1), vec![tp("t", 0)], Err(refused.clone()));
        plan.merge(&node(2), vec![tp("t", 1)], Err(refused.clone()));
        assert!(plan.is_done());
        assert!(!plan.wants_refresh(Some(&two_leaders())));
        assert_results(&plan.finish(), vec![(tp("t", 0), Err(refused.clone())), (tp("t", 1), Err(refused))]);
    }

    #[test]
    fn a_failed_metadata_refresh_is_the_result_of_every_partition_left() {
        let plan: RoutePlan<i64> = RoutePlan::new(API, &[tp("t", 0), tp("t", 1), tp("a b", 0)]);
        let failed = ClientError::NoBrokerReachable { attempts: Vec::new() };
        let results = plan.metadata_failed(&failed);
        assert_eq!(results.len(), 3);
        assert!(matches!(results[&tp("a b", 0)], Err(ClientError::InvalidName(_))), "its own answer is kept");
        for p in [tp("t", 0), tp("t", 1)] {
            assert_eq!(format!("{:?}", results[&p]), format!("{:?}", Err::<i64, _>(failed.clone())));
        }
    }

    #[test]
    fn giving_up_before_any_answer_says_there_was_none() {
        let plan: RoutePlan<i64> = RoutePlan::new(API, &[tp("t", 0)]);
        let none = ClientError::Protocol {
            broker: BrokerRef { node_id: None, addr: "cluster".to_owned() },
            message: "no answer".to_owned(),
        };
        assert_results(&plan.give_up(), vec![(tp("t", 0), Err(deadline("t-0", none)))]);
    }

    #[test]
    fn a_retried_partition_goes_to_its_new_leader_at_the_next_step() {
        let (mut plan, first) = after_shard(&[tp("t", 0), tp("t", 1)]);
        assert_eq!(
            sent(&first),
            [
                (node(1), Some(5), vec![(tp("t", 0), Some(5))]),
                (node(2), Some(5), vec![(tp("t", 1), Some(5))])
            ]
        );
        plan.merge(
            &node(1),
            vec![tp("t", 0)],
            Ok(vec![(tp("t", 0), Err(ErrorCode::NOT_LEADER_OR_FOLLOWER))]),
        );
        plan.merge(&node(2), vec![tp("t", 1)], Ok(vec![(tp("t", 1), Ok(11))]));
        // The refreshed metadata: t-0 moved to broker 2, at epoch 6.
        let moved =
            cluster(&[1, 2], vec![topic("t", ErrorCode::NONE, vec![led(0, Some(2), 6), led(1, Some(2), 5)])]);
        let second = plan.shard(&moved, by_leader);
        assert_eq!(sent(&second), [(node(2), Some(6), vec![(tp("t", 0), Some(6))])]);
        assert!(!plan.wants_refresh(Some(&moved)), "the step took the refresh");
        plan.merge(&node(2), vec![tp("t", 0)], Ok(vec![(tp("t", 0), Ok(10))]));
        assert!(plan.is_done());
        assert_results(&plan.finish(), vec![(tp("t", 0), Ok(10)), (tp("t", 1), Ok(11))]);
    }
}
