//! A compressed magic-2 batch read record by record while it decompresses, holding one chunk of
//! its decompressed bytes at a time instead of all of them: for a reader with a memory budget
//! smaller than a batch (a consumer whose producer packed megabytes of repetitive values into
//! one lz4 or zstd batch).
//!
//! Each record's key, value and headers are slices of the chunk it was read from
//! ([`RecordView::to_record_in`] with the chunk [`StreamedBatch::next_record`] hands out keeps
//! them without copying); a chunk lives as long as a record kept from it. A record larger than
//! a chunk gets a chunk of its own size. [`DecodeOptions::max_decompressed_size`] still bounds
//! the whole batch: a batch that decompresses past it, or a record whose length claims more than
//! the cap leaves, is an error before anything past the cap is allocated.
//!
//! ```
//! use bytes::Bytes;
//! use kafka_wire::protocol::records::{Compression, DecodeOptions, Record, RecordBatch, StreamedBatch};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // 64 records of 1 KiB each, read 4 KiB of decompressed bytes at a time.
//! let records = (0..64).map(|i| Record { offset_delta: i, ..Record::new(None, Some(Bytes::from(vec![b'x'; 1024]))) });
//! let wire = RecordBatch::new(500, 1_750_000_000_000, Compression::Zstd, records.collect()).to_bytes()?;
//!
//! let mut batch = StreamedBatch::parse_entry(&wire, 0, &DecodeOptions::default(), 4096)?;
//! let header = batch.header; // a copy: the records borrow the batch
//! let mut offsets = Vec::new();
//! while let Some(record) = batch.next_record() {
//!     let (record, chunk) = record?;
//!     assert!(chunk.len() <= 4096);
//!     offsets.push(header.offset_of(&record));
//! }
//! assert_eq!(offsets, (500..564).collect::<Vec<_>>());
//! # Ok(())
//! # }
//! ```

use bytes::Bytes;

use super::decompressor::Decompressor;
use super::view::{read_record, BatchHeader, RawBatch, RecordView};
use super::{Cursor, DecodeOptions};
use crate::protocol::decoder::DecodeResult;
use crate::protocol::error::{DecodeError, DecodeErrorKind};

/// The longest varint a record length may take (Java's `ByteUtils.readVarint`).
const MAX_LENGTH_VARINT: usize = 5;

/// One batch's records, decompressed a chunk at a time; see the module doc.
#[derive(Debug)]
pub struct StreamedBatch {
    /// The header fields.
    pub header: BatchHeader,
    source: Decompressor,
    /// Decompressed bytes; records are read from `chunk[pos..]`.
    chunk: Bytes,
    pos: usize,
    /// Offset of `chunk[0]` in the decompressed stream.
    chunk_start: usize,
    /// Bytes of decompressed record data held at a time (more for a record larger than that).
    chunk_size: usize,
    /// Absolute offset of the compressed records, which errors count decompressed bytes from
    /// (as [`super::BatchView`]'s do).
    records_at: usize,
    /// Records the header claims that are not read yet.
    left: usize,
    /// The decompressor has no more output.
    drained: bool,
    failed: bool,
}

impl StreamedBatch {
    /// Reads the header of one batch whose length was checked against `bytes` (a record set's
    /// [`Entry`](super::Entry)) and checks its CRC; `base` is its absolute offset, for errors.
    /// Nothing is decompressed yet. `chunk_size` (at least 1 KiB is sensible) is the decompressed
    /// bytes held at a time.
    ///
    /// The batch's compressed records are copied (its size on the wire, not decompressed), so
    /// the batch outlives `bytes`: a reader that stops inside it can keep it and read on later,
    /// from where it stopped, without holding the buffer it came in.
    pub fn parse_entry(
        bytes: &[u8],
        base: usize,
        opts: &DecodeOptions,
        chunk_size: usize,
    ) -> DecodeResult<Self> {
        let raw = RawBatch::parse(bytes, base, opts)?;
        let source = Decompressor::new(
            raw.header.attributes.compression,
            Bytes::copy_from_slice(raw.body),
            opts.max_decompressed_size,
        )
        .map_err(|kind| DecodeError::new(kind, "records", raw.records_at))?;
        Ok(Self {
            header: raw.header,
            source,
            chunk: Bytes::new(),
            pos: 0,
            chunk_start: 0,
            chunk_size: chunk_size.max(1),
            records_at: raw.records_at,
            left: raw.count,
            drained: false,
            failed: false,
        })
    }

