//! A borrowed view of a magic-2 batch: the header decoded, the CRC checked once, and the records
//! read lazily as [`RecordView`]s whose key, value and headers are slices of the batch's bytes
//! (uncompressed) or of the batch's one decompressed buffer — no allocation per record, no
//! reference count per key or value.
//!
//! [`RecordBatch`](super::RecordBatch) (the owning form) is built from the same reader, so the
//! two never disagree about what a batch holds or which input is malformed.
//!
//! ```
//! use bytes::Bytes;
//! use kafka_wire::protocol::records::{BatchView, Compression, DecodeOptions, Record, RecordBatch};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let records = vec![Record::new(Some(Bytes::from("k")), Some(Bytes::from("v")))];
//! let wire = RecordBatch::new(7, 1_750_000_000_000, Compression::Lz4, records).to_bytes()?;
//!
//! let view = BatchView::parse(&wire, &DecodeOptions::default())?;
//! for record in view.records() {
//!     let record = record?;
//!     assert_eq!(view.header.offset_of(&record), 7);
//!     assert_eq!((record.key, record.value), (Some(&b"k"[..]), Some(&b"v"[..])));
//! }
//! # Ok(())
//! # }
//! ```

use std::iter::FusedIterator;

use bytes::Bytes;

use super::batch::{
    BatchAttributes, Header, Record, TimestampType, CRC_START, LOG_OVERHEAD, MAGIC, RECORD_BATCH_OVERHEAD,
};
use super::compression::Compression;
use super::control::{ControlRecordKey, ControlRecordType};
use super::{Budget, Cursor, DecodeOptions};
use crate::protocol::decoder::DecodeResult;
use crate::protocol::error::{DecodeError, DecodeErrorKind};

/// The smallest possible record: length, attributes, timestamp delta, offset delta, key
/// length, value length and header count, one byte each.
const MIN_RECORD_LEN: usize = 7;
/// The smallest possible header: key length and value length.
const MIN_HEADER_LEN: usize = 2;

/// A magic-2 batch's header fields (everything before the records).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    /// The offset of the first record; each record's offset is this plus its offset delta.
    pub base_offset: i64,
    /// Stamped by the leader; −1 from a producer.
    pub partition_leader_epoch: i32,
    /// Compression, timestamp type, transactional and control flags.
    pub attributes: BatchAttributes,
    /// Offset of the last record minus `base_offset` (compaction can leave gaps).
    pub last_offset_delta: i32,
    /// Timestamp of the first record (or the delete horizon, see [`BatchAttributes`]).
    pub base_timestamp: i64,
    /// The largest timestamp in the batch (ms since the epoch); with log-append time, every
    /// record's timestamp.
    pub max_timestamp: i64,
    /// −1 when the producer is neither idempotent nor transactional.
    pub producer_id: i64,
    /// The producer's epoch, or −1 for a non-idempotent producer.
    pub producer_epoch: i16,
    /// −1 when the producer is neither idempotent nor transactional.
    pub base_sequence: i32,
}

impl BatchHeader {
    /// The offset of the last record, as the header claims it.
    pub fn last_offset(&self) -> i64 {
        self.base_offset.saturating_add(i64::from(self.last_offset_delta))
    }

    /// The offset to fetch next after this batch.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().saturating_add(1)
    }

    /// A record's absolute offset.
    pub fn offset_of(&self, record: &RecordView<'_>) -> i64 {
        self.base_offset.saturating_add(i64::from(record.offset_delta))
    }

    /// A record's timestamp (ms since the epoch): the batch's `max_timestamp` under log-append
    /// time, else the base timestamp plus the record's delta.
    pub fn timestamp_of(&self, record: &RecordView<'_>) -> i64 {
        match self.attributes.timestamp_type {
            TimestampType::LogAppendTime => self.max_timestamp,
            TimestampType::CreateTime => self.base_timestamp.saturating_add(record.timestamp_delta),
        }
    }
}

