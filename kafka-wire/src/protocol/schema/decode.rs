//! The schema interpreter's reading half: any message in the [table](super) from bytes to JSON,
//! the document Kafka's generated `*JsonConverter` writes, with names in snake case (the same
//! rules as the typed renderers in `protocol::json`):
//!
//! - A field the version lacks is omitted; a nullable field holding null prints `null`.
//! - A tagged field prints only when its tag is present; tags the schema does not know print as
//!   `"tagged_fields": {"tag": "hex"}` (and are written back by [`encode`](super::encode)).
//! - `int64` is a JSON number; `uuid` is Kafka's 22-character base64url text; `bytes` is
//!   standard base64; `float64` is a number (`"NaN"`, `"Infinity"`, `"-Infinity"` as strings);
//!   `records` is base64, or with `records: true` the decoded batches
//!   ([`records_to_json`](crate::protocol::json::records_to_json)).
//!
//! Reading is bounded exactly like the typed [`Decoder`]: every count is checked against the
//! bytes left before anything is allocated, and every error names the field's dotted path and
//! its byte offset.

use bytes::Bytes;
use serde_json::{Map, Number, Value};

use super::{
    header, request_header_version, response_header_version, Field, FieldType, Message, MessageKind,
};
use crate::protocol::api::ApiKey;
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::error::{DecodeError, DecodeErrorKind};
use crate::protocol::json::{self, FrameJson, JsonError, Kind};

/// The key under which unknown tagged fields print.
pub const UNKNOWN_TAGS: &str = "tagged_fields";

/// The schema of `api`'s `kind` body at `version`, or why there is none.
pub(crate) fn schema(api: ApiKey, kind: Kind, version: i16) -> Result<&'static Message, JsonError> {
    let kind = match kind {
        Kind::Request => MessageKind::Request,
        Kind::Response => MessageKind::Response,
    };
    if let Some(m) = super::find(api, kind, version) {
        return Ok(m);
    }
    match super::api_specs().into_iter().find(|s| s.key == api) {
        Some(spec) => Err(JsonError::Decode(DecodeError::new(
            DecodeErrorKind::UnsupportedVersion { api: spec.name, version },
            "version",
            0,
        ))),
        None => Err(JsonError::UnknownApi(api)),
    }
}

/// Decodes a whole request or response body of `api` at `version`; trailing bytes are an error.
pub fn body_to_json(
    api: ApiKey,
    kind: Kind,
    version: i16,
    body: Bytes,
    records: bool,
) -> Result<Value, JsonError> {
    Ok(message_to_json(schema(api, kind, version)?, version, body, records)?)
}

/// Decodes the whole of `bytes` as `message` (a body or a header) at `version`, which the
/// caller has checked `message.valid` contains.
pub fn message_to_json(message: &Message, version: i16, bytes: Bytes, records: bool) -> DecodeResult<Value> {
    let mut d = Decoder::with_flexible(bytes, message.flexible.contains(version));
    let out = read_struct(&mut d, message.fields, version, records)?;
    d.finish(message.name)?;
    Ok(out)
}

/// Decodes a request frame (without its size prefix): the API and version come from its header.
pub fn request_frame_to_json(frame: Bytes, records: bool) -> Result<FrameJson, JsonError> {
    let mut peek = Decoder::new(frame.clone());
    let api = ApiKey(peek.i16("request_api_key")?);
    let version = peek.i16("request_api_version")?;
    let message = schema(api, Kind::Request, version)?;
    let header_version = request_header_version(api, version).unwrap_or(1);
    self::frame(frame, message, version, true, header_version, records)
}

/// Decodes a response frame (without its size prefix) of `api` at `version`.
pub fn response_frame_to_json(
    api: ApiKey,
    version: i16,
    frame: Bytes,
    records: bool,
) -> Result<FrameJson, JsonError> {
    let message = schema(api, Kind::Response, version)?;
    let header_version = response_header_version(api, version).unwrap_or(0);
    self::frame(frame, message, version, false, header_version, records)
}

fn frame(
    frame: Bytes,
    message: &'static Message,
    version: i16,
    request: bool,
    header_version: i16,
    records: bool,
) -> Result<FrameJson, JsonError> {
    let header = header(request, header_version).ok_or_else(|| {
        let name = if request { "RequestHeader" } else { "ResponseHeader" };
        DecodeError::new(
            DecodeErrorKind::UnsupportedVersion { api: name, version: header_version },
            "header",
            0,
        )
    })?;
    let mut d = Decoder::with_flexible(frame, header.flexible.contains(header_version));
    let header_json = read_struct(&mut d, header.fields, header_version, false)?;
    d.set_flexible(message.flexible.contains(version));
    let body = read_struct(&mut d, message.fields, version, records)?;
    d.finish(message.name)?;
    let mut json = Map::new();
    json.insert("header".into(), header_json);
    json.insert("body".into(), body);
    Ok(FrameJson { api: ApiKey(message.key), version, json: Value::Object(json) })
}

