//! Request and response headers. Which header version a message uses follows from its
//! [`ApiSpec`](super::api::ApiSpec): see `request_header_version` / `response_header_version`.

use super::api::ApiKey;
use super::decoder::{DecodeResult, Decoder};
use super::encoder::{EncodeResult, Encoder};
use super::tagged::TaggedFields;

/// Request header v0 (key, version, correlation id), v1 (+ client id), v2 (+ tagged fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHeader {
    /// The API of the request body that follows.
    pub api_key: ApiKey,
    /// The version of the request body that follows.
    pub api_version: i16,
    /// Chosen by the client; the broker echoes it in the response header so responses can be matched to
    /// requests.
    pub correlation_id: i32,
    /// Added in header v1. Always a classic (i16-length) string, even in v2.
    pub client_id: Option<String>,
    /// Added in header v2.
    pub tagged_fields: TaggedFields,
}

impl RequestHeader {
    /// Writes the header at `header_version` (0, 1 or 2; see
    /// [`ApiSpec::request_header_version`](super::api::ApiSpec::request_header_version)).
    pub fn write(&self, e: &mut Encoder, header_version: i16) -> EncodeResult {
        e.i16(self.api_key.0);
        e.i16(self.api_version);
        e.i32(self.correlation_id);
        if header_version >= 1 {
            e.classic_nullable_string(self.client_id.as_deref(), "client_id")?;
        }
        let flexible = e.is_flexible();
        e.set_flexible(header_version >= 2);
        let out = e.tagged_fields(&self.tagged_fields, "header.tagged_fields", header_version);
        e.set_flexible(flexible);
        out
    }

    /// Reads a header at `header_version` (0, 1 or 2).
    pub fn read(d: &mut Decoder, header_version: i16) -> DecodeResult<Self> {
        let api_key = ApiKey(d.i16("api_key")?);
        let api_version = d.i16("api_version")?;
        let correlation_id = d.i32("correlation_id")?;
        let client_id = if header_version >= 1 { d.classic_nullable_string("client_id")? } else { None };
        let flexible = d.is_flexible();
        d.set_flexible(header_version >= 2);
        let tagged_fields = d.tagged_fields("header.tagged_fields");
        d.set_flexible(flexible);
        Ok(Self { api_key, api_version, correlation_id, client_id, tagged_fields: tagged_fields? })
    }
}

/// Response header v0 (correlation id) and v1 (+ tagged fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHeader {
    /// The correlation id of the request this answers.
    pub correlation_id: i32,
    /// Added in header v1.
    pub tagged_fields: TaggedFields,
}

impl ResponseHeader {
    /// Writes the header at `header_version` (0 or 1; see
    /// [`ApiSpec::response_header_version`](super::api::ApiSpec::response_header_version)).
    pub fn write(&self, e: &mut Encoder, header_version: i16) -> EncodeResult {
        e.i32(self.correlation_id);
        let flexible = e.is_flexible();
        e.set_flexible(header_version >= 1);
        let out = e.tagged_fields(&self.tagged_fields, "header.tagged_fields", header_version);
        e.set_flexible(flexible);
        out
    }

    /// Reads a header at `header_version` (0 or 1).
    pub fn read(d: &mut Decoder, header_version: i16) -> DecodeResult<Self> {
        let correlation_id = d.i32("correlation_id")?;
        let flexible = d.is_flexible();
        d.set_flexible(header_version >= 1);
        let tagged_fields = d.tagged_fields("header.tagged_fields");
        d.set_flexible(flexible);
        Ok(Self { correlation_id, tagged_fields: tagged_fields? })
    }
}
