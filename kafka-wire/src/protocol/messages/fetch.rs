//! Fetch (key 1): read record data from partition leaders (or a preferred read replica).
//!
//! Versions 0–18: v4 isolation level, last stable offset and aborted transactions (read
//! committed); v5 log start offset; v7 fetch sessions (KIP-227); v9 current leader epoch
//! (KIP-320); v11 rack id and preferred read replica (KIP-392); v12 flexible, last fetched
//! epoch, tagged DivergingEpoch / CurrentLeader / SnapshotId; v13 topic ids instead of names;
//! v15 ReplicaState (KIP-903); v16 tagged NodeEndpoints (KIP-951); v17 tagged replica directory
//! id (KIP-853); v18 tagged follower high watermark (4.1). Kafka 4 brokers accept v4+ only.
//!
//! `records` stays raw [`Bytes`] (a zero-copy slice of the response); decode it with
//! [`FetchPartitionResponse::record_set`] or [`RecordSet::decode`] when it is wanted.

use bytes::Bytes;

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error::{DecodeError, EncodeError};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;
use crate::protocol::records::{DecodeOptions, RecordSet};
use crate::protocol::tagged::TaggedFields;
use kafka_vocab::Uuid;

/// Fetch's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::FETCH,
    name: "Fetch",
    versions: VersionRange::new(0, 18),
    flexible_from: Some(12),
};

/// `replica_id` of a consumer (not a follower broker).
pub const CONSUMER_REPLICA_ID: i32 = -1;
/// `isolation_level`: every record, transactional or not, up to the high watermark.
pub const READ_UNCOMMITTED: i8 = 0;
/// `isolation_level`: up to the last stable offset, with aborted transactions listed.
pub const READ_COMMITTED: i8 = 1;

kafka_message! {
    /// A Fetch request (v0–v18).
    pub struct FetchRequest {
        /// Tagged (tag 0) from v12: the cluster id, sent by KRaft voters; `None` is omitted.
        [since 12] cluster_id: Option<String>,
        /// v0–14: the follower's broker id, or −1 for a consumer (v15+ uses `replica_state`).
        [since 0 until 14] replica_id: Option<i32>,
        /// Tagged (tag 1) from v15: the fetching follower; `None` (a consumer) is omitted.
        [since 15] replica_state: Option<ReplicaState>,
        /// The maximum time in milliseconds to wait for the response.
        max_wait_ms: i32,
        /// The minimum bytes to accumulate in the response.
        min_bytes: i32,
        /// Added in v3 (default `i32::MAX`).
        [since 3] max_bytes: Option<i32>,
        /// Added in v4: [`READ_UNCOMMITTED`] or [`READ_COMMITTED`].
        [since 4] isolation_level: Option<i8>,
        /// Added in v7: 0 for a full fetch outside a session.
        [since 7] session_id: Option<i32>,
        /// Added in v7: −1 for a full fetch outside a session.
        [since 7] session_epoch: Option<i32>,
        /// The topics to fetch.
        topics: Vec<FetchTopic>,
        /// Added in v7: partitions to drop from an incremental fetch session.
        [since 7] forgotten_topics_data: Option<Vec<ForgottenTopic>>,
        /// Added in v11 (default empty).
        [since 11] rack_id: Option<String>,
    }
}

kafka_message! {
    /// The fetching follower's id and epoch (KIP-903), sent as a tagged field from v15 instead of
    /// `replica_id`; a consumer sends none.
    pub struct ReplicaState {
        /// The replica ID of the follower, or −1 if this request is from a consumer.
        replica_id: i32,
        /// −1 when unknown.
        replica_epoch: i64,
    }
}

kafka_message! {
    /// An element of [`FetchRequest::topics`]: the topics to fetch.
    pub struct FetchTopic {
        /// v0–12.
        [since 0 until 12] topic: Option<String>,
        /// Added in v13 (replacing the name).
        [since 13] topic_id: Option<Uuid>,
        /// The partitions to fetch.
        partitions: Vec<FetchPartition>,
    }
}

kafka_message! {
    /// An element of [`FetchTopic::partitions`]: the partitions to fetch.
    pub struct FetchPartition {
        /// The partition index.
        partition: i32,
        /// Added in v9 (−1: don't check).
        [since 9] current_leader_epoch: Option<i32>,
        /// The offset of the first record to fetch.
        fetch_offset: i64,
        /// Added in v12 (−1 when none).
        [since 12] last_fetched_epoch: Option<i32>,
        /// Added in v5; only followers send a real value (−1 otherwise).
        [since 5] log_start_offset: Option<i64>,
        /// The maximum bytes to fetch from this partition. The first batch is returned whole even if
        /// it is larger (KIP-74), so a consumer always makes progress.
        partition_max_bytes: i32,
        /// Tagged (tag 0) from v17: the follower's log directory.
        [since 17] replica_directory_id: Option<Uuid>,
        /// Tagged (tag 1) from v18: the follower's high watermark.
        [since 18] high_watermark: Option<i64>,
    }
}

