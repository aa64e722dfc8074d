//! Writes generated seed inputs into `fuzz/corpus/<target>/` (run by `fuzz/seed-corpus.sh`,
//! which also copies the Kafka-written body fixtures): default-valued bodies of every API and
//! version (with and without a header), record batches with each codec, control and
//! transactional batches, legacy message sets (plain and compressed wrappers), a cut-short tail,
//! compressed blobs for each decompressor, request frames for the frame splitter, kwire offset
//! files, kafka-consumer-groups CSVs, consumer-protocol subscriptions and assignments, fault
//! rules (files, scenarios, `--fault` texts) and the frames the proxy's fault actions take.

use std::fs;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use kafka_wire::protocol::consumer_protocol::{
    ConsumerAssignment, ConsumerSubscription, ConsumerTopicPartitions, VERSIONS,
};
use kafka_wire::protocol::frame::encode_request;
use kafka_wire::protocol::messages::{
    ApiVersionsRequest, FetchPartitionResponse, FetchRequest, FetchResponse, FetchableTopicResponse,
    MetadataRequest,
};
use kafka_wire::protocol::records::compression::compress;
use kafka_wire::protocol::records::legacy::encode_compressed;
use kafka_wire::protocol::records::{
    BatchAttributes, Compression, ControlRecordKey, ControlRecordType, EndTransactionMarker, Header,
    LegacyMessage, Record, RecordBatch,
};
use kafka_wire::protocol::registry::supported_apis;
use kafka_wire::protocol::schema::encode::json_to_frame;
use kafka_wire::protocol::{ApiKey, Body, Uuid};
use kwire_stores::file;
use offset_store::StoredOffset;

fn write(corpus: &Path, target: &str, name: &str, bytes: &[u8]) {
    let dir = corpus.join(target);
    fs::create_dir_all(&dir).expect("create corpus dir");
    fs::write(dir.join(name), bytes).expect("write seed");
}

fn prefixed(prefix: &[u8], body: &[u8]) -> Vec<u8> {
    let mut v = prefix.to_vec();
    v.extend_from_slice(body);
    v
}

fn records(n: usize) -> Vec<Record> {
    (0..n)
        .map(|i| Record {
            offset_delta: i as i32,
            timestamp_delta: i as i64 * 7,
            key: (i % 2 == 0).then(|| Bytes::from(format!("key-{i}"))),
            value: (i != 3).then(|| Bytes::from(format!("value {i} ").repeat(3))),
            headers: if i == 1 {
                vec![
                    Header { key: "h".into(), value: Some(Bytes::from_static(b"v")) },
                    Header { key: "null".into(), value: None },
                ]
            } else {
                Vec::new()
            },
            ..Record::default()
        })
        .collect()
}

fn batches() -> Vec<(String, RecordBatch)> {
    let mut out = Vec::new();
    for codec in Compression::ALL {
        out.push((format!("{codec}"), RecordBatch::new(100, 1_700_000_000_000, codec, records(5))));
    }
    let mut txn = RecordBatch::new(7, 1_700_000_000_000, Compression::None, records(2));
    txn.producer_id = 4242;
    txn.producer_epoch = 3;
    txn.base_sequence = 17;
    txn.attributes.is_transactional = true;
    out.push(("transactional".into(), txn.clone()));
    let marker = Record {
        key: Some(ControlRecordKey { version: 0, kind: ControlRecordType::Commit }.to_bytes()),
        value: Some(EndTransactionMarker { version: 0, coordinator_epoch: 5 }.to_bytes()),
        ..Record::default()
    };
    let mut control = RecordBatch::new(9, 1_700_000_000_000, Compression::None, vec![marker]);
    control.attributes = BatchAttributes { is_control: true, is_transactional: true, ..control.attributes };
    control.producer_id = 4242;
    out.push(("control".into(), control));
    out.push(("empty".into(), RecordBatch::new(0, 0, Compression::None, Vec::new())));
    out
}

fn legacy(magic: i8, offset: i64, value: &'static [u8]) -> LegacyMessage {
    LegacyMessage {
        offset,
        magic,
        attributes: 0,
        timestamp: (magic == 1).then_some(1_600_000_000_000 + offset),
        key: (offset % 2 == 0).then(|| Bytes::from_static(b"k")),
        value: Some(Bytes::from_static(value)),
    }
}

