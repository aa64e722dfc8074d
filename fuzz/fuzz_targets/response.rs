//! Every response decoder: byte 0 picks the API, byte 1 the version, the rest is decoded as the
//! body (`decode_body`) and as a frame with a response header (`decode_response`).
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some((spec, version, rest)) = kwire_fuzz::pick_api(data) {
        kwire_fuzz::response(spec, version, &Bytes::copy_from_slice(rest));
    }
});
