//! The streaming decompressor (`Decompressor`) against the whole-buffer one: byte 0 picks the
//! codec (low two bits: gzip, snappy, lz4, zstd), byte 1 the read size (1–256 bytes), the rest
//! is the compressed input; both under `kwire_fuzz::DECOMPRESS_CAP`.
#![no_main]

use kafka_wire::protocol::records::Compression;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [codec, step, input @ ..] = data else { return };
    let codec =
        [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd][usize::from(codec & 3)];
    kwire_fuzz::streaming_matches_whole(codec, input, usize::from(*step) + 1);
});
