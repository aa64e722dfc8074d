//! RecordBatch, magic 2 (Kafka 0.11+): the only record format Kafka 4 writes.
//!
//! ```text
//! offset  field                  notes
//!  0      base_offset i64
//!  8      batch_length i32       bytes after this field
//! 12      partition_leader_epoch i32
//! 16      magic i8 (= 2)
//! 17      crc u32                CRC-32C of bytes 21..end
//! 21      attributes i16         codec, timestamp type, transactional, control, delete horizon
//! 23      last_offset_delta i32
//! 27      base_timestamp i64
//! 35      max_timestamp i64
//! 43      producer_id i64
//! 51      producer_epoch i16
//! 53      base_sequence i32
//! 57      record_count i32       never trusted: checked against the bytes left
//! 61      records                one compressed blob when the codec is not "none"
//! ```
//!
//! The CRC leaves out the partition leader epoch so a broker can restamp it without
//! recomputing the checksum.

use bytes::Bytes;

use super::builder::write_header;
use super::compression::{self, Compression, COMPRESSION_MASK};
use super::control::{ControlRecordKey, ControlRecordType};
use super::view::{check_count, BatchHeader, RawBatch, Records};
use super::{varint, Budget, DecodeOptions, RecordEncodeError};
use crate::protocol::decoder::{DecodeResult, Decoder};
use crate::protocol::error::{DecodeError, DecodeErrorKind, EncodeError};

/// Bytes before the first record: the fixed header above.
pub const RECORD_BATCH_OVERHEAD: usize = 61;
/// Bytes before `batch_length` starts counting (base offset + the length itself).
pub const LOG_OVERHEAD: usize = 12;
/// The magic byte of this format.
pub const MAGIC: i8 = 2;
/// Where the CRC-covered bytes start.
pub(crate) const CRC_START: usize = 21;

/// `max_timestamp`/`base_timestamp` meaning: set by the producer or by the broker on append.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimestampType {
    /// The producer's timestamp (attribute bit 3 clear).
    #[default]
    CreateTime,
    /// The broker's append time (attribute bit 3 set); every record's timestamp is the batch's
    /// `max_timestamp`.
    LogAppendTime,
}

/// The batch's attribute bits, decoded. Bits 7–15 are unused by Kafka and not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BatchAttributes {
    /// Bits 0–2.
    pub compression: Compression,
    /// Bit 3.
    pub timestamp_type: TimestampType,
    /// Bit 4: the batch belongs to a transaction.
    pub is_transactional: bool,
    /// Bit 5: the batch holds a control record (a transaction marker), not user data.
    pub is_control: bool,
    /// Bit 6 (KIP-534): `base_timestamp` is the time after which the cleaner may drop this
    /// batch's tombstones and markers.
    pub has_delete_horizon: bool,
}

impl BatchAttributes {
    /// Decodes the bits; a codec id kwire does not know (5–7) is returned as `Err(id)`.
    pub fn from_bits(bits: i16) -> Result<Self, u8> {
        let id = (bits as u8) & COMPRESSION_MASK;
        let compression = Compression::from_id(id).ok_or(id)?;
        Ok(Self {
            compression,
            timestamp_type: if bits & 0x08 != 0 {
                TimestampType::LogAppendTime
            } else {
                TimestampType::CreateTime
            },
            is_transactional: bits & 0x10 != 0,
            is_control: bits & 0x20 != 0,
            has_delete_horizon: bits & 0x40 != 0,
        })
    }

    /// The attribute bits as the batch header stores them.
    pub fn to_bits(self) -> i16 {
        i16::from(self.compression.id())
            | if self.timestamp_type == TimestampType::LogAppendTime { 0x08 } else { 0 }
            | if self.is_transactional { 0x10 } else { 0 }
            | if self.is_control { 0x20 } else { 0 }
            | if self.has_delete_horizon { 0x40 } else { 0 }
    }
}

/// A record header: a UTF-8 key and nullable bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The header key (never null on the wire).
    pub key: String,
    /// The header value; `None` is null (length −1).
    pub value: Option<Bytes>,
}

