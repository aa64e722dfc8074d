//! The schema interpreter against the typed codec on the same bytes (issue 13, "Speed"): the
//! Metadata v12 response (3 brokers × 1,000 topics × 10 partitions), the ListOffsets v8
//! response (10,000 partitions) and a Produce v9 request carrying a ~1 MiB record batch of
//! 8,738 records. Per case, four decoders of one body:
//!
//! - `typed`: `Body::decode_body` into kwire's structs (for Produce, then `RecordSet::decode`);
//! - `typed+json`: the typed decode rendered as JSON (`json::body_to_json`, what `kwire decode`
//!   does for an API the typed codec has);
//! - `schema`: the interpreter, bytes to JSON (`schema::decode::body_to_json`);
//! - `schema/encode`: the interpreter writing that JSON back.
//!
//! Both JSON paths render records decoded (`records: true`), so the record case compares the
//! same work. Before timing, each case checks that both JSON documents are equal and that the
//! interpreter writes the input bytes back. Run through `scripts/bench-codec schema` (it fixes
//! glibc's allocator settings, see `codec.rs`).

mod inputs;

use std::hint::black_box;
use std::time::Duration;

use bytes::Bytes;
use criterion::{criterion_group, Criterion, Throughput};
use inputs::{batch, list_offsets, metadata};
use kafka_wire::protocol::json::{self, Kind};
use kafka_wire::protocol::messages::{ListOffsetsResponse, MetadataResponse, ProduceRequest};
use kafka_wire::protocol::records::{Compression, DecodeOptions, RecordSet};
use kafka_wire::protocol::schema::{decode, encode};
use kafka_wire::protocol::{ApiKey, Body};
use serde_json::json;

fn case<T: Body>(
    c: &mut Criterion,
    typed_records: Option<fn(&T)>,
    name: &str,
    api: ApiKey,
    kind: Kind,
    version: i16,
    bytes: &Bytes,
) {
    // Records decoded on both paths when the typed one has a record decode to run.
    let records = typed_records.is_some();
    let typed_json = json::body_to_json(api, kind, version, bytes.clone(), records).expect("typed JSON");
    let schema_json = decode::body_to_json(api, kind, version, bytes.clone(), records).expect("schema JSON");
    assert_eq!(typed_json, schema_json, "{name}: the two JSON renderings differ");
    let plain = decode::body_to_json(api, kind, version, bytes.clone(), false).expect("schema JSON");
    let again = encode::json_to_body(api, kind, version, &plain).expect("schema encode");
    assert_eq!(again, bytes.as_ref(), "{name}: the interpreter writes other bytes");

    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("typed", |b| {
        b.iter(|| {
            let body = T::decode_body(black_box(bytes).clone(), version).expect("typed decode");
            if let Some(decode_records) = typed_records {
                decode_records(&body);
            }
            body
        });
    });
    group.bench_function("typed+json", |b| {
        b.iter(|| {
            json::body_to_json(api, kind, version, black_box(bytes).clone(), records).expect("typed JSON")
        });
    });
    group.bench_function("schema", |b| {
        b.iter(|| {
            decode::body_to_json(api, kind, version, black_box(bytes).clone(), records).expect("schema JSON")
        });
    });
    group.bench_function("schema/encode", |b| {
        b.iter(|| encode::json_to_body(api, kind, version, black_box(&plain)).expect("schema encode"));
    });
    group.finish();
}

/// The typed path's record decode for the Produce case.
fn produce_records(request: &ProduceRequest) {
    for topic in &request.topic_data {
        for partition in &topic.partition_data {
            if let Some(records) = &partition.records {
                black_box(RecordSet::decode(records, &DecodeOptions::default()).expect("records"));
            }
        }
    }
}

fn cases(c: &mut Criterion) {
    let bytes = Bytes::from(metadata(12).encode_body(12).expect("encode"));
    case::<MetadataResponse>(
        c,
        None,
        "schema_vs_typed/metadata_v12_3x1000x10",
        ApiKey::METADATA,
        Kind::Response,
        12,
        &bytes,
    );
    let bytes = Bytes::from(list_offsets(8).encode_body(8).expect("encode"));
    case::<ListOffsetsResponse>(
        c,
        None,
        "schema_vs_typed/list_offsets_v8_10000",
        ApiKey::LIST_OFFSETS,
        Kind::Response,
        8,
        &bytes,
    );
    let mut batch_bytes = Vec::new();
    batch(Compression::None).encode(&mut batch_bytes).expect("encode batch");
    let request = json!({
        "transactional_id": null, "acks": -1, "timeout_ms": 30000,
        "topic_data": [{"name": "events", "partition_data": [{"index": 0, "records": json::base64(&batch_bytes)}]}]
    });
    let bytes =
        Bytes::from(encode::json_to_body(ApiKey::PRODUCE, Kind::Request, 9, &request).expect("encode"));
    case::<ProduceRequest>(
        c,
        Some(produce_records),
        "schema_vs_typed/produce_v9_record_batch_1mib",
        ApiKey::PRODUCE,
        Kind::Request,
        9,
        &bytes,
    );
}

fn config() -> Criterion {
    Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = cases
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
