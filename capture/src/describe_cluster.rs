//! DescribeCluster's response (API key 60, v0–v2, flexible in every version), read and written
//! only as far as the proxy needs to replace its broker endpoints: every field is kept, so an
//! unchanged response re-encodes to the same bytes.
//!
//! kafka-wire has no typed DescribeCluster yet; when its schema-driven codec lands this file
//! can give way to it.

use bytes::Bytes;
use kafka_wire::protocol::{DecodeResult, Decoder, EncodeError, Encoder, ResponseHeader, TaggedFields};

/// DescribeCluster's API key.
pub(crate) const API_KEY: i16 = 60;
/// The versions this file reads (Kafka 4.1's).
pub(crate) const VERSIONS: std::ops::RangeInclusive<i16> = 0..=2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    pub broker_id: i32,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
    /// Added in v2.
    pub is_fenced: Option<bool>,
    pub tagged_fields: TaggedFields,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Response {
    pub header: ResponseHeader,
    pub throttle_time_ms: i32,
    pub error_code: i16,
    pub error_message: Option<String>,
    /// Added in v1.
    pub endpoint_type: Option<i8>,
    pub cluster_id: String,
    pub controller_id: i32,
    pub brokers: Vec<Node>,
    pub cluster_authorized_operations: i32,
    pub tagged_fields: TaggedFields,
}

/// Reads a whole response frame (header v1 and body) at `version`.
pub(crate) fn read(frame: Bytes, version: i16) -> DecodeResult<Response> {
    let mut d = Decoder::with_flexible(frame, true);
    let header = ResponseHeader::read(&mut d, 1)?;
    let throttle_time_ms = d.i32("throttle_time_ms")?;
    let error_code = d.i16("error_code")?;
    let error_message = d.nullable_string("error_message")?;
    let endpoint_type = if version >= 1 { Some(d.i8("endpoint_type")?) } else { None };
    let cluster_id = d.string("cluster_id")?;
    let controller_id = d.i32("controller_id")?;
    // An element is at least id, empty host, port, null rack, no tags: 11 bytes.
    let brokers = d.array("brokers", 11, |d| {
        Ok(Node {
            broker_id: d.i32("brokers.broker_id")?,
            host: d.string("brokers.host")?,
            port: d.i32("brokers.port")?,
            rack: d.nullable_string("brokers.rack")?,
            is_fenced: if version >= 2 { Some(d.bool("brokers.is_fenced")?) } else { None },
            tagged_fields: d.tagged_fields("brokers.tagged_fields")?,
        })
    })?;
    let cluster_authorized_operations = d.i32("cluster_authorized_operations")?;
    let tagged_fields = d.tagged_fields("tagged_fields")?;
    d.finish("DescribeCluster")?;
    Ok(Response {
        header,
        throttle_time_ms,
        error_code,
        error_message,
        endpoint_type,
        cluster_id,
        controller_id,
        brokers,
        cluster_authorized_operations,
        tagged_fields,
    })
}

/// Writes the whole response frame (without the size prefix) at `version`.
pub(crate) fn write(response: &Response, version: i16) -> Result<Vec<u8>, EncodeError> {
    let mut e = Encoder::new(true);
    response.header.write(&mut e, 1)?;
    e.i32(response.throttle_time_ms);
    e.i16(response.error_code);
    e.nullable_string(response.error_message.as_deref(), "error_message")?;
    if version >= 1 {
        e.i8(response.endpoint_type.unwrap_or(1));
    }
    e.string(&response.cluster_id, "cluster_id")?;
    e.i32(response.controller_id);
    e.array(&response.brokers, "brokers", |e, b| {
        e.i32(b.broker_id);
        e.string(&b.host, "brokers.host")?;
        e.i32(b.port);
        e.nullable_string(b.rack.as_deref(), "brokers.rack")?;
        if version >= 2 {
            e.bool(b.is_fenced.unwrap_or(false));
        }
        e.tagged_fields(&b.tagged_fields, "brokers.tagged_fields", version)
    })?;
    e.i32(response.cluster_authorized_operations);
    e.tagged_fields(&response.tagged_fields, "tagged_fields", version)?;
    Ok(e.into_inner())
}
