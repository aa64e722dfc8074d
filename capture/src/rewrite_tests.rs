//! The endpoint rewrite checked against the schema interpreter's JSON: a rewritten response
//! must read as the original with every node endpoint (an object with `host` and `port`, not
//! a Streams `user_endpoint`) replaced, and nothing else changed.

use bytes::Bytes;
use kafka_wire::protocol::json::FrameJson;
use kafka_wire::protocol::schema::decode::response_frame_to_json;
use kafka_wire::protocol::schema::encode::json_to_frame;
use kafka_wire::protocol::schema::{self, Field, FieldType, MessageKind};
use kafka_wire::protocol::ApiKey;
use serde_json::{json, Map, Value};

use crate::rewrite::{carries_endpoints, endpoint_fields, rewrite_response, RewriteError, LEFT_ALONE};

const BODIES_4_1: &str =
    include_str!("../../kafka-wire/src/protocol/messages/testdata/kafka-4.1.1-bodies.txt");

#[allow(clippy::unnecessary_wraps)] // the shape of an `EndpointMap`
fn to_proxy(host: &str, port: i32) -> Option<(String, i32)> {
    Some((format!("proxy-of-{host}"), port + 1000))
}

/// The oracle: `value` with every node endpoint object replaced as [`to_proxy`] does, except
/// one naming no node (empty host, negative port) and a Streams `user_endpoint`.
fn expected(value: &Value, key: &str) -> Value {
    match value {
        Value::Object(object) => {
            let mut out: Map<String, Value> =
                object.iter().map(|(k, v)| (k.clone(), expected(v, k))).collect();
            let host = object.get("host").and_then(Value::as_str);
            let port = object.get("port").and_then(Value::as_i64);
            if let (Some(host), Some(port), false) = (host, port, key == "user_endpoint") {
                if !host.is_empty() && port >= 0 {
                    out.insert("host".into(), json!(format!("proxy-of-{host}")));
                    out.insert("port".into(), json!(port + 1000));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| expected(v, key)).collect()),
        other => other.clone(),
    }
}

fn read(api: ApiKey, version: i16, frame: &Bytes) -> Value {
    let FrameJson { json, .. } = response_frame_to_json(api, version, frame.clone(), false).unwrap();
    json
}

/// Rewrites `frame` and checks the result against the oracle; true if anything changed.
fn check(api: ApiKey, version: i16, frame: &Bytes) -> bool {
    let name = api.name().unwrap_or("?");
    assert_eq!(
        rewrite_response(api, version, frame, &mut |h, p| Some((h.into(), p))),
        Ok(None),
        "{name} v{version}: an identity map changes nothing"
    );
    assert_eq!(rewrite_response(api, version, frame, &mut |_, _| None), Ok(None));
    let before = read(api, version, frame);
    let rewritten = rewrite_response(api, version, frame, &mut to_proxy)
        .unwrap_or_else(|e| panic!("{name} v{version}: {e}"));
    let after = rewritten.as_ref().map_or_else(|| before.clone(), |r| read(api, version, r));
    assert_eq!(after, expected(&before, ""), "{name} v{version}");
    rewritten.is_some()
}

fn frame_of(api: ApiKey, version: i16, body: &[u8]) -> Bytes {
    let mut out = 77_i32.to_be_bytes().to_vec();
    if schema::response_header_version(api, version) == Some(1) {
        out.push(0);
    }
    out.extend(body);
    Bytes::from(out)
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex")).collect()
}

/// A response in which every field that can hold an endpoint holds one (arrays of one
/// element, `broker-N` at port 9000 + N); every other field is left to its default.
fn sample(fields: &'static [Field], version: i16, n: &mut i32) -> Value {
    let mut out = Map::new();
    let endpoint = endpoint_fields(fields, version);
    for (i, f) in fields.iter().enumerate() {
        if !f.versions.contains(version) {
            continue;
        }
        match endpoint {
            Some((host, _)) if host == i => {
                *n += 1;
                out.insert(f.name.into(), json!(format!("broker-{n}")));
            }
            Some((_, port)) if port == i => {
                out.insert(f.name.into(), json!(9000 + *n));
            }
            _ => {
                if let Some(value) = sample_type(&f.ty, version, n) {
                    out.insert(f.name.into(), value);
                }
            }
        }
    }
    Value::Object(out)
}

fn sample_type(ty: &'static FieldType, version: i16, n: &mut i32) -> Option<Value> {
    match ty {
        FieldType::Struct(fields) => Some(sample(fields, version, n)),
        FieldType::Array(element) => sample_type(element, version, n).map(|v| json!([v])),
        _ => None,
    }
}

/// The APIs whose responses name nodes a client may connect to, as Kafka 4.1 defines them.
/// A new one in the schemas fails here, so that someone looks at it.
const REWRITTEN: [&str; 13] = [
    "Produce",
    "Fetch",
    "Metadata",
    "FindCoordinator",
    "Vote",
    "BeginQuorumEpoch",
    "EndQuorumEpoch",
    "DescribeQuorum",
    "FetchSnapshot",
    "DescribeCluster",
    "ShareFetch",
    "ShareAcknowledge",
    "UpdateRaftVoter",
];

/// Every field in every response, in every version.
fn walk(fields: &'static [Field], version: i16, visit: &mut dyn FnMut(&'static [Field], &'static Field)) {
    for f in fields.iter().filter(|f| f.versions.contains(version)) {
        visit(fields, f);
        let mut ty = &f.ty;
        while let FieldType::Array(element) = ty {
            ty = element;
        }
        if let FieldType::Struct(inner) = ty {
            walk(inner, version, visit);
        }
    }
}

#[test]
fn every_host_or_port_field_in_kafkas_response_schemas_is_rewritten_or_left_alone_with_a_reason() {
    let mut rewritten: Vec<&str> = Vec::new();
    let mut left_alone_used = vec![false; LEFT_ALONE.len()];
    let mut unhandled = Vec::new();
    for m in schema::messages().iter().filter(|m| m.kind == MessageKind::Response) {
        for version in m.valid.0..=m.valid.1.min(63) {
            walk(m.fields, version, &mut |siblings, f| {
                let addressy = f.name.split('_').any(|w| w == "host" || w == "port");
                if !addressy {
                    return;
                }
                let endpoint = endpoint_fields(siblings, version)
                    .is_some_and(|(h, p)| siblings[h].path == f.path || siblings[p].path == f.path);
                if endpoint {
                    assert!(carries_endpoints(ApiKey(m.key), version), "{} v{version}", m.name);
                    if !rewritten.contains(&m.name) {
                        rewritten.push(m.name);
                    }
                    return;
                }
                let listed = LEFT_ALONE.iter().position(|(api, path, _)| {
                    *api == m.name
                        && f.path
                            .strip_prefix(path)
                            .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
                });
                match listed {
                    Some(i) => left_alone_used[i] = true,
                    None => unhandled.push(format!("{} v{version} {}", m.name, f.path)),
                }
            });
        }
    }
    assert_eq!(unhandled, Vec::<String>::new(), "host/port fields neither rewritten nor left alone");
    rewritten.sort_unstable();
    let mut want = REWRITTEN.to_vec();
    want.sort_unstable();
    assert_eq!(rewritten, want);
    for (used, (api, path, _)) in left_alone_used.iter().zip(LEFT_ALONE) {
        assert!(used, "LEFT_ALONE names {api} {path}, which no schema has");
    }
}

#[test]
fn every_response_version_with_endpoints_points_every_one_at_the_proxy() {
    let mut checked = 0;
    for m in schema::messages().iter().filter(|m| m.kind == MessageKind::Response) {
        let api = ApiKey(m.key);
        for version in m.valid.0..=m.valid.1.min(63) {
            if !carries_endpoints(api, version) {
                continue;
            }
            let mut n = 0;
            let body = sample(m.fields, version, &mut n);
            assert!(n > 0, "{} v{version}: the sample holds no endpoint", m.name);
            let document = json!({"header": {"correlation_id": 5}, "body": body});
            let frame = Bytes::from(json_to_frame(&document, Some((api, version))).unwrap());
            assert!(check(api, version, &frame), "{} v{version} changed nothing", m.name);
            checked += 1;
        }
    }
    // Produce v10-13 (4), Fetch v16-18 (3), Metadata v0-13 (14), FindCoordinator v0-6 (7),
    // DescribeCluster v0-2 (3), ShareFetch and ShareAcknowledge v0-1 (4), DescribeQuorum v2,
    // Vote v1-2, BeginQuorumEpoch v1, EndQuorumEpoch v1, FetchSnapshot v1, UpdateRaftVoter v0.
    assert_eq!(checked, 42, "(API, version) pairs that carry endpoints");
}

#[test]
fn kafkas_own_random_responses_change_only_their_endpoints() {
    let mut changed = 0;
    let mut seen = 0;
    for line in BODIES_4_1.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let [name, "response", version, hex] = fields[..] else { continue };
        let version: i16 = version.parse().unwrap();
        let Some(spec) = schema::api_specs().into_iter().find(|s| s.name == name) else { continue };
        if !carries_endpoints(spec.key, version) {
            continue;
        }
        seen += 1;
        changed += usize::from(check(spec.key, version, &frame_of(spec.key, version, &unhex(hex))));
    }
    // Metadata, FindCoordinator, Produce v10+ and Fetch v16+ fixtures.
    assert!(seen >= 30 && changed >= 15, "{seen} fixtures with endpoints, {changed} changed");
}

