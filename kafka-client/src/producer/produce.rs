//! Produce: one RecordBatch (magic 2) per partition, sent to the partitions' leaders — one
//! Produce request per leader broker, in parallel — with acks −1, 1 or 0, and by key hash
//! with the Java client's partitioner.
//!
//! Not idempotent: a partition whose request got no answer (timeout, connection cut) is sent
//! again, so its records may be appended twice (at least once). Errors that say the broker
//! appended nothing (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, ...) are retried
//! without that risk. For many records, exactly-once retries and more than one request in
//! flight, use [`Producer`](crate::Producer).
//!
//! ```no_run
//! use bytes::Bytes;
//! use kafka_client::{Client, ClientConfig, FetchOptions, FetchRange, ProduceOptions, ProduceRecord};
//! use kafka_client::TopicPartition;
//! use kafka_wire::protocol::records::Compression;
//!
//! # async fn run() -> Result<(), kafka_client::ClientError> {
//! let client = Client::connect(ClientConfig::new("localhost:9092")?).await?;
//! let records = vec![ProduceRecord::new(Some(Bytes::from("k")), Some(Bytes::from("v")))];
//! let options = ProduceOptions { compression: Compression::Zstd, ..ProduceOptions::default() };
//! let produced = client.produce("orders", 0, records, &options).await?;
//! let base = produced.base_offset.unwrap_or(0);
//!
//! let tp = TopicPartition::new("orders", 0);
//! let fetched = client.fetch_range(&[FetchRange::new(tp.clone(), base, base + 1)], &FetchOptions::default()).await;
//! for record in &fetched[&tp].as_ref().map_err(Clone::clone)?.records {
//!     println!("{} {:?}", record.offset, record.value);
//! }
//! # Ok(())
//! # }
//! ```

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use kafka_vocab::now_ms;

use bytes::Bytes;

use crate::cluster::client::Client;
use crate::cluster::router::{LeaderAnswer, PartitionResults, TopicPartition};
use crate::error::ClientError;
use crate::producer::partitioner::partition_for_key;
use kafka_wire::protocol::messages::{produce, PartitionProduceData, ProduceRequest, TopicProduceData};
use kafka_wire::protocol::records::{Compression, Header, Record, RecordBatch};
use kafka_wire::protocol::{TaggedFields, Uuid};

/// How many replicas must have a batch before the leader answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Acks {
    /// −1: every in-sync replica (the topic's `min.insync.replicas` applies).
    #[default]
    All,
    /// 1: the leader only.
    Leader,
    /// 0: no answer at all — the broker sends no response, so there is no offset and no error
    /// beyond a failed write; records can be lost silently.
    NoResponse,
}

impl Acks {
    /// The wire value: −1, 1 or 0.
    pub fn wire(self) -> i16 {
        match self {
            Self::All => -1,
            Self::Leader => 1,
            Self::NoResponse => 0,
        }
    }

    /// From the wire value; `None` for anything but −1, 0 and 1.
    pub fn from_wire(acks: i16) -> Option<Self> {
        match acks {
            -1 => Some(Self::All),
            1 => Some(Self::Leader),
            0 => Some(Self::NoResponse),
            _ => None,
        }
    }
}

/// How to produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProduceOptions {
    /// How many replicas must have each batch before the leader answers; [`Acks::All`] by
    /// default.
    pub acks: Acks,
    /// The codec for each batch; it must be compiled in (see [`Compression::is_available`]).
    pub compression: Compression,
    /// Overall deadline for the call, retries included; also sent as the broker-side wait
    /// for replication.
    pub timeout: Duration,
}

impl Default for ProduceOptions {
    fn default() -> Self {
        Self { acks: Acks::All, compression: Compression::None, timeout: Duration::from_secs(30) }
    }
}

/// One record to produce.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProduceRecord {
    /// `None` is a null key (not the same as empty).
    pub key: Option<Bytes>,
    /// `None` is a tombstone.
    pub value: Option<Bytes>,
    /// Record headers, written in this order.
    pub headers: Vec<Header>,
    /// Create time in milliseconds since the Unix epoch; `None` is "now" when the batch is
    /// built. A topic with `message.timestamp.type=LogAppendTime` replaces it.
    pub timestamp: Option<i64>,
}

