//! The ZooKeeper offset store: Kafka 0.8's `/consumers/<group>/offsets/<topic>/<partition>`
//! layout, byte for byte, with kwire's extra metadata (topic id, leader epoch) kept beside it.

pub mod error;
pub mod layout;
pub mod meta;

pub use error::{Error, Result};
