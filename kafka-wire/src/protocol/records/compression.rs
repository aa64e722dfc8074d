//! The compression codecs a record batch (or a legacy wrapper message) may use, each behind its
//! cargo feature.
//!
//! Decompression is always capped: the caller says how many bytes it is willing to hold, and a
//! stream that would inflate past that is [`DecodeErrorKind::DecompressedTooLarge`], detected
//! after producing at most `max + 1` bytes — a gzip bomb of 1 GB of zeros costs one megabyte of
//! memory to reject, not a gigabyte. A codec compiled out of this build is
//! [`DecodeErrorKind::UnsupportedCompression`] (decoding) or
//! [`RecordEncodeError::UnsupportedCompression`] (encoding), never a panic.

use std::fmt;

use crate::protocol::error::DecodeErrorKind;

use super::RecordEncodeError;

/// The codec in bits 0–2 of a batch's (or legacy message's) attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Compression {
    /// Uncompressed (codec 0).
    #[default]
    None,
    /// gzip (codec 1).
    Gzip,
    /// Raw snappy on decode, or the Java client's xerial framing (both are accepted); kwire
    /// writes the xerial framing, which every Kafka client and broker reads.
    Snappy,
    /// The LZ4 frame format.
    Lz4,
    /// Zstandard; only in magic-2 batches (Produce v7+, Fetch v10+).
    Zstd,
}

/// The attribute bits that hold the codec.
pub const COMPRESSION_MASK: u8 = 0x07;

impl Compression {
    /// Every codec, in id order.
    pub const ALL: [Compression; 5] =
        [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd];

    /// The codec with this wire id (0–4), or `None` for the unassigned ids 5–7 and above.
    pub fn from_id(id: u8) -> Option<Compression> {
        match id {
            0 => Some(Compression::None),
            1 => Some(Compression::Gzip),
            2 => Some(Compression::Snappy),
            3 => Some(Compression::Lz4),
            4 => Some(Compression::Zstd),
            _ => None,
        }
    }

    /// The wire id, 0–4.
    pub fn id(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// Kafka's name for the codec (`compression.type`).
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }

    /// Whether this build can compress and decompress the codec (its cargo feature is on).
    pub fn is_available(self) -> bool {
        match self {
            Compression::None => true,
            Compression::Gzip => cfg!(feature = "gzip"),
            Compression::Snappy => cfg!(feature = "snappy"),
            Compression::Lz4 => cfg!(feature = "lz4"),
            Compression::Zstd => cfg!(feature = "zstd"),
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Decompresses `input` into a new buffer of at most `max_output` bytes.
///
/// `Compression::None` copies the input (still subject to the cap); callers that want
/// zero-copy don't call this for uncompressed data.
pub fn decompress(codec: Compression, input: &[u8], max_output: usize) -> Result<Vec<u8>, DecodeErrorKind> {
    match codec {
        Compression::None => {
            if input.len() > max_output {
                Err(DecodeErrorKind::DecompressedTooLarge { max: max_output })
            } else {
                Ok(input.to_vec())
            }
        }
        Compression::Gzip => gzip::decompress(input, max_output),
        Compression::Snappy => snappy::decompress(input, max_output),
        Compression::Lz4 => lz4::decompress(input, max_output),
        Compression::Zstd => zstd::decompress(input, max_output),
    }
}

/// The most bytes [`compress`] writes for `len` bytes of input with `codec`: the input stored
/// uncompressed in the codec's framing, with every block's and the frame's overhead. What a
/// producer reserves for a batch's compressed copy while the batch is sealed.
pub fn max_compressed_len(codec: Compression, len: usize) -> usize {
    match codec {
        Compression::None => len,
        // Deflate's stored blocks (5 bytes per 64 KiB), the gzip header and trailer (18).
        Compression::Gzip => len + len / 1000 + 64,
        // The xerial header, then per 32 KiB block a 4-byte length and snappy's worst case
        // (32 + n + n/6).
        Compression::Snappy => 16 + len + len / 6 + (len / (32 * 1024) + 1) * 36,
        // The frame header and end mark, then per 64 KiB block a 4-byte length and LZ4's worst
        // case (n + n/255 + 16).
        Compression::Lz4 => 32 + len + len / 255 + (len / (64 * 1024) + 1) * 20,
        // ZSTD_COMPRESSBOUND.
        Compression::Zstd => len + len / 256 + (128 * 1024usize).saturating_sub(len) / 2048 + 64,
    }
}

/// The most heap memory one [`compress`] call takes besides `out`, whatever the input: the
/// codec's working state (hash tables, deflate's window, a block buffer), allocated and freed
/// inside the call. What a producer sets aside within its `buffer.memory` for the one batch it
/// compresses at a time. Measured, not estimated (about 80 % of each bound, for inputs from
/// 1 byte to 4 MiB): the Rust codecs' allocations through a counting allocator
/// (`tests/compressor_memory.rs`), zstd's C context by `ZSTD_sizeof_CCtx` (a unit test here).
pub const fn compressor_memory(codec: Compression) -> usize {
    match codec {
        Compression::None => 0,
        Compression::Gzip => GZIP_COMPRESSOR_MEMORY,
        Compression::Snappy => SNAPPY_COMPRESSOR_MEMORY,
        Compression::Lz4 => LZ4_COMPRESSOR_MEMORY,
        Compression::Zstd => ZSTD_COMPRESSOR_MEMORY,
    }
}

const GZIP_COMPRESSOR_MEMORY: usize = 400 << 10;
const SNAPPY_COMPRESSOR_MEMORY: usize = 40 << 10;
const LZ4_COMPRESSOR_MEMORY: usize = 200 << 10;
const ZSTD_COMPRESSOR_MEMORY: usize = 3 << 19;

/// Compresses `input` with `codec`, appending the result to `out`.
pub fn compress(codec: Compression, input: &[u8], out: &mut Vec<u8>) -> Result<(), RecordEncodeError> {
    // Room for the worst case up front: the output is never reallocated (and copied) while it
    // is written, so a producer's batch costs at most this much while it is sealed.
    out.reserve_exact(max_compressed_len(codec, input.len()));
    match codec {
        Compression::None => {
            out.extend_from_slice(input);
            Ok(())
        }
        Compression::Gzip => gzip::compress(input, out),
        Compression::Snappy => snappy::compress(input, out),
        Compression::Lz4 => lz4::compress(input, out),
        Compression::Zstd => zstd::compress(input, out),
    }
}

/// Rewrites the header checksum (HC) byte of an LZ4 frame for magic-0 legacy messages, which
/// Kafka writes with a non-standard checksum (KAFKA-3160: computed over the frame's magic
/// number as well as its descriptor) and reads without checking it. `kafka_v0` picks Kafka's
/// form (for writing, so 0.8/0.9 readers that verify it accept the frame), otherwise the
/// standard one (for reading, so a standard decoder accepts it). Frames too short to hold a
/// descriptor are returned unchanged; decoding them then fails as usual.
pub(crate) fn lz4_legacy_header_checksum(frame: &mut [u8], kafka_v0: bool) {
    const DESCRIPTOR: usize = 4; // after the 4-byte magic number
    let Some(&flg) = frame.get(DESCRIPTOR) else { return };
    // FLG, BD, then an 8-byte content size (FLG bit 3) and a 4-byte dictionary id (FLG bit 0).
    let hc = DESCRIPTOR + 2 + if flg & 0x08 != 0 { 8 } else { 0 } + if flg & 0x01 != 0 { 4 } else { 0 };
    if hc >= frame.len() {
        return;
    }
    let from = if kafka_v0 { 0 } else { DESCRIPTOR };
    frame[hc] = (xxh32(&frame[from..hc]) >> 8) as u8;
}

/// XXH32 with seed 0 (the checksummed span is at most 18 bytes: magic, FLG, BD, content size
/// and dictionary id).
fn xxh32(input: &[u8]) -> u32 {
    const P1: u32 = 0x9E37_79B1;
    const P2: u32 = 0x85EB_CA77;
    const P3: u32 = 0xC2B2_AE3D;
    const P4: u32 = 0x27D4_EB2F;
    const P5: u32 = 0x1656_67B1;
    let round =
        |acc: u32, lane: u32| acc.wrapping_add(lane.wrapping_mul(P2)).rotate_left(13).wrapping_mul(P1);
    let word = |c: &[u8]| u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    let mut rest = input;
    let mut h = if input.len() >= 16 {
        let mut v = [P1.wrapping_add(P2), P2, 0, 0u32.wrapping_sub(P1)];
        while rest.len() >= 16 {
            for (i, lane) in v.iter_mut().enumerate() {
                *lane = round(*lane, word(&rest[4 * i..]));
            }
            rest = &rest[16..];
        }
        v[0].rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18))
    } else {
        P5
    };
    h = h.wrapping_add(input.len() as u32);
    while rest.len() >= 4 {
        h = h.wrapping_add(word(rest).wrapping_mul(P3)).rotate_left(17).wrapping_mul(P4);
        rest = &rest[4..];
    }
    for &b in rest {
        h = h.wrapping_add(u32::from(b).wrapping_mul(P5)).rotate_left(11).wrapping_mul(P1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^ (h >> 16)
}

/// Reads a decompressing stream to its end, failing once it yields more than `max` bytes.
/// `size_hint` is the output's size (or a bound on it) when the frame says, so the output is
/// allocated once; without one, most batches compress 2–8× and the guess starts there. The cap
/// bounds any guess on hostile input (capacity never written is never touched).
#[cfg(any(feature = "lz4", feature = "zstd"))]
fn read_capped(
    reader: impl std::io::Read,
    input_len: usize,
    size_hint: Option<usize>,
    max: usize,
) -> Result<Vec<u8>, DecodeErrorKind> {
    use std::io::Read;
    let mut out = Vec::with_capacity(size_hint.unwrap_or(input_len.saturating_mul(4)).min(max));
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    reader.take(limit).read_to_end(&mut out).map_err(|e| DecodeErrorKind::Decompression(e.to_string()))?;
    if out.len() > max {
        return Err(DecodeErrorKind::DecompressedTooLarge { max });
    }
    Ok(out)
}

#[cfg(any(feature = "snappy", feature = "lz4", feature = "zstd"))]
fn failed(e: &impl fmt::Display) -> RecordEncodeError {
    RecordEncodeError::Compression(e.to_string())
}

/// gzip through zlib-rs (a Rust port of zlib-ng), at Kafka's default level 6: on a 1 MiB batch
/// it compresses 2.5x and inflates 1.6x as fast as flate2's default miniz_oxide backend, with
/// output of the same size.
#[cfg(feature = "gzip")]
mod gzip {
    use zlib_rs::{Deflate, DeflateConfig, DeflateFlush, Inflate, InflateFlush, Status};

    use super::{DecodeErrorKind, RecordEncodeError};

    /// zlib's `window_bits` for a gzip wrapper around a 32 KiB window (16 + 15).
    const GZIP_WINDOW_BITS: u8 = 31;
    /// Kafka's default `compression.gzip.level` (Java's `Deflater.DEFAULT_COMPRESSION`).
    const LEVEL: i32 = 6;

    /// Java's `GZIPInputStream` reads concatenated members, so this does too. Output grows
    /// (zero-filled, then written over) until the stream ends or passes `max`.
    pub(super) fn decompress(input: &[u8], max: usize) -> Result<Vec<u8>, DecodeErrorKind> {
        /// Deflate's largest possible expansion (a run of one byte): a trailer claiming more
        /// than this over the input's length is not believed.
        const MAX_RATIO: usize = 1032;
        let limit = max.saturating_add(1);
        // The trailer's ISIZE (the last member's length mod 2^32) sizes the output, plus one
        // byte so a stream that fills it exactly ends without a regrowth; the cap and the
        // maximum ratio bound what a lying trailer can make us zero-fill.
        let size_hint = input.last_chunk::<4>().map_or(0, |isize| u32::from_le_bytes(*isize) as usize);
        let initial = size_hint.min(input.len().saturating_mul(MAX_RATIO)).saturating_add(1);
        let mut out = vec![0u8; initial.min(limit)];
        let mut produced = 0;
        let mut rest = input;
        let mut inflate = Inflate::new(true, GZIP_WINDOW_BITS);
        loop {
            let (in_before, out_before) = (inflate.total_in(), inflate.total_out());
            let status = inflate
                .decompress(rest, &mut out[produced..], InflateFlush::NoFlush)
                .map_err(|e| DecodeErrorKind::Decompression(format!("gzip: {}", e.as_str())))?;
            let consumed = usize::try_from(inflate.total_in() - in_before).unwrap_or(usize::MAX);
            let written = usize::try_from(inflate.total_out() - out_before).unwrap_or(usize::MAX);
            rest = &rest[consumed.min(rest.len())..];
            produced += written;
            if produced > max {
                return Err(DecodeErrorKind::DecompressedTooLarge { max });
            }
            match status {
                Status::StreamEnd if rest.is_empty() => break,
                // Another member follows.
                Status::StreamEnd => inflate = Inflate::new(true, GZIP_WINDOW_BITS),
                Status::Ok | Status::BufError if produced == out.len() => {
                    // Output full: grow, never past one byte over the cap.
                    out.resize(out.len().saturating_mul(2).min(limit), 0);
                }
                Status::Ok | Status::BufError if consumed == 0 && written == 0 => {
                    return Err(DecodeErrorKind::Decompression("gzip: the stream ends early".to_owned()));
                }
                Status::Ok | Status::BufError => {}
            }
        }
        out.truncate(produced);
        Ok(out)
    }

    pub(super) fn compress(input: &[u8], out: &mut Vec<u8>) -> Result<(), RecordEncodeError> {
        let config = DeflateConfig {
            level: LEVEL,
            window_bits: i32::from(GZIP_WINDOW_BITS),
            ..DeflateConfig::default()
        };
        let mut deflate = Deflate::new_with_config(config);
        let start = out.len();
        // Deflate's worst case is a little over the input; the gzip header and trailer are 18.
        out.resize(start + input.len() + input.len() / 1000 + 64, 0);
        let mut rest = input;
        let mut produced = 0;
        loop {
            let (in_before, out_before) = (deflate.total_in(), deflate.total_out());
            let status = deflate
                .compress(rest, &mut out[start + produced..], DeflateFlush::Finish)
                .map_err(|e| RecordEncodeError::Compression(format!("gzip: {}", e.as_str())))?;
            let consumed = usize::try_from(deflate.total_in() - in_before).unwrap_or(usize::MAX);
            rest = &rest[consumed.min(rest.len())..];
            produced += usize::try_from(deflate.total_out() - out_before).unwrap_or(usize::MAX);
            match status {
                Status::StreamEnd => break,
                Status::Ok | Status::BufError => {
                    let grown = out.len() + out.len().max(64) / 2;
                    out.resize(grown, 0);
                }
            }
        }
        out.truncate(start + produced);
        Ok(())
    }
}

#[cfg(not(feature = "gzip"))]
mod gzip {
    use super::{Compression, DecodeErrorKind, RecordEncodeError};

    pub(super) fn decompress(_input: &[u8], _max: usize) -> Result<Vec<u8>, DecodeErrorKind> {
        Err(DecodeErrorKind::UnsupportedCompression(Compression::Gzip.id()))
    }

    pub(super) fn compress(_input: &[u8], _out: &mut Vec<u8>) -> Result<(), RecordEncodeError> {
        Err(RecordEncodeError::UnsupportedCompression(Compression::Gzip))
    }
}

/// The 8-byte magic that opens the Java client's xerial snappy framing.
pub const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];

#[cfg(feature = "snappy")]
mod snappy {
    use super::{failed, DecodeErrorKind, RecordEncodeError, XERIAL_MAGIC};

    /// Magic, then i32 version and i32 minimum compatible version.
    const XERIAL_HEADER_LEN: usize = 16;
    /// The Java `SnappyOutputStream` default block size.
    const XERIAL_BLOCK: usize = 32 * 1024;

    fn snap_error(e: &snap::Error) -> DecodeErrorKind {
        DecodeErrorKind::Decompression(format!("snappy: {e}"))
    }

    /// Accepts both forms, as Java's `SnappyInputStream` does: the xerial framing when the
    /// input starts with its header, raw snappy otherwise.
    pub(super) fn decompress(input: &[u8], max: usize) -> Result<Vec<u8>, DecodeErrorKind> {
        let mut decoder = snap::raw::Decoder::new();
        let mut out = Vec::new();
        match input.strip_prefix(&XERIAL_MAGIC[..]) {
            Some(rest) if input.len() >= XERIAL_HEADER_LEN => {
                let mut blocks = rest.get(XERIAL_HEADER_LEN - XERIAL_MAGIC.len()..).unwrap_or_default();
                while !blocks.is_empty() {
                    let (len, rest) = blocks.split_first_chunk::<4>().ok_or_else(|| {
                        DecodeErrorKind::Decompression("snappy: truncated block length".into())
                    })?;
                    let len = usize::try_from(i32::from_be_bytes(*len)).map_err(|_| {
                        DecodeErrorKind::Decompression("snappy: negative block length".into())
                    })?;
                    let (block, rest) = rest
                        .split_at_checked(len)
                        .ok_or_else(|| DecodeErrorKind::Decompression("snappy: truncated block".into()))?;
                    raw_into(&mut decoder, block, &mut out, max)?;
                    blocks = rest;
                }
            }
            _ => raw_into(&mut decoder, input, &mut out, max)?,
        }
        Ok(out)
    }

    /// Appends one raw snappy block to `out`, checking its declared length against the cap
    /// before allocating anything for it.
    fn raw_into(
        decoder: &mut snap::raw::Decoder,
        block: &[u8],
        out: &mut Vec<u8>,
        max: usize,
    ) -> Result<(), DecodeErrorKind> {
        let len = snap::raw::decompress_len(block).map_err(|e| snap_error(&e))?;
        let start = out.len();
        let end = start.checked_add(len).filter(|&end| end <= max);
        let Some(end) = end else { return Err(DecodeErrorKind::DecompressedTooLarge { max }) };
        out.resize(end, 0);
        let written = decoder.decompress(block, &mut out[start..]).map_err(|e| snap_error(&e))?;
        out.truncate(start + written);
        Ok(())
    }

    /// Writes the xerial framing (what Java's producer writes), in 32 KiB blocks.
    pub(super) fn compress(input: &[u8], out: &mut Vec<u8>) -> Result<(), RecordEncodeError> {
        out.extend_from_slice(&XERIAL_MAGIC);
        out.extend_from_slice(&1i32.to_be_bytes());
        out.extend_from_slice(&1i32.to_be_bytes());
        let mut encoder = snap::raw::Encoder::new();
        for chunk in input.chunks(XERIAL_BLOCK) {
            let at = out.len();
            out.extend_from_slice(&[0; 4]);
            let start = out.len();
            out.resize(start + snap::raw::max_compress_len(chunk.len()), 0);
            let n = encoder.compress(chunk, &mut out[start..]).map_err(|e| failed(&e))?;
            out.truncate(start + n);
            let n = i32::try_from(n).map_err(|e| failed(&e))?;
            out[at..start].copy_from_slice(&n.to_be_bytes());
        }
        Ok(())
    }
}

#[cfg(not(feature = "snappy"))]
mod snappy {
    use super::{Compression, DecodeErrorKind, RecordEncodeError};

    pub(super) fn decompress(_input: &[u8], _max: usize) -> Result<Vec<u8>, DecodeErrorKind> {
        Err(DecodeErrorKind::UnsupportedCompression(Compression::Snappy.id()))
    }

    pub(super) fn compress(_input: &[u8], _out: &mut Vec<u8>) -> Result<(), RecordEncodeError> {
        Err(RecordEncodeError::UnsupportedCompression(Compression::Snappy))
    }
}

#[cfg(feature = "lz4")]
mod lz4 {
    use std::io::Write;

    use super::{failed, read_capped, DecodeErrorKind, RecordEncodeError};

    pub(super) fn decompress(input: &[u8], max: usize) -> Result<Vec<u8>, DecodeErrorKind> {
        read_capped(lz4_flex::frame::FrameDecoder::new(input), input.len(), output_bound(input), max)
    }

    /// An upper bound on what an LZ4 frame decompresses to, from its header and block headers
    /// alone: the content size when the frame carries one (Kafka's producers do not), else each
    /// compressed block's maximum size plus each stored block's length. `None` when the frame
    /// is not one (the decoder then names what is wrong).
    pub(super) fn output_bound(input: &[u8]) -> Option<usize> {
        const MAGIC: u32 = 0x184D_2204;
        const CONTENT_SIZE: u8 = 0x08;
        const BLOCK_CHECKSUM: u8 = 0x10;
        const DICTIONARY_ID: u8 = 0x01;
        let (magic, rest) = input.split_first_chunk::<4>()?;
        if u32::from_le_bytes(*magic) != MAGIC {
            return None;
        }
        let (&[flags, block_descriptor], mut rest) = rest.split_first_chunk::<2>()?;
        if flags & CONTENT_SIZE != 0 {
            let (size, _) = rest.split_first_chunk::<8>()?;
            return usize::try_from(u64::from_le_bytes(*size)).ok();
        }
        let max_block = match (block_descriptor >> 4) & 0x7 {
            4 => 64 << 10,
            5 => 256 << 10,
            6 => 1 << 20,
            7 => 4 << 20,
            _ => return None,
        };
        if flags & DICTIONARY_ID != 0 {
            rest = rest.get(4..)?;
        }
        rest = rest.get(1..)?; // the header checksum
        let checksum_len = if flags & BLOCK_CHECKSUM != 0 { 4 } else { 0 };
        let mut bound = 0usize;
        loop {
            let (size, after) = rest.split_first_chunk::<4>()?;
            let size = u32::from_le_bytes(*size);
            if size == 0 {
                return Some(bound);
            }
            // The high bit marks a block stored uncompressed: its length is its output.
            let (len, stored) = ((size & 0x7fff_ffff) as usize, size & 0x8000_0000 != 0);
            bound = bound.saturating_add(if stored { len } else { max_block });
            rest = after.get(len.checked_add(checksum_len)?..)?;
        }
    }

    /// Independent 64 KiB blocks without checksums beyond the header's: the frame options
    /// every Kafka reader (Java's `KafkaLZ4BlockInputStream` included) accepts.
    pub(super) fn compress(input: &[u8], out: &mut Vec<u8>) -> Result<(), RecordEncodeError> {
        let info = lz4_flex::frame::FrameInfo::new()
            .block_size(lz4_flex::frame::BlockSize::Max64KB)
            .block_mode(lz4_flex::frame::BlockMode::Independent);
        let mut encoder = lz4_flex::frame::FrameEncoder::with_frame_info(info, out);
        encoder.write_all(input).map_err(|e| failed(&e))?;
        encoder.finish().map_err(|e| failed(&e))?;
        Ok(())
    }
}

#[cfg(not(feature = "lz4"))]
mod lz4 {
    use super::{Compression, DecodeErrorKind, RecordEncodeError};

    pub(super) fn decompress(_input: &[u8], _max: usize) -> Result<Vec<u8>, DecodeErrorKind> {
        Err(DecodeErrorKind::UnsupportedCompression(Compression::Lz4.id()))
    }

    pub(super) fn compress(_input: &[u8], _out: &mut Vec<u8>) -> Result<(), RecordEncodeError> {
        Err(RecordEncodeError::UnsupportedCompression(Compression::Lz4))
    }
}

#[cfg(feature = "zstd")]
mod zstd {
    use super::{failed, read_capped, DecodeErrorKind, RecordEncodeError};

    /// The level Kafka's producer uses by default.
    const LEVEL: i32 = 3;

    pub(super) fn decompress(input: &[u8], max: usize) -> Result<Vec<u8>, DecodeErrorKind> {
        let decoder = ::zstd::stream::read::Decoder::with_buffer(input)
            .map_err(|e| DecodeErrorKind::Decompression(format!("zstd: {e}")))?;
        // A frame's header usually carries its content size (librdkafka's and Java's do).
        let size_hint = ::zstd::zstd_safe::get_frame_content_size(input)
            .ok()
            .flatten()
            .and_then(|n| usize::try_from(n).ok());
        read_capped(decoder, input.len(), size_hint, max)
    }

    pub(super) fn compress(input: &[u8], out: &mut Vec<u8>) -> Result<(), RecordEncodeError> {
        // Straight into `out` after what it holds (its room reserved by the caller), not into
        // a buffer of its own that is then copied.
        let start = out.len() as u64;
        let mut after = std::io::Cursor::new(out);
        after.set_position(start);
        ::zstd::bulk::Compressor::new(LEVEL)
            .and_then(|mut compressor| compressor.compress_to_buffer(input, &mut after))
            .map_err(|e| failed(&e))?;
        Ok(())
    }

    #[cfg(test)]
    mod memory_tests {
        use super::LEVEL;
        use crate::protocol::records::compression::{compressor_memory, max_compressed_len, Compression};

        /// zstd allocates in C, past any Rust allocator: the context `compress` creates, asked
        /// for its size after compressing (tables sized for the input, its workspace included).
        #[test]
        fn the_zstd_context_of_any_input_fits_the_bound_it_is_charged() {
            let bound = compressor_memory(Compression::Zstd);
            let mut largest = 0;
            for len in [1usize, 1 << 10, 64 << 10, 1 << 20, 4 << 20] {
                let input: Vec<u8> = (0..len).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
                let mut compressor = ::zstd::bulk::Compressor::new(LEVEL).unwrap();
                let mut out = Vec::with_capacity(max_compressed_len(Compression::Zstd, len));
                compressor.compress_to_buffer(&input, &mut out).unwrap();
                let context = compressor.context_mut().sizeof();
                assert!(context <= bound, "{len} bytes: a {context}-byte context, over the {bound} charged");
                largest = largest.max(context);
            }
            eprintln!("zstd: a context of at most {largest} bytes, {bound} charged");
            assert!(
                largest * 10 >= bound * 6,
                "the bound ({bound}) is far above the largest context ({largest})"
            );
        }
    }
}

#[cfg(not(feature = "zstd"))]
mod zstd {
    use super::{Compression, DecodeErrorKind, RecordEncodeError};

    pub(super) fn decompress(_input: &[u8], _max: usize) -> Result<Vec<u8>, DecodeErrorKind> {
        Err(DecodeErrorKind::UnsupportedCompression(Compression::Zstd.id()))
    }

    pub(super) fn compress(_input: &[u8], _out: &mut Vec<u8>) -> Result<(), RecordEncodeError> {
        Err(RecordEncodeError::UnsupportedCompression(Compression::Zstd))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[cfg(any(feature = "gzip", feature = "snappy", feature = "lz4", feature = "zstd"))]
    const MIB: usize = 1024 * 1024;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn every_available_codec_round_trips(data in proptest::collection::vec(any::<u8>(), 0..3000), repeat in 1usize..40) {
            // Repeating makes the input compressible, so the codecs' match paths run too.
            let input = data.repeat(repeat);
            for codec in Compression::ALL.into_iter().filter(|c| c.is_available()) {
                let mut packed = Vec::new();
                compress(codec, &input, &mut packed).unwrap();
                prop_assert_eq!(&decompress(codec, &packed, input.len()).unwrap(), &input, "{}", codec);
            }
        }

        #[cfg(feature = "lz4")]
        #[test]
        fn an_lz4_frames_output_bound_holds_its_output_and_overshoots_by_less_than_a_block(
            data in proptest::collection::vec(any::<u8>(), 0..3000),
            repeat in 1usize..200,
            content_size in any::<bool>(),
        ) {
            use std::io::Write as _;
            let input = data.repeat(repeat);
            // Random bytes make stored (uncompressed) blocks, repeats compressed ones.
            let info = lz4_flex::frame::FrameInfo::new()
                .block_size(lz4_flex::frame::BlockSize::Max64KB)
                .content_size(content_size.then_some(input.len() as u64));
            let mut encoder = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
            encoder.write_all(&input).unwrap();
            let frame = encoder.finish().unwrap();
            let bound = lz4::output_bound(&frame).expect("a frame's bound");
            prop_assert!(bound >= input.len() && bound < input.len() + 64 * 1024, "{} for {}", bound, input.len());
            // Cut anywhere before the end mark, the frame gives no bound.
            for cut in [0, 3, 6, frame.len() / 2, frame.len() - 4].into_iter().filter(|c| *c < frame.len() - 4) {
                if !content_size {
                    prop_assert_eq!(lz4::output_bound(&frame[..cut]), None, "cut at {}", cut);
                }
            }
        }

        #[test]
        fn every_codec_writes_within_its_bound_into_the_room_reserved_for_it(
            random in proptest::collection::vec(any::<u8>(), 0..200_000),
            data in proptest::collection::vec(any::<u8>(), 1..64),
            repeat in 0usize..4000,
            already in 0usize..100,
        ) {
            // Random bytes are each codec's worst case (stored blocks), repeats its best.
            for input in [random, data.repeat(repeat)] {
                for codec in Compression::ALL.into_iter().filter(|c| c.is_available()) {
                    let mut out = vec![7u8; already];
                    compress(codec, &input, &mut out).unwrap();
                    let bound = max_compressed_len(codec, input.len());
                    prop_assert!(out.len() - already <= bound, "{}: {} bytes for {}, bound {}", codec, out.len() - already, input.len(), bound);
                    prop_assert!(out.capacity() <= already + bound, "{}: the output grew past its reserved room", codec);
                    prop_assert_eq!(&out[..already], &vec![7u8; already][..], "{}: what was there before", codec);
                    prop_assert_eq!(&decompress(codec, &out[already..], input.len()).unwrap(), &input, "{}", codec);
                }
            }
        }

        #[test]
        fn garbage_never_panics_any_decompressor(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            for codec in Compression::ALL {
                let _ = decompress(codec, &data, 64 * 1024);
            }
        }
    }

    #[test]
    fn a_codec_compiled_out_is_an_error_not_a_panic() {
        for codec in Compression::ALL.into_iter().filter(|c| !c.is_available()) {
            assert_eq!(
                decompress(codec, b"x", 10).unwrap_err(),
                DecodeErrorKind::UnsupportedCompression(codec.id())
            );
            assert_eq!(
                compress(codec, b"x", &mut Vec::new()).unwrap_err(),
                RecordEncodeError::UnsupportedCompression(codec)
            );
        }
    }

    #[test]
    fn codec_ids_round_trip_and_unknown_ids_are_none() {
        for c in Compression::ALL {
            assert_eq!(Compression::from_id(c.id()), Some(c));
        }
        assert_eq!(Compression::from_id(5), None);
        assert_eq!(Compression::Zstd.to_string(), "zstd");
    }

    #[test]
    fn output_exactly_at_the_cap_is_accepted_and_one_byte_more_is_not() {
        let input = vec![7u8; 4096];
        for codec in Compression::ALL.into_iter().filter(|c| c.is_available()) {
            let mut packed = Vec::new();
            compress(codec, &input, &mut packed).unwrap();
            assert_eq!(decompress(codec, &packed, 4096).unwrap().len(), 4096, "{codec}");
            assert_eq!(
                decompress(codec, &packed, 4095).unwrap_err(),
                DecodeErrorKind::DecompressedTooLarge { max: 4095 },
                "{codec}"
            );
        }
    }

    #[cfg(feature = "gzip")]
    #[test]
    fn a_gzip_bomb_of_a_gibibyte_of_zeros_is_rejected_at_the_cap() {
        // 1,024 concatenated gzip members of 1 MiB of zeros each: about 1 MiB of input that
        // inflates to 1 GiB. Java's GZIPInputStream (and this decoder) read every member.
        let mut member = Vec::new();
        compress(Compression::Gzip, &vec![0u8; MIB], &mut member).unwrap();
        let bomb = member.repeat(1024);
        assert!(bomb.len() < 2 * MIB, "bomb is {} bytes", bomb.len());
        let err = decompress(Compression::Gzip, &bomb, MIB).unwrap_err();
        assert_eq!(err, DecodeErrorKind::DecompressedTooLarge { max: MIB });
        // Under the cap the same members are fine.
        assert_eq!(decompress(Compression::Gzip, &member.repeat(2), 2 * MIB).unwrap().len(), 2 * MIB);
    }

    #[cfg(feature = "gzip")]
    #[test]
    fn a_gzip_trailer_that_lies_about_the_size_is_an_error_not_a_big_allocation() {
        let mut member = Vec::new();
        compress(Compression::Gzip, b"twelve bytes", &mut member).unwrap();
        let n = member.len();
        // ISIZE (the last four bytes) claims 4 GiB: the output is sized by the input's
        // length times deflate's maximum ratio instead, and zlib's length check fails.
        member[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = decompress(Compression::Gzip, &member, 64 * MIB).unwrap_err();
        assert!(matches!(err, DecodeErrorKind::Decompression(ref m) if m.starts_with("gzip")), "{err:?}");
        // Claiming too little is no better.
        member[n - 4..].copy_from_slice(&1u32.to_le_bytes());
        assert!(decompress(Compression::Gzip, &member, 64 * MIB).is_err());
    }

    #[cfg(feature = "zstd")]
    #[test]
    fn a_zstd_bomb_is_rejected_at_the_cap() {
        let mut frame = Vec::new();
        compress(Compression::Zstd, &vec![0u8; 4 * MIB], &mut frame).unwrap();
        let bomb = frame.repeat(64); // 256 MiB of output from a few KiB
        let err = decompress(Compression::Zstd, &bomb, MIB).unwrap_err();
        assert_eq!(err, DecodeErrorKind::DecompressedTooLarge { max: MIB });
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn an_lz4_bomb_is_rejected_at_the_cap() {
        let mut frame = Vec::new();
        compress(Compression::Lz4, &vec![0u8; 8 * MIB], &mut frame).unwrap();
        let err = decompress(Compression::Lz4, &frame, MIB).unwrap_err();
        assert_eq!(err, DecodeErrorKind::DecompressedTooLarge { max: MIB });
    }

    #[cfg(feature = "snappy")]
    #[test]
    fn a_snappy_block_claiming_4_gib_is_rejected_before_allocating() {
        // Raw snappy starts with the uncompressed length as a varint: 0xffffffff.
        let claim = [0xff, 0xff, 0xff, 0xff, 0x0f, 0x00];
        let err = decompress(Compression::Snappy, &claim, MIB).unwrap_err();
        assert_eq!(err, DecodeErrorKind::DecompressedTooLarge { max: MIB });
        // The same claim inside xerial framing.
        let mut framed = XERIAL_MAGIC.to_vec();
        framed.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 6]);
        framed.extend_from_slice(&claim);
        let err = decompress(Compression::Snappy, &framed, MIB).unwrap_err();
        assert_eq!(err, DecodeErrorKind::DecompressedTooLarge { max: MIB });
    }

    /// Raw snappy holding `text` as one literal: uncompressed length varint, then a literal
    /// tag ((len − 1) << 2, for len ≤ 60) and the bytes.
    #[cfg(feature = "snappy")]
    fn raw_snappy_literal(text: &[u8]) -> Vec<u8> {
        assert!(!text.is_empty() && text.len() <= 60);
        let mut out = vec![text.len() as u8, ((text.len() - 1) as u8) << 2];
        out.extend_from_slice(text);
        out
    }

    #[cfg(feature = "snappy")]
    #[test]
    fn java_xerial_framed_snappy_is_read() {
        // What Java's SnappyOutputStream writes: magic, version 1, compatible version 1, then
        // blocks of i32 length + raw snappy.
        let mut fixture = vec![0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1];
        for block in [&b"hello"[..], &b", xerial world"[..]] {
            let raw = raw_snappy_literal(block);
            fixture.extend_from_slice(&(raw.len() as i32).to_be_bytes());
            fixture.extend_from_slice(&raw);
        }
        assert_eq!(decompress(Compression::Snappy, &fixture, 1024).unwrap(), b"hello, xerial world");
        // Raw snappy without the framing is read too.
        assert_eq!(decompress(Compression::Snappy, &raw_snappy_literal(b"raw"), 1024).unwrap(), b"raw");
        // A block length running past the input is an error, not a panic.
        let mut cut = fixture.clone();
        cut.truncate(fixture.len() - 3);
        assert!(matches!(
            decompress(Compression::Snappy, &cut, 1024),
            Err(DecodeErrorKind::Decompression(_))
        ));
    }

    #[cfg(feature = "snappy")]
    #[test]
    fn kwire_writes_the_xerial_framing() {
        let input = vec![b'x'; 100 * 1024];
        let mut packed = Vec::new();
        compress(Compression::Snappy, &input, &mut packed).unwrap();
        assert_eq!(packed[..8], XERIAL_MAGIC);
        assert_eq!(packed[8..16], [0, 0, 0, 1, 0, 0, 0, 1]);
        assert_eq!(decompress(Compression::Snappy, &packed, input.len()).unwrap(), input);
    }
}