impl ProduceRecord {
    /// A record with no headers, stamped when its batch is built.
    pub fn new(key: Option<Bytes>, value: Option<Bytes>) -> Self {
        Self { key, value, headers: Vec::new(), timestamp: None }
    }
}

/// One record to produce, borrowed: a [`Producer`](crate::Producer) copies each record into
/// its batch when it is sent, so data in the caller's own buffers (lines of a file it read, a
/// message it decoded) is sent without first being made into [`Bytes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecordRef<'a> {
    /// `None` is a null key (not the same as empty).
    pub key: Option<&'a [u8]>,
    /// `None` is a tombstone.
    pub value: Option<&'a [u8]>,
    /// Record headers, written in this order.
    pub headers: &'a [Header],
    /// As [`ProduceRecord::timestamp`].
    pub timestamp: Option<i64>,
}

impl<'a> RecordRef<'a> {
    /// A record with no headers, stamped when its batch is built.
    pub fn new(key: Option<&'a [u8]>, value: Option<&'a [u8]>) -> Self {
        Self { key, value, headers: &[], timestamp: None }
    }
}

/// A record [`Producer::send`](crate::Producer::send) and
/// [`send_all`](crate::Producer::send_all) take: owned ([`ProduceRecord`]) or borrowed
/// ([`RecordRef`]).
pub trait AsRecordRef {
    /// The record's parts, borrowed.
    fn as_record_ref(&self) -> RecordRef<'_>;
}

impl AsRecordRef for ProduceRecord {
    fn as_record_ref(&self) -> RecordRef<'_> {
        RecordRef {
            key: self.key.as_deref(),
            value: self.value.as_deref(),
            headers: &self.headers,
            timestamp: self.timestamp,
        }
    }
}

impl AsRecordRef for RecordRef<'_> {
    fn as_record_ref(&self) -> RecordRef<'_> {
        *self
    }
}

impl<T: AsRecordRef + ?Sized> AsRecordRef for &T {
    fn as_record_ref(&self) -> RecordRef<'_> {
        (**self).as_record_ref()
    }
}

/// What a leader said about one partition's batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Produced {
    /// Offset of the batch's first record; the others follow in order. `None` with
    /// [`Acks::NoResponse`].
    pub base_offset: Option<i64>,
    /// The broker's append time for a LogAppendTime topic (ms since the epoch), else `None`.
    pub log_append_time: Option<i64>,
    /// The partition's log start offset after the append (Produce v5+).
    pub log_start_offset: Option<i64>,
}

/// The answer to [`Client::produce_by_key`].
#[derive(Debug, Clone)]
pub struct ProducedByKey {
    /// For each input record, in input order, the partition it was sent to. Within a
    /// partition the records keep their input order, so the n-th record sent to partition p
    /// has offset `results[p].base_offset + n`.
    pub partitions: Vec<i32>,
    /// One result per partition that got records.
    pub results: PartitionResults<Produced>,
}

/// Null-key records of one [`Client::produce_by_key`] call all go to one partition; this
/// counter moves that partition on by one per call (round robin over calls, sticky within a
/// call, like the Java client's sticky partitioner filling one batch at a time).
static NULL_KEY_ROUND_ROBIN: AtomicU32 = AtomicU32::new(0);

impl Client {
    /// Appends `records` to one partition as one batch; the batch's base offset (`None` with
    /// acks=0). Sent to the partition's leader and retried as
    /// [`produce_batches`](Self::produce_batches) describes (at least once, not idempotent).
    pub async fn produce(
        &self,
        topic: &str,
        partition: i32,
        records: Vec<ProduceRecord>,
        options: &ProduceOptions,
    ) -> Result<Produced, ClientError> {
        let tp = TopicPartition::new(topic, partition);
        let mut results = self.produce_batches(vec![(tp.clone(), records)], options).await;
        results
            .remove(&tp)
            .unwrap_or_else(|| Err(ClientError::InvalidArgument { message: format!("no result for {tp}") }))
    }

