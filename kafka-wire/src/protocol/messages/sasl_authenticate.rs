//! SaslAuthenticate (key 36): one SASL token exchange, framed as a Kafka request (after a v1
//! SaslHandshake). The tokens are opaque bytes for the mechanism.

use bytes::Bytes;

use crate::protocol::api::{ApiKey, ApiSpec, Body, Request, VersionRange};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error_code::ErrorCode;
use crate::protocol::message_macro::kafka_message;

/// SaslAuthenticate's API key, the versions kwire implements and its first flexible version.
pub const SPEC: ApiSpec = ApiSpec {
    key: ApiKey::SASL_AUTHENTICATE,
    name: "SaslAuthenticate",
    versions: VersionRange::new(0, 2),
    flexible_from: Some(2),
};

kafka_message! {
    /// A SaslAuthenticate request (v0–v2).
    pub struct SaslAuthenticateRequest {
        /// The SASL authentication bytes from the client, as defined by the SASL mechanism.
        #[cfg_attr(feature = "json", serde(serialize_with = "crate::protocol::json::bytes"))]
        auth_bytes: Bytes,
    }
}

impl Body for SaslAuthenticateRequest {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.bytes(&self.auth_bytes, "auth_bytes")?;
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, _version: i16) -> DecodeResult<Self> {
        Ok(Self { auth_bytes: d.bytes("auth_bytes")?, tagged_fields: d.tagged_fields("tagged_fields")? })
    }
}

impl Request for SaslAuthenticateRequest {
    type Response = SaslAuthenticateResponse;
}

kafka_message! {
    /// A SaslAuthenticate response (v0–v2).
    pub struct SaslAuthenticateResponse {
        /// The error code, or 0 if there was no error.
        error_code: ErrorCode,
        /// Nullable.
        error_message: Option<String>,
        /// The SASL authentication bytes from the server, as defined by the SASL mechanism.
        #[cfg_attr(feature = "json", serde(serialize_with = "crate::protocol::json::bytes"))]
        auth_bytes: Bytes,
        /// Added in v1: ms until the session must re-authenticate (KIP-368); 0 for never.
        [since 1] session_lifetime_ms: Option<i64>,
    }
}

impl Body for SaslAuthenticateResponse {
    const SPEC: ApiSpec = SPEC;

    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult {
        e.i16(self.error_code.0);
        e.nullable_string(self.error_message.as_deref(), "error_message")?;
        e.bytes(&self.auth_bytes, "auth_bytes")?;
        if version >= 1 {
            e.i64(self.session_lifetime_ms.unwrap_or(0));
        }
        e.tagged_fields(&self.tagged_fields, "tagged_fields", version)
    }

    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self> {
        let error_code = ErrorCode(d.i16("error_code")?);
        let error_message = d.nullable_string("error_message")?;
        let auth_bytes = d.bytes("auth_bytes")?;
        let session_lifetime_ms = if version >= 1 { Some(d.i64("session_lifetime_ms")?) } else { None };
        Ok(Self {
            error_code,
            error_message,
            auth_bytes,
            session_lifetime_ms,
            tagged_fields: d.tagged_fields("tagged_fields")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::messages::test_util::{
        bytes, error_code, gated, nullable_string, round_trip_every_version, tagged,
    };

    fn request(v: i16) -> impl Strategy<Value = SaslAuthenticateRequest> {
        (bytes(), tagged(v >= 2))
            .prop_map(|(auth_bytes, tagged_fields)| SaslAuthenticateRequest { auth_bytes, tagged_fields })
    }

    fn response(v: i16) -> impl Strategy<Value = SaslAuthenticateResponse> {
        (error_code(), nullable_string(), bytes(), gated(v >= 1, any::<i64>()), tagged(v >= 2)).prop_map(
            |(error_code, error_message, auth_bytes, session_lifetime_ms, tagged_fields)| {
                SaslAuthenticateResponse {
                    error_code,
                    error_message,
                    auth_bytes,
                    session_lifetime_ms,
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
    fn a_v2_request_uses_compact_bytes() {
        let request =
            SaslAuthenticateRequest { auth_bytes: Bytes::from_static(b"\0u\0p"), ..Default::default() };
        assert_eq!(request.encode_body(2).unwrap(), [5, 0, b'u', 0, b'p', 0]);
        assert_eq!(request.encode_body(0).unwrap(), [0, 0, 0, 4, 0, b'u', 0, b'p']);
    }

    #[test]
    fn a_v1_response_carries_the_session_lifetime() {
        let body = [0, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0e, 0x10];
        let decoded = SaslAuthenticateResponse::decode_body(Bytes::copy_from_slice(&body), 1).unwrap();
        assert_eq!((decoded.error_message.as_deref(), decoded.session_lifetime_ms), (None, Some(3600)));
        assert_eq!(decoded.encode_body(1).unwrap(), body);
    }

    #[test]
    fn a_huge_auth_bytes_length_is_rejected_before_allocating() {
        let err = SaslAuthenticateRequest::decode_body(Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 1]), 0)
            .unwrap_err();
        assert_eq!(err.field, "auth_bytes");
    }
}
