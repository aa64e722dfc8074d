//! The cluster view kwire routes by: brokers, and per topic its id and partition leaders.
//! Each refresh produces a new snapshot with a higher generation, so a caller can tell whether
//! the view it acted on has been replaced.

use crate::error::ClientError;
use kafka_wire::protocol::messages::MetadataResponse;
use kafka_wire::protocol::{BrokerIds, ErrorCode, Uuid};

/// A broker of the cluster, as Metadata advertises it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerInfo {
    /// The broker's node id (`node.id` / `broker.id`).
    pub node_id: i32,
    /// The advertised host name or IP address.
    pub host: String,
    /// The advertised port.
    pub port: i32,
    /// The broker's `broker.rack`; `None` when unset or the Metadata version predates racks (v1).
    pub rack: Option<String>,
}

impl BrokerInfo {
    /// The `host:port` to connect to; an IPv6 host is bracketed (`[::1]:9092`).
    pub fn addr(&self) -> String {
        if self.host.contains(':') && !self.host.starts_with('[') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// One partition of a topic, as Metadata reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    /// The partition index.
    pub partition: i32,
    /// `None` when the partition has no leader right now.
    pub leader: Option<i32>,
    /// `None` when the broker's Metadata version predates leader epochs (v7).
    pub leader_epoch: Option<i32>,
    /// Node ids of all replicas, the preferred leader first.
    pub replicas: BrokerIds,
    /// Node ids of the in-sync replicas.
    pub isr: BrokerIds,
    /// Node ids of replicas that are offline (Metadata v5+; empty on older brokers).
    pub offline: BrokerIds,
    /// The partition's error (`NONE` when fine; e.g. `LEADER_NOT_AVAILABLE` during an election).
    pub error: ErrorCode,
}

/// One topic, as Metadata reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    /// The topic name.
    pub name: String,
    /// `None` when the broker predates topic ids (Metadata v10) or has none.
    pub topic_id: Option<Uuid>,
    /// Whether Kafka itself owns the topic (`__consumer_offsets`, `__transaction_state`).
    pub is_internal: bool,
    /// The topic's error: `UNKNOWN_TOPIC_OR_PARTITION` for a topic that does not exist, `NONE`
    /// when fine.
    pub error: ErrorCode,
    /// Sorted by partition.
    pub partitions: Vec<PartitionInfo>,
}

/// What the ACLs let this principal do on a topic, as Metadata v8+ says when asked (KIP-430,
/// Kafka 2.3): Kafka's `AclOperation` codes as a bit set (bit `1 << code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthorizedOperations(pub i32);

impl AuthorizedOperations {
    /// `AclOperation` READ (code 3): fetch, and commit a group's offsets.
    pub const READ: i32 = 3;

    /// Whether READ is among them: a coordinator refuses to commit offsets of the topic without.
    pub fn allows_read(self) -> bool {
        self.0 & (1 << Self::READ) != 0
    }
}

/// One Metadata answer, normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterMetadata {
    /// Increases with each refresh of the client's cache.
    pub generation: u64,
    /// The cluster id (Metadata v2+; `None` on older brokers).
    pub cluster_id: Option<String>,
    /// The node id of the controller as this broker knows it (Metadata v1+); `None` when
    /// unknown or not reported.
    pub controller_id: Option<i32>,
    /// Sorted by node id.
    pub brokers: Vec<BrokerInfo>,
    /// In the order the broker returned them.
    pub topics: Vec<TopicInfo>,
}

impl ClusterMetadata {
    /// Normalises a Metadata response: brokers and partitions sorted, `-1` ids and the zero
    /// topic id turned into `None`. `generation` is stored as given.
    pub fn from_response(response: MetadataResponse, generation: u64) -> Self {
        let mut brokers: Vec<BrokerInfo> = response
            .brokers
            .into_iter()
            .map(|b| BrokerInfo { node_id: b.node_id, host: b.host, port: b.port, rack: b.rack })
            .collect();
        brokers.sort_by_key(|b| b.node_id);
        let topics = response
            .topics
            .into_iter()
            .map(|t| {
                let mut partitions: Vec<PartitionInfo> = t
                    .partitions
                    .into_iter()
                    .map(|p| PartitionInfo {
                        partition: p.partition_index,
                        leader: (p.leader_id >= 0).then_some(p.leader_id),
                        leader_epoch: p.leader_epoch.filter(|e| *e >= 0),
                        replicas: p.replica_nodes,
                        isr: p.isr_nodes,
                        offline: p.offline_replicas.unwrap_or_default(),
                        error: p.error_code,
                    })
                    .collect();
                partitions.sort_by_key(|p| p.partition);
                TopicInfo {
                    name: t.name.unwrap_or_default(),
                    topic_id: t.topic_id.filter(|id| !id.is_zero()),
                    is_internal: t.is_internal.unwrap_or(false),
                    error: t.error_code,
                    partitions,
                }
            })
            .collect();
        Self {
            generation,
            cluster_id: response.cluster_id,
            controller_id: response.controller_id.filter(|c| *c >= 0),
            brokers,
            topics,
        }
    }

