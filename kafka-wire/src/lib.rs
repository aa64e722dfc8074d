//! kafka-wire: a hand-written Kafka wire-protocol codec ([`protocol`], sans-IO) and a tokio
//! client (`client`, cargo feature `client`) that negotiates versions and routes each request to
//! the right broker.
//!
//! With `default-features = false` the crate is the codec alone (bytes and the CRC crates;
//! nothing async, no serde). Features: `client` (tokio), `json` (`protocol::json`, serde_json), and one per compression codec (`gzip`,
//! `snappy`, `lz4`, `zstd`; `compression` turns on all four). Default: `client` and
//! `compression`.

#[cfg(feature = "client")]
pub mod client;
pub mod protocol;
