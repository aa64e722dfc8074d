//! [`BatchBuilder`]: a magic-2 batch written as its records arrive — each record is encoded
//! into the batch's one buffer when appended (after room left for the fixed header), so a
//! producer holds a batch as its wire bytes, not as records plus the buffers they point into.
//! [`seal`](BatchBuilder::seal) writes the header and CRC (compressing the records first when
//! the codec is not "none") and hands the buffer over without copying it; [`restamp`] gives a
//! sealed batch another producer id, epoch and base sequence (an idempotent producer's epoch
//! bump) without re-encoding its records.

use bytes::Bytes;

use super::batch::{
    write_record, BatchAttributes, Header, CRC_START, LOG_OVERHEAD, MAGIC, RECORD_BATCH_OVERHEAD,
};
use super::compression::{self, Compression};
use super::view::BatchHeader;
use super::RecordEncodeError;
use crate::protocol::error::EncodeError;

/// The producer fields of a batch header: who wrote it and at which sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerStamp {
    /// −1 for a producer that is neither idempotent nor transactional.
    pub producer_id: i64,
    /// −1 for a producer that is neither idempotent nor transactional.
    pub producer_epoch: i16,
    /// The sequence of the batch's first record; −1 without idempotence.
    pub base_sequence: i32,
    /// Header attribute bit 4: the batch belongs to a transaction.
    pub transactional: bool,
}

impl ProducerStamp {
    /// No producer id: a plain batch.
    pub const NONE: Self =
        Self { producer_id: -1, producer_epoch: -1, base_sequence: -1, transactional: false };
}

/// The most bytes a record with `key`, `value` and `headers` takes in a batch: its data and
/// the widest varints of its lengths, deltas and counts.
pub fn max_record_len(key: Option<&[u8]>, value: Option<&[u8]>, headers: &[Header]) -> usize {
    let data = |b: Option<&[u8]>| b.map_or(0, <[u8]>::len);
    40 + data(key)
        + data(value)
        + headers.iter().map(|h| 10 + h.key.len() + data(h.value.as_deref())).sum::<usize>()
}

/// A batch being filled; see the module documentation.
#[derive(Debug)]
pub struct BatchBuilder {
    /// The fixed header's room (zeros until sealed), then the encoded records.
    buf: Vec<u8>,
    count: i32,
    base_timestamp: i64,
    max_timestamp: i64,
    compression: Compression,
    /// The most bytes `buf` is let grow to by doubling; past it, it grows by what is needed.
    capacity_cap: usize,
}

impl BatchBuilder {
    /// An empty batch whose records' timestamps are deltas from `base_timestamp`. `capacity`
    /// is the buffer to start with; `capacity_cap` bounds how far doubling grows it (a batch
    /// that is expected to close at `batch_size` bytes wastes no more than that).
    pub fn new(base_timestamp: i64, compression: Compression, capacity: usize, capacity_cap: usize) -> Self {
        let mut buf = Vec::with_capacity(capacity.max(RECORD_BATCH_OVERHEAD));
        buf.resize(RECORD_BATCH_OVERHEAD, 0);
        Self {
            buf,
            count: 0,
            base_timestamp,
            max_timestamp: base_timestamp,
            compression,
            capacity_cap: capacity_cap.max(RECORD_BATCH_OVERHEAD),
        }
    }

    /// Records appended so far.
    pub fn record_count(&self) -> i32 {
        self.count
    }

