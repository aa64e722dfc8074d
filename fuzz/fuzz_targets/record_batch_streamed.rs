//! `StreamedBatch` (a batch read as it decompresses) against `BatchView`: byte 0 holds the
//! options as in `record_batch`, byte 1 the chunk size (16 × (byte + 1) bytes), the rest is the
//! batch.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [flags, chunk, rest @ ..] = data else { return };
    let opts = kwire_fuzz::record_options(*flags);
    kwire_fuzz::check_streamed_matches_view(rest, &opts, 16 * (usize::from(*chunk) + 1));
});
