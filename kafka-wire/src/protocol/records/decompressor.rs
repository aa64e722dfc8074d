//! Streaming decompression: a compressed batch's record bytes read a piece at a time into a
//! buffer the caller owns, so a batch that decompresses to more than a reader wants to hold at
//! once is still read ([`super::StreamedBatch`]).
//!
//! The output is the same as [`super::compression::decompress`]'s, byte for byte and error for
//! error class (a property test and a fuzz target hold the two side by side). The cap
//! (`max`) bounds the total output as there: one byte past it is
//! [`DecodeErrorKind::DecompressedTooLarge`], and nothing is buffered past it.
//!
//! Memory per codec, besides the caller's buffer: gzip a 32 KiB window; lz4 one frame block
//! (64 KiB from Kafka's producers, at most 4 MiB); zstd its window (Kafka's producers: ≤ 8 MiB at
//! level 3, usually the batch size); snappy one block — 32 KiB in the xerial framing Kafka's
//! producers write, the whole output for raw snappy (one block by definition, sized from its
//! header and checked against the cap before anything is allocated).
//!
//! The compressed input is owned (a [`Bytes`], shared, not copied), so a stream can be kept past
//! the buffer it was read from: a fetch that stops inside a batch reads on from the same state
//! in its next round instead of decompressing the batch again from its start.

use bytes::{Buf, Bytes};

use super::compression::Compression;
use crate::protocol::error::DecodeErrorKind;

/// One compressed input read as a stream of its decompressed bytes, at most `max` in total.
pub struct Decompressor {
    source: Source,
    produced: usize,
    max: usize,
}

impl std::fmt::Debug for Decompressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decompressor")
            .field("produced", &self.produced)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

enum Source {
    /// Uncompressed input, served as it is (for callers that do not special-case it).
    Plain(Bytes),
    #[cfg(feature = "gzip")]
    Gzip(Box<gzip::Stream>),
    #[cfg(feature = "snappy")]
    Snappy(snappy::Stream),
    #[cfg(feature = "lz4")]
    Lz4(Box<lz4_flex::frame::FrameDecoder<bytes::buf::Reader<Bytes>>>),
    #[cfg(feature = "zstd")]
    Zstd(Box<::zstd::stream::read::Decoder<'static, bytes::buf::Reader<Bytes>>>),
}

impl Decompressor {
    /// A stream of `input`'s decompressed bytes. Fails at once only for a codec compiled out of
    /// this build or a zstd context that cannot be created; malformed input fails on
    /// [`Decompressor::read`].
    pub fn new(codec: Compression, input: Bytes, max: usize) -> Result<Self, DecodeErrorKind> {
        let source = match codec {
            Compression::None => Source::Plain(input),
            #[cfg(feature = "gzip")]
            Compression::Gzip => Source::Gzip(Box::new(gzip::Stream::new(input))),
            #[cfg(feature = "snappy")]
            Compression::Snappy => Source::Snappy(snappy::Stream::new(input)),
            #[cfg(feature = "lz4")]
            Compression::Lz4 => Source::Lz4(Box::new(lz4_flex::frame::FrameDecoder::new(input.reader()))),
            #[cfg(feature = "zstd")]
            Compression::Zstd => Source::Zstd(Box::new(
                ::zstd::stream::read::Decoder::with_buffer(input.reader())
                    .map_err(|e| DecodeErrorKind::Decompression(format!("zstd: {e}")))?,
            )),
            #[allow(unreachable_patterns)] // every codec compiled in
            other => return Err(DecodeErrorKind::UnsupportedCompression(other.id())),
        };
        Ok(Self { source, produced: 0, max })
    }

    /// The cap on the total output this stream was made with.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Decompressed bytes handed out so far.
    pub fn produced(&self) -> usize {
        self.produced
    }

