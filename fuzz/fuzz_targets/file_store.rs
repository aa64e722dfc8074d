//! The file offset store's JSON parser (`kwire_stores::file::decode`, what `load` runs on
//! the file's bytes), decoded as group `g`: no panic, and whatever it accepts encodes and
//! decodes back to the same offsets.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kwire_fuzz::file_store_document(data));
