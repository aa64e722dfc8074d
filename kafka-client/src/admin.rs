//! Admin calls: create and delete topics, add partitions (sent to the controller, which any
//! KRaft broker forwards to), and delete records and offset-for-leader-epoch (sent to the
//! partition leaders, one request per leader broker).
//!
//! Topic calls return once the change is visible: every reachable broker's metadata shows the
//! topic with a leader for each partition and each leader answers for its partitions (create,
//! add partitions), or no broker's metadata shows the topic any more (delete). So a call made
//! right after sees the change, whichever broker it asks.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use crate::cluster::client::Client;
use crate::cluster::metadata::{ClusterMetadata, TopicInfo};
use crate::cluster::retry::Backoff;
use crate::cluster::router::{LeaderAnswer, PartitionResults, TopicPartition};
use crate::deadline::{deadline_after, fits_before};
use crate::error::{BrokerRef, ClientError};
use crate::fetch::offsets::OffsetQuery;
use kafka_vocab::Isolation;
use kafka_wire::protocol::messages::{
    create_partitions, create_topics, delete_records, delete_topics, offset_for_leader_epoch, CreatableTopic,
    CreatableTopicConfig, CreatePartitionsRequest, CreatePartitionsTopic, CreateTopicsRequest,
    DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic, DeleteTopicState, DeleteTopicsRequest,
    MetadataRequest, OffsetForLeaderEpochRequest, OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_wire::protocol::names::validate_topic;
use kafka_wire::protocol::{ApiKey, ErrorCode, Recovery, Request, TaggedFields, Uuid};

/// One result per topic named in a call.
pub type TopicResults<T> = BTreeMap<String, Result<T, ClientError>>;

/// A topic to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTopic {
    /// The topic name; checked against Kafka's rules before anything is sent.
    pub name: String,
    /// −1 for the broker's `num.partitions` (CreateTopics v4+).
    pub partitions: i32,
    /// −1 for the broker's `default.replication.factor` (CreateTopics v4+).
    pub replication_factor: i16,
    /// Topic configs (`cleanup.policy`, `retention.ms`, ...), name and value.
    pub configs: Vec<(String, String)>,
}

impl NewTopic {
    /// A topic with no configs of its own; use −1 for the broker's default partition count or
    /// replication factor.
    pub fn new(name: impl Into<String>, partitions: i32, replication_factor: i16) -> Self {
        Self { name: name.into(), partitions, replication_factor, configs: Vec::new() }
    }
}

/// A created topic as the cluster's metadata shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreatedTopic {
    /// The topic id (Kafka 2.8+); `None` for older brokers.
    pub topic_id: Option<Uuid>,
    /// The number of partitions the topic was created with.
    pub partitions: i32,
    /// The replication factor it was created with.
    pub replication_factor: i16,
}

/// The end of a leader epoch on a partition's current leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEnd {
    /// The largest epoch at or below the requested one that the leader knows (v1+); `None`
    /// when it knows none.
    pub leader_epoch: Option<i32>,
    /// One past that epoch's last offset (the next epoch's start offset, or the log end for
    /// the current epoch); `None` when unknown.
    pub end_offset: Option<i64>,
}

/// What a controller said about one topic of a request.
struct TopicAnswer<X> {
    name: String,
    code: ErrorCode,
    message: Option<String>,
    extra: X,
}

/// What wait-for-metadata looks for in one topic's metadata (`None`: the topic is absent).
type Ready<'a> = dyn Fn(&str, Option<&TopicInfo>) -> bool + Sync + 'a;

