//! `action = "rewrite"`: a broker's response with every field of one name set to one value —
//! a Metadata `leader_id`, a ListOffsets `offset`, a `throttle_time_ms` — decoded and encoded
//! again by the schema interpreter, so lengths, varints and tagged fields stay right. Record
//! batches pass through as the bytes they were.

use bytes::Bytes;
use kafka_wire::protocol::schema::decode::response_frame_to_json;
use kafka_wire::protocol::schema::encode::json_to_frame;
use kafka_wire::protocol::ApiKey;
use serde_json::Value;

/// `frame` (a response without its size prefix, of `api` at `version`) with every scalar field
/// named `field` in its body set to `value`, and how many were set. An error says why nothing
/// was changed: the response does not decode, has no such field, or the value does not fit
/// the field's type.
pub fn rewrite_fields(
    frame: &Bytes,
    api: ApiKey,
    version: i16,
    field: &str,
    value: &Value,
) -> Result<(Vec<u8>, usize), String> {
    let decoded = response_frame_to_json(api, version, frame.clone(), false)
        .map_err(|e| format!("the {api} v{version} response does not decode: {e}"))?;
    let mut json = decoded.json;
    let set = json.get_mut("body").map_or(0, |body| set_every(body, field, value));
    if set == 0 {
        return Err(format!("the {api} v{version} response has no field `{field}`"));
    }
    let encoded = json_to_frame(&json, Some((api, version)))
        .map_err(|e| format!("`{field}` = {value} does not fit the {api} v{version} response: {e}"))?;
    Ok((encoded, set))
}

/// Sets every scalar field named `field` below `node` to `value`; how many.
fn set_every(node: &mut Value, field: &str, value: &Value) -> usize {
    match node {
        Value::Object(fields) => fields
            .iter_mut()
            .map(|(key, child)| match child {
                Value::Object(_) | Value::Array(_) => set_every(child, field, value),
                _ if key == field => {
                    *child = value.clone();
                    1
                }
                _ => 0,
            })
            .sum(),
        Value::Array(items) => items.iter_mut().map(|item| set_every(item, field, value)).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_wire::protocol::frame::decode_response;
    use kafka_wire::protocol::messages::{ListOffsetsRequest, MetadataRequest};
    use kafka_wire::protocol::schema::encode::json_to_frame;

    /// A ListOffsets v7 response frame (no size prefix) with two partitions.
    fn list_offsets() -> Bytes {
        let json = serde_json::json!({
            "header": {"correlation_id": 9},
            "body": {"throttle_time_ms": 0, "topics": [{"name": "t", "partitions": [
                {"partition_index": 0, "error_code": 0, "timestamp": -1, "offset": 40, "leader_epoch": 3},
                {"partition_index": 1, "error_code": 0, "timestamp": -1, "offset": 41, "leader_epoch": 3}]}]}
        });
        Bytes::from(json_to_frame(&json, Some((ApiKey::LIST_OFFSETS, 7))).unwrap())
    }

    #[test]
    fn every_field_of_the_name_is_set_and_the_rest_is_kept() {
        let (frame, set) =
            rewrite_fields(&list_offsets(), ApiKey::LIST_OFFSETS, 7, "offset", &Value::from(5)).unwrap();
        assert_eq!(set, 2);
        let (header, answer) = decode_response::<ListOffsetsRequest>(Bytes::from(frame), 7).unwrap();
        assert_eq!(header.correlation_id, 9);
        let partitions = &answer.topics[0].partitions;
        assert_eq!(partitions.iter().map(|p| p.offset).collect::<Vec<_>>(), [Some(5), Some(5)]);
        assert_eq!(partitions.iter().map(|p| p.leader_epoch).collect::<Vec<_>>(), [Some(3), Some(3)]);

        let (frame, set) =
            rewrite_fields(&list_offsets(), ApiKey::LIST_OFFSETS, 7, "throttle_time_ms", &Value::from(750))
                .unwrap();
        assert_eq!(set, 1);
        let (_, answer) = decode_response::<ListOffsetsRequest>(Bytes::from(frame), 7).unwrap();
        assert_eq!(answer.throttle_time_ms, Some(750));
    }

    #[test]
    fn a_flexible_response_keeps_its_lengths_right_when_a_string_grows() {
        let json = serde_json::json!({
            "header": {"correlation_id": 1},
            "body": {"throttle_time_ms": 0, "brokers": [{"node_id": 1, "host": "h", "port": 9092, "rack": null}],
                "cluster_id": "c", "controller_id": 1, "topics": [], "cluster_authorized_operations": i32::MIN}
        });
        let frame = Bytes::from(json_to_frame(&json, Some((ApiKey::METADATA, 10))).unwrap());
        let host = Value::from("a-much-longer-host-name.example");
        let (frame, set) = rewrite_fields(&frame, ApiKey::METADATA, 10, "host", &host).unwrap();
        assert_eq!(set, 1);
        let (_, answer) = decode_response::<MetadataRequest>(Bytes::from(frame), 10).unwrap();
        assert_eq!(answer.brokers[0].host, "a-much-longer-host-name.example");
        assert_eq!(answer.brokers[0].port, 9092);
    }

    #[test]
    fn no_such_field_a_value_of_the_wrong_type_or_bytes_that_do_not_decode_change_nothing() {
        let frame = list_offsets();
        let e = rewrite_fields(&frame, ApiKey::LIST_OFFSETS, 7, "leader_id", &Value::from(1)).unwrap_err();
        assert!(e.contains("has no field `leader_id`"), "{e}");
        let e = rewrite_fields(&frame, ApiKey::LIST_OFFSETS, 7, "offset", &Value::from("x")).unwrap_err();
        assert!(e.contains("does not fit the ListOffsets v7 response"), "{e}");
        let e = rewrite_fields(&frame.slice(..6), ApiKey::LIST_OFFSETS, 7, "offset", &Value::from(1))
            .unwrap_err();
        assert!(e.contains("does not decode"), "{e}");
    }
}