/// A batch's header with its record bytes still as received (compressed or not).
#[derive(Debug)]
pub(crate) struct RawBatch<'a> {
    pub(crate) header: BatchHeader,
    /// `record_count`, checked non-negative (not yet against the bytes).
    pub(crate) count: usize,
    /// Absolute offset of `body[0]`, for errors.
    pub(crate) records_at: usize,
    pub(crate) body: &'a [u8],
}

impl<'a> RawBatch<'a> {
    /// Reads the header of a buffer holding exactly one batch (its length field already checked
    /// against the buffer) and checks the CRC. `base` is the buffer's absolute offset.
    pub(crate) fn parse(bytes: &'a [u8], base: usize, opts: &DecodeOptions) -> DecodeResult<Self> {
        let mut c = Cursor::new(bytes, base);
        let base_offset = c.i64("base_offset")?;
        c.i32("batch_length")?;
        let partition_leader_epoch = c.i32("partition_leader_epoch")?;
        let magic = c.i8("magic")?;
        if magic != MAGIC {
            return Err(c.error(
                DecodeErrorKind::Invalid(format!("record batch magic {magic}, expected 2")),
                "magic",
            ));
        }
        let stored = c.u32("crc")?;
        if opts.verify_crc {
            let computed = crc32c::crc32c(bytes.get(CRC_START..).unwrap_or_default());
            if computed != stored {
                return Err(c.error(DecodeErrorKind::CrcMismatch { base_offset, stored, computed }, "crc"));
            }
        }
        let bits = c.i16("attributes")?;
        let attributes = BatchAttributes::from_bits(bits)
            .map_err(|id| c.error(DecodeErrorKind::UnsupportedCompression(id), "attributes"))?;
        let header = BatchHeader {
            base_offset,
            partition_leader_epoch,
            attributes,
            last_offset_delta: c.i32("last_offset_delta")?,
            base_timestamp: c.i64("base_timestamp")?,
            max_timestamp: c.i64("max_timestamp")?,
            producer_id: c.i64("producer_id")?,
            producer_epoch: c.i16("producer_epoch")?,
            base_sequence: c.i32("base_sequence")?,
        };
        let count_at = c.pos();
        let record_count = c.i32("record_count")?;
        let count = usize::try_from(record_count).map_err(|_| {
            c.error_at(DecodeErrorKind::NegativeLength(i64::from(record_count)), "record_count", count_at)
        })?;
        let records_at = base + c.pos();
        let body = c.take_slice(c.remaining(), "records")?;
        Ok(Self { header, count, records_at, body })
    }
}

/// Checks `count` records could fit in `body` (each takes at least 7 bytes) before anything is
/// sized from the count: a 61-byte batch claiming 2^31 records fails here at once.
pub(crate) fn check_count(body: &[u8], count: usize, records_at: usize) -> DecodeResult<()> {
    if count > body.len() / MIN_RECORD_LEN {
        return Err(DecodeError::new(
            DecodeErrorKind::LengthExceedsInput { claimed: count as u64, available: body.len() },
            "record_count",
            records_at,
        ));
    }
    Ok(())
}

/// The record bytes a view reads from.
#[derive(Debug)]
enum Body<'a> {
    /// An uncompressed batch: the input itself.
    Borrowed(&'a [u8]),
    /// A compressed batch: its one decompressed buffer (a `Bytes`, so an owning caller can
    /// slice it without copying).
    Decompressed(Bytes),
}

/// A decoded batch header over its records, read on demand by [`BatchView::records`].
///
/// Parsing checks the header, the CRC (once, over the whole batch) and decompresses (once);
/// the records are checked as they are read, and a malformed one ends the iteration with its
/// error. For an uncompressed batch nothing is allocated at all; for a compressed one, only
/// the decompressed buffer.
#[derive(Debug)]
pub struct BatchView<'a> {
    /// The header fields.
    pub header: BatchHeader,
    body: Body<'a>,
    count: usize,
    records_at: usize,
}