kafka_message! {
    /// An element of [`FetchRequest::forgotten_topics_data`]: in an incremental fetch request, the partitions to
    /// remove. Added in v7.
    pub struct ForgottenTopic {
        /// v7–12.
        [since 7 until 12] topic: Option<String>,
        /// Added in v13.
        [since 13] topic_id: Option<Uuid>,
        /// The partitions indexes to forget.
        partitions: Vec<i32>,
    }
}

/// Encodes a tagged field's payload (always in the flexible style).
pub(crate) fn tag_payload(write: impl FnOnce(&mut Encoder) -> EncodeResult) -> Result<Bytes, EncodeError> {
    let mut e = Encoder::new(true);
    write(&mut e)?;
    Ok(Bytes::from(e.into_inner()))
}

/// Decodes a tagged field's payload, which must be consumed exactly; `at` is the offset of
/// the tagged-field section it came from, added to the payload-relative error offsets.
pub(crate) fn read_tag<T>(
    payload: Bytes,
    at: usize,
    field: &'static str,
    read: impl FnOnce(&mut Decoder) -> DecodeResult<T>,
) -> DecodeResult<T> {
    let mut d = Decoder::with_flexible(payload, true);
    let out = read(&mut d).and_then(|v| d.finish(field).map(|()| v));
    out.map_err(|e| DecodeError::new(e.kind, e.field, at + e.offset))
}

/// Takes a modelled tag out of `tags` — only when `present` (the version defines it), so a
/// tag number reused by a later version stays with the unknown fields at earlier versions.
pub(crate) fn take_tag(tags: &mut TaggedFields, tag: u32, present: bool) -> Option<Bytes> {
    if present {
        tags.take(tag)
    } else {
        None
    }
}

/// Writes `tags` plus the modelled tagged fields in `extra` (those that are `Some`).
pub(crate) fn write_tags(
    e: &mut Encoder,
    tags: &TaggedFields,
    extra: Vec<(u32, Option<Bytes>)>,
    field: &'static str,
    version: i16,
) -> EncodeResult {
    if extra.iter().all(|(_, p)| p.is_none()) {
        return e.tagged_fields(tags, field, version);
    }
    let mut all = tags.clone();
    for (tag, payload) in extra {
        if let Some(payload) = payload {
            all.put(tag, payload);
        }
    }
    e.tagged_fields(&all, field, version)
}

fn uuid_payload(id: Uuid) -> Result<Bytes, EncodeError> {
    tag_payload(|e| {
        e.uuid(id);
        Ok(())
    })
}

fn i64_payload(v: i64) -> Result<Bytes, EncodeError> {
    tag_payload(|e| {
        e.i64(v);
        Ok(())
    })
}

