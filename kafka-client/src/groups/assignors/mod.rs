//! The classic consumer group's client-side assignors, sans-IO. In the classic protocol
//! (JoinGroup/SyncGroup) the coordinator elects one member leader and hands it every member's
//! subscription; the leader runs the assignor the group agreed on and sends each member its
//! partitions in SyncGroup. Here are the assignors as pure functions of what JoinGroup and
//! Metadata answered; decoding and encoding the ConsumerProtocol subscription and assignment
//! is the member's.
//!
//! `contract.rs` holds the types and the trait (rather than this file, so that the assignors,
//! which import them, are not imported from by a file they import); `prepared.rs` settles the
//! input once for all assignors.

// The classic group member (issue 35) is the caller; until it lands, only the tests call in.
#![cfg_attr(not(test), expect(dead_code, reason = "the classic group member (issue 35) calls in"))]

pub(crate) mod contract;
pub(crate) mod cooperative_sticky;
pub(crate) mod prepared;
pub(crate) mod range;
pub(crate) mod round_robin;
pub(crate) mod sticky_claims;
pub(crate) mod sticky_general;
pub(crate) mod sticky_quota;
#[cfg(test)]
pub(crate) mod test_support;