impl Client {
    /// Creates `topics` and waits until every reachable broker shows each with a leader for
    /// every partition. One result per topic; a topic that exists already is
    /// TOPIC_ALREADY_EXISTS, with the broker's message.
    ///
    /// Sent to the controller (which a KRaft broker forwards to); retried until `timeout` when the
    /// answer says so (NOT_CONTROLLER, THROTTLING_QUOTA_EXCEEDED, ...) or the broker cannot be
    /// reached. The call returns once the change is visible in every reachable broker's
    /// metadata, so a call made right after sees it whichever broker it asks.
    pub async fn create_topics(&self, topics: &[NewTopic], timeout: Duration) -> TopicResults<CreatedTopic> {
        let deadline = deadline_after(timeout);
        let (topics, mut results) = checked_names(topics, |t| &t.name);
        let by_name: HashMap<&str, &NewTopic> = topics.iter().map(|t| (t.name.as_str(), *t)).collect();
        let names: Vec<String> = by_name.keys().map(|n| (*n).to_owned()).collect();
        let answered = self
            .per_topic(
                create_topics::SPEC.key,
                names,
                deadline,
                |names, version, timeout_ms| CreateTopicsRequest {
                    topics: names
                        .iter()
                        .filter_map(|n| by_name.get(n.as_str()))
                        .map(|t| CreatableTopic {
                            name: t.name.clone(),
                            num_partitions: t.partitions,
                            replication_factor: t.replication_factor,
                            assignments: Vec::new(),
                            configs: t
                                .configs
                                .iter()
                                .map(|(name, value)| CreatableTopicConfig {
                                    name: name.clone(),
                                    value: Some(value.clone()),
                                    tagged_fields: TaggedFields::default(),
                                })
                                .collect(),
                            tagged_fields: TaggedFields::default(),
                        })
                        .collect(),
                    timeout_ms,
                    validate_only: (version >= 1).then_some(false),
                    tagged_fields: TaggedFields::default(),
                },
                |response| {
                    response
                        .topics
                        .into_iter()
                        .map(|t| TopicAnswer {
                            name: t.name,
                            code: t.error_code,
                            message: t.error_message,
                            extra: t.num_partitions.filter(|n| *n > 0),
                        })
                        .collect()
                },
            )
            .await;
        let mut expected: HashMap<String, i32> = HashMap::new();
        let mut waiting = Vec::new();
        for (name, count) in accepted(answered, &mut results) {
            let asked = by_name.get(name.as_str()).map_or(-1, |t| t.partitions);
            expected.insert(name.clone(), count.unwrap_or(asked));
            waiting.push(name);
        }
        let ready = |name: &str, topic: Option<&TopicInfo>| {
            let want = expected.get(name).copied().unwrap_or(-1);
            topic.is_some_and(|t| {
                t.error.is_ok()
                    && !t.partitions.is_empty()
                    && (want <= 0 || t.partitions.len() == want as usize)
                    && t.partitions.iter().all(|p| p.leader.is_some())
            })
        };
        let mut seen = self.wait_for_metadata(create_topics::SPEC.key, &waiting, deadline, &ready).await;
        self.await_leaders(&mut seen, deadline).await;
        for (name, outcome) in seen {
            let created = outcome.map(|metadata| {
                let topic = metadata.as_ref().and_then(|m| m.topic(&name));
                CreatedTopic {
                    topic_id: topic.and_then(|t| t.topic_id),
                    partitions: topic.map_or(0, |t| t.partitions.len() as i32),
                    replication_factor: topic
                        .and_then(|t| t.partitions.first())
                        .map_or(0, |p| p.replicas.len() as i16),
                }
            });
            results.insert(name, created);
        }
        results
    }

