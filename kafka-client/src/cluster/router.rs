//! Leader routing, the SimpleConsumer pattern done right: split the partitions of a request by
//! leader, send one request per broker in parallel, merge, and retry only the partitions whose
//! error says it can help — after refreshing whatever the error says is stale — until one
//! overall deadline.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::time::Duration;

use futures_util::future::join_all;

pub use kafka_vocab::TopicPartition;

use crate::cluster::client::Client;
use crate::cluster::metadata::{ClusterMetadata, PartitionInfo};
use crate::cluster::retry::Backoff;
use crate::deadline::deadline_after;
use crate::error::{BrokerRef, ClientError};
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

impl Client {
    /// Runs `per_leader` once per leader broker (in parallel) with that broker's partitions,
    /// and merges the answers into one result per partition. A partition without a leader, or
    /// whose answer's error is retriable, is retried (after a metadata refresh where the error
    /// calls for one) until `timeout` has passed; a fatal error is that partition's result.
    pub async fn route_by_leader<T, F, Fut>(
        &self,
        api: ApiKey,
        partitions: &[TopicPartition],
        timeout: Duration,
        per_leader: F,
    ) -> PartitionResults<T>
    where
        F: Fn(LeaderTarget, LeaderBatch) -> Fut,
        Fut: Future<Output = Result<Vec<(TopicPartition, LeaderAnswer<T>)>, ClientError>>,
    {
        self.route_to(api, partitions, timeout, |_, partition, _| partition.leader, per_leader).await
    }