impl Body for FetchRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version <= 14 {
            e.i32(self.replica_id.unwrap_or(CONSUMER_REPLICA_ID));
        }
        e.i32(self.max_wait_ms);
        e.i32(self.min_bytes);
        if version >= 3 {
            e.i32(self.max_bytes.unwrap_or(i32::MAX));
        }
        if version >= 4 {
            e.i8(self.isolation_level.unwrap_or(READ_UNCOMMITTED));
        }
        if version >= 7 {
            e.i32(self.session_id.unwrap_or(0));
            e.i32(self.session_epoch.unwrap_or(-1));
        }
        e.array(&self.topics, "topics", |e, t| {
            if version >= 13 {
                e.uuid(t.topic_id.unwrap_or_default());
            } else {
                e.string(t.topic.as_deref().unwrap_or_default(), "topics.topic")?;
            }
            e.array(&t.partitions, "topics.partitions", |e, p| {
                e.i32(p.partition);
                if version >= 9 {
                    e.i32(p.current_leader_epoch.unwrap_or(-1));
                }
                e.i64(p.fetch_offset);
                if version >= 12 {
                    e.i32(p.last_fetched_epoch.unwrap_or(-1));
                }
                if version >= 5 {
                    e.i64(p.log_start_offset.unwrap_or(-1));
                }
                e.i32(p.partition_max_bytes);
                let directory = match p.replica_directory_id {
                    Some(id) if version >= 17 => Some(uuid_payload(id)?),
                    _ => None,
                };
                let high_watermark = match p.high_watermark {
                    Some(hw) if version >= 18 => Some(i64_payload(hw)?),
                    _ => None,
                };
                write_tags(
                    e,
                    &p.tagged_fields,
                    vec![(0, directory), (1, high_watermark)],
                    "topics.partitions.tagged_fields",
                    version,
                )
            })?;
            e.tagged_fields(&t.tagged_fields, "topics.tagged_fields", version)
        })?;
        if version >= 7 {
            e.array(
                self.forgotten_topics_data.as_deref().unwrap_or_default(),
                "forgotten_topics_data",
                |e, t| {
                    if version >= 13 {
                        e.uuid(t.topic_id.unwrap_or_default());
                    } else {
                        e.string(t.topic.as_deref().unwrap_or_default(), "forgotten_topics_data.topic")?;
                    }
                    e.i32_array(&t.partitions, "forgotten_topics_data.partitions")?;
                    e.tagged_fields(&t.tagged_fields, "forgotten_topics_data.tagged_fields", version)
                },
            )?;
        }
        if version >= 11 {
            e.string(self.rack_id.as_deref().unwrap_or_default(), "rack_id")?;
        }
        let cluster_id = match &self.cluster_id {
            Some(id) if version >= 12 => Some(tag_payload(|e| e.nullable_string(Some(id), "cluster_id"))?),
            _ => None,
        };
        let replica_state = match &self.replica_state {
            Some(s) if version >= 15 => Some(tag_payload(|e| {
                e.i32(s.replica_id);
                e.i64(s.replica_epoch);
                e.tagged_fields(&s.tagged_fields, "replica_state.tagged_fields", version)
            })?),
            _ => None,
        };
        write_tags(
            e,
            &self.tagged_fields,
            vec![(0, cluster_id), (1, replica_state)],
            "tagged_fields",
            version,
        )
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let replica_id = if version <= 14 { Some(d.i32("replica_id")?) } else { None };
        let max_wait_ms = d.i32("max_wait_ms")?;
        let min_bytes = d.i32("min_bytes")?;
        let max_bytes = if version >= 3 { Some(d.i32("max_bytes")?) } else { None };
        let isolation_level = if version >= 4 { Some(d.i8("isolation_level")?) } else { None };
        let (session_id, session_epoch) = if version >= 7 {
            (Some(d.i32("session_id")?), Some(d.i32("session_epoch")?))
        } else {
            (None, None)
        };
        let topics = d.array("topics", 2, |d| {
            let (topic, topic_id) = if version >= 13 {
                (None, Some(d.uuid("topics.topic_id")?))
            } else {
                (Some(d.string("topics.topic")?), None)
            };
            let partitions = d.array("topics.partitions", 16, |d| {
                let partition = d.i32("topics.partitions.partition")?;
                let current_leader_epoch =
                    if version >= 9 { Some(d.i32("topics.partitions.current_leader_epoch")?) } else { None };
                let fetch_offset = d.i64("topics.partitions.fetch_offset")?;
                let last_fetched_epoch =
                    if version >= 12 { Some(d.i32("topics.partitions.last_fetched_epoch")?) } else { None };
                let log_start_offset =
                    if version >= 5 { Some(d.i64("topics.partitions.log_start_offset")?) } else { None };
                let partition_max_bytes = d.i32("topics.partitions.partition_max_bytes")?;
                let at = d.position();
                let mut tagged_fields = d.tagged_fields("topics.partitions.tagged_fields")?;
                let replica_directory_id = match take_tag(&mut tagged_fields, 0, version >= 17) {
                    Some(p) => Some(read_tag(p, at, "topics.partitions.replica_directory_id", |d| {
                        d.uuid("replica_directory_id")
                    })?),
                    None => None,
                };
                let high_watermark = match take_tag(&mut tagged_fields, 1, version >= 18) {
                    Some(p) => Some(read_tag(p, at, "topics.partitions.high_watermark", |d| {
                        d.i64("high_watermark")
                    })?),
                    None => None,
                };
                Ok(FetchPartition {
                    partition,
                    current_leader_epoch,
                    fetch_offset,
                    last_fetched_epoch,
                    log_start_offset,
                    partition_max_bytes,
                    replica_directory_id,
                    high_watermark,
                    tagged_fields,
                })
            })?;
            Ok(FetchTopic {
                topic,
                topic_id,
                partitions,
                tagged_fields: d.tagged_fields("topics.tagged_fields")?,
            })
        })?;
        let forgotten_topics_data = if version >= 7 {
            Some(d.array("forgotten_topics_data", 2, |d| {
                let (topic, topic_id) = if version >= 13 {
                    (None, Some(d.uuid("forgotten_topics_data.topic_id")?))
                } else {
                    (Some(d.string("forgotten_topics_data.topic")?), None)
                };
                Ok(ForgottenTopic {
                    topic,
                    topic_id,
                    partitions: d.i32_array("forgotten_topics_data.partitions")?,
                    tagged_fields: d.tagged_fields("forgotten_topics_data.tagged_fields")?,
                })
            })?)
        } else {
            None
        };
        let rack_id = if version >= 11 { Some(d.string("rack_id")?) } else { None };
        let at = d.position();
        let mut tagged_fields = d.tagged_fields("tagged_fields")?;
        let cluster_id = match take_tag(&mut tagged_fields, 0, version >= 12) {
            Some(p) => read_tag(p, at, "cluster_id", |d| d.nullable_string("cluster_id"))?,
            None => None,
        };
        let replica_state = match take_tag(&mut tagged_fields, 1, version >= 15) {
            Some(p) => Some(read_tag(p, at, "replica_state", |d| {
                Ok(ReplicaState {
                    replica_id: d.i32("replica_state.replica_id")?,
                    replica_epoch: d.i64("replica_state.replica_epoch")?,
                    tagged_fields: d.tagged_fields("replica_state.tagged_fields")?,
                })
            })?),
            None => None,
        };
        Ok(Self {
            cluster_id,
            replica_id,
            replica_state,
            max_wait_ms,
            min_bytes,
            max_bytes,
            isolation_level,
            session_id,
            session_epoch,
            topics,
            forgotten_topics_data,
            rack_id,
            tagged_fields,
        })
    }
}

impl Request for FetchRequest {
    type Response = FetchResponse;
}

