//! The schema interpreter on hand-built bytes, one field kind or rule per test (Kafka's own
//! bytes and JSON for every API are in `tests/schema_oracle.rs` and the fixture comparison in
//! `json.rs`). Each body is written out by hand from the protocol's rules, not by kwire.

use bytes::Bytes;
use serde_json::{json, Value};

use super::decode::{body_to_json, request_frame_to_json, response_frame_to_json};
use super::encode::{json_to_body, json_to_frame};
use crate::protocol::api::ApiKey;
use crate::protocol::error::{DecodeErrorKind, EncodeError};
use crate::protocol::json::{records_to_json, JsonError, Kind};

fn unhex(s: &str) -> Bytes {
    let s: String = s.split_whitespace().collect();
    Bytes::from(
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect::<Vec<u8>>(),
    )
}

/// Decodes, checks the JSON, and checks that encoding the JSON gives the same bytes back.
fn round_trip(api: ApiKey, kind: Kind, version: i16, hex: &str, expected: &Value) {
    let bytes = unhex(hex);
    let json = body_to_json(api, kind, version, bytes.clone(), false).unwrap();
    assert_eq!(&json, expected);
    assert_eq!(json_to_body(api, kind, version, &json).unwrap(), bytes.as_ref());
}

fn decode_error(api: ApiKey, kind: Kind, version: i16, hex: &str) -> crate::protocol::DecodeError {
    match body_to_json(api, kind, version, unhex(hex), false) {
        Err(JsonError::Decode(e)) => e,
        other => panic!("expected a decode error, got {other:?}"),
    }
}

#[test]
fn classic_strings_and_int32_in_a_non_flexible_version() {
    // Heartbeat v0: group_id "g", generation_id 5, member_id "m".
    round_trip(
        ApiKey::HEARTBEAT,
        Kind::Request,
        0,
        "0001 67  00000005  0001 6d",
        &json!({"group_id": "g", "generation_id": 5, "member_id": "m"}),
    );
}

#[test]
fn compact_strings_a_compact_null_and_an_empty_tag_section_in_a_flexible_version() {
    // Heartbeat v4: compact "g", 5, compact "m", group_instance_id compact null, no tags.
    round_trip(
        ApiKey::HEARTBEAT,
        Kind::Request,
        4,
        "02 67  00000005  02 6d  00  00",
        &json!({"group_id": "g", "generation_id": 5, "member_id": "m", "group_instance_id": null}),
    );
}

#[test]
fn unknown_tags_are_kept_as_hex_and_written_back_in_order() {
    // Heartbeat v4 with tags 2 (payload ab) and 9 (payload 0102) in its top-level section.
    round_trip(
        ApiKey::HEARTBEAT,
        Kind::Request,
        4,
        "02 67  00000005  02 6d  00  02 02 01 ab 09 02 0102",
        &json!({"group_id": "g", "generation_id": 5, "member_id": "m", "group_instance_id": null,
                "tagged_fields": {"2": "ab", "9": "0102"}}),
    );
}

#[test]
fn known_tags_become_their_fields_and_absent_ones_are_omitted() {
    // ApiVersions response v3: error 0, no api_keys, throttle 0; tags: 1 finalized_features_epoch
    // (int64 7), 3 zk_migration_ready (true).
    round_trip(
        ApiKey::API_VERSIONS,
        Kind::Response,
        3,
        "0000 01 00000000  02 01 08 0000000000000007 03 01 01",
        &json!({"error_code": 0, "api_keys": [], "throttle_time_ms": 0,
                "finalized_features_epoch": 7, "zk_migration_ready": true}),
    );
}

#[test]
fn a_tag_payload_longer_than_its_field_is_an_error() {
    // zk_migration_ready (bool) carried in two bytes.
    let e = decode_error(ApiKey::API_VERSIONS, Kind::Response, 3, "0000 01 00000000  01 03 02 0100");
    assert_eq!((e.kind, e.field), (DecodeErrorKind::TrailingBytes(1), "zk_migration_ready"));
}

