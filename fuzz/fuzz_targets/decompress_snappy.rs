//! The snappy decompressor under a small output cap: byte 0 bit 0 set puts the rest behind a
//! xerial header (the Java framing), clear leaves it raw (either may still look like the other).
#![no_main]

use kafka_wire::protocol::records::compression::XERIAL_MAGIC;
use kafka_wire::protocol::records::Compression;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [flags, rest @ ..] = data else { return };
    if flags & 1 == 1 {
        let mut framed = XERIAL_MAGIC.to_vec();
        framed.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1]);
        framed.extend_from_slice(rest);
        kwire_fuzz::decompress(Compression::Snappy, &framed);
    } else {
        kwire_fuzz::decompress(Compression::Snappy, rest);
    }
});
