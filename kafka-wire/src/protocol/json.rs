//! Every message as JSON (cargo feature `json`), with Kafka's field names in snake_case — the
//! same document Kafka's generated `*JsonConverter` classes write, field for field.
//!
//! - A field the version lacks is omitted. A nullable field the version has prints `null` when
//!   null. The message structs keep a version-gated nullable field in one `Option` (`None` =
//!   null or absent), so the two are told apart by the version being rendered: render through
//!   [`Versioned`] (or the `*_to_json` functions here), which makes the version known to the
//!   fields while they serialize. Serialized without it, such a `None` is omitted.
//! - A tagged field is omitted when absent (Kafka omits it when it holds its default, which is
//!   what an absent tag means); unknown tagged fields print as `{"tag": "hex"}`, and the
//!   `tagged_fields` key is omitted when there are none.
//! - Error codes are numbers, as in Kafka's JSON; API keys are numbers; UUIDs are Kafka's
//!   22-character base64url form; `bytes` fields are standard base64 with padding (as Kafka's
//!   JSON writes them).
//! - `records` fields print as base64, or, with `records: true`, decoded into batches and
//!   records ([`records_to_json`]).

use std::cell::Cell;

use bytes::Bytes;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::api::{ApiKey, Body, Request};
use super::decoder::Decoder;
use super::error::{DecodeError, DecodeErrorKind, EncodeError};
use super::error_code::ErrorCode;
use super::frame;
use super::header::{RequestHeader, ResponseHeader};
#[allow(clippy::wildcard_imports)] // every message type, for the dispatch below
use super::messages::*;
use super::records::{
    ControlRecordKey, ControlRecordType, DecodeOptions, EndTransactionMarker, RecordSet, RecordSetBatch,
    TimestampType,
};
use super::tagged::TaggedFields;
use super::{registry, schema};

// ---------------------------------------------------------------------------------------------
// The version being rendered

#[derive(Debug, Clone, Copy)]
struct Context {
    version: i16,
    records: bool,
}

thread_local! {
    static CONTEXT: Cell<Option<Context>> = const { Cell::new(None) };
}

/// Restores the previous context when dropped (also on unwind).
struct ContextGuard(Option<Context>);

impl Drop for ContextGuard {
    fn drop(&mut self) {
        CONTEXT.with(|c| c.set(self.0));
    }
}

/// A message body with the version it was read at: serializes the body with that version
/// known, so version-gated nullable fields print `null` where the version has them.
#[derive(Debug, Clone, Copy)]
pub struct Versioned<'a, T> {
    /// The decoded body.
    pub body: &'a T,
    /// The version the body was read at (or is to be written at).
    pub version: i16,
    /// Decode `records` fields into batches and records instead of printing base64.
    pub records: bool,
}

impl<T: Serialize> Serialize for Versioned<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let context = Context { version: self.version, records: self.records };
        let _guard = ContextGuard(CONTEXT.with(|c| c.replace(Some(context))));
        self.body.serialize(s)
    }
}

fn context() -> Option<Context> {
    CONTEXT.with(Cell::get)
}

/// `skip_serializing_if` for a nullable field that exists in versions `MIN..=MAX` only: true
/// (skip) for a `None` outside that range, where it means "absent"; false inside it, where it
/// means null. Without a known version, a `None` is skipped.
pub fn absent<const MIN: i16, const MAX: i16, T>(value: &Option<T>) -> bool {
    value.is_none() && context().is_none_or(|c| !(MIN..=MAX).contains(&c.version))
}

/// `skip_serializing_if` for a nullable field added in version `MIN`: [`absent`] with no upper
/// bound.
pub fn absent_below<const MIN: i16, T>(value: &Option<T>) -> bool {
    absent::<MIN, { i16::MAX }, T>(value)
}

// ---------------------------------------------------------------------------------------------
// Leaf types

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i16(self.0)
    }
}

impl Serialize for ApiKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i16(self.0)
    }
}

/// `{"tag": "hex payload"}`.
impl Serialize for TaggedFields {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.len()))?;
        for (tag, payload) in self {
            map.serialize_entry(&tag.to_string(), &hex(payload))?;
        }
        map.end()
    }
}

