//! The answer a rule with `action = error` sends instead of the broker's: a response of the
//! request's API and version whose topics and partitions mirror the request's, each carrying
//! the error, built from Kafka's schemas and encoded by the schema interpreter (so any API and
//! version gets a body its clients can decode, lengths and tagged fields right).
//!
//! Where the error goes: in every innermost element that has an `error_code` (each partition of
//! a Produce, Fetch, ListOffsets or OffsetCommit; each topic of a Metadata), and at the top
//! level when nothing below carries one (JoinGroup, Heartbeat, FindCoordinator v0–3) or when it
//! is a coordinator error (NOT_COORDINATOR and its kin are group-level in OffsetFetch). Beside
//! an error, the offsets a broker sends as -1 ([`INVALID_BESIDE_AN_ERROR`]) are -1 here too;
//! every other field is the schema's default.

use bytes::Bytes;
use kafka_wire::protocol::schema::{self, Field, FieldType, MessageKind};
use kafka_wire::protocol::{ErrorCode, Recovery};
use serde_json::{json, Map, Value};

/// Names a response field's counterpart in the request may have, beyond its own.
const ARRAY_ALIASES: &[(&str, &[&str])] = &[
    ("responses", &["topics", "topic_data"]),
    ("topics", &["topic_data"]),
    ("partition_responses", &["partition_data", "partitions"]),
    ("partitions", &["partition_indexes", "partition_data"]),
    ("coordinators", &["coordinator_keys"]),
];

/// Identity fields copied from the request element, and where else the request may keep them.
const IDENTITY: &[(&str, &[&str])] = &[
    ("name", &["topic"]),
    ("topic", &["name"]),
    ("topic_id", &[]),
    ("partition_index", &["partition", "index"]),
    ("index", &["partition_index", "partition"]),
    ("group_id", &[]),
    ("key", &[]),
];

/// Offsets a broker sends as -1 (unknown) in an element that carries an error, where the
/// schema's default is 0: Fetch's `HighWatermark` (Kafka's `FetchResponse.partitionResponse`),
/// Produce's `BaseOffset`, OffsetFetch's `CommittedOffset`. A 0 there is an answer no broker
/// gives: a high watermark of 0 tells a consumer at offset 0 it has reached the end (librdkafka's
/// `kcat -e` then exits having read nothing).
const INVALID_BESIDE_AN_ERROR: &[&str] = &["high_watermark", "base_offset", "committed_offset"];

/// The whole response frame (size prefix included) answering `request` (a request frame
/// without its size prefix) with `code`. An error names why not: a request that does not
/// decode, or an API the schemas lack.
pub fn error_answer(request: &Bytes, code: ErrorCode) -> Result<Vec<u8>, String> {
    let decoded = schema::decode::request_frame_to_json(request.clone(), false)
        .map_err(|e| format!("the request does not decode: {e}"))?;
    let (api, version) = (decoded.api, decoded.version);
    let message = schema::find(api, MessageKind::Response, version)
        .ok_or_else(|| format!("no response schema for {api} v{version}"))?;
    let correlation_id = decoded.json["header"]["correlation_id"].clone();
    let top_level_too = code.recovery() == Recovery::RefindCoordinator;
    let (body, _) = mirror(&decoded.json["body"], message.fields, version, code, top_level_too);
    let frame = json!({"header": {"correlation_id": correlation_id}, "body": body});
    let encoded = schema::encode::json_to_frame(&frame, Some((api, version)))
        .map_err(|e| format!("the error answer for {api} v{version} does not encode: {e}"))?;
    let size = u32::try_from(encoded.len()).map_err(|_| "the error answer is too large".to_owned())?;
    let mut out = Vec::with_capacity(4 + encoded.len());
    out.extend(size.to_be_bytes());
    out.extend(encoded);
    Ok(out)
}

/// The response struct `fields` for the request element `request`; also whether an error was
/// set in it or below it.
fn mirror(
    request: &Value,
    fields: &[Field],
    version: i16,
    code: ErrorCode,
    top_level_too: bool,
) -> (Value, bool) {
    let mut out = Map::new();
    let mut below = false;
    let present = || fields.iter().filter(|f| f.versions.contains(version));
    for f in present() {
        if let FieldType::Array(FieldType::Struct(inner)) = f.ty {
            let Some(items) = counterpart_array(request, f.name) else { continue };
            let mirrored: Vec<Value> = items
                .iter()
                .map(|item| {
                    let (value, set) = mirror(&as_element(item), inner, version, code, top_level_too);
                    below |= set;
                    value
                })
                .collect();
            out.insert(f.name.to_owned(), Value::Array(mirrored));
        } else if let Some(value) = identity(request, f.name) {
            out.insert(f.name.to_owned(), value.clone());
        }
    }
    let has_error = present().any(|f| f.name == "error_code");
    let set_here = has_error && (!below || top_level_too);
    if set_here {
        out.insert("error_code".to_owned(), json!(code.0));
        for f in present().filter(|f| INVALID_BESIDE_AN_ERROR.contains(&f.name)) {
            out.insert(f.name.to_owned(), json!(-1));
        }
    }
    (Value::Object(out), set_here || below)
}

fn counterpart_array<'a>(request: &'a Value, name: &str) -> Option<&'a Vec<Value>> {
    let aliases = ARRAY_ALIASES.iter().find(|(n, _)| *n == name).map_or(&[][..], |(_, a)| *a);
    std::iter::once(name).chain(aliases.iter().copied()).find_map(|n| request.get(n)?.as_array())
}

