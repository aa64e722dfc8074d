//! InitProducerId (key 22): a producer id and epoch for an idempotent or transactional producer
//! (KIP-98). Sent to any broker without a transactional id, to the transaction coordinator with
//! one. v3+ also carries the producer's current id and epoch, so an idempotent producer can bump
//! its epoch and keep its id after a sequence error (KIP-360) and a transactional one is fenced
//! only by a newer instance. kwire implements v0–v5; v6's two-phase-commit fields (KIP-939) are
//! not modelled.

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;

/// InitProducerId's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::INIT_PRODUCER_ID,
    name: "InitProducerId",
    versions: VersionRange::new(0, 5),
    flexible_from: Some(2),
};

kafka_message! {
    /// An InitProducerId request (v0–v5).
    pub struct InitProducerIdRequest {
        /// The transactional id; `None` (null) for an idempotent producer without transactions.
        transactional_id: Option<String>,
        /// The longest a transaction may stay open before the coordinator aborts it, in ms (ignored
        /// without a transactional id).
        transaction_timeout_ms: i32,
        /// Added in v3: the producer id the producer holds now, −1 for none (written −1 when
        /// `None`).
        [since 3] producer_id: Option<i64>,
        /// Added in v3: the epoch the producer holds now, −1 for none (written −1 when `None`).
        [since 3] producer_epoch: Option<i16>,
    }
}

impl Body for InitProducerIdRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.nullable_string(self.transactional_id.as_deref(), "transactional_id")?;
        e.i32(self.transaction_timeout_ms);
        if version >= 3 {
            e.i64(self.producer_id.unwrap_or(-1));
            e.i16(self.producer_epoch.unwrap_or(-1));
        }
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let transactional_id = d.nullable_string("transactional_id")?;
        let transaction_timeout_ms = d.i32("transaction_timeout_ms")?;
        let (producer_id, producer_epoch) = if version >= 3 {
            (Some(d.i64("producer_id")?), Some(d.i16("producer_epoch")?))
        } else {
            (None, None)
        };
        Ok(Self {
            transactional_id,
            transaction_timeout_ms,
            producer_id,
            producer_epoch,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

impl Request for InitProducerIdRequest {
    type Response = InitProducerIdResponse;
}

kafka_message! {
    /// An InitProducerId response (v0–v5).
    pub struct InitProducerIdResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if
        /// the request did not violate any quota.
        throttle_time_ms: i32,
        /// The error code, or 0 if there was no error.
        error_code: ErrorCode,
        /// The producer id, −1 with an error.
        producer_id: i64,
        /// The producer epoch, −1 with an error.
        producer_epoch: i16,
    }
}

impl Body for InitProducerIdResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.i32(self.throttle_time_ms);
        e.i16(self.error_code.0);
        e.i64(self.producer_id);
        e.i16(self.producer_epoch);
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        Ok(Self {
            throttle_time_ms: d.i32("throttle_time_ms")?,
            error_code: ErrorCode(d.i16("error_code")?),
            producer_id: d.i64("producer_id")?,
            producer_epoch: d.i16("producer_epoch")?,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{
        error_code, gated, nullable_string, round_trip_every_version, tagged,
    };
    use crate::protocol::tagged::TaggedFields;

    fn request(v: i16) -> impl Strategy<Value = InitProducerIdRequest> {
        (
            nullable_string(),
            any::<i32>(),
            gated(v >= 3, any::<i64>()),
            gated(v >= 3, any::<i16>()),
            tagged(v >= 2),
        )
            .prop_map(
                |(transactional_id, transaction_timeout_ms, producer_id, producer_epoch, tagged_fields)| {
                    InitProducerIdRequest {
                        transactional_id,
                        transaction_timeout_ms,
                        producer_id,
                        producer_epoch,
                        tagged_fields,
                    }
                },
            )
    }

    fn response(v: i16) -> impl Strategy<Value = InitProducerIdResponse> {
        (any::<i32>(), error_code(), any::<i64>(), any::<i16>(), tagged(v >= 2)).prop_map(
            |(throttle_time_ms, error_code, producer_id, producer_epoch, tagged_fields)| {
                InitProducerIdResponse {
                    throttle_time_ms,
                    error_code,
                    producer_id,
                    producer_epoch,
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
    fn an_epoch_bump_request_carries_the_current_id_and_epoch_from_v3() {
        let request = InitProducerIdRequest {
            transactional_id: None,
            transaction_timeout_ms: 60_000,
            producer_id: Some(7),
            producer_epoch: Some(2),
            tagged_fields: TaggedFields::default(),
        };
        #[rustfmt::skip]
        let v3 = [
            0, // transactional_id: null (compact)
            0, 0, 0xea, 0x60, // 60000 ms
            0, 0, 0, 0, 0, 0, 0, 7, // producer_id
            0, 2, // producer_epoch
            0, // no tagged fields
        ];
        assert_eq!(request.encode_body(3).unwrap(), v3);
        // v2 has no room for them: an idempotent producer on such a broker asks for a new id.
        assert_eq!(request.encode_body(2).unwrap(), [0, 0, 0, 0xea, 0x60, 0]);
        let back = InitProducerIdRequest::decode_body(Bytes::copy_from_slice(&v3), 3).unwrap();
        assert_eq!(back, request);
    }
}
