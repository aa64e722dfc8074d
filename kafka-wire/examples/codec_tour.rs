//! A tour of the sans-IO codec: encode a ListOffsets response, decode it back, write a record
//! batch and read it with keys and values as slices of the input, and refuse a hostile body.
//!
//! `cargo run -p kafka-wire --example codec_tour`

use bytes::Bytes;
use kafka_wire::protocol::messages::{
    ListOffsetsPartitionResponse, ListOffsetsResponse, ListOffsetsTopicResponse,
};
use kafka_wire::protocol::records::{Compression, DecodeOptions, Record, RecordBatch};
use kafka_wire::protocol::{Body, ErrorCode, TaggedFields};

fn main() {
    // A message body at a version: bytes out, and the same value back.
    let response = ListOffsetsResponse {
        throttle_time_ms: Some(0),
        topics: vec![ListOffsetsTopicResponse {
            name: "orders".to_owned(),
            partitions: vec![ListOffsetsPartitionResponse {
                partition_index: 0,
                error_code: ErrorCode(0),
                old_style_offsets: None,
                timestamp: Some(-1),
                offset: Some(4_200),
                leader_epoch: Some(7),
                tagged_fields: TaggedFields::default(),
            }],
            tagged_fields: TaggedFields::default(),
        }],
        tagged_fields: TaggedFields::default(),
    };
    let bytes = response.encode_body(8).expect("encodes at v8");
    let back = ListOffsetsResponse::decode_body(Bytes::from(bytes.clone()), 8).expect("decodes");
    assert_eq!(back, response);
    println!("ListOffsets v8: {} bytes, offset {:?}", bytes.len(), back.topics[0].partitions[0].offset);

    // A record batch, compressed; the decoded keys and values share one buffer per batch.
    let records = (0..3)
        .map(|i| Record {
            offset_delta: i,
            ..Record::new(Some(Bytes::from(format!("key-{i}"))), Some(Bytes::from(format!("value {i}"))))
        })
        .collect();
    let batch = RecordBatch::new(100, 1_750_000_000_000, Compression::Zstd, records);
    let wire = batch.to_bytes().expect("encodes");
    let read = RecordBatch::decode(wire.clone(), &DecodeOptions::default()).expect("decodes");
    assert_eq!(read, batch);
    println!(
        "record batch: {} bytes (zstd), offsets {}..{}",
        wire.len(),
        read.base_offset,
        read.next_offset()
    );

    // Hostile input: a 7-byte body claiming 2^31 - 1 topics is an error, not a 171 GB reservation.
    let err = ListOffsetsResponse::decode_body(Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 0, 0, 0]), 1)
        .expect_err("refused");
    println!("hostile body: {} at byte {}: {}", err.field, err.offset, err.kind);
}
