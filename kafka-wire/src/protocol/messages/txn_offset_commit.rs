//! TxnOffsetCommit (key 28): a transactional producer commits a consumer group's offsets as part
//! of its open transaction, sent to the group's coordinator after AddOffsetsToTxn. The offsets
//! become visible when the transaction commits and are dropped when it aborts. A producer that
//! is not a member of the group (kwire-stream's exactly-once mode) sends generation −1 and an
//! empty member id (v3+). v5 is the transactions-version-2 form (KIP-890); a version-1 producer
//! sends v0–v4.

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;

/// TxnOffsetCommit's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::TXN_OFFSET_COMMIT,
    name: "TxnOffsetCommit",
    versions: VersionRange::new(0, 5),
    flexible_from: Some(3),
};

kafka_message! {
    /// A TxnOffsetCommit request (v0–v5).
    pub struct TxnOffsetCommitRequest {
        /// The transactional id of the producer.
        transactional_id: String,
        /// The group whose offsets are committed.
        group_id: String,
        /// The producer id InitProducerId gave for that transactional id.
        producer_id: i64,
        /// The producer's epoch.
        producer_epoch: i16,
        /// Added in v3: the group's generation, −1 for a producer outside the group (written −1
        /// when `None`).
        [since 3] generation_id: Option<i32>,
        /// Added in v3: the member id, empty for a producer outside the group (written empty when
        /// `None`).
        [since 3] member_id: Option<String>,
        /// Added in v3 (nullable): the static member id.
        [nullable since 3] group_instance_id: Option<String>,
        /// The offsets, by topic.
        topics: Vec<TxnOffsetCommitRequestTopic>,
    }
}

kafka_message! {
    /// An element of [`TxnOffsetCommitRequest::topics`].
    pub struct TxnOffsetCommitRequestTopic {
        /// The topic name.
        name: String,
        /// The partitions' offsets.
        partitions: Vec<TxnOffsetCommitRequestPartition>,
    }
}

kafka_message! {
    /// An element of [`TxnOffsetCommitRequestTopic::partitions`].
    pub struct TxnOffsetCommitRequestPartition {
        /// The partition index.
        partition_index: i32,
        /// The next offset to consume.
        committed_offset: i64,
        /// Added in v2: the leader epoch of the last consumed record, −1 when unknown (written −1
        /// when `None`).
        [since 2] committed_leader_epoch: Option<i32>,
        /// Metadata stored with the offset (nullable).
        committed_metadata: Option<String>,
    }
}

