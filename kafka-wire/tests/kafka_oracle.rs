//! Apache Kafka as the oracle, in the direction the unit tests cannot take: Kafka reads what
//! kwire writes.
//!
//! - Message bodies: kwire encodes bodies — every committed Kafka-written fixture decoded and
//!   re-encoded, a fresh sample Kafka writes at test time (`KWIRE_ORACLE_SEED`,
//!   `KWIRE_ORACLE_SAMPLES`), and kwire's own default values at every version — and
//!   `KafkaOracle check` parses each with Kafka's generated `*Data` class and writes it back:
//!   the bytes must be equal. kafka-clients 4.1.1 checks every version it has; 3.9.1 checks
//!   every version it has, which includes those Kafka 4 removed.
//! - The consumer protocol (the bytes inside JoinGroup metadata and SyncGroup assignments):
//!   kwire's subscriptions and assignments at every version, the same under higher versions
//!   with a newer version's fields after them, and every prefix of each, read by `KafkaOracle
//!   check-consumer-protocol` as Kafka's `ConsumerProtocol` reads them: both must refuse the
//!   same inputs, and read the others as the same version, leaving the same bytes unread and
//!   writing back the same bytes.
//! - Record batches: kwire encodes batches (generated with proptest, for every codec; control
//!   batches; legacy magic 0/1 messages and compressed wrappers; Kafka's fixtures re-encoded)
//!   and `KafkaOracle check-records` runs Kafka's `ensureValid()` (CRC) and reads every record:
//!   Kafka's description of the records must equal kwire's.
//! - Without Java: record sets built by Kafka's `MemoryRecordsBuilder`
//!   (`src/protocol/records/testdata/kafka-4.1.1-records.txt`) decode in kwire to the records
//!   Kafka read from them.
//!
//! The helper (`src/protocol/messages/testdata/KafkaOracle.java`) is compiled with javac into
//! `CARGO_TARGET_TMPDIR`, once per source and class path. kafka-clients 4.1.1 and its
//! dependencies come from the jar cache (`scripts/cluster fetch`, or `KWIRE_KAFKA_JARS`);
//! kafka-clients 3.9.1 from the local Maven repository (`KWIRE_KAFKA_CLIENTS_39`, fetched with
//! `mvn dependency:get` if missing). When Java or a jar is unavailable the Java tests skip with a
//! note — except under `CI`, where they fail.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use bytes::Bytes;
use kafka_wire::protocol::consumer_protocol::{
    ConsumerAssignment, ConsumerSubscription, ConsumerTopicPartitions, VERSIONS,
};
use kafka_wire::protocol::messages::*;
use kafka_wire::protocol::records::legacy::encode_compressed;
use kafka_wire::protocol::records::{
    BatchAttributes, BatchView, Compression, ControlRecordKey, ControlRecordType, DecodeOptions,
    EndTransactionMarker, Header, LegacyBatch, LegacyMessage, Record, RecordBatch, RecordSet, RecordSetBatch,
    TimestampType,
};
use kafka_wire::protocol::{Body, VersionRange};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};

const BODIES_4_1: &str = include_str!("../src/protocol/messages/testdata/kafka-4.1.1-bodies.txt");
const BODIES_3_9: &str = include_str!("../src/protocol/messages/testdata/kafka-3.9.1-bodies.txt");
const RECORDS_4_1: &str = include_str!("../src/protocol/records/testdata/kafka-4.1.1-records.txt");

mod oracle;

use oracle::oracle;

// ---------------------------------------------------------------------------------------------
// Hex

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap_or_else(|e| panic!("bad hex {s}: {e}")))
        .collect()
}

fn hex_or_null(b: Option<&Bytes>) -> String {
    b.map_or_else(|| "null".to_owned(), |b| hex(b))
}

// ---------------------------------------------------------------------------------------------
// Messages

