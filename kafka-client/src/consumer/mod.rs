//! The consumer: [`Consumer`](crate::Consumer) reads assigned partitions (by hand, or as a
//! group member) from positions offset-engine vouches for, hands out their records chunk by
//! chunk, and commits what was handed out; [`GroupMembership`](crate::GroupMembership) is the
//! membership alone, for a reader that fetches by itself (kwire-stream's member mode).
//!
//! Owns: the consumer's configuration (`config`, the property names in
//! `config/consumer_properties.rs`), where each partition starts (`start_positions`: the
//! group's commit checked against the log before the first fetch), the application's hooks
//! (`listener`) and its errors (`error`). It reads through `fetch/` (a following
//! [`Fetcher`](crate::Fetcher)) and commits through `groups/`; group membership itself is
//! `groups/member/`, driven from here.
//!
//! May import `cluster/`, `fetch/`, `groups/` and the shared files at the crate's top.

pub(crate) mod config;
#[allow(clippy::module_inception)] // the Consumer type's own file, as producer/ has handle.rs
pub(crate) mod consumer;
pub(crate) mod error;
pub(crate) mod group_membership;
pub(crate) mod listener;
pub(crate) mod member_wire;
pub(crate) mod membership;
pub(crate) mod start_positions;