kafka_message! {
    /// A Fetch response (v0–v18).
    pub struct FetchResponse {
        /// Added in v1.
        [since 1] throttle_time_ms: Option<i32>,
        /// Added in v7: a session-level error.
        [since 7] error_code: Option<ErrorCode>,
        /// Added in v7: 0 outside a session.
        [since 7] session_id: Option<i32>,
        /// The response topics.
        responses: Vec<FetchableTopicResponse>,
        /// Tagged (tag 0) from v16: endpoints of the new leaders named in `current_leader`;
        /// empty is omitted.
        [vec since 16] node_endpoints: Vec<NodeEndpoint>,
    }
}

kafka_message! {
    /// An element of [`FetchResponse::responses`]: the response topics.
    pub struct FetchableTopicResponse {
        /// v0–12.
        [since 0 until 12] topic: Option<String>,
        /// Added in v13.
        [since 13] topic_id: Option<Uuid>,
        /// The topic partitions.
        partitions: Vec<FetchPartitionResponse>,
    }
}

kafka_message! {
    /// An element of [`FetchableTopicResponse::partitions`]: one partition's data and offsets.
    pub struct FetchPartitionResponse {
        /// The partition index.
        partition_index: i32,
        /// The error code, or 0 if there was no fetch error.
        error_code: ErrorCode,
        /// The current high watermark: the offset after the last record every in-sync replica has.
        high_watermark: i64,
        /// Added in v4 (−1 when unknown).
        [since 4] last_stable_offset: Option<i64>,
        /// Added in v5 (−1 when unknown).
        [since 5] log_start_offset: Option<i64>,
        /// Tagged (tag 0) from v12: where the follower's log diverged from the leader's.
        [since 12] diverging_epoch: Option<DivergingEpoch>,
        /// Tagged (tag 1) from v12: the leader, when the request went to the wrong broker.
        [since 12] current_leader: Option<LeaderIdAndEpoch>,
        /// Tagged (tag 2) from v12: the snapshot to fetch instead (KRaft).
        [since 12] snapshot_id: Option<SnapshotId>,
        /// Added in v4 (nullable): transactions aborted in the returned range, for read_committed.
        [nullable since 4] aborted_transactions: Option<Vec<AbortedTransaction>>,
        /// Added in v11: the replica to fetch from next, or −1.
        [since 11] preferred_read_replica: Option<i32>,
        /// Raw record data (batches, the last possibly cut short); see [`Self::record_set`].
        #[cfg_attr(feature = "json", serde(serialize_with = "crate::protocol::json::records"))]
        records: Option<Bytes>,
    }
}

impl FetchPartitionResponse {
    /// Decodes `records` (none is an empty set).
    pub fn record_set(&self, opts: &DecodeOptions) -> DecodeResult<RecordSet> {
        match &self.records {
            None => Ok(RecordSet::default()),
            Some(records) => RecordSet::decode(records, opts),
        }
    }
}

kafka_message! {
    /// Where a follower's log diverged from the leader's: the largest epoch it shares with the leader and that
    /// epoch's end offset (tagged, v12+).
    pub struct DivergingEpoch {
        /// The largest leader epoch the two logs share.
        epoch: i32,
        /// The end offset of that epoch on the leader (exclusive).
        end_offset: i64,
    }
}

kafka_message! {
    /// A partition's leader as a broker knows it (Fetch v12+, Produce v10+).
    pub struct LeaderIdAndEpoch {
        /// −1 when unknown.
        leader_id: i32,
        /// −1 when unknown.
        leader_epoch: i32,
    }
}

kafka_message! {
    /// The snapshot to fetch with FetchSnapshot when the requested offset is below the log start offset (KRaft;
    /// tagged, v12+).
    pub struct SnapshotId {
        /// The snapshot's end offset.
        end_offset: i64,
        /// The snapshot's epoch.
        epoch: i32,
    }
}

kafka_message! {
    /// An element of [`FetchPartitionResponse::aborted_transactions`]: the aborted transactions. Added in v4.
    pub struct AbortedTransaction {
        /// The producer id associated with the aborted transaction.
        producer_id: i64,
        /// The first offset in the aborted transaction.
        first_offset: i64,
    }
}

kafka_message! {
    /// A broker's address, sent with NOT_LEADER_OR_FOLLOWER so the client need not refresh
    /// metadata first (KIP-951; Fetch v16+, Produce v10+).
    pub struct NodeEndpoint {
        /// The ID of the node.
        node_id: i32,
        /// The node's hostname.
        host: String,
        /// The node's port.
        port: i32,
        /// The rack of the node, or `None` if it has not been assigned to a rack.
        rack: Option<String>,
    }
}

pub(crate) fn leader_payload(l: &LeaderIdAndEpoch, version: i16) -> Result<Bytes, EncodeError> {
    tag_payload(|e| {
        e.i32(l.leader_id);
        e.i32(l.leader_epoch);
        e.tagged_fields(&l.tagged_fields, "current_leader.tagged_fields", version)
    })
}

pub(crate) fn read_leader(d: &mut Decoder) -> DecodeResult<LeaderIdAndEpoch> {
    Ok(LeaderIdAndEpoch {
        leader_id: d.i32("current_leader.leader_id")?,
        leader_epoch: d.i32("current_leader.leader_epoch")?,
        tagged_fields: d.tagged_fields("current_leader.tagged_fields")?,
    })
}

