//! How many members many groups have, with one describe request per coordinator and protocol
//! (DescribeGroups for classic groups, ConsumerGroupDescribe for consumer-protocol ones), routed
//! by the coordinator ListGroups found each group on — no FindCoordinator, no request per group.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::join_all;

use crate::cluster::client::Client;
use crate::error::{BrokerRef, ClientError};
use crate::groups::non_member::GroupListing;
use kafka_wire::protocol::messages::{
    consumer_group_describe, describe_groups, ConsumerGroupDescribeRequest, DescribeGroupsRequest,
};
use kafka_wire::protocol::{ErrorCode, TaggedFields};

/// Which describe API a group's listing calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Describer {
    /// DescribeGroups: classic groups, and groups of a broker too old to say the type.
    Classic,
    /// ConsumerGroupDescribe: KIP-848 consumer-protocol groups.
    Consumer,
}

type Counts = Vec<(String, Result<usize, ClientError>)>;

impl Client {
    /// The member count of each listed classic or consumer-protocol group (other group types are
    /// left out), asking each group's listing coordinator. A group its coordinator no longer
    /// knows (GROUP_ID_NOT_FOUND: deleted, or moved since the listing) counts 0 members; any other
    /// error, or no answer within `timeout`, is that group's result. The broker addresses come
    /// from the metadata [`list_groups`](Self::list_groups) read.
    pub async fn member_counts(
        &self,
        listings: &[GroupListing],
        timeout: Duration,
    ) -> BTreeMap<String, Result<usize, ClientError>> {
        let brokers: BTreeMap<i32, String> = self
            .cached_metadata()
            .map(|m| m.brokers.iter().map(|b| (b.node_id, b.addr())).collect())
            .unwrap_or_default();
        let mut out = BTreeMap::new();
        let mut asks: BTreeMap<(i32, Describer), Vec<String>> = BTreeMap::new();
        for l in listings {
            let describer = match l.group_type.as_deref() {
                None | Some("classic") => Describer::Classic,
                Some("consumer") => Describer::Consumer,
                Some(_) => continue,
            };
            if brokers.contains_key(&l.coordinator) {
                asks.entry((l.coordinator, describer)).or_default().push(l.group_id.clone());
            } else {
                out.insert(
                    l.group_id.clone(),
                    Err(ClientError::Protocol {
                        broker: BrokerRef { node_id: Some(l.coordinator), addr: "unknown".to_owned() },
                        message: format!("broker {} is not in the metadata", l.coordinator),
                    }),
                );
            }
        }
        let calls = asks.into_iter().map(|((node, describer), groups)| {
            let broker =
                BrokerRef { node_id: Some(node), addr: brokers.get(&node).cloned().unwrap_or_default() };
            async move {
                let call = async {
                    match describer {
                        Describer::Classic => self.classic_counts(&broker, &groups).await,
                        Describer::Consumer => self.consumer_counts(&broker, &groups).await,
                    }
                };
                match tokio::time::timeout(timeout, call).await {
                    Ok(Ok(counts)) => counts,
                    Ok(Err(e)) => {
                        let text = e.to_string();
                        groups
                            .into_iter()
                            .map(|g| {
                                (
                                    g,
                                    Err(ClientError::Protocol {
                                        broker: broker.clone(),
                                        message: text.clone(),
                                    }),
                                )
                            })
                            .collect()
                    }
                    Err(_) => groups
                        .into_iter()
                        .map(|g| {
                            let message = format!("no answer within {timeout:?}");
                            (g, Err(ClientError::Protocol { broker: broker.clone(), message }))
                        })
                        .collect(),
                }
            }
        });
        for counts in join_all(calls).await {
            out.extend(counts);
        }
        out
    }

    async fn classic_counts(&self, broker: &BrokerRef, groups: &[String]) -> Result<Counts, ClientError> {
        let (_, response) = self
            .send_built(broker, |version| DescribeGroupsRequest {
                groups: groups.to_vec(),
                include_authorized_operations: (version >= 3).then_some(false),
                tagged_fields: TaggedFields::default(),
            })
            .await?;
        let answers = response.groups.into_iter().map(|g| (g.group_id, g.error_code, g.members.len()));
        Ok(counts_of(broker, groups, describe_groups::SPEC.key, answers))
    }

    async fn consumer_counts(&self, broker: &BrokerRef, groups: &[String]) -> Result<Counts, ClientError> {
        let (_, response) = self
            .send_built(broker, |_| ConsumerGroupDescribeRequest {
                group_ids: groups.to_vec(),
                include_authorized_operations: false,
                tagged_fields: TaggedFields::default(),
            })
            .await?;
        let answers = response.groups.into_iter().map(|g| (g.group_id, g.error_code, g.members.len()));
        Ok(counts_of(broker, groups, consumer_group_describe::SPEC.key, answers))
    }
}

/// One result per asked group from `(group, error, members)` answers.
fn counts_of(
    broker: &BrokerRef,
    groups: &[String],
    api: kafka_wire::protocol::ApiKey,
    answers: impl Iterator<Item = (String, ErrorCode, usize)>,
) -> Counts {
    let mut answered: BTreeMap<String, (ErrorCode, usize)> =
        answers.map(|(g, code, members)| (g, (code, members))).collect();
    groups
        .iter()
        .map(|g| {
            let result = match answered.remove(g) {
                None => Err(ClientError::Protocol {
                    broker: broker.clone(),
                    message: format!("{api} answered without group `{g}`"),
                }),
                Some((code, _)) if code == ErrorCode::GROUP_ID_NOT_FOUND => Ok(0),
                Some((code, members)) => code.into_result().map(|()| members).map_err(|code| {
                    ClientError::Kafka { broker: broker.clone(), api, code, context: format!("group `{g}`") }
                }),
            };
            (g.clone(), result)
        })
        .collect()
}
