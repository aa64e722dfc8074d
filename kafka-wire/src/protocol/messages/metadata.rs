//! Metadata (key 3): brokers, controller, and per topic its id and partitions with leader,
//! leader epoch, replicas and ISR.

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::broker_ids::BrokerIds;
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;
use crate::protocol::tagged::TaggedFields;
use kafka_vocab::Uuid;

/// Metadata's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::METADATA,
    name: "Metadata",
    versions: VersionRange::new(0, 13),
    flexible_from: Some(9),
};

/// Kafka's "not requested" value for authorized-operations bitfields.
pub const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

kafka_message! {
    /// A Metadata request (v0–v13).
    pub struct MetadataRequest [no_default] {
        /// `None` asks for every topic (v1+); v0 can only express "all" as an empty list.
        topics: Option<Vec<MetadataRequestTopic>>,
        /// Added in v4 (before v4 the broker's own setting decides).
        [since 4] allow_auto_topic_creation: Option<bool>,
        /// v8–v10 only.
        [since 8 until 10] include_cluster_authorized_operations: Option<bool>,
        /// Added in v8.
        [since 8] include_topic_authorized_operations: Option<bool>,
    }
}

kafka_message! {
    /// An element of [`MetadataRequest::topics`]: the topics to fetch metadata for.
    pub struct MetadataRequestTopic [no_default] {
        /// Added in v10.
        [since 10] topic_id: Option<Uuid>,
        /// Nullable from v10 (a topic asked for by id only).
        name: Option<String>,
    }
}

impl MetadataRequest {
    /// Metadata for the named topics, or for all topics when `names` is empty.
    pub fn for_topics(names: &[String]) -> Self {
        let topics = if names.is_empty() {
            None
        } else {
            Some(
                names
                    .iter()
                    .map(|n| MetadataRequestTopic {
                        topic_id: None,
                        name: Some(n.clone()),
                        tagged_fields: TaggedFields::default(),
                    })
                    .collect(),
            )
        };
        Self {
            topics,
            allow_auto_topic_creation: Some(false),
            include_cluster_authorized_operations: None,
            include_topic_authorized_operations: None,
            tagged_fields: TaggedFields::default(),
        }
    }
}

