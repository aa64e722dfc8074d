//! A consumer-group member, sans-IO like `cluster/fetch_session.rs`: no socket, no clock, no
//! wire structs. [`model`] is what every membership machine shares; [`timing`] their clocks;
//! [`classic`] the classic protocol's member (JoinGroup / SyncGroup / Heartbeat / LeaveGroup).

// Until the group consumer's driver (issue 35) runs these machines, nothing outside the tests
// calls them; the expectation fails, and goes, once the driver uses them all.
#![cfg_attr(
    not(test),
    expect(dead_code, reason = "the driver that runs the machines is written in parallel")
)]

pub(crate) mod classic;
pub(crate) mod model;
pub(crate) mod timing;