    /// Bytes of the batch so far, uncompressed, header included.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether no record was appended.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Appends a record stamped `timestamp` (ms since the epoch); returns its offset delta.
    /// On an error (a length past `i32::MAX`, or the batch's record count) nothing is added.
    pub fn append(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header],
    ) -> Result<i32, RecordEncodeError> {
        let index = self.count;
        let next =
            index.checked_add(1).ok_or(EncodeError::TooLong { field: "records", len: index as usize })?;
        let capacity = self.capacity_after(max_record_len(key, value, headers));
        self.buf.reserve_exact(capacity - self.buf.len());
        let delta = timestamp.saturating_sub(self.base_timestamp);
        write_record(&mut self.buf, 0, delta, index, key, value, headers)?;
        self.max_timestamp = self.max_timestamp.max(timestamp);
        self.count = next;
        Ok(index)
    }

    /// Bytes the buffer holds room for (its allocation), header included.
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// The buffer's capacity once a record of `room` bytes ([`max_record_len`]) is appended:
    /// the same while it fits, else doubled up to the cap given to [`new`](Self::new), past
    /// the cap exactly what is needed. What appending costs a caller that accounts memory.
    pub fn capacity_after(&self, room: usize) -> usize {
        let (len, capacity) = (self.buf.len(), self.buf.capacity());
        if capacity - len >= room {
            return capacity;
        }
        (capacity * 2).min(self.capacity_cap).max(len + room)
    }

    /// The most bytes a batch with a `capacity`-byte buffer holds at once: the buffer, and
    /// while [`seal`](Self::seal) compresses it, the compressed copy's worst case too.
    pub fn peak_bytes(capacity: usize, compression: Compression) -> usize {
        match compression {
            Compression::None => capacity,
            codec => {
                let records = capacity.saturating_sub(RECORD_BATCH_OVERHEAD);
                capacity + RECORD_BATCH_OVERHEAD + compression::max_compressed_len(codec, records)
            }
        }
    }

    /// The whole batch: header, CRC, and the records (compressed with the codec given at
    /// [`new`](Self::new)).
    pub fn seal(self, stamp: ProducerStamp) -> Result<Bytes, RecordEncodeError> {
        let Self { mut buf, count, base_timestamp, max_timestamp, compression, .. } = self;
        if compression != Compression::None {
            let records = &buf[RECORD_BATCH_OVERHEAD..];
            let bound = compression::max_compressed_len(compression, records.len());
            let mut out = Vec::with_capacity(RECORD_BATCH_OVERHEAD + bound);
            out.resize(RECORD_BATCH_OVERHEAD, 0);
            compression::compress(compression, records, &mut out)?;
            // The sealed batch is held until it is acknowledged: as long as it is, no longer.
            out.shrink_to_fit();
            buf = out;
        }
        let header = BatchHeader {
            base_offset: 0,
            partition_leader_epoch: -1,
            attributes: BatchAttributes {
                compression,
                is_transactional: stamp.transactional,
                ..BatchAttributes::default()
            },
            last_offset_delta: count.saturating_sub(1).max(0),
            base_timestamp,
            max_timestamp,
            producer_id: stamp.producer_id,
            producer_epoch: stamp.producer_epoch,
            base_sequence: stamp.base_sequence,
        };
        write_header(&mut buf, &header, count)?;
        Ok(Bytes::from(buf))
    }
}

/// Writes `header`, `count`, the batch length and the CRC into the first
/// [`RECORD_BATCH_OVERHEAD`] bytes of `batch`, whose records (as they go on the wire) follow.
pub(crate) fn write_header(
    batch: &mut [u8],
    header: &BatchHeader,
    count: i32,
) -> Result<(), RecordEncodeError> {
    let batch_length = batch.len() - LOG_OVERHEAD;
    let batch_length = i32::try_from(batch_length)
        .map_err(|_| EncodeError::TooLong { field: "batch_length", len: batch_length })?;
    let h = &mut batch[..RECORD_BATCH_OVERHEAD];
    h[0..8].copy_from_slice(&header.base_offset.to_be_bytes());
    h[8..12].copy_from_slice(&batch_length.to_be_bytes());
    h[12..16].copy_from_slice(&header.partition_leader_epoch.to_be_bytes());
    h[16] = MAGIC as u8;
    h[21..23].copy_from_slice(&header.attributes.to_bits().to_be_bytes());
    h[23..27].copy_from_slice(&header.last_offset_delta.to_be_bytes());
    h[27..35].copy_from_slice(&header.base_timestamp.to_be_bytes());
    h[35..43].copy_from_slice(&header.max_timestamp.to_be_bytes());
    stamp_producer(batch, header.producer_id, header.producer_epoch, header.base_sequence);
    batch[57..61].copy_from_slice(&count.to_be_bytes());
    write_crc(batch);
    Ok(())
}

fn stamp_producer(batch: &mut [u8], producer_id: i64, producer_epoch: i16, base_sequence: i32) {
    batch[43..51].copy_from_slice(&producer_id.to_be_bytes());
    batch[51..53].copy_from_slice(&producer_epoch.to_be_bytes());
    batch[53..57].copy_from_slice(&base_sequence.to_be_bytes());
}

fn write_crc(batch: &mut [u8]) {
    let crc = crc32c::crc32c(&batch[CRC_START..]);
    batch[17..CRC_START].copy_from_slice(&crc.to_be_bytes());
}

/// A sealed batch (from [`BatchBuilder::seal`]) with another producer id, epoch, base
/// sequence and transactional bit, its CRC recomputed: a copy of `batch`, or `batch` itself
/// when the stamp is already the one it carries. `batch` must be at least a header long.
pub fn restamp(batch: Bytes, stamp: ProducerStamp) -> Bytes {
    if batch.len() < RECORD_BATCH_OVERHEAD || stamp_of(&batch) == stamp {
        return batch;
    }
    let mut out = batch.to_vec();
    stamp_producer(&mut out, stamp.producer_id, stamp.producer_epoch, stamp.base_sequence);
    let bits = i16::from_be_bytes([out[21], out[22]]);
    let bits = if stamp.transactional { bits | 0x10 } else { bits & !0x10 };
    out[21..23].copy_from_slice(&bits.to_be_bytes());
    write_crc(&mut out);
    Bytes::from(out)
}

