#![warn(missing_docs)]

//! kwire's offset stores, each an [`OffsetStore`](offset_store::OffsetStore):
//!
//! - [`KafkaGroupStore`] (feature `kafka`): the group's committed offsets in Kafka, with the
//!   topic id in each offset's metadata;
//! - [`FileStore`]: one JSON document per group, safe in a folder other users and processes
//!   write to (see [`file`](mod@file));
//! - [`ZkStore`] (feature `zookeeper`): the Kafka 0.8 ZooKeeper layout, over `kwire-zk`;
//! - [`SparkStore`]: a Structured Streaming checkpoint folder (see [`spark`](mod@spark)).
//!
//! [`open`] turns a [`StoreSpec`](offset_store::StoreSpec) into one of them, so the CLI, the
//! stream driver and other front ends name stores the same way.

pub mod file;
#[cfg(feature = "kafka")]
pub mod kafka;
#[cfg(all(feature = "kafka", feature = "zookeeper"))]
mod open;
pub mod spark;
#[cfg(feature = "zookeeper")]
pub mod zk;

pub use file::{FileStore, FileStoreError};
#[cfg(feature = "kafka")]
pub use kafka::KafkaGroupStore;
#[cfg(feature = "zookeeper")]
pub use kwire_zk::{acl::UnknownAclPolicy, AclPolicy, TlsError as ZkTlsError, ZkAuth, ZkTls};
#[cfg(all(feature = "kafka", feature = "zookeeper"))]
pub use open::{open, OpenOptions};
pub use spark::{SparkStore, SparkStoreError};
#[cfg(feature = "zookeeper")]
pub use zk::ZkStore;