/// One record of a batch. Offsets and timestamps are deltas from the batch's base values.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    /// Unused by Kafka so far; kept so a round trip is exact.
    pub attributes: i8,
    /// Milliseconds after the batch's `base_timestamp`.
    pub timestamp_delta: i64,
    /// Added to the batch's `base_offset` to give the record's offset.
    pub offset_delta: i32,
    /// `None` is a null key (not the same as empty).
    pub key: Option<Bytes>,
    /// `None` is a null value: a tombstone on a compacted topic.
    pub value: Option<Bytes>,
    /// The record's headers, in order; keys may repeat.
    pub headers: Vec<Header>,
}

impl Record {
    /// A record with a key and value and no headers, at offset and timestamp delta 0.
    pub fn new(key: Option<Bytes>, value: Option<Bytes>) -> Self {
        Self { key, value, ..Self::default() }
    }

    /// An upper bound of the record's encoded size in bytes: its data plus the widest varint
    /// for every length and delta.
    fn max_encoded_len(&self) -> usize {
        const VARINT: usize = 5;
        const VARLONG: usize = 10;
        let data = |b: Option<&Bytes>| b.map_or(0, Bytes::len);
        let headers: usize =
            self.headers.iter().map(|h| 2 * VARINT + h.key.len() + data(h.value.as_ref())).sum();
        VARINT
            + 1
            + VARLONG
            + VARINT
            + 3 * VARINT
            + data(self.key.as_ref())
            + data(self.value.as_ref())
            + headers
    }
}

/// A decoded magic-2 batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordBatch {
    /// The offset of the first record; each record's offset is this plus its offset delta.
    pub base_offset: i64,
    /// Stamped by the leader; −1 from a producer.
    pub partition_leader_epoch: i32,
    /// Compression, timestamp type, transactional and control flags.
    pub attributes: BatchAttributes,
    /// Offset of the last record minus `base_offset`; compaction can remove records, so this
    /// is not always `records.len() - 1`.
    pub last_offset_delta: i32,
    /// Timestamp of the first record (or the delete horizon, see [`BatchAttributes`]).
    pub base_timestamp: i64,
    /// The largest timestamp in the batch (ms since the epoch); with log-append time, every record's
    /// timestamp.
    pub max_timestamp: i64,
    /// −1 when the producer is neither idempotent nor transactional.
    pub producer_id: i64,
    /// The producer's epoch, or −1 for a non-idempotent producer.
    pub producer_epoch: i16,
    /// −1 when the producer is neither idempotent nor transactional.
    pub base_sequence: i32,
    /// The records, decompressed.
    pub records: Vec<Record>,
}

impl RecordBatch {
    /// A plain (non-idempotent, non-transactional) batch holding `records`, with
    /// `last_offset_delta` and `max_timestamp` computed from them.
    pub fn new(
        base_offset: i64,
        base_timestamp: i64,
        compression: Compression,
        records: Vec<Record>,
    ) -> Self {
        let last_offset_delta = records.iter().map(|r| r.offset_delta).max().unwrap_or(0);
        let max_timestamp = records
            .iter()
            .map(|r| base_timestamp.saturating_add(r.timestamp_delta))
            .max()
            .unwrap_or(base_timestamp);
        Self {
            base_offset,
            partition_leader_epoch: -1,
            attributes: BatchAttributes { compression, ..BatchAttributes::default() },
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            records,
        }
    }

    /// The offset of the last record, as the batch header claims it.
    pub fn last_offset(&self) -> i64 {
        self.base_offset.saturating_add(i64::from(self.last_offset_delta))
    }

