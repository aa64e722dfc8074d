//! Which keys are producer settings: the Java names [`apply_producer_properties`](crate::apply_producer_properties)
//! reads and librdkafka's aliases of them. Its own file, below both property readers, because
//! [`apply_properties`](crate::apply_properties) needs it too, to leave those keys alone
//! instead of warning that they are unknown.

/// Producer settings and their librdkafka aliases (`alias`, `java name`).
const ALIASES: &[(&str, &str)] = &[
    ("queue.buffering.max.ms", "linger.ms"),
    ("compression.codec", "compression.type"),
    ("max.in.flight", "max.in.flight.requests.per.connection"),
    ("message.max.bytes", "max.request.size"),
    ("message.timeout.ms", "delivery.timeout.ms"),
    ("request.required.acks", "acks"),
];

/// The producer settings `apply_producer_properties` reads (Java names); any alias above maps to one.
pub(crate) const PRODUCER_KEYS: &[&str] = &[
    "acks",
    "enable.idempotence",
    "linger.ms",
    "batch.size",
    "compression.type",
    "buffer.memory",
    "max.in.flight.requests.per.connection",
    "max.request.size",
    "transactional.id",
    "transaction.timeout.ms",
    "delivery.timeout.ms",
    "topic.metadata.propagation.max.ms",
];

/// The Java name of a producer setting given by its Java or librdkafka name; `None` for any
/// other key.
pub(crate) fn producer_key(key: &str) -> Option<&'static str> {
    let key = ALIASES.iter().find(|(alias, _)| *alias == key).map_or(key, |(_, java)| java);
    PRODUCER_KEYS.iter().copied().find(|k| *k == key)
}