    /// Fills as much of `out` as the stream has (at least one byte unless the stream has
    /// ended or `out` is empty); `Ok(0)` for a non-empty `out` is the end of the stream.
    pub fn read(&mut self, out: &mut [u8]) -> Result<usize, DecodeErrorKind> {
        if out.is_empty() {
            return Ok(0);
        }
        // One byte more than the cap allows is asked for, so output that passes the cap is
        // seen without being kept.
        let room = self.max.saturating_sub(self.produced).saturating_add(1).min(out.len());
        let out = &mut out[..room];
        let n = match &mut self.source {
            Source::Plain(rest) => {
                let n = rest.len().min(out.len());
                out[..n].copy_from_slice(&rest[..n]);
                rest.advance(n);
                n
            }
            #[cfg(feature = "gzip")]
            Source::Gzip(s) => s.read(out)?,
            #[cfg(feature = "snappy")]
            Source::Snappy(s) => s.read(out, self.max - self.produced).map_err(|e| match e {
                DecodeErrorKind::DecompressedTooLarge { .. } => {
                    DecodeErrorKind::DecompressedTooLarge { max: self.max }
                }
                e => e,
            })?,
            #[cfg(feature = "lz4")]
            Source::Lz4(d) => read_io(d.as_mut(), out, "lz4")?,
            #[cfg(feature = "zstd")]
            Source::Zstd(d) => read_io(d.as_mut(), out, "zstd")?,
        };
        self.produced += n;
        if self.produced > self.max {
            return Err(DecodeErrorKind::DecompressedTooLarge { max: self.max });
        }
        Ok(n)
    }

    /// Reads the stream to its end into `out` (appended), for whole-buffer callers and tests.
    pub fn read_to_end(&mut self, out: &mut Vec<u8>) -> Result<(), DecodeErrorKind> {
        const STEP: usize = 64 * 1024;
        loop {
            let start = out.len();
            out.resize(start + STEP, 0);
            let n = self.read(&mut out[start..]);
            let n = n.inspect_err(|_| out.truncate(start))?;
            out.truncate(start + n);
            if n == 0 {
                return Ok(());
            }
        }
    }
}

/// One `read` of an `io::Read` decoder; interrupted reads are retried, other errors name the
/// codec.
#[cfg(any(feature = "lz4", feature = "zstd"))]
fn read_io(reader: &mut impl std::io::Read, out: &mut [u8], codec: &str) -> Result<usize, DecodeErrorKind> {
    loop {
        match reader.read(out) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(DecodeErrorKind::Decompression(format!("{codec}: {e}"))),
        }
    }
}

#[cfg(feature = "gzip")]
mod gzip {
    use bytes::{Buf, Bytes};
    use zlib_rs::{Inflate, InflateFlush, Status};

    use super::DecodeErrorKind;

    /// zlib's `window_bits` for a gzip wrapper around a 32 KiB window (16 + 15).
    const GZIP_WINDOW_BITS: u8 = 31;

    /// Concatenated gzip members, as Java's `GZIPInputStream` reads them.
    pub(super) struct Stream {
        rest: Bytes,
        inflate: Inflate,
        ended: bool,
    }

    impl Stream {
        pub(super) fn new(input: Bytes) -> Self {
            Self { rest: input, inflate: Inflate::new(true, GZIP_WINDOW_BITS), ended: false }
        }

        pub(super) fn read(&mut self, out: &mut [u8]) -> Result<usize, DecodeErrorKind> {
            let mut produced = 0;
            while !self.ended && produced < out.len() {
                let (in_before, out_before) = (self.inflate.total_in(), self.inflate.total_out());
                let status = self
                    .inflate
                    .decompress(&self.rest, &mut out[produced..], InflateFlush::NoFlush)
                    .map_err(|e| DecodeErrorKind::Decompression(format!("gzip: {}", e.as_str())))?;
                let consumed = usize::try_from(self.inflate.total_in() - in_before).unwrap_or(usize::MAX);
                let written = usize::try_from(self.inflate.total_out() - out_before).unwrap_or(usize::MAX);
                self.rest.advance(consumed.min(self.rest.len()));
                produced += written;
                match status {
                    Status::StreamEnd if self.rest.is_empty() => self.ended = true,
                    // Another member follows.
                    Status::StreamEnd => self.inflate = Inflate::new(true, GZIP_WINDOW_BITS),
                    Status::Ok | Status::BufError if consumed == 0 && written == 0 => {
                        return Err(DecodeErrorKind::Decompression("gzip: the stream ends early".to_owned()));
                    }
                    Status::Ok | Status::BufError => {}
                }
            }
            Ok(produced)
        }
    }
}