fn main() {
    let corpus: PathBuf = std::env::args().nth(1).map_or_else(|| "corpus".into(), PathBuf::from);

    // Message bodies: sample values at every version, as body and with a header in front
    // (response header v0 and v1; request header v1 and v2 with a null client id).
    let keys: Vec<_> = supported_apis().iter().map(|s| (s.name, s.key.0)).collect();
    for (api, is_request, version, body) in kwire_fuzz::default_bodies() {
        let key = keys.iter().find(|(n, _)| *n == api).expect("listed").1;
        let prefix = [key as u8, version as u8];
        let (target, headers): (&str, Vec<Vec<u8>>) = if is_request {
            let mut h = key.to_be_bytes().to_vec();
            h.extend_from_slice(&version.to_be_bytes());
            h.extend_from_slice(&[0, 0, 0, 7, 0xff, 0xff]);
            let mut flexible = h.clone();
            flexible.push(0);
            ("request", vec![h, flexible])
        } else {
            ("response", vec![vec![0, 0, 0, 7], vec![0, 0, 0, 7, 0]])
        };
        write(&corpus, target, &format!("default-{api}-v{version}"), &prefixed(&prefix, &body));
        for (i, h) in headers.iter().enumerate() {
            let framed = prefixed(&prefixed(&prefix, h), &body);
            write(&corpus, target, &format!("default-{api}-v{version}-header{i}"), &framed);
        }
    }

    // Record batches, with the CRC checked (flags 1) and not (flags 0).
    let mut set = Vec::new();
    for (name, batch) in batches() {
        let bytes = batch.to_bytes().expect("encodes");
        write(&corpus, "record_batch", &format!("{name}-crc"), &prefixed(&[1], &bytes));
        write(&corpus, "record_batch", &format!("{name}-nocrc"), &prefixed(&[0], &bytes));
        write(&corpus, "record_batch_view", &format!("{name}-crc"), &prefixed(&[1], &bytes));
        write(&corpus, "record_batch_view", &format!("{name}-nocrc"), &prefixed(&[0], &bytes));
        write(&corpus, "record_batch_streamed", &format!("{name}-crc"), &prefixed(&[1, 3], &bytes));
        write(&corpus, "record_batch_streamed", &format!("{name}-nocrc"), &prefixed(&[0, 0], &bytes));
        write(&corpus, "record_set", &format!("v2-{name}"), &prefixed(&[3], &bytes));
        set.extend_from_slice(&bytes);
    }

    // Record sets: legacy magic 0 and 1, plain and compressed wrappers, mixed with magic 2,
    // and one with a cut-short tail. Flags 3: CRCs checked, nesting 1 (Kafka's).
    for magic in [0i8, 1] {
        let messages =
            vec![legacy(magic, 10, b"first"), legacy(magic, 11, b"second"), legacy(magic, 12, b"third")];
        let mut plain = Vec::new();
        for m in &messages {
            m.encode(&mut plain).expect("encodes");
        }
        write(&corpus, "record_set", &format!("legacy-v{magic}-plain"), &prefixed(&[3], &plain));
        set.extend_from_slice(&plain);
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            let mut wrapped = Vec::new();
            encode_compressed(magic, codec, &messages, &mut wrapped).expect("encodes");
            write(&corpus, "record_set", &format!("legacy-v{magic}-{codec}"), &prefixed(&[3], &wrapped));
            set.extend_from_slice(&wrapped);
        }
    }
    write(&corpus, "record_set", "mixed", &prefixed(&[3], &set));
    write(&corpus, "record_set", "mixed-cut-short", &prefixed(&[3], &set[..set.len() - 9]));

    // Decompressors: a compressible text with each codec. Snappy also raw (byte 0 = 0) and as
    // xerial blocks behind the header the target adds (byte 0 = 1).
    let text = b"kafka-wire fuzz seed: some text that repeats, repeats, repeats. ".repeat(40);
    for (codec, target) in [
        (Compression::Gzip, "decompress_gzip"),
        (Compression::Lz4, "decompress_lz4"),
        (Compression::Zstd, "decompress_zstd"),
    ] {
        let mut packed = Vec::new();
        compress(codec, &text, &mut packed).expect("compresses");
        write(&corpus, target, "text", &packed);
        let mut empty = Vec::new();
        compress(codec, b"", &mut empty).expect("compresses");
        write(&corpus, target, "empty", &empty);
    }
    // The streaming decompressor: byte 0 the codec (0 gzip, 1 snappy, 2 lz4, 3 zstd), byte 1 the
    // read size less one.
    for (id, codec) in
        [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd].into_iter().enumerate()
    {
        let mut packed = Vec::new();
        compress(codec, &text, &mut packed).expect("compresses");
        write(
            &corpus,
            "decompress_streaming",
            &format!("text-{codec}"),
            &prefixed(&[id as u8, 100], &packed),
        );
    }
    let mut xerial = Vec::new();
    compress(Compression::Snappy, &text, &mut xerial).expect("compresses");
    write(&corpus, "decompress_snappy", "xerial-whole", &prefixed(&[0], &xerial));
    write(&corpus, "decompress_snappy", "xerial-blocks", &prefixed(&[1], &xerial[16..]));
    write(&corpus, "decompress_snappy", "raw", &prefixed(&[0], &xerial[20..]));

    // Frames: two request frames back to back, under the default cap (byte 0 bit 7) and a
    // 64-byte cap, fed in varied chunks.
    let mut frames = encode_request(&ApiVersionsRequest::default(), 3, 1, Some("kwire")).expect("encodes");
    frames.extend(
        encode_request(&MetadataRequest::for_topics(&["t".to_owned()]), 12, 2, None).expect("encodes"),
    );
    write(&corpus, "frame", "two-requests", &prefixed(&[0x80, 0x5a], &frames));
    write(&corpus, "frame", "two-requests-cap64", &prefixed(&[64, 0xc3], &frames));
    write(&corpus, "frame", "cut-short", &prefixed(&[0x80, 0x01], &frames[..frames.len() - 3]));

    // Captures: one pcapng conversation as the proxy writes it (mode 0: a file; frame cap
    // 16 << 12 = 64 KiB), and the same cut short.
    let client = "127.0.0.1:50000".parse().expect("address");
    let broker = "127.0.0.1:9092".parse().expect("address");
    let mut pcap = kwire_capture::PcapngWriter::new(Vec::new()).expect("writes");
    let metadata = encode_request(&MetadataRequest::for_topics(&["t".to_owned()]), 12, 2, Some("seed"))
        .expect("encodes");
    pcap.data(client, broker, kwire_capture::Direction::ToBroker, &metadata, 1_000).expect("writes");
    pcap.data(client, broker, kwire_capture::Direction::ToClient, &[0, 0, 0, 6, 0, 0, 0, 2, 0, 0], 2_000)
        .expect("writes");
    pcap.close(client, broker, 3_000).expect("writes");
    let capture = pcap.into_inner().expect("writes");
    write(&corpus, "capture", "pcapng-metadata", &prefixed(&[0xc0], &capture));
    write(&corpus, "capture", "pcapng-cut-short", &prefixed(&[0xc0], &capture[..capture.len() - 30]));

    // Offset files: kwire's own documents (empty, full entries, bare entries) and hand-written
    // ones as other tools or people leave them.
    let full = StoredOffset {
        topic: "orders".into(),
        partition: 3,
        offset: 42,
        leader_epoch: Some(7),
        topic_id: Some(Uuid([0x5a; 16])),
        commit_timestamp_ms: Some(1_732_874_400_000),
    };
    let bare = StoredOffset {
        topic: "t".into(),
        partition: 0,
        offset: 0,
        leader_epoch: None,
        topic_id: None,
        commit_timestamp_ms: None,
    };
    let group = kwire_fuzz::FILE_STORE_GROUP;
    write(&corpus, "file_store", "empty", &file::encode(group, &[]));
    write(&corpus, "file_store", "full", &file::encode(group, &[full.clone(), bare.clone()]));
    let many: Vec<StoredOffset> =
        (0..20).map(|p| StoredOffset { partition: p, offset: i64::from(p) * 1000, ..full.clone() }).collect();
    write(&corpus, "file_store", "many", &file::encode(group, &many));
    write(
        &corpus,
        "file_store",
        "compact",
        br#"{"format":"kwire-offsets","version":1,"group":"g","offsets":[{"topic":"a","partition":1,"offset":2}],"extra":[null,{"x":1.5e3}]}"#,
    );

    // kafka-consumer-groups CSV: an export, and one with CRLF, spaces and blank lines.
    write(
        &corpus,
        "consumer_groups_csv",
        "export",
        b"orders,0,42\norders,1,7\nclicks.v2,0,9223372036854775807\n",
    );
    write(&corpus, "consumer_groups_csv", "loose", b"\r\n a_b-c , 2 , 0 \r\n\norders,10,5");

    // The consumer protocol: a full subscription and an assignment at every version kwire
    // writes, and both under a higher version with a later field after them.
    let owned = vec![ConsumerTopicPartitions { topic: "orders".into(), partitions: vec![0, 3] }];
    let subscription = ConsumerSubscription {
        topics: vec!["orders".into(), "clicks".into()],
        user_data: Some(Bytes::from_static(b"\x00\x01sticky")),
        owned_partitions: Some(owned.clone()),
        generation_id: Some(12),
        rack_id: Some("rack-a".into()),
    };
    let assignment = ConsumerAssignment { assigned_partitions: owned, user_data: None };
    for version in VERSIONS.min..=VERSIONS.max {
        let s = subscription.encode(version).expect("a subscription encodes");
        let a = assignment.encode(version).expect("an assignment encodes");
        write(&corpus, "consumer_protocol", &format!("subscription-v{version}"), &s);
        write(&corpus, "consumer_protocol", &format!("assignment-v{version}"), &a);
        if version == VERSIONS.max {
            for (name, mut bytes) in [("subscription", s), ("assignment", a)] {
                bytes[..2].copy_from_slice(&9i16.to_be_bytes());
                bytes.extend_from_slice(&[0, 0, 0, 1, 0xff]);
                write(&corpus, "consumer_protocol", &format!("{name}-v9"), &bytes);
            }
        }
    }

    fault_rules(&corpus);
    fault_answers(&corpus);
}

