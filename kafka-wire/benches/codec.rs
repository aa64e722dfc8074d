//! Codec benchmarks: kwire side by side with the two Rust peers, the `kafka-protocol` crate
//! (generated codec) and `rskafka` (its protocol module, public with `unstable-fuzzing`), on
//! the same bytes.
//!
//! Every input is produced once by kwire's encoder; before any timing, each peer that has the
//! case decodes those bytes and must yield the same values as kwire (and kafka-protocol's
//! message encoder must write the same bytes back), so every number compares the same work.
//!
//! Cases (issue 3, "Speed"): Metadata response, 3 brokers × 1,000 topics × 10 partitions (v12,
//! v4); ListOffsets response, 10,000 partitions (v8, v3); OffsetFetch response, 10,000
//! partitions (v8); a ~1 MiB record batch of 8,738 records (10-byte keys, 100-byte values),
//! uncompressed and with each codec. Decode and encode. rskafka has only Metadata v0–4 and
//! ListOffsets v0–3 responses (decode only) and record batches.
//!
//! Allocator: glibc's heap trimming makes decode times of large messages bimodal on these
//! machines; run through `scripts/bench-codec`, which fixes `MALLOC_MMAP_THRESHOLD_`,
//! `MALLOC_TRIM_THRESHOLD_` and `MALLOC_TOP_PAD_` for the whole process, so every codec runs
//! under the same settings (they share the process).

use std::hint::black_box;
use std::io::Cursor;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, BenchmarkGroup, Criterion, Throughput};
use kafka_wire::protocol::messages::{
    ListOffsetsResponse, MetadataResponse, OffsetFetchResponse, OffsetFetchResponseGroup,
    OffsetFetchResponsePartition, OffsetFetchResponseTopic,
};
use kafka_wire::protocol::records::{BatchView, Compression, DecodeOptions, RecordBatch};
use kafka_wire::protocol::{Body, ErrorCode, TaggedFields};
use rskafka::protocol::api_version::ApiVersion;
use rskafka::protocol::primitives::{Array, Int16, Int32};
use rskafka::protocol::traits::{ReadType as _, WriteType as _};

type Measurement = criterion::measurement::WallTime;

// ---------------------------------------------------------------------------------------------
// Inputs: `inputs/mod.rs`, and the OffsetFetch response here.

mod inputs;

use inputs::{batch, list_offsets, metadata, offset_of, topic_name, OFFSETS_PARTITIONS, OFFSETS_TOPICS};

fn offset_fetch() -> OffsetFetchResponse {
    let topics = (0..OFFSETS_TOPICS)
        .map(|t| OffsetFetchResponseTopic {
            name: topic_name(t),
            partitions: (0..OFFSETS_PARTITIONS)
                .map(|p| OffsetFetchResponsePartition {
                    partition_index: p,
                    committed_offset: offset_of(t, p) - 17,
                    committed_leader_epoch: Some(3),
                    metadata: Some(String::new()),
                    error_code: ErrorCode(0),
                    tagged_fields: TaggedFields::default(),
                })
                .collect(),
            tagged_fields: TaggedFields::default(),
        })
        .collect();
    OffsetFetchResponse {
        throttle_time_ms: Some(0),
        topics: None,
        error_code: None,
        groups: Some(vec![OffsetFetchResponseGroup {
            group_id: "spark-kafka-source-bench".to_owned(),
            topics,
            error_code: ErrorCode(0),
            tagged_fields: TaggedFields::default(),
        }]),
        tagged_fields: TaggedFields::default(),
    }
}

// ---------------------------------------------------------------------------------------------
// A neutral view of each message, so the three decoders' outputs can be compared.

