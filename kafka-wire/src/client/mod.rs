//! The tokio client.