/// Rules files (every action and key, a list of APIs, inline tables), a scenario, and `--fault`
/// texts as kwire's tests and docs write them; each is read as a file, a scenario and a flag.
fn fault_rules(corpus: &Path) {
    let files = [
        (
            "every-action",
            "# One rule of each action.\n\
             [[rule]]\napi = [\"Produce\", \"fetch\"]\nversion = \"3+\"\ntopic = \"orders\"\nfirst = 3\n\
             action = \"error\"\nerror = \"not_leader_or_follower\"\n\n\
             [[rule]]\napi = \"Metadata\"\nevery = 5\nafter = 10\nuntil = 40.5\naction = \"delay\"\n\
             delay_ms = 100\njitter_ms = 20\ndistribution = \"normal\"\ndirection = \"response\"\n\n\
             [[rule]]\napi = \"Produce\"\nprobability = 0.25\naction = \"hold\"\nhold_ms = 2500\n\n\
             [[rule]]\nbroker = \"127.0.0.1:9092\"\nclient_id = \"app\"\naction = \"drop-response\"\n\n\
             [[rule]]\napi = \"join-group\"\nversion = \"2-7\"\naction = \"cut-before\"\n\n\
             [[rule]]\napi = 3\npartition = 7\naction = \"cut-after\"\n\n\
             [[rule]]\napi = \"Fetch\"\naction = \"corrupt\"\n\n\
             [[rule]]\naction = \"bandwidth\"\nbytes_per_second = 65536\ndirection = \"request\"\n\n\
             [[rule]]\napi = \"Metadata\"\naction = \"rewrite\"\nfield = \"leader_id\"\nvalue = 99\n",
        ),
        (
            "scenario",
            "[scenario]\nupstream = \"127.0.0.1:9092\"\ntimeout_s = 60\n\n\
             [[rule]]\napi = \"Produce\"\nfirst = 3\naction = \"error\"\nerror = \"NOT_LEADER_OR_FOLLOWER\"\n\n\
             [[rule]]\napi = \"Produce\"\nevery = 2\nafter = 0\nuntil = 600\naction = \"drop-response\"\n",
        ),
        ("inline", "rule = [{ action = \"cut-before\" }, { api = \"Fetch\", action = \"corrupt\" }]\n"),
        ("mistake", "[[rule]]\naction = \"delay\"\ndelay_ms = 5\nretries = 2\n"),
        ("flag-storm", "api=Produce|Fetch,version=3+,topic=orders,first=3,action=error,error=NOT_LEADER_OR_FOLLOWER"),
        ("flag-delay", "api=Fetch,every=7,action=delay,delay_ms=300,jitter_ms=20,distribution=normal,direction=response"),
        ("flag-rewrite", "api=Metadata,action=rewrite,field=host,value=elsewhere"),
        ("flag-window", "probability=0.25,after=10,until=20,every=3,action=cut-before"),
        ("flag-bandwidth", "broker=b:9092,client_id=app,partition=3,action=bandwidth,bytes_per_second=10"),
    ];
    for (name, text) in files {
        write(corpus, "fault_rules", name, text.as_bytes());
    }
}