type Reencode = fn(&[u8], i16) -> Result<Vec<u8>, String>;
/// kwire's own values of one type, encoded at one version.
type KwireEncoded = fn(i16) -> Vec<Vec<u8>>;

/// kwire decodes `bytes` and encodes the value again.
fn reencode<T: Body + std::fmt::Debug>(bytes: &[u8], version: i16) -> Result<Vec<u8>, String> {
    let value = T::decode_body(Bytes::copy_from_slice(bytes), version).map_err(|e| format!("decode: {e}"))?;
    value.encode_body(version).map_err(|e| format!("encode {value:?}: {e}"))
}

/// Values kwire builds itself (defaults: every optional field left `None`, written as Kafka's
/// default), one list per version.
trait KwireValues: Body + Sized {
    fn kwire_values() -> Vec<Self>;
}

/// kwire's own values of one message type: its default, except where a type has none.
macro_rules! kwire_values {
    (MetadataRequest) => {
        vec![
            MetadataRequest::for_topics(&[]),
            MetadataRequest::for_topics(&["topic-1".to_owned(), "é".to_owned()]),
        ]
    };
    ($ty:ident) => {
        vec![<$ty>::default()]
    };
}

macro_rules! impl_kwire_values {
    ($(($key:literal, $name:ident, $req:ident, $resp:ident)),* $(,)?) => {$(
        impl KwireValues for $req {
            fn kwire_values() -> Vec<Self> {
                kwire_values!($req)
            }
        }
        impl KwireValues for $resp {
            fn kwire_values() -> Vec<Self> {
                kwire_values!($resp)
            }
        }
    )*};
}

kafka_wire::for_each_api!(impl_kwire_values);

fn encode_values<T: KwireValues>(version: i16) -> Vec<Vec<u8>> {
    // A value a version cannot express (OffsetFetch v0-1 "all topics") is refused by kwire; skip it.
    T::kwire_values().iter().filter_map(|v| v.encode_body(version).ok()).collect()
}

struct Api {
    name: &'static str,
    versions: VersionRange,
    reencode: [Reencode; 2],
    values: [KwireEncoded; 2],
}

const DIRECTIONS: [&str; 2] = ["request", "response"];

macro_rules! apis {
    ($(($key:literal, $name:ident, $req:ident, $resp:ident)),* $(,)?) => {
        vec![$(Api {
            name: stringify!($name),
            versions: <$req as Body>::SPEC.versions,
            reencode: [reencode::<$req>, reencode::<$resp>],
            values: [encode_values::<$req>, encode_values::<$resp>],
        }),*]
    };
}

/// Every API kwire implements (the one list, `kafka_wire::for_each_api!`).
fn apis() -> Vec<Api> {
    kafka_wire::for_each_api!(apis)
}

/// `(api, direction, version, hex)` of one body.
type BodyLine = (String, &'static str, i16, String);

/// kwire's re-encoding of every body in `lines` (`<Api> <dir> <version> <hex>`) whose version
/// kwire has, after checking it is the same bytes Kafka wrote.
fn kwire_reencoded(apis: &[Api], lines: &str, source: &str, out: &mut Vec<BodyLine>) {
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split(' ').collect();
        let [name, dir, version, body] = f[..] else { panic!("{source}: malformed line {line}") };
        let version: i16 = version.parse().unwrap_or_else(|e| panic!("{source}: {line}: {e}"));
        let api =
            apis.iter().find(|a| a.name == name).unwrap_or_else(|| panic!("{source}: unknown API {name}"));
        let d = DIRECTIONS.iter().position(|x| *x == dir).unwrap_or_else(|| panic!("{source}: {line}"));
        if !api.versions.contains(version) {
            continue; // Kafka 4.1's unstable OffsetFetch/OffsetCommit v10
        }
        let again = (api.reencode[d])(&unhex(body), version)
            .unwrap_or_else(|e| panic!("{source}: {name} {dir} v{version}: {e}\n{body}"));
        assert_eq!(hex(&again), body, "{source}: {name} {dir} v{version}: kwire re-encoded differently");
        out.push((name.to_owned(), DIRECTIONS[d], version, hex(&again)));
    }
}

