//! The group member's machines (classic and KIP-848) fed with arbitrary JoinGroup, SyncGroup,
//! Heartbeat, LeaveGroup and ConsumerGroupHeartbeat answers, timeouts, polls and closes, as
//! the consumer's membership task hands them over: never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kwire_fuzz::member_answers(data));