/// (node_id, host, port, rack)
type BrokerView = (i32, String, i32, Option<String>);
/// (error, index, leader, leader_epoch or -1, replicas, isr, offline)
type PartitionView = (i16, i32, i32, i32, Vec<i32>, Vec<i32>, Vec<i32>);
/// (error, name, topic id or zero, internal, partitions)
type TopicView = (i16, String, [u8; 16], bool, Vec<PartitionView>);
type MetadataView = (Vec<BrokerView>, Option<String>, i32, Vec<TopicView>);
/// (topic, partition, error, offset, leader_epoch or -1, metadata)
type OffsetView = (String, i32, i16, i64, i32, Option<String>);

fn kwire_metadata_view(m: &MetadataResponse) -> MetadataView {
    (
        m.brokers.iter().map(|b| (b.node_id, b.host.clone(), b.port, b.rack.clone())).collect(),
        m.cluster_id.clone(),
        m.controller_id.unwrap_or(-1),
        m.topics
            .iter()
            .map(|t| {
                (
                    t.error_code.0,
                    t.name.clone().unwrap_or_default(),
                    t.topic_id.unwrap_or_default().0,
                    t.is_internal.unwrap_or(false),
                    t.partitions
                        .iter()
                        .map(|p| {
                            (
                                p.error_code.0,
                                p.partition_index,
                                p.leader_id,
                                p.leader_epoch.unwrap_or(-1),
                                p.replica_nodes.to_vec(),
                                p.isr_nodes.to_vec(),
                                p.offline_replicas.as_deref().unwrap_or_default().to_vec(),
                            )
                        })
                        .collect(),
                )
            })
            .collect(),
    )
}

fn kp_metadata_view(m: &kafka_protocol::messages::MetadataResponse) -> MetadataView {
    let ids = |v: &[kafka_protocol::messages::BrokerId]| v.iter().map(|b| b.0).collect::<Vec<_>>();
    (
        m.brokers
            .iter()
            .map(|b| (b.node_id.0, b.host.to_string(), b.port, b.rack.as_ref().map(ToString::to_string)))
            .collect(),
        m.cluster_id.as_ref().map(ToString::to_string),
        m.controller_id.0,
        m.topics
            .iter()
            .map(|t| {
                (
                    t.error_code,
                    t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default(),
                    *t.topic_id.as_bytes(),
                    t.is_internal,
                    t.partitions
                        .iter()
                        .map(|p| {
                            (
                                p.error_code,
                                p.partition_index,
                                p.leader_id.0,
                                p.leader_epoch,
                                ids(&p.replica_nodes),
                                ids(&p.isr_nodes),
                                ids(&p.offline_replicas),
                            )
                        })
                        .collect(),
                )
            })
            .collect(),
    )
}

fn rs_error(e: Option<&rskafka::protocol::error::Error>) -> i16 {
    // Every fixture carries error code 0, which rskafka reads as "no error".
    assert!(e.is_none(), "unexpected error {e:?}");
    0
}

fn rs_metadata_view(m: &rskafka::protocol::messages::MetadataResponse) -> MetadataView {
    (
        m.brokers
            .iter()
            .map(|b| (b.node_id.0, b.host.0.clone(), b.port.0, b.rack.as_ref().and_then(|r| r.0.clone())))
            .collect(),
        m.cluster_id.as_ref().and_then(|c| c.0.clone()),
        m.controller_id.map_or(-1, |c| c.0),
        m.topics
            .iter()
            .map(|t| {
                (
                    rs_error(t.error.as_ref()),
                    t.name.0.clone(),
                    [0; 16],
                    t.is_internal.is_some_and(|b| b.0),
                    t.partitions
                        .iter()
                        .map(|p| {
                            let ids =
                                |a: &Array<Int32>| a.0.iter().flatten().map(|i| i.0).collect::<Vec<_>>();
                            (
                                rs_error(p.error.as_ref()),
                                p.partition_index.0,
                                p.leader_id.0,
                                -1,
                                ids(&p.replica_nodes),
                                ids(&p.isr_nodes),
                                Vec::new(),
                            )
                        })
                        .collect(),
                )
            })
            .collect(),
    )
}

