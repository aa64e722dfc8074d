//! The lz4 decompressor under a small output cap (`kwire_fuzz::DECOMPRESS_CAP`).
#![no_main]

use kafka_wire::protocol::records::Compression;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kwire_fuzz::decompress(Compression::Lz4, data));
