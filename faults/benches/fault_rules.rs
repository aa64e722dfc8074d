//! What `kwire proxy`'s fault rules cost per request (issue 36's proof: matching stays O(1) in
//! the number of rules that cannot match, which are indexed by API key).
//!
//! A Fetch request is decided against: no rules; 10,000 Produce rules (none can match: the
//! index passes them over); 10,000 rules of any API whose client id differs (each must be
//! looked at: the linear case, for scale). Run: `cargo bench -p kwire-faults --bench fault_rules`.

use std::time::Instant;

use bytes::Bytes;
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use kafka_wire::protocol::schema::encode::json_to_frame;
use kwire_capture::peek_request;
use kwire_faults::rules::parse_flag;
use kwire_faults::{FaultSet, RequestFacts};

fn fetch_request() -> Bytes {
    let json = serde_json::json!({
        "header": {"request_api_key": 1, "request_api_version": 12, "correlation_id": 9, "client_id": "app"},
        "body": {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1,
            "topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 10}]}]}
    });
    Bytes::from(json_to_frame(&json, None).expect("a Fetch request"))
}

fn rules(count: usize, text: &str) -> FaultSet {
    let rules = (0..count).map(|i| parse_flag(text, i + 1).expect("a rule")).collect();
    FaultSet::new(rules, Instant::now(), 1)
}

fn decide(c: &mut Criterion) {
    let frame = fetch_request();
    let summary = peek_request(&frame).expect("a header");
    let facts =
        RequestFacts { summary: &summary, frame: &frame, broker: "127.0.0.1:9092", topic_name_of: &|_| None };
    let mut group = c.benchmark_group("fault_rules_decide_fetch");
    for (name, set) in [
        ("no_rules", rules(0, "action=cut-before")),
        ("10000_produce_rules", rules(10_000, "api=Produce,action=cut-before")),
        ("10000_any_api_other_client", rules(10_000, "client_id=other,action=cut-before")),
    ] {
        group.bench_function(name, |b| b.iter(|| black_box(set.decide(black_box(&facts), Instant::now()))));
    }
    group.finish();
}

criterion_group!(benches, decide);
criterion_main!(benches);