    /// Deletes `names` and waits until no reachable broker shows them. One result per topic;
    /// an unknown topic is UNKNOWN_TOPIC_OR_PARTITION.
    ///
    /// Sent to the controller (which a KRaft broker forwards to); retried until `timeout` when the
    /// answer says so (NOT_CONTROLLER, THROTTLING_QUOTA_EXCEEDED, ...) or the broker cannot be
    /// reached. The call returns once the change is visible in every reachable broker's
    /// metadata, so a call made right after sees it whichever broker it asks.
    pub async fn delete_topics(&self, names: &[String], timeout: Duration) -> TopicResults<()> {
        let deadline = deadline_after(timeout);
        let (names, mut results) = checked_names(names, |n| n);
        let names: Vec<String> = names.into_iter().cloned().collect();
        let answered = self
            .per_topic(
                delete_topics::SPEC.key,
                names,
                deadline,
                |names, version, timeout_ms| DeleteTopicsRequest {
                    topics: (version >= 6).then(|| {
                        names
                            .iter()
                            .map(|n| DeleteTopicState {
                                name: Some(n.clone()),
                                topic_id: Uuid::ZERO,
                                tagged_fields: TaggedFields::default(),
                            })
                            .collect()
                    }),
                    topic_names: (version < 6).then(|| names.to_vec()),
                    timeout_ms,
                    tagged_fields: TaggedFields::default(),
                },
                |response| {
                    response
                        .responses
                        .into_iter()
                        .filter_map(|t| {
                            Some(TopicAnswer {
                                name: t.name?,
                                code: t.error_code,
                                message: t.error_message,
                                extra: (),
                            })
                        })
                        .collect()
                },
            )
            .await;
        let waiting: Vec<String> =
            accepted(answered, &mut results).into_iter().map(|(name, ())| name).collect();
        let gone = |_: &str, topic: Option<&TopicInfo>| topic.is_none_or(|t| !t.error.is_ok());
        for (name, outcome) in
            self.wait_for_metadata(delete_topics::SPEC.key, &waiting, deadline, &gone).await
        {
            results.insert(name, outcome.map(|_| ()));
        }
        results
    }

    /// Raises each topic's partition count to the given total and waits until every reachable
    /// broker shows the new partitions with leaders; the count seen. Asking for fewer
    /// partitions than a topic has is Kafka's INVALID_PARTITIONS.
    ///
    /// Sent to the controller (which a KRaft broker forwards to); retried until `timeout` when the
    /// answer says so (NOT_CONTROLLER, THROTTLING_QUOTA_EXCEEDED, ...) or the broker cannot be
    /// reached. The call returns once the change is visible in every reachable broker's
    /// metadata, so a call made right after sees it whichever broker it asks.
    pub async fn create_partitions(&self, totals: &[(String, i32)], timeout: Duration) -> TopicResults<i32> {
        let deadline = deadline_after(timeout);
        let (totals, mut results) = checked_names(totals, |(n, _)| n);
        let by_name: HashMap<String, i32> = totals.iter().map(|(n, c)| (n.clone(), *c)).collect();
        let names: Vec<String> = by_name.keys().cloned().collect();
        let answered = self
            .per_topic(
                create_partitions::SPEC.key,
                names,
                deadline,
                |names, _, timeout_ms| CreatePartitionsRequest {
                    topics: names
                        .iter()
                        .filter_map(|n| {
                            Some(CreatePartitionsTopic {
                                name: n.clone(),
                                count: *by_name.get(n)?,
                                assignments: None,
                                tagged_fields: TaggedFields::default(),
                            })
                        })
                        .collect(),
                    timeout_ms,
                    validate_only: false,
                    tagged_fields: TaggedFields::default(),
                },
                |response| {
                    response
                        .results
                        .into_iter()
                        .map(|t| TopicAnswer {
                            name: t.name,
                            code: t.error_code,
                            message: t.error_message,
                            extra: (),
                        })
                        .collect()
                },
            )
            .await;
        let waiting: Vec<String> =
            accepted(answered, &mut results).into_iter().map(|(name, ())| name).collect();
        let grown = |name: &str, topic: Option<&TopicInfo>| {
            let want = by_name.get(name).copied().unwrap_or(0);
            topic.is_some_and(|t| {
                t.error.is_ok()
                    && t.partitions.len() >= want.max(0) as usize
                    && t.partitions.iter().all(|p| p.leader.is_some())
            })
        };
        let mut seen = self.wait_for_metadata(create_partitions::SPEC.key, &waiting, deadline, &grown).await;
        self.await_leaders(&mut seen, deadline).await;
        for (name, outcome) in seen {
            let count = outcome.map(|metadata| {
                metadata.as_ref().and_then(|m| m.topic(&name)).map_or(0, |t| t.partitions.len() as i32)
            });
            results.insert(name, count);
        }
        results
    }