/// An element of a request array as an object: a bare partition number or coordinator key
/// becomes the struct its response counterpart describes.
fn as_element(item: &Value) -> Value {
    match item {
        Value::Number(n) => json!({"partition_index": n}),
        Value::String(s) => json!({"key": s}),
        other => other.clone(),
    }
}

fn identity<'a>(request: &'a Value, name: &str) -> Option<&'a Value> {
    let (_, aliases) = IDENTITY.iter().find(|(n, _)| *n == name)?;
    std::iter::once(name).chain(aliases.iter().copied()).find_map(|n| request.get(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_wire::protocol::schema::decode::response_frame_to_json;
    use kafka_wire::protocol::schema::encode::json_to_frame;
    use kafka_wire::protocol::ApiKey;

    /// The answer to the request `json`, decoded again by the schema interpreter.
    fn answered(request: &Value, code: ErrorCode) -> Value {
        let api = ApiKey(request["header"]["request_api_key"].as_i64().unwrap() as i16);
        let version = request["header"]["request_api_version"].as_i64().unwrap() as i16;
        let frame = Bytes::from(json_to_frame(request, None).unwrap());
        let answer = error_answer(&frame, code).unwrap();
        let size = u32::from_be_bytes(answer[..4].try_into().unwrap()) as usize;
        assert_eq!(size, answer.len() - 4, "the size prefix counts the rest");
        let decoded = response_frame_to_json(api, version, Bytes::from(answer).slice(4..), false).unwrap();
        assert_eq!(decoded.json["header"]["correlation_id"], json!(77));
        decoded.json["body"].clone()
    }

    fn header(api: i16, version: i16) -> Value {
        json!({"request_api_key": api, "request_api_version": version, "correlation_id": 77, "client_id": "c"})
    }

    #[test]
    fn produce_partitions_each_carry_the_error_in_old_and_flexible_versions() {
        for version in [3, 9, 11] {
            let body = answered(
                &json!({"header": header(0, version), "body": {"acks": -1, "timeout_ms": 1000, "topic_data": [
                    {"name": "orders", "partition_data": [{"index": 2, "records": null}, {"index": 5, "records": null}]}]}}),
                ErrorCode::NOT_LEADER_OR_FOLLOWER,
            );
            let topic = &body["responses"][0];
            assert_eq!(topic["name"], "orders", "v{version}");
            let partitions: Vec<(i64, i64)> = topic["partition_responses"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| (p["index"].as_i64().unwrap(), p["error_code"].as_i64().unwrap()))
                .collect();
            assert_eq!(partitions, [(2, 6), (5, 6)], "v{version}");
            assert_eq!(topic["partition_responses"][0]["base_offset"], -1, "v{version}");
        }
    }

    #[test]
    fn fetch_errors_are_per_partition_not_the_sessions() {
        let body = answered(
            &json!({"header": header(1, 12), "body": {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1,
                "topics": [{"topic": "t", "partitions": [{"partition": 3, "fetch_offset": 10}]}]}}),
            ErrorCode::FENCED_LEADER_EPOCH,
        );
        assert_eq!(body["error_code"], 0, "a top-level error would end the fetch session");
        assert_eq!(body["responses"][0]["topic"], "t");
        assert_eq!(body["responses"][0]["partitions"][0]["partition_index"], 3);
        assert_eq!(body["responses"][0]["partitions"][0]["error_code"], ErrorCode::FENCED_LEADER_EPOCH.0);
        // As a broker answers: no high watermark beside an error (0 would say "the end is 0").
        assert_eq!(body["responses"][0]["partitions"][0]["high_watermark"], -1);
        assert_eq!(body["responses"][0]["partitions"][0]["log_start_offset"], -1);
    }

    #[test]
    fn group_calls_get_it_at_the_top_and_coordinator_errors_reach_the_group_level() {
        let body = answered(
            &json!({"header": header(12, 4), "body": {"group_id": "g", "generation_id": 3, "member_id": "m"}}),
            ErrorCode::REBALANCE_IN_PROGRESS,
        );
        assert_eq!(body["error_code"], ErrorCode::REBALANCE_IN_PROGRESS.0);
        let body = answered(
            &json!({"header": header(9, 8), "body": {"groups": [{"group_id": "g",
                "topics": [{"name": "x", "partition_indexes": [1, 4]}]}], "require_stable": false}}),
            ErrorCode::NOT_COORDINATOR,
        );
        let group = &body["groups"][0];
        assert_eq!((group["group_id"].as_str(), group["error_code"].as_i64()), (Some("g"), Some(16)));
        let partitions = &group["topics"][0]["partitions"];
        assert_eq!(partitions[1]["partition_index"], 4);
        assert_eq!(partitions[1]["error_code"], 16);
        let body = answered(
            &json!({"header": header(10, 4), "body": {"key_type": 0, "coordinator_keys": ["g1", "g2"]}}),
            ErrorCode::COORDINATOR_NOT_AVAILABLE,
        );
        assert_eq!(body["coordinators"][1]["key"], "g2");
        assert_eq!(body["coordinators"][1]["error_code"], ErrorCode::COORDINATOR_NOT_AVAILABLE.0);
    }

    #[test]
    fn a_request_that_does_not_decode_is_named() {
        let e = error_answer(&Bytes::from_static(&[0, 0, 0]), ErrorCode::NOT_COORDINATOR).unwrap_err();
        assert!(e.starts_with("the request does not decode"), "{e}");
    }
}
