//! ListOffsets (key 2): the offset for a timestamp per partition — or, with the special
//! timestamps in [`SpecialTimestamp`], the log's earliest / latest / max-timestamp offsets.
//!
//! v0 (the SimpleConsumer era) asks for up to `max_num_offsets` segment start offsets and gets
//! them back as `old_style_offsets`; v1+ returns one offset plus its timestamp. Must be sent to
//! the partition leader (except with replica id −2, "debug").

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;

/// ListOffsets's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::LIST_OFFSETS,
    name: "ListOffsets",
    versions: VersionRange::new(0, 10),
    flexible_from: Some(6),
};

/// The replica id a consumer sends.
pub const CONSUMER_REPLICA_ID: i32 = -1;
/// The replica id of a "debug" request: served by followers too, reads up to the log end.
pub const DEBUG_REPLICA_ID: i32 = -2;

/// `isolation_level` 0: every record is visible; "latest" is the high watermark.
pub const READ_UNCOMMITTED: i8 = 0;
/// `isolation_level` 1: "latest" is the last stable offset (before any open transaction).
pub const READ_COMMITTED: i8 = 1;

/// A request timestamp with a special meaning, and the first version a broker accepts it in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecialTimestamp {
    /// The value sent in `timestamp` (−1 … −5).
    pub timestamp: i64,
    /// The lowest ListOffsets version a broker accepts this value in.
    pub min_version: i16,
}

impl SpecialTimestamp {
    /// The next offset to be written: high watermark (read_uncommitted) or last stable offset
    /// (read_committed).
    pub const LATEST: Self = Self { timestamp: -1, min_version: 0 };
    /// The log start offset.
    pub const EARLIEST: Self = Self { timestamp: -2, min_version: 0 };
    /// The offset of the record with the largest timestamp (KIP-734).
    pub const MAX_TIMESTAMP: Self = Self { timestamp: -3, min_version: 7 };
    /// The first offset still on the broker's local disk, with tiered storage (KIP-405).
    pub const EARLIEST_LOCAL: Self = Self { timestamp: -4, min_version: 8 };
    /// The last offset uploaded to tiered storage (KIP-1005).
    pub const LATEST_TIERED: Self = Self { timestamp: -5, min_version: 9 };

    /// Every special timestamp, in the order −1, −2, −3, −4, −5.
    pub const ALL: [Self; 5] =
        [Self::LATEST, Self::EARLIEST, Self::MAX_TIMESTAMP, Self::EARLIEST_LOCAL, Self::LATEST_TIERED];

    /// The lowest version that can carry `timestamp`: 0 for a real timestamp (≥ 0), the special
    /// value's minimum for −1…−5, and `None` for any other negative value (no broker accepts it).
    pub fn min_version_for(timestamp: i64) -> Option<i16> {
        if timestamp >= 0 {
            return Some(0);
        }
        Self::ALL.iter().find(|s| s.timestamp == timestamp).map(|s| s.min_version)
    }
}

kafka_message! {
    /// A ListOffsets request (v0–v10).
    pub struct ListOffsetsRequest {
        /// [`CONSUMER_REPLICA_ID`] (−1) for a client; [`DEBUG_REPLICA_ID`] (−2) for debug reads.
        replica_id: i32,
        /// Added in v2: [`READ_UNCOMMITTED`] or [`READ_COMMITTED`].
        [since 2] isolation_level: Option<i8>,
        /// Each topic in the request.
        topics: Vec<ListOffsetsTopic>,
        /// Added in v10: how long the broker may wait on remote (tiered) storage, in ms.
        [since 10] timeout_ms: Option<i32>,
    }
}

kafka_message! {
    /// An element of [`ListOffsetsRequest::topics`]: each topic in the request.
    pub struct ListOffsetsTopic {
        /// The topic name.
        name: String,
        /// Each partition in the request.
        partitions: Vec<ListOffsetsPartition>,
    }
}

kafka_message! {
    /// An element of [`ListOffsetsTopic::partitions`]: each partition in the request.
    pub struct ListOffsetsPartition {
        /// The partition index.
        partition_index: i32,
        /// Added in v4; −1 skips the leader-epoch fencing check.
        [since 4] current_leader_epoch: Option<i32>,
        /// Milliseconds since the epoch, or one of the [`SpecialTimestamp`] values.
        timestamp: i64,
        /// v0 only: the most segment offsets to return (Kafka's default is 1).
        [since 0 until 0] max_num_offsets: Option<i32>,
    }
}