    /// Appends each partition's records as one batch per partition (records given for the
    /// same partition twice are joined, in order), one Produce request per leader broker, in
    /// parallel. One result per partition.
    ///
    /// Retried until `options.timeout`, after a metadata refresh where the error calls for one.
    /// Not idempotent: a partition whose request got no answer (timeout, connection cut) is sent
    /// again, so its records may be appended twice (at least once). Errors that say the broker
    /// appended nothing (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, ...) are retried
    /// without that risk.
    pub async fn produce_batches(
        &self,
        batches: Vec<(TopicPartition, Vec<ProduceRecord>)>,
        options: &ProduceOptions,
    ) -> PartitionResults<Produced> {
        let mut joined: BTreeMap<TopicPartition, Vec<ProduceRecord>> = BTreeMap::new();
        for (tp, records) in batches {
            joined.entry(tp).or_default().extend(records);
        }
        let now = now_ms();
        let mut results: PartitionResults<Produced> = BTreeMap::new();
        let mut encoded: HashMap<TopicPartition, Bytes> = HashMap::new();
        for (tp, records) in joined {
            match encode_batch(&tp, records, options.compression, now) {
                Ok(bytes) => {
                    encoded.insert(tp, bytes);
                }
                Err(e) => {
                    results.insert(tp, Err(e));
                }
            }
        }
        let partitions: Vec<TopicPartition> = encoded.keys().cloned().collect();
        let encoded = &encoded;
        let acks = options.acks;
        let timeout_ms = i32::try_from(options.timeout.as_millis()).unwrap_or(i32::MAX);
        let routed = self
            .route_by_leader(produce::SPEC.key, &partitions, options.timeout, |target, batch| async move {
                let conn = self.connection(&target.broker).await?;
                let version = conn.versions.choose(&produce::SPEC, &target.broker)?;
                crate::kafka_release::PRODUCE_RECORD_BATCHES.check(version, &target.broker)?;
                let tps: Vec<TopicPartition> = batch.into_iter().map(|(tp, _)| tp).collect();
                let ids = topic_ids_of(self, tps.iter().map(|tp| &*tp.topic));
                let request = build_request(&tps, encoded, &ids, acks, timeout_ms);
                if acks == Acks::NoResponse {
                    self.send_built_without_response(&target.broker, |_| request).await?;
                    let sent = Produced { base_offset: None, log_append_time: None, log_start_offset: None };
                    return Ok(tps.into_iter().map(|tp| (tp, Ok(sent))).collect());
                }
                let (version, response) = self.send_built(&target.broker, |_| request).await?;
                let mut answers: Vec<(TopicPartition, LeaderAnswer<Produced>)> = Vec::new();
                for topic in response.responses {
                    let Some(name) = topic_name(topic.name, topic.topic_id, &ids) else { continue };
                    for p in topic.partition_responses {
                        let tp = TopicPartition::new(name.clone(), p.index);
                        let answer = if p.error_code.is_ok() {
                            Ok(Produced {
                                base_offset: Some(p.base_offset),
                                log_append_time: p.log_append_time_ms.filter(|t| *t >= 0),
                                log_start_offset: p.log_start_offset.filter(|o| *o >= 0 && version >= 5),
                            })
                        } else {
                            Err(p.error_code)
                        };
                        answers.push((tp, answer));
                    }
                }
                Ok(answers)
            })
            .await;
        results.extend(routed);
        results
    }

    /// Appends `records` to `topic`, each on the partition the Java client's default
    /// partitioner picks for its key: `toPositive(murmur2(key)) % partitions`. Records with a
    /// null key all go to one partition per call, moving round robin from call to call. The
    /// partition count is read from fresh metadata. Fails as a whole only when the topic's
    /// partitions cannot be known.
    pub async fn produce_by_key(
        &self,
        topic: &str,
        records: Vec<ProduceRecord>,
        options: &ProduceOptions,
    ) -> Result<ProducedByKey, ClientError> {
        let metadata = self.refresh_metadata(&[topic.to_owned()]).await?;
        let count = metadata.partition_count(topic)?;
        let null_key_partition =
            (NULL_KEY_ROUND_ROBIN.fetch_add(1, Ordering::Relaxed) % count.unsigned_abs()) as i32;
        let mut partitions = Vec::with_capacity(records.len());
        let mut by_partition: BTreeMap<i32, Vec<ProduceRecord>> = BTreeMap::new();
        for record in records {
            let partition = match &record.key {
                Some(key) => partition_for_key(key, count).unwrap_or(null_key_partition),
                None => null_key_partition,
            };
            partitions.push(partition);
            by_partition.entry(partition).or_default().push(record);
        }
        let batches =
            by_partition.into_iter().map(|(p, records)| (TopicPartition::new(topic, p), records)).collect();
        let results = self.produce_batches(batches, options).await;
        Ok(ProducedByKey { partitions, results })
    }
}