impl<'a> BatchView<'a> {
    /// Views a buffer holding exactly one batch. Errors as
    /// [`RecordBatch::decode`](super::RecordBatch::decode) for the header: a cut-short batch is incomplete, bytes
    /// after it are trailing, a bad CRC or codec is an error; the record count is checked
    /// against the record bytes here, the records themselves as they are read.
    pub fn parse(bytes: &'a [u8], opts: &DecodeOptions) -> DecodeResult<Self> {
        let total = exact_size(bytes)?;
        if total < bytes.len() {
            return Err(DecodeError::new(
                DecodeErrorKind::TrailingBytes(bytes.len() - total),
                "record_batch",
                total,
            ));
        }
        Self::parse_entry(bytes, 0, opts, &mut Budget::new(opts))
    }

    /// Views one batch whose length was checked against `bytes` (a record set's [`Entry`]);
    /// `base` is its absolute offset, for errors; decompression is charged to `budget`. Public
    /// for lazy record-set readers (the client's fetch).
    ///
    /// [`Entry`]: super::Entry
    pub fn parse_entry(
        bytes: &'a [u8],
        base: usize,
        opts: &DecodeOptions,
        budget: &mut Budget,
    ) -> DecodeResult<Self> {
        let raw = RawBatch::parse(bytes, base, opts)?;
        let body = match raw.header.attributes.compression {
            Compression::None => Body::Borrowed(raw.body),
            codec => Body::Decompressed(Bytes::from(budget.decompress(
                codec,
                raw.body,
                "records",
                raw.records_at,
            )?)),
        };
        let view = Self { header: raw.header, body, count: raw.count, records_at: raw.records_at };
        check_count(view.body(), view.count, view.records_at)?;
        Ok(view)
    }

    fn body(&self) -> &[u8] {
        match &self.body {
            Body::Borrowed(b) => b,
            Body::Decompressed(v) => v,
        }
    }

    /// The buffer the records' slices point into, for [`RecordView::to_record_in`]: `input`
    /// itself for an uncompressed batch (the caller's contract: the view was parsed from a
    /// slice of `input`), the decompressed buffer otherwise. Public so a reader can keep
    /// records without copying their bytes (the client's fetch).
    pub fn records_owner(&self, input: &Bytes) -> Bytes {
        match &self.body {
            Body::Borrowed(_) => input.clone(),
            Body::Decompressed(b) => b.clone(),
        }
    }

    /// The records, in batch order; each item borrows from this view.
    pub fn records(&self) -> Records<'_> {
        Records::new(self.body(), self.records_at, self.count)
    }

    /// The record count the header claims (checked only to fit the bytes; reading the records
    /// checks it exactly).
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the header claims no records (compaction can empty a batch).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// For a control batch, the type of its marker (read from the first record's key); `None`
    /// for a data batch or a control batch without a readable key.
    pub fn control_type(&self) -> Option<ControlRecordType> {
        if !self.header.attributes.is_control {
            return None;
        }
        let first = self.records().next()?.ok()?;
        ControlRecordKey::parse(first.key?).ok().map(|k| k.kind)
    }
}

/// The size of the one batch `bytes` starts with, checked to be at least a header and at most
/// `bytes.len()` (a shorter buffer is incomplete).
fn exact_size(bytes: &[u8]) -> DecodeResult<usize> {
    let Some(prefix) = bytes.get(..LOG_OVERHEAD) else {
        let field = if bytes.len() < 8 { "base_offset" } else { "batch_length" };
        return Err(DecodeError::new(
            DecodeErrorKind::Incomplete { needed: LOG_OVERHEAD - bytes.len() },
            field,
            bytes.len(),
        ));
    };
    let batch_length = i32::from_be_bytes([prefix[8], prefix[9], prefix[10], prefix[11]]);
    let min = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD;
    let total = match usize::try_from(batch_length) {
        Ok(n) if n >= min => LOG_OVERHEAD + n,
        _ => {
            return Err(DecodeError::new(
                DecodeErrorKind::Invalid(format!(
                    "record batch length {batch_length} is below the {min}-byte minimum"
                )),
                "batch_length",
                8,
            ))
        }
    };
    if total > bytes.len() {
        return Err(DecodeError::new(
            DecodeErrorKind::Incomplete { needed: total - bytes.len() },
            "record_batch",
            bytes.len(),
        ));
    }
    Ok(total)
}