#[test]
fn a_produce_not_leader_response_names_the_new_leader_at_the_proxy() {
    let api = ApiKey::PRODUCE;
    let document = json!({"header": {"correlation_id": 9}, "body": {
        "responses": [{"name": "t", "partition_responses": [{
            "index": 0, "error_code": 6, "base_offset": -1,
            "current_leader": {"leader_id": 2, "leader_epoch": 7}}]}],
        "throttle_time_ms": 0,
        "node_endpoints": [{"node_id": 2, "host": "broker-2.internal", "port": 9092, "rack": null}]}});
    let frame = Bytes::from(json_to_frame(&document, Some((api, 11))).unwrap());
    let out = rewrite_response(api, 11, &frame, &mut to_proxy).unwrap().unwrap();
    let body = &read(api, 11, &out)["body"];
    assert_eq!(
        body["node_endpoints"],
        json!([{"node_id": 2, "host": "proxy-of-broker-2.internal", "port": 10092, "rack": null}])
    );
    assert_eq!(body["responses"][0]["partition_responses"][0]["current_leader"]["leader_id"], json!(2));
    // Without node_endpoints (no leader change), a Produce response is forwarded as it came.
    let quiet = json!({"header": {"correlation_id": 9}, "body": {"responses": [], "throttle_time_ms": 0}});
    let frame = Bytes::from(json_to_frame(&quiet, Some((api, 11))).unwrap());
    assert_eq!(rewrite_response(api, 11, &frame, &mut to_proxy), Ok(None));
}