#[test]
fn kafka_reads_kwire_bodies_and_writes_them_back_byte_for_byte() {
    let Some(jvms) = oracle() else { return };
    let apis = apis();
    let seed = std::env::var("KWIRE_ORACLE_SEED").unwrap_or_else(|_| "20251130".to_owned());
    let samples = std::env::var("KWIRE_ORACLE_SAMPLES").unwrap_or_else(|_| "3".to_owned());
    let mut bodies: Vec<BodyLine> = Vec::new();
    kwire_reencoded(&apis, BODIES_4_1, "kafka-4.1.1-bodies.txt", &mut bodies);
    kwire_reencoded(&apis, BODIES_3_9, "kafka-3.9.1-bodies.txt", &mut bodies);
    for jvm in jvms {
        let fresh = jvm.run(&[&samples, &seed], "");
        kwire_reencoded(&apis, &fresh, &format!("{} sample, seed {seed}", jvm.label), &mut bodies);
    }
    for api in &apis {
        for (d, dir) in DIRECTIONS.iter().enumerate() {
            for version in api.versions.min..=api.versions.max {
                for body in (api.values[d])(version) {
                    bodies.push((api.name.to_owned(), dir, version, hex(&body)));
                }
            }
        }
    }
    let input = bodies.iter().fold(String::new(), |mut s, (a, d, v, h)| {
        let _ = writeln!(s, "{a} {d} {v} {h}");
        s
    });

    // Every body must come back equal from every Kafka that has its version, and at least one must.
    let mut verdicts: Vec<Vec<String>> = vec![Vec::new(); bodies.len()];
    for jvm in jvms {
        let out = jvm.run(&["check"], &input);
        let answers: Vec<&str> = out.lines().collect();
        assert_eq!(answers.len(), bodies.len(), "{}: one answer per body", jvm.label);
        for (i, answer) in answers.iter().enumerate() {
            if *answer != "unsupported" {
                verdicts[i].push(format!("{}: {answer}", jvm.label));
            }
        }
    }
    let mut failures = Vec::new();
    let mut covered = BTreeSet::new();
    for ((api, dir, version, body), verdict) in bodies.iter().zip(&verdicts) {
        let ok = !verdict.is_empty() && verdict.iter().all(|v| v.split(' ').nth(2) == Some("ok"));
        if ok {
            covered.insert((api.clone(), *dir, *version));
        } else {
            failures.push(format!("{api} {dir} v{version} {body}\n  {}", verdict.join("\n  ")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} kwire bodies did not come back equal from Kafka:\n{}",
        failures.len(),
        bodies.len(),
        failures.iter().take(10).cloned().collect::<Vec<_>>().join("\n")
    );
    // Every (API, direction, version) kwire has was checked.
    for api in &apis {
        for dir in DIRECTIONS {
            for version in api.versions.min..=api.versions.max {
                assert!(
                    covered.contains(&(api.name.to_owned(), dir, version)),
                    "{} {dir} v{version} unchecked",
                    api.name
                );
            }
        }
    }
    eprintln!(
        "{} kwire bodies read back equal by Kafka, {} (API, direction, version)s",
        bodies.len(),
        covered.len()
    );
}

// ---------------------------------------------------------------------------------------------
// Record batches: descriptions in the format of KafkaOracle.describe

fn ts_type_name(t: TimestampType) -> &'static str {
    match t {
        TimestampType::CreateTime => "CreateTime",
        TimestampType::LogAppendTime => "LogAppendTime",
    }
}

fn describe_v2(b: &RecordBatch, out: &mut Vec<String>) {
    let a = b.attributes;
    out.push(format!(
        "batch magic=2 offsets={}..{} epoch={} codec={} ts_type={} max_ts={} txn={} control={} producer={}/{}/{} records={}",
        b.base_offset,
        b.last_offset(),
        b.partition_leader_epoch,
        a.compression.name(),
        ts_type_name(a.timestamp_type),
        b.max_timestamp,
        a.is_transactional,
        a.is_control,
        b.producer_id,
        b.producer_epoch,
        b.base_sequence,
        b.records.len()
    ));
    for r in &b.records {
        // Kafka reports every record of a LogAppendTime batch at the batch's max timestamp.
        let ts = match a.timestamp_type {
            TimestampType::LogAppendTime => b.max_timestamp,
            TimestampType::CreateTime => b.base_timestamp + r.timestamp_delta,
        };
        let headers: Vec<String> = r
            .headers
            .iter()
            .map(|h| format!("{}:{}", hex(h.key.as_bytes()), hex_or_null(h.value.as_ref())))
            .collect();
        out.push(format!(
            "record offset={} ts={ts} key={} value={} headers={}",
            b.base_offset + i64::from(r.offset_delta),
            hex_or_null(r.key.as_ref()),
            hex_or_null(r.value.as_ref()),
            headers.join(",")
        ));
    }
}

/// A legacy entry. `wrapper_ts_type` is the timestamp type of a magic-1 entry as Kafka reports
/// it (kwire keeps a wrapper's inner messages, whose own attribute bit is the one it has).
fn describe_legacy(b: &LegacyBatch, out: &mut Vec<String>) {
    let (Some(first), Some(last)) = (b.messages.first(), b.messages.last()) else {
        panic!("a legacy entry without messages")
    };
    let ts_type = if first.magic == 0 { "NoTimestampType" } else { ts_type_name(first.timestamp_type()) };
    let max_ts = b.messages.iter().map(|m| m.timestamp.unwrap_or(-1)).max().unwrap_or(-1);
    out.push(format!(
        "batch magic={} offsets={}..{} epoch=-1 codec={} ts_type={ts_type} max_ts={max_ts} txn=false control=false producer=-1/-1/-1 records={}",
        first.magic,
        first.offset,
        last.offset,
        b.compression.name(),
        b.messages.len()
    ));
    for m in &b.messages {
        out.push(format!(
            "record offset={} ts={} key={} value={} headers=",
            m.offset,
            m.timestamp.unwrap_or(-1),
            hex_or_null(m.key.as_ref()),
            hex_or_null(m.value.as_ref())
        ));
    }
}

fn describe(set: &RecordSet) -> Vec<String> {
    let mut out = Vec::new();
    for b in &set.batches {
        match b {
            RecordSetBatch::V2(b) => describe_v2(b, &mut out),
            RecordSetBatch::Legacy(b) => describe_legacy(b, &mut out),
        }
    }
    out
}

/// kwire's encoding of a decoded record set, entry by entry.
fn encode_set(set: &RecordSet) -> Vec<u8> {
    let mut out = Vec::new();
    for b in &set.batches {
        match b {
            RecordSetBatch::V2(b) => b.encode(&mut out).expect("encode batch"),
            RecordSetBatch::Legacy(b) if b.compression == Compression::None => {
                for m in &b.messages {
                    m.encode(&mut out).expect("encode message");
                }
            }
            RecordSetBatch::Legacy(b) => {
                encode_compressed(b.messages[0].magic, b.compression, &b.messages, &mut out)
                    .expect("encode wrapper");
            }
        }
    }
    out
}

/// The fixture's sets: `(name, bytes, Kafka's description)`.
fn kafka_record_sets() -> Vec<(String, Bytes, Vec<String>)> {
    let mut sets: Vec<(String, Bytes, Vec<String>)> = Vec::new();
    for line in RECORDS_4_1.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        if let Some(rest) = line.strip_prefix("set ") {
            let (name, body) = rest.split_once(' ').expect("set <name> <hex>");
            sets.push((name.to_owned(), Bytes::from(unhex(body)), Vec::new()));
        } else {
            sets.last_mut().expect("a set line first").2.push(line.to_owned());
        }
    }
    sets
}