impl Body for MetadataRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        let topics = match (&self.topics, version) {
            (None, 0) => Some(&[][..]),
            (t, _) => t.as_deref(),
        };
        e.nullable_array(topics, "topics", |e, t| {
            if version >= 10 {
                e.uuid(t.topic_id.unwrap_or_default());
                e.nullable_string(t.name.as_deref(), "topics.name")?;
            } else {
                e.string(t.name.as_deref().unwrap_or_default(), "topics.name")?;
            }
            e.tagged_fields(&t.tagged_fields, "topics.tagged_fields", version)
        })?;
        if version >= 4 {
            e.bool(self.allow_auto_topic_creation.unwrap_or(true));
        }
        if (8..=10).contains(&version) {
            e.bool(self.include_cluster_authorized_operations.unwrap_or(false));
        }
        if version >= 8 {
            e.bool(self.include_topic_authorized_operations.unwrap_or(false));
        }
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let topic = |d: &mut Decoder| {
            let topic_id = if version >= 10 { Some(d.uuid("topics.topic_id")?) } else { None };
            let name = if version >= 10 {
                d.nullable_string("topics.name")?
            } else {
                Some(d.string("topics.name")?)
            };
            Ok(MetadataRequestTopic {
                topic_id,
                name,
                tagged_fields: d.tagged_fields("topics.tagged_fields")?,
            })
        };
        // Nullable from v1 only: Kafka rejects a null v0 array (and kwire writes `None` at v0
        // as the empty array, which would not read back as `None`).
        let topics = if version >= 1 {
            d.nullable_array("topics", 1, topic)?
        } else {
            Some(d.array("topics", 1, topic)?)
        };
        let allow_auto_topic_creation =
            if version >= 4 { Some(d.bool("allow_auto_topic_creation")?) } else { None };
        let include_cluster_authorized_operations = if (8..=10).contains(&version) {
            Some(d.bool("include_cluster_authorized_operations")?)
        } else {
            None
        };
        let include_topic_authorized_operations =
            if version >= 8 { Some(d.bool("include_topic_authorized_operations")?) } else { None };
        Ok(Self {
            topics,
            allow_auto_topic_creation,
            include_cluster_authorized_operations,
            include_topic_authorized_operations,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

impl Request for MetadataRequest {
    type Response = MetadataResponse;
}

kafka_message! {
    /// A Metadata response (v0–v13).
    pub struct MetadataResponse {
        /// Added in v3.
        [since 3] throttle_time_ms: Option<i32>,
        /// A list of brokers present in the cluster.
        brokers: Vec<MetadataBroker>,
        /// Added in v2 (nullable).
        [nullable since 2] cluster_id: Option<String>,
        /// Added in v1; −1 when the broker does not know.
        [since 1] controller_id: Option<i32>,
        /// Each topic in the response.
        topics: Vec<MetadataTopic>,
        /// v8–v10 only.
        [since 8 until 10] cluster_authorized_operations: Option<i32>,
        /// Added in v13 (Kafka 4.0): a top-level error, e.g. REBOOTSTRAP_REQUIRED.
        [since 13] error_code: Option<ErrorCode>,
    }
}

kafka_message! {
    /// An element of [`MetadataResponse::brokers`]: one broker of the cluster.
    pub struct MetadataBroker [no_default] {
        /// The broker ID.
        node_id: i32,
        /// The broker hostname.
        host: String,
        /// The broker port.
        port: i32,
        /// Added in v1 (nullable).
        [nullable since 1] rack: Option<String>,
    }
}

kafka_message! {
    /// An element of [`MetadataResponse::topics`]: one topic and its partitions.
    pub struct MetadataTopic [no_default] {
        /// The topic error, or 0 if there was no error.
        error_code: ErrorCode,
        /// Null only for a topic asked for by an id the broker does not know (v12+).
        name: Option<String>,
        /// Added in v10; zero when the broker has none to give.
        [since 10] topic_id: Option<Uuid>,
        /// Added in v1.
        [since 1] is_internal: Option<bool>,
        /// Each partition in the topic.
        partitions: Vec<MetadataPartition>,
        /// Added in v8.
        [since 8] topic_authorized_operations: Option<i32>,
    }
}

kafka_message! {
    /// An element of [`MetadataTopic::partitions`]: one partition, its leader and replicas.
    pub struct MetadataPartition [no_default] {
        /// The partition error, or 0 if there was no error.
        error_code: ErrorCode,
        /// The partition index.
        partition_index: i32,
        /// −1 when the partition has no leader.
        leader_id: i32,
        /// Added in v7.
        [since 7] leader_epoch: Option<i32>,
        /// The set of all nodes that host this partition.
        replica_nodes: BrokerIds,
        /// The set of nodes that are in sync with the leader for this partition.
        isr_nodes: BrokerIds,
        /// Added in v5.
        [since 5] offline_replicas: Option<BrokerIds>,
    }
}

impl Body for MetadataResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 3 {
            e.i32(self.throttle_time_ms.unwrap_or(0));
        }
        e.array(&self.brokers, "brokers", |e, b| {
            e.i32(b.node_id);
            e.string(&b.host, "brokers.host")?;
            e.i32(b.port);
            if version >= 1 {
                e.nullable_string(b.rack.as_deref(), "brokers.rack")?;
            }
            e.tagged_fields(&b.tagged_fields, "brokers.tagged_fields", version)
        })?;
        if version >= 2 {
            e.nullable_string(self.cluster_id.as_deref(), "cluster_id")?;
        }
        if version >= 1 {
            e.i32(self.controller_id.unwrap_or(-1));
        }
        e.array(&self.topics, "topics", |e, t| {
            e.i16(t.error_code.0);
            if version >= 12 {
                e.nullable_string(t.name.as_deref(), "topics.name")?;
            } else {
                e.string(t.name.as_deref().unwrap_or_default(), "topics.name")?;
            }
            if version >= 10 {
                e.uuid(t.topic_id.unwrap_or_default());
            }
            if version >= 1 {
                e.bool(t.is_internal.unwrap_or(false));
            }
            e.array(&t.partitions, "topics.partitions", |e, p| {
                e.i16(p.error_code.0);
                e.i32(p.partition_index);
                e.i32(p.leader_id);
                if version >= 7 {
                    e.i32(p.leader_epoch.unwrap_or(-1));
                }
                e.broker_ids(&p.replica_nodes, "topics.partitions.replica_nodes")?;
                e.broker_ids(&p.isr_nodes, "topics.partitions.isr_nodes")?;
                if version >= 5 {
                    const NONE: &BrokerIds = &BrokerIds::new();
                    let offline = p.offline_replicas.as_ref().unwrap_or(NONE);
                    e.broker_ids(offline, "topics.partitions.offline_replicas")?;
                }
                e.tagged_fields(&p.tagged_fields, "topics.partitions.tagged_fields", version)
            })?;
            if version >= 8 {
                e.i32(t.topic_authorized_operations.unwrap_or(AUTHORIZED_OPERATIONS_OMITTED));
            }
            e.tagged_fields(&t.tagged_fields, "topics.tagged_fields", version)
        })?;
        if (8..=10).contains(&version) {
            e.i32(self.cluster_authorized_operations.unwrap_or(AUTHORIZED_OPERATIONS_OMITTED));
        }
        if version >= 13 {
            e.i16(self.error_code.unwrap_or_default().0);
        }
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if version >= 3 { Some(d.i32("throttle_time_ms")?) } else { None };
        let brokers = d.array("brokers", 10, |d| {
            Ok(MetadataBroker {
                node_id: d.i32("brokers.node_id")?,
                host: d.string("brokers.host")?,
                port: d.i32("brokers.port")?,
                rack: if version >= 1 { d.nullable_string("brokers.rack")? } else { None },
                tagged_fields: d.tagged_fields("brokers.tagged_fields")?,
            })
        })?;
        let cluster_id = if version >= 2 { d.nullable_string("cluster_id")? } else { None };
        let controller_id = if version >= 1 { Some(d.i32("controller_id")?) } else { None };
        let topics = d.array("topics", 4, |d| {
            let error_code = ErrorCode(d.i16("topics.error_code")?);
            let name = if version >= 12 {
                d.nullable_string("topics.name")?
            } else {
                Some(d.string("topics.name")?)
            };
            let topic_id = if version >= 10 { Some(d.uuid("topics.topic_id")?) } else { None };
            let is_internal = if version >= 1 { Some(d.bool("topics.is_internal")?) } else { None };
            let partitions = d.array("topics.partitions", 14, |d| {
                Ok(MetadataPartition {
                    error_code: ErrorCode(d.i16("topics.partitions.error_code")?),
                    partition_index: d.i32("topics.partitions.partition_index")?,
                    leader_id: d.i32("topics.partitions.leader_id")?,
                    leader_epoch: if version >= 7 {
                        Some(d.i32("topics.partitions.leader_epoch")?)
                    } else {
                        None
                    },
                    replica_nodes: d.broker_ids("topics.partitions.replica_nodes")?,
                    isr_nodes: d.broker_ids("topics.partitions.isr_nodes")?,
                    offline_replicas: if version >= 5 {
                        Some(d.broker_ids("topics.partitions.offline_replicas")?)
                    } else {
                        None
                    },
                    tagged_fields: d.tagged_fields("topics.partitions.tagged_fields")?,
                })
            })?;
            let topic_authorized_operations =
                if version >= 8 { Some(d.i32("topics.topic_authorized_operations")?) } else { None };
            Ok(MetadataTopic {
                error_code,
                name,
                topic_id,
                is_internal,
                partitions,
                topic_authorized_operations,
                tagged_fields: d.tagged_fields("topics.tagged_fields")?,
            })
        })?;
        let cluster_authorized_operations =
            if (8..=10).contains(&version) { Some(d.i32("cluster_authorized_operations")?) } else { None };
        let error_code = if version >= 13 { Some(ErrorCode(d.i16("error_code")?)) } else { None };
        Ok(Self {
            throttle_time_ms,
            brokers,
            cluster_id,
            controller_id,
            topics,
            cluster_authorized_operations,
            error_code,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::collection::vec;
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{
        array, error_code, gated, nullable_string, round_trip_every_version, string, tagged, uuid,
    };

    /// 0–7 ids: both the inline (up to 5) and the heap form of `BrokerIds`.
    fn broker_ids() -> impl Strategy<Value = BrokerIds> {
        vec(any::<i32>(), 0..8).prop_map(BrokerIds::from)
    }

    fn request(v: i16) -> impl Strategy<Value = MetadataRequest> {
        let flexible = SPEC.is_flexible(v);
        let name = if v >= 10 { nullable_string() } else { string().prop_map(Some).boxed() };
        let topic =
            (gated(v >= 10, uuid()), name, tagged(flexible)).prop_map(|(topic_id, name, tagged_fields)| {
                MetadataRequestTopic { topic_id, name, tagged_fields }
            });
        // v0 has no null list ("all topics" is the empty one).
        let topics = if v >= 1 {
            proptest::option::of(array(topic)).boxed()
        } else {
            array(topic).prop_map(Some).boxed()
        };
        (
            topics,
            gated(v >= 4, any::<bool>()),
            gated((8..=10).contains(&v), any::<bool>()),
            gated(v >= 8, any::<bool>()),
            tagged(flexible),
        )
            .prop_map(
                |(
                    topics,
                    allow_auto_topic_creation,
                    include_cluster_authorized_operations,
                    include_topic_authorized_operations,
                    tagged_fields,
                )| MetadataRequest {
                    topics,
                    allow_auto_topic_creation,
                    include_cluster_authorized_operations,
                    include_topic_authorized_operations,
                    tagged_fields,
                },
            )
    }

    fn response(v: i16) -> impl Strategy<Value = MetadataResponse> {
        let flexible = SPEC.is_flexible(v);
        let rack = if v >= 1 { nullable_string() } else { Just(None).boxed() };
        let broker = (any::<i32>(), string(), any::<i32>(), rack, tagged(flexible)).prop_map(
            |(node_id, host, port, rack, tagged_fields)| MetadataBroker {
                node_id,
                host,
                port,
                rack,
                tagged_fields,
            },
        );
        let partition = (
            error_code(),
            any::<i32>(),
            any::<i32>(),
            gated(v >= 7, any::<i32>()),
            broker_ids(),
            broker_ids(),
            gated(v >= 5, broker_ids()),
            tagged(flexible),
        )
            .prop_map(
                |(
                    error_code,
                    partition_index,
                    leader_id,
                    leader_epoch,
                    replica_nodes,
                    isr_nodes,
                    offline_replicas,
                    tagged_fields,
                )| MetadataPartition {
                    error_code,
                    partition_index,
                    leader_id,
                    leader_epoch,
                    replica_nodes,
                    isr_nodes,
                    offline_replicas,
                    tagged_fields,
                },
            );
        let name = if v >= 12 { nullable_string() } else { string().prop_map(Some).boxed() };
        let topic = (
            error_code(),
            name,
            gated(v >= 10, uuid()),
            gated(v >= 1, any::<bool>()),
            array(partition),
            gated(v >= 8, any::<i32>()),
            tagged(flexible),
        )
            .prop_map(
                |(
                    error_code,
                    name,
                    topic_id,
                    is_internal,
                    partitions,
                    topic_authorized_operations,
                    tagged_fields,
                )| {
                    MetadataTopic {
                        error_code,
                        name,
                        topic_id,
                        is_internal,
                        partitions,
                        topic_authorized_operations,
                        tagged_fields,
                    }
                },
            );
        let cluster_id = if v >= 2 { nullable_string() } else { Just(None).boxed() };
        (
            gated(v >= 3, any::<i32>()),
            array(broker),
            cluster_id,
            gated(v >= 1, any::<i32>()),
            array(topic),
            gated((8..=10).contains(&v), any::<i32>()),
            gated(v >= 13, error_code()),
            tagged(flexible),
        )
            .prop_map(
                |(
                    throttle_time_ms,
                    brokers,
                    cluster_id,
                    controller_id,
                    topics,
                    cluster_authorized_operations,
                    error_code,
                    tagged_fields,
                )| MetadataResponse {
                    throttle_time_ms,
                    brokers,
                    cluster_id,
                    controller_id,
                    topics,
                    cluster_authorized_operations,
                    error_code,
                    tagged_fields,
                },
            )
    }

    #[test]
    fn requests_round_trip_at_every_version() {
        round_trip_every_version(file!(), request);
    }

    #[test]
    fn responses_round_trip_at_every_version() {
        round_trip_every_version(file!(), response);
    }

    #[test]
    fn a_replica_list_cut_short_names_its_field() {
        // v0 response: no brokers, one topic "t" with one partition whose replica list claims
        // two ids but holds one.
        let body: &[u8] = &[
            0, 0, 0, 0, // brokers: 0
            0, 0, 0, 1, // topics: 1
            0, 0, 0, 1, b't', // error_code, name
            0, 0, 0, 1, // partitions: 1
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // error_code, partition_index, leader_id
            0, 0, 0, 2, 0, 0, 0, 1, // replica_nodes: 2 claimed, 1 present
        ];
        let err = MetadataResponse::decode_body(bytes::Bytes::from_static(body), 0).unwrap_err();
        assert_eq!(err.field, "topics.partitions.replica_nodes");
        assert_eq!(err.offset, 31);
    }
}
