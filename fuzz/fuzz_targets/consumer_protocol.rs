//! The consumer protocol's decoders (`ConsumerSubscription::decode`, `ConsumerAssignment::decode`:
//! what a group leader runs on every member's JoinGroup metadata, and a member on its SyncGroup
//! assignment): no panic, and whatever decodes re-encodes to the fields it was read from and
//! reads back equal.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kwire_fuzz::consumer_protocol(data));