#[test]
fn record_sets_built_by_kafka_decode_to_the_records_kafka_reads() {
    let sets = kafka_record_sets();
    assert_eq!(sets.len(), 23);
    for (name, bytes, expected) in &sets {
        let set =
            RecordSet::decode(bytes, &DecodeOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(set.truncated_tail_bytes, 0, "{name}");
        assert_eq!(&describe(&set), expected, "{name}");
    }
}

/// The borrowed view's reading of one magic-2 batch, as an owning batch (header fields and
/// every record copied out of the view), for `describe_v2`.
fn through_view(entry: &[u8], name: &str) -> RecordBatch {
    let view = BatchView::parse(entry, &DecodeOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let h = view.header;
    RecordBatch {
        base_offset: h.base_offset,
        partition_leader_epoch: h.partition_leader_epoch,
        attributes: h.attributes,
        last_offset_delta: h.last_offset_delta,
        base_timestamp: h.base_timestamp,
        max_timestamp: h.max_timestamp,
        producer_id: h.producer_id,
        producer_epoch: h.producer_epoch,
        base_sequence: h.base_sequence,
        records: view.records().map(|r| r.unwrap_or_else(|e| panic!("{name}: {e}")).to_record()).collect(),
    }
}

#[test]
fn magic_2_record_sets_built_by_kafka_read_through_the_borrowed_view_as_kafka_reads_them() {
    let sets = kafka_record_sets();
    let mut checked = Vec::new();
    for (name, bytes, expected) in &sets {
        // Entries back to back: offset (8 bytes), size (4), then `size` bytes; magic at byte 16.
        let mut entries = Vec::new();
        let mut rest = &bytes[..];
        while rest.len() >= 17 {
            let size = i32::from_be_bytes(rest[8..12].try_into().unwrap()) as usize;
            entries.push((rest[16], &rest[..12 + size]));
            rest = &rest[12 + size..];
        }
        assert!(rest.is_empty(), "{name}: a cut-short entry");
        if entries.iter().any(|(magic, _)| *magic != 2) {
            continue;
        }
        let mut described = Vec::new();
        for (_, entry) in entries {
            describe_v2(&through_view(entry, name), &mut described);
        }
        assert_eq!(&described, expected, "{name}");
        checked.push(name.as_str());
    }
    // Every codec, idempotent, transactional, log-append time and control batches.
    assert_eq!(checked.len(), 12, "{checked:?}");
}

#[test]
fn uncompressed_record_sets_built_by_kafka_re_encode_byte_for_byte() {
    let mut checked = 0;
    for (name, bytes, _) in kafka_record_sets() {
        let set =
            RecordSet::decode(&bytes, &DecodeOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let compressed = set.batches.iter().any(|b| match b {
            RecordSetBatch::V2(b) => b.attributes.compression != Compression::None,
            RecordSetBatch::Legacy(b) => b.compression != Compression::None,
        });
        if !compressed {
            assert_eq!(hex(&encode_set(&set)), hex(&bytes), "{name}");
            checked += 1;
        }
    }
    // v2-none, both log-append-time "none" sets, both controls, v0-none, v1-none.
    assert_eq!(checked, 7);
}

// ---------------------------------------------------------------------------------------------
// kwire's batches, generated

fn opt_bytes(max: usize) -> impl Strategy<Value = Option<Bytes>> {
    proptest::option::weighted(0.8, proptest::collection::vec(any::<u8>(), 0..max).prop_map(Bytes::from))
}

fn header() -> impl Strategy<Value = Header> {
    ("[a-zé.-]{0,6}", opt_bytes(6)).prop_map(|(key, value)| Header { key, value })
}

/// Records with increasing offset deltas (gaps as compaction leaves them) and timestamps
/// going back as well as forward.
fn records(with_headers: bool) -> impl Strategy<Value = Vec<Record>> {
    let record = (
        -5_000i64..5_000,
        1i32..4,
        opt_bytes(12),
        opt_bytes(40),
        proptest::collection::vec(header(), if with_headers { 0..3 } else { 0..1 }),
    );
    proptest::collection::vec(record, 1..12).prop_map(|rs| {
        let mut delta = -1;
        rs.into_iter()
            .map(|(ts, step, key, value, headers)| {
                delta += step;
                Record { attributes: 0, timestamp_delta: ts, offset_delta: delta, key, value, headers }
            })
            .collect()
    })
}

fn batch(codec: Compression) -> impl Strategy<Value = RecordBatch> {
    (
        0i64..1 << 40,
        -1i32..100,
        any::<bool>(),
        any::<bool>(),
        1_600_000_000_000i64..1_800_000_000_000,
        records(true),
    )
        .prop_map(move |(base_offset, epoch, log_append, producer, ts, records)| {
            let mut b = RecordBatch::new(base_offset, ts, codec, records);
            b.partition_leader_epoch = epoch;
            if log_append {
                b.attributes.timestamp_type = TimestampType::LogAppendTime;
                b.max_timestamp = ts + 123_456;
            }
            if producer {
                b.producer_id = base_offset ^ 0x5555;
                b.producer_epoch = (epoch & 0x7fff) as i16;
                b.base_sequence = epoch.max(0) * 3;
                b.attributes.is_transactional = epoch % 2 == 0;
            }
            b
        })
}

fn legacy(magic: i8, codec: Compression) -> impl Strategy<Value = LegacyBatch> {
    (0i64..1 << 40, 1_600_000_000_000i64..1_800_000_000_000, records(false)).prop_map(
        move |(base, ts, records)| {
            let messages: Vec<LegacyMessage> = records
                .into_iter()
                .map(|r| LegacyMessage {
                    offset: base + i64::from(r.offset_delta),
                    magic,
                    attributes: 0,
                    timestamp: (magic == 1).then_some(ts + r.timestamp_delta),
                    key: r.key,
                    value: r.value,
                })
                .collect();
            if codec == Compression::None {
                // A plain message is its own entry; keep one per generated value.
                LegacyBatch { compression: codec, messages: messages.into_iter().take(1).collect() }
            } else {
                LegacyBatch { compression: codec, messages }
            }
        },
    )
}

fn sample<S: Strategy>(strategy: S, n: usize, runner: &mut TestRunner) -> Vec<S::Value> {
    (0..n).map(|_| strategy.new_tree(runner).expect("a value").current()).collect()
}

fn control(kind: ControlRecordType, coordinator_epoch: i32, base_offset: i64) -> RecordBatch {
    let key = ControlRecordKey { version: 0, kind }.to_bytes();
    let value = EndTransactionMarker { version: 0, coordinator_epoch }.to_bytes();
    let mut b = RecordBatch::new(
        base_offset,
        1_700_000_000_077,
        Compression::None,
        vec![Record::new(Some(key), Some(value))],
    );
    b.attributes = BatchAttributes { is_transactional: true, is_control: true, ..BatchAttributes::default() };
    b.producer_id = 4242;
    b.producer_epoch = 7;
    b.partition_leader_epoch = 12;
    b
}

#[test]
fn kafka_validates_kwire_record_batches_and_reads_the_same_records() {
    let Some(jvms) = oracle() else { return };
    let mut runner = TestRunner::new(Config { source_file: Some(file!()), ..Config::default() });
    // (name, kwire's encoding, kwire's description of what it encoded)
    let mut cases: Vec<(String, Vec<u8>, Vec<String>)> = Vec::new();
    let mut add = |name: String, set: RecordSet| {
        let bytes = encode_set(&set);
        cases.push((name, bytes, describe(&set)));
    };
    for codec in Compression::ALL {
        for (i, b) in sample(batch(codec), 24, &mut runner).into_iter().enumerate() {
            add(
                format!("v2-{codec}-{i}"),
                RecordSet { batches: vec![RecordSetBatch::V2(b)], truncated_tail_bytes: 0 },
            );
        }
    }
    for (i, (kind, epoch)) in
        [(ControlRecordType::Commit, 3), (ControlRecordType::Abort, 0)].into_iter().enumerate()
    {
        let set = RecordSet {
            batches: vec![RecordSetBatch::V2(control(kind, epoch, 2003 + i as i64))],
            truncated_tail_bytes: 0,
        };
        add(format!("control-{i}"), set);
    }
    for magic in [0i8, 1] {
        for codec in [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            for (i, b) in sample(legacy(magic, codec), 12, &mut runner).into_iter().enumerate() {
                add(
                    format!("v{magic}-{codec}-{i}"),
                    RecordSet { batches: vec![RecordSetBatch::Legacy(b)], truncated_tail_bytes: 0 },
                );
            }
        }
    }
    // Kafka's own sets, re-encoded (and re-compressed) by kwire.
    for (name, bytes, _) in kafka_record_sets() {
        let set =
            RecordSet::decode(&bytes, &DecodeOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        add(format!("kafka-{name}"), set);
    }

    let input = cases.iter().fold(String::new(), |mut s, (name, bytes, _)| {
        let _ = writeln!(s, "{name} {}", hex(bytes));
        s
    });
    for jvm in jvms {
        let out = jvm.run(&["check-records"], &input);
        let mut answers: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut current = None;
        for line in out.lines() {
            if let Some(name) = line.strip_prefix("set ") {
                answers.insert(name.to_owned(), Vec::new());
                current = Some(name.to_owned());
            } else if let Some(rest) = line.strip_prefix("error ") {
                let (name, why) = rest.split_once(' ').unwrap_or((rest, ""));
                answers.insert(name.to_owned(), vec![format!("error {why}")]);
                current = None;
            } else {
                let name = current.as_ref().unwrap_or_else(|| panic!("{}: stray line {line}", jvm.label));
                answers.get_mut(name).expect("current set").push(line.to_owned());
            }
        }
        for (name, bytes, expected) in &cases {
            let got = answers.get(name).unwrap_or_else(|| panic!("{}: no answer for {name}", jvm.label));
            assert_eq!(got, expected, "{}: {name} read differently by Kafka\n{}", jvm.label, hex(bytes));
        }
    }
    assert_eq!(cases.len(), 5 * 24 + 2 + 2 * 4 * 12 + 23);
}

// ---------------------------------------------------------------------------------------------
// The consumer protocol: Kafka reads kwire's subscriptions and assignments as kwire does

/// kwire's reading of one consumer-protocol message, in the form of `KafkaOracle
/// check-consumer-protocol`'s answer: `<read-as version> <bytes left> <hex written back>`, or
/// `error`.
fn kwire_consumer_protocol(name: &str, bytes: &[u8]) -> String {
    let read = |version: i16, read_as: i16, ignored: usize, again: Vec<u8>| {
        // The version prefix is written at the version the fields were read as.
        assert_eq!(i16::from_be_bytes([again[0], again[1]]), read_as, "{name} v{version}");
        format!("{read_as} {ignored} {}", hex(&again))
    };
    let bytes = Bytes::copy_from_slice(bytes);
    let answer = match name {
        ConsumerSubscription::NAME => ConsumerSubscription::decode(bytes).map(|d| {
            let again = d.value.encode(d.read_as()).expect("a decoded subscription encodes");
            read(d.version, d.read_as(), d.ignored_bytes, again)
        }),
        ConsumerAssignment::NAME => ConsumerAssignment::decode(bytes).map(|d| {
            let again = d.value.encode(d.read_as()).expect("a decoded assignment encodes");
            read(d.version, d.read_as(), d.ignored_bytes, again)
        }),
        _ => panic!("not a consumer-protocol message: {name}"),
    };
    answer.unwrap_or_else(|_| "error".to_owned())
}

#[test]
fn kafka_reads_kwire_consumer_protocol_messages_as_kwire_does() {
    let Some(jvms) = oracle() else { return };
    let mut runner = TestRunner::new(Config { source_file: Some(file!()), ..Config::default() });
    let name = || "[a-z0-9._é-]{0,8}";
    let user_data =
        || proptest::option::of(proptest::collection::vec(any::<u8>(), 0..6).prop_map(Bytes::from));
    let partitions = || {
        proptest::collection::vec((name(), proptest::collection::vec(any::<i32>(), 0..3)), 0..3).prop_map(
            |ts| {
                ts.into_iter()
                    .map(|(topic, partitions)| ConsumerTopicPartitions { topic, partitions })
                    .collect::<Vec<_>>()
            },
        )
    };
    let subscription = (
        proptest::collection::vec(name(), 0..3),
        user_data(),
        partitions(),
        any::<i32>(),
        proptest::option::of(name()),
    )
        .prop_map(|(topics, user_data, owned, generation_id, rack_id)| ConsumerSubscription {
            topics,
            user_data,
            owned_partitions: Some(owned),
            generation_id: Some(generation_id),
            rack_id,
        });
    let assignment = (partitions(), user_data())
        .prop_map(|(assigned_partitions, user_data)| ConsumerAssignment { assigned_partitions, user_data });

    // Each kwire encoding at every version; the same bytes under a higher version and with a
    // newer version's fields after them; and every prefix of each (all errors but the ones
    // that still hold every field).
    let mut encodings: Vec<(&str, Vec<u8>)> = Vec::new();
    for version in VERSIONS.min..=VERSIONS.max {
        for s in sample(&subscription, 6, &mut runner) {
            encodings.push((ConsumerSubscription::NAME, s.encode(version).expect("encodes")));
        }
        for a in sample(&assignment, 6, &mut runner) {
            encodings.push((ConsumerAssignment::NAME, a.encode(version).expect("encodes")));
        }
    }
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    for (name, bytes) in &encodings {
        cases.push((name, bytes.clone()));
        for newer in [4i16, 9, i16::MAX] {
            let mut b = bytes.clone();
            b[..2].copy_from_slice(&newer.to_be_bytes());
            b.extend_from_slice(&[0, 0, 0, 7, 0xff]);
            cases.push((name, b));
        }
        let mut negative = bytes.clone();
        negative[..2].copy_from_slice(&(-1i16).to_be_bytes());
        cases.push((name, negative));
        for cut in 0..bytes.len() {
            cases.push((name, bytes[..cut].to_vec()));
        }
    }
    let input = cases.iter().fold(String::new(), |mut s, (name, bytes)| {
        let _ = writeln!(s, "{name} {}", hex(bytes));
        s
    });
    for jvm in jvms {
        let out = jvm.run(&["check-consumer-protocol"], &input);
        let answers: Vec<&str> = out.lines().collect();
        assert_eq!(answers.len(), cases.len(), "{}: one answer per message", jvm.label);
        for ((name, bytes), answer) in cases.iter().zip(answers) {
            let kafka = if answer.starts_with("error") { "error" } else { answer };
            assert_eq!(
                kwire_consumer_protocol(name, bytes),
                kafka,
                "{}: {name} {}: {answer}",
                jvm.label,
                hex(bytes)
            );
        }
    }
    let decoded =
        cases.iter().filter(|(name, bytes)| kwire_consumer_protocol(name, bytes) != "error").count();
    eprintln!(
        "{} consumer-protocol messages read alike by kwire and Kafka, {decoded} of them decoded",
        cases.len()
    );
    // Every encoding itself; under the three higher versions, every assignment (the same fields
    // at every version) and the v2-v3 subscriptions (read as v3, the extra bytes hold v3's null
    // rack or are left over); no prefix.
    assert_eq!(decoded, encodings.len() + 3 * (4 * 6 + 2 * 6));
}