#[test]
fn tags_out_of_order_are_an_error() {
    let e = decode_error(ApiKey::HEARTBEAT, Kind::Request, 4, "02 67 00000005 02 6d 00  02 09 00 02 00");
    assert_eq!(e.kind, DecodeErrorKind::TagsOutOfOrder { previous: 9, tag: 2 });
}

#[test]
fn a_nullable_struct_has_a_one_byte_marker() {
    // ConsumerGroupHeartbeat response v0: throttle 0, error 0, error_message null, member_id
    // null, epoch 3, interval 1000, then assignment: -1 (null) or 1 and the struct.
    let head = "00000000 0000 00 00 00000003 000003e8";
    let null = json!({"throttle_time_ms": 0, "error_code": 0, "error_message": null, "member_id": null,
                      "member_epoch": 3, "heartbeat_interval_ms": 1000, "assignment": null});
    round_trip(ApiKey::CONSUMER_GROUP_HEARTBEAT, Kind::Response, 0, &format!("{head} ff 00"), &null);
    // Present: one topic partition entry, uuid of 0x01 bytes, partitions [7].
    let mut present = null.clone();
    present["assignment"] = json!({"topic_partitions": [
        {"topic_id": "AQEBAQEBAQEBAQEBAQEBAQ", "partitions": [7]}
    ]});
    round_trip(
        ApiKey::CONSUMER_GROUP_HEARTBEAT,
        Kind::Response,
        0,
        &format!("{head} 01 02 01010101010101010101010101010101 02 00000007 00 00  00"),
        &present,
    );
}

#[test]
fn float64_prints_as_a_number_and_nan_as_javas_spelling() {
    // DescribeClientQuotas response v0: throttle 0, error 0, message null, one entry with no
    // entity and two values: "k" = 2.5 and "n" = NaN.
    round_trip(
        ApiKey::DESCRIBE_CLIENT_QUOTAS,
        Kind::Response,
        0,
        "00000000 0000 ffff  00000001 00000000 00000002 0001 6b 4004000000000000 0001 6e 7ff8000000000000",
        &json!({"throttle_time_ms": 0, "error_code": 0, "error_message": null,
                "entries": [{"entity": [], "values": [{"key": "k", "value": 2.5}, {"key": "n", "value": "NaN"}]}]}),
    );
}

#[test]
fn bytes_are_standard_base64_and_uuids_kafkas_base64url() {
    // SaslAuthenticate v0 request: auth_bytes 00 ff fe.
    round_trip(
        ApiKey::SASL_AUTHENTICATE,
        Kind::Request,
        0,
        "00000003 00fffe",
        &json!({"auth_bytes": "AP/+"}),
    );
    // DeleteTopics v6 request: one topic, name null, topic_id ff..ff; timeout 1000.
    round_trip(
        ApiKey::DELETE_TOPICS,
        Kind::Request,
        6,
        "02 00 ffffffffffffffffffffffffffffffff 00  000003e8 00",
        &json!({"topics": [{"name": null, "topic_id": "_____________________w"}], "timeout_ms": 1000}),
    );
}

#[test]
fn int8_int16_uint16_int64_and_bool_keep_their_sign_and_width() {
    // EndTxn v0 request: transactional_id "t", producer_id -2 (int64), producer_epoch -3
    // (int16), committed true.
    round_trip(
        ApiKey::END_TXN,
        Kind::Request,
        0,
        "0001 74 fffffffffffffffe fffd 01",
        &json!({"transactional_id": "t", "producer_id": -2, "producer_epoch": -3, "committed": true}),
    );
    // ControllerRegistration v0 request: controller_id 1, incarnation uuid 0,
    // zk_migration_ready false, listeners [{name "l", host "h", port 65535 (uint16),
    // security_protocol -1 (int16)}], features [].
    round_trip(
        ApiKey::CONTROLLER_REGISTRATION,
        Kind::Request,
        0,
        "00000001 00000000000000000000000000000000 00 02 02 6c 02 68 ffff ffff 00 01 00",
        &json!({"controller_id": 1, "incarnation_id": "AAAAAAAAAAAAAAAAAAAAAA", "zk_migration_ready": false,
                "listeners": [{"name": "l", "host": "h", "port": 65535, "security_protocol": -1}],
                "features": []}),
    );
    // DescribeConfigs v0 request: one resource of type -2 (int8) named "t", keys null.
    round_trip(
        ApiKey::DESCRIBE_CONFIGS,
        Kind::Request,
        0,
        "00000001 fe 0001 74 ffffffff",
        &json!({"resources": [{"resource_type": -2, "resource_name": "t", "configuration_keys": null}]}),
    );
}

