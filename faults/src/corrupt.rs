//! `action = "corrupt"`: a Fetch response whose first whole record batch has one byte flipped
//! inside its records, past the batch header, so that its CRC-32C no longer holds. A client
//! that checks CRCs reports the batch; one that does not hands out a wrong record.

use bytes::Bytes;
use kafka_wire::protocol::frame::decode_response;
use kafka_wire::protocol::messages::FetchRequest;

/// Bytes of a v2 record batch header: base offset (8), length (4), leader epoch (4), magic (1),
/// CRC (4), attributes (2), last offset delta (4), first and max timestamps (16), producer id
/// (8), producer epoch (2), base sequence (4), record count (4).
const BATCH_HEADER: usize = 61;
/// Where the magic byte sits in a batch.
const MAGIC_AT: usize = 16;

/// Which batch was corrupted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corrupted {
    /// The topic's name, or its id (base64url text) where the response names it by id alone.
    pub topic: String,
    /// The partition's index.
    pub partition: i32,
    /// The batch's base offset.
    pub base_offset: i64,
}

/// `frame` (a Fetch response without its size prefix, answering a request of `version`) with
/// one byte of its first whole v2 batch flipped; `None` when it carries none (or does not
/// decode): nothing is changed then.
pub fn corrupt_fetch_response(frame: &Bytes, version: i16) -> Option<(Vec<u8>, Corrupted)> {
    let (_, response) = decode_response::<FetchRequest>(frame.clone(), version).ok()?;
    for topic in &response.responses {
        for partition in &topic.partitions {
            let Some(records) = partition.records.as_ref() else { continue };
            let whole =
                records.get(8..12).and_then(|l| usize::try_from(i32::from_be_bytes(l.try_into().ok()?)).ok());
            let Some(length) = whole.map(|l| l + 12) else { continue };
            if length <= BATCH_HEADER || records.len() < length || records.get(MAGIC_AT) != Some(&2) {
                continue;
            }
            // The records are a zero-copy slice of the frame: their place in it.
            let start = (records.as_ptr() as usize).checked_sub(frame.as_ptr() as usize)?;
            if start + length > frame.len() {
                return None;
            }
            let mut out = frame.to_vec();
            out[start + BATCH_HEADER] ^= 0xff;
            let base_offset = i64::from_be_bytes(records[..8].try_into().ok()?);
            let topic = topic
                .topic
                .clone()
                .unwrap_or_else(|| topic.topic_id.map(|id| id.to_string()).unwrap_or_default());
            return Some((out, Corrupted { topic, partition: partition.partition_index, base_offset }));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_wire::protocol::messages::{FetchPartitionResponse, FetchResponse, FetchableTopicResponse};
    use kafka_wire::protocol::records::{Compression, DecodeOptions, Record, RecordBatch};
    use kafka_wire::protocol::{Body as _, DecodeErrorKind};

    fn response(records: Option<Bytes>, version: i16) -> Bytes {
        let response = FetchResponse {
            responses: vec![FetchableTopicResponse {
                topic: Some("t".to_owned()),
                partitions: vec![FetchPartitionResponse {
                    partition_index: 3,
                    records,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut frame = 42_i32.to_be_bytes().to_vec();
        if version >= 12 {
            frame.push(0); // the flexible response header's empty tag section
        }
        frame.extend(response.encode_body(version).unwrap());
        Bytes::from(frame)
    }

    #[test]
    fn the_first_batch_fails_its_crc_and_is_named() {
        for version in [4, 11, 12] {
            let batch = RecordBatch::new(
                1000,
                1_700_000_000_000,
                Compression::None,
                vec![Record::new(Some(Bytes::from_static(b"k")), Some(Bytes::from_static(b"value")))],
            );
            let frame = response(Some(batch.to_bytes().unwrap()), version);
            let (corrupted, which) = corrupt_fetch_response(&frame, version).expect("a batch to corrupt");
            assert_eq!(
                which,
                Corrupted { topic: "t".to_owned(), partition: 3, base_offset: 1000 },
                "v{version}"
            );
            let (_, decoded) = decode_response::<FetchRequest>(Bytes::from(corrupted), version).unwrap();
            let records = decoded.responses[0].partitions[0].records.clone().unwrap();
            let err = RecordBatch::decode(records, &DecodeOptions::default()).unwrap_err();
            assert!(matches!(err.kind, DecodeErrorKind::CrcMismatch { .. }), "v{version}: {err}");
        }
        assert_eq!(corrupt_fetch_response(&response(None, 12), 12), None, "no records: nothing to corrupt");
        assert_eq!(corrupt_fetch_response(&Bytes::from_static(b"\0\0"), 12), None);
    }
}
