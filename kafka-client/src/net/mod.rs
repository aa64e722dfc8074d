//! Frames on the wire: `host:port` parsing, the byte stream (TCP, or TLS over it), the pipelined
//! connection with its correlation ids, ApiVersions negotiation, and the trace hook that sees
//! every frame.
//!
//! May import `security/` (the TLS handshake and settings a transport needs) and the shared
//! files at the crate's top (`error.rs`, `sync.rs`); nothing above it.

pub(crate) mod address;
pub(crate) mod connection;
pub(crate) mod negotiate;
pub(crate) mod trace;
pub(crate) mod transport;
