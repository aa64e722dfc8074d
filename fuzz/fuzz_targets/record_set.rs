//! `RecordSet::decode` (magic 2 and legacy magic 0/1, cut-short tails): byte 0 holds the options
//! (bit 0: verify CRCs, bits 1-2: legacy nesting cap), the rest is the `records` field.
#![no_main]

use bytes::Bytes;
use kafka_wire::protocol::records::RecordSet;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [flags, rest @ ..] = data else { return };
    let opts = kwire_fuzz::record_options(*flags);
    let records = Bytes::copy_from_slice(rest);
    if let Ok(set) = RecordSet::decode(&records, &opts) {
        assert!(set.truncated_tail_bytes <= records.len());
        kwire_fuzz::check_set_round_trip(&set, &opts);
    }
});
