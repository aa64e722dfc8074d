//! The ZooKeeper offset store: Kafka 0.8's `/consumers/<group>/offsets/<topic>/<partition>`
//! layout, byte for byte, with kwire's extra metadata (topic id, leader epoch) kept beside it.
//! See the crate README for the layout and the compatibility guarantees.

pub mod error;
pub mod layout;
pub mod meta;
pub mod store;
pub mod stored;

pub use error::{Error, Result, ZooKeeperError};
pub use layout::{ConnectString, Layout};
pub use store::{ZkOffsetStore, DEFAULT_RETRY_BUDGET};
pub use stored::StoredOffset;
