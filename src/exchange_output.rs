//! One line (or one JSON document) per request/response pair, the same for `kwire proxy` and
//! `kwire decode --pcap`; the `--api`, `--client-id`, `--topic` and `--group` filters; a
//! count of what could not be decoded.
//!
//! Frames are decoded only through kafka-wire's JSON entry points (`request_frame_to_json`,
//! `response_frame_to_json`), so every API those learn is printed here too. An API they do not
//! know yet prints as `undecodable frame: api key N, M bytes` with the header fields that were
//! read; nothing here fails on any bytes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use bytes::Bytes;
use kafka_wire::protocol::json::{self, JsonError};
use kafka_wire::protocol::{ApiKey, ErrorCode};
use kwire_capture::{Exchange, Unmatched};
use serde_json::{json, Map, Value};

use crate::cli::Format;
use crate::output::escape;
use crate::time::format_rfc3339_micros;

/// `--api`'s reading of an API name or key. It lives in kwire-faults, whose rules read their
/// `api` key the same way: one spelling of APIs for printing pairs and for faulting them.
pub use kwire_faults::parse_api_filter;

/// Which pairs to print; an empty list lets everything through.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    pub apis: Vec<ApiKey>,
    pub client_ids: Vec<String>,
    pub topics: Vec<String>,
    pub groups: Vec<String>,
}

/// Where a pair was seen: the connection's name and its two ends, as printed.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    pub connection: &'a str,
    pub client: &'a str,
    pub broker: &'a str,
}

/// What was printed and what could not be decoded, for the closing summary and the tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Pairs seen (printed or filtered out).
    pub pairs: u64,
    /// Requests left without a response (acks 0, or the connection or capture ended).
    pub unanswered: u64,
    /// Responses no request was seen for.
    pub unmatched: u64,
    /// Frames that did not decode, by API key.
    pub undecodable: BTreeMap<i16, u64>,
}

/// Renders pairs in one format through one set of filters.
#[derive(Debug)]
pub struct Renderer {
    format: Format,
    filters: Filters,
    pub counts: Counts,
}

/// A proxy fault rule's work on a pair: where the rule was written and what it did.
#[derive(Debug, Clone, Copy)]
pub struct AppliedFault<'a> {
    pub rule: &'a str,
    pub action: &'a str,
}

/// A decoded frame, or why it is not.
enum Decoded {
    Json(Value),
    Undecodable(String),
}

impl Renderer {
    pub fn new(format: Format, filters: Filters) -> Self {
        Self { format, filters, counts: Counts::default() }
    }

    /// Whether `api` passes `--api` (checked before anything is decoded).
    pub fn wants_api(&self, api: ApiKey) -> bool {
        self.filters.apis.is_empty() || self.filters.apis.contains(&api)
    }

    /// The line or document for a pair, `None` when the filters leave it out.
    pub fn exchange(&mut self, place: Place<'_>, exchange: &Exchange) -> Option<String> {
        self.exchange_with_fault(place, exchange, None)
    }

