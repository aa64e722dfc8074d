//! Consumer groups: as a non-member, committed offsets (fetched and committed) and listing and
//! describing groups of every type (classic, consumer protocol, share groups); as a member,
//! the sans-IO membership machines of `member/` (classic JoinGroup/SyncGroup and KIP-848's
//! ConsumerGroupHeartbeat), which the consumer's membership task runs, and the client-side
//! assignors the classic group's elected leader runs (`assignors/`, sans-IO).
//!
//! May import `cluster/` and the shared files at the crate's top; `producer/` takes the offsets
//! a transaction commits.

pub(crate) mod assignors;
pub(crate) mod commit_metadata;
pub(crate) mod committed_offsets;
pub(crate) mod description;
pub(crate) mod group_describe;
pub(crate) mod group_members;
pub(crate) mod group_metadata;
pub(crate) mod member;
pub(crate) mod non_member;
pub(crate) mod share_groups;