fn kwire_list_offsets_view(m: &ListOffsetsResponse) -> Vec<OffsetView> {
    m.topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                (
                    t.name.clone(),
                    p.partition_index,
                    p.error_code.0,
                    p.offset.unwrap_or(-1),
                    p.leader_epoch.unwrap_or(-1),
                    p.timestamp.map(|ts| ts.to_string()),
                )
            })
        })
        .collect()
}

fn kp_list_offsets_view(m: &kafka_protocol::messages::ListOffsetsResponse) -> Vec<OffsetView> {
    m.topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                (
                    t.name.0.to_string(),
                    p.partition_index,
                    p.error_code,
                    p.offset,
                    p.leader_epoch,
                    Some(p.timestamp.to_string()),
                )
            })
        })
        .collect()
}

fn rs_list_offsets_view(m: &rskafka::protocol::messages::ListOffsetsResponse) -> Vec<OffsetView> {
    m.topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                (
                    t.name.0.clone(),
                    p.partition_index.0,
                    rs_error(p.error_code.as_ref()),
                    p.offset.map_or(-1, |o| o.0),
                    -1,
                    p.timestamp.map(|ts| ts.0.to_string()),
                )
            })
        })
        .collect()
}

fn kwire_offset_fetch_view(m: &OffsetFetchResponse) -> Vec<OffsetView> {
    m.groups
        .iter()
        .flatten()
        .flat_map(|g| &g.topics)
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                (
                    t.name.clone(),
                    p.partition_index,
                    p.error_code.0,
                    p.committed_offset,
                    p.committed_leader_epoch.unwrap_or(-1),
                    p.metadata.clone(),
                )
            })
        })
        .collect()
}

fn kp_offset_fetch_view(m: &kafka_protocol::messages::OffsetFetchResponse) -> Vec<OffsetView> {
    m.groups
        .iter()
        .flat_map(|g| &g.topics)
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                (
                    t.name.0.to_string(),
                    p.partition_index,
                    p.error_code,
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.metadata.as_ref().map(ToString::to_string),
                )
            })
        })
        .collect()
}

/// (offset, timestamp, key, value, header count)
type RecordView = (i64, i64, Option<Vec<u8>>, Option<Vec<u8>>, usize);

fn kwire_records_view(b: &RecordBatch) -> Vec<RecordView> {
    b.records
        .iter()
        .map(|r| {
            (
                b.base_offset + i64::from(r.offset_delta),
                b.base_timestamp + r.timestamp_delta,
                r.key.as_ref().map(|k| k.to_vec()),
                r.value.as_ref().map(|v| v.to_vec()),
                r.headers.len(),
            )
        })
        .collect()
}

fn kwire_borrowed_view(bytes: &[u8], opts: &DecodeOptions) -> Vec<RecordView> {
    let view = BatchView::parse(bytes, opts).expect("kwire views its batch");
    view.records()
        .map(|r| {
            let r = r.expect("kwire reads its records");
            (
                view.header.offset_of(&r),
                view.header.timestamp_of(&r),
                r.key.map(<[u8]>::to_vec),
                r.value.map(<[u8]>::to_vec),
                r.headers.len(),
            )
        })
        .collect()
}

/// Decoding through the view: the header, the CRC, and every record's offset, timestamp, key,
/// value and header count read and handed to `black_box` (what a consumer touches).
fn kwire_view_decode(bytes: &[u8], opts: &DecodeOptions) -> usize {
    let view = BatchView::parse(bytes, opts).expect("kwire views its batch");
    let mut n = 0;
    for r in view.records() {
        let r = r.expect("kwire reads its records");
        black_box((view.header.offset_of(&r), view.header.timestamp_of(&r), r.key, r.value, r.headers));
        n += 1;
    }
    n
}

fn kp_records_view(s: &kafka_protocol::records::RecordSet) -> Vec<RecordView> {
    s.records
        .iter()
        .map(|r| {
            (
                r.offset,
                r.timestamp,
                r.key.as_ref().map(|k| k.to_vec()),
                r.value.as_ref().map(|v| v.to_vec()),
                r.headers.len(),
            )
        })
        .collect()
}

