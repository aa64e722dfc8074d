//! `kwire decode`: any request or response, body or whole frame, from hex to JSON with Kafka's
//! field names in snake_case (see `kafka_wire::protocol::json` for the rendering rules). Also
//! what `--trace` prints for each frame.

use std::io::Read as _;

use bytes::Bytes;
use kafka_client::{Direction, TraceEvent};
use kafka_wire::protocol::json::{self, JsonError, Kind};
use kafka_wire::protocol::registry::{all_apis, any_spec_by_name, any_spec_for, name_forms};
use kafka_wire::protocol::{ApiKey, ApiSpec, DecodeErrorKind};
use serde_json::{json, Value};

use crate::cli::DecodeArgs;
use crate::exit::{Exit, Failure};
use crate::output::print_json;

pub fn run(args: &DecodeArgs) -> Result<(), Failure> {
    let text = match args.hex.as_deref() {
        None | Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| Failure::new(Exit::USAGE, format!("cannot read hex from stdin: {e}")))?;
            text
        }
        Some(text) => text.to_owned(),
    };
    let bytes = Bytes::from(parse_hex(&text).map_err(|e| Failure::new(Exit::USAGE, e))?);
    print_json(&document(args, bytes)?);
    Ok(())
}

/// The decoded JSON document of `bytes` as `args` describe them (`--hex` is not read).
pub fn document(args: &DecodeArgs, bytes: Bytes) -> Result<Value, Failure> {
    let spec = args.api.as_deref().map(parse_api).transpose()?;
    let kind = if args.response { Kind::Response } else { Kind::Request };
    let malformed = |e: JsonError, what: &str| match e {
        JsonError::Decode(e) if matches!(e.kind, DecodeErrorKind::UnsupportedVersion { .. }) => {
            Failure::new(Exit::USAGE, format!("{what}: {e}"))
        }
        e => Failure::new(Exit::CLUSTER, format!("malformed {what}: {e}")),
    };
    let out = if args.frame {
        let frame = json::strip_size_prefix(&bytes).map_err(|e| malformed(e.into(), "frame"))?;
        if kind == Kind::Request {
            let decoded = json::request_frame_to_json(frame, args.records)
                .map_err(|e| malformed(e, "request frame"))?;
            if let Some(spec) = spec.filter(|s| s.key != decoded.api) {
                return Err(Failure::new(
                    Exit::USAGE,
                    format!("--api {} does not match the frame's header ({})", spec.name, decoded.api),
                ));
            }
            if let Some(v) = args.version.filter(|&v| v != decoded.version) {
                return Err(Failure::new(
                    Exit::USAGE,
                    format!("--version {v} does not match the frame's header (v{})", decoded.version),
                ));
            }
            frame_document(decoded)
        } else {
            let (spec, version) = api_and_version(spec, args.version)?;
            let what = format!("{} v{version} response frame", spec.name);
            frame_document(
                json::response_frame_to_json(spec.key, version, frame, args.records)
                    .map_err(|e| malformed(e, &what))?,
            )
        }
    } else {
        let (spec, version) = api_and_version(spec, args.version)?;
        let what = format!(
            "{} v{version} {} body",
            spec.name,
            if kind == Kind::Request { "request" } else { "response" }
        );
        json::body_to_json(spec.key, kind, version, bytes, args.records).map_err(|e| malformed(e, &what))?
    };
    Ok(out)
}

/// `{"api": "Metadata", "api_key": 3, "version": 12, "header": {...}, "body": {...}}`.
fn frame_document(decoded: json::FrameJson) -> Value {
    let mut out = json!({
        "api": decoded.api.name(),
        "api_key": decoded.api.0,
        "version": decoded.version,
    });
    if let (Some(out), Value::Object(frame)) = (out.as_object_mut(), decoded.json) {
        out.extend(frame);
    }
    out
}

fn api_and_version(spec: Option<ApiSpec>, version: Option<i16>) -> Result<(ApiSpec, i16), Failure> {
    let spec = spec.ok_or_else(|| {
        Failure::new(Exit::USAGE, "--api is required (except for a request frame, whose header names it)")
    })?;
    let version = version.ok_or_else(|| {
        Failure::new(Exit::USAGE, "--version is required (except for a request frame, whose header names it)")
    })?;
    if !spec.versions.contains(version) {
        return Err(Failure::new(
            Exit::USAGE,
            format!("{} has versions {}, not {version}", spec.name, spec.versions),
        ));
    }
    Ok((spec, version))
}

/// An API by name — `ListOffsets`, `list-offsets`, `list_offsets` or `LIST_OFFSETS`, in any
/// case — or by numeric key: any API Kafka defines (kafka-wire's schema table), typed in
/// kwire or not.
pub fn parse_api(text: &str) -> Result<ApiSpec, Failure> {
    if let Ok(key) = text.trim().parse::<i16>() {
        return any_spec_for(ApiKey(key)).ok_or_else(|| {
            Failure::new(
                Exit::USAGE,
                format!("kwire cannot decode {} (API key {key}); {}", ApiKey(key), valid_apis()),
            )
        });
    }
    any_spec_by_name(text)
        .ok_or_else(|| Failure::new(Exit::USAGE, format!("unknown API `{text}`: {}", valid_apis())))
}

