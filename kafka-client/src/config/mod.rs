//! Kafka's and librdkafka's property names (`bootstrap.servers`, `acks`, ...) read into
//! [`ClientConfig`](crate::ClientConfig) and [`ProducerConfig`](crate::ProducerConfig), checked
//! the way the Java client checks them.
//!
//! May import the config types it fills (`cluster/`, `security/`, `producer/`) and `net/`'s
//! address parsing; nothing imports it but the crate's root.

pub(crate) mod producer_keys;
pub(crate) mod producer_properties;
pub(crate) mod properties;