fn rs_records_view(b: &rskafka::protocol::record::RecordBatch) -> Vec<RecordView> {
    let rskafka::protocol::record::ControlBatchOrRecords::Records(records) = &b.records else {
        panic!("rskafka read a control batch");
    };
    records
        .iter()
        .map(|r| {
            (
                b.base_offset + i64::from(r.offset_delta),
                b.first_timestamp + r.timestamp_delta,
                r.key.clone(),
                r.value.clone(),
                r.headers.len(),
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The peers' calls, each one expression so the timed closures stay obviously alike.

fn kp_decode<T: kafka_protocol::protocol::Decodable>(bytes: &Bytes, version: i16) -> T {
    T::decode(&mut bytes.clone(), version).expect("kafka-protocol decodes kwire's bytes")
}

fn kp_encode<T: kafka_protocol::protocol::Encodable>(value: &T, version: i16) -> BytesMut {
    let mut out = BytesMut::new();
    value.encode(&mut out, version).expect("kafka-protocol encodes");
    out
}

fn rs_decode<T: rskafka::protocol::messages::ReadVersionedType<Cursor<&'static [u8]>>>(
    bytes: &'static [u8],
    version: i16,
) -> T {
    T::read_versioned(&mut Cursor::new(bytes), ApiVersion(Int16(version)))
        .expect("rskafka decodes kwire's bytes")
}

fn kwire_decode<T: Body>(bytes: &Bytes, version: i16) -> T {
    T::decode_body(bytes.clone(), version).expect("kwire decodes its own bytes")
}

fn configure(group: &mut BenchmarkGroup<'_, Measurement>, bytes: usize) {
    group.throughput(Throughput::Bytes(bytes as u64));
}

// ---------------------------------------------------------------------------------------------
// Message cases.

/// One message case: kwire and kafka-protocol decode and encode; rskafka decodes when it has
/// the version (`rs`). The equality checks run once, before timing.
fn message_case<K, P, R>(
    c: &mut Criterion,
    name: &str,
    value: &K,
    version: i16,
    kwire_view: impl Fn(&K) -> Vec<u8>,
    kp_view: impl Fn(&P) -> Vec<u8>,
    rs: Option<fn(&R) -> Vec<u8>>,
) where
    K: Body,
    P: kafka_protocol::protocol::Decodable + kafka_protocol::protocol::Encodable,
    R: rskafka::protocol::messages::ReadVersionedType<Cursor<&'static [u8]>>,
{
    let bytes = Bytes::from(value.encode_body(version).expect("kwire encodes the fixture"));
    // rskafka reads from `std::io::Read`; a leaked copy gives it the `'static` slice its trait
    // bound wants (one per case, for the life of the process).
    let leaked: &'static [u8] = Vec::leak(bytes.to_vec());

    let ours: K = kwire_decode(&bytes, version);
    let reference = kwire_view(&ours);
    assert_eq!(reference, kwire_view(value), "{name}: kwire round trip");
    let theirs: P = kp_decode(&bytes, version);
    assert_eq!(kp_view(&theirs), reference, "{name}: kafka-protocol decodes other values");
    assert_eq!(&kp_encode(&theirs, version)[..], &bytes[..], "{name}: kafka-protocol writes other bytes");
    if let Some(rs_view) = rs {
        let theirs: R = rs_decode(leaked, version);
        assert_eq!(rs_view(&theirs), reference, "{name}: rskafka decodes other values");
    }

    let mut group = c.benchmark_group(format!("{name}/decode"));
    configure(&mut group, bytes.len());
    group.bench_function("kwire", |b| b.iter(|| kwire_decode::<K>(black_box(&bytes), version)));
    group.bench_function("kafka-protocol", |b| b.iter(|| kp_decode::<P>(black_box(&bytes), version)));
    if rs.is_some() {
        group.bench_function("rskafka", |b| b.iter(|| rs_decode::<R>(black_box(leaked), version)));
    }
    group.finish();

    let mut group = c.benchmark_group(format!("{name}/encode"));
    configure(&mut group, bytes.len());
    group.bench_function("kwire", |b| {
        b.iter(|| black_box(&ours).encode_body(version).expect("kwire encodes"));
    });
    group.bench_function("kafka-protocol", |b| b.iter(|| kp_encode(black_box(&theirs), version)));
    group.finish();
}

/// Views are compared through their `Debug` text, which keeps `message_case` free of one
/// generic parameter per view type.
fn debug_bytes<T: std::fmt::Debug>(v: &T) -> Vec<u8> {
    format!("{v:?}").into_bytes()
}

fn messages(c: &mut Criterion) {
    for version in [12, 4] {
        let rs: Option<fn(&rskafka::protocol::messages::MetadataResponse) -> Vec<u8>> =
            (version <= 4).then_some(|m| debug_bytes(&rs_metadata_view(m)));
        message_case::<_, kafka_protocol::messages::MetadataResponse, _>(
            c,
            &format!("metadata_v{version}_3x1000x10"),
            &metadata(version),
            version,
            |m| debug_bytes(&kwire_metadata_view(m)),
            |m| debug_bytes(&kp_metadata_view(m)),
            rs,
        );
    }
    for version in [8, 3] {
        let rs: Option<fn(&rskafka::protocol::messages::ListOffsetsResponse) -> Vec<u8>> =
            (version <= 3).then_some(|m| debug_bytes(&rs_list_offsets_view(m)));
        message_case::<_, kafka_protocol::messages::ListOffsetsResponse, _>(
            c,
            &format!("list_offsets_v{version}_10000"),
            &list_offsets(version),
            version,
            |m| debug_bytes(&kwire_list_offsets_view(m)),
            |m| debug_bytes(&kp_list_offsets_view(m)),
            rs,
        );
    }
    message_case::<
        _,
        kafka_protocol::messages::OffsetFetchResponse,
        rskafka::protocol::messages::ListOffsetsResponse,
    >(
        c,
        "offset_fetch_v8_10000",
        &offset_fetch(),
        8,
        |m| debug_bytes(&kwire_offset_fetch_view(m)),
        |m| debug_bytes(&kp_offset_fetch_view(m)),
        None,
    );
}

// ---------------------------------------------------------------------------------------------
// Record batches.

fn kp_compression(c: Compression) -> kafka_protocol::records::Compression {
    use kafka_protocol::records::Compression as K;
    match c {
        Compression::None => K::None,
        Compression::Gzip => K::Gzip,
        Compression::Snappy => K::Snappy,
        Compression::Lz4 => K::Lz4,
        Compression::Zstd => K::Zstd,
    }
}

fn record_batches(c: &mut Criterion) {
    let opts = DecodeOptions::default();
    for compression in
        [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd]
    {
        let name = format!("record_batch_8738x110B_{compression}");
        let batch = batch(compression);
        let bytes = batch.to_bytes().expect("kwire encodes the batch");
        let leaked: &'static [u8] = Vec::leak(bytes.to_vec());

        let ours = RecordBatch::decode(bytes.clone(), &opts).expect("kwire decodes its batch");
        let reference = kwire_records_view(&ours);
        assert_eq!(reference, kwire_records_view(&batch), "{name}: kwire round trip");
        if compression == Compression::None {
            // Zero-copy: every key and value is a slice of the input buffer.
            let input = bytes.as_ptr_range();
            assert!(ours
                .records
                .iter()
                .all(|r| { [&r.key, &r.value].into_iter().flatten().all(|b| input.contains(&b.as_ptr())) }));
        }
        assert_eq!(kwire_borrowed_view(&bytes, &opts), reference, "{name}: kwire's view reads other records");
        if compression == Compression::None {
            let input = bytes.as_ptr_range();
            let view = BatchView::parse(&bytes, &opts).expect("kwire views its batch");
            assert!(view.records().all(|r| {
                let r = r.expect("kwire reads its records");
                [r.key, r.value].into_iter().flatten().all(|b| input.contains(&b.as_ptr()))
            }));
        }
        let kp = kafka_protocol::records::RecordBatchDecoder::decode(&mut bytes.clone())
            .expect("kafka-protocol decodes kwire's batch");
        assert_eq!(kp_records_view(&kp), reference, "{name}: kafka-protocol decodes other records");
        let rs = rskafka::protocol::record::RecordBatch::read(&mut Cursor::new(leaked));
        let rs = match rs {
            Ok(rs) => {
                assert_eq!(rs_records_view(&rs), reference, "{name}: rskafka decodes other records");
                Some(rs)
            }
            Err(e) => {
                eprintln!("{name}: rskafka cannot read kwire's batch ({e}); left out of this case");
                None
            }
        };
        let kp_opts = kafka_protocol::records::RecordEncodeOptions {
            version: 2,
            compression: kp_compression(compression),
        };
        let kp_encode = |records: &[kafka_protocol::records::Record]| {
            let mut out = BytesMut::new();
            kafka_protocol::records::RecordBatchEncoder::encode(&mut out, records, &kp_opts)
                .expect("kafka-protocol encodes");
            out
        };
        // The peers' own encodings must read back as the same records (their header fields
        // may legitimately differ, e.g. which timestamps they stamp).
        let again =
            RecordBatch::decode(kp_encode(&kp.records).freeze(), &opts).expect("kafka-protocol's batch");
        assert_eq!(kwire_records_view(&again), reference, "{name}: kafka-protocol encodes other records");
        if let Some(rs) = &rs {
            let mut out = Vec::new();
            rs.write(&mut out).expect("rskafka encodes");
            let again = RecordBatch::decode(Bytes::from(out), &opts).expect("rskafka's batch");
            assert_eq!(kwire_records_view(&again), reference, "{name}: rskafka encodes other records");
        }

        // Throughput is the uncompressed record bytes, so codecs compare on the same work.
        let plain = batch.records.len() * 110;
        let mut group = c.benchmark_group(format!("{name}/decode"));
        configure(&mut group, plain);
        group.bench_function("kwire", |b| {
            b.iter(|| RecordBatch::decode(black_box(&bytes).clone(), &opts).expect("kwire decodes"));
        });
        group.bench_function("kwire-view", |b| b.iter(|| kwire_view_decode(black_box(&bytes), &opts)));
        group.bench_function("kafka-protocol", |b| {
            b.iter(|| {
                kafka_protocol::records::RecordBatchDecoder::decode(&mut black_box(&bytes).clone())
                    .expect("kafka-protocol decodes")
            });
        });
        if rs.is_some() {
            group.bench_function("rskafka", |b| {
                b.iter(|| {
                    rskafka::protocol::record::RecordBatch::read(&mut Cursor::new(black_box(leaked)))
                        .expect("rskafka decodes")
                });
            });
        }
        group.finish();

        let mut group = c.benchmark_group(format!("{name}/encode"));
        configure(&mut group, plain);
        group.bench_function("kwire", |b| {
            b.iter(|| {
                let mut out = Vec::new();
                black_box(&ours).encode(&mut out).expect("kwire encodes");
                out
            });
        });
        group.bench_function("kafka-protocol", |b| b.iter(|| kp_encode(black_box(&kp.records))));
        if let Some(rs) = &rs {
            group.bench_function("rskafka", |b| {
                b.iter(|| {
                    let mut out = Vec::new();
                    black_box(rs).write(&mut out).expect("rskafka encodes");
                    out
                });
            });
        }
        group.finish();
    }
}

fn config() -> Criterion {
    Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = messages, record_batches
}

fn main() {
    if std::env::var_os("MALLOC_TRIM_THRESHOLD_").is_none() {
        eprintln!(
            "note: glibc's allocator settings are not fixed; run through scripts/bench-codec for \
             comparable numbers (large decodes can take up to twice as long otherwise)"
        );
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