    /// This snapshot, plus the topics of `older` that it does not mention: what the client
    /// caches after a refresh of some topics, so that a refresh for one topic does not make
    /// the cache forget another's id and leaders while a request for it is in flight (a
    /// Produce v13+ answer names its topics by id only).
    #[must_use]
    pub fn keeping_topics_of(&self, older: &ClusterMetadata) -> ClusterMetadata {
        let mut merged = self.clone();
        merged.topics.extend(older.topics.iter().filter(|t| self.topic(&t.name).is_none()).cloned());
        merged
    }

    /// The broker with `node_id`, if this snapshot lists it.
    pub fn broker(&self, node_id: i32) -> Option<&BrokerInfo> {
        self.brokers.iter().find(|b| b.node_id == node_id)
    }

    /// The topic named `name`, if this snapshot has it (it may still carry an error).
    pub fn topic(&self, name: &str) -> Option<&TopicInfo> {
        self.topics.iter().find(|t| t.name == name)
    }

    /// Whether `topic` may still be on its way to the broker that answered: this snapshot lacks
    /// it, names it UNKNOWN_TOPIC_OR_PARTITION or LEADER_NOT_AVAILABLE, or lists no partitions.
    /// A topic just created is like that for a moment on each broker (the controller's record
    /// reaches the brokers after CreateTopics returns); a misspelt one stays like that.
    pub fn topic_maybe_propagating(&self, topic: &str) -> bool {
        self.topic(topic).is_none_or(|t| {
            t.error == ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                || t.error == ErrorCode::LEADER_NOT_AVAILABLE
                || (t.error.is_ok() && t.partitions.is_empty())
        })
    }

    /// How many partitions `topic` has, for choosing one: [`ClientError::UnknownTopic`] when
    /// this snapshot lacks it, names it with an error, or lists no partitions.
    pub(crate) fn partition_count(&self, topic: &str) -> Result<i32, ClientError> {
        let count = self
            .topic(topic)
            .filter(|t| t.error.is_ok() && !t.partitions.is_empty())
            .map(|t| t.partitions.len())
            .ok_or_else(|| ClientError::UnknownTopic { topic: topic.to_owned() })?;
        i32::try_from(count).map_err(|_| ClientError::InvalidArgument {
            message: format!("topic {topic} has more partitions than Kafka allows"),
        })
    }
}

#[cfg(test)]
mod keeping_topics_tests {
    use super::*;

    fn topic(name: &str, id: u8) -> TopicInfo {
        TopicInfo {
            name: name.to_owned(),
            topic_id: Some(Uuid([id; 16])),
            is_internal: false,
            error: ErrorCode::NONE,
            partitions: Vec::new(),
        }
    }

    #[test]
    fn a_refresh_of_one_topic_keeps_the_ids_of_the_others_and_replaces_its_own() {
        let older = ClusterMetadata {
            generation: 1,
            cluster_id: None,
            controller_id: None,
            brokers: Vec::new(),
            topics: vec![topic("in", 1), topic("out", 2)],
        };
        let newer = ClusterMetadata { generation: 2, topics: vec![topic("in", 3)], ..older.clone() };
        let merged = newer.keeping_topics_of(&older);
        let ids: Vec<(&str, Option<Uuid>)> =
            merged.topics.iter().map(|t| (t.name.as_str(), t.topic_id)).collect();
        assert_eq!(
            ids,
            [("in", Some(Uuid([3; 16]))), ("out", Some(Uuid([2; 16])))],
            "the refreshed topic's new id, the other topic kept"
        );
        assert_eq!(merged.generation, 2);
    }
}