/// The producer fields a sealed batch carries.
fn stamp_of(batch: &[u8]) -> ProducerStamp {
    let mut id = [0u8; 8];
    id.copy_from_slice(&batch[43..51]);
    let mut sequence = [0u8; 4];
    sequence.copy_from_slice(&batch[53..57]);
    ProducerStamp {
        producer_id: i64::from_be_bytes(id),
        producer_epoch: i16::from_be_bytes([batch[51], batch[52]]),
        base_sequence: i32::from_be_bytes(sequence),
        transactional: batch[22] & 0x10 != 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::records::{DecodeOptions, Record, RecordBatch};

    fn build(compression: Compression, stamp: ProducerStamp) -> (Bytes, Vec<Record>) {
        let mut builder = BatchBuilder::new(1_000, compression, 0, 1 << 20);
        let header = Header { key: "h".into(), value: Some(Bytes::from_static(b"hv")) };
        let mut expected = Vec::new();
        for i in 0..300i32 {
            let key = (i % 3 != 0).then(|| Bytes::from(format!("key-{i}")));
            let value = (i % 7 != 0).then(|| Bytes::from(vec![b'v'; (i as usize * 13) % 200]));
            let headers = if i % 5 == 0 { vec![header.clone()] } else { Vec::new() };
            let at = 1_000 + i64::from(i % 11);
            let delta = builder.append(at, key.as_deref(), value.as_deref(), &headers).unwrap();
            assert_eq!(delta, i);
            expected.push(Record {
                attributes: 0,
                timestamp_delta: i64::from(i % 11),
                offset_delta: i,
                key,
                value,
                headers,
            });
        }
        (builder.seal(stamp).unwrap(), expected)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

        /// A producer charges buffer memory by `capacity_after` before it appends: the buffer
        /// must end exactly there, and the batch sealed must fit in `peak_bytes`.
        #[test]
        fn capacity_after_is_the_capacity_an_append_leaves_and_peak_bytes_bounds_sealing(
            values in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..5000), 1..60),
            initial in 0usize..20_000,
            cap in 0usize..200_000,
            codec in proptest::sample::select(Compression::ALL.to_vec()),
        ) {
            proptest::prop_assume!(codec.is_available());
            let mut builder = BatchBuilder::new(0, codec, initial, cap);
            for value in &values {
                let expected = builder.capacity_after(max_record_len(Some(b"k"), Some(value), &[]));
                builder.append(0, Some(b"k"), Some(value), &[]).unwrap();
                proptest::prop_assert_eq!(builder.capacity(), expected);
                proptest::prop_assert!(builder.capacity() >= builder.len());
            }
            let peak = BatchBuilder::peak_bytes(builder.capacity(), codec);
            let capacity = builder.capacity();
            let sealed = builder.seal(ProducerStamp::NONE).unwrap();
            proptest::prop_assert!(capacity + sealed.len() <= peak || codec == Compression::None, "{} + {} > {}", capacity, sealed.len(), peak);
        }
    }

    #[test]
    fn a_built_batch_decodes_to_the_records_appended_every_codec() {
        let stamp =
            ProducerStamp { producer_id: 7, producer_epoch: 2, base_sequence: 40, transactional: true };
        for codec in Compression::ALL.into_iter().filter(|c| c.is_available()) {
            let (bytes, expected) = build(codec, stamp);
            let read = RecordBatch::decode(bytes, &DecodeOptions::default()).unwrap();
            assert_eq!(read.records, expected, "{codec:?}");
            assert_eq!((read.producer_id, read.producer_epoch, read.base_sequence), (7, 2, 40));
            assert!(read.attributes.is_transactional);
            assert_eq!(read.attributes.compression, codec);
            assert_eq!(
                (read.last_offset_delta, read.base_timestamp, read.max_timestamp),
                (299, 1_000, 1_010)
            );
        }
    }

    #[test]
    fn an_uncompressed_built_batch_is_byte_for_byte_the_record_batch_encoding() {
        let (bytes, records) = build(Compression::None, ProducerStamp::NONE);
        let batch = RecordBatch::new(0, 1_000, Compression::None, records);
        assert_eq!(bytes, batch.to_bytes().unwrap());
    }

    #[test]
    fn a_restamped_batch_carries_the_new_producer_fields_and_a_valid_crc() {
        let (bytes, expected) = build(Compression::None, ProducerStamp::NONE);
        let stamp =
            ProducerStamp { producer_id: 9, producer_epoch: 1, base_sequence: 0, transactional: false };
        let again = restamp(bytes.clone(), stamp);
        let read = RecordBatch::decode(again.clone(), &DecodeOptions::default()).unwrap();
        assert_eq!((read.producer_id, read.producer_epoch, read.base_sequence), (9, 1, 0));
        assert_eq!(read.records, expected);
        // The same stamp again: the same buffer, not a copy.
        assert_eq!(restamp(again.clone(), stamp).as_ptr(), again.as_ptr());
    }

    #[test]
    fn an_empty_builder_seals_to_a_batch_of_no_records() {
        let bytes = BatchBuilder::new(5, Compression::None, 0, 0).seal(ProducerStamp::NONE).unwrap();
        let read = RecordBatch::decode(bytes, &DecodeOptions::default()).unwrap();
        assert!(read.records.is_empty());
        assert_eq!(read.last_offset_delta, 0);
    }
}