    /// Deletes the records before each given offset (−1: before the high watermark, i.e.
    /// all), moving the partition's log start; the new log start (low watermark) per
    /// partition. Sent to the leaders, one request per leader broker.
    pub async fn delete_records(
        &self,
        before: &[(TopicPartition, i64)],
        timeout: Duration,
    ) -> PartitionResults<i64> {
        let offsets: HashMap<TopicPartition, i64> = before.iter().cloned().collect();
        let partitions: Vec<TopicPartition> = offsets.keys().cloned().collect();
        let offsets = &offsets;
        let timeout_ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        self.route_by_leader(delete_records::SPEC.key, &partitions, timeout, |target, batch| async move {
            let mut topics: BTreeMap<&str, Vec<DeleteRecordsPartition>> = BTreeMap::new();
            for (tp, _) in &batch {
                topics.entry(&*tp.topic).or_default().push(DeleteRecordsPartition {
                    partition_index: tp.partition,
                    offset: offsets.get(tp).copied().unwrap_or(delete_records::DELETE_UP_TO_HIGH_WATERMARK),
                    tagged_fields: TaggedFields::default(),
                });
            }
            let request = DeleteRecordsRequest {
                topics: topics
                    .into_iter()
                    .map(|(name, partitions)| DeleteRecordsTopic {
                        name: name.to_owned(),
                        partitions,
                        tagged_fields: TaggedFields::default(),
                    })
                    .collect(),
                timeout_ms,
                tagged_fields: TaggedFields::default(),
            };
            let (_, response) = self.send(&target.broker, &request).await?;
            let mut answers: Vec<(TopicPartition, LeaderAnswer<i64>)> = Vec::new();
            for topic in response.topics {
                for p in topic.partitions {
                    let answer = if p.error_code.is_ok() { Ok(p.low_watermark) } else { Err(p.error_code) };
                    answers.push((TopicPartition::new(topic.name.clone(), p.partition_index), answer));
                }
            }
            Ok(answers)
        })
        .await
    }

    /// The end offset of each given leader epoch on the partition's current leader — what a
    /// consumer compares its position with to detect log truncation (KIP-320). Fenced with
    /// the leader epoch from metadata, so a stale leader answers FENCED_LEADER_EPOCH (and the
    /// call retries on the new one) instead of a wrong offset.
    pub async fn offset_for_leader_epoch(
        &self,
        epochs: &[(TopicPartition, i32)],
        timeout: Duration,
    ) -> PartitionResults<EpochEnd> {
        let wanted: HashMap<TopicPartition, i32> = epochs.iter().cloned().collect();
        let partitions: Vec<TopicPartition> = wanted.keys().cloned().collect();
        let wanted = &wanted;
        self.route_by_leader(
            offset_for_leader_epoch::SPEC.key,
            &partitions,
            timeout,
            |target, batch| async move {
                let build = |version: i16| {
                    let mut topics: BTreeMap<&str, Vec<OffsetForLeaderPartition>> = BTreeMap::new();
                    for (tp, current) in &batch {
                        topics.entry(&*tp.topic).or_default().push(OffsetForLeaderPartition {
                            partition: tp.partition,
                            current_leader_epoch: (version >= 2).then_some(current.unwrap_or(-1)),
                            leader_epoch: wanted.get(tp).copied().unwrap_or(-1),
                            tagged_fields: TaggedFields::default(),
                        });
                    }
                    OffsetForLeaderEpochRequest {
                        replica_id: (version >= 3).then_some(offset_for_leader_epoch::CONSUMER_REPLICA_ID),
                        topics: topics
                            .into_iter()
                            .map(|(topic, partitions)| OffsetForLeaderTopic {
                                topic: topic.to_owned(),
                                partitions,
                                tagged_fields: TaggedFields::default(),
                            })
                            .collect(),
                        tagged_fields: TaggedFields::default(),
                    }
                };
                let (version, response) = self.send_built(&target.broker, build).await?;
                crate::kafka_release::LEADER_EPOCH_VALIDATION.check(version, &target.broker)?;
                let mut answers: Vec<(TopicPartition, LeaderAnswer<EpochEnd>)> = Vec::new();
                for topic in response.topics {
                    for p in topic.partitions {
                        let answer = if p.error_code.is_ok() {
                            Ok(EpochEnd {
                                leader_epoch: p.leader_epoch.filter(|e| *e >= 0),
                                end_offset: (p.end_offset >= 0).then_some(p.end_offset),
                            })
                        } else {
                            Err(p.error_code)
                        };
                        answers.push((TopicPartition::new(topic.topic.clone(), p.partition), answer));
                    }
                }
                Ok(answers)
            },
        )
        .await
    }