#[cfg(feature = "snappy")]
mod snappy {
    use bytes::{Buf, Bytes};

    use super::super::compression::XERIAL_MAGIC;
    use super::DecodeErrorKind;

    /// Magic, then i32 version and i32 minimum compatible version.
    const XERIAL_HEADER_LEN: usize = 16;

    fn snap_error(e: &snap::Error) -> DecodeErrorKind {
        DecodeErrorKind::Decompression(format!("snappy: {e}"))
    }

    fn corrupt(what: &str) -> DecodeErrorKind {
        DecodeErrorKind::Decompression(format!("snappy: {what}"))
    }

    /// Where the blocks come from.
    enum Blocks {
        /// The xerial framing's length-prefixed blocks not yet decompressed.
        Xerial(Bytes),
        /// Raw snappy: the input is one block, `None` once taken.
        Raw(Option<Bytes>),
    }

    /// One block decompressed at a time; the current block's output is served from
    /// `block[served..]`.
    pub(super) struct Stream {
        blocks: Blocks,
        decoder: snap::raw::Decoder,
        block: Vec<u8>,
        served: usize,
    }

    impl Stream {
        pub(super) fn new(input: Bytes) -> Self {
            let xerial = input.starts_with(&XERIAL_MAGIC[..]) && input.len() >= XERIAL_HEADER_LEN;
            let blocks = if xerial {
                Blocks::Xerial(input.slice(XERIAL_HEADER_LEN..))
            } else {
                Blocks::Raw(Some(input))
            };
            Self { blocks, decoder: snap::raw::Decoder::new(), block: Vec::new(), served: 0 }
        }

        /// `allowed`: how much more output the cap allows; a block whose header claims more is
        /// refused ([`DecodeErrorKind::DecompressedTooLarge`], its `max` the caller's to fill
        /// in) before it is allocated.
        pub(super) fn read(&mut self, out: &mut [u8], allowed: usize) -> Result<usize, DecodeErrorKind> {
            while self.served == self.block.len() {
                let Some(compressed) = self.next_compressed()? else { return Ok(0) };
                let len = snap::raw::decompress_len(&compressed).map_err(|e| snap_error(&e))?;
                if len > allowed {
                    return Err(DecodeErrorKind::DecompressedTooLarge { max: allowed });
                }
                self.block.clear();
                self.block.resize(len, 0);
                let written =
                    self.decoder.decompress(&compressed, &mut self.block).map_err(|e| snap_error(&e))?;
                self.block.truncate(written);
                self.served = 0;
            }
            let n = (self.block.len() - self.served).min(out.len());
            out[..n].copy_from_slice(&self.block[self.served..self.served + n]);
            self.served += n;
            Ok(n)
        }

