//! Producing: the one-call produce, and the [`Producer`](crate::Producer) — its accumulator of
//! batches, the sender task, delivery results, the partitioner, and transactions (their protocol
//! version, their error decisions).
//!
//! May import `cluster/`, `net/`, `groups/` (the offsets a transaction commits) and the shared
//! files at the crate's top. `fetch/` takes the topic-id helpers of `produce.rs`.

pub(crate) mod accumulator;
pub(crate) mod config;
pub(crate) mod deliveries;
pub(crate) mod handle;
pub(crate) mod partitioner;
pub(crate) mod produce;
pub(crate) mod sender;
pub(crate) mod shared;
pub(crate) mod transaction;
pub(crate) mod transaction_error;
pub(crate) mod transaction_version;
pub(crate) mod transactional;