impl Body for TxnOffsetCommitRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.string(&self.transactional_id, "transactional_id")?;
        e.string(&self.group_id, "group_id")?;
        e.i64(self.producer_id);
        e.i16(self.producer_epoch);
        if version >= 3 {
            e.i32(self.generation_id.unwrap_or(-1));
            e.string(self.member_id.as_deref().unwrap_or_default(), "member_id")?;
            e.nullable_string(self.group_instance_id.as_deref(), "group_instance_id")?;
        }
        e.array(&self.topics, "topics", |e, t| {
            e.string(&t.name, "topics.name")?;
            e.array(&t.partitions, "topics.partitions", |e, p| {
                e.i32(p.partition_index);
                e.i64(p.committed_offset);
                if version >= 2 {
                    e.i32(p.committed_leader_epoch.unwrap_or(-1));
                }
                e.nullable_string(p.committed_metadata.as_deref(), "topics.partitions.committed_metadata")?;
                e.tagged_fields(&p.tagged_fields, "topics.partitions.tagged_fields", version)
            })?;
            e.tagged_fields(&t.tagged_fields, "topics.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let transactional_id = d.string("transactional_id")?;
        let group_id = d.string("group_id")?;
        let producer_id = d.i64("producer_id")?;
        let producer_epoch = d.i16("producer_epoch")?;
        let (generation_id, member_id, group_instance_id) = if version >= 3 {
            (
                Some(d.i32("generation_id")?),
                Some(d.string("member_id")?),
                d.nullable_string("group_instance_id")?,
            )
        } else {
            (None, None, None)
        };
        let topics = d.array("topics", 2, |d| {
            Ok(TxnOffsetCommitRequestTopic {
                name: d.string("topics.name")?,
                partitions: d.array("topics.partitions", 13, |d| {
                    Ok(TxnOffsetCommitRequestPartition {
                        partition_index: d.i32("topics.partitions.partition_index")?,
                        committed_offset: d.i64("topics.partitions.committed_offset")?,
                        committed_leader_epoch: if version >= 2 {
                            Some(d.i32("topics.partitions.committed_leader_epoch")?)
                        } else {
                            None
                        },
                        committed_metadata: d.nullable_string("topics.partitions.committed_metadata")?,
                        tagged_fields: d.tagged_fields("topics.partitions.tagged_fields")?,
                    })
                })?,
                tagged_fields: d.tagged_fields("topics.tagged_fields")?,
            })
        })?;
        Ok(Self {
            transactional_id,
            group_id,
            producer_id,
            producer_epoch,
            generation_id,
            member_id,
            group_instance_id,
            topics,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

impl Request for TxnOffsetCommitRequest {
    type Response = TxnOffsetCommitResponse;
}

kafka_message! {
    /// A TxnOffsetCommit response (v0–v5).
    pub struct TxnOffsetCommitResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if
        /// the request did not violate any quota.
        throttle_time_ms: i32,
        /// A result per topic.
        topics: Vec<TxnOffsetCommitResponseTopic>,
    }
}

kafka_message! {
    /// An element of [`TxnOffsetCommitResponse::topics`].
    pub struct TxnOffsetCommitResponseTopic {
        /// The topic name.
        name: String,
        /// A result per partition.
        partitions: Vec<TxnOffsetCommitResponsePartition>,
    }
}

kafka_message! {
    /// An element of [`TxnOffsetCommitResponseTopic::partitions`].
    pub struct TxnOffsetCommitResponsePartition {
        /// The partition index.
        partition_index: i32,
        /// The error code, or 0 if there was no error.
        error_code: ErrorCode,
    }
}

impl Body for TxnOffsetCommitResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.i32(self.throttle_time_ms);
        e.array(&self.topics, "topics", |e, t| {
            e.string(&t.name, "topics.name")?;
            e.array(&t.partitions, "topics.partitions", |e, p| {
                e.i32(p.partition_index);
                e.i16(p.error_code.0);
                e.tagged_fields(&p.tagged_fields, "topics.partitions.tagged_fields", version)
            })?;
            e.tagged_fields(&t.tagged_fields, "topics.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = d.i32("throttle_time_ms")?;
        let topics = d.array("topics", 2, |d| {
            Ok(TxnOffsetCommitResponseTopic {
                name: d.string("topics.name")?,
                partitions: d.array("topics.partitions", 6, |d| {
                    Ok(TxnOffsetCommitResponsePartition {
                        partition_index: d.i32("topics.partitions.partition_index")?,
                        error_code: ErrorCode(d.i16("topics.partitions.error_code")?),
                        tagged_fields: d.tagged_fields("topics.partitions.tagged_fields")?,
                    })
                })?,
                tagged_fields: d.tagged_fields("topics.tagged_fields")?,
            })
        })?;
        Ok(Self { throttle_time_ms, topics, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{
        array, error_code, gated, nullable_string, round_trip_every_version, string, tagged,
    };

    fn request(v: i16) -> impl Strategy<Value = TxnOffsetCommitRequest> {
        let flexible = v >= 3;
        let partition =
            (any::<i32>(), any::<i64>(), gated(v >= 2, any::<i32>()), nullable_string(), tagged(flexible))
                .prop_map(
                    |(
                        partition_index,
                        committed_offset,
                        committed_leader_epoch,
                        committed_metadata,
                        tagged_fields,
                    )| {
                        TxnOffsetCommitRequestPartition {
                            partition_index,
                            committed_offset,
                            committed_leader_epoch,
                            committed_metadata,
                            tagged_fields,
                        }
                    },
                );
        let topic =
            (string(), array(partition), tagged(flexible)).prop_map(|(name, partitions, tagged_fields)| {
                TxnOffsetCommitRequestTopic { name, partitions, tagged_fields }
            });
        let member = (
            gated(v >= 3, any::<i32>()),
            gated(v >= 3, string()),
            if v >= 3 { nullable_string() } else { Just(None).boxed() },
        );
        (string(), string(), any::<i64>(), any::<i16>(), member, array(topic), tagged(flexible)).prop_map(
            |(
                transactional_id,
                group_id,
                producer_id,
                producer_epoch,
                (generation_id, member_id, group_instance_id),
                topics,
                tagged_fields,
            )| TxnOffsetCommitRequest {
                transactional_id,
                group_id,
                producer_id,
                producer_epoch,
                generation_id,
                member_id,
                group_instance_id,
                topics,
                tagged_fields,
            },
        )
    }

    fn response(v: i16) -> impl Strategy<Value = TxnOffsetCommitResponse> {
        let flexible = v >= 3;
        let partition = (any::<i32>(), error_code(), tagged(flexible)).prop_map(
            |(partition_index, error_code, tagged_fields)| TxnOffsetCommitResponsePartition {
                partition_index,
                error_code,
                tagged_fields,
            },
        );
        let topic =
            (string(), array(partition), tagged(flexible)).prop_map(|(name, partitions, tagged_fields)| {
                TxnOffsetCommitResponseTopic { name, partitions, tagged_fields }
            });
        (any::<i32>(), array(topic), tagged(flexible)).prop_map(
            |(throttle_time_ms, topics, tagged_fields)| TxnOffsetCommitResponse {
                throttle_time_ms,
                topics,
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
}
