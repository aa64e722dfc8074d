//! `kwire decode`: no cluster needed. Bodies written by Apache Kafka decode to the JSON Kafka's
//! own `*JsonConverter` printed for them (camelCase names snake_cased); frames print their
//! header; `--records` reads record sets built by Kafka's `MemoryRecordsBuilder` as Kafka read
//! them; bad input is a one-line error with the right exit code.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::process::{Command, Output};

use base64::Engine as _;
use serde_json::{json, Value};

use crate::support::{json, kwire_bare, stderr, stdout};

const BODIES_4_1: &str =
    include_str!("../../kafka-wire/src/protocol/messages/testdata/kafka-4.1.1-bodies.txt");
const JSON_4_1: &str = include_str!("../../kafka-wire/src/protocol/messages/testdata/kafka-4.1.1-json.txt");
const BODIES_3_9: &str =
    include_str!("../../kafka-wire/src/protocol/messages/testdata/kafka-3.9.1-bodies.txt");
const JSON_3_9: &str = include_str!("../../kafka-wire/src/protocol/messages/testdata/kafka-3.9.1-json.txt");
const RECORDS_4_1: &str =
    include_str!("../../kafka-wire/src/protocol/records/testdata/kafka-4.1.1-records.txt");

fn decode(args: &[&str]) -> Output {
    let mut all = vec!["decode"];
    all.extend_from_slice(args);
    kwire_bare(&all)
}

fn decode_stdin(args: &[&str], input: &str) -> Output {
    crate::support::output_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_kwire")).arg("decode").args(args).env_remove("KWIRE_BOOTSTRAP"),
        Some(input),
    )
}

fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
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

/// Kafka's JsonConverter writes any non-null `records` as "" (it does not serialize record
/// data): blank kwire's base64 there so the documents compare.
fn blank_records(v: &mut Value, kafka: &Value) {
    match (v, kafka) {
        (Value::Object(ours), Value::Object(theirs)) => {
            for (key, value) in ours.iter_mut() {
                match theirs.get(key) {
                    Some(Value::String(s)) if key == "records" && s.is_empty() && value.is_string() => {
                        *value = json!("");
                    }
                    Some(t) => blank_records(value, t),
                    None => {}
                }
            }
        }
        (Value::Array(ours), Value::Array(theirs)) => {
            for (o, t) in ours.iter_mut().zip(theirs) {
                blank_records(o, t);
            }
        }
        _ => {}
    }
}

/// `(api, direction, version, hex, kafka's json)` for each line.
fn fixtures<'a>(bodies: &'a str, kafka_json: &'a str) -> Vec<(&'a str, &'a str, i16, &'a str, &'a str)> {
    bodies
        .lines()
        .zip(kafka_json.lines())
        .map(|(body, json)| {
            let f: Vec<&str> = body.split(' ').collect();
            let kafka = &json[json.find('{').expect("an object")..];
            (f[0], f[1], f[2].parse().expect("version"), f[3], kafka)
        })
        .collect()
}

#[test]
fn bodies_kafka_wrote_decode_to_kafkas_own_json() {
    // One body per (API, direction, version): Kafka 4.1's versions, then those only 3.9 has.
    let mut seen = BTreeSet::new();
    let mut compared = 0;
    let all = fixtures(BODIES_4_1, JSON_4_1).into_iter().chain(fixtures(BODIES_3_9, JSON_3_9));
    for (api, dir, version, hex, kafka) in all {
        // kwire keeps ApiVersions' feature tags raw; Kafka 4.1's OffsetFetch/OffsetCommit v10
        // are unstable and not in kwire, nor is InitProducerId v6 (two-phase commit) or the
        // broker-to-broker AddPartitionsToTxn v4+. All are covered by kafka-wire's own comparison.
        if (api == "ApiVersions" && dir == "response" && version >= 3)
            || (version == 10 && api.starts_with("Offset"))
            || (version == 6 && api == "InitProducerId")
            || (version >= 4 && api == "AddPartitionsToTxn")
            || !seen.insert((api, dir, version))
        {
            continue;
        }
        let out = decode(&["--api", api, "--version", &version.to_string(), &format!("--{dir}"), hex]);
        let mut ours = json(&out);
        let kafka = snake_keys(serde_json::from_str(kafka).expect("Kafka's JSON"));
        blank_records(&mut ours, &kafka);
        assert_eq!(ours, kafka, "{api} {dir} v{version}: {hex}");
        compared += 1;
    }
    // Every (API, direction, version) kwire and Kafka 3.9 or 4.1 share, but ApiVersions
    // responses v3 and v4.
    assert_eq!(compared, 386);
}