    /// The offset to fetch next after this batch.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().saturating_add(1)
    }

    /// For a control batch, the type of its marker (read from the first record's key).
    /// `None` for a data batch or a control batch without a readable key.
    pub fn control_type(&self) -> Option<ControlRecordType> {
        if !self.attributes.is_control {
            return None;
        }
        let key = self.records.first()?.key.as_ref()?;
        ControlRecordKey::parse(key).ok().map(|k| k.kind)
    }

    /// Reads one batch at the decoder's position; the decoder moves past it.
    pub fn read(d: &mut Decoder, opts: &DecodeOptions) -> DecodeResult<Self> {
        let total = Self::peek_size(d)?;
        let start = d.position();
        let bytes = d.take(total, "record_batch")?;
        Self::parse(&bytes, start, opts, &mut Budget::new(opts))
    }

    /// Decodes a buffer holding exactly one batch.
    pub fn decode(bytes: Bytes, opts: &DecodeOptions) -> DecodeResult<Self> {
        let mut d = Decoder::new(bytes);
        let batch = Self::read(&mut d, opts)?;
        d.finish("record_batch")?;
        Ok(batch)
    }

    /// The whole batch's size in bytes from its header, without consuming anything.
    fn peek_size(d: &Decoder) -> DecodeResult<usize> {
        let mut peek = d.clone();
        peek.i64("base_offset")?;
        let at = peek.position();
        let batch_length = peek.i32("batch_length")?;
        let min = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD;
        match usize::try_from(batch_length) {
            Ok(n) if n >= min => Ok(LOG_OVERHEAD + n),
            _ => Err(DecodeError::new(
                DecodeErrorKind::Invalid(format!(
                    "record batch length {batch_length} is below the {min}-byte minimum"
                )),
                "batch_length",
                at,
            )),
        }
    }

    /// Parses a buffer holding exactly one batch (its length field already checked against
    /// the buffer). `base` is the buffer's absolute offset, for errors. The records are read
    /// by the same reader as [`BatchView`](super::BatchView)'s, then made owning: keys and values become
    /// slices of `bytes` (uncompressed) or of the one decompressed buffer.
    pub(crate) fn parse(
        bytes: &Bytes,
        base: usize,
        opts: &DecodeOptions,
        budget: &mut Budget,
    ) -> DecodeResult<Self> {
        let raw = RawBatch::parse(bytes, base, opts)?;
        let body = match raw.header.attributes.compression {
            Compression::None => bytes.slice_ref(raw.body),
            codec => Bytes::from(budget.decompress(codec, raw.body, "records", raw.records_at)?),
        };
        check_count(&body, raw.count, raw.records_at)?;
        let mut records = Vec::with_capacity(raw.count);
        for r in Records::new(&body, raw.records_at, raw.count) {
            records.push(r?.to_record_in(&body));
        }
        let h = raw.header;
        Ok(Self {
            base_offset: h.base_offset,
            partition_leader_epoch: h.partition_leader_epoch,
            attributes: h.attributes,
            last_offset_delta: h.last_offset_delta,
            base_timestamp: h.base_timestamp,
            max_timestamp: h.max_timestamp,
            producer_id: h.producer_id,
            producer_epoch: h.producer_epoch,
            base_sequence: h.base_sequence,
            records,
        })
    }

    /// Appends the encoded batch to `out`, compressing the records with
    /// `attributes.compression`. `record_count` is `records.len()`.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), RecordEncodeError> {
        let start = out.len();
        // Room for the uncompressed records at once: growing by doubling copied them again.
        let records_len: usize = self.records.iter().map(Record::max_encoded_len).sum();
        let uncompressed = self.attributes.compression == Compression::None;
        out.reserve(RECORD_BATCH_OVERHEAD + if uncompressed { records_len } else { 0 });
        out.resize(start + RECORD_BATCH_OVERHEAD, 0); // the header, written below
        let count = i32::try_from(self.records.len())
            .map_err(|_| EncodeError::TooLong { field: "records", len: self.records.len() })?;
        match self.attributes.compression {
            Compression::None => write_records(&self.records, out)?,
            codec => {
                let mut plain = Vec::with_capacity(records_len);
                write_records(&self.records, &mut plain)?;
                compression::compress(codec, &plain, out)?;
            }
        }
        let header = BatchHeader {
            base_offset: self.base_offset,
            partition_leader_epoch: self.partition_leader_epoch,
            attributes: self.attributes,
            last_offset_delta: self.last_offset_delta,
            base_timestamp: self.base_timestamp,
            max_timestamp: self.max_timestamp,
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            base_sequence: self.base_sequence,
        };
        write_header(&mut out[start..], &header, count)
    }

    /// The encoded batch as a new buffer.
    pub fn to_bytes(&self) -> Result<Bytes, RecordEncodeError> {
        let mut out = Vec::new();
        self.encode(&mut out)?;
        Ok(Bytes::from(out))
    }
}