    /// Decompressed bytes read so far (the records handed out and the chunk ahead of them).
    pub fn decompressed(&self) -> usize {
        self.source.produced()
    }

    /// The next record in batch order, with the chunk its slices point into. `None` after the
    /// last record or after an error; decompressed bytes left after the header's record count
    /// are one last error ([`DecodeErrorKind::TrailingBytes`], counting at least those already
    /// decompressed).
    pub fn next_record(&mut self) -> Option<DecodeResult<(RecordView<'_>, &Bytes)>> {
        if self.failed {
            return None;
        }
        let ready = if self.left == 0 { self.check_drained() } else { self.make_record_whole() };
        if let Err(e) = ready {
            self.failed = true;
            return Some(Err(e));
        }
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let mut c = Cursor::new(&self.chunk[self.pos..], self.records_at + self.chunk_start + self.pos);
        match read_record(&mut c) {
            Ok(record) => {
                self.pos += c.pos();
                Some(Ok((record, &self.chunk)))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }

    /// Ensures the record at `pos` lies wholly inside the chunk, reading more when it does not
    /// and the stream has more; a record cut short by the stream's end is left for
    /// [`read_record`] to name.
    fn make_record_whole(&mut self) -> DecodeResult<()> {
        while !self.drained {
            let Some(need) = bytes_needed(&self.chunk[self.pos..]) else { return Ok(()) };
            self.refill(need)?;
        }
        Ok(())
    }

    /// A new chunk: the unread tail of the old one, then decompressed bytes up to
    /// `max(chunk_size, need)`. `need` (the record's whole length) is checked against the cap
    /// first, so a record claiming gigabytes allocates nothing.
    fn refill(&mut self, need: usize) -> DecodeResult<()> {
        let tail = &self.chunk[self.pos..];
        let tail_start = self.chunk_start + self.pos;
        let cap = self.source.max();
        if need > cap.saturating_sub(tail_start) {
            return Err(DecodeError::new(
                DecodeErrorKind::DecompressedTooLarge { max: cap },
                "record.length",
                self.records_at + tail_start,
            ));
        }
        let size = self.chunk_size.max(need);
        let mut next = Vec::with_capacity(size);
        next.extend_from_slice(tail);
        next.resize(size, 0);
        let mut filled = tail.len();
        while filled < size {
            let n = self
                .source
                .read(&mut next[filled..])
                .map_err(|kind| DecodeError::new(kind, "records", self.records_at + tail_start + filled))?;
            if n == 0 {
                self.drained = true;
                break;
            }
            filled += n;
        }
        next.truncate(filled);
        self.chunk = Bytes::from(next);
        self.chunk_start = tail_start;
        self.pos = 0;
        Ok(())
    }

    /// After the last record: the chunk and the stream must both be spent.
    fn check_drained(&mut self) -> DecodeResult<()> {
        let mut extra = self.chunk.len() - self.pos;
        if extra == 0 && !self.drained {
            let mut probe = [0u8; 256];
            let at = self.records_at + self.source.produced();
            extra = self.source.read(&mut probe).map_err(|kind| DecodeError::new(kind, "records", at))?;
            self.drained = extra == 0;
        }
        if extra == 0 {
            return Ok(());
        }
        Err(DecodeError::new(
            DecodeErrorKind::TrailingBytes(extra),
            "records",
            self.records_at + self.chunk_start + self.pos,
        ))
    }
}

/// How many bytes the record starting `data` spans in all (its length varint included) when
/// `data` does not hold all of them; `None` when it does, or when the length is malformed
/// (negative, too long) and reading it will say so.
fn bytes_needed(data: &[u8]) -> Option<usize> {
    let mut value: u64 = 0;
    for (i, &byte) in data.iter().take(MAX_LENGTH_VARINT).enumerate() {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            let zigzag = u32::try_from(value).ok()?;
            let len = ((zigzag >> 1) as i32) ^ -((zigzag & 1) as i32);
            let total = usize::try_from(len).ok()?.checked_add(i + 1)?;
            return (total > data.len()).then_some(total);
        }
    }
    // An unfinished varint: at least one more byte is needed (a sixth is malformed).
    (data.len() < MAX_LENGTH_VARINT).then_some(data.len() + 1)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::records::batch::tests::batch;
    use crate::protocol::records::{BatchView, Compression, Record, RecordBatch};

    fn codecs() -> impl Iterator<Item = Compression> {
        [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd]
            .into_iter()
            .filter(|c| c.is_available())
    }

    /// Every record through the stream, as owning values (slices of the chunks they came in).
    fn streamed(wire: &[u8], opts: &DecodeOptions, chunk_size: usize) -> DecodeResult<Vec<Record>> {
        let mut batch = StreamedBatch::parse_entry(wire, 0, opts, chunk_size)?;
        let mut out = Vec::new();
        while let Some(r) = batch.next_record() {
            let (record, chunk) = r?;
            out.push(record.to_record_in(chunk));
        }
        Ok(out)
    }

    fn whole(wire: &[u8], opts: &DecodeOptions) -> DecodeResult<Vec<Record>> {
        let view = BatchView::parse(wire, opts)?;
        view.records().map(|r| r.map(RecordView::to_record)).collect()
    }

    proptest! {
        #[test]
        fn a_streamed_batch_reads_what_a_whole_view_reads(b in batch(), chunk_size in 1usize..600) {
            for codec in codecs() {
                let mut b = b.clone();
                b.attributes.compression = codec;
                let wire = b.to_bytes().unwrap();
                prop_assert_eq!(streamed(&wire, &DecodeOptions::default(), chunk_size).unwrap(), b.records.clone());
            }
        }

        #[test]
        fn a_corrupted_batch_is_refused_or_read_as_a_whole_view_reads_it(
            b in batch(),
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
            chunk_size in 1usize..300,
        ) {
            // With the CRC unchecked, damage reaches the decompressor and the record reader.
            let opts = DecodeOptions { verify_crc: false, ..DecodeOptions::default() };
            for codec in codecs() {
                let mut b = b.clone();
                b.attributes.compression = codec;
                let mut wire = b.to_bytes().unwrap().to_vec();
                // Damage the records only: a damaged header changes the codec or the count.
                let records_at = 61;
                if wire.len() > records_at {
                    let i = records_at + at.index(wire.len() - records_at);
                    wire[i] = byte;
                }
                match whole(&wire, &opts) {
                    Ok(records) => prop_assert_eq!(streamed(&wire, &opts, chunk_size), Ok(records)),
                    Err(_) => prop_assert!(streamed(&wire, &opts, chunk_size).is_err()),
                }
            }
        }
    }

    /// A batch of `n` records whose values are `len` repetitive bytes.
    fn repetitive(codec: Compression, n: i32, len: usize) -> Bytes {
        let records = (0..n)
            .map(|i| Record {
                offset_delta: i,
                ..Record::new(
                    Some(Bytes::from(format!("k{i}"))),
                    Some(Bytes::from(vec![b'a' + (i % 26) as u8; len])),
                )
            })
            .collect();
        RecordBatch::new(0, 1_750_000_000_000, codec, records).to_bytes().unwrap()
    }

    #[test]
    fn a_batch_many_times_the_chunk_is_read_holding_one_chunk_at_a_time() {
        // 8 MiB decompressed in 64 KiB chunks: every chunk handed out is at most a chunk long.
        for codec in codecs().filter(|c| *c != Compression::None) {
            let wire = repetitive(codec, 2048, 4096);
            let mut batch =
                StreamedBatch::parse_entry(&wire, 0, &DecodeOptions::default(), 64 << 10).unwrap();
            let mut n = 0;
            while let Some(r) = batch.next_record() {
                let (record, chunk) = r.unwrap();
                assert!(chunk.len() <= 64 << 10, "{codec}: a chunk of {}", chunk.len());
                assert_eq!(record.value.unwrap().len(), 4096);
                n += 1;
            }
            assert_eq!(n, 2048, "{codec}");
        }
    }

    #[test]
    fn a_record_larger_than_the_chunk_gets_a_chunk_of_its_own() {
        for codec in codecs() {
            let wire = repetitive(codec, 3, 100_000);
            let records = streamed(&wire, &DecodeOptions::default(), 1024).unwrap();
            assert_eq!(records.len(), 3, "{codec}");
            assert!(records.iter().all(|r| r.value.as_ref().unwrap().len() == 100_000));
        }
    }

    #[test]
    fn a_batch_past_the_cap_is_refused_with_where_it_passed() {
        // 2048 × 4 KiB = 8 MiB decompressed, a 1 MiB cap.
        let opts = DecodeOptions { max_decompressed_size: 1 << 20, ..DecodeOptions::default() };
        for codec in codecs().filter(|c| *c != Compression::None) {
            let wire = repetitive(codec, 2048, 4096);
            let err = streamed(&wire, &opts, 64 << 10).unwrap_err();
            assert_eq!(err.kind, DecodeErrorKind::DecompressedTooLarge { max: 1 << 20 }, "{codec}");
        }
    }

    /// A batch of `count` records whose (uncompressed) record bytes are `body`, compressed with
    /// `codec`, its CRC right: for record data no encoder writes.
    fn batch_around(codec: Compression, count: i32, body: &[u8]) -> Vec<u8> {
        let mut packed = Vec::new();
        crate::protocol::records::compression::compress(codec, body, &mut packed).unwrap();
        let mut wire = Vec::new();
        wire.extend_from_slice(&0i64.to_be_bytes()); // base offset
        wire.extend_from_slice(&i32::try_from(49 + packed.len()).unwrap().to_be_bytes());
        wire.extend_from_slice(&(-1i32).to_be_bytes()); // leader epoch
        wire.push(2); // magic
        wire.extend_from_slice(&[0; 4]); // crc, below
        wire.extend_from_slice(&i16::from(codec.id()).to_be_bytes());
        wire.extend_from_slice(&(count - 1).to_be_bytes()); // last offset delta
        wire.extend_from_slice(&[0; 16]); // base and max timestamps
        wire.extend_from_slice(&(-1i64).to_be_bytes()); // producer id
        wire.extend_from_slice(&(-1i16).to_be_bytes());
        wire.extend_from_slice(&(-1i32).to_be_bytes());
        wire.extend_from_slice(&count.to_be_bytes());
        wire.extend_from_slice(&packed);
        let crc = crc32c::crc32c(&wire[21..]);
        wire[17..21].copy_from_slice(&crc.to_be_bytes());
        wire
    }

    /// One record `(null key, value "v", no headers)` as its bytes.
    const RECORD_V: [u8; 8] = [14, 0, 0, 0, 1, 2, b'v', 0];

    #[test]
    fn a_record_claiming_more_than_the_cap_allocates_nothing() {
        // One record whose length says 1 GiB (zig-zag 2^31: five varint bytes), then 16 bytes,
        // read in 4-byte chunks so the length is seen before the stream's end.
        let mut body = vec![0x80, 0x80, 0x80, 0x80, 0x08];
        body.extend_from_slice(&[0; 16]);
        let opts = DecodeOptions { max_decompressed_size: 1 << 20, ..DecodeOptions::default() };
        for codec in codecs() {
            let err = streamed(&batch_around(codec, 1, &body), &opts, 4).unwrap_err();
            assert_eq!(err.kind, DecodeErrorKind::DecompressedTooLarge { max: 1 << 20 }, "{codec}");
            assert_eq!(err.field, "record.length", "{codec}");
        }
    }

    #[test]
    fn bytes_after_the_last_record_are_an_error() {
        let mut body = RECORD_V.to_vec();
        body.extend_from_slice(&[9, 9, 9]);
        for codec in codecs() {
            let wire = batch_around(codec, 1, &body);
            assert_eq!(
                streamed(&wire, &DecodeOptions::default(), 4).unwrap_err().kind,
                DecodeErrorKind::TrailingBytes(3),
                "{codec}"
            );
            assert!(whole(&wire, &DecodeOptions::default()).is_err());
        }
    }

    #[test]
    fn a_stream_that_ends_before_the_claimed_records_is_an_error() {
        for codec in codecs() {
            let wire = batch_around(codec, 2, &RECORD_V);
            assert!(streamed(&wire, &DecodeOptions::default(), 64).is_err(), "{codec}");
        }
    }

    #[test]
    fn the_length_of_a_record_cut_by_the_chunk_is_read_across_it() {
        assert_eq!(bytes_needed(&[]), Some(1));
        assert_eq!(bytes_needed(&[0x80]), Some(2));
        // 200 zig-zagged is 400: two varint bytes, then 200.
        assert_eq!(bytes_needed(&[0x90, 0x03]), Some(202));
        assert_eq!(bytes_needed(&[0x90, 0x03, 0, 0]), Some(202));
        assert_eq!(bytes_needed(&[6, 1, 2, 3]), None);
        // Negative (−1) and over-long lengths are left to the record reader to name.
        assert_eq!(bytes_needed(&[1]), None);
        assert_eq!(bytes_needed(&[0xff; 5]), None);
    }
}