/// The tagged NodeEndpoints payload, or `None` when there are none (omitted).
pub(crate) fn node_endpoints_payload(
    nodes: &[NodeEndpoint],
    version: i16,
) -> Result<Option<Bytes>, EncodeError> {
    if nodes.is_empty() {
        return Ok(None);
    }
    tag_payload(|e| {
        e.array(nodes, "node_endpoints", |e, n| {
            e.i32(n.node_id);
            e.string(&n.host, "node_endpoints.host")?;
            e.i32(n.port);
            e.nullable_string(n.rack.as_deref(), "node_endpoints.rack")?;
            e.tagged_fields(&n.tagged_fields, "node_endpoints.tagged_fields", version)
        })
    })
    .map(Some)
}

pub(crate) fn read_node_endpoints(d: &mut Decoder) -> DecodeResult<Vec<NodeEndpoint>> {
    d.array("node_endpoints", 11, |d| {
        Ok(NodeEndpoint {
            node_id: d.i32("node_endpoints.node_id")?,
            host: d.string("node_endpoints.host")?,
            port: d.i32("node_endpoints.port")?,
            rack: d.nullable_string("node_endpoints.rack")?,
            tagged_fields: d.tagged_fields("node_endpoints.tagged_fields")?,
        })
    })
}

impl Body for FetchResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 1 {
            e.i32(self.throttle_time_ms.unwrap_or(0));
        }
        if version >= 7 {
            e.i16(self.error_code.unwrap_or_default().0);
            e.i32(self.session_id.unwrap_or(0));
        }
        e.array(&self.responses, "responses", |e, t| {
            if version >= 13 {
                e.uuid(t.topic_id.unwrap_or_default());
            } else {
                e.string(t.topic.as_deref().unwrap_or_default(), "responses.topic")?;
            }
            e.array(&t.partitions, "responses.partitions", |e, p| write_partition(e, p, version))?;
            e.tagged_fields(&t.tagged_fields, "responses.tagged_fields", version)
        })?;
        let nodes = if version >= 16 { node_endpoints_payload(&self.node_endpoints, version)? } else { None };
        write_tags(e, &self.tagged_fields, vec![(0, nodes)], "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if version >= 1 { Some(d.i32("throttle_time_ms")?) } else { None };
        let (error_code, session_id) = if version >= 7 {
            (Some(ErrorCode(d.i16("error_code")?)), Some(d.i32("session_id")?))
        } else {
            (None, None)
        };
        let responses = d.array("responses", 2, |d| {
            let (topic, topic_id) = if version >= 13 {
                (None, Some(d.uuid("responses.topic_id")?))
            } else {
                (Some(d.string("responses.topic")?), None)
            };
            let partitions = d.array("responses.partitions", 15, |d| read_partition(d, version))?;
            Ok(FetchableTopicResponse {
                topic,
                topic_id,
                partitions,
                tagged_fields: d.tagged_fields("responses.tagged_fields")?,
            })
        })?;
        let at = d.position();
        let mut tagged_fields = d.tagged_fields("tagged_fields")?;
        let node_endpoints = match take_tag(&mut tagged_fields, 0, version >= 16) {
            Some(p) => read_tag(p, at, "node_endpoints", read_node_endpoints)?,
            None => Vec::new(),
        };
        Ok(Self { throttle_time_ms, error_code, session_id, responses, node_endpoints, tagged_fields })
    }
}

fn write_partition(e: &mut Encoder, p: &FetchPartitionResponse, version: i16) -> EncodeResult {
    e.i32(p.partition_index);
    e.i16(p.error_code.0);
    e.i64(p.high_watermark);
    if version >= 4 {
        e.i64(p.last_stable_offset.unwrap_or(-1));
    }
    if version >= 5 {
        e.i64(p.log_start_offset.unwrap_or(-1));
    }
    if version >= 4 {
        e.nullable_array(
            p.aborted_transactions.as_deref(),
            "responses.partitions.aborted_transactions",
            |e, a| {
                e.i64(a.producer_id);
                e.i64(a.first_offset);
                e.tagged_fields(
                    &a.tagged_fields,
                    "responses.partitions.aborted_transactions.tagged_fields",
                    version,
                )
            },
        )?;
    }
    if version >= 11 {
        e.i32(p.preferred_read_replica.unwrap_or(-1));
    }
    e.nullable_bytes(p.records.as_deref(), "responses.partitions.records")?;
    let mut extra = Vec::new();
    if version >= 12 {
        let diverging = match &p.diverging_epoch {
            Some(d) => Some(tag_payload(|e| {
                e.i32(d.epoch);
                e.i64(d.end_offset);
                e.tagged_fields(&d.tagged_fields, "diverging_epoch.tagged_fields", version)
            })?),
            None => None,
        };
        let leader = match &p.current_leader {
            Some(l) => Some(leader_payload(l, version)?),
            None => None,
        };
        let snapshot = match &p.snapshot_id {
            Some(s) => Some(tag_payload(|e| {
                e.i64(s.end_offset);
                e.i32(s.epoch);
                e.tagged_fields(&s.tagged_fields, "snapshot_id.tagged_fields", version)
            })?),
            None => None,
        };
        extra = vec![(0, diverging), (1, leader), (2, snapshot)];
    }
    write_tags(e, &p.tagged_fields, extra, "responses.partitions.tagged_fields", version)
}