    /// [`exchange`](Self::exchange) for a pair a proxy fault rule acted on: the line names the
    /// rule and its action (`"fault"` in JSON, `fault=` in text).
    pub fn exchange_with_fault(
        &mut self,
        place: Place<'_>,
        exchange: &Exchange,
        fault: Option<AppliedFault<'_>>,
    ) -> Option<String> {
        self.counts.pairs += 1;
        let summary = &exchange.request.summary;
        if exchange.response.is_none() {
            self.counts.unanswered += 1;
        }
        let request_frame = &exchange.request.frame;
        let request = decode_request(request_frame);
        let response =
            exchange.response.as_ref().map(|r| decode_response(summary.api, summary.version, &r.frame));
        for decoded in std::iter::once(&request).chain(response.as_ref()) {
            if matches!(decoded, Decoded::Undecodable(_)) {
                *self.counts.undecodable.entry(summary.api.0).or_default() += 1;
            }
        }
        if !self.wants_api(summary.api)
            || !(self.filters.client_ids.is_empty()
                || summary.client_id.as_ref().is_some_and(|c| self.filters.client_ids.contains(c)))
            || !self.matches_names(summary.api, &request, response.as_ref())
        {
            return None;
        }
        let errors = match &response {
            Some(Decoded::Json(v)) => error_codes(v),
            _ => Vec::new(),
        };
        let latency_us = exchange.response.as_ref().map(|r| (r.at_ns - exchange.request.at_ns) / 1000);
        let request_bytes = request_frame.len() + 4;
        let response_bytes = exchange.response.as_ref().map(|r| r.frame.len() + 4);
        let time = format_rfc3339_micros(exchange.request.at_ns);
        Some(match self.format {
            Format::Json => {
                let mut doc = Map::new();
                doc.insert("time".into(), json!(time));
                doc.insert("connection".into(), json!(place.connection));
                doc.insert("client".into(), json!(place.client));
                doc.insert("broker".into(), json!(place.broker));
                doc.insert("api".into(), json!(summary.api.name()));
                doc.insert("api_key".into(), json!(summary.api.0));
                doc.insert("version".into(), json!(summary.version));
                doc.insert("correlation_id".into(), json!(summary.correlation_id));
                doc.insert("client_id".into(), json!(summary.client_id));
                doc.insert("latency_us".into(), json!(latency_us));
                doc.insert("request_bytes".into(), json!(request_bytes));
                doc.insert("response_bytes".into(), json!(response_bytes));
                doc.insert("error_codes".into(), json!(errors.iter().map(|e| e.0).collect::<Vec<_>>()));
                doc.insert("request".into(), document(&request));
                doc.insert("response".into(), response.as_ref().map_or(Value::Null, document));
                if let Some(f) = fault {
                    doc.insert("fault".into(), json!({"rule": f.rule, "action": f.action}));
                }
                crate::output::json_safe(&Value::Object(doc).to_string()).into_owned()
            }
            Format::Text => {
                let mut line = format!(
                    "{time} {} {} -> {} client_id={} {} v{} corr={} ",
                    place.connection,
                    place.client,
                    place.broker,
                    summary.client_id.as_deref().map_or_else(|| "-".to_owned(), |c| escape(c).into_owned()),
                    summary.api,
                    summary.version,
                    summary.correlation_id,
                );
                match latency_us {
                    Some(us) => {
                        let _ = write!(line, "{}.{:03}ms", us / 1000, us % 1000);
                    }
                    None => line.push_str("no-response"),
                }
                let _ = write!(line, " req={request_bytes}B");
                if let Some(n) = response_bytes {
                    let _ = write!(line, " resp={n}B");
                }
                if !errors.is_empty() {
                    let names: Vec<String> = errors
                        .iter()
                        .map(|e| e.name().map_or_else(|| e.0.to_string(), str::to_owned))
                        .collect();
                    let _ = write!(line, " errors={}", names.join(","));
                }
                if let Some(f) = fault {
                    let _ = write!(line, " fault={}:{}", escape(f.rule), escape(f.action).replace(' ', "_"));
                }
                if let Decoded::Undecodable(why) = &request {
                    let _ = write!(line, " request: {}", escape(why));
                }
                if let Some(Decoded::Undecodable(why)) = &response {
                    let _ = write!(line, " response: {}", escape(why));
                }
                line
            }
        })
    }

    /// A frame that could not be paired.
    pub fn unmatched(&mut self, place: Place<'_>, unmatched: &Unmatched) -> String {
        self.counts.unmatched += 1;
        let (what, at_ns, bytes) = match unmatched {
            Unmatched::ShortRequest(f) => {
                ("a request frame too short for a header".to_owned(), f.at_ns, f.frame.len() + 4)
            }
            Unmatched::Response { correlation_id, frame } => (
                match correlation_id {
                    Some(c) => format!("a response with correlation id {c}, which no request seen had"),
                    None => "a response frame too short for a header".to_owned(),
                },
                frame.at_ns,
                frame.frame.len() + 4,
            ),
        };
        self.note(place, at_ns, &format!("{what} ({bytes} bytes)"))
    }

    /// A line about the stream (a resynchronisation, lost bytes, a rewrite that failed...).
    pub fn note(&self, place: Place<'_>, at_ns: i64, text: &str) -> String {
        let time = format_rfc3339_micros(at_ns);
        match self.format {
            Format::Json => {
                let doc = json!({
                    "time": time,
                    "connection": place.connection,
                    "client": place.client,
                    "broker": place.broker,
                    "notice": text,
                });
                crate::output::json_safe(&doc.to_string()).into_owned()
            }
            Format::Text => {
                format!("{time} {} {} -> {} {}", place.connection, place.client, place.broker, escape(text))
            }
        }
    }