        /// The next compressed block; `None` at the end of the input.
        fn next_compressed(&mut self) -> Result<Option<Bytes>, DecodeErrorKind> {
            match &mut self.blocks {
                Blocks::Raw(input) => Ok(input.take()),
                Blocks::Xerial(rest) if rest.is_empty() => Ok(None),
                Blocks::Xerial(rest) => {
                    let len = rest.first_chunk::<4>().ok_or_else(|| corrupt("truncated block length"))?;
                    let len = usize::try_from(i32::from_be_bytes(*len))
                        .map_err(|_| corrupt("negative block length"))?;
                    if rest.len() - 4 < len {
                        return Err(corrupt("truncated block"));
                    }
                    rest.advance(4);
                    Ok(Some(rest.split_to(len)))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::records::compression::{compress, decompress};

    /// Every codec this build has, besides `None`.
    fn codecs() -> Vec<Compression> {
        [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd]
            .into_iter()
            .filter(|c| c.is_available())
            .collect()
    }

    /// `input` streamed through reads of `step` bytes.
    fn streamed(
        codec: Compression,
        input: &[u8],
        max: usize,
        step: usize,
    ) -> Result<Vec<u8>, DecodeErrorKind> {
        let mut d = Decompressor::new(codec, Bytes::copy_from_slice(input), max)?;
        let mut out = Vec::new();
        let mut buf = vec![0; step];
        loop {
            let n = d.read(&mut buf)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    proptest! {
        #[test]
        fn streaming_gives_what_whole_decompression_gives(
            data in proptest::collection::vec(any::<u8>(), 0..5000),
            repeat in 1usize..30,
            step in 1usize..9000,
        ) {
            let input: Vec<u8> = data.iter().copied().cycle().take(data.len() * repeat).collect();
            for codec in codecs() {
                let mut packed = Vec::new();
                compress(codec, &input, &mut packed).unwrap();
                prop_assert_eq!(&streamed(codec, &packed, usize::MAX, step).unwrap(), &input, "{}", codec);
                // Under a cap the whole input does not fit: both refuse it.
                if !input.is_empty() {
                    let max = input.len() - 1;
                    prop_assert!(decompress(codec, &packed, max).is_err());
                    prop_assert_eq!(
                        streamed(codec, &packed, max, step),
                        Err(DecodeErrorKind::DecompressedTooLarge { max })
                    );
                }
            }
        }

        #[test]
        fn garbage_is_refused_or_read_as_whole_decompression_reads_it(
            data in proptest::collection::vec(any::<u8>(), 0..300),
            step in 1usize..100,
        ) {
            for codec in codecs() {
                let whole = decompress(codec, &data, 1 << 20);
                let stream = streamed(codec, &data, 1 << 20, step);
                match whole {
                    Ok(bytes) => prop_assert_eq!(stream, Ok(bytes), "{}", codec),
                    Err(_) => prop_assert!(stream.is_err(), "{codec}: {stream:?}"),
                }
            }
        }
    }

    #[test]
    fn output_exactly_at_the_cap_is_accepted_and_one_byte_more_is_not() {
        let input = vec![7u8; 10_000];
        for codec in codecs() {
            let mut packed = Vec::new();
            compress(codec, &input, &mut packed).unwrap();
            assert_eq!(streamed(codec, &packed, 10_000, 333).unwrap().len(), 10_000, "{codec}");
            assert_eq!(
                streamed(codec, &packed, 9_999, 333),
                Err(DecodeErrorKind::DecompressedTooLarge { max: 9_999 }),
                "{codec}"
            );
        }
    }

    #[test]
    fn a_bomb_is_refused_at_the_cap_having_held_only_the_callers_buffer() {
        // 64 MiB of zeros, compressed to a few dozen KiB, read 64 KiB at a time under a
        // 1 MiB cap: refused once the cap is passed, never buffered whole.
        let zeros = vec![0u8; 64 << 20];
        for codec in codecs() {
            let mut packed = Vec::new();
            compress(codec, &zeros, &mut packed).unwrap();
            let mut d = Decompressor::new(codec, packed.into(), 1 << 20).unwrap();
            let mut buf = vec![0; 64 << 10];
            let err = loop {
                match d.read(&mut buf) {
                    Ok(0) => panic!("{codec}: the bomb was read to its end"),
                    Ok(_) => {}
                    Err(e) => break e,
                }
            };
            assert_eq!(err, DecodeErrorKind::DecompressedTooLarge { max: 1 << 20 }, "{codec}");
            assert!(d.produced() <= (1 << 20) + 1, "{codec}: {}", d.produced());
        }
    }

    #[cfg(feature = "snappy")]
    #[test]
    fn a_snappy_block_claiming_4_gib_is_refused_before_allocating() {
        // A raw snappy header claiming 2^32 − 1 bytes, then nothing.
        let claim = [0xff, 0xff, 0xff, 0xff, 0x0f];
        let mut d = Decompressor::new(Compression::Snappy, Bytes::copy_from_slice(&claim), 1 << 20).unwrap();
        let mut buf = vec![0; 4096];
        let err = loop {
            match d.read(&mut buf) {
                Ok(0) => panic!("no error"),
                Ok(_) => {}
                Err(e) => break e,
            }
        };
        assert_eq!(err, DecodeErrorKind::DecompressedTooLarge { max: 1 << 20 });
    }

    #[test]
    fn a_codec_compiled_out_is_an_error_not_a_panic() {
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
            if !codec.is_available() {
                assert_eq!(
                    Decompressor::new(codec, Bytes::from_static(b"x"), 10).unwrap_err(),
                    DecodeErrorKind::UnsupportedCompression(codec.id())
                );
            }
        }
    }
}
