//! The schema interpreter's writing half: the JSON [`decode`](super::decode) produces, back to
//! the bytes of any message in the [table](super).
//!
//! A field the version has but the JSON lacks is written as the schema's default (as Kafka's
//! generated classes do for a field never set); keys the version does not have are ignored. A
//! tagged field is written when its key is present; unknown tags under `"tagged_fields"`
//! (`{"tag": "hex"}`) are written back as they were read, in ascending tag order with the known
//! ones. Values of the wrong type are [`EncodeError::InvalidValue`], naming the field's path.

use serde_json::Value;

use super::decode::{schema, UNKNOWN_TAGS};
use super::{header, request_header_version, response_header_version, Field, FieldType, Message};
use crate::protocol::api::ApiKey;
use crate::protocol::encoder::{EncodeResult, Encoder};
use crate::protocol::error::EncodeError;
use crate::protocol::json::{JsonError, Kind};
use kafka_vocab::Uuid;

/// Encodes a request or response body of `api` at `version` from its JSON.
pub fn json_to_body(api: ApiKey, kind: Kind, version: i16, body: &Value) -> Result<Vec<u8>, JsonError> {
    json_to_message(schema(api, kind, version)?, version, body).map_err(JsonError::Encode)
}

/// Encodes `value` as `message` (a body or a header) at `version`, which the caller has
/// checked `message.valid` contains.
pub fn json_to_message(message: &Message, version: i16, value: &Value) -> Result<Vec<u8>, EncodeError> {
    let mut e = Encoder::new(message.flexible.contains(version));
    write_struct(&mut e, message.fields, version, value, message.name)?;
    Ok(e.into_inner())
}

/// Encodes a whole frame (without its size prefix) from `{"header": {...}, "body": {...}}`:
/// a request of the API and version its header names, or (`response: Some((api, version))`) a
/// response to that request.
pub fn json_to_frame(frame: &Value, response: Option<(ApiKey, i16)>) -> Result<Vec<u8>, JsonError> {
    let invalid = |field, expected| JsonError::Encode(EncodeError::InvalidValue { field, expected });
    let header_json = frame.get("header").ok_or_else(|| invalid("header", "an object"))?;
    let (api, version, kind, header_version) = match response {
        Some((api, version)) => (api, version, Kind::Response, response_header_version(api, version)),
        None => {
            let number =
                |key| header_json.get(key).and_then(Value::as_i64).and_then(|n| i16::try_from(n).ok());
            let api =
                ApiKey(number("request_api_key").ok_or_else(|| invalid("request_api_key", "an int16"))?);
            let version =
                number("request_api_version").ok_or_else(|| invalid("request_api_version", "an int16"))?;
            (api, version, Kind::Request, request_header_version(api, version))
        }
    };
    let message = schema(api, kind, version)?;
    let header_version = header_version.unwrap_or(0);
    let header = header(response.is_none(), header_version).ok_or(JsonError::Encode(
        EncodeError::UnsupportedVersion { api: "header", version: header_version },
    ))?;
    let mut e = Encoder::new(header.flexible.contains(header_version));
    write_struct(&mut e, header.fields, header_version, header_json, header.name)
        .map_err(JsonError::Encode)?;
    e.set_flexible(message.flexible.contains(version));
    let body = frame.get("body").ok_or_else(|| invalid("body", "an object"))?;
    write_struct(&mut e, message.fields, version, body, message.name).map_err(JsonError::Encode)?;
    Ok(e.into_inner())
}

fn invalid(field: &'static str, expected: &'static str) -> EncodeError {
    EncodeError::InvalidValue { field, expected }
}

/// The fields of one struct at `version`, then (in flexible versions) its tag section.
fn write_struct(
    e: &mut Encoder,
    fields: &'static [Field],
    version: i16,
    value: &Value,
    path: &'static str,
) -> EncodeResult {
    let object = value.as_object().ok_or(invalid(path, "an object"))?;
    for f in fields {
        if f.versions.contains(version) && !f.is_tagged_at(version) {
            match object.get(f.name) {
                Some(v) => write_field(e, f, &f.ty, f.nullable.contains(version), version, v)?,
                None => write_field(e, f, &f.ty, f.nullable.contains(version), version, &default(f, &f.ty))?,
            }
        }
    }
    if !e.is_flexible() {
        return Ok(());
    }
    let mut tags: Vec<(u32, Vec<u8>)> = Vec::new();
    for f in fields.iter().filter(|f| f.is_tagged_at(version)) {
        if let Some(v) = object.get(f.name) {
            let mut payload = Encoder::new(true);
            write_field(&mut payload, f, &f.ty, f.nullable.contains(version), version, v)?;
            tags.push((f.tag.unsigned_abs(), payload.into_inner()));
        }
    }
    if let Some(unknown) = object.get(UNKNOWN_TAGS) {
        let expected = "an object of tag numbers to hex payloads";
        for (tag, payload) in unknown.as_object().ok_or(invalid(UNKNOWN_TAGS, expected))? {
            let tag: u32 = tag.parse().map_err(|_| invalid(UNKNOWN_TAGS, expected))?;
            let payload = payload.as_str().and_then(unhex).ok_or(invalid(UNKNOWN_TAGS, expected))?;
            tags.push((tag, payload));
        }
    }
    tags.sort_by_key(|(tag, _)| *tag);
    if tags.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(invalid(UNKNOWN_TAGS, "tags not also given as known fields"));
    }
    let count = u32::try_from(tags.len())
        .map_err(|_| EncodeError::TooLong { field: UNKNOWN_TAGS, len: tags.len() })?;
    e.uvarint(count);
    for (tag, payload) in tags {
        e.uvarint(tag);
        let len = u32::try_from(payload.len())
            .map_err(|_| EncodeError::TooLong { field: UNKNOWN_TAGS, len: payload.len() })?;
        e.uvarint(len);
        e.raw(&payload);
    }
    Ok(())
}

