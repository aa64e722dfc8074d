//! Consumer groups without joining one: committed offsets (fetch and commit as a non-member,
//! the "simple consumer" way), and listing and describing groups of every type: classic groups through
//! DescribeGroups, consumer-protocol groups (KIP-848) through ConsumerGroupDescribe, share groups
//! (KIP-932) through ShareGroupDescribe (see `share_groups`).

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::join_all;

use crate::cluster::client::{Client, Socket};
use crate::cluster::router::{PartitionResults, TopicPartition};
use crate::error::{BrokerRef, ClientError};
use crate::groups::committed_offsets::{committed_of, CommittedOffsets};
use crate::groups::description::{
    classic_assignment_of, partitions_of, ConsumerGroupEpochs, ConsumerMemberState, GroupDescription,
    GroupMember, GroupType,
};
use crate::groups::group_metadata::ConsumerGroupMetadata;
use kafka_wire::protocol::messages::{
    describe_groups, list_groups, offset_commit, offset_fetch, ConsumerGroupDescribeRequest,
    DescribeGroupsRequest, ListGroupsRequest, OffsetCommitRequest, OffsetCommitRequestPartition,
    OffsetCommitRequestTopic, OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopic,
    OffsetFetchResponseTopic,
};
use kafka_wire::protocol::names::validate_topics;
use kafka_wire::protocol::{ErrorCode, TaggedFields};

/// One offset to commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetToCommit {
    /// The partition the offset is for.
    pub tp: TopicPartition,
    /// The next offset to read.
    pub offset: i64,
    /// The leader epoch of the record before `offset`, sent on OffsetCommit v6+ (ignored by
    /// older brokers); `None` sends "no epoch" (−1).
    pub leader_epoch: Option<i32>,
    /// A free-form string stored with the commit; `None` stores an empty string.
    pub metadata: Option<String>,
}

/// A group as ListGroups reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    /// The group id.
    pub group_id: String,
    /// `consumer` for consumer groups, `connect` for Kafka Connect, empty for groups used only
    /// to store offsets.
    pub protocol_type: String,
    /// Added in ListGroups v4.
    pub state: Option<String>,
    /// Added in ListGroups v5 (`classic`, `consumer`, ...).
    pub group_type: Option<String>,
    /// The node id of the coordinator that reported it.
    pub coordinator: i32,
}