#[test]
fn a_request_frame_prints_its_header_and_takes_the_version_from_it() {
    // A Metadata v12 request body Kafka wrote, behind a v2 header kwire builds by hand.
    let (_, _, _, body, kafka) = fixtures(BODIES_4_1, JSON_4_1)
        .into_iter()
        .find(|(api, dir, v, _, _)| *api == "Metadata" && *dir == "request" && *v == 12)
        .expect("a Metadata v12 request");
    let header = format!("0003000c0000002a0005{}00", hex_of(b"kwire"));
    let frame = format!("{:08x}{header}{body}", header.len() / 2 + body.len() / 2);
    let out = json(&decode(&["--request", "--frame", &frame]));
    assert_eq!(out["api"], "Metadata");
    assert_eq!(out["version"], 12);
    assert_eq!(
        out["header"],
        json!({"request_api_key": 3, "request_api_version": 12, "correlation_id": 42, "client_id": "kwire"})
    );
    assert_eq!(out["body"], snake_keys(serde_json::from_str(kafka).unwrap()));

    // --api and --version may be given, but must agree with the header.
    let out = decode(&["--request", "--frame", "--api", "metadata", "--version", "12", &frame]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = decode(&["--request", "--frame", "--version", "11", &frame]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("does not match the frame's header (v12)"), "{}", stderr(&out));
}

#[test]
fn a_response_frame_needs_the_api_and_version_and_prints_its_header() {
    // ApiVersions v3 response: header v0 (correlation id 7), then error 0, one key, throttle.
    let body = "000002001200000004000000000000";
    let frame = format!("{:08x}00000007{body}", 4 + body.len() / 2);
    let out = json(&decode(&["--response", "--frame", "--api", "ApiVersions", "--version", "3", &frame]));
    assert_eq!(out["header"], json!({"correlation_id": 7}));
    assert_eq!(
        out["body"],
        json!({"error_code": 0, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}], "throttle_time_ms": 0})
    );
    let out = decode(&["--response", "--frame", &frame]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--api is required"), "{}", stderr(&out));
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// A key, value or header value as kwire prints it, back to hex (Kafka's notation).
fn data_hex(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::String(s) => hex_of(s.as_bytes()),
        Value::Object(o) => hex_of(
            &base64::engine::general_purpose::STANDARD
                .decode(o["base64"].as_str().expect("base64"))
                .expect("valid base64"),
        ),
        other => panic!("unexpected data {other}"),
    }
}

