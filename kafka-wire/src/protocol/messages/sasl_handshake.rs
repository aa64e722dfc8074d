//! SaslHandshake (key 17): pick a SASL mechanism. v0 is followed by raw (unframed) SASL
//! tokens; v1 by SaslAuthenticate requests. Never flexible, so no tagged fields.

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;

/// SaslHandshake's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::SASL_HANDSHAKE,
    name: "SaslHandshake",
    versions: VersionRange::new(0, 1),
    flexible_from: None,
};

kafka_message! {
    /// A SaslHandshake request (v0–v1).
    pub struct SaslHandshakeRequest [no_tagged_fields] {
        /// E.g. "PLAIN", "SCRAM-SHA-512".
        mechanism: String,
    }
}

impl Body for SaslHandshakeRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, _version: i16) -> EncodeResult {
        e.string(&self.mechanism, "mechanism")
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        Ok(Self { mechanism: d.string("mechanism")? })
    }
}

impl Request for SaslHandshakeRequest {
    type Response = SaslHandshakeResponse;
}

kafka_message! {
    /// A SaslHandshake response (v0–v1).
    pub struct SaslHandshakeResponse [no_tagged_fields] {
        /// UNSUPPORTED_SASL_MECHANISM when the broker does not enable the mechanism asked for.
        error_code: ErrorCode,
        /// The mechanisms the broker enables.
        mechanisms: Vec<String>,
    }
}

impl Body for SaslHandshakeResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, _version: i16) -> EncodeResult {
        e.i16(self.error_code.0);
        e.array(&self.mechanisms, "mechanisms", |e, m| e.string(m, "mechanisms"))
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        Ok(Self {
            error_code: ErrorCode(d.i16("error_code")?),
            mechanisms: d.array("mechanisms", 2, |d| d.string("mechanisms"))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{array, error_code, round_trip_every_version, string};

    #[test]
    fn requests_round_trip_at_every_version() {
        round_trip_every_version(file!(), |_| {
            string().prop_map(|mechanism| SaslHandshakeRequest { mechanism })
        });
    }

    #[test]
    fn responses_round_trip_at_every_version() {
        round_trip_every_version(file!(), |_| {
            (error_code(), array(string()))
                .prop_map(|(error_code, mechanisms)| SaslHandshakeResponse { error_code, mechanisms })
        });
    }

    #[test]
    fn a_rejected_mechanism_lists_the_enabled_ones() {
        let body = [0, 33, 0, 0, 0, 1, 0, 5, b'P', b'L', b'A', b'I', b'N'];
        let decoded = SaslHandshakeResponse::decode_body(Bytes::copy_from_slice(&body), 1).unwrap();
        assert_eq!(decoded.error_code, ErrorCode(33));
        assert_eq!(decoded.mechanisms, ["PLAIN"]);
        assert_eq!(decoded.encode_body(1).unwrap(), body);
    }
}
