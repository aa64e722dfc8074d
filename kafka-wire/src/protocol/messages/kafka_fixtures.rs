//! Bodies written by Apache Kafka itself, decoded by kwire and written back byte for byte.
//!
//! `testdata/kafka-4.1.1-bodies.txt` holds random bodies that kafka-clients 4.1.1 wrote with its
//! own per-version schemas — and that its generated message classes read back — for every
//! version of every API here that Kafka 4.1 still has; `kafka-3.9.1-bodies.txt` does the same
//! with kafka-clients 3.9.1, which still has the versions Kafka 4 removed (ListOffsets v0,
//! OffsetCommit v0–1, …). `testdata/KafkaOracle.java` regenerates both. Each line is
//! `<Api> <request|response> <version> <hex>`. Set `KWIRE_KAFKA_BODIES` to a file in the same
//! format to check a larger sample.

use bytes::Bytes;

use crate::protocol::api::Body;
use crate::protocol::messages::*;

const BODIES_4_1: &str = include_str!("testdata/kafka-4.1.1-bodies.txt");
const BODIES_3_9: &str = include_str!("testdata/kafka-3.9.1-bodies.txt");
/// Real frames between kwire and the local 3-broker Kafka 4.1.1 cluster, recorded by
/// `scripts/capture-fixtures`: request frames with their size prefix, response frames from the
/// header on.
const CAPTURED_4_1: &str = include_str!("testdata/captured-4.1.1.txt");

/// Decodes `hex` at `version` and re-encodes it; `Ok(false)` when kwire does not support the
/// version (Kafka 4.1's unstable OffsetFetch/OffsetCommit v10).
fn same_bytes<T: Body + std::fmt::Debug>(hex: &str, version: i16) -> Result<bool, String> {
    if !T::SPEC.versions.contains(version) {
        return Ok(false);
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("zz"), 16))
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|e| format!("bad hex: {e}"))?;
    let value = T::decode_body(Bytes::from(bytes.clone()), version).map_err(|e| format!("decode: {e}"))?;
    let again = value.encode_body(version).map_err(|e| format!("encode: {e}"))?;
    if again == bytes {
        Ok(true)
    } else {
        Err(format!("re-encoded differently: {value:?}"))
    }
}

fn hex_bytes(hex: &str) -> Result<Vec<u8>, String> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("zz"), 16))
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|e| format!("bad hex: {e}"))
}

/// Decodes a captured request frame (size prefix, header, body) and re-encodes it whole.
fn same_request_frame<R: crate::protocol::api::Request + std::fmt::Debug>(
    hex: &str,
    version: i16,
) -> Result<bool, String> {
    let frame = hex_bytes(hex)?;
    let inner = Bytes::from(frame.get(4..).ok_or("frame shorter than its size prefix")?.to_vec());
    let (header, body) =
        crate::protocol::frame::decode_request::<R>(inner).map_err(|e| format!("decode: {e}"))?;
    if header.api_version != version {
        return Err(format!("header says v{}, the line says v{version}", header.api_version));
    }
    let again = crate::protocol::frame::encode_request(
        &body,
        version,
        header.correlation_id,
        header.client_id.as_deref(),
    )
    .map_err(|e| format!("encode: {e}"))?;
    if again == frame {
        Ok(true)
    } else {
        Err(format!("re-encoded differently: {body:?}"))
    }
}

/// Decodes a captured response frame (header, body) and checks the body re-encodes to the
/// frame's tail.
fn same_response_frame<R: crate::protocol::api::Request>(hex: &str, version: i16) -> Result<bool, String>
where
    R::Response: std::fmt::Debug,
{
    let frame = hex_bytes(hex)?;
    let (_, body) = crate::protocol::frame::decode_response::<R>(Bytes::from(frame.clone()), version)
        .map_err(|e| format!("decode: {e}"))?;
    let again = body.encode_body(version).map_err(|e| format!("encode: {e}"))?;
    if frame.ends_with(&again) && frame.len() - again.len() <= 5 {
        Ok(true)
    } else {
        Err(format!("re-encoded differently: {body:?}"))
    }
}

/// One check of a hex line at a version (see [`same_bytes`]).
type Check = fn(&str, i16) -> Result<bool, String>;

/// The checks of one API: `[request, response]` for bodies, and for whole captured frames.
struct Checks {
    bodies: [Check; 2],
    frames: [Check; 2],
}

macro_rules! checks {
    ($(($key:literal, $name:ident, $req:ident, $resp:ident)),* $(,)?) => {
        /// The checks of the API named `name` (Kafka's name, as the fixture lines write it).
        fn checks(name: &str) -> Option<Checks> {
            $(if name == stringify!($name) {
                return Some(Checks {
                    bodies: [same_bytes::<$req>, same_bytes::<$resp>],
                    frames: [same_request_frame::<$req>, same_response_frame::<$req>],
                });
            })*
            None
        }
    };
}

crate::for_each_api!(checks);

/// Runs the body or frame check of `api` in direction `dir` (`request` or `response`).
fn check_line(api: &str, dir: &str, hex: &str, version: i16, frames: bool) -> Result<bool, String> {
    let checks = checks(api).ok_or("unknown API")?;
    let pair = if frames { checks.frames } else { checks.bodies };
    match dir {
        "request" => pair[0](hex, version),
        "response" => pair[1](hex, version),
        _ => Err(format!("unknown direction `{dir}`")),
    }
}

/// Checks every line; returns how many bodies were checked.
fn check_all(lines: &str) -> usize {
    let mut checked = 0;
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split(' ').collect();
        let [api, dir, version, hex] = fields[..] else { panic!("malformed line: {line}") };
        let version: i16 = version.parse().unwrap_or_else(|e| panic!("{line}: {e}"));
        let result = check_line(api, dir, hex, version, false);
        match result {
            Ok(true) => checked += 1,
            Ok(false) => {}
            Err(e) => panic!("{api} {dir} v{version}: {e}\n{hex}"),
        }
    }
    checked
}

#[test]
fn frames_captured_from_a_real_cluster_decode_and_re_encode() {
    let mut checked = 0;
    for line in CAPTURED_4_1.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split(' ').collect();
        let [api, dir, version, hex] = fields[..] else { panic!("malformed line: {line}") };
        let version: i16 = version.parse().unwrap_or_else(|e| panic!("{line}: {e}"));
        let result = check_line(api, dir, hex, version, true);
        match result {
            Ok(true) => checked += 1,
            Ok(false) => {}
            Err(e) => panic!("{api} {dir} v{version}: {e}\n{hex}"),
        }
    }
    // Both directions of 14 APIs, up to three frames each.
    assert!(checked >= 28, "only {checked} captured frames checked");
}

#[test]
fn bodies_written_by_kafka_4_1_decode_and_re_encode_byte_for_byte() {
    // 2 per (API, direction, version) Kafka 4.1 defines, minus its unstable v10s and the
    // broker-to-broker AddPartitionsToTxn v4-5.
    assert_eq!(check_all(BODIES_4_1), 712);
}

#[test]
fn bodies_written_by_kafka_3_9_decode_and_re_encode_byte_for_byte() {
    // 2 per (API, direction, version) Kafka 3.9 defines, including those Kafka 4 removed, minus
    // the broker-to-broker AddPartitionsToTxn v4-5.
    assert_eq!(check_all(BODIES_3_9), 736);
}

#[test]
fn a_larger_sample_from_kafka_when_one_is_given() {
    if let Ok(path) = std::env::var("KWIRE_KAFKA_BODIES") {
        let lines = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(check_all(&lines) > 0);
    }
}
