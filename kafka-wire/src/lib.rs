//! kafka-wire: a hand-written Kafka wire-protocol codec ([`protocol`], sans-IO) and a tokio
//! client ([`client`]) that negotiates versions and routes each request to the right broker.

pub mod client;
pub mod protocol;
pub mod store;