/// The records of a batch, read one at a time. After `count` records, bytes left over are one
/// last error ([`DecodeErrorKind::TrailingBytes`]); after any error the iterator ends.
#[derive(Debug, Clone)]
pub struct Records<'a> {
    c: Cursor<'a>,
    left: usize,
    failed: bool,
}

impl<'a> Records<'a> {
    /// `count` records filling `body`, whose first byte is at absolute offset `base`.
    pub(crate) fn new(body: &'a [u8], base: usize, count: usize) -> Self {
        Self { c: Cursor::new(body, base), left: count, failed: false }
    }

    fn fail(&mut self, e: DecodeError) -> DecodeResult<RecordView<'a>> {
        self.failed = true;
        Err(e)
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = DecodeResult<RecordView<'a>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if self.left == 0 {
            if self.c.remaining() != 0 {
                let e = self.c.error(DecodeErrorKind::TrailingBytes(self.c.remaining()), "records");
                return Some(self.fail(e));
            }
            return None;
        }
        self.left -= 1;
        match read_record(&mut self.c) {
            Ok(r) => Some(Ok(r)),
            Err(e) => Some(self.fail(e)),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.failed {
            (0, Some(0))
        } else {
            // One more item than records when the trailing-bytes error comes.
            (0, Some(self.left.saturating_add(1)))
        }
    }
}

impl FusedIterator for Records<'_> {}

/// One record, borrowed from its batch. Offsets and timestamps are deltas from the batch's
/// base values ([`BatchHeader::offset_of`], [`BatchHeader::timestamp_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordView<'a> {
    /// Unused by Kafka so far.
    pub attributes: i8,
    /// Milliseconds after the batch's `base_timestamp`.
    pub timestamp_delta: i64,
    /// Added to the batch's `base_offset` to give the record's offset.
    pub offset_delta: i32,
    /// `None` is a null key (not the same as empty).
    pub key: Option<&'a [u8]>,
    /// `None` is a null value: a tombstone on a compacted topic.
    pub value: Option<&'a [u8]>,
    /// The record's headers, already checked (lengths and UTF-8 keys).
    pub headers: Headers<'a>,
}

impl RecordView<'_> {
    /// The record as an owning [`Record`], copying its bytes.
    pub fn to_record(self) -> Record {
        let copy = |b: Option<&[u8]>| b.map(Bytes::copy_from_slice);
        self.owned(copy)
    }

    /// The record as an owning [`Record`] whose bytes are slices of `owner`, the buffer this
    /// view was read from (no copy): [`BatchView::records_owner`] of the view's batch. Bytes
    /// that are not inside `owner` (another buffer was passed) are copied, so the record is
    /// the same as [`to_record`](Self::to_record)'s either way.
    pub fn to_record_in(self, owner: &Bytes) -> Record {
        let within = owner.as_ptr_range();
        self.owned(|b| {
            b.map(|b| {
                let range = b.as_ptr_range();
                if within.start <= range.start && range.end <= within.end {
                    owner.slice_ref(b)
                } else {
                    Bytes::copy_from_slice(b)
                }
            })
        })
    }

    fn owned(self, bytes: impl Fn(Option<&[u8]>) -> Option<Bytes>) -> Record {
        Record {
            attributes: self.attributes,
            timestamp_delta: self.timestamp_delta,
            offset_delta: self.offset_delta,
            key: bytes(self.key),
            value: bytes(self.value),
            headers: self
                .headers
                .iter()
                .map(|h| Header { key: h.key.to_owned(), value: bytes(h.value) })
                .collect(),
        }
    }
}