/// One batch for one partition: offsets 0.., the first record's timestamp as the base.
fn encode_batch(
    tp: &TopicPartition,
    records: Vec<ProduceRecord>,
    compression: Compression,
    now: i64,
) -> Result<Bytes, ClientError> {
    if records.is_empty() {
        return Err(ClientError::InvalidArgument { message: format!("no records to produce to {tp}") });
    }
    if i32::try_from(records.len()).is_err() {
        return Err(ClientError::InvalidArgument {
            message: format!("{} records for {tp} do not fit one batch", records.len()),
        });
    }
    let base_timestamp = records.first().and_then(|r| r.timestamp).unwrap_or(now);
    let records: Vec<Record> = records
        .into_iter()
        .enumerate()
        .map(|(i, r)| Record {
            attributes: 0,
            timestamp_delta: r.timestamp.unwrap_or(now).saturating_sub(base_timestamp),
            offset_delta: i as i32,
            key: r.key,
            value: r.value,
            headers: r.headers,
        })
        .collect();
    RecordBatch::new(0, base_timestamp, compression, records)
        .to_bytes()
        .map_err(|source| ClientError::RecordEncode { context: tp.to_string(), source })
}

/// The cached topic ids of `names` only (Produce v13 and Fetch v13 name topics by id): a
/// request names a few of the cluster's topics, each once per partition, and each name is
/// looked up once.
pub(crate) fn topic_ids_of<'a>(
    client: &Client,
    names: impl IntoIterator<Item = &'a str>,
) -> HashMap<String, Uuid> {
    let mut ids = HashMap::new();
    let Some(metadata) = client.cached_metadata() else { return ids };
    for name in names {
        if ids.contains_key(name) {
            continue;
        }
        if let Some(id) = metadata.topic(name).and_then(|t| t.topic_id) {
            ids.insert(name.to_owned(), id);
        }
    }
    ids
}

/// A response topic's name: given (v0–12) or looked up by id (v13+).
pub(crate) fn topic_name(
    name: Option<String>,
    id: Option<Uuid>,
    ids: &HashMap<String, Uuid>,
) -> Option<String> {
    name.or_else(|| {
        let id = id?;
        ids.iter().find(|(_, v)| **v == id).map(|(k, _)| k.clone())
    })
}

fn build_request(
    tps: &[TopicPartition],
    encoded: &HashMap<TopicPartition, Bytes>,
    ids: &HashMap<String, Uuid>,
    acks: Acks,
    timeout_ms: i32,
) -> ProduceRequest {
    produce_request(tps.iter().map(|tp| (tp, encoded.get(tp).cloned())), ids, acks, timeout_ms)
}