#[test]
fn records_decode_as_kafka_read_them() {
    let mut sets = 0;
    let mut lines = RECORDS_4_1.lines().filter(|l| !l.starts_with('#')).peekable();
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix("set ") else { continue };
        let (name, records) = rest.split_once(' ').expect("set <name> <hex>");
        let mut kafka_records = Vec::new();
        while let Some(next) = lines.peek().filter(|l| !l.starts_with("set ")) {
            if let Some(r) = next.strip_prefix("record ") {
                kafka_records.push(r.to_owned());
            }
            lines.next();
        }
        // A Produce v3 request carrying the set: null transactional id, acks 1, timeout 30 s,
        // topic "t", partition 0.
        let body =
            format!("ffff000100007530000000010001740000000100000000{:08x}{records}", records.len() / 2);
        let out = decode(&["--api", "Produce", "--version", "3", "--request", "--records", &body]);
        let doc = json(&out);
        let set = &doc["topic_data"][0]["partition_data"][0]["records"];
        assert_eq!(set["truncated_tail_bytes"], 0, "{name}: {set}");
        let mut ours = Vec::new();
        for batch in set["batches"].as_array().expect("batches") {
            for r in batch["records"].as_array().expect("records") {
                let headers: Vec<String> = r
                    .get("headers")
                    .and_then(Value::as_array)
                    .map(|hs| {
                        hs.iter()
                            .map(|h| {
                                format!(
                                    "{}:{}",
                                    hex_of(h["key"].as_str().unwrap().as_bytes()),
                                    data_hex(&h["value"])
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let ts = r.get("timestamp").map_or_else(|| "-1".to_owned(), Value::to_string);
                ours.push(format!(
                    "offset={} ts={ts} key={} value={} headers={}",
                    r["offset"],
                    data_hex(&r["key"]),
                    data_hex(&r["value"]),
                    headers.join(",")
                ));
            }
        }
        assert_eq!(ours, kafka_records, "{name}");
        if name == "control-commit" {
            let record = &set["batches"][0]["records"][0];
            assert_eq!(record["control"]["type"], "COMMIT", "{record}");
            assert_eq!(set["batches"][0]["is_control"], true);
        }
        sets += 1;
    }
    assert!(sets >= 20, "{sets}");

    // Without --records the field is the raw bytes in base64.
    let body = "ffff000100007530000000010001740000000100000000000000020102";
    let doc = json(&decode(&["--api", "produce", "--version", "3", "--request", body]));
    assert_eq!(doc["topic_data"][0]["partition_data"][0]["records"], "AQI=");
}

#[test]
fn hex_comes_from_stdin_with_whitespace_and_a_0x_prefix() {
    let out = decode_stdin(
        &["--api", "DeleteRecords", "--version", "0", "--response"],
        "0x 0000 0005\n 0000 0000\n",
    );
    assert_eq!(json(&out), json!({"throttle_time_ms": 5, "topics": []}));
    let out = decode_stdin(&["--api", "2", "--version", "2", "--response", "-"], "00000000 00000000");
    assert_eq!(json(&out), json!({"throttle_time_ms": 0, "topics": []}));
}

#[test]
fn bad_input_is_a_one_line_error_with_its_exit_code() {
    let cases: &[(&[&str], i32, &str)] = &[
        (&["--api", "Metadata", "--version", "1", "--response", "0g"], 1, "`g` is not a hex digit"),
        (&["--api", "Metadata", "--version", "1", "--response", "abc"], 1, "odd number of hex digits (3)"),
        (
            &["--api", "Nope", "--version", "1", "--response", "00"],
            1,
            "unknown API `Nope`: kwire decodes Produce",
        ),
        (
            &["--api", "999", "--version", "1", "--response", "00"],
            1,
            "cannot decode ApiKey(999) (API key 999)",
        ),
        (&["--api", "ListOffsets", "--version", "11", "--request", "00"], 1, "ListOffsets has versions 0-10"),
        (&["--version", "1", "--request", "00"], 1, "--api is required"),
        // One topic named "t", then the bytes end inside its partition count.
        (
            &["--api", "ListOffsets", "--version", "1", "--response", "00000001000174000000"],
            2,
            "malformed ListOffsets v1 response body: input ends",
        ),
        (
            &["--api", "DeleteRecords", "--version", "0", "--response", "000000000000000000"],
            2,
            "1 unexpected trailing byte(s) (field `DeleteRecords` at byte 8)",
        ),
        (&["--request", "--frame", "00000009000300"], 2, "malformed frame: input ends 6 byte(s) too soon"),
        (
            &["--request", "--frame", "0000000100030000"],
            2,
            "3 unexpected trailing byte(s) (field `frame` at byte 5)",
        ),
        (&["--request", "--frame", "0000000403e70000"], 2, "cannot decode ApiKey(999) (API key 999)"),
    ];
    for (args, code, message) in cases {
        let out = decode(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {err}");
        assert!(err.contains(message), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(stdout(&out).is_empty(), "{args:?}");
    }
    // A short field names itself and its byte offset.
    let err =
        stderr(&decode(&["--api", "ListOffsets", "--version", "1", "--response", "00000001000174000000"]));
    assert!(err.contains("input ends 1 byte(s) too soon (field `topics.partitions` at byte 7)"), "{err}");
    // A count larger than the bytes left is refused before anything is allocated.
    let err = stderr(&decode(&["--api", "ListOffsets", "--version", "1", "--response", "7fffffff00"]));
    assert!(
        err.contains("length 2147483647 exceeds the 1 byte(s) left in the input (field `topics`"),
        "{err}"
    );
}

#[test]
fn help_shows_an_example() {
    let out = kwire_bare(&["decode", "--help"]);
    assert!(out.status.success());
    assert!(
        stdout(&out).contains("kwire decode --api ListOffsets --version 1 --request"),
        "{}",
        stdout(&out)
    );
}

/// APIs the typed codec lacks decode through the schema interpreter: the frames and bodies a
/// Java consumer group (classic and KIP-848), a transactional producer and an admin client
/// send, written out by hand from the protocol's rules. The group-membership ones (Heartbeat,
/// JoinGroup, ConsumerGroupHeartbeat) have typed messages since; they stay here as the
/// documents the schema interpreter printed for them, which the typed rendering must print too.
#[test]
fn apis_without_typed_messages_decode_from_kafkas_schemas() {
    // Transactions on the 4.1 cluster: transaction.version must stay as scripts/cluster left it.
    let _feature = crate::support::transaction_version::shared();
    // Heartbeat v4 request frame: header v2 (correlation 7, client id "kw"), group "g",
    // generation 5, member "m", no instance id.
    let out = decode(&[
        "--request",
        "--frame",
        "00000017 000c 0004 00000007 0002 6b77 00  02 67 00000005 02 6d 00 00",
    ]);
    assert_eq!(
        json(&out),
        json!({"api": "Heartbeat", "api_key": 12, "version": 4,
               "header": {"request_api_key": 12, "request_api_version": 4, "correlation_id": 7, "client_id": "kw"},
               "body": {"group_id": "g", "generation_id": 5, "member_id": "m", "group_instance_id": null}})
    );
    // JoinGroup v5 request body: a consumer joining with the range assignor.
    let out = decode(&[
        "--api",
        "join-group",
        "--version",
        "5",
        "--request",
        "0001 67 00007530 0000ea60 0000 ffff 0008 636f6e73756d6572 00000001 0005 72616e6765 00000002 0102",
    ]);
    assert_eq!(
        json(&out),
        json!({"group_id": "g", "session_timeout_ms": 30000, "rebalance_timeout_ms": 60000, "member_id": "",
               "group_instance_id": null, "protocol_type": "consumer",
               "protocols": [{"name": "range", "metadata": "AQI="}]})
    );
    // ConsumerGroupHeartbeat v0 response body (KIP-848): member epoch 3, interval 1 s, no
    // assignment (a nullable struct).
    let out = decode(&[
        "--api",
        "CONSUMER_GROUP_HEARTBEAT",
        "--version",
        "0",
        "--response",
        "00000000 0000 00 00 00000003 000003e8 ff 00",
    ]);
    assert_eq!(
        json(&out),
        json!({"throttle_time_ms": 0, "error_code": 0, "error_message": null, "member_id": null,
               "member_epoch": 3, "heartbeat_interval_ms": 1000, "assignment": null})
    );
    // InitProducerId v4 response frame: header v1 (correlation 3), producer id 1000, epoch 1.
    let out = decode(&[
        "--response",
        "--frame",
        "--api",
        "InitProducerId",
        "--version",
        "4",
        "00000016 00000003 00  00000000 0000 00000000000003e8 0001 00",
    ]);
    assert_eq!(
        json(&out),
        json!({"api": "InitProducerId", "api_key": 22, "version": 4, "header": {"correlation_id": 3},
               "body": {"throttle_time_ms": 0, "error_code": 0, "producer_id": 1000, "producer_epoch": 1}})
    );
    // DescribeConfigs v4 request frame: every config of topic "t".
    let out = decode(&[
        "--request",
        "--frame",
        "00000016 0020 0004 00000005 0002 6b77 00  02 02 02 74 00 00 00 00 00",
    ]);
    assert_eq!(
        json(&out)["body"],
        json!({"resources": [{"resource_type": 2, "resource_name": "t", "configuration_keys": null}],
               "include_synonyms": false, "include_documentation": false})
    );
    // A version Kafka does not define is a usage error naming the API's versions.
    let out = decode(&["--api", "Heartbeat", "--version", "9", "--request", "00"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("Heartbeat has versions 0-4, not 9"), "{}", stderr(&out));
}
