//! Kafka's and librdkafka's property names (`bootstrap.servers`, `acks`, ...) read into
//! [`ClientConfig`](crate::ClientConfig), [`ProducerConfig`](crate::ProducerConfig) and
//! [`ConsumerConfig`](crate::ConsumerConfig), checked the way the Java client checks them.
//!
//! May import the config types it fills (`cluster/`, `security/`, `producer/`, `consumer/`) and `net/`'s
//! address parsing; nothing imports it but the crate's root.

pub(crate) mod consumer_keys;
pub(crate) mod consumer_properties;
pub(crate) mod producer_keys;
pub(crate) mod producer_properties;
pub(crate) mod properties;