    /// The closing summary line (for stderr).
    pub fn summary(&self) -> String {
        let c = &self.counts;
        let mut text = format!(
            "{} pairs, {} without a response, {} unmatched responses",
            c.pairs, c.unanswered, c.unmatched
        );
        if !c.undecodable.is_empty() {
            let apis: Vec<String> =
                c.undecodable.iter().map(|(key, n)| format!("{} x{n}", ApiKey(*key))).collect();
            let _ = write!(text, "; undecodable frames: {}", apis.join(", "));
        }
        text
    }

    /// `--topic` / `--group`: the pair names one of them somewhere in its request or response.
    fn matches_names(&self, api: ApiKey, request: &Decoded, response: Option<&Decoded>) -> bool {
        let bodies: Vec<&Value> = std::iter::once(request)
            .chain(response)
            .filter_map(|d| match d {
                Decoded::Json(v) => v.get("body"),
                Decoded::Undecodable(_) => None,
            })
            .collect();
        let topics_ok = self.filters.topics.is_empty()
            || bodies
                .iter()
                .any(|b| names_in(b, None, &TOPIC_KEYS).iter().any(|n| self.filters.topics.contains(n)));
        let groups_ok = self.filters.groups.is_empty()
            || bodies.iter().any(|b| {
                let mut names = names_in(b, None, &GROUP_KEYS);
                if api == ApiKey::FIND_COORDINATOR
                    && b.get("key_type").and_then(Value::as_i64).unwrap_or(0) == 0
                {
                    names.extend(names_in(b, None, &["key", "coordinator_keys"]));
                }
                names.iter().any(|n| self.filters.groups.contains(n))
            });
        topics_ok && groups_ok
    }
}

/// Fields that hold a topic name (`name` counts only inside a `topics` array).
const TOPIC_KEYS: [&str; 3] = ["topic", "topic_name", "topics.name"];
/// Fields that hold a group id.
const GROUP_KEYS: [&str; 3] = ["group_id", "groups", "groups.group_id"];

/// Every string under one of `keys` (`parent.key` for a key inside an array named `parent`).
fn names_in(value: &Value, parent: Option<&str>, keys: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let dotted = parent.map(|p| format!("{p}.{k}"));
                let named =
                    keys.contains(&k.as_str()) || dotted.as_deref().is_some_and(|d| keys.contains(&d));
                match v {
                    Value::String(s) if named => out.push(s.clone()),
                    Value::Array(items) => {
                        for item in items {
                            match item {
                                Value::String(s) if named => out.push(s.clone()),
                                other => out.extend(names_in(other, Some(k), keys)),
                            }
                        }
                    }
                    other => out.extend(names_in(other, None, keys)),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| out.extend(names_in(i, parent, keys))),
        _ => {}
    }
    out
}

