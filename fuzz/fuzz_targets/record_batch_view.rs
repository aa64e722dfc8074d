//! `BatchView::parse` and its record iterator: byte 0 holds the options (bit 0: verify the CRC),
//! the rest is the batch.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [flags, rest @ ..] = data else { return };
    kwire_fuzz::check_view_matches_owning(rest, &kwire_fuzz::record_options(*flags));
});