/// A record's headers, checked when the record was read; iterate for [`HeaderView`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Headers<'a> {
    count: usize,
    data: &'a [u8],
}

impl<'a> Headers<'a> {
    /// How many headers the record has.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the record has no headers.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The headers in the order they were written; keys may repeat.
    pub fn iter(&self) -> HeaderIter<'a> {
        HeaderIter { c: Cursor::new(self.data, 0), left: self.count }
    }
}

impl<'a> IntoIterator for Headers<'a> {
    type Item = HeaderView<'a>;
    type IntoIter = HeaderIter<'a>;

    fn into_iter(self) -> HeaderIter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &Headers<'a> {
    type Item = HeaderView<'a>;
    type IntoIter = HeaderIter<'a>;

    fn into_iter(self) -> HeaderIter<'a> {
        self.iter()
    }
}

/// One header, borrowed from its batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderView<'a> {
    /// The header key (never null on the wire; UTF-8 checked).
    pub key: &'a str,
    /// The header value; `None` is null (length −1).
    pub value: Option<&'a [u8]>,
}

/// Iterator over [`Headers`].
#[derive(Debug, Clone)]
pub struct HeaderIter<'a> {
    c: Cursor<'a>,
    left: usize,
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = HeaderView<'a>;

    fn next(&mut self) -> Option<HeaderView<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // These bytes were checked by `read_headers`; a failure here cannot happen, and
        // would end the iteration rather than panic.
        let header = read_header(&mut self.c);
        if header.is_err() {
            self.left = 0;
        }
        header.ok()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left))
    }
}

impl FusedIterator for HeaderIter<'_> {}

#[inline]
pub(super) fn read_record<'a>(c: &mut Cursor<'a>) -> DecodeResult<RecordView<'a>> {
    let len = c.varint("record.length")?;
    let len = usize::try_from(len)
        .map_err(|_| c.error(DecodeErrorKind::NegativeLength(i64::from(len)), "record.length"))?;
    let outer_end = c.limit(len, "record.length")?;
    let attributes = c.i8("record.attributes")?;
    let timestamp_delta = c.varlong("record.timestamp_delta")?;
    let offset_delta = c.varint("record.offset_delta")?;
    let key = c.varint_slice("record.key")?;
    let value = c.varint_slice("record.value")?;
    let header_count = c.varint("record.headers")?;
    let headers = match header_count {
        0 => Headers::default(),
        n => read_headers(c, n)?,
    };
    c.unlimit(outer_end, "record")?;
    Ok(RecordView { attributes, timestamp_delta, offset_delta, key, value, headers })
}

/// Checks `count` headers at the cursor and returns them as one slice.
fn read_headers<'a>(c: &mut Cursor<'a>, count: i32) -> DecodeResult<Headers<'a>> {
    let count = usize::try_from(count)
        .map_err(|_| c.error(DecodeErrorKind::NegativeLength(i64::from(count)), "record.headers"))?;
    if count > c.remaining() / MIN_HEADER_LEN {
        return Err(c.error(
            DecodeErrorKind::LengthExceedsInput { claimed: count as u64, available: c.remaining() },
            "record.headers",
        ));
    }
    let start = c.pos();
    for _ in 0..count {
        read_header(c)?;
    }
    Ok(Headers { count, data: c.slice_from(start) })
}