    /// Sends a controller-bound request naming `names`, again for the topics whose answer
    /// says to retry (NOT_CONTROLLER, THROTTLING_QUOTA_EXCEEDED, ...) or when the broker
    /// could not be reached, until `deadline`. REQUEST_TIMED_OUT counts as accepted: the
    /// controller may still finish, and the metadata wait decides.
    async fn per_topic<R, X>(
        &self,
        api: ApiKey,
        names: Vec<String>,
        deadline: Instant,
        build: impl Fn(&[String], i16, i32) -> R,
        read: impl Fn(R::Response) -> Vec<TopicAnswer<X>>,
    ) -> TopicResults<X>
    where
        R: Request + std::fmt::Debug,
        R::Response: std::fmt::Debug,
    {
        let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(1), deadline);
        let mut results: TopicResults<X> = BTreeMap::new();
        let mut pending = names;
        let mut last_errors: HashMap<String, ClientError> = HashMap::new();
        while !pending.is_empty() {
            let timeout_ms = i32::try_from(deadline.saturating_duration_since(Instant::now()).as_millis())
                .unwrap_or(i32::MAX)
                .max(1);
            let sent = match self.controller().await {
                Ok(broker) => self
                    .send_built(&broker, |version| build(&pending, version, timeout_ms))
                    .await
                    .map(|(_, response)| (broker, response)),
                Err(e) => Err(e),
            };
            let mut retry = Vec::new();
            match sent {
                Ok((broker, response)) => {
                    let mut answers: HashMap<String, TopicAnswer<X>> =
                        read(response).into_iter().map(|a| (a.name.clone(), a)).collect();
                    for name in std::mem::take(&mut pending) {
                        let Some(answer) = answers.remove(&name) else {
                            results.insert(
                                name.clone(),
                                Err(ClientError::Protocol {
                                    broker: broker.clone(),
                                    message: format!("the {api} response has no entry for topic {name}"),
                                }),
                            );
                            continue;
                        };
                        if answer.code.is_ok() || answer.code == ErrorCode::REQUEST_TIMED_OUT {
                            results.insert(name, Ok(answer.extra));
                            continue;
                        }
                        let context = match answer.message.filter(|m| !m.is_empty()) {
                            Some(message) => format!("topic {name} ({message})"),
                            None => format!("topic {name}"),
                        };
                        let err =
                            ClientError::Kafka { broker: broker.clone(), api, code: answer.code, context };
                        // Only "try again" codes: UNKNOWN_TOPIC_OR_PARTITION (RefreshMetadata
                        // elsewhere) is a final answer about a topic to a controller request.
                        if answer.code.recovery() == Recovery::Retry {
                            last_errors.insert(name.clone(), err);
                            retry.push(name);
                        } else {
                            results.insert(name, Err(err));
                        }
                    }
                }
                Err(e) if e.is_retriable() => {
                    for name in std::mem::take(&mut pending) {
                        last_errors.insert(name.clone(), e.clone());
                        retry.push(name);
                    }
                    // The controller may have moved or the broker died: look again.
                    let _ = self.refresh_metadata(&[]).await;
                }
                Err(e) => {
                    for name in std::mem::take(&mut pending) {
                        results.insert(name, Err(e.clone()));
                    }
                }
            }
            if retry.is_empty() {
                break;
            }
            if let Some(wait) = backoff.next_wait() {
                tokio::time::sleep(wait).await;
                pending = retry;
            } else {
                for name in retry {
                    let last = last_errors.remove(&name).unwrap_or_else(|| ClientError::Protocol {
                        broker: BrokerRef { node_id: None, addr: "controller".to_owned() },
                        message: "no answer".to_owned(),
                    });
                    results.insert(
                        name.clone(),
                        Err(ClientError::DeadlineExceeded {
                            what: format!("{api} for topic {name}"),
                            last_error: Box::new(last),
                        }),
                    );
                }
            }
        }
        results
    }

    /// Metadata can name a partition's leader before that broker serves it (a KRaft broker
    /// updates its metadata cache before its replica manager): asks every partition of the
    /// topics in `seen` for its log start at its leader — retrying NOT_LEADER_OR_FOLLOWER and
    /// the like until `deadline` — and turns a topic whose partitions never answered into
    /// that partition's error.
    async fn await_leaders(&self, seen: &mut TopicResults<Option<ClusterMetadata>>, deadline: Instant) {
        let mut partitions: Vec<TopicPartition> = Vec::new();
        for (name, outcome) in seen.iter() {
            let Ok(Some(metadata)) = outcome else { continue };
            if let Some(topic) = metadata.topic(name) {
                partitions
                    .extend(topic.partitions.iter().map(|p| TopicPartition::new(name.clone(), p.partition)));
            }
        }
        if partitions.is_empty() {
            return;
        }
        let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        let answers =
            self.list_offsets(&partitions, OffsetQuery::Earliest, Isolation::ReadUncommitted, left).await;
        for (tp, answer) in answers {
            if let (Err(e), Some(outcome)) = (answer, seen.get_mut(&*tp.topic)) {
                if outcome.is_ok() {
                    *outcome = Err(e);
                }
            }
        }
    }

    /// The broker to send controller-bound requests to: the controller metadata names, or
    /// the first known broker (KRaft brokers forward to the active controller).
    async fn controller(&self) -> Result<BrokerRef, ClientError> {
        let metadata = match self.cached_metadata() {
            Some(m) => m,
            None => self.refresh_metadata(&[]).await?,
        };
        let broker = metadata
            .controller_id
            .and_then(|id| metadata.broker(id))
            .or_else(|| metadata.brokers.first())
            .ok_or_else(|| ClientError::Protocol {
                broker: BrokerRef { node_id: None, addr: "cluster".to_owned() },
                message: "metadata lists no brokers".to_owned(),
            })?;
        Ok(BrokerRef { node_id: Some(broker.node_id), addr: broker.addr() })
    }

    /// Asks every broker for `names` until each reachable broker's answer satisfies `ready`
    /// for every name, or `deadline`. Per name: the last metadata seen, or why it never got
    /// ready. Refreshes the client's cache with the final view.
    async fn wait_for_metadata(
        &self,
        api: ApiKey,
        names: &[String],
        deadline: Instant,
        ready: &Ready<'_>,
    ) -> TopicResults<Option<ClusterMetadata>> {
        let mut results: TopicResults<Option<ClusterMetadata>> = BTreeMap::new();
        if names.is_empty() {
            return results;
        }
        let request = MetadataRequest::for_topics(names);
        let mut last_error: Option<ClientError> = None;
        loop {
            let brokers: Vec<BrokerRef> = match self.refresh_metadata(names).await {
                Ok(m) => {
                    m.brokers.iter().map(|b| BrokerRef { node_id: Some(b.node_id), addr: b.addr() }).collect()
                }
                Err(e) => {
                    last_error = Some(e);
                    Vec::new()
                }
            };
            let mut views: Vec<ClusterMetadata> = Vec::new();
            for broker in &brokers {
                match self.send(broker, &request).await {
                    Ok((_, response)) => views.push(ClusterMetadata::from_response(response, 0)),
                    // A broker that is down cannot serve stale metadata either.
                    Err(e) if e.is_retriable() => last_error = Some(e),
                    Err(e) => return names.iter().map(|n| (n.clone(), Err(e.clone()))).collect(),
                }
            }
            let not_ready: Vec<&String> = names
                .iter()
                .filter(|n| views.is_empty() || views.iter().any(|v| !ready(n, v.topic(n))))
                .collect();
            if not_ready.is_empty() {
                let last = self.refresh_metadata(names).await.ok().map(|m| (*m).clone());
                let last = last.or_else(|| views.pop());
                return names.iter().map(|n| (n.clone(), Ok(last.clone()))).collect();
            }
            if !fits_before(Duration::from_millis(100), deadline) {
                for name in names {
                    let err = if not_ready.contains(&name) {
                        Err(ClientError::DeadlineExceeded {
                            what: format!(
                                "{api} for topic {name}: waiting for every broker's metadata to show it"
                            ),
                            last_error: Box::new(last_error.clone().unwrap_or_else(|| {
                                ClientError::Protocol {
                                    broker: BrokerRef { node_id: None, addr: "cluster".to_owned() },
                                    message: format!("topic {name} is not in the state asked for yet"),
                                }
                            })),
                        })
                    } else {
                        Ok(views.first().cloned())
                    };
                    results.insert(name.clone(), err);
                }
                return results;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The topics the brokers accepted, with what they answered; each refusal is moved into
/// `results` as it is.
fn accepted<X, T>(answered: TopicResults<X>, results: &mut TopicResults<T>) -> Vec<(String, X)> {
    let mut ok = Vec::new();
    for (name, answer) in answered {
        match answer {
            Ok(x) => ok.push((name, x)),
            Err(e) => {
                results.insert(name, Err(e));
            }
        }
    }
    ok
}

/// Splits off names breaking Kafka's rules and names given more than once: each gets an error;
/// the rest are kept once.
fn checked_names<'a, T, U>(
    items: &'a [T],
    name: impl Fn(&'a T) -> &'a String,
) -> (Vec<&'a T>, TopicResults<U>) {
    let mut counts: HashMap<&String, usize> = HashMap::new();
    for item in items {
        *counts.entry(name(item)).or_default() += 1;
    }
    let mut kept = Vec::new();
    let mut errors = BTreeMap::new();
    for item in items {
        let n = name(item);
        if let Err(e) = validate_topic(n) {
            errors.insert(n.clone(), Err(e.into()));
        } else if counts.get(n).copied().unwrap_or(0) > 1 {
            errors.insert(
                n.clone(),
                Err(ClientError::InvalidArgument { message: format!("topic {n} is named more than once") }),
            );
        } else {
            kept.push(item);
        }
    }
    (kept, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topic_named_twice_in_one_call_is_refused_and_the_others_kept() {
        let topics = vec![NewTopic::new("a", 1, 1), NewTopic::new("b", 1, 1), NewTopic::new("a", 2, 1)];
        let (kept, errors): (Vec<&NewTopic>, TopicResults<CreatedTopic>) =
            checked_names(&topics, |t| &t.name);
        assert_eq!(kept.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), vec!["b"]);
        let err = errors["a"].as_ref().unwrap_err();
        assert!(matches!(err, ClientError::InvalidArgument { .. }), "{err}");
        assert!(err.to_string().contains("topic a"));
    }
}
