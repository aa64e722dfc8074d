//! Record data: the `records` field of Fetch responses and Produce requests.
//!
//! - [`RecordBatch`]: magic 2, decode and encode, CRC-32C checked on read.
//! - [`BatchBuilder`]: a magic-2 batch encoded record by record as it is filled (the producer's).
//! - [`ControlRecordKey`], [`EndTransactionMarker`]: control records (transaction markers) inside
//!   control batches.
//! - [`legacy`]: MessageSet magic 0/1, including compressed wrapper messages.
//! - [`compression`]: gzip, snappy (raw and xerial), lz4 (frame), zstd — each a cargo feature.
//! - [`StreamedBatch`]: a compressed batch read record by record as it decompresses
//!   ([`Decompressor`]), holding a chunk of it at a time: for readers with a memory budget.
//! - [`RecordSet`]: a Fetch response's `records` field as a whole, whose last batch may be cut
//!   short.
//!
//! The message codecs keep `records` as raw [`bytes::Bytes`]; decoding them is a separate step,
//! so a fetch response is read without touching its payload and a consumer decodes only the
//! partitions it wants. Keys and values of uncompressed records are zero-copy slices of the
//! input; those of compressed records are slices of one decompressed buffer per batch.
//!
//! Hostile input: record and header counts are checked against the bytes left before any
//! allocation, decompression is capped ([`DecodeOptions::max_decompressed_size`]), and nested
//! legacy wrappers are capped ([`DecodeOptions::max_legacy_nesting`]).
//!
//! A batch round trip, and the same bytes read as a Fetch response's `records` field whose
//! last batch the broker cut short (it stops at `max_bytes`, not at a batch boundary):
//!
//! ```
//! use bytes::Bytes;
//! use kafka_wire::protocol::records::{Compression, DecodeOptions, Record, RecordBatch, RecordSet};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let records = (0..3)
//!     .map(|i| Record {
//!         offset_delta: i,
//!         ..Record::new(Some(Bytes::from(format!("key-{i}"))), Some(Bytes::from("value")))
//!     })
//!     .collect();
//! let batch = RecordBatch::new(100, 1_750_000_000_000, Compression::None, records);
//! let wire = batch.to_bytes()?;
//!
//! let read = RecordBatch::decode(wire.clone(), &DecodeOptions::default())?;
//! assert_eq!(read, batch);
//! assert_eq!(read.next_offset(), 103);
//!
//! // One whole batch and the first 20 bytes of the next one.
//! let mut fetched = wire.to_vec();
//! fetched.extend_from_slice(&wire[..20]);
//! let set = RecordSet::decode(&Bytes::from(fetched), &DecodeOptions::default())?;
//! assert_eq!(set.batches.len(), 1);
//! assert_eq!(set.truncated_tail_bytes, 20);
//! assert_eq!(set.next_offset(), Some(103));
//! # Ok(())
//! # }
//! ```

use std::fmt;

use super::error::{DecodeError, DecodeErrorKind, EncodeError};

pub(crate) mod batch;
pub(crate) mod builder;
pub mod compression;
pub(crate) mod control;
pub(crate) mod decompressor;
pub mod legacy;
pub(crate) mod set;
pub(crate) mod streamed;
pub(crate) mod view;

pub use batch::{BatchAttributes, Header, Record, RecordBatch, TimestampType};
pub use builder::{max_record_len, restamp, BatchBuilder, ProducerStamp};
pub use compression::Compression;
pub use control::{ControlRecordKey, ControlRecordType, EndTransactionMarker};
pub use decompressor::Decompressor;
pub use legacy::{LegacyBatch, LegacyMessage};
pub use set::{Entries, Entry, RecordSet, RecordSetBatch};
pub use streamed::StreamedBatch;
pub use view::{BatchHeader, BatchView, HeaderIter, HeaderView, Headers, RecordView, Records};

/// Limits applied while decoding record data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeOptions {
    /// The most bytes one decode call (one batch, one record set) may decompress in total,
    /// across every compressed batch or wrapper it meets. Past it:
    /// [`DecodeErrorKind::DecompressedTooLarge`]. Default 64 MiB.
    pub max_decompressed_size: usize,
    /// How deep compressed legacy wrappers may nest; Kafka writes one level (a wrapper holding
    /// plain messages), which is depth 1. Deeper: [`DecodeErrorKind::TooDeep`]. Default 1.
    pub max_legacy_nesting: usize,
    /// Check each batch's (or legacy message's) stored checksum. Default true; turning it off
    /// is for tools that want to show a corrupt batch anyway.
    pub verify_crc: bool,
}

impl DecodeOptions {
    /// 64 MiB: [`DecodeOptions::max_decompressed_size`]'s default.
    pub const DEFAULT_MAX_DECOMPRESSED_SIZE: usize = 64 * 1024 * 1024;
}

impl Default for DecodeOptions {
    fn default() -> Self {
        Self {
            max_decompressed_size: Self::DEFAULT_MAX_DECOMPRESSED_SIZE,
            max_legacy_nesting: 1,
            verify_crc: true,
        }
    }
}

