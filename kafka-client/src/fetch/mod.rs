//! Reading partitions: their offsets and log bounds (ListOffsets), exact offset ranges fetched
//! from the leaders, and the pipelined [`Fetcher`](crate::Fetcher).
//!
//! May import `cluster/`, `producer/produce.rs` (topic ids by name) and the shared files at the
//! crate's top; `admin.rs` takes its offset queries.

pub(crate) mod fetched;
pub(crate) mod fetcher;
pub(crate) mod offsets;
pub(crate) mod ranges;
mod streamed;