/// Every non-zero `error_code` in a decoded response, each once, in order of appearance.
fn error_codes(frame: &Value) -> Vec<ErrorCode> {
    fn walk(v: &Value, out: &mut Vec<ErrorCode>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    if k == "error_code" {
                        if let Some(code) = v.as_i64().and_then(|c| i16::try_from(c).ok()).filter(|&c| c != 0)
                        {
                            if !out.contains(&ErrorCode(code)) {
                                out.push(ErrorCode(code));
                            }
                        }
                    } else {
                        walk(v, out);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Some(body) = frame.get("body") {
        walk(body, &mut out);
    }
    out
}

fn decode_request(frame: &Bytes) -> Decoded {
    match json::request_frame_to_json(frame.clone(), false) {
        Ok(decoded) => Decoded::Json(decoded.json),
        Err(e) => Decoded::Undecodable(undecodable(e, frame.len() + 4)),
    }
}

fn decode_response(api: ApiKey, version: i16, frame: &Bytes) -> Decoded {
    match json::response_frame_to_json(api, version, frame.clone(), false) {
        Ok(decoded) => Decoded::Json(decoded.json),
        Err(e) => Decoded::Undecodable(undecodable(e, frame.len() + 4)),
    }
}

/// `undecodable frame: api key 60, 57 bytes` for an API kwire has no codec for; the decode
/// error otherwise.
fn undecodable(e: JsonError, bytes: usize) -> String {
    match e {
        JsonError::UnknownApi(api) => format!("undecodable frame: api key {}, {bytes} bytes", api.0),
        other => format!("undecodable frame ({bytes} bytes): {other}"),
    }
}

fn document(decoded: &Decoded) -> Value {
    match decoded {
        Decoded::Json(v) => v.clone(),
        Decoded::Undecodable(why) => json!({ "undecodable": why }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_wire::protocol::frame::encode_request;
    use kafka_wire::protocol::messages::{FindCoordinatorRequest, MetadataRequest};
    use kwire_capture::{peek_request, PendingRequest, ResponseFrame};

    fn exchange(frame: Vec<u8>, response: Option<Vec<u8>>) -> Exchange {
        let frame = Bytes::from(frame).slice(4..);
        Exchange {
            request: PendingRequest { summary: peek_request(&frame).unwrap(), frame, at_ns: 1_000_000 },
            response: response.map(|r| ResponseFrame { frame: Bytes::from(r), at_ns: 3_500_000 }),
        }
    }

    const PLACE: Place<'static> =
        Place { connection: "#1", client: "127.0.0.1:5000", broker: "127.0.0.1:9092" };

    #[test]
    fn an_api_kwire_cannot_decode_prints_its_header_fields_and_size() {
        let mut frame = 57_u32.to_be_bytes().to_vec();
        frame.extend(1234_i16.to_be_bytes());
        frame.extend(0_i16.to_be_bytes());
        frame.extend(7_i32.to_be_bytes());
        frame.extend(2_i16.to_be_bytes());
        frame.extend(b"me");
        frame.extend([0; 45]);
        let mut r = Renderer::new(Format::Text, Filters::default());
        let line = r.exchange(PLACE, &exchange(frame, Some(vec![0, 0, 0, 7]))).unwrap();
        assert_eq!(
            line,
            "1970-01-01T00:00:00.001000Z #1 127.0.0.1:5000 -> 127.0.0.1:9092 client_id=me ApiKey(1234) v0 corr=7 \
             2.500ms req=61B resp=8B request: undecodable frame: api key 1234, 61 bytes \
             response: undecodable frame: api key 1234, 8 bytes"
        );
        assert_eq!(r.counts.undecodable, BTreeMap::from([(1234, 2)]));
    }

    #[test]
    fn json_has_the_decoded_request_and_filters_select_by_topic_group_api_and_client() {
        let metadata =
            encode_request(&MetadataRequest::for_topics(&["orders".into()]), 12, 3, Some("app")).unwrap();
        let find = encode_request(
            &FindCoordinatorRequest { key: Some("billing".into()), key_type: Some(0), ..Default::default() },
            3,
            4,
            Some("app"),
        )
        .unwrap();
        let mut r = Renderer::new(Format::Json, Filters::default());
        let doc: Value =
            serde_json::from_str(&r.exchange(PLACE, &exchange(metadata.clone(), None)).unwrap()).unwrap();
        assert_eq!(doc["api"], "Metadata");
        assert_eq!(doc["request"]["body"]["topics"][0]["name"], "orders");
        assert_eq!(doc["response"], Value::Null);
        assert_eq!(doc["latency_us"], Value::Null);

        let topic = Filters { topics: vec!["orders".into()], ..Default::default() };
        let mut r = Renderer::new(Format::Text, topic);
        assert!(r.exchange(PLACE, &exchange(metadata.clone(), None)).is_some());
        assert!(r.exchange(PLACE, &exchange(find.clone(), None)).is_none());

        let group = Filters { groups: vec!["billing".into()], ..Default::default() };
        let mut r = Renderer::new(Format::Text, group);
        assert!(r.exchange(PLACE, &exchange(find.clone(), None)).is_some());
        assert!(r.exchange(PLACE, &exchange(metadata.clone(), None)).is_none());

        let api = Filters { apis: vec![parse_api_filter("find-coordinator").unwrap()], ..Default::default() };
        let mut r = Renderer::new(Format::Text, api);
        assert!(r.exchange(PLACE, &exchange(metadata.clone(), None)).is_none());
        assert!(r.exchange(PLACE, &exchange(find, None)).is_some());

        let client = Filters { client_ids: vec!["other".into()], ..Default::default() };
        let mut r = Renderer::new(Format::Text, client);
        assert!(r.exchange(PLACE, &exchange(metadata, None)).is_none());
        assert_eq!(r.counts.pairs, 1);
    }

    #[test]
    fn error_codes_are_collected_once_each_from_anywhere_in_the_body() {
        let v = json!({"body": {"error_code": 0, "topics": [{"error_code": 3}, {"partitions": [{"error_code": 3}, {"error_code": 6}]}]}});
        assert_eq!(error_codes(&v), vec![ErrorCode(3), ErrorCode(6)]);
    }
}
