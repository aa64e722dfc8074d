//! EndTxn (key 26): a transactional producer asks its transaction coordinator to commit or
//! abort the open transaction; the coordinator writes the markers to every partition added to
//! it. v5 (transactions version 2, KIP-890) answers with the producer id and the bumped epoch
//! to use next; a producer on version 1 keeps its epoch and sends v0–v4.

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;

/// EndTxn's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::END_TXN,
    name: "EndTxn",
    versions: VersionRange::new(0, 5),
    flexible_from: Some(3),
};

kafka_message! {
    /// An EndTxn request (v0–v5).
    pub struct EndTxnRequest {
        /// The transactional id of the producer.
        transactional_id: String,
        /// The producer id InitProducerId gave for that transactional id.
        producer_id: i64,
        /// The producer's epoch.
        producer_epoch: i16,
        /// `true` to commit the transaction, `false` to abort it.
        committed: bool,
    }
}

impl Body for EndTxnRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.string(&self.transactional_id, "transactional_id")?;
        e.i64(self.producer_id);
        e.i16(self.producer_epoch);
        e.bool(self.committed);
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        Ok(Self {
            transactional_id: d.string("transactional_id")?,
            producer_id: d.i64("producer_id")?,
            producer_epoch: d.i16("producer_epoch")?,
            committed: d.bool("committed")?,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

impl Request for EndTxnRequest {
    type Response = EndTxnResponse;
}

kafka_message! {
    /// An EndTxn response (v0–v5).
    pub struct EndTxnResponse {
        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if
        /// the request did not violate any quota.
        throttle_time_ms: i32,
        /// The error code, or 0 if there was no error.
        error_code: ErrorCode,
        /// Added in v5: the producer id to use next (written −1 when `None`).
        [since 5] producer_id: Option<i64>,
        /// Added in v5: the producer epoch to use next (written −1 when `None`).
        [since 5] producer_epoch: Option<i16>,
    }
}

impl Body for EndTxnResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.i32(self.throttle_time_ms);
        e.i16(self.error_code.0);
        if version >= 5 {
            e.i64(self.producer_id.unwrap_or(-1));
            e.i16(self.producer_epoch.unwrap_or(-1));
        }
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let throttle_time_ms = d.i32("throttle_time_ms")?;
        let error_code = ErrorCode(d.i16("error_code")?);
        let (producer_id, producer_epoch) = if version >= 5 {
            (Some(d.i64("producer_id")?), Some(d.i16("producer_epoch")?))
        } else {
            (None, None)
        };
        Ok(Self {
            throttle_time_ms,
            error_code,
            producer_id,
            producer_epoch,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{error_code, gated, round_trip_every_version, string, tagged};

    fn request(v: i16) -> impl Strategy<Value = EndTxnRequest> {
        (string(), any::<i64>(), any::<i16>(), any::<bool>(), tagged(v >= 3)).prop_map(
            |(transactional_id, producer_id, producer_epoch, committed, tagged_fields)| EndTxnRequest {
                transactional_id,
                producer_id,
                producer_epoch,
                committed,
                tagged_fields,
            },
        )
    }

    fn response(v: i16) -> impl Strategy<Value = EndTxnResponse> {
        (any::<i32>(), error_code(), gated(v >= 5, any::<i64>()), gated(v >= 5, any::<i16>()), tagged(v >= 3))
            .prop_map(|(throttle_time_ms, error_code, producer_id, producer_epoch, tagged_fields)| {
                EndTxnResponse { throttle_time_ms, error_code, producer_id, producer_epoch, tagged_fields }
            })
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