#[test]
fn records_print_as_base64_or_decoded_like_the_typed_json() {
    // Produce v2 (a version Kafka 4 removed: from the 3.9.1 table): acks -1, timeout 1000, one
    // topic "t", partition 0, records 3 bytes (not a batch).
    let body = unhex("ffff 000003e8 00000001 0001 74 00000001 00000000 00000003 010203");
    let plain = body_to_json(ApiKey::PRODUCE, Kind::Request, 2, body.clone(), false).unwrap();
    assert_eq!(plain["topic_data"][0]["partition_data"][0]["records"], json!("AQID"));
    let decoded = body_to_json(ApiKey::PRODUCE, Kind::Request, 2, body, true).unwrap();
    assert_eq!(
        decoded["topic_data"][0]["partition_data"][0]["records"],
        records_to_json(&Bytes::from_static(&[1, 2, 3]))
    );
    // Decoded records cannot be written back; base64 can.
    let e = json_to_body(ApiKey::PRODUCE, Kind::Request, 2, &decoded).unwrap_err();
    assert!(matches!(
        e,
        JsonError::Encode(EncodeError::InvalidValue { field: "topic_data.partition_data.records", .. })
    ));
    assert!(json_to_body(ApiKey::PRODUCE, Kind::Request, 2, &plain).is_ok());
}

#[test]
fn a_huge_array_count_in_a_tiny_body_is_an_error_before_any_allocation() {
    // DescribeConfigs v0 request: 7 bytes claiming 2^31 - 1 resources.
    let started = std::time::Instant::now();
    let e = decode_error(ApiKey::DESCRIBE_CONFIGS, Kind::Request, 0, "7fffffff 000000");
    assert!(
        matches!(e.kind, DecodeErrorKind::LengthExceedsInput { claimed: 0x7fff_ffff, available: 3 }),
        "{e}"
    );
    assert_eq!((e.field, e.offset), ("resources", 4));
    assert!(started.elapsed() < std::time::Duration::from_millis(100));
    // The same in a nested, compact array: JoinGroup v6 request's protocols.
    let e = decode_error(
        ApiKey::JOIN_GROUP,
        Kind::Request,
        6,
        "02 67 00000001 00000001 02 6d 00 02 63 ffffffff0f",
    );
    assert_eq!(e.field, "protocols");
    assert!(matches!(e.kind, DecodeErrorKind::LengthExceedsInput { .. }), "{e}");
}

#[test]
fn short_and_null_fields_name_their_path_and_offset() {
    let e = decode_error(ApiKey::HEARTBEAT, Kind::Request, 0, "0001 67 0000");
    assert_eq!((e.kind, e.field, e.offset), (DecodeErrorKind::Incomplete { needed: 2 }, "generation_id", 3));
    // A compact null in the non-nullable group_id.
    let e = decode_error(ApiKey::HEARTBEAT, Kind::Request, 4, "00");
    assert_eq!((e.kind, e.field), (DecodeErrorKind::UnexpectedNull, "group_id"));
    let e = decode_error(ApiKey::HEARTBEAT, Kind::Request, 0, "0001 67 00000005 0001 6d 00");
    assert_eq!((e.kind, e.field), (DecodeErrorKind::TrailingBytes(1), "Heartbeat"));
}

#[test]
fn versions_and_apis_kafka_does_not_define_are_refused() {
    let e = decode_error(ApiKey::HEARTBEAT, Kind::Request, 99, "");
    assert_eq!(e.kind, DecodeErrorKind::UnsupportedVersion { api: "Heartbeat", version: 99 });
    let e = body_to_json(ApiKey(999), Kind::Request, 0, Bytes::new(), false).unwrap_err();
    assert_eq!(e, JsonError::UnknownApi(ApiKey(999)));
}

