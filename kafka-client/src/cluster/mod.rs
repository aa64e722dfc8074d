//! The [`Client`](crate::Client) and what it keeps per cluster: its connection pool (opened,
//! negotiated and SASL-authenticated per broker), the metadata cache, calls routed to partition
//! leaders and retried with backoff, group and transaction coordinators, and the per-broker fetch
//! state the pool holds (incremental fetch sessions, preferred read replicas).
//!
//! May import `net/`, `security/` and the shared files at the crate's top; the calls built on
//! the client (`fetch/`, `producer/`, `groups/`, `admin.rs`) import it, never the other way.

pub(crate) mod client;
pub(crate) mod client_config;
pub(crate) mod coordinator;
pub(crate) mod fetch_session;
pub(crate) mod metadata;
pub(crate) mod read_replica;
pub(crate) mod retry;
pub(crate) mod route_plan;
pub(crate) mod router;
pub(crate) mod sasl;
