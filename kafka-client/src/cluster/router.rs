//! Leader routing, the SimpleConsumer pattern done right: split the partitions of a request by
//! leader, send one request per broker in parallel, merge, and retry only the partitions whose
//! error says it can help — after refreshing whatever the error says is stale — until one
//! overall deadline.
//!
//! The decisions (how to shard, what each answer means, what to retry and when metadata is
//! stale) are the sans-IO [`RoutePlan`](crate::cluster::route_plan::RoutePlan) in `route_plan.rs`; this
//! file is the loop that does the IO: the metadata refresh, the parallel sends, the
//! deadline and the backoff.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;

pub use crate::cluster::route_plan::{LeaderAnswer, LeaderBatch, LeaderTarget, PartitionResults};
pub use kafka_vocab::TopicPartition;

use crate::cluster::client::Client;
use crate::cluster::metadata::{ClusterMetadata, PartitionInfo};
use crate::cluster::retry::Backoff;
use crate::cluster::route_plan::RoutePlan;
use crate::deadline::deadline_after;
use crate::error::{BrokerRef, ClientError};
use kafka_wire::protocol::ApiKey;

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
        let mut plan = RoutePlan::new(api, partitions);
        if plan.is_done() {
            return plan.finish();
        }
        loop {
            let metadata = match self.cached_metadata() {
                Some(cached) if !plan.wants_refresh(Some(&*cached)) => cached,
                _ => match self.refresh_metadata_before(deadline, api, timeout, plan.topics()).await {
                    Ok(refreshed) => refreshed,
                    Err(e) => {
                        if e.is_retriable() {
                            if let Some(wait) = backoff.next_wait() {
                                tokio::time::sleep(wait).await;
                                continue;
                            }
                        }
                        return plan.metadata_failed(&e);
                    }
                },
            };

            // Send to every node at once. A leader that accepts the request but does not
            // answer must not hold the call past its deadline (the request timeout may be
            // longer): it counts as a timeout there.
            let sends = plan.shard(&metadata, &choose).into_iter().map(|(target, batch)| {
                let broker = target.broker.clone();
                let asked: Vec<TopicPartition> = batch.iter().map(|(tp, _)| tp.clone()).collect();
                let fut = per_leader(target, batch);
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
                plan.merge(&broker, asked, outcome);
            }

            if plan.is_done() {
                return plan.finish();
            }
            match backoff.next_wait() {
                Some(wait) => tokio::time::sleep(wait).await,
                None => return plan.give_up(),
            }
        }
    }

    /// Metadata for `topics`, refreshed; no single step may outlive the call's deadline,
    /// whatever the request timeout, so one still running then is a
    /// [`ClientError::DeadlineExceeded`] of the call (`api`, with `timeout`).
    async fn refresh_metadata_before(
        &self,
        deadline: Instant,
        api: ApiKey,
        timeout: Duration,
        topics: &[String],
    ) -> Result<Arc<ClusterMetadata>, ClientError> {
        tokio::time::timeout_at(tokio::time::Instant::from_std(deadline), self.refresh_metadata(topics))
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
            })
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
