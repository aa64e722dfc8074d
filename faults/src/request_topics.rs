//! The topics and partitions a request names, read from its body with the schema interpreter
//! (any API, any version), for rules with `topic` / `partition`.
//!
//! A topic is the `name` or `topic` string of an element of an array whose field name says
//! topics (`topics`, `topic_data`, ...); its partitions are the `partition_index` / `partition` /
//! `index` numbers of the elements below it, or the numbers of an int array (`partition_indexes`).
//! A topic named by id only (Fetch v13+, `topic_id`) is given by its id, which the caller maps
//! to a name (`kwire proxy` learns the ids from the Metadata answers it passes on).

use bytes::Bytes;
use serde_json::Value;

/// One (topic, partition) a request names; either side may be missing (a topic without
/// partitions, a partition of no topic).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The topic's name.
    pub topic: Option<String>,
    /// The topic's id (base64url text) where the request names it by id alone.
    pub topic_id: Option<String>,
    /// The partition's index.
    pub partition: Option<i32>,
}

/// The topic an element of a topics array names: by name, or by id alone.
#[derive(Clone, Copy)]
enum TopicRef<'a> {
    Name(&'a str),
    Id(&'a str),
}

impl TopicRef<'_> {
    fn named(self, partition: Option<i32>) -> Named {
        match self {
            TopicRef::Name(t) => Named { topic: Some(t.to_owned()), topic_id: None, partition },
            TopicRef::Id(id) => Named { topic: None, topic_id: Some(id.to_owned()), partition },
        }
    }
}

fn partition_only(partition: i32) -> Named {
    Named { topic: None, topic_id: None, partition: Some(partition) }
}

/// What `frame` (a request without its size prefix) names; nothing when it does not decode.
pub fn named_in(frame: &Bytes) -> Vec<Named> {
    let Ok(json) = kafka_wire::protocol::schema::decode::request_frame_to_json(frame.clone(), false) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    walk(&json.json["body"], None, false, &mut out);
    out
}

const PARTITION_KEYS: [&str; 3] = ["partition_index", "partition", "index"];

/// The all-zero id Kafka sends where a topic has no id (`AAAAAAAAAAAAAAAAAAAAAA`).
const NO_ID: &str = "AAAAAAAAAAAAAAAAAAAAAA";

fn walk<'a>(value: &'a Value, topic: Option<TopicRef<'a>>, in_topics: bool, out: &mut Vec<Named>) {
    let of = |topic: Option<TopicRef<'_>>, partition: i32| match topic {
        Some(t) => t.named(Some(partition)),
        None => partition_only(partition),
    };
    match value {
        Value::Object(fields) => {
            let own_topic = in_topics
                .then(|| {
                    let name = ["name", "topic"].iter().find_map(|k| fields.get(*k).and_then(Value::as_str));
                    let id = fields.get("topic_id").and_then(Value::as_str).filter(|id| *id != NO_ID);
                    name.map(TopicRef::Name).or(id.map(TopicRef::Id))
                })
                .flatten();
            let topic = own_topic.or(topic);
            if let Some(t) = own_topic {
                out.push(t.named(None));
            }
            if topic.is_some() || !in_topics {
                if let Some(p) = PARTITION_KEYS.iter().find_map(|k| fields.get(*k).and_then(Value::as_i64)) {
                    if let Ok(p) = i32::try_from(p) {
                        out.push(of(topic, p));
                    }
                }
            }
            for (key, child) in fields {
                let Value::Array(items) = child else { continue };
                if key.contains("partition") && items.iter().all(Value::is_i64) {
                    out.extend(
                        items
                            .iter()
                            .filter_map(Value::as_i64)
                            .filter_map(|p| i32::try_from(p).ok())
                            .map(|p| of(topic, p)),
                    );
                    continue;
                }
                for item in items {
                    walk(item, topic, key.contains("topic"), out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| walk(i, topic, in_topics, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_wire::protocol::frame::encode_request;
    use kafka_wire::protocol::messages::MetadataRequest;
    use kafka_wire::protocol::schema::encode::json_to_frame;

    fn named(frame: Vec<u8>) -> Vec<Named> {
        named_in(&Bytes::from(frame).slice(4..))
    }

    /// A request frame from its JSON, with a (dummy) size prefix.
    fn framed(json: &serde_json::Value) -> Vec<u8> {
        let mut frame = vec![0; 4];
        frame.extend(json_to_frame(json, None).unwrap());
        frame
    }

    fn n(topic: Option<&str>, partition: Option<i32>) -> Named {
        Named { topic: topic.map(str::to_owned), topic_id: None, partition }
    }

    #[test]
    fn topics_and_their_partitions_of_several_apis() {
        let metadata = encode_request(&MetadataRequest::for_topics(&["a".to_owned()]), 12, 1, None).unwrap();
        assert_eq!(named(metadata), [n(Some("a"), None)]);
        let list = serde_json::json!({
            "header": {"request_api_key": 2, "request_api_version": 7, "correlation_id": 1, "client_id": "c"},
            "body": {"replica_id": -1, "isolation_level": 0, "topics": [{"name": "t", "partitions": [
                {"partition_index": 0, "timestamp": -1}, {"partition_index": 5, "timestamp": -1}]}]}
        });
        assert_eq!(named(framed(&list)), [n(Some("t"), None), n(Some("t"), Some(0)), n(Some("t"), Some(5))]);
        // Produce v9 spells them topic_data[].partition_data[].index.
        let produce = serde_json::json!({
            "header": {"request_api_key": 0, "request_api_version": 9, "correlation_id": 1, "client_id": "c"},
            "body": {"acks": -1, "timeout_ms": 1000, "topic_data": [
                {"name": "orders", "partition_data": [{"index": 2, "records": null}]}]}
        });
        assert_eq!(named(framed(&produce)), [n(Some("orders"), None), n(Some("orders"), Some(2))]);
        // OffsetFetch v7 lists partitions as numbers.
        let fetch_offsets = serde_json::json!({
            "header": {"request_api_key": 9, "request_api_version": 7, "correlation_id": 1, "client_id": "c"},
            "body": {"group_id": "g", "topics": [{"name": "x", "partition_indexes": [1, 4]}]}
        });
        assert_eq!(
            named(framed(&fetch_offsets)),
            [n(Some("x"), None), n(Some("x"), Some(1)), n(Some("x"), Some(4))]
        );
        assert_eq!(named(vec![0, 0, 0, 0, 1]), []);
    }

    #[test]
    fn a_fetch_naming_topics_by_id_gives_the_ids() {
        let id = "x6PVMq1pS4W3wfd3cT6Ncg";
        let fetch = serde_json::json!({
            "header": {"request_api_key": 1, "request_api_version": 13, "correlation_id": 1, "client_id": "c"},
            "body": {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1000,
                "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                "topics": [{"topic_id": id, "partitions": [{"partition": 3, "current_leader_epoch": -1,
                    "fetch_offset": 0, "last_fetched_epoch": -1, "log_start_offset": -1,
                    "partition_max_bytes": 1000}]}],
                "forgotten_topics_data": [], "rack_id": ""}
        });
        let by_id = |partition| Named { topic: None, topic_id: Some(id.to_owned()), partition };
        assert_eq!(named(framed(&fetch)), [by_id(None), by_id(Some(3))]);
    }
}
