//! The broker's SCRAM messages (`kafka_wire::protocol::scram`, what kwire's SASL client reads):
//! no panic, and what parses keeps the parsers' promises.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kwire_fuzz::scram_server_message(data));