fn too_long(field: &'static str, len: usize) -> RecordEncodeError {
    RecordEncodeError::Encode(EncodeError::TooLong { field, len })
}

/// The varint length prefix of a nullable field and the field's byte count.
fn nullable_len(v: Option<&[u8]>, field: &'static str) -> Result<(i32, usize), RecordEncodeError> {
    match v {
        None => Ok((-1, 0)),
        Some(b) => Ok((i32::try_from(b.len()).map_err(|_| too_long(field, b.len()))?, b.len())),
    }
}

fn write_records(records: &[Record], out: &mut Vec<u8>) -> Result<(), RecordEncodeError> {
    for r in records {
        write_record(
            out,
            r.attributes,
            r.timestamp_delta,
            r.offset_delta,
            r.key.as_deref(),
            r.value.as_deref(),
            &r.headers,
        )?;
    }
    Ok(())
}

/// Appends one record (length prefix, attributes, deltas, key, value, headers) to `out`;
/// on an error (a length past `i32::MAX`) `out` is left as it was.
pub(crate) fn write_record(
    out: &mut Vec<u8>,
    attributes: i8,
    timestamp_delta: i64,
    offset_delta: i32,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[Header],
) -> Result<(), RecordEncodeError> {
    let (key_len, key_bytes) = nullable_len(key, "record.key")?;
    let (value_len, value_bytes) = nullable_len(value, "record.value")?;
    let header_count = i32::try_from(headers.len()).map_err(|_| too_long("record.headers", headers.len()))?;
    let mut body = 1
        + varint::len(varint::zigzag64(timestamp_delta))
        + varint::len(varint::zigzag32(offset_delta))
        + varint::len(varint::zigzag32(key_len))
        + key_bytes
        + varint::len(varint::zigzag32(value_len))
        + value_bytes
        + varint::len(varint::zigzag32(header_count));
    for h in headers {
        let (k, kb) = nullable_len(Some(h.key.as_bytes()), "record.headers.key")?;
        let (v, vb) = nullable_len(h.value.as_deref(), "record.headers.value")?;
        body += varint::len(varint::zigzag32(k)) + kb + varint::len(varint::zigzag32(v)) + vb;
    }
    let body_len = i32::try_from(body).map_err(|_| too_long("record", body))?;
    out.reserve(body + 5);
    varint::put(out, varint::zigzag32(body_len));
    out.push(attributes as u8);
    varint::put(out, varint::zigzag64(timestamp_delta));
    varint::put(out, varint::zigzag32(offset_delta));
    varint::put(out, varint::zigzag32(key_len));
    out.extend_from_slice(key.unwrap_or_default());
    varint::put(out, varint::zigzag32(value_len));
    out.extend_from_slice(value.unwrap_or_default());
    varint::put(out, varint::zigzag32(header_count));
    for h in headers {
        // Lengths were range-checked while sizing the body.
        varint::put(out, varint::zigzag32(h.key.len() as i32));
        out.extend_from_slice(h.key.as_bytes());
        match &h.value {
            None => varint::put(out, varint::zigzag32(-1)),
            Some(v) => {
                varint::put(out, varint::zigzag32(v.len() as i32));
                out.extend_from_slice(v);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::{Duration, Instant};

    use proptest::collection::vec;
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::records::control::EndTransactionMarker;

    fn bytes(max: usize) -> impl Strategy<Value = Bytes> {
        vec(any::<u8>(), 0..max).prop_map(Bytes::from)
    }

    fn header() -> impl Strategy<Value = Header> {
        ("[a-zA-Z0-9._é-]{0,8}", proptest::option::of(bytes(12)))
            .prop_map(|(key, value)| Header { key, value })
    }

    pub(crate) fn record() -> impl Strategy<Value = Record> {
        (
            any::<i8>(),
            any::<i64>(),
            any::<i32>(),
            proptest::option::of(bytes(24)),
            proptest::option::of(bytes(200)),
            vec(header(), 0..3),
        )
            .prop_map(|(attributes, timestamp_delta, offset_delta, key, value, headers)| Record {
                attributes,
                timestamp_delta,
                offset_delta,
                key,
                value,
                headers,
            })
    }

    fn available_codec() -> impl Strategy<Value = Compression> {
        proptest::sample::select(
            Compression::ALL.into_iter().filter(|c| c.is_available()).collect::<Vec<_>>(),
        )
    }

    pub(crate) fn batch() -> impl Strategy<Value = RecordBatch> {
        let attributes = (available_codec(), any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>())
            .prop_map(|(compression, log_append, is_transactional, is_control, has_delete_horizon)| {
                BatchAttributes {
                    compression,
                    timestamp_type: if log_append {
                        TimestampType::LogAppendTime
                    } else {
                        TimestampType::CreateTime
                    },
                    is_transactional,
                    is_control,
                    has_delete_horizon,
                }
            });
        let header = (any::<i64>(), any::<i32>(), attributes, any::<i32>(), any::<i64>(), any::<i64>());
        let producer = (any::<i64>(), any::<i16>(), any::<i32>());
        (header, producer, vec(record(), 0..12)).prop_map(
            |(
                (
                    base_offset,
                    partition_leader_epoch,
                    attributes,
                    last_offset_delta,
                    base_timestamp,
                    max_timestamp,
                ),
                (producer_id, producer_epoch, base_sequence),
                records,
            )| RecordBatch {
                base_offset,
                partition_leader_epoch,
                attributes,
                last_offset_delta,
                base_timestamp,
                max_timestamp,
                producer_id,
                producer_epoch,
                base_sequence,
                records,
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn batches_round_trip_with_every_codec(batch in batch()) {
            let encoded = batch.to_bytes().unwrap();
            let decoded = RecordBatch::decode(encoded.clone(), &DecodeOptions::default()).unwrap();
            prop_assert_eq!(&decoded, &batch);
            // Re-encoding what was read gives the same bytes (codecs are deterministic).
            prop_assert_eq!(decoded.to_bytes().unwrap(), encoded);
        }

        #[test]
        fn any_single_byte_flip_after_the_epoch_is_caught(batch in batch(), at in any::<prop::sample::Index>(), bit in 0u8..8) {
            let mut encoded = batch.to_bytes().unwrap().to_vec();
            let at = 17 + at.index(encoded.len() - 17);
            encoded[at] ^= 1 << bit;
            prop_assert!(RecordBatch::decode(Bytes::from(encoded), &DecodeOptions::default()).is_err());
        }
    }

    fn plain_batch(records: Vec<Record>) -> RecordBatch {
        RecordBatch::new(1000, 1_700_000_000_000, Compression::None, records)
    }

    #[test]
    fn a_flipped_byte_is_a_crc_mismatch() {
        let batch =
            plain_batch(vec![Record::new(Some(Bytes::from_static(b"k")), Some(Bytes::from_static(b"v")))]);
        let mut encoded = batch.to_bytes().unwrap().to_vec();
        let last = encoded.len() - 2;
        encoded[last] ^= 0x01;
        let err = RecordBatch::decode(Bytes::from(encoded), &DecodeOptions::default()).unwrap_err();
        assert!(matches!(err.kind, DecodeErrorKind::CrcMismatch { .. }), "{err}");
        assert_eq!((err.field, err.offset), ("crc", 21));
    }

    #[test]
    fn a_restamped_leader_epoch_keeps_the_crc_valid() {
        let batch = plain_batch(vec![Record::new(None, Some(Bytes::from_static(b"v")))]);
        let mut encoded = batch.to_bytes().unwrap().to_vec();
        encoded[12..16].copy_from_slice(&7i32.to_be_bytes());
        let decoded = RecordBatch::decode(Bytes::from(encoded), &DecodeOptions::default()).unwrap();
        assert_eq!(decoded.partition_leader_epoch, 7);
    }

    #[test]
    fn a_corrupt_batch_still_reads_when_crc_checks_are_off() {
        let batch = plain_batch(vec![Record::new(None, Some(Bytes::from_static(b"v")))]);
        let mut encoded = batch.to_bytes().unwrap().to_vec();
        encoded[17] ^= 0xff;
        let opts = DecodeOptions { verify_crc: false, ..DecodeOptions::default() };
        assert_eq!(RecordBatch::decode(Bytes::from(encoded), &opts).unwrap(), batch);
    }

    /// The 61-byte header with a valid CRC, no records, and `record_count` as given.
    pub(crate) fn empty_batch_claiming(count: i32) -> Vec<u8> {
        let mut encoded = plain_batch(Vec::new()).to_bytes().unwrap().to_vec();
        encoded[57..61].copy_from_slice(&count.to_be_bytes());
        let crc = crc32c::crc32c(&encoded[21..]);
        encoded[17..21].copy_from_slice(&crc.to_be_bytes());
        encoded
    }

    #[test]
    fn a_61_byte_batch_claiming_2_pow_31_records_fails_fast_without_allocating() {
        let encoded = empty_batch_claiming(0x7fff_ffff);
        assert_eq!(encoded.len(), 61);
        let started = Instant::now();
        let err = RecordBatch::decode(Bytes::from(encoded), &DecodeOptions::default()).unwrap_err();
        let elapsed = started.elapsed();
        // The count is checked against the 0 bytes left before the record vector is sized, so
        // nothing near 2^31 × size_of::<Record>() is ever requested.
        assert_eq!(err.kind, DecodeErrorKind::LengthExceedsInput { claimed: 0x7fff_ffff, available: 0 });
        assert_eq!((err.field, err.offset), ("record_count", 61));
        assert!(elapsed < Duration::from_millis(50), "took {elapsed:?}");
    }

    #[test]
    fn a_negative_record_count_is_an_error() {
        let err = RecordBatch::decode(Bytes::from(empty_batch_claiming(-1)), &DecodeOptions::default())
            .unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::NegativeLength(-1));
    }

    #[test]
    fn a_batch_length_below_the_header_is_an_error() {
        let mut encoded = plain_batch(Vec::new()).to_bytes().unwrap().to_vec();
        encoded[8..12].copy_from_slice(&10i32.to_be_bytes());
        let err = RecordBatch::decode(Bytes::from(encoded), &DecodeOptions::default()).unwrap_err();
        assert_eq!(err.field, "batch_length");
    }

    #[test]
    fn a_batch_cut_short_is_incomplete() {
        let batch = plain_batch(vec![Record::new(None, Some(Bytes::from_static(b"value")))]);
        let encoded = batch.to_bytes().unwrap();
        for cut in 0..encoded.len() {
            let err = RecordBatch::decode(encoded.slice(..cut), &DecodeOptions::default()).unwrap_err();
            assert!(err.is_incomplete(), "cut at {cut}: {err}");
        }
    }

    #[test]
    fn uncompressed_keys_and_values_are_slices_of_the_input() {
        let batch = plain_batch(vec![
            Record::new(Some(Bytes::from_static(b"key-0")), Some(Bytes::from_static(b"value-0"))),
            Record { offset_delta: 1, ..Record::new(None, Some(Bytes::from_static(b"value-1"))) },
        ]);
        let input = batch.to_bytes().unwrap();
        let range = input.as_ptr() as usize..input.as_ptr() as usize + input.len();
        let decoded = RecordBatch::decode(input.clone(), &DecodeOptions::default()).unwrap();
        for r in &decoded.records {
            for b in [&r.key, &r.value].into_iter().flatten() {
                assert!(range.contains(&(b.as_ptr() as usize)), "copied instead of sliced");
            }
        }
        assert_eq!(decoded.next_offset(), 1002);
    }

    #[test]
    fn a_record_whose_fields_overrun_its_length_is_an_error() {
        // One record claiming length 3 but carrying 7 bytes of fields.
        let mut encoded = plain_batch(vec![Record::default()]).to_bytes().unwrap().to_vec();
        assert_eq!(encoded[61], 12); // zig-zag 6: attributes, ts, offset, key, value, headers
        encoded[61] = 6; // zig-zag 3
        let crc = crc32c::crc32c(&encoded[21..]);
        encoded[17..21].copy_from_slice(&crc.to_be_bytes());
        let err = RecordBatch::decode(Bytes::from(encoded), &DecodeOptions::default()).unwrap_err();
        assert!(matches!(err.kind, DecodeErrorKind::LengthExceedsInput { .. }), "{err}");
    }

    #[test]
    fn a_header_count_beyond_the_record_is_an_error() {
        let mut encoded = plain_batch(vec![Record::default()]).to_bytes().unwrap().to_vec();
        let last = encoded.len() - 1;
        encoded[last] = 0x7e; // header count 63 in a record with no bytes left
        let crc = crc32c::crc32c(&encoded[21..]);
        encoded[17..21].copy_from_slice(&crc.to_be_bytes());
        let err = RecordBatch::decode(Bytes::from(encoded), &DecodeOptions::default()).unwrap_err();
        assert_eq!(err.field, "record.headers");
    }

    #[test]
    fn an_unknown_codec_is_unsupported_compression() {
        let mut encoded = plain_batch(Vec::new()).to_bytes().unwrap().to_vec();
        encoded[22] = 6;
        let crc = crc32c::crc32c(&encoded[21..]);
        encoded[17..21].copy_from_slice(&crc.to_be_bytes());
        let err = RecordBatch::decode(Bytes::from(encoded), &DecodeOptions::default()).unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::UnsupportedCompression(6));
    }

    #[test]
    fn a_commit_marker_batch_is_recognised() {
        let marker = Record {
            key: Some(ControlRecordKey { version: 0, kind: ControlRecordType::Commit }.to_bytes()),
            value: Some(EndTransactionMarker { version: 0, coordinator_epoch: 3 }.to_bytes()),
            ..Record::default()
        };
        let mut batch = plain_batch(vec![marker]);
        batch.attributes.is_control = true;
        batch.attributes.is_transactional = true;
        let decoded = RecordBatch::decode(batch.to_bytes().unwrap(), &DecodeOptions::default()).unwrap();
        assert_eq!(decoded.control_type(), Some(ControlRecordType::Commit));
        let value = decoded.records[0].value.as_deref().unwrap();
        assert_eq!(EndTransactionMarker::parse(value).unwrap().coordinator_epoch, 3);
        assert_eq!(plain_batch(Vec::new()).control_type(), None);
    }

    #[test]
    fn record_layout_matches_the_spec_byte_for_byte() {
        let record = Record {
            attributes: 0,
            timestamp_delta: 5,
            offset_delta: 1,
            key: None,
            value: Some(Bytes::from_static(b"ab")),
            headers: vec![Header { key: "h".into(), value: None }],
        };
        let mut out = Vec::new();
        write_records(&[record], &mut out).unwrap();
        #[rustfmt::skip]
        let expected = [
            22,          // length 11 (zig-zag)
            0,           // attributes
            10,          // timestamp delta 5
            2,           // offset delta 1
            1,           // key length -1: null
            4, b'a', b'b', // value length 2
            2,           // 1 header
            2, b'h',     // header key "h"
            1,           // header value null
        ];
        assert_eq!(out, expected);
    }
}