/// What `--api` accepts: every API kwire decodes with its key, and the spellings of a name.
fn valid_apis() -> String {
    let apis: Vec<String> = all_apis().iter().map(|s| format!("{} ({})", s.name, s.key.0)).collect();
    let forms = name_forms("ListOffsets");
    format!(
        "kwire decodes {}. Give the name as {}, {}, {} or {} (any case), or the numeric key",
        apis.join(", "),
        forms[0],
        forms[1],
        forms[2],
        forms[3]
    )
}

/// Hex digits, whitespace ignored anywhere, an optional `0x` prefix. No digits at all is an
/// empty body (ApiVersions v0–v2 requests are empty).
pub fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
    let trimmed = text.trim_start();
    let body = trimmed.strip_prefix("0x").or_else(|| trimmed.strip_prefix("0X")).unwrap_or(trimmed);
    let digits: Vec<(usize, char)> = body.char_indices().filter(|(_, c)| !c.is_whitespace()).collect();
    let mut out = Vec::with_capacity(digits.len() / 2);
    for pair in digits.chunks(2) {
        let [(_, hi), (_, lo)] = pair else {
            return Err(format!("odd number of hex digits ({})", digits.len()));
        };
        let nibble = |c: char| c.to_digit(16).ok_or_else(|| format!("`{c}` is not a hex digit"));
        out.push(u8::try_from(nibble(*hi)? * 16 + nibble(*lo)?).map_err(|e| e.to_string())?);
    }
    Ok(out)
}

/// One traced frame as a line of JSON (the same document `kwire decode --frame` prints), or
/// the reason it cannot be decoded.
pub fn trace_json(event: &TraceEvent<'_>) -> String {
    let frame = Bytes::copy_from_slice(event.frame);
    let decoded = match event.direction {
        // Request frames carry their size prefix; response frames do not.
        Direction::Request => json::strip_size_prefix(&frame)
            .map_err(JsonError::from)
            .and_then(|f| json::request_frame_to_json(f, false)),
        Direction::Response => json::response_frame_to_json(event.api, event.version, frame, false),
    };
    match decoded {
        Ok(decoded) => frame_document(decoded).to_string(),
        Err(e) => format!("cannot decode: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_ignores_whitespace_and_a_0x_prefix() {
        assert_eq!(parse_hex("00ff10"), Ok(vec![0, 0xff, 0x10]));
        assert_eq!(parse_hex("  0x00 FF\n1 0\t"), Ok(vec![0, 0xff, 0x10]));
        assert_eq!(parse_hex("0XaB"), Ok(vec![0xab]));
    }

    #[test]
    fn bad_hex_says_what_is_wrong() {
        assert_eq!(parse_hex("abc"), Err("odd number of hex digits (3)".to_owned()));
        assert_eq!(parse_hex("zz"), Err("`z` is not a hex digit".to_owned()));
        assert_eq!(parse_hex(" \n"), Ok(vec![]));
        assert_eq!(parse_hex("0x"), Ok(vec![]));
        assert_eq!(parse_hex("é0"), Err("`é` is not a hex digit".to_owned()));
    }

    #[test]
    fn apis_by_name_in_every_spelling_and_any_case_or_by_key() {
        for text in [
            "ListOffsets",
            "listoffsets",
            "list-offsets",
            "list_offsets",
            "LIST_OFFSETS",
            "List-Offsets",
            "2",
        ] {
            assert_eq!(parse_api(text).unwrap().key, ApiKey::LIST_OFFSETS, "{text}");
        }
        assert_eq!(parse_api("3").unwrap().key, ApiKey::METADATA);
        assert_eq!(parse_api("offset_for_leader_epoch").unwrap().key, ApiKey::OFFSET_FOR_LEADER_EPOCH);
        assert_eq!(parse_api("join-group").unwrap().key, ApiKey::JOIN_GROUP);
        assert_eq!(parse_api("CONSUMER_GROUP_HEARTBEAT").unwrap().key, ApiKey::CONSUMER_GROUP_HEARTBEAT);
        let unknown = parse_api("JoinGroups").unwrap_err();
        assert_eq!(unknown.exit, Exit::USAGE);
        assert!(unknown.message.contains("unknown API `JoinGroups`"), "{}", unknown.message);
        assert!(unknown.message.contains("JoinGroup (11)"), "{}", unknown.message);
        assert!(unknown.message.contains("ListOffsets (2)"), "{}", unknown.message);
        assert!(
            unknown.message.contains(
                "ListOffsets, list-offsets, list_offsets or LIST_OFFSETS (any case), or the numeric key"
            ),
            "{}",
            unknown.message
        );
        assert!(parse_api("999").unwrap_err().message.contains("cannot decode ApiKey(999) (API key 999)"));
    }
}