    /// [`route_by_leader`](Self::route_by_leader), sending each partition to the node `choose`
    /// picks from the metadata at that try (its leader, or a replica to read from); asked
    /// again on every retry, so a failed choice can be replaced. The target's leader epoch is
    /// still the leader's.
    pub(crate) async fn route_to<T, C, F, Fut>(
        &self,
        api: ApiKey,
        partitions: &[TopicPartition],
        timeout: Duration,
        choose: C,
        per_leader: F,
    ) -> PartitionResults<T>
    where
        C: Fn(&TopicPartition, &PartitionInfo, &ClusterMetadata) -> Option<i32>,
        F: Fn(LeaderTarget, LeaderBatch) -> Fut,
        Fut: Future<Output = Result<Vec<(TopicPartition, LeaderAnswer<T>)>, ClientError>>,
    {
        let deadline = deadline_after(timeout);
        let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(1), deadline);
        let mut results: PartitionResults<T> = BTreeMap::new();
        let mut pending: Vec<TopicPartition> = partitions.to_vec();
        pending.sort();
        pending.dedup();
        // A topic name breaking Kafka's rules is that partition's answer, before anything is sent.
        pending.retain(|tp| match validate_topic(&tp.topic) {
            Ok(()) => true,
            Err(e) => {
                results.insert(tp.clone(), Err(e.into()));
                false
            }
        });
        if pending.is_empty() {
            return results;
        }
        let topics: Vec<String> = {
            let mut t: Vec<String> = pending.iter().map(|tp| tp.topic.to_string()).collect();
            t.dedup();
            t
        };
        let mut last_errors: HashMap<TopicPartition, ClientError> = HashMap::new();
        // Cached metadata that knows every partition asked for is used as is: a leader that
        // moved answers NOT_LEADER_OR_FOLLOWER (or the connection fails), which refreshes it.
        let mut refresh = self.cached_metadata().is_none_or(|m| {
            pending.iter().any(|tp| {
                m.topic(&tp.topic).is_none_or(|t| t.partitions.iter().all(|p| p.partition != tp.partition))
            })
        });
        loop {
            let cached = if refresh { None } else { self.cached_metadata() };
            let metadata = if let Some(metadata) = cached {
                metadata
            } else {
                // No single step may outlive the call's deadline, whatever the request timeout.
                let refreshed = tokio::time::timeout_at(
                    tokio::time::Instant::from_std(deadline),
                    self.refresh_metadata(&topics),
                )
                .await
                .unwrap_or_else(|_| {
                    Err(ClientError::DeadlineExceeded {
                        what: format!("Metadata for {api}"),
                        last_error: Box::new(ClientError::Timeout {
                            broker: BrokerRef { node_id: None, addr: "any broker".to_owned() },
                            api: ApiKey::METADATA,
                            after_ms: millis(timeout),
                        }),
                    })
                });
                match refreshed {
                    Ok(m) => m,
                    Err(e) => {
                        if e.is_retriable() {
                            if let Some(wait) = backoff.next_wait() {
                                tokio::time::sleep(wait).await;
                                continue;
                            }
                        }
                        for tp in pending {
                            results.insert(tp, Err(e.clone()));
                        }
                        return results;
                    }
                }
            };
            refresh = false;

            // Shard by leader.
            let mut by_leader: BTreeMap<i32, (LeaderTarget, LeaderBatch)> = BTreeMap::new();
            let mut retry_next: Vec<TopicPartition> = Vec::new();
            for tp in std::mem::take(&mut pending) {
                let Some(topic) = metadata.topic(&tp.topic) else {
                    results
                        .insert(tp.clone(), Err(ClientError::UnknownTopic { topic: tp.topic.to_string() }));
                    continue;
                };
                if topic.error == ErrorCode::UNKNOWN_TOPIC_OR_PARTITION {
                    results
                        .insert(tp.clone(), Err(ClientError::UnknownTopic { topic: tp.topic.to_string() }));
                    continue;
                }
                // Metadata hides the partitions of a topic an ACL refuses: each asked for is refused
                // with Metadata's code, not reported missing.
                if topic.error.is_authorization() {
                    results.insert(
                        tp.clone(),
                        Err(ClientError::Kafka {
                            broker: BrokerRef { node_id: None, addr: "metadata".to_owned() },
                            api: ApiKey::METADATA,
                            code: topic.error,
                            context: format!("topic `{}`", tp.topic),
                        }),
                    );
                    continue;
                }
                let Some(partition) = topic.partitions.iter().find(|p| p.partition == tp.partition) else {
                    results.insert(
                        tp.clone(),
                        Err(ClientError::Kafka {
                            broker: BrokerRef { node_id: None, addr: "metadata".to_owned() },
                            api,
                            code: ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                            context: tp.to_string(),
                        }),
                    );
                    continue;
                };
                let leader = choose(&tp, partition, &metadata)
                    .and_then(|id| metadata.broker(id).map(|b| (id, b.addr())));
                match leader {
                    Some((id, addr)) => {
                        by_leader
                            .entry(id)
                            .or_insert_with(|| {
                                (
                                    LeaderTarget {
                                        broker: BrokerRef { node_id: Some(id), addr },
                                        leader_epoch: partition.leader_epoch,
                                    },
                                    Vec::new(),
                                )
                            })
                            .1
                            .push((tp, partition.leader_epoch));
                    }
                    None => {
                        last_errors.insert(
                            tp.clone(),
                            ClientError::Kafka {
                                broker: BrokerRef { node_id: None, addr: "metadata".to_owned() },
                                api,
                                code: ErrorCode::LEADER_NOT_AVAILABLE,
                                context: tp.to_string(),
                            },
                        );
                        retry_next.push(tp);
                        refresh = true;
                    }
                }
            }

            // Send to every leader at once, then merge.
            // A leader that accepts the request but does not answer must not hold the call past
            // its deadline (the request timeout may be longer): it counts as a timeout there.
            let sends = by_leader.into_values().map(|(target, tps)| {
                let broker = target.broker.clone();
                let asked: Vec<TopicPartition> = tps.iter().map(|(tp, _)| tp.clone()).collect();
                let fut = per_leader(target, tps);
                async move {
                    let outcome = tokio::time::timeout_at(tokio::time::Instant::from_std(deadline), fut)
                        .await
                        .unwrap_or_else(|_| {
                            Err(ClientError::Timeout {
                                broker: broker.clone(),
                                api,
                                after_ms: millis(timeout),
                            })
                        });
                    (broker, asked, outcome)
                }
            });
            for (broker, asked, outcome) in join_all(sends).await {
                match outcome {
                    Ok(answers) => {
                        let mut answered: HashMap<TopicPartition, LeaderAnswer<T>> =
                            answers.into_iter().collect();
                        for tp in asked {
                            match answered.remove(&tp) {
                                Some(Ok(value)) => {
                                    results.insert(tp, Ok(value));
                                }
                                Some(Err(code)) => {
                                    let err = ClientError::Kafka {
                                        broker: broker.clone(),
                                        api,
                                        code,
                                        context: tp.to_string(),
                                    };
                                    match code.recovery() {
                                        Recovery::RefreshMetadata | Recovery::RefindCoordinator => {
                                            refresh = true;
                                            last_errors.insert(tp.clone(), err);
                                            retry_next.push(tp);
                                        }
                                        Recovery::Retry => {
                                            last_errors.insert(tp.clone(), err);
                                            retry_next.push(tp);
                                        }
                                        Recovery::Fatal | Recovery::None => {
                                            results.insert(tp, Err(err));
                                        }
                                    }
                                }
                                None => {
                                    results.insert(
                                        tp.clone(),
                                        Err(ClientError::Protocol {
                                            broker: broker.clone(),
                                            message: format!("the response has no entry for {tp}"),
                                        }),
                                    );
                                }
                            }
                        }
                    }
                    Err(e) if e.is_retriable() => {
                        // The broker is gone or slow: leadership may have moved.
                        refresh = true;
                        for tp in asked {
                            last_errors.insert(tp.clone(), e.clone());
                            retry_next.push(tp);
                        }
                    }
                    Err(e) => {
                        for tp in asked {
                            results.insert(tp, Err(e.clone()));
                        }
                    }
                }
            }

            if retry_next.is_empty() {
                return results;
            }
            match backoff.next_wait() {
                Some(wait) => {
                    tokio::time::sleep(wait).await;
                    pending = retry_next;
                }
                None => {
                    for tp in retry_next {
                        let last = last_errors.remove(&tp).unwrap_or_else(|| ClientError::Protocol {
                            broker: BrokerRef { node_id: None, addr: "cluster".to_owned() },
                            message: "no answer".to_owned(),
                        });
                        results.insert(
                            tp.clone(),
                            Err(ClientError::DeadlineExceeded {
                                what: format!("{api} for {tp}"),
                                last_error: Box::new(last),
                            }),
                        );
                    }
                    return results;
                }
            }
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