/// Why record data could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordEncodeError {
    /// A length does not fit its prefix (e.g. a batch over 2 GiB).
    Encode(EncodeError),
    /// The codec was compiled out of this build (its cargo feature is off).
    UnsupportedCompression(Compression),
    /// The compressor reported an error.
    Compression(String),
    /// The value cannot be written in this format (e.g. zstd in a legacy message).
    Invalid(String),
}

impl From<EncodeError> for RecordEncodeError {
    fn from(e: EncodeError) -> Self {
        Self::Encode(e)
    }
}

impl fmt::Display for RecordEncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Encode(e) => e.fmt(f),
            Self::UnsupportedCompression(c) => write!(f, "compression codec {c} is not compiled in"),
            Self::Compression(e) => write!(f, "compression failed: {e}"),
            Self::Invalid(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for RecordEncodeError {}

/// What is left of [`DecodeOptions::max_decompressed_size`] during one decode call: public for
/// readers that walk a record set entry by entry ([`Entries`]) and share one allowance across it.
#[derive(Debug)]
pub struct Budget {
    left: usize,
    max: usize,
}

impl Budget {
    /// The whole of `opts.max_decompressed_size`, nothing spent yet.
    pub fn new(opts: &DecodeOptions) -> Self {
        Self { left: opts.max_decompressed_size, max: opts.max_decompressed_size }
    }

    /// Bytes decompressed so far under this budget.
    pub fn spent(&self) -> usize {
        self.max - self.left
    }

    /// Bytes this budget still allows.
    pub fn left(&self) -> usize {
        self.left
    }

    /// A budget of `at_most` of what this one has left (for one batch held to a tighter
    /// bound); what it spends is charged back with [`Budget::absorb`].
    #[must_use]
    pub fn part(&self, at_most: usize) -> Budget {
        let left = self.left.min(at_most);
        Budget { left, max: left }
    }

    /// Charges what `part`, made by [`Budget::part`], spent.
    pub fn absorb(&mut self, part: &Budget) {
        self.left = self.left.saturating_sub(part.spent());
    }

    /// Decompresses `input`, charging its output to the budget; errors name the configured cap.
    pub(crate) fn decompress(
        &mut self,
        codec: Compression,
        input: &[u8],
        field: &'static str,
        offset: usize,
    ) -> Result<Vec<u8>, DecodeError> {
        match compression::decompress(codec, input, self.left) {
            Ok(out) => {
                self.left -= out.len();
                Ok(out)
            }
            Err(DecodeErrorKind::DecompressedTooLarge { .. }) => {
                Err(DecodeError::new(DecodeErrorKind::DecompressedTooLarge { max: self.max }, field, offset))
            }
            Err(kind) => Err(DecodeError::new(kind, field, offset)),
        }
    }
}

/// A read cursor over a byte slice, for the record formats' hot loops: the same contract as
/// [`crate::protocol::Decoder`] (every read checked, errors name the field and the absolute
/// offset) with inlined varints; keys and values come out as borrowed slices of the input
/// (an owning caller turns them into [`bytes::Bytes`] with `Bytes::slice_ref` on the buffer it
/// holds). The slice is a delimited region (a batch, a record), so running past its end is
/// malformed input ([`DecodeErrorKind::LengthExceedsInput`]), not "incomplete".
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    /// Reads stop here (a record's end, not necessarily `data.len()`).
    end: usize,
    pos: usize,
    /// Absolute offset of `data[0]` for error reports.
    base: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(data: &'a [u8], base: usize) -> Self {
        Self { data, end: data.len(), pos: 0, base }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.end - self.pos
    }

    pub(crate) fn error(&self, kind: DecodeErrorKind, field: &'static str) -> DecodeError {
        DecodeError::new(kind, field, self.base + self.pos)
    }

    /// An error at relative position `pos` (an earlier field than the one just read).
    pub(crate) fn error_at(&self, kind: DecodeErrorKind, field: &'static str, pos: usize) -> DecodeError {
        DecodeError::new(kind, field, self.base + pos)
    }

    fn overrun(&self, n: usize, field: &'static str) -> DecodeError {
        self.error(
            DecodeErrorKind::LengthExceedsInput { claimed: n as u64, available: self.remaining() },
            field,
        )
    }

    /// Limits reads to the next `n` bytes, returning the previous end to restore.
    pub(crate) fn limit(&mut self, n: usize, field: &'static str) -> Result<usize, DecodeError> {
        if n > self.remaining() {
            return Err(self.overrun(n, field));
        }
        let old = self.end;
        self.end = self.pos + n;
        Ok(old)
    }

    /// Ends a [`Cursor::limit`]ed region, which must have been read exactly.
    pub(crate) fn unlimit(&mut self, old_end: usize, field: &'static str) -> Result<(), DecodeError> {
        if self.pos != self.end {
            return Err(self.error(DecodeErrorKind::TrailingBytes(self.end - self.pos), field));
        }
        self.end = old_end;
        Ok(())
    }

    #[inline]
    fn fixed<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        match self.data.get(self.pos..self.end).and_then(|s| s.first_chunk::<N>()) {
            Some(b) => {
                self.pos += N;
                Ok(*b)
            }
            None => Err(self.overrun(N, field)),
        }
    }

    #[inline]
    pub(crate) fn i8(&mut self, field: &'static str) -> Result<i8, DecodeError> {
        Ok(i8::from_be_bytes(self.fixed(field)?))
    }
    pub(crate) fn i16(&mut self, field: &'static str) -> Result<i16, DecodeError> {
        Ok(i16::from_be_bytes(self.fixed(field)?))
    }
    pub(crate) fn i32(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        Ok(i32::from_be_bytes(self.fixed(field)?))
    }
    pub(crate) fn u32(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        Ok(u32::from_be_bytes(self.fixed(field)?))
    }
    pub(crate) fn i64(&mut self, field: &'static str) -> Result<i64, DecodeError> {
        Ok(i64::from_be_bytes(self.fixed(field)?))
    }

    /// Unsigned LEB128 of at most `max_bytes` bytes.
    #[inline]
    fn uvar(&mut self, max_bytes: usize, field: &'static str) -> Result<u64, DecodeError> {
        let rest = self.data.get(self.pos..self.end).unwrap_or_default();
        // One- and two-byte values (lengths under 16 KiB, deltas of a batch) are the common
        // case: read without a loop.
        match rest {
            [b0, ..] if *b0 < 0x80 => {
                self.pos += 1;
                return Ok(u64::from(*b0));
            }
            [b0, b1, ..] if *b1 < 0x80 => {
                self.pos += 2;
                return Ok(u64::from(b0 & 0x7f) | (u64::from(*b1) << 7));
            }
            _ => {}
        }
        let mut value: u64 = 0;
        for (i, &byte) in rest.iter().take(max_bytes).enumerate() {
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                self.pos += i + 1;
                return Ok(value);
            }
        }
        if rest.len() < max_bytes {
            // Ran out of bytes before the last one (high bit clear) arrived.
            return Err(self.overrun(rest.len() + 1, field));
        }
        Err(self.error(DecodeErrorKind::VarintTooLong, field))
    }

    /// Zig-zag varint (at most 5 bytes, as Java's `ByteUtils.readVarint`).
    #[inline]
    pub(crate) fn varint(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        let v = self.uvar(5, field)?;
        let v = u32::try_from(v).map_err(|_| self.error(DecodeErrorKind::VarintTooLong, field))?;
        Ok(((v >> 1) as i32) ^ -((v & 1) as i32))
    }

    /// Zig-zag varlong (at most 10 bytes).
    #[inline]
    pub(crate) fn varlong(&mut self, field: &'static str) -> Result<i64, DecodeError> {
        let v = self.uvar(10, field)?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    /// The bytes from relative position `start` up to the cursor.
    pub(crate) fn slice_from(&self, start: usize) -> &'a [u8] {
        self.data.get(start..self.pos).unwrap_or_default()
    }

    /// The next `n` bytes, borrowed from the input.
    #[inline]
    pub(crate) fn take_slice(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], DecodeError> {
        match self.data.get(self.pos..self.end).and_then(|rest| rest.get(..n)) {
            Some(out) => {
                self.pos += n;
                Ok(out)
            }
            None => Err(self.overrun(n, field)),
        }
    }

    /// A varint length then that many bytes; −1 is null, other negatives are errors.
    #[inline]
    pub(crate) fn varint_slice(&mut self, field: &'static str) -> Result<Option<&'a [u8]>, DecodeError> {
        match self.varint(field)? {
            -1 => Ok(None),
            n if n < 0 => Err(self.error(DecodeErrorKind::NegativeLength(i64::from(n)), field)),
            n => self.take_slice(n as usize, field).map(Some),
        }
    }

    /// An i32 length then that many bytes (legacy messages); −1 is null.
    pub(crate) fn i32_slice(&mut self, field: &'static str) -> Result<Option<&'a [u8]>, DecodeError> {
        match self.i32(field)? {
            -1 => Ok(None),
            n if n < 0 => Err(self.error(DecodeErrorKind::NegativeLength(i64::from(n)), field)),
            n => self.take_slice(n as usize, field).map(Some),
        }
    }
}

/// Writers for the record formats' varints, straight into a `Vec`.
pub(crate) mod varint {
    pub(crate) fn zigzag32(v: i32) -> u64 {
        u64::from(((v << 1) ^ (v >> 31)) as u32)
    }

    pub(crate) fn zigzag64(v: i64) -> u64 {
        ((v << 1) ^ (v >> 63)) as u64
    }

    /// Bytes taken by `v` as an unsigned LEB128.
    pub(crate) fn len(v: u64) -> usize {
        // ceil(significant bits / 7), at least 1.
        let bits = 64 - (v | 1).leading_zeros() as usize;
        bits.div_ceil(7)
    }

    pub(crate) fn put(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
}