fn int<T: TryFrom<i64>>(v: &Value, field: &'static str, expected: &'static str) -> Result<T, EncodeError> {
    v.as_i64().and_then(|n| T::try_from(n).ok()).ok_or(invalid(field, expected))
}

/// One value of type `ty`: the field's own type, or an array's element type (`nullable` false).
fn write_field(
    e: &mut Encoder,
    f: &Field,
    ty: &FieldType,
    nullable: bool,
    version: i16,
    v: &Value,
) -> EncodeResult {
    let path = f.path;
    if v.is_null() {
        if !nullable {
            return Err(EncodeError::FieldNotInVersion { field: path, version });
        }
        return match ty {
            FieldType::String => with_classic(e, f.classic, |e| e.nullable_string(None, path)),
            FieldType::Bytes | FieldType::Records => e.nullable_bytes(None, path),
            FieldType::Array(_) => e.nullable_array::<Value>(None, path, |_, _| Ok(())),
            FieldType::Struct(_) => {
                e.i8(-1);
                Ok(())
            }
            _ => Err(invalid(path, "not null")),
        };
    }
    match ty {
        FieldType::Bool => e.bool(v.as_bool().ok_or(invalid(path, "a boolean"))?),
        FieldType::Int8 => e.i8(int(v, path, "an int8")?),
        FieldType::Int16 => e.i16(int(v, path, "an int16")?),
        FieldType::Uint16 => e.u16(int(v, path, "a uint16")?),
        FieldType::Int32 => e.i32(int(v, path, "an int32")?),
        FieldType::Uint32 => e.u32(int(v, path, "a uint32")?),
        FieldType::Int64 => e.i64(int(v, path, "an int64")?),
        FieldType::Float64 => e.f64(float(v).ok_or(invalid(path, "a number, \"NaN\" or \"Infinity\""))?),
        FieldType::Uuid => {
            e.uuid(v.as_str().and_then(|t| Uuid::parse(t).ok()).ok_or(invalid(path, "a base64url UUID"))?);
        }
        FieldType::String => {
            let s = v.as_str().ok_or(invalid(path, "a string"))?;
            with_classic(e, f.classic, |e| e.nullable_string(Some(s), path))?;
        }
        FieldType::Bytes => {
            e.nullable_bytes(Some(&base64(v).ok_or(invalid(path, "standard base64"))?), path)?;
        }
        FieldType::Records => {
            let expected = "base64 record data (records decoded into batches cannot be written back)";
            e.nullable_bytes(Some(&base64(v).ok_or(invalid(path, expected))?), path)?;
        }
        FieldType::Struct(fields) => {
            if nullable {
                e.i8(1);
            }
            write_struct(e, fields, version, v, path)?;
        }
        FieldType::Array(element) => {
            let items = v.as_array().ok_or(invalid(path, "an array"))?;
            e.nullable_array(Some(items.as_slice()), path, |e, item| {
                write_field(e, f, element, false, version, item)
            })?;
        }
    }
    Ok(())
}

fn with_classic(
    e: &mut Encoder,
    classic: bool,
    write: impl FnOnce(&mut Encoder) -> EncodeResult,
) -> EncodeResult {
    let flexible = e.is_flexible();
    if classic {
        e.set_flexible(false);
    }
    let out = write(e);
    e.set_flexible(flexible);
    out
}

fn float(v: &Value) -> Option<f64> {
    match v {
        Value::String(s) if s == "NaN" => Some(f64::NAN),
        Value::String(s) if s == "Infinity" => Some(f64::INFINITY),
        Value::String(s) if s == "-Infinity" => Some(f64::NEG_INFINITY),
        v => v.as_f64(),
    }
}

fn base64(v: &Value) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(v.as_str()?).ok()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok()).collect()
}

/// The value Kafka's generated class holds for a field never set: the schema's `default`, or
/// the type's zero (an empty string, array or struct of defaults).
fn default(f: &Field, ty: &FieldType) -> Value {
    if f.default == "null" {
        return Value::Null;
    }
    let number = |text: &str| -> i64 {
        let (negative, digits) = text.strip_prefix('-').map_or((false, text), |d| (true, d));
        let n = match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
            Some(hex) => i64::from_str_radix(hex, 16).unwrap_or(0),
            None => digits.parse().unwrap_or(0),
        };
        if negative {
            -n
        } else {
            n
        }
    };
    match ty {
        FieldType::Bool => Value::Bool(f.default == "true"),
        FieldType::Int8
        | FieldType::Int16
        | FieldType::Uint16
        | FieldType::Int32
        | FieldType::Uint32
        | FieldType::Int64 => Value::from(number(f.default)),
        FieldType::Float64 => Value::from(f.default.parse::<f64>().unwrap_or(0.0)),
        FieldType::String => Value::String(f.default.to_owned()),
        FieldType::Uuid => Value::String(Uuid([0; 16]).to_string()),
        FieldType::Bytes | FieldType::Records => Value::String(String::new()),
        FieldType::Struct(_) => Value::Object(serde_json::Map::new()),
        FieldType::Array(_) => Value::Array(Vec::new()),
    }
}