/// `serialize_with` for a `bytes` field: standard base64 with padding.
pub fn bytes<S: Serializer>(value: &Bytes, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&base64(value))
}

/// `serialize_with` for a `records` field: `null`, base64, or (when the rendering asked for
/// it) the decoded record set.
pub fn records<S: Serializer>(value: &Option<Bytes>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        None => s.serialize_none(),
        Some(b) if context().is_some_and(|c| c.records) => records_to_json(b).serialize(s),
        Some(b) => s.serialize_str(&base64(b)),
    }
}

/// Standard base64 with padding.
pub fn base64(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// Lowercase hex.
pub fn hex(data: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(data.len() * 2);
    for b in data {
        let _ = write!(out, "{b:02x}");
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Records

/// A key, value or header value: the text when it is printable UTF-8, otherwise
/// `{"base64": "..."}`; `null` for null.
pub fn data_to_json(data: Option<&[u8]>) -> Value {
    match data {
        None => Value::Null,
        Some(d) => match std::str::from_utf8(d) {
            Ok(text) if text.chars().all(|c| !c.is_control() || matches!(c, '\n' | '\r' | '\t')) => {
                Value::String(text.to_owned())
            }
            _ => json!({ "base64": base64(d) }),
        },
    }
}

fn timestamp_type(t: TimestampType) -> &'static str {
    match t {
        TimestampType::CreateTime => "CreateTime",
        TimestampType::LogAppendTime => "LogAppendTime",
    }
}

/// A `records` field decoded: `{"batches": [...], "truncated_tail_bytes": n}`, or
/// `{"error": "...", "base64": "..."}` when the record data is malformed (the message around
/// it still prints).
pub fn records_to_json(records: &Bytes) -> Value {
    let set = match RecordSet::decode(records, &DecodeOptions::default()) {
        Ok(set) => set,
        Err(e) => return json!({ "error": e.to_string(), "base64": base64(records) }),
    };
    let batches: Vec<Value> = set
        .batches
        .iter()
        .map(|batch| match batch {
            RecordSetBatch::V2(b) => {
                let control = b.attributes.is_control;
                // Kafka reports every record of a LogAppendTime batch at the batch's timestamp.
                let log_append_time = b.attributes.timestamp_type == TimestampType::LogAppendTime;
                let records: Vec<Value> = b
                    .records
                    .iter()
                    .map(|r| {
                        let mut out = Map::new();
                        out.insert(
                            "offset".into(),
                            json!(b.base_offset.wrapping_add(i64::from(r.offset_delta))),
                        );
                        let timestamp = if log_append_time {
                            b.max_timestamp
                        } else {
                            b.base_timestamp.wrapping_add(r.timestamp_delta)
                        };
                        out.insert("timestamp".into(), json!(timestamp));
                        out.insert("offset_delta".into(), json!(r.offset_delta));
                        out.insert("timestamp_delta".into(), json!(r.timestamp_delta));
                        out.insert("attributes".into(), json!(r.attributes));
                        out.insert("key".into(), data_to_json(r.key.as_deref()));
                        out.insert("value".into(), data_to_json(r.value.as_deref()));
                        let headers: Vec<Value> = r
                            .headers
                            .iter()
                            .map(|h| json!({ "key": h.key, "value": data_to_json(h.value.as_deref()) }))
                            .collect();
                        out.insert("headers".into(), Value::Array(headers));
                        if control {
                            out.insert(
                                "control".into(),
                                control_to_json(r.key.as_deref(), r.value.as_deref()),
                            );
                        }
                        Value::Object(out)
                    })
                    .collect();
                json!({
                    "magic": 2,
                    "base_offset": b.base_offset,
                    "partition_leader_epoch": b.partition_leader_epoch,
                    "compression": b.attributes.compression.name(),
                    "timestamp_type": timestamp_type(b.attributes.timestamp_type),
                    "is_transactional": b.attributes.is_transactional,
                    "is_control": b.attributes.is_control,
                    "has_delete_horizon": b.attributes.has_delete_horizon,
                    "last_offset_delta": b.last_offset_delta,
                    "base_timestamp": b.base_timestamp,
                    "max_timestamp": b.max_timestamp,
                    "producer_id": b.producer_id,
                    "producer_epoch": b.producer_epoch,
                    "base_sequence": b.base_sequence,
                    "records": records,
                })
            }
            RecordSetBatch::Legacy(b) => {
                let messages: Vec<Value> = b
                    .messages
                    .iter()
                    .map(|m| {
                        let mut out = Map::new();
                        out.insert("offset".into(), json!(m.offset));
                        out.insert("magic".into(), json!(m.magic));
                        out.insert("attributes".into(), json!(m.attributes));
                        if let Some(t) = m.timestamp {
                            out.insert("timestamp".into(), json!(t));
                            out.insert("timestamp_type".into(), json!(timestamp_type(m.timestamp_type())));
                        }
                        out.insert("key".into(), data_to_json(m.key.as_deref()));
                        out.insert("value".into(), data_to_json(m.value.as_deref()));
                        Value::Object(out)
                    })
                    .collect();
                json!({
                    "magic": b.messages.first().map_or(0, |m| m.magic),
                    "compression": b.compression.name(),
                    "records": messages,
                })
            }
        })
        .collect();
    json!({ "batches": batches, "truncated_tail_bytes": set.truncated_tail_bytes })
}

/// A control record's key (and, for a transaction marker, its value) decoded.
fn control_to_json(key: Option<&[u8]>, value: Option<&[u8]>) -> Value {
    let Some(key) = key else { return json!({ "error": "control record without a key" }) };
    match ControlRecordKey::parse(key) {
        Err(e) => json!({ "error": e.to_string() }),
        Ok(k) => {
            let kind = match k.kind {
                ControlRecordType::Abort => json!("ABORT"),
                ControlRecordType::Commit => json!("COMMIT"),
                ControlRecordType::Unknown(n) => json!(n),
            };
            let mut out = json!({ "version": k.version, "type": kind });
            if k.kind.is_transaction_marker() {
                out["marker"] = match value.map(EndTransactionMarker::parse) {
                    Some(Ok(m)) => json!({ "version": m.version, "coordinator_epoch": m.coordinator_epoch }),
                    Some(Err(e)) => json!({ "error": e.to_string() }),
                    None => json!({ "error": "transaction marker without a value" }),
                };
            }
            out
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding any API to JSON

/// Which side of the exchange a body or frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Sent by the client.
    Request,
    /// Sent by the broker.
    Response,
}

/// Why bytes could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonError {
    /// kwire has no codec for this API.
    UnknownApi(ApiKey),
    /// The bytes are malformed (or the version is not one kwire decodes).
    Decode(DecodeError),
    /// Serialization failed (not expected for any decoded message).
    Serialize(String),
    /// JSON handed to the schema interpreter does not fit the message.
    Encode(EncodeError),
}

impl From<DecodeError> for JsonError {
    fn from(e: DecodeError) -> Self {
        Self::Decode(e)
    }
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::UnknownApi(key) => write!(f, "kwire cannot decode {key} (API key {})", key.0),
            Self::Decode(e) => e.fmt(f),
            Self::Serialize(e) => write!(f, "cannot render as JSON: {e}"),
            Self::Encode(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for JsonError {}

/// A decoded frame: its API and version, and `{"header": {...}, "body": {...}}`.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameJson {
    /// The API named in the request header (for a response: the one the caller said it answers).
    pub api: ApiKey,
    /// The version of the body.
    pub version: i16,
    /// `{"header": {...}, "body": {...}}`, with Kafka's field names.
    pub json: Value,
}

/// Renders a body at `version`.
pub fn to_json<T: Serialize>(body: &T, version: i16, records: bool) -> Result<Value, JsonError> {
    serde_json::to_value(Versioned { body, version, records })
        .map_err(|e| JsonError::Serialize(e.to_string()))
}

fn body<R: Body + Serialize>(body: Bytes, version: i16, records: bool) -> Result<Value, JsonError> {
    to_json(&R::decode_body(body, version)?, version, records)
}

fn request_frame<R>(frame: Bytes, records: bool) -> Result<FrameJson, JsonError>
where
    R: Request + Serialize,
{
    let (header, body) = frame::decode_request::<R>(frame)?;
    let version = header.api_version;
    let json = json!({ "header": request_header_json(&header), "body": to_json(&body, version, records)? });
    Ok(FrameJson { api: R::SPEC.key, version, json })
}

fn response_frame<R>(frame: Bytes, version: i16, records: bool) -> Result<FrameJson, JsonError>
where
    R: Request,
    R::Response: Serialize,
{
    let (header, body) = frame::decode_response::<R>(frame, version)?;
    let json = json!({ "header": response_header_json(&header), "body": to_json(&body, version, records)? });
    Ok(FrameJson { api: R::SPEC.key, version, json })
}

/// The renderers of one API, instantiated for its request and response types.
struct Renderers {
    request_body: fn(Bytes, i16, bool) -> Result<Value, JsonError>,
    response_body: fn(Bytes, i16, bool) -> Result<Value, JsonError>,
    request_frame: fn(Bytes, bool) -> Result<FrameJson, JsonError>,
    response_frame: fn(Bytes, i16, bool) -> Result<FrameJson, JsonError>,
}

macro_rules! renderers {
    ($(($key:literal, $name:ident, $req:ident, $resp:ident)),* $(,)?) => {
        /// The renderers of `api`, or [`JsonError::UnknownApi`].
        fn renderers(api: ApiKey) -> Result<Renderers, JsonError> {
            match api.0 {
                $($key => Ok(Renderers {
                    request_body: body::<$req>,
                    response_body: body::<$resp>,
                    request_frame: request_frame::<$req>,
                    response_frame: response_frame::<$req>,
                }),)*
                _ => Err(JsonError::UnknownApi(api)),
            }
        }
    };
}

crate::for_each_api!(renderers);

/// The typed renderers of `api` when kwire's typed codec has `version` of it; `None` sends
/// the bytes to the schema interpreter ([`schema::decode`](super::schema::decode)).
fn typed(api: ApiKey, version: i16) -> Option<Renderers> {
    registry::spec_for(api).filter(|s| s.versions.contains(version)).and_then(|_| renderers(api).ok())
}

/// Decodes a request or response body of `api` at `version` and renders it: with the typed
/// codec where it has the API and version, otherwise with the schema interpreter (every API
/// and version Kafka 4.1 defines, and those Kafka 4.0 removed).
pub fn body_to_json(
    api: ApiKey,
    kind: Kind,
    version: i16,
    body: Bytes,
    records: bool,
) -> Result<Value, JsonError> {
    match (typed(api, version), kind) {
        (Some(r), Kind::Request) => (r.request_body)(body, version, records),
        (Some(r), Kind::Response) => (r.response_body)(body, version, records),
        (None, _) => schema::decode::body_to_json(api, kind, version, body, records),
    }
}

/// Decodes a request frame (without its size prefix): the API and version come from its
/// header. Typed codec or schema interpreter as in [`body_to_json`].
pub fn request_frame_to_json(frame: Bytes, records: bool) -> Result<FrameJson, JsonError> {
    let mut peek = Decoder::new(frame.clone());
    let api = ApiKey(peek.i16("api_key")?);
    let version = peek.i16("api_version")?;
    match typed(api, version) {
        Some(r) => (r.request_frame)(frame, records),
        None => schema::decode::request_frame_to_json(frame, records),
    }
}

/// Decodes a response frame (without its size prefix) of `api` at `version` (a response
/// header does not say either). Typed codec or schema interpreter as in [`body_to_json`].
pub fn response_frame_to_json(
    api: ApiKey,
    version: i16,
    frame: Bytes,
    records: bool,
) -> Result<FrameJson, JsonError> {
    match typed(api, version) {
        Some(r) => (r.response_frame)(frame, version, records),
        None => schema::decode::response_frame_to_json(api, version, frame, records),
    }
}

/// Takes the size prefix off a whole frame; the size must match the bytes that follow.
pub fn strip_size_prefix(frame: &Bytes) -> Result<Bytes, DecodeError> {
    let Some(prefix) = frame.get(..4) else {
        return Err(DecodeError::new(
            DecodeErrorKind::Incomplete { needed: 4 - frame.len() },
            "frame.size",
            frame.len(),
        ));
    };
    let size = i32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
    let Ok(size) = usize::try_from(size) else {
        return Err(DecodeError::new(DecodeErrorKind::NegativeLength(i64::from(size)), "frame.size", 0));
    };
    let rest = frame.len() - 4;
    if size > rest {
        return Err(DecodeError::new(
            DecodeErrorKind::Incomplete { needed: size - rest },
            "frame.size",
            frame.len(),
        ));
    }
    if size < rest {
        return Err(DecodeError::new(DecodeErrorKind::TrailingBytes(rest - size), "frame", 4 + size));
    }
    Ok(frame.slice(4..))
}

/// Kafka's RequestHeader schema names: `request_api_key`, `request_api_version`,
/// `correlation_id`, `client_id` (header v1+).
pub fn request_header_json(header: &RequestHeader) -> Value {
    let mut out = Map::new();
    out.insert("request_api_key".into(), json!(header.api_key.0));
    out.insert("request_api_version".into(), json!(header.api_version));
    out.insert("correlation_id".into(), json!(header.correlation_id));
    out.insert("client_id".into(), json!(header.client_id));
    if !header.tagged_fields.is_empty() {
        out.insert("tagged_fields".into(), json!(header.tagged_fields));
    }
    Value::Object(out)
}

/// Kafka's ResponseHeader schema names: `correlation_id`.
pub fn response_header_json(header: &ResponseHeader) -> Value {
    let mut out = Map::new();
    out.insert("correlation_id".into(), json!(header.correlation_id));
    if !header.tagged_fields.is_empty() {
        out.insert("tagged_fields".into(), json!(header.tagged_fields));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    //! Kafka's own JSON as the oracle: `messages/testdata/kafka-*-json.txt` hold, line for line
    //! with `kafka-*-bodies.txt`, what Kafka's generated `*JsonConverter.write(message, version)`
    //! printed for each body (`KafkaOracle check` on the bodies file, `ok ` dropped, prefixed
    //! with `<Api> <request|response> <version>`). kwire's rendering of the same bytes must be
    //! the same document once Kafka's camelCase names are snake_cased.

    use super::*;

    const BODIES_4_1: &str = include_str!("messages/testdata/kafka-4.1.1-bodies.txt");
    const JSON_4_1: &str = include_str!("messages/testdata/kafka-4.1.1-json.txt");
    const BODIES_3_9: &str = include_str!("messages/testdata/kafka-3.9.1-bodies.txt");
    const JSON_3_9: &str = include_str!("messages/testdata/kafka-3.9.1-json.txt");

    fn snake_case(name: &str) -> String {
        let chars: Vec<char> = name.chars().collect();
        let mut out = String::new();
        for (i, &c) in chars.iter().enumerate() {
            if c.is_ascii_uppercase() {
                let prev_lower =
                    i > 0 && (chars[i - 1].is_ascii_lowercase() || chars[i - 1].is_ascii_digit());
                let acronym_end = i > 0
                    && chars[i - 1].is_ascii_uppercase()
                    && chars.get(i + 1).is_some_and(char::is_ascii_lowercase);
                if prev_lower || acronym_end {
                    out.push('_');
                }
                out.push(c.to_ascii_lowercase());
            } else {
                out.push(c);
            }
        }
        out
    }

    fn snake_keys(v: Value) -> Value {
        match v {
            Value::Object(map) => {
                Value::Object(map.into_iter().map(|(k, v)| (snake_case(&k), snake_keys(v))).collect())
            }
            Value::Array(items) => Value::Array(items.into_iter().map(snake_keys).collect()),
            other => other,
        }
    }

    /// The first difference, as `path: kwire vs kafka`.
    fn diff(path: &str, ours: &Value, kafka: &Value) -> Option<String> {
        match (ours, kafka) {
            (Value::Object(a), Value::Object(b)) => {
                for key in a.keys().chain(b.keys()) {
                    let here = format!("{path}.{key}");
                    match (a.get(key), b.get(key)) {
                        (Some(x), Some(y)) => {
                            if let Some(d) = diff(&here, x, y) {
                                return Some(d);
                            }
                        }
                        (x, y) => return Some(format!("{here}: kwire {x:?} vs kafka {y:?}")),
                    }
                }
                None
            }
            (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
                a.iter().zip(b).enumerate().find_map(|(i, (x, y))| diff(&format!("{path}[{i}]"), x, y))
            }
            // Kafka's JsonConverter writes any non-null `records` as "" (it does not serialize
            // record data); kwire writes its base64.
            (Value::String(_), Value::String(k)) if path.ends_with(".records") && k.is_empty() => None,
            _ => (ours != kafka).then(|| format!("{path}: kwire {ours} vs kafka {kafka}")),
        }
    }

    fn unhex(hex: &str) -> Vec<u8> {
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex")).collect()
    }

    /// Compares every body rendered by the typed codec (`interpreter: false`) or by the schema
    /// interpreter, which must also write the same bytes back; returns how many were compared.
    fn compare_all(bodies: &str, kafka_json: &str, interpreter: bool) -> usize {
        let mut compared = 0;
        let mut failures = Vec::new();
        for (body, json) in bodies.lines().zip(kafka_json.lines()) {
            let fields: Vec<&str> = body.split(' ').collect();
            let [api_name, dir, version, hex] = fields[..] else { panic!("malformed line: {body}") };
            let (prefix, kafka) = json.split_at(json.find('{').expect("a JSON object"));
            assert_eq!(prefix.trim(), format!("{api_name} {dir} {version}"), "files out of step");
            let version: i16 = version.parse().expect("version");
            let spec = crate::protocol::registry::supported_apis()
                .into_iter()
                .find(|s| s.name == api_name)
                .expect("a supported API");
            if !interpreter && !spec.versions.contains(version) {
                continue; // Kafka 4.1's unstable OffsetFetch/OffsetCommit v10
            }
            let kind = if dir == "request" { Kind::Request } else { Kind::Response };
            let ours = if interpreter {
                let ours =
                    schema::decode::body_to_json(spec.key, kind, version, Bytes::from(unhex(hex)), false)
                        .unwrap_or_else(|e| panic!("{body}: {e}"));
                let again = schema::encode::json_to_body(spec.key, kind, version, &ours)
                    .unwrap_or_else(|e| panic!("{body}: encode: {e}"));
                assert_eq!(super::hex(&again), hex, "{body}: written back differently from {ours}");
                ours
            } else {
                body_to_json(spec.key, kind, version, Bytes::from(unhex(hex)), false)
                    .unwrap_or_else(|e| panic!("{body}: {e}"))
            };
            let mut kafka = snake_keys(serde_json::from_str(kafka).expect("Kafka's JSON parses"));
            let mut ours = ours;
            if !interpreter && spec.key == ApiKey::API_VERSIONS && kind == Kind::Response {
                // kwire keeps ApiVersions' feature tags (KIP-584, KIP-866) as raw tagged fields.
                let tags = ours.as_object_mut().and_then(|o| o.remove("tagged_fields"));
                let object = kafka.as_object_mut().expect("an object");
                let mut modelled_by_kafka = 0;
                for key in [
                    "supported_features",
                    "finalized_features_epoch",
                    "finalized_features",
                    "zk_migration_ready",
                ] {
                    modelled_by_kafka += usize::from(object.remove(key).is_some());
                }
                let raw = tags.as_ref().and_then(Value::as_object).map_or(0, Map::len);
                assert_eq!(raw, modelled_by_kafka, "{body}: raw tags {tags:?}");
            }
            match diff("", &ours, &kafka) {
                None => compared += 1,
                Some(d) => failures.push(format!("{api_name} {dir} v{version}: {d}")),
            }
        }
        assert!(failures.is_empty(), "{} differences:\n{}", failures.len(), failures.join("\n"));
        compared
    }

    #[test]
    fn every_body_kafka_4_1_wrote_renders_as_kafkas_own_json() {
        assert_eq!(compare_all(BODIES_4_1, JSON_4_1, false), 712);
    }

    #[test]
    fn every_body_kafka_3_9_wrote_renders_as_kafkas_own_json() {
        assert_eq!(compare_all(BODIES_3_9, JSON_3_9, false), 736);
    }

    #[test]
    fn the_schema_interpreter_renders_every_body_kafka_4_1_wrote_as_kafka_does_and_writes_it_back() {
        // Every line, the unstable OffsetFetch/OffsetCommit v10 included.
        assert_eq!(compare_all(BODIES_4_1, JSON_4_1, true), BODIES_4_1.lines().count());
    }

    #[test]
    fn the_schema_interpreter_renders_every_body_kafka_3_9_wrote_as_kafka_does_and_writes_it_back() {
        assert_eq!(compare_all(BODIES_3_9, JSON_3_9, true), BODIES_3_9.lines().count());
    }

    #[test]
    fn camel_case_names_become_snake_case() {
        assert_eq!(snake_case("throttleTimeMs"), "throttle_time_ms");
        assert_eq!(snake_case("topicID"), "topic_id");
        assert_eq!(snake_case("isrNodes"), "isr_nodes");
    }

    #[test]
    fn a_nullable_field_prints_null_only_in_versions_that_have_it() {
        let response = FindCoordinatorResponse {
            throttle_time_ms: Some(0),
            error_code: Some(ErrorCode::NONE),
            node_id: Some(1),
            host: Some("h".into()),
            port: Some(9092),
            ..FindCoordinatorResponse::default()
        };
        let v1 = to_json(&response, 1, false).unwrap();
        assert_eq!(v1["error_message"], Value::Null);
        assert!(v1.as_object().unwrap().contains_key("error_message"));
        let v0 = to_json(&response, 0, false).unwrap();
        assert!(!v0.as_object().unwrap().contains_key("error_message"));
        // Without a version, a None is omitted.
        let bare = serde_json::to_value(&response).unwrap();
        assert!(!bare.as_object().unwrap().contains_key("error_message"));
    }

    #[test]
    fn unknown_tagged_fields_print_as_hex_by_tag() {
        let request = ApiVersionsRequest {
            client_software_name: Some("kwire".into()),
            client_software_version: Some("1".into()),
            tagged_fields: TaggedFields::new(vec![(7, Bytes::from_static(&[0xab, 0x01]))]),
        };
        let v = to_json(&request, 3, false).unwrap();
        assert_eq!(v["tagged_fields"], json!({ "7": "ab01" }));
        let none = to_json(&ApiVersionsRequest::default(), 0, false).unwrap();
        assert_eq!(none, json!({}));
    }

    #[test]
    fn printable_data_is_text_and_the_rest_base64() {
        assert_eq!(data_to_json(Some(b"hello\n")), json!("hello\n"));
        assert_eq!(data_to_json(Some(&[0xff, 0x00])), json!({ "base64": "/wA=" }));
        assert_eq!(data_to_json(Some(b"a\x00b")), json!({ "base64": "YQBi" }));
        assert_eq!(data_to_json(None), Value::Null);
    }

    #[test]
    fn malformed_records_render_as_an_error_in_place() {
        let v = records_to_json(&Bytes::from_static(&[0; 70]));
        assert!(v["error"].is_string(), "{v}");
        assert!(v["base64"].is_string());
    }

    #[test]
    fn a_frame_size_must_match_the_bytes_that_follow() {
        let ok = strip_size_prefix(&Bytes::from_static(&[0, 0, 0, 2, 1, 2])).unwrap();
        assert_eq!(ok.as_ref(), &[1, 2]);
        let short = strip_size_prefix(&Bytes::from_static(&[0, 0, 0, 3, 1, 2])).unwrap_err();
        assert!(matches!(short.kind, DecodeErrorKind::Incomplete { needed: 1 }));
        let long = strip_size_prefix(&Bytes::from_static(&[0, 0, 0, 1, 1, 2])).unwrap_err();
        assert_eq!((long.kind, long.offset), (DecodeErrorKind::TrailingBytes(1), 5));
        assert!(strip_size_prefix(&Bytes::from_static(&[0, 0])).is_err());
        assert!(strip_size_prefix(&Bytes::from_static(&[0xff, 0xff, 0xff, 0xff])).is_err());
    }

    #[test]
    fn unknown_apis_are_named() {
        let err = body_to_json(ApiKey(999), Kind::Request, 0, Bytes::new(), false).unwrap_err();
        assert_eq!(err.to_string(), "kwire cannot decode ApiKey(999) (API key 999)");
    }
}