/// One Produce request: each partition's record batch, grouped by topic in name order, with
/// each topic's id where `ids` has it (Produce v13+ names topics by id).
pub(super) fn produce_request<'a>(
    parts: impl IntoIterator<Item = (&'a TopicPartition, Option<Bytes>)>,
    ids: &HashMap<String, Uuid>,
    acks: Acks,
    timeout_ms: i32,
) -> ProduceRequest {
    let mut topics: BTreeMap<&str, Vec<PartitionProduceData>> = BTreeMap::new();
    for (tp, records) in parts {
        topics.entry(&*tp.topic).or_default().push(PartitionProduceData {
            index: tp.partition,
            records,
            tagged_fields: TaggedFields::default(),
        });
    }
    ProduceRequest {
        transactional_id: None,
        acks: acks.wire(),
        timeout_ms,
        topic_data: topics
            .into_iter()
            .map(|(name, partition_data)| TopicProduceData {
                name: Some(name.to_owned()),
                topic_id: ids.get(name).copied(),
                partition_data,
                tagged_fields: TaggedFields::default(),
            })
            .collect(),
        tagged_fields: TaggedFields::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_wire::protocol::records::DecodeOptions;

    #[test]
    fn acks_round_trip_through_their_wire_values() {
        for acks in [Acks::All, Acks::Leader, Acks::NoResponse] {
            assert_eq!(Acks::from_wire(acks.wire()), Some(acks));
        }
        assert_eq!(Acks::from_wire(2), None);
        assert_eq!(Acks::from_wire(-2), None);
    }

    #[test]
    fn a_batch_keeps_record_order_timestamps_and_headers() {
        let tp = TopicPartition::new("t", 0);
        let records = vec![
            ProduceRecord {
                key: Some(Bytes::from_static(b"k1")),
                value: Some(Bytes::from_static(b"v1")),
                headers: vec![Header { key: "h".to_owned(), value: Some(Bytes::from_static(b"x")) }],
                timestamp: Some(1_000),
            },
            // Earlier than the first: the delta is negative, as Java allows.
            ProduceRecord { timestamp: Some(400), ..ProduceRecord::new(None, None) },
            ProduceRecord::new(Some(Bytes::new()), Some(Bytes::from_static(b"v3"))),
        ];
        let bytes = encode_batch(&tp, records, Compression::None, 5_000).unwrap();
        let batch = RecordBatch::decode(bytes, &DecodeOptions::default()).unwrap();
        assert_eq!(batch.base_timestamp, 1_000);
        assert_eq!(batch.max_timestamp, 5_000);
        assert_eq!(batch.last_offset_delta, 2);
        let deltas: Vec<(i32, i64)> =
            batch.records.iter().map(|r| (r.offset_delta, r.timestamp_delta)).collect();
        assert_eq!(deltas, vec![(0, 0), (1, -600), (2, 4_000)]);
        assert_eq!(batch.records[0].headers[0].key, "h");
        assert_eq!(batch.records[1].key, None);
        assert_eq!(batch.records[2].key.as_deref(), Some(&b""[..]));
        assert_eq!(batch.producer_id, -1);
    }

    #[test]
    fn an_empty_batch_is_refused_before_anything_is_sent() {
        let err = encode_batch(&TopicPartition::new("t", 3), Vec::new(), Compression::None, 0).unwrap_err();
        assert!(matches!(err, ClientError::InvalidArgument { .. }), "{err}");
        assert!(err.to_string().contains("t-3"));
    }

    #[test]
    fn topics_are_named_by_id_when_the_response_has_no_names() {
        let id = Uuid([7; 16]);
        let ids: HashMap<String, Uuid> = [("orders".to_owned(), id)].into_iter().collect();
        assert_eq!(topic_name(None, Some(id), &ids).as_deref(), Some("orders"));
        assert_eq!(topic_name(Some("x".to_owned()), Some(id), &ids).as_deref(), Some("x"));
        assert_eq!(topic_name(None, Some(Uuid([1; 16])), &ids), None);
    }

    #[test]
    fn one_request_groups_partitions_by_topic() {
        let a0 = TopicPartition::new("a", 0);
        let a1 = TopicPartition::new("a", 1);
        let b0 = TopicPartition::new("b", 0);
        let encoded: HashMap<TopicPartition, Bytes> =
            [&a0, &a1, &b0].into_iter().map(|tp| (tp.clone(), Bytes::from_static(b"batch"))).collect();
        let request = build_request(&[a0, b0, a1], &encoded, &HashMap::new(), Acks::Leader, 1_500);
        assert_eq!(request.acks, 1);
        assert_eq!(request.timeout_ms, 1_500);
        let shape: Vec<(Option<&str>, Vec<i32>)> = request
            .topic_data
            .iter()
            .map(|t| (t.name.as_deref(), t.partition_data.iter().map(|p| p.index).collect()))
            .collect();
        assert_eq!(shape, vec![(Some("a"), vec![0, 1]), (Some("b"), vec![0])]);
    }
}
