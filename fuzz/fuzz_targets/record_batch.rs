//! `RecordBatch::decode`: byte 0 holds the options (bit 0: verify the CRC), the rest is the batch.
#![no_main]

use bytes::Bytes;
use kafka_wire::protocol::records::RecordBatch;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [flags, rest @ ..] = data else { return };
    let opts = kwire_fuzz::record_options(*flags);
    if let Ok(batch) = RecordBatch::decode(Bytes::copy_from_slice(rest), &opts) {
        kwire_fuzz::check_batch_round_trip(&batch, &opts);
    }
});