impl Client {
    /// The committed offsets of `group` for `topics` (every topic it has offsets for when
    /// `None`), partition by partition as [`CommittedOffsets`] describes: partitions without a
    /// commit are absent, each partition the coordinator refuses (TOPIC_AUTHORIZATION_FAILED,
    /// ...) is in [`CommittedOffsets::refused`], and each named topic Metadata refuses (its
    /// partitions cannot be listed) in [`CommittedOffsets::refused_topics`]; the other partitions'
    /// offsets are kept. Without named topics, Kafka leaves the topics the principal may not
    /// describe out of its answer: they cannot be listed, and are not refusals.
    ///
    /// Sent to the group's coordinator, retried until `timeout` as
    /// [`with_coordinator`](Self::with_coordinator) describes. The group's own errors
    /// (GROUP_AUTHORIZATION_FAILED, a coordinator error past the deadline) fail the call, and so
    /// does a named topic that does not exist ([`ClientError::UnknownTopic`]).
    pub async fn committed_offsets(
        &self,
        group: &str,
        topics: Option<&[String]>,
        timeout: Duration,
    ) -> Result<CommittedOffsets, ClientError> {
        let Some(names) = topics else {
            return self.fetch_committed(group, None, timeout).await;
        };
        let metadata = self.refresh_metadata(names).await?;
        let mut partitions = Vec::new();
        let mut refused_topics = BTreeMap::new();
        for name in names {
            let topic = metadata.topic(name).filter(|t| t.error != ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
            let topic = topic.ok_or_else(|| ClientError::UnknownTopic { topic: name.clone() })?;
            if topic.error.is_authorization() {
                refused_topics.insert(
                    name.clone(),
                    ClientError::Kafka {
                        broker: BrokerRef { node_id: None, addr: "metadata".to_owned() },
                        api: kafka_wire::protocol::ApiKey::METADATA,
                        code: topic.error,
                        context: format!("topic `{name}`"),
                    },
                );
                continue;
            }
            partitions
                .extend(topic.partitions.iter().map(|p| TopicPartition::new(name.clone(), p.partition)));
        }
        let mut answer = if partitions.is_empty() {
            CommittedOffsets::default()
        } else {
            self.committed_offsets_of_partitions(group, &partitions, timeout).await?
        };
        answer.refused_topics = refused_topics;
        Ok(answer)
    }

    /// The committed offsets of `group` for exactly `partitions`, asked of the coordinator
    /// without a Metadata lookup (for partitions learned elsewhere): the coordinator answers
    /// each, so one it refuses is in [`CommittedOffsets::refused`] next to the others' offsets.
    /// Errors as for [`committed_offsets`](Self::committed_offsets); a topic name that breaks
    /// Kafka's rules is refused before anything is sent.
    pub async fn committed_offsets_of_partitions(
        &self,
        group: &str,
        partitions: &[TopicPartition],
        timeout: Duration,
    ) -> Result<CommittedOffsets, ClientError> {
        validate_topics(partitions.iter().map(|tp| &*tp.topic))?;
        let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for tp in partitions {
            by_topic.entry(&*tp.topic).or_default().push(tp.partition);
        }
        // Named partitions work at every version (v0–v1 need them).
        let wanted = by_topic
            .into_iter()
            .map(|(name, mut indexes)| {
                indexes.sort_unstable();
                indexes.dedup();
                OffsetFetchRequestTopic {
                    name: name.to_owned(),
                    partition_indexes: indexes,
                    tagged_fields: TaggedFields::default(),
                }
            })
            .collect();
        self.fetch_committed(group, Some(wanted), timeout).await
    }

    /// One group's OffsetFetch for `wanted` (every topic when `None`, v2+).
    async fn fetch_committed(
        &self,
        group: &str,
        wanted: Option<Vec<OffsetFetchRequestTopic>>,
        timeout: Duration,
    ) -> Result<CommittedOffsets, ClientError> {
        self.with_coordinator(group, timeout, |broker| {
            let wanted = wanted.clone();
            async move {
                let (_, response) = self
                    .send_built(&broker, |version| {
                        OffsetFetchRequest::for_group(group, wanted.clone(), version)
                    })
                    .await?;
                let fail = |code: ErrorCode| ClientError::Kafka {
                    broker: broker.clone(),
                    api: offset_fetch::SPEC.key,
                    code,
                    context: format!("group `{group}`"),
                };
                let topics: Vec<OffsetFetchResponseTopic> = match response.groups {
                    Some(groups) => {
                        let g = groups.into_iter().find(|g| g.group_id == group).ok_or_else(|| {
                            ClientError::Protocol {
                                broker: broker.clone(),
                                message: format!("OffsetFetch answered without group `{group}`"),
                            }
                        })?;
                        g.error_code.into_result().map_err(fail)?;
                        g.topics
                    }
                    None => {
                        response.error_code.unwrap_or_default().into_result().map_err(fail)?;
                        response.topics.unwrap_or_default()
                    }
                };
                committed_of(&broker, group, topics)
            }
        })
        .await
    }

    /// The committed offsets of many groups (every topic each has offsets for): one OffsetFetch
    /// per coordinator carrying all of its groups (OffsetFetch v8+, Kafka 3.0+; older
    /// coordinators get one request per group). The coordinators not cached yet are found with
    /// one batched FindCoordinator ([`find_coordinators`](Self::find_coordinators)), any group
    /// that left uncached alone; they stay cached, and are forgotten for a group that failed.
    /// One result per group: a group whose coordinator could not be found or answered a group
    /// error fails alone; a partition the coordinator refused is in that group's
    /// [`CommittedOffsets::refused`], next to its other offsets.
    pub async fn committed_offsets_of_groups(
        &self,
        groups: &[String],
        timeout: Duration,
    ) -> BTreeMap<String, Result<CommittedOffsets, ClientError>> {
        let mut out = BTreeMap::new();
        self.find_coordinators(groups).await;
        let found =
            join_all(groups.iter().map(|g| async move { (g.clone(), self.coordinator(g).await) })).await;
        let mut by_coordinator: BTreeMap<String, (BrokerRef, Vec<String>)> = BTreeMap::new();
        for (group, coordinator) in found {
            match coordinator {
                Ok(broker) => {
                    by_coordinator.entry(broker.addr.clone()).or_insert((broker, Vec::new())).1.push(group);
                }
                Err(e) => {
                    out.insert(group, Err(e));
                }
            }
        }
        let asks = by_coordinator.into_values().map(|(broker, groups)| async move {
            let answer = tokio::time::timeout(timeout, self.fetch_groups_at(&broker, &groups)).await;
            match answer {
                Ok(results) => results,
                Err(_) => groups
                    .into_iter()
                    .map(|g| {
                        let e = ClientError::DeadlineExceeded {
                            what: format!("fetching the offsets of group `{g}`"),
                            last_error: Box::new(ClientError::Protocol {
                                broker: broker.clone(),
                                message: "no answer".to_owned(),
                            }),
                        };
                        (g, Err(e))
                    })
                    .collect(),
            }
        });
        for results in join_all(asks).await {
            for (group, result) in results {
                // The next call finds the coordinator again (it may have moved, or be down).
                if result.is_err() {
                    self.forget_coordinator(&group);
                }
                out.insert(group, result);
            }
        }
        out
    }

    /// One coordinator's groups: one request at v8+, else one per group.
    async fn fetch_groups_at(
        &self,
        broker: &BrokerRef,
        groups: &[String],
    ) -> Vec<(String, Result<CommittedOffsets, ClientError>)> {
        let answer = self
            .send_built(broker, |version| {
                if version >= 8 {
                    OffsetFetchRequest {
                        groups: Some(
                            groups
                                .iter()
                                .map(|g| OffsetFetchRequestGroup {
                                    group_id: g.clone(),
                                    member_id: None,
                                    member_epoch: (version >= 9).then_some(-1),
                                    topics: None,
                                    tagged_fields: TaggedFields::default(),
                                })
                                .collect(),
                        ),
                        require_stable: Some(false),
                        ..OffsetFetchRequest::default()
                    }
                } else {
                    OffsetFetchRequest::for_group(&groups[0], None, version)
                }
            })
            .await;
        match answer {
            Ok((_, response)) if response.groups.is_some() => {
                let mut answered = response.groups.unwrap_or_default();
                groups
                    .iter()
                    .map(|group| {
                        let result = match answered.iter().position(|g| &g.group_id == group) {
                            None => Err(ClientError::Protocol {
                                broker: broker.clone(),
                                message: format!("OffsetFetch answered without group `{group}`"),
                            }),
                            Some(i) => {
                                let g = answered.swap_remove(i);
                                g.error_code
                                    .into_result()
                                    .map_err(|code| ClientError::Kafka {
                                        broker: broker.clone(),
                                        api: offset_fetch::SPEC.key,
                                        code,
                                        context: format!("group `{group}`"),
                                    })
                                    .and_then(|()| committed_of(broker, group, g.topics))
                            }
                        };
                        (group.clone(), result)
                    })
                    .collect()
            }
            // Before v8: the request above asked for the first group only; ask for each.
            Ok(_) => {
                let each = groups.iter().map(|g| async move {
                    (g.clone(), self.committed_offsets(g, None, self.config().request_timeout).await)
                });
                join_all(each).await
            }
            Err(e) => {
                let text = e.to_string();
                groups
                    .iter()
                    .map(|g| {
                        let e = ClientError::Protocol { broker: broker.clone(), message: text.clone() };
                        (g.clone(), Err(e))
                    })
                    .collect()
            }
        }
    }

    /// Commits `offsets` for `group` as a non-member (generation −1, empty member id), which
    /// the coordinator accepts only while the group has no active members. One result per
    /// partition.
    ///
    /// Sent to the group's coordinator, retried until `timeout` as
    /// [`with_coordinator`](Self::with_coordinator) describes; the `Err` of the outer result is a
    /// failure of the whole call (a bad name refuses the batch before anything is sent).
    pub async fn commit_offsets(
        &self,
        group: &str,
        offsets: &[OffsetToCommit],
        timeout: Duration,
    ) -> Result<PartitionResults<()>, ClientError> {
        self.commit_offsets_as(&ConsumerGroupMetadata::non_member(group), offsets, timeout).await
    }

    /// [`commit_offsets`](Self::commit_offsets) as the member `member` describes (its id,
    /// generation or KIP-848 member epoch, instance id): the coordinator fences it, answering
    /// ILLEGAL_GENERATION, STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID per
    /// partition when the member is not the group's current one.
    pub async fn commit_offsets_as(
        &self,
        member: &ConsumerGroupMetadata,
        offsets: &[OffsetToCommit],
        timeout: Duration,
    ) -> Result<PartitionResults<()>, ClientError> {
        let group = member.group_id.as_str();
        // A bad name refuses the whole batch: nothing is half-committed over a caller's typo.
        validate_topics(offsets.iter().map(|o| &*o.tp.topic))?;
        let mut by_topic: BTreeMap<&str, Vec<&OffsetToCommit>> = BTreeMap::new();
        for o in offsets {
            by_topic.entry(&*o.tp.topic).or_default().push(o);
        }
        // A member's commits go on a connection no Fetch holds up (see `Socket::Commits`); a
        // non-member's (kwire commit, an application's own) on the shared one.
        let socket = if member.is_member() { Socket::Commits } else { Socket::Shared };
        self.with_coordinator(group, timeout, |broker| {
            let by_topic = &by_topic;
            async move {
                let (_, response) = self
                    .send_built_on(&broker, socket, |version| OffsetCommitRequest {
                        group_id: group.to_owned(),
                        generation_id_or_member_epoch: (version >= 1).then_some(member.generation_id),
                        member_id: (version >= 1).then(|| member.member_id.clone()),
                        group_instance_id: member.group_instance_id.clone().filter(|_| version >= 7),
                        retention_time_ms: (2..=4).contains(&version).then_some(-1),
                        topics: by_topic
                            .iter()
                            .map(|(name, parts)| OffsetCommitRequestTopic {
                                name: (*name).to_owned(),
                                partitions: parts
                                    .iter()
                                    .map(|o| OffsetCommitRequestPartition {
                                        partition_index: o.tp.partition,
                                        committed_offset: o.offset,
                                        committed_leader_epoch: (version >= 6)
                                            .then_some(o.leader_epoch.unwrap_or(-1)),
                                        commit_timestamp: (version == 1).then_some(-1),
                                        committed_metadata: Some(o.metadata.clone().unwrap_or_default()),
                                        tagged_fields: TaggedFields::default(),
                                    })
                                    .collect(),
                                tagged_fields: TaggedFields::default(),
                            })
                            .collect(),
                        tagged_fields: TaggedFields::default(),
                    })
                    .await?;
                let mut out = BTreeMap::new();
                for topic in response.topics {
                    for p in topic.partitions {
                        let tp = TopicPartition::new(topic.name.clone(), p.partition_index);
                        // A coordinator-level error applies to every partition: surface it so
                        // with_coordinator can find the coordinator again and retry.
                        if matches!(
                            p.error_code.recovery(),
                            kafka_wire::protocol::Recovery::RefindCoordinator
                                | kafka_wire::protocol::Recovery::Retry
                        ) {
                            return Err(ClientError::Kafka {
                                broker: broker.clone(),
                                api: offset_commit::SPEC.key,
                                code: p.error_code,
                                context: format!("group `{group}` {tp}"),
                            });
                        }
                        let result = p.error_code.into_result().map_err(|code| ClientError::Kafka {
                            broker: broker.clone(),
                            api: offset_commit::SPEC.key,
                            code,
                            context: format!("group `{group}` {tp}"),
                        });
                        out.insert(tp, result);
                    }
                }
                Ok(out)
            }
        })
        .await
    }

    /// Every group on every broker (each coordinator lists only its own groups), sorted by
    /// group id. Sent to every broker in the freshly read metadata, in parallel, once: a broker
    /// that cannot be reached or answers an error fails the whole call (a partial list would
    /// look complete).
    pub async fn list_groups(&self) -> Result<Vec<GroupListing>, ClientError> {
        let metadata = self.refresh_metadata(&[]).await?;
        let asks = metadata.brokers.iter().map(|b| {
            let broker = BrokerRef { node_id: Some(b.node_id), addr: b.addr() };
            async move {
                let result = self
                    .send_built(&broker, |version| ListGroupsRequest {
                        states_filter: (version >= 4).then(Vec::new),
                        types_filter: (version >= 5).then(Vec::new),
                        tagged_fields: TaggedFields::default(),
                    })
                    .await;
                (broker, result)
            }
        });
        let mut out = Vec::new();
        for (broker, result) in join_all(asks).await {
            let (_, response) = result?;
            if !response.error_code.is_ok() {
                return Err(ClientError::Kafka {
                    broker,
                    api: list_groups::SPEC.key,
                    code: response.error_code,
                    context: String::new(),
                });
            }
            out.extend(response.groups.into_iter().map(|g| GroupListing {
                group_id: g.group_id,
                protocol_type: g.protocol_type,
                state: g.group_state,
                group_type: g.group_type,
                coordinator: broker.node_id.unwrap_or(-1),
            }));
        }
        out.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        Ok(out)
    }

    /// State and members of `group`, from its coordinator, whichever type it is.
    ///
    /// DescribeGroups first; a group it does not know (GROUP_ID_NOT_FOUND, which Kafka 4 also
    /// answers for consumer-protocol and share groups) is asked again with ConsumerGroupDescribe,
    /// then ShareGroupDescribe, each where the coordinator has it. A group none knows is reported
    /// as state `Dead` with no members.
    pub async fn describe_group(
        &self,
        group: &str,
        timeout: Duration,
    ) -> Result<GroupDescription, ClientError> {
        let classic = self.describe_classic_group(group, timeout).await?;
        if classic.state != "Dead" || !classic.members.is_empty() {
            return Ok(classic);
        }
        match self.describe_consumer_group(group, timeout).await {
            Ok(Some(consumer)) => return Ok(consumer),
            Ok(None) => {}
            // A broker before 4.0 (3.7 early access aside) has no consumer-protocol groups.
            Err(e) if e.is_unsupported() => {}
            Err(e) => return Err(e),
        }
        match self.describe_share_group(group, timeout).await {
            Ok(Some(share)) => Ok(share),
            Ok(None) => Ok(classic),
            // Before 4.1, or share.version 0: no share groups.
            Err(e) if e.is_unsupported() => Ok(classic),
            Err(e) => Err(e),
        }
    }

    async fn describe_classic_group(
        &self,
        group: &str,
        timeout: Duration,
    ) -> Result<GroupDescription, ClientError> {
        self.with_coordinator(group, timeout, |broker| async move {
            let (_, response) = self
                .send_built(&broker, |version| DescribeGroupsRequest {
                    groups: vec![group.to_owned()],
                    include_authorized_operations: (version >= 3).then_some(false),
                    tagged_fields: TaggedFields::default(),
                })
                .await?;
            let g = response.groups.into_iter().find(|g| g.group_id == group).ok_or_else(|| {
                ClientError::Protocol {
                    broker: broker.clone(),
                    message: format!("DescribeGroups answered without group `{group}`"),
                }
            })?;
            // GROUP_ID_NOT_FOUND (v6+) is the 4.x way of saying Dead.
            if !g.error_code.is_ok() && g.error_code != ErrorCode::GROUP_ID_NOT_FOUND {
                return Err(ClientError::Kafka {
                    broker: broker.clone(),
                    api: describe_groups::SPEC.key,
                    code: g.error_code,
                    context: format!("group `{group}`"),
                });
            }
            let state =
                if g.error_code == ErrorCode::GROUP_ID_NOT_FOUND { "Dead".to_owned() } else { g.group_state };
            let members = g
                .members
                .into_iter()
                .map(|m| GroupMember {
                    member_id: m.member_id,
                    group_instance_id: m.group_instance_id,
                    client_id: m.client_id,
                    client_host: m.client_host,
                    consumer: None,
                    classic_assignment: classic_assignment_of(&g.protocol_type, m.member_assignment),
                })
                .collect();
            Ok(GroupDescription {
                group_id: g.group_id,
                group_type: GroupType::Classic,
                state,
                protocol_type: g.protocol_type,
                protocol: g.protocol_data,
                epochs: None,
                members,
                coordinator: broker,
            })
        })
        .await
    }

    /// `group` as a consumer-protocol group, or `None` when the coordinator has no such
    /// consumer-protocol group (GROUP_ID_NOT_FOUND: unknown, or a group on another protocol;
    /// UNSUPPORTED_VERSION: the consumer protocol is off).
    pub async fn describe_consumer_group(
        &self,
        group: &str,
        timeout: Duration,
    ) -> Result<Option<GroupDescription>, ClientError> {
        let Some((coordinator, g)) =
            self.describe_one_group::<ConsumerGroupDescribeRequest>(group, timeout).await?
        else {
            return Ok(None);
        };
        Ok(Some(GroupDescription {
            group_id: g.group_id,
            group_type: GroupType::Consumer,
            state: g.group_state,
            protocol_type: "consumer".to_owned(),
            protocol: g.assignor_name,
            epochs: Some(ConsumerGroupEpochs {
                group_epoch: g.group_epoch,
                assignment_epoch: g.assignment_epoch,
            }),
            members: g
                .members
                .into_iter()
                .map(|m| GroupMember {
                    member_id: m.member_id,
                    group_instance_id: m.instance_id,
                    client_id: m.client_id,
                    client_host: m.client_host,
                    consumer: Some(ConsumerMemberState {
                        member_epoch: m.member_epoch,
                        rack_id: m.rack_id,
                        subscribed_topics: m.subscribed_topic_names,
                        subscribed_topic_regex: m.subscribed_topic_regex.filter(|r| !r.is_empty()),
                        assignment: partitions_of(m.assignment),
                        target_assignment: Some(partitions_of(m.target_assignment)),
                    }),
                    classic_assignment: None,
                })
                .collect(),
            coordinator,
        }))
    }
}