impl Body for ListOffsetsRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.i32(self.replica_id);
        if version >= 2 {
            e.i8(self.isolation_level.unwrap_or(READ_UNCOMMITTED));
        }
        e.array(&self.topics, "topics", |e, t| {
            e.string(&t.name, "topics.name")?;
            e.array(&t.partitions, "topics.partitions", |e, p| {
                e.i32(p.partition_index);
                if version >= 4 {
                    e.i32(p.current_leader_epoch.unwrap_or(-1));
                }
                e.i64(p.timestamp);
                if version == 0 {
                    e.i32(p.max_num_offsets.unwrap_or(1));
                }
                e.tagged_fields(&p.tagged_fields, "topics.partitions.tagged_fields", version)
            })?;
            e.tagged_fields(&t.tagged_fields, "topics.tagged_fields", version)
        })?;
        if version >= 10 {
            e.i32(self.timeout_ms.unwrap_or(0));
        }
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let replica_id = d.i32("replica_id")?;
        let isolation_level = if version >= 2 { Some(d.i8("isolation_level")?) } else { None };
        let topics = d.array("topics", 2, |d| {
            Ok(ListOffsetsTopic {
                name: d.string("topics.name")?,
                partitions: d.array("topics.partitions", 12, |d| {
                    Ok(ListOffsetsPartition {
                        partition_index: d.i32("topics.partitions.partition_index")?,
                        current_leader_epoch: if version >= 4 {
                            Some(d.i32("topics.partitions.current_leader_epoch")?)
                        } else {
                            None
                        },
                        timestamp: d.i64("topics.partitions.timestamp")?,
                        max_num_offsets: if version == 0 {
                            Some(d.i32("topics.partitions.max_num_offsets")?)
                        } else {
                            None
                        },
                        tagged_fields: d.tagged_fields("topics.partitions.tagged_fields")?,
                    })
                })?,
                tagged_fields: d.tagged_fields("topics.tagged_fields")?,
            })
        })?;
        let timeout_ms = if version >= 10 { Some(d.i32("timeout_ms")?) } else { None };
        Ok(Self {
            replica_id,
            isolation_level,
            topics,
            timeout_ms,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

impl Request for ListOffsetsRequest {
    type Response = ListOffsetsResponse;
}

kafka_message! {
    /// A ListOffsets response (v0–v10).
    pub struct ListOffsetsResponse {
        /// Added in v2.
        [since 2] throttle_time_ms: Option<i32>,
        /// Each topic in the response.
        topics: Vec<ListOffsetsTopicResponse>,
    }
}

kafka_message! {
    /// An element of [`ListOffsetsResponse::topics`]: each topic in the response.
    pub struct ListOffsetsTopicResponse {
        /// The topic name.
        name: String,
        /// Each partition in the response.
        partitions: Vec<ListOffsetsPartitionResponse>,
    }
}

kafka_message! {
    /// An element of [`ListOffsetsTopicResponse::partitions`]: each partition in the response.
    pub struct ListOffsetsPartitionResponse {
        /// The partition index.
        partition_index: i32,
        /// The partition error code, or 0 if there was no error.
        error_code: ErrorCode,
        /// v0 only: segment start offsets, newest first (the log end offset leads for "latest").
        /// Boxed so the v1+ partition, the one every current broker sends, fits one cache line:
        /// a `Vec` here made 10,000-partition responses decode twice as slowly.
        #[allow(clippy::box_collection)]
        [since 0 until 0] old_style_offsets: Option<Box<Vec<i64>>>,
        /// Added in v1: the timestamp of the returned offset, −1 for the special timestamps.
        [since 1] timestamp: Option<i64>,
        /// Added in v1: −1 when there is none (e.g. no record at or after the timestamp).
        [since 1] offset: Option<i64>,
        /// Added in v4: the leader epoch of the returned offset, −1 if unknown.
        [since 4] leader_epoch: Option<i32>,
    }
}

impl Body for ListOffsetsResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        if version >= 2 {
            e.i32(self.throttle_time_ms.unwrap_or(0));
        }
        e.array(&self.topics, "topics", |e, t| {
            e.string(&t.name, "topics.name")?;
            e.array(&t.partitions, "topics.partitions", |e, p| {
                e.i32(p.partition_index);
                e.i16(p.error_code.0);
                if version == 0 {
                    e.i64_array(
                        p.old_style_offsets.as_deref().map_or(&[][..], Vec::as_slice),
                        "topics.partitions.old_style_offsets",
                    )?;
                } else {
                    e.i64(p.timestamp.unwrap_or(-1));
                    e.i64(p.offset.unwrap_or(-1));
                }
                if version >= 4 {
                    e.i32(p.leader_epoch.unwrap_or(-1));
                }
                e.tagged_fields(&p.tagged_fields, "topics.partitions.tagged_fields", version)
            })?;
            e.tagged_fields(&t.tagged_fields, "topics.tagged_fields", version)
        })?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = if version >= 2 { Some(d.i32("throttle_time_ms")?) } else { None };
        let topics = d.array("topics", 2, |d| {
            Ok(ListOffsetsTopicResponse {
                name: d.string("topics.name")?,
                partitions: d.array("topics.partitions", 7, |d| {
                    let partition_index = d.i32("topics.partitions.partition_index")?;
                    let error_code = ErrorCode(d.i16("topics.partitions.error_code")?);
                    let (old_style_offsets, timestamp, offset) = if version == 0 {
                        (Some(Box::new(d.i64_array("topics.partitions.old_style_offsets")?)), None, None)
                    } else {
                        let timestamp = d.i64("topics.partitions.timestamp")?;
                        (None, Some(timestamp), Some(d.i64("topics.partitions.offset")?))
                    };
                    let leader_epoch =
                        if version >= 4 { Some(d.i32("topics.partitions.leader_epoch")?) } else { None };
                    Ok(ListOffsetsPartitionResponse {
                        partition_index,
                        error_code,
                        old_style_offsets,
                        timestamp,
                        offset,
                        leader_epoch,
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
    use bytes::Bytes;
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::error::DecodeErrorKind;
    use crate::protocol::messages::test_util::{
        array, error_code, gated, round_trip_every_version, string, tagged,
    };

    fn request(v: i16) -> impl Strategy<Value = ListOffsetsRequest> {
        let flexible = SPEC.is_flexible(v);
        let partition = (
            any::<i32>(),
            gated(v >= 4, any::<i32>()),
            any::<i64>(),
            gated(v == 0, any::<i32>()),
            tagged(flexible),
        )
            .prop_map(
                |(partition_index, current_leader_epoch, timestamp, max_num_offsets, tagged_fields)| {
                    ListOffsetsPartition {
                        partition_index,
                        current_leader_epoch,
                        timestamp,
                        max_num_offsets,
                        tagged_fields,
                    }
                },
            );
        let topic =
            (string(), array(partition), tagged(flexible)).prop_map(|(name, partitions, tagged_fields)| {
                ListOffsetsTopic { name, partitions, tagged_fields }
            });
        (
            any::<i32>(),
            gated(v >= 2, any::<i8>()),
            array(topic),
            gated(v >= 10, any::<i32>()),
            tagged(flexible),
        )
            .prop_map(|(replica_id, isolation_level, topics, timeout_ms, tagged_fields)| {
                ListOffsetsRequest { replica_id, isolation_level, topics, timeout_ms, tagged_fields }
            })
    }

    fn response(v: i16) -> impl Strategy<Value = ListOffsetsResponse> {
        let flexible = SPEC.is_flexible(v);
        let partition = (
            any::<i32>(),
            error_code(),
            gated(v == 0, array(any::<i64>()).prop_map(Box::new)),
            gated(v >= 1, any::<i64>()),
            gated(v >= 1, any::<i64>()),
            gated(v >= 4, any::<i32>()),
            tagged(flexible),
        )
            .prop_map(
                |(
                    partition_index,
                    error_code,
                    old_style_offsets,
                    timestamp,
                    offset,
                    leader_epoch,
                    tagged_fields,
                )| {
                    ListOffsetsPartitionResponse {
                        partition_index,
                        error_code,
                        old_style_offsets,
                        timestamp,
                        offset,
                        leader_epoch,
                        tagged_fields,
                    }
                },
            );
        let topic =
            (string(), array(partition), tagged(flexible)).prop_map(|(name, partitions, tagged_fields)| {
                ListOffsetsTopicResponse { name, partitions, tagged_fields }
            });
        (gated(v >= 2, any::<i32>()), array(topic), tagged(flexible)).prop_map(
            |(throttle_time_ms, topics, tagged_fields)| ListOffsetsResponse {
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

    #[test]
    fn a_v0_response_carries_an_array_of_segment_offsets() {
        #[rustfmt::skip]
        let body = [
            0, 0, 0, 1, // topics: 1
            0, 1, b't', // name "t"
            0, 0, 0, 1, // partitions: 1
            0, 0, 0, 3, // partition_index 3
            0, 0, // error_code NONE
            0, 0, 0, 2, // old_style_offsets: 2
            0, 0, 0, 0, 0, 0, 0, 42, // log end offset
            0, 0, 0, 0, 0, 0, 0, 0, // first segment's base offset
        ];
        let decoded = ListOffsetsResponse::decode_body(Bytes::copy_from_slice(&body), 0).unwrap();
        let p = &decoded.topics[0].partitions[0];
        assert_eq!(decoded.topics[0].name, "t");
        assert_eq!((p.partition_index, p.error_code), (3, ErrorCode::NONE));
        assert_eq!(p.old_style_offsets.as_deref().map(Vec::as_slice), Some(&[42, 0][..]));
        assert_eq!((p.timestamp, p.offset, p.leader_epoch), (None, None, None));
        assert_eq!(decoded.encode_body(0).unwrap(), body);
    }

    #[test]
    fn a_v0_request_asks_for_max_num_offsets() {
        let request = ListOffsetsRequest {
            replica_id: CONSUMER_REPLICA_ID,
            topics: vec![ListOffsetsTopic {
                name: "t".into(),
                partitions: vec![ListOffsetsPartition {
                    partition_index: 0,
                    timestamp: SpecialTimestamp::LATEST.timestamp,
                    max_num_offsets: Some(5),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        #[rustfmt::skip]
        let expected = [
            0xff, 0xff, 0xff, 0xff, // replica_id -1
            0, 0, 0, 1, 0, 1, b't', // topics: 1, name "t"
            0, 0, 0, 1, 0, 0, 0, 0, // partitions: 1, index 0
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // timestamp -1 (latest)
            0, 0, 0, 5, // max_num_offsets
        ];
        assert_eq!(request.encode_body(0).unwrap(), expected);
    }

    #[test]
    fn a_v10_request_is_compact_and_ends_with_timeout_ms() {
        let request = ListOffsetsRequest {
            replica_id: CONSUMER_REPLICA_ID,
            isolation_level: Some(READ_COMMITTED),
            topics: vec![ListOffsetsTopic {
                name: "t".into(),
                partitions: vec![ListOffsetsPartition {
                    partition_index: 1,
                    current_leader_epoch: Some(7),
                    timestamp: SpecialTimestamp::MAX_TIMESTAMP.timestamp,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            timeout_ms: Some(30_000),
            ..Default::default()
        };
        #[rustfmt::skip]
        let expected = [
            0xff, 0xff, 0xff, 0xff, // replica_id -1
            1, // isolation_level read_committed
            2, 2, b't', // topics: 1 (compact), name "t"
            2, 0, 0, 0, 1, // partitions: 1, index 1
            0, 0, 0, 7, // current_leader_epoch
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfd, // timestamp -3 (max timestamp)
            0, // partition tags
            0, // topic tags
            0, 0, 0x75, 0x30, // timeout_ms 30000
            0, // body tags
        ];
        assert_eq!(request.encode_body(10).unwrap(), expected);
        assert_eq!(ListOffsetsRequest::decode_body(Bytes::copy_from_slice(&expected), 10).unwrap(), request);
    }

    #[test]
    fn special_timestamps_need_their_minimum_version() {
        assert_eq!(SpecialTimestamp::min_version_for(1_700_000_000_000), Some(0));
        assert_eq!(SpecialTimestamp::min_version_for(-1), Some(0));
        assert_eq!(SpecialTimestamp::min_version_for(-2), Some(0));
        assert_eq!(SpecialTimestamp::min_version_for(-3), Some(7));
        assert_eq!(SpecialTimestamp::min_version_for(-4), Some(8));
        assert_eq!(SpecialTimestamp::min_version_for(-5), Some(9));
        assert_eq!(SpecialTimestamp::min_version_for(-6), None);
    }

    #[test]
    fn a_huge_topic_count_in_a_seven_byte_body_is_rejected_before_allocating() {
        // The peers' benchmark case: a v1 body whose topics array claims 2^31 − 1 elements.
        let body = Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 0, 0, 0]);
        let err = ListOffsetsResponse::decode_body(body, 1).unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::LengthExceedsInput { claimed: 0x7fff_ffff, available: 3 });
        assert_eq!((err.field, err.offset), ("topics", 4));
    }

    #[test]
    fn a_huge_partition_count_in_a_compact_body_is_rejected_before_allocating() {
        // v6: one topic "t", then a partitions count of u32::MAX − 1 as a 5-byte uvarint.
        let body = Bytes::from_static(&[0, 0, 0, 0, 2, 2, b't', 0xff, 0xff, 0xff, 0xff, 0x0f, 0]);
        let err = ListOffsetsResponse::decode_body(body, 6).unwrap_err();
        assert!(matches!(err.kind, DecodeErrorKind::LengthExceedsInput { .. }), "{err}");
        assert_eq!(err.field, "topics.partitions");
    }
}