#[test]
fn json_of_the_wrong_type_is_an_error_naming_the_field() {
    let e = json_to_body(ApiKey::HEARTBEAT, Kind::Request, 0, &json!({"generation_id": "5"})).unwrap_err();
    assert_eq!(
        e,
        JsonError::Encode(EncodeError::InvalidValue { field: "generation_id", expected: "an int32" })
    );
    let e =
        json_to_body(ApiKey::HEARTBEAT, Kind::Request, 0, &json!({"generation_id": 1i64 << 40})).unwrap_err();
    assert!(matches!(e, JsonError::Encode(EncodeError::InvalidValue { field: "generation_id", .. })));
    let e = json_to_body(ApiKey::HEARTBEAT, Kind::Request, 0, &json!({"group_id": null})).unwrap_err();
    assert_eq!(e, JsonError::Encode(EncodeError::FieldNotInVersion { field: "group_id", version: 0 }));
    // Missing fields are written as the schema's defaults: "" and 0 for Heartbeat; 2000 for
    // DescribeTopicPartitions' response_partition_limit and null for its cursor.
    let bytes = json_to_body(ApiKey::HEARTBEAT, Kind::Request, 0, &json!({})).unwrap();
    assert_eq!(bytes, unhex("0000 00000000 0000").as_ref());
    let bytes = json_to_body(ApiKey::DESCRIBE_TOPIC_PARTITIONS, Kind::Request, 0, &json!({})).unwrap();
    assert_eq!(bytes, unhex("01 000007d0 ff 00").as_ref());
}

#[test]
fn request_header_v2_keeps_the_client_id_classic_and_frames_round_trip() {
    // Heartbeat v4 request frame: header v2 (key 12, version 4, correlation 7, client id "kw"
    // as an i16-length string, no tags), then the body.
    let frame = unhex("000c 0004 00000007 0002 6b77 00  02 67 00000005 02 6d 00 00");
    let decoded = request_frame_to_json(frame.clone(), false).unwrap();
    assert_eq!((decoded.api, decoded.version), (ApiKey::HEARTBEAT, 4));
    assert_eq!(
        decoded.json["header"],
        json!({"request_api_key": 12, "request_api_version": 4, "correlation_id": 7, "client_id": "kw"})
    );
    assert_eq!(decoded.json["body"]["member_id"], json!("m"));
    assert_eq!(json_to_frame(&decoded.json, None).unwrap(), frame.as_ref());
    // ControlledShutdown v0 (3.9.1's table) has header v0: no client id.
    let frame = unhex("0007 0000 00000009  00000002");
    let decoded = request_frame_to_json(frame.clone(), false).unwrap();
    assert_eq!(
        decoded.json["header"],
        json!({"request_api_key": 7, "request_api_version": 0, "correlation_id": 9})
    );
    assert_eq!(decoded.json["body"], json!({"broker_id": 2}));
    assert_eq!(json_to_frame(&decoded.json, None).unwrap(), frame.as_ref());
}

#[test]
fn response_headers_are_v1_when_flexible_except_for_api_versions() {
    // Heartbeat v4 response: header v1 (correlation 7, no tags), throttle 0, error 0, no tags.
    let frame = unhex("00000007 00  00000000 0000 00");
    let decoded = response_frame_to_json(ApiKey::HEARTBEAT, 4, frame.clone(), false).unwrap();
    assert_eq!(decoded.json["header"], json!({"correlation_id": 7}));
    assert_eq!(json_to_frame(&decoded.json, Some((ApiKey::HEARTBEAT, 4))).unwrap(), frame.as_ref());
    // ApiVersions v3 response: header v0 (no tag section), error 0, no api_keys, throttle 0.
    let frame = unhex("00000007  0000 01 00000000 00");
    let decoded = response_frame_to_json(ApiKey::API_VERSIONS, 3, frame, false).unwrap();
    assert_eq!(decoded.json["body"]["api_keys"], json!([]));
}
