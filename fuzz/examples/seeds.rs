//! Writes generated seed inputs into `fuzz/corpus/<target>/` (run by `fuzz/seed-corpus.sh`,
//! which also copies the Kafka-written body fixtures): default-valued bodies of every API and
//! version (with and without a header), record batches with each codec, control and
//! transactional batches, legacy message sets (plain and compressed wrappers), a cut-short tail,
//! compressed blobs for each decompressor, request frames for the frame splitter, kwire offset
//! files, kafka-consumer-groups CSVs and consumer-protocol subscriptions and assignments.

use std::fs;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use kafka_wire::protocol::consumer_protocol::{
    ConsumerAssignment, ConsumerSubscription, ConsumerTopicPartitions, VERSIONS,
};
use kafka_wire::protocol::frame::encode_request;
use kafka_wire::protocol::messages::{ApiVersionsRequest, MetadataRequest};
use kafka_wire::protocol::records::compression::compress;
use kafka_wire::protocol::records::legacy::encode_compressed;
use kafka_wire::protocol::records::{
    BatchAttributes, Compression, ControlRecordKey, ControlRecordType, EndTransactionMarker, Header,
    LegacyMessage, Record, RecordBatch,
};
use kafka_wire::protocol::registry::supported_apis;
use kafka_wire::protocol::Uuid;
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
}