fn read_header<'a>(c: &mut Cursor<'a>) -> DecodeResult<HeaderView<'a>> {
    let key_len = c.varint("record.headers.key")?;
    let key_len = usize::try_from(key_len)
        .map_err(|_| c.error(DecodeErrorKind::NegativeLength(i64::from(key_len)), "record.headers.key"))?;
    let at = c.pos();
    let raw = c.take_slice(key_len, "record.headers.key")?;
    let key = std::str::from_utf8(raw)
        .map_err(|_| c.error_at(DecodeErrorKind::InvalidUtf8, "record.headers.key", at))?;
    let value = c.varint_slice("record.headers.value")?;
    Ok(HeaderView { key, value })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::records::batch::tests::{batch, empty_batch_claiming};
    use crate::protocol::records::RecordBatch;

    /// Everything a view shows, as owning values, to compare with the owning decoder.
    fn through_view(bytes: &[u8]) -> DecodeResult<RecordBatch> {
        let view = BatchView::parse(bytes, &DecodeOptions::default())?;
        let records = view.records().map(|r| r.map(RecordView::to_record)).collect::<DecodeResult<_>>()?;
        let h = view.header;
        Ok(RecordBatch {
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

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn the_view_shows_what_the_owning_decoder_reads_with_every_codec(batch in batch()) {
            let encoded = batch.to_bytes().unwrap();
            prop_assert_eq!(through_view(&encoded).unwrap(), batch);
        }

        #[test]
        fn the_view_and_the_owning_decoder_fail_on_the_same_corrupted_batches(
            batch in batch(),
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
        ) {
            let mut encoded = batch.to_bytes().unwrap().to_vec();
            let at = at.index(encoded.len());
            encoded[at] = byte;
            let opts = DecodeOptions { verify_crc: false, ..DecodeOptions::default() };
            let owning = RecordBatch::decode(Bytes::from(encoded.clone()), &opts);
            let viewed = BatchView::parse(&encoded, &opts).and_then(|v| {
                v.records().try_for_each(|r| r.map(drop))?;
                Ok(v.header)
            });
            prop_assert_eq!(owning.is_ok(), viewed.is_ok(), "owning {:?} view {:?}", owning, viewed);
        }

        #[test]
        fn arbitrary_bytes_never_panic_the_view(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let opts = DecodeOptions { verify_crc: false, ..DecodeOptions::default() };
            if let Ok(view) = BatchView::parse(&data, &opts) {
                for r in view.records() {
                    let Ok(r) = r else { break };
                    let _ = r.headers.iter().count();
                }
            }
        }
    }

    #[test]
    fn uncompressed_records_are_slices_of_the_input_and_nothing_is_copied() {
        let records = (0..3)
            .map(|i| Record {
                offset_delta: i,
                headers: vec![Header { key: "h".into(), value: Some(Bytes::from_static(b"hv")) }],
                ..Record::new(Some(Bytes::from(format!("k{i}"))), Some(Bytes::from(format!("v{i}"))))
            })
            .collect();
        let wire = RecordBatch::new(10, 0, Compression::None, records).to_bytes().unwrap();
        let input = wire.as_ptr_range();
        let view = BatchView::parse(&wire, &DecodeOptions::default()).unwrap();
        let mut offsets = Vec::new();
        for r in view.records() {
            let r = r.unwrap();
            offsets.push(view.header.offset_of(&r));
            for h in &r.headers {
                assert_eq!(h.key, "h");
                assert!(input.contains(&h.value.unwrap().as_ptr()));
            }
            for b in [r.key, r.value].into_iter().flatten() {
                assert!(input.contains(&b.as_ptr()), "copied instead of borrowed");
            }
        }
        assert_eq!(offsets, [10, 11, 12]);
    }

    #[test]
    fn records_taken_in_their_own_buffer_are_slices_of_it_and_in_another_are_copies() {
        let record = Record::new(Some(Bytes::from_static(b"key")), Some(Bytes::from_static(b"value")));
        let wire = RecordBatch::new(0, 0, Compression::None, vec![record.clone()]).to_bytes().unwrap();
        let view = BatchView::parse(&wire, &DecodeOptions::default()).unwrap();
        let r = view.records().next().unwrap().unwrap();
        let sliced = r.to_record_in(&wire);
        assert!(
            wire.as_ptr_range().contains(&sliced.value.as_ref().unwrap().as_ptr()),
            "a slice of the input"
        );
        let elsewhere = Bytes::from_static(b"some other buffer");
        let copied = r.to_record_in(&elsewhere);
        assert!(!elsewhere.as_ptr_range().contains(&copied.value.as_ref().unwrap().as_ptr()));
        assert_eq!((sliced.key.clone(), sliced.value.clone()), (record.key.clone(), record.value.clone()));
        assert_eq!((copied.key, copied.value), (record.key, record.value));
    }

    #[test]
    fn a_view_claiming_2_pow_31_records_fails_before_reading_any() {
        let encoded = empty_batch_claiming(0x7fff_ffff);
        let err = BatchView::parse(&encoded, &DecodeOptions::default()).unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::LengthExceedsInput { claimed: 0x7fff_ffff, available: 0 });
        assert_eq!((err.field, err.offset), ("record_count", 61));
    }

    #[test]
    fn a_view_of_a_batch_cut_short_is_incomplete_at_every_cut() {
        let wire = RecordBatch::new(0, 0, Compression::None, vec![Record::new(None, Some(Bytes::from("v")))])
            .to_bytes()
            .unwrap();
        for cut in 0..wire.len() {
            let err = BatchView::parse(&wire[..cut], &DecodeOptions::default()).unwrap_err();
            assert!(err.is_incomplete(), "cut at {cut}: {err}");
        }
    }

    #[test]
    fn bytes_after_the_batch_are_trailing_for_the_view() {
        let mut wire = RecordBatch::new(0, 0, Compression::None, Vec::new()).to_bytes().unwrap().to_vec();
        wire.push(0);
        let err = BatchView::parse(&wire, &DecodeOptions::default()).unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::TrailingBytes(1));
    }

    #[test]
    fn a_record_left_over_after_the_count_ends_the_iteration_with_an_error() {
        let records =
            vec![Record::new(None, Some(Bytes::from("a"))), Record::new(None, Some(Bytes::from("b")))];
        let mut wire = RecordBatch::new(0, 0, Compression::None, records).to_bytes().unwrap().to_vec();
        wire[57..61].copy_from_slice(&1i32.to_be_bytes());
        let crc = crc32c::crc32c(&wire[CRC_START..]);
        wire[17..21].copy_from_slice(&crc.to_be_bytes());
        let view = BatchView::parse(&wire, &DecodeOptions::default()).unwrap();
        let items: Vec<_> = view.records().collect();
        assert_eq!(items.len(), 2);
        assert!(items[0].is_ok());
        assert!(matches!(items[1], Err(DecodeError { kind: DecodeErrorKind::TrailingBytes(_), .. })));
    }

    #[test]
    fn a_header_key_that_is_not_utf8_fails_its_record() {
        let record =
            Record { headers: vec![Header { key: "é".into(), value: None }], ..Record::new(None, None) };
        let mut wire = RecordBatch::new(0, 0, Compression::None, vec![record]).to_bytes().unwrap().to_vec();
        let at = wire.len() - 3; // the first byte of "é", before the null value's length
        wire[at] = 0xff;
        let crc = crc32c::crc32c(&wire[CRC_START..]);
        wire[17..21].copy_from_slice(&crc.to_be_bytes());
        let view = BatchView::parse(&wire, &DecodeOptions::default()).unwrap();
        let err = view.records().next().unwrap().unwrap_err();
        assert_eq!((err.kind, err.field), (DecodeErrorKind::InvalidUtf8, "record.headers.key"));
    }

    #[test]
    fn log_append_time_gives_every_record_the_batch_max_timestamp() {
        let records = vec![Record { timestamp_delta: 5, ..Record::new(None, None) }];
        let mut batch = RecordBatch::new(0, 1_000, Compression::None, records);
        batch.attributes.timestamp_type = TimestampType::LogAppendTime;
        batch.max_timestamp = 9_999;
        let wire = batch.to_bytes().unwrap();
        let view = BatchView::parse(&wire, &DecodeOptions::default()).unwrap();
        let r = view.records().next().unwrap().unwrap();
        assert_eq!(view.header.timestamp_of(&r), 9_999);
    }
}
