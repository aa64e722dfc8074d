//! The kafka-consumer-groups CSV reader (`offset_engine::formats::from_csv`, what
//! `kwire reset --to file:CSV` reads): no panic, and whatever it accepts prints and reads back
//! equal.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kwire_fuzz::consumer_groups_csv(data));