#[test]
fn describe_quorum_v2_listeners_are_uint16_ports_and_a_port_above_65535_is_an_error() {
    let api = ApiKey(55);
    let document = json!({"header": {"correlation_id": 1}, "body": {
        "nodes": [{"node_id": 3, "listeners": [{"name": "CONTROLLER", "host": "c3", "port": 9093}]}]}});
    let frame = Bytes::from(json_to_frame(&document, Some((api, 2))).unwrap());
    let out = rewrite_response(api, 2, &frame, &mut to_proxy).unwrap().unwrap();
    assert_eq!(read(api, 2, &out)["body"]["nodes"][0]["listeners"][0]["port"], json!(10093));
    let too_far = rewrite_response(api, 2, &frame, &mut |h, _| Some((h.into(), 70_000)));
    assert_eq!(too_far, Err(RewriteError::PortOutOfRange(70_000)));
}

#[test]
fn find_coordinator_without_a_coordinator_keeps_its_empty_endpoint() {
    let api = ApiKey::FIND_COORDINATOR;
    let document = json!({"header": {"correlation_id": 1}, "body": {"coordinators": [
        {"key": "g", "node_id": 1, "host": "b1", "port": 1},
        {"key": "h", "node_id": -1, "host": "", "port": -1, "error_code": 15}]}});
    let frame = Bytes::from(json_to_frame(&document, Some((api, 4))).unwrap());
    let out = rewrite_response(api, 4, &frame, &mut to_proxy).unwrap().unwrap();
    let coordinators = &read(api, 4, &out)["body"]["coordinators"];
    assert_eq!((&coordinators[0]["host"], &coordinators[0]["port"]), (&json!("proxy-of-b1"), &json!(1001)));
    assert_eq!((&coordinators[1]["host"], &coordinators[1]["port"]), (&json!(""), &json!(-1)));
}

#[test]
fn every_truncation_and_byte_flip_of_a_response_is_an_error_or_a_valid_rewrite_never_a_panic() {
    let api = ApiKey::PRODUCE;
    let document = json!({"header": {"correlation_id": 9}, "body": {
        "responses": [{"name": "t", "partition_responses": [{"index": 0, "error_code": 6}]}],
        "node_endpoints": [{"node_id": 2, "host": "b2", "port": 9092}]}});
    let frame = json_to_frame(&document, Some((api, 12))).unwrap();
    for cut in 0..frame.len() {
        let short = Bytes::copy_from_slice(&frame[..cut]);
        assert!(rewrite_response(api, 12, &short, &mut to_proxy).is_err(), "cut at {cut}");
    }
    for at in 0..frame.len() {
        for flip in [0x01, 0x80, 0xff] {
            let mut bad = frame.clone();
            bad[at] ^= flip;
            if let Ok(Some(out)) = rewrite_response(api, 12, &Bytes::from(bad), &mut to_proxy) {
                assert!(!out.is_empty());
            }
        }
    }
    let claims_much = Bytes::from_static(&[0, 0, 0, 1, 0, 0xff, 0xff, 0xff, 0x0f]);
    assert!(matches!(
        rewrite_response(ApiKey::METADATA, 12, &claims_much, &mut to_proxy),
        Err(RewriteError::Decode(_))
    ));
    assert_eq!(rewrite_response(ApiKey::LIST_OFFSETS, 9, &Bytes::new(), &mut to_proxy), Ok(None));
    assert!(matches!(
        rewrite_response(ApiKey::METADATA, 99, &Bytes::new(), &mut to_proxy),
        Err(RewriteError::UnsupportedVersion { .. })
    ));
}
