//! Which keys are consumer settings: the Java names
//! [`apply_consumer_properties`](crate::apply_consumer_properties) reads, and librdkafka's
//! aliases of them. Below both property readers, as `producer_keys` is: the client's reader
//! leaves these keys alone instead of warning that they are unknown.

/// Consumer settings and their librdkafka aliases (`alias`, `java name`).
const ALIASES: &[(&str, &str)] =
    &[("fetch.wait.max.ms", "fetch.max.wait.ms"), ("auto.commit.enable", "enable.auto.commit")];

/// The consumer settings `apply_consumer_properties` reads (Java names, plus kwire's own
/// `kwire.offset.out.of.range`).
pub(crate) const CONSUMER_KEYS: &[&str] = &[
    "group.id",
    "group.protocol",
    "group.instance.id",
    "group.remote.assignor",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "max.poll.interval.ms",
    "partition.assignment.strategy",
    "isolation.level",
    "auto.offset.reset",
    "kwire.offset.out.of.range",
    "enable.auto.commit",
    "auto.commit.interval.ms",
    "fetch.max.wait.ms",
    "fetch.min.bytes",
    "fetch.max.bytes",
    "max.partition.fetch.bytes",
    "kwire.fetch.max.decompressed.bytes",
    "metadata.max.age.ms",
];

/// The Java name of a consumer setting given by its Java or librdkafka name; `None` for any
/// other key.
pub(crate) fn consumer_key(key: &str) -> Option<&'static str> {
    let key = ALIASES.iter().find(|(alias, _)| *alias == key).map_or(key, |(_, java)| java);
    CONSUMER_KEYS.iter().copied().find(|k| *k == key)
}
