//! AddOffsetsToTxn (key 25): a transactional producer tells its transaction coordinator that
//! the open transaction will commit offsets of a consumer group, so the group's offsets
//! partition gets the transaction's marker; the offsets themselves follow in TxnOffsetCommit to
//! the group coordinator.

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;

/// AddOffsetsToTxn's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::ADD_OFFSETS_TO_TXN,
    name: "AddOffsetsToTxn",
    versions: VersionRange::new(0, 4),
    flexible_from: Some(3),
};

kafka_message! {
    /// An AddOffsetsToTxn request (v0–v4).
    pub struct AddOffsetsToTxnRequest {
        /// The transactional id of the producer.
        transactional_id: String,
        /// The producer id InitProducerId gave for that transactional id.
        producer_id: i64,
        /// The producer's epoch.
        producer_epoch: i16,
        /// The group whose offsets the transaction will commit.
        group_id: String,
    }
}

impl Body for AddOffsetsToTxnRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.string(&self.transactional_id, "transactional_id")?;
        e.i64(self.producer_id);
        e.i16(self.producer_epoch);
        e.string(&self.group_id, "group_id")?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        Ok(Self {
            transactional_id: d.string("transactional_id")?,
            producer_id: d.i64("producer_id")?,
            producer_epoch: d.i16("producer_epoch")?,
            group_id: d.string("group_id")?,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

impl Request for AddOffsetsToTxnRequest {
    type Response = AddOffsetsToTxnResponse;
}

kafka_message! {
    /// An AddOffsetsToTxn response (v0–v4).
    pub struct AddOffsetsToTxnResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if
        /// the request did not violate any quota.
        throttle_time_ms: i32,
        /// The error code, or 0 if there was no error.
        error_code: ErrorCode,
    }
}

impl Body for AddOffsetsToTxnResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.i32(self.throttle_time_ms);
        e.i16(self.error_code.0);
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        Ok(Self {
            throttle_time_ms: d.i32("throttle_time_ms")?,
            error_code: ErrorCode(d.i16("error_code")?),
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{error_code, round_trip_every_version, string, tagged};

    fn request(v: i16) -> impl Strategy<Value = AddOffsetsToTxnRequest> {
        (string(), any::<i64>(), any::<i16>(), string(), tagged(v >= 3)).prop_map(
            |(transactional_id, producer_id, producer_epoch, group_id, tagged_fields)| {
                AddOffsetsToTxnRequest {
                    transactional_id,
                    producer_id,
                    producer_epoch,
                    group_id,
                    tagged_fields,
                }
            },
        )
    }

    fn response(v: i16) -> impl Strategy<Value = AddOffsetsToTxnResponse> {
        (any::<i32>(), error_code(), tagged(v >= 3)).prop_map(
            |(throttle_time_ms, error_code, tagged_fields)| AddOffsetsToTxnResponse {
                throttle_time_ms,
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
}