/// The fields of one struct at `version`, then (in flexible versions) its tag section.
fn read_struct(
    d: &mut Decoder,
    fields: &'static [Field],
    version: i16,
    records: bool,
) -> DecodeResult<Value> {
    let mut out = Map::new();
    for f in fields {
        if f.versions.contains(version) && !f.is_tagged_at(version) {
            out.insert(
                f.name.to_owned(),
                read_field(d, f, &f.ty, f.nullable.contains(version), version, records)?,
            );
        }
    }
    if d.is_flexible() {
        read_tags(d, fields, version, records, &mut out)?;
    }
    Ok(Value::Object(out))
}

/// A tag section: known tags become their fields, the rest stay raw under [`UNKNOWN_TAGS`].
fn read_tags(
    d: &mut Decoder,
    fields: &'static [Field],
    version: i16,
    records: bool,
    out: &mut Map<String, Value>,
) -> DecodeResult<()> {
    let count = d.uvarint(UNKNOWN_TAGS)? as usize;
    let count = d.checked_len(count, 2, UNKNOWN_TAGS)?;
    let mut unknown = Map::new();
    let mut previous: Option<u32> = None;
    for _ in 0..count {
        let tag = d.uvarint(UNKNOWN_TAGS)?;
        if let Some(previous) = previous.filter(|&p| tag <= p) {
            return Err(d.error(DecodeErrorKind::TagsOutOfOrder { previous, tag }, UNKNOWN_TAGS));
        }
        previous = Some(tag);
        let size = d.uvarint(UNKNOWN_TAGS)? as usize;
        let size = d.checked_len(size, 1, UNKNOWN_TAGS)?;
        let known = fields.iter().find(|f| f.is_tagged_at(version) && i64::from(f.tag) == i64::from(tag));
        match known {
            Some(f) => {
                let mut payload = d.sub(size, f.path)?;
                let value =
                    read_field(&mut payload, f, &f.ty, f.nullable.contains(version), version, records)?;
                payload.finish(f.path)?;
                out.insert(f.name.to_owned(), value);
            }
            None => {
                let payload = d.take(size, UNKNOWN_TAGS)?;
                unknown.insert(tag.to_string(), Value::String(json::hex(&payload)));
            }
        }
    }
    if !unknown.is_empty() {
        out.insert(UNKNOWN_TAGS.into(), Value::Object(unknown));
    }
    Ok(())
}

fn unexpected_null(d: &Decoder, f: &Field) -> DecodeError {
    d.error(DecodeErrorKind::UnexpectedNull, f.path)
}

/// One value of type `ty`: the field's own type (`nullable` as its schema says at this version),
/// or an array's element type (never nullable).
fn read_field(
    d: &mut Decoder,
    f: &Field,
    ty: &FieldType,
    nullable: bool,
    version: i16,
    records: bool,
) -> DecodeResult<Value> {
    let path = f.path;
    Ok(match ty {
        FieldType::Bool => Value::Bool(d.bool(path)?),
        FieldType::Int8 => Value::from(d.i8(path)?),
        FieldType::Int16 => Value::from(d.i16(path)?),
        FieldType::Uint16 => Value::from(d.u16(path)?),
        FieldType::Int32 => Value::from(d.i32(path)?),
        FieldType::Uint32 => Value::from(d.u32(path)?),
        FieldType::Int64 => Value::from(d.i64(path)?),
        FieldType::Float64 => float(d.f64(path)?),
        FieldType::Uuid => Value::String(d.uuid(path)?.to_string()),
        FieldType::String => {
            let flexible = d.is_flexible();
            if f.classic {
                d.set_flexible(false);
            }
            let s = d.nullable_string(path);
            d.set_flexible(flexible);
            match s? {
                Some(s) => Value::String(s),
                None if nullable => Value::Null,
                None => return Err(unexpected_null(d, f)),
            }
        }
        FieldType::Bytes | FieldType::Records => match d.nullable_bytes(path)? {
            Some(b) if matches!(ty, FieldType::Records) && records => json::records_to_json(&b),
            Some(b) => Value::String(json::base64(&b)),
            None if nullable => Value::Null,
            None => return Err(unexpected_null(d, f)),
        },
        FieldType::Struct(fields) => {
            // A nullable struct is preceded by an INT8: −1 for null, 1 for present.
            if nullable && d.i8(path)? < 0 {
                Value::Null
            } else {
                read_struct(d, fields, version, records)?
            }
        }
        FieldType::Array(element) => {
            let min = element.min_size(d.is_flexible());
            match d.nullable_array(path, min, |d| read_field(d, f, element, false, version, records))? {
                Some(items) => Value::Array(items),
                None if nullable => Value::Null,
                None => return Err(unexpected_null(d, f)),
            }
        }
    })
}

/// A FLOAT64 as JSON: a number, or Java's spelling of the three values JSON has no number for.
fn float(x: f64) -> Value {
    match Number::from_f64(x) {
        Some(n) => Value::Number(n),
        None if x.is_nan() => Value::String("NaN".into()),
        None if x > 0.0 => Value::String("Infinity".into()),
        None => Value::String("-Infinity".into()),
    }
}