fn read_partition(d: &mut Decoder, version: i16) -> DecodeResult<FetchPartitionResponse> {
    let partition_index = d.i32("responses.partitions.partition_index")?;
    let error_code = ErrorCode(d.i16("responses.partitions.error_code")?);
    let high_watermark = d.i64("responses.partitions.high_watermark")?;
    let last_stable_offset =
        if version >= 4 { Some(d.i64("responses.partitions.last_stable_offset")?) } else { None };
    let log_start_offset =
        if version >= 5 { Some(d.i64("responses.partitions.log_start_offset")?) } else { None };
    let aborted_transactions = if version >= 4 {
        d.nullable_array("responses.partitions.aborted_transactions", 16, |d| {
            Ok(AbortedTransaction {
                producer_id: d.i64("responses.partitions.aborted_transactions.producer_id")?,
                first_offset: d.i64("responses.partitions.aborted_transactions.first_offset")?,
                tagged_fields: d.tagged_fields("responses.partitions.aborted_transactions.tagged_fields")?,
            })
        })?
    } else {
        None
    };
    let preferred_read_replica =
        if version >= 11 { Some(d.i32("responses.partitions.preferred_read_replica")?) } else { None };
    let records = d.nullable_bytes("responses.partitions.records")?;
    let at = d.position();
    let mut tagged_fields = d.tagged_fields("responses.partitions.tagged_fields")?;
    let (mut diverging_epoch, mut current_leader, mut snapshot_id) = (None, None, None);
    if version >= 12 {
        if let Some(p) = tagged_fields.take(0) {
            diverging_epoch = Some(read_tag(p, at, "responses.partitions.diverging_epoch", |d| {
                Ok(DivergingEpoch {
                    epoch: d.i32("diverging_epoch.epoch")?,
                    end_offset: d.i64("diverging_epoch.end_offset")?,
                    tagged_fields: d.tagged_fields("diverging_epoch.tagged_fields")?,
                })
            })?);
        }
        if let Some(p) = tagged_fields.take(1) {
            current_leader = Some(read_tag(p, at, "responses.partitions.current_leader", read_leader)?);
        }
        if let Some(p) = tagged_fields.take(2) {
            snapshot_id = Some(read_tag(p, at, "responses.partitions.snapshot_id", |d| {
                Ok(SnapshotId {
                    end_offset: d.i64("snapshot_id.end_offset")?,
                    epoch: d.i32("snapshot_id.epoch")?,
                    tagged_fields: d.tagged_fields("snapshot_id.tagged_fields")?,
                })
            })?);
        }
    }
    Ok(FetchPartitionResponse {
        partition_index,
        error_code,
        high_watermark,
        last_stable_offset,
        log_start_offset,
        diverging_epoch,
        current_leader,
        snapshot_id,
        aborted_transactions,
        preferred_read_replica,
        records,
        tagged_fields,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{
        array, error_code, gated, nullable_string, round_trip_every_version, string, tagged,
    };
    use crate::protocol::records::{Compression, Record, RecordBatch, RecordSetBatch};

    /// A tagged field that exists from some version on: `None` or `Some` there, `None` before.
    pub(crate) fn optional<S>(present: bool, strategy: S) -> BoxedStrategy<Option<S::Value>>
    where
        S: Strategy + 'static,
        S::Value: Clone,
    {
        if present {
            proptest::option::of(strategy).boxed()
        } else {
            Just(None).boxed()
        }
    }

    pub(crate) fn uuid() -> impl Strategy<Value = Uuid> + Clone {
        any::<[u8; 16]>().prop_map(Uuid)
    }

    pub(crate) fn records() -> impl Strategy<Value = Option<Bytes>> {
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40).prop_map(Bytes::from))
    }

    pub(crate) fn leader(flexible: bool) -> impl Strategy<Value = LeaderIdAndEpoch> + Clone {
        (any::<i32>(), any::<i32>(), tagged(flexible)).prop_map(|(leader_id, leader_epoch, tagged_fields)| {
            LeaderIdAndEpoch { leader_id, leader_epoch, tagged_fields }
        })
    }

    pub(crate) fn node_endpoints(present: bool) -> BoxedStrategy<Vec<NodeEndpoint>> {
        if !present {
            return Just(Vec::new()).boxed();
        }
        let node = (any::<i32>(), string(), any::<i32>(), nullable_string(), tagged(true)).prop_map(
            |(node_id, host, port, rack, tagged_fields)| NodeEndpoint {
                node_id,
                host,
                port,
                rack,
                tagged_fields,
            },
        );
        array(node).boxed()
    }

    fn request(v: i16) -> impl Strategy<Value = FetchRequest> {
        let flexible = SPEC.is_flexible(v);
        let partition = (
            (any::<i32>(), gated(v >= 9, any::<i32>()), any::<i64>(), gated(v >= 12, any::<i32>())),
            (
                gated(v >= 5, any::<i64>()),
                any::<i32>(),
                optional(v >= 17, uuid()),
                optional(v >= 18, any::<i64>()),
            ),
            tagged(flexible),
        )
            .prop_map(
                |(
                    (partition, current_leader_epoch, fetch_offset, last_fetched_epoch),
                    (log_start_offset, partition_max_bytes, replica_directory_id, high_watermark),
                    tagged_fields,
                )| FetchPartition {
                    partition,
                    current_leader_epoch,
                    fetch_offset,
                    last_fetched_epoch,
                    log_start_offset,
                    partition_max_bytes,
                    replica_directory_id,
                    high_watermark,
                    tagged_fields,
                },
            );
        let topic = (gated(v <= 12, string()), gated(v >= 13, uuid()), array(partition), tagged(flexible))
            .prop_map(|(topic, topic_id, partitions, tagged_fields)| FetchTopic {
                topic,
                topic_id,
                partitions,
                tagged_fields,
            });
        let forgotten =
            (gated(v <= 12, string()), gated(v >= 13, uuid()), array(any::<i32>()), tagged(flexible))
                .prop_map(|(topic, topic_id, partitions, tagged_fields)| ForgottenTopic {
                    topic,
                    topic_id,
                    partitions,
                    tagged_fields,
                });
        let replica_state = (any::<i32>(), any::<i64>(), tagged(true)).prop_map(
            |(replica_id, replica_epoch, tagged_fields)| ReplicaState {
                replica_id,
                replica_epoch,
                tagged_fields,
            },
        );
        (
            (optional(v >= 12, string()), gated(v <= 14, any::<i32>()), optional(v >= 15, replica_state)),
            (any::<i32>(), any::<i32>(), gated(v >= 3, any::<i32>()), gated(v >= 4, any::<i8>())),
            (
                gated(v >= 7, any::<i32>()),
                gated(v >= 7, any::<i32>()),
                array(topic),
                gated(v >= 7, array(forgotten)),
            ),
            (gated(v >= 11, string()), tagged(flexible)),
        )
            .prop_map(
                |(
                    (cluster_id, replica_id, replica_state),
                    (max_wait_ms, min_bytes, max_bytes, isolation_level),
                    (session_id, session_epoch, topics, forgotten_topics_data),
                    (rack_id, tagged_fields),
                )| FetchRequest {
                    cluster_id,
                    replica_id,
                    replica_state,
                    max_wait_ms,
                    min_bytes,
                    max_bytes,
                    isolation_level,
                    session_id,
                    session_epoch,
                    topics,
                    forgotten_topics_data,
                    rack_id,
                    tagged_fields,
                },
            )
    }

    fn response(v: i16) -> impl Strategy<Value = FetchResponse> {
        let flexible = SPEC.is_flexible(v);
        let diverging =
            (any::<i32>(), any::<i64>(), tagged(true)).prop_map(|(epoch, end_offset, tagged_fields)| {
                DivergingEpoch { epoch, end_offset, tagged_fields }
            });
        let snapshot = (any::<i64>(), any::<i32>(), tagged(true))
            .prop_map(|(end_offset, epoch, tagged_fields)| SnapshotId { end_offset, epoch, tagged_fields });
        let aborted = (any::<i64>(), any::<i64>(), tagged(flexible)).prop_map(
            |(producer_id, first_offset, tagged_fields)| AbortedTransaction {
                producer_id,
                first_offset,
                tagged_fields,
            },
        );
        let partition = (
            (
                any::<i32>(),
                error_code(),
                any::<i64>(),
                gated(v >= 4, any::<i64>()),
                gated(v >= 5, any::<i64>()),
            ),
            (optional(v >= 12, diverging), optional(v >= 12, leader(true)), optional(v >= 12, snapshot)),
            (optional(v >= 4, array(aborted)), gated(v >= 11, any::<i32>()), records(), tagged(flexible)),
        )
            .prop_map(
                |(
                    (partition_index, error_code, high_watermark, last_stable_offset, log_start_offset),
                    (diverging_epoch, current_leader, snapshot_id),
                    (aborted_transactions, preferred_read_replica, records, tagged_fields),
                )| FetchPartitionResponse {
                    partition_index,
                    error_code,
                    high_watermark,
                    last_stable_offset,
                    log_start_offset,
                    diverging_epoch,
                    current_leader,
                    snapshot_id,
                    aborted_transactions,
                    preferred_read_replica,
                    records,
                    tagged_fields,
                },
            );
        let topic = (gated(v <= 12, string()), gated(v >= 13, uuid()), array(partition), tagged(flexible))
            .prop_map(|(topic, topic_id, partitions, tagged_fields)| FetchableTopicResponse {
                topic,
                topic_id,
                partitions,
                tagged_fields,
            });
        (
            gated(v >= 1, any::<i32>()),
            gated(v >= 7, error_code()),
            gated(v >= 7, any::<i32>()),
            array(topic),
            node_endpoints(v >= 16),
            tagged(flexible),
        )
            .prop_map(
                |(throttle_time_ms, error_code, session_id, responses, node_endpoints, tagged_fields)| {
                    FetchResponse {
                        throttle_time_ms,
                        error_code,
                        session_id,
                        responses,
                        node_endpoints,
                        tagged_fields,
                    }
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
    fn a_v4_read_committed_consumer_fetch_is_laid_out_as_kafka_expects() {
        let request = FetchRequest {
            replica_id: Some(CONSUMER_REPLICA_ID),
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: Some(52_428_800),
            isolation_level: Some(READ_COMMITTED),
            topics: vec![FetchTopic {
                topic: Some("t".into()),
                partitions: vec![FetchPartition {
                    partition: 2,
                    fetch_offset: 42,
                    partition_max_bytes: 1_048_576,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        #[rustfmt::skip]
        let expected = [
            0xff, 0xff, 0xff, 0xff, // replica_id -1
            0, 0, 1, 0xf4,          // max_wait_ms 500
            0, 0, 0, 1,             // min_bytes 1
            3, 32, 0, 0,            // max_bytes 50 MiB
            1,                      // isolation_level read_committed
            0, 0, 0, 1, 0, 1, b't', // topics: ["t"
            0, 0, 0, 1,             //   partitions: [
            0, 0, 0, 2,             //     partition 2
            0, 0, 0, 0, 0, 0, 0, 42, //    fetch_offset 42
            0, 16, 0, 0,            //     partition_max_bytes 1 MiB
        ];
        assert_eq!(request.encode_body(4).unwrap(), expected);
        assert_eq!(FetchRequest::decode_body(Bytes::copy_from_slice(&expected), 4).unwrap(), request);
    }

    #[test]
    fn a_v12_response_carries_a_tagged_diverging_epoch() {
        #[rustfmt::skip]
        let body = [
            0, 0, 0, 0,             // throttle_time_ms
            0, 0,                   // error_code
            0, 0, 0, 0,             // session_id
            2,                      // responses: 1
            2, b't',                // topic "t"
            2,                      // partitions: 1
            0, 0, 0, 0,             // partition_index 0
            0, 0,                   // error_code
            0, 0, 0, 0, 0, 0, 0, 9, // high_watermark 9
            0, 0, 0, 0, 0, 0, 0, 9, // last_stable_offset 9
            0, 0, 0, 0, 0, 0, 0, 0, // log_start_offset 0
            0,                      // aborted_transactions: null
            0xff, 0xff, 0xff, 0xff, // preferred_read_replica -1
            1,                      // records: empty
            1,                      // 1 tagged field
            0, 13,                  // tag 0 (diverging epoch), 13 bytes
            0, 0, 0, 4,             //   epoch 4
            0, 0, 0, 0, 0, 0, 0, 7, //   end_offset 7
            0,                      //   no tags
            0,                      // topic tags
            0,                      // body tags
        ];
        let decoded = FetchResponse::decode_body(Bytes::copy_from_slice(&body), 12).unwrap();
        let p = &decoded.responses[0].partitions[0];
        assert_eq!(p.diverging_epoch.as_ref().map(|d| (d.epoch, d.end_offset)), Some((4, 7)));
        assert!(p.tagged_fields.is_empty());
        assert_eq!(p.aborted_transactions, None);
        assert_eq!(p.records.as_deref(), Some(&[][..]));
        assert_eq!(decoded.encode_body(12).unwrap(), body);
    }

    #[test]
    fn fetched_records_decode_as_slices_of_the_response() {
        let batch = RecordBatch::new(
            10,
            0,
            Compression::None,
            vec![Record::new(Some(Bytes::from_static(b"key")), Some(Bytes::from_static(b"value")))],
        );
        let mut records = batch.to_bytes().unwrap().to_vec();
        records.extend_from_slice(&batch.to_bytes().unwrap()[..20]); // a cut-short second batch
        let response = FetchResponse {
            responses: vec![FetchableTopicResponse {
                topic_id: Some(Uuid([7; 16])),
                partitions: vec![FetchPartitionResponse {
                    records: Some(Bytes::from(records)),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let wire = Bytes::from(response.encode_body(17).unwrap());
        let decoded = FetchResponse::decode_body(wire.clone(), 17).unwrap();
        let set = decoded.responses[0].partitions[0].record_set(&DecodeOptions::default()).unwrap();
        assert_eq!(set.truncated_tail_bytes, 20);
        let [RecordSetBatch::V2(got)] = &set.batches[..] else { panic!("one v2 batch expected") };
        assert_eq!(got, &batch);
        let value = got.records[0].value.as_ref().unwrap();
        let wire_range = wire.as_ptr() as usize..wire.as_ptr() as usize + wire.len();
        assert!(wire_range.contains(&(value.as_ptr() as usize)));
    }

    #[test]
    fn a_tag_from_a_later_version_stays_unknown() {
        // Tag 1 on a partition means HighWatermark only from v18; at v17 it is kept raw.
        let mut tags = TaggedFields::default();
        tags.put(1, Bytes::from_static(&[1, 2, 3]));
        let request = FetchRequest {
            topics: vec![FetchTopic {
                topic_id: Some(Uuid::ZERO),
                partitions: vec![FetchPartition { tagged_fields: tags, ..Default::default() }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let decoded = FetchRequest::decode_body(Bytes::from(request.encode_body(17).unwrap()), 17).unwrap();
        let p = &decoded.topics[0].partitions[0];
        assert_eq!(p.high_watermark, None);
        assert_eq!(p.tagged_fields.as_slice(), [(1, Bytes::from_static(&[1, 2, 3]))]);
    }
}
