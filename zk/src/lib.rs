#![warn(missing_docs)]
#![doc = include_str!("../README.md")]

pub mod acl;
pub mod auth;
pub mod error;
pub mod layout;
pub mod meta;
pub mod probe;
pub mod store;
pub mod stored;
pub mod tls;

pub use acl::AclPolicy;
pub use auth::ZkAuth;
pub use error::{Error, Result, ZooKeeperError};
pub use layout::{ConnectString, Layout};
pub use store::{ZkOffsetStore, DEFAULT_RETRY_BUDGET};
pub use stored::StoredOffset;
pub use tls::{install_ring_provider, TlsError, ZkTls};
