//! The schema interpreter on every response Kafka defines: byte 0 picks the API (key, else by
//! index into the schema table), byte 1 the version, the rest is decoded as the body and as a
//! frame with a response header (`kwire_fuzz::schema`).
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some((spec, version, rest)) = kwire_fuzz::pick_any_api(data) {
        kwire_fuzz::schema(spec, kwire_fuzz::Kind::Response, version, &Bytes::copy_from_slice(rest));
    }
});