/// Frames for the proxy's fault actions (`kwire_fuzz::fault_answers`, byte 0 the action):
/// sample requests of every API and version behind their header (action 0, byte 1 an error
/// code), sample responses and ones with fields to rewrite (action 1: API, version, field),
/// and Fetch responses carrying a batch to corrupt (action 2: version).
fn fault_answers(corpus: &Path) {
    let specs = supported_apis();
    for (i, (api, is_request, version, body)) in kwire_fuzz::default_bodies().into_iter().enumerate() {
        let spec = specs.iter().find(|s| s.name == api).expect("listed");
        let key = spec.key.0;
        let mut frame = Vec::new();
        if is_request {
            frame.extend_from_slice(&[0, (i % 132) as u8]);
            frame.extend_from_slice(&key.to_be_bytes());
            frame.extend_from_slice(&version.to_be_bytes());
            frame.extend_from_slice(&[0, 0, 0, 7, 0, 4]);
            frame.extend_from_slice(b"seed");
            if spec.request_header_version(version) >= 2 {
                frame.push(0);
            }
        } else {
            // `throttle_time_ms` or `error_code` (most responses have one), with each value.
            let value = i / 2 % kwire_fuzz::rewrite_values().len();
            let pick = (value * kwire_fuzz::REWRITE_FIELDS.len() + i % 2) as u8;
            frame.extend_from_slice(&[1, key as u8, version as u8, pick, 0, 0, 0, 7]);
            if spec.response_header_version(version) >= 1 {
                frame.push(0);
            }
        }
        frame.extend_from_slice(&body);
        let kind = if is_request { "request" } else { "response" };
        write(corpus, "fault_answers", &format!("{kind}-{api}-v{version}"), &frame);
    }

    // Responses with the fields a rewrite sets: `offset` (index 4 of REWRITE_FIELDS) of a
    // ListOffsets v7, `host` (7) of a Metadata v10.
    let field =
        |name: &str| kwire_fuzz::REWRITE_FIELDS.iter().position(|f| *f == name).expect("a field") as u8;
    let list_offsets = serde_json::json!({
        "header": {"correlation_id": 9},
        "body": {"throttle_time_ms": 0, "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "error_code": 0, "timestamp": -1, "offset": 40, "leader_epoch": 3},
            {"partition_index": 1, "error_code": 0, "timestamp": -1, "offset": 41, "leader_epoch": 3}]}]}
    });
    let metadata = serde_json::json!({
        "header": {"correlation_id": 1},
        "body": {"throttle_time_ms": 0, "brokers": [{"node_id": 1, "host": "h", "port": 9092, "rack": null}],
            "cluster_id": "c", "controller_id": 1, "topics": [{"error_code": 0, "name": "t",
                "topic_id": "x6PVMq1pS4W3wfd3cT6Ncg", "is_internal": false, "partitions": [
                    {"error_code": 0, "partition_index": 0, "leader_id": 1, "leader_epoch": 4,
                     "replica_nodes": [1], "isr_nodes": [1], "offline_replicas": []}],
                "topic_authorized_operations": 0}],
            "cluster_authorized_operations": i32::MIN}
    });
    for (name, api, version, json, pick) in [
        ("list-offsets-v7-offset", ApiKey::LIST_OFFSETS, 7, list_offsets, field("offset")),
        ("metadata-v10-host", ApiKey::METADATA, 10, metadata.clone(), field("host")),
        ("metadata-v10-leader-id", ApiKey::METADATA, 10, metadata, field("leader_id")),
    ] {
        let mut frame = vec![1, api.0 as u8, version as u8, pick];
        frame.extend(json_to_frame(&json, Some((api, version))).expect("a response"));
        write(corpus, "fault_answers", name, &frame);
    }

    // Fetch responses with a batch in a partition, in old, flexible and topic-id versions.
    let fetch = <FetchRequest as Body>::SPEC;
    for (name, batch) in batches() {
        let records = batch.to_bytes().expect("encodes");
        for version in [4, 11, 12, 13, 16] {
            let response = FetchResponse {
                responses: vec![FetchableTopicResponse {
                    topic: (version < 13).then(|| "t".to_owned()),
                    topic_id: (version >= 13).then_some(Uuid([0x5a; 16])),
                    partitions: vec![FetchPartitionResponse {
                        partition_index: 3,
                        records: Some(records.clone()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            let mut frame = vec![2, (version - fetch.versions.min) as u8, 0, 0, 0, 42];
            if fetch.is_flexible(version) {
                frame.push(0);
            }
            frame.extend(response.encode_body(version).expect("encodes"));
            write(corpus, "fault_answers", &format!("fetch-v{version}-{name}"), &frame);
        }
    }
}
