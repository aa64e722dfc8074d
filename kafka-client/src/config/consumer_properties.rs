//! [`ConsumerConfig`] from the Java consumer's property names (`group.id`, `group.protocol`,
//! `auto.offset.reset`, ...; librdkafka's aliases too). With `group.protocol=consumer` the
//! session timeout, heartbeat interval and client-side assignors are the broker's business
//! (KIP-848): setting them is a warning that says so, not an error (librdkafka refuses them,
//! which its users find harsh). Keys that are not consumer settings are left to
//! [`apply_properties`](crate::apply_properties); a malformed value is a [`ConfigError`].

use std::time::Duration;

use crate::config::consumer_keys::consumer_key;
use crate::config::properties::{resolve, ConfigError, ConfigWarning};
use crate::consumer::config::{ConsumerConfig, GroupProtocol};
use kafka_vocab::Isolation;
use offset_engine::{OutOfRangePolicy, StartPolicy};

fn invalid(key: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { key: key.to_owned(), reason: reason.into() }
}

fn positive<T: std::str::FromStr + PartialOrd + Default>(
    key: &str,
    value: &str,
    what: &str,
) -> Result<T, ConfigError> {
    value
        .parse::<T>()
        .ok()
        .filter(|n| *n > T::default())
        .ok_or_else(|| invalid(key, format!("`{value}` is not a positive {what}")))
}

fn millis(key: &str, value: &str) -> Result<Duration, ConfigError> {
    positive::<u64>(key, value, "number of milliseconds").map(Duration::from_millis)
}

fn bytes(key: &str, value: &str) -> Result<i32, ConfigError> {
    positive::<i32>(key, value, "number of bytes (at most 2147483647)")
}

fn boolean(key: &str, value: &str) -> Result<bool, ConfigError> {
    match value.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(invalid(key, format!("`{value}` is neither true nor false"))),
    }
}

/// The assignor names `partition.assignment.strategy` accepts: kwire's short names and the
/// Java classes'.
const ASSIGNORS: &[(&str, &str)] = &[
    ("range", "org.apache.kafka.clients.consumer.RangeAssignor"),
    ("roundrobin", "org.apache.kafka.clients.consumer.RoundRobinAssignor"),
    ("cooperative-sticky", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"),
];

/// Applies the consumer settings among `properties` to `config`, in order (a later pair, or
/// its alias, wins). Returns a warning for each setting that changes nothing under the chosen
/// `group.protocol`. Other keys are skipped.
///
/// ```
/// use kafka_client::{apply_consumer_properties, ConsumerConfig, GroupProtocol};
///
/// let mut config = ConsumerConfig::default();
/// let warnings = apply_consumer_properties(
///     &mut config,
///     [("group.id", "billing"), ("group.protocol", "consumer"), ("session.timeout.ms", "10000")],
/// )
/// .unwrap();
/// assert_eq!((config.group_id.as_deref(), config.group_protocol), (Some("billing"), GroupProtocol::Consumer));
/// assert_eq!(warnings[0].key, "session.timeout.ms");
///
/// let refused = apply_consumer_properties(&mut config, [("auto.offset.reset", "smallest-ish")]);
/// assert!(refused.unwrap_err().to_string().contains("auto.offset.reset"));
/// ```
pub fn apply_consumer_properties<K: AsRef<str>, V: AsRef<str>>(
    config: &mut ConsumerConfig,
    properties: impl IntoIterator<Item = (K, V)>,
) -> Result<Vec<ConfigWarning>, ConfigError> {
    let mut set: Vec<&'static str> = Vec::new();
    for (key, value) in properties {
        let key = key.as_ref().trim();
        let Some(name) = consumer_key(key) else { continue };
        let value = resolve(key, value.as_ref())?;
        let value = value.trim();
        set.push(name);
        match name {
            "group.id" => {
                config.group_id = (!value.is_empty()).then(|| value.to_owned());
            }
            "group.protocol" => {
                config.group_protocol = match value.to_ascii_lowercase().as_str() {
                    "classic" => GroupProtocol::Classic,
                    "consumer" => GroupProtocol::Consumer,
                    _ => return Err(invalid(key, format!("`{value}` is neither classic nor consumer"))),
                };
            }
            "group.instance.id" => {
                config.group_instance_id = (!value.is_empty()).then(|| value.to_owned());
            }
            "group.remote.assignor" => {
                config.remote_assignor = (!value.is_empty()).then(|| value.to_owned());
            }
            "session.timeout.ms" => config.session_timeout = millis(key, value)?,
            "heartbeat.interval.ms" => config.heartbeat_interval = millis(key, value)?,
            "max.poll.interval.ms" => config.max_poll_interval = millis(key, value)?,
            "partition.assignment.strategy" => {
                let mut names = Vec::new();
                for given in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                    let Some((short, _)) = ASSIGNORS.iter().find(|(s, java)| *s == given || *java == given)
                    else {
                        let known: Vec<&str> = ASSIGNORS.iter().map(|(s, _)| *s).collect();
                        return Err(invalid(key, format!("`{given}` is not one of {}", known.join(", "))));
                    };
                    names.push((*short).to_owned());
                }
                if names.is_empty() {
                    return Err(invalid(key, "no assignor named"));
                }
                config.assignment_strategy = names;
            }
            "isolation.level" => {
                config.isolation = match value.to_ascii_lowercase().as_str() {
                    "read_uncommitted" => Isolation::ReadUncommitted,
                    "read_committed" => Isolation::ReadCommitted,
                    _ => {
                        return Err(invalid(
                            key,
                            format!("`{value}` is neither read_uncommitted nor read_committed"),
                        ))
                    }
                };
            }
            "auto.offset.reset" => {
                config.start = match value.to_ascii_lowercase().as_str() {
                    "earliest" | "smallest" | "beginning" => StartPolicy::Earliest,
                    "latest" | "largest" | "end" => StartPolicy::Latest,
                    "none" | "error" => StartPolicy::Fail,
                    _ => return Err(invalid(key, format!("`{value}` is not earliest, latest or none"))),
                };
            }
            "kwire.offset.out.of.range" => {
                config.out_of_range = match value.to_ascii_lowercase().as_str() {
                    "fail" => OutOfRangePolicy::Fail,
                    "earliest" => OutOfRangePolicy::Earliest,
                    "latest" => OutOfRangePolicy::Latest,
                    "clamp" => OutOfRangePolicy::Clamp,
                    _ => {
                        return Err(invalid(key, format!("`{value}` is not fail, earliest, latest or clamp")))
                    }
                };
            }
            "enable.auto.commit" => config.enable_auto_commit = boolean(key, value)?,
            "auto.commit.interval.ms" => config.auto_commit_interval = millis(key, value)?,
            "fetch.max.wait.ms" => config.fetch.max_wait = millis(key, value)?,
            "fetch.min.bytes" => config.fetch.min_bytes = bytes(key, value)?,
            "fetch.max.bytes" => config.fetch.max_bytes = bytes(key, value)?,
            "max.partition.fetch.bytes" => config.fetch.partition_max_bytes = bytes(key, value)?,
            "kwire.fetch.max.decompressed.bytes" => {
                config.fetch.max_decompressed_bytes = usize::try_from(bytes(key, value)?).unwrap_or(0);
            }
            "metadata.max.age.ms" => config.metadata_max_age = millis(key, value)?,
            _ => {}
        }
    }
    let mut warnings = Vec::new();
    if config.group_protocol == GroupProtocol::Consumer {
        for (key, why) in [
            ("session.timeout.ms", "the broker's group.consumer.session.timeout.ms applies"),
            ("heartbeat.interval.ms", "the broker's group.consumer.heartbeat.interval.ms applies"),
            (
                "partition.assignment.strategy",
                "the broker assigns; choose its assignor with group.remote.assignor",
            ),
        ] {
            if set.contains(&key) {
                warnings.push(ConfigWarning {
                    key: key.to_owned(),
                    message: format!("ignored with group.protocol=consumer: {why}"),
                });
            }
        }
    } else if set.contains(&"group.remote.assignor") {
        warnings.push(ConfigWarning {
            key: "group.remote.assignor".to_owned(),
            message: "ignored with group.protocol=classic: the group leader's client-side assignor applies"
                .to_owned(),
        });
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_and_librdkafka_names_set_the_consumer_and_later_pairs_win() {
        let mut config = ConsumerConfig::default();
        let warnings = apply_consumer_properties(
            &mut config,
            [
                ("group.id", "g"),
                ("auto.offset.reset", "latest"),
                ("auto.offset.reset", "smallest"),
                ("fetch.wait.max.ms", "250"),
                ("auto.commit.enable", "true"),
                (
                    "partition.assignment.strategy",
                    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor, range",
                ),
                ("isolation.level", "read_committed"),
                ("kwire.offset.out.of.range", "clamp"),
                ("max.partition.fetch.bytes", "65536"),
                ("bootstrap.servers", "not mine"),
            ],
        )
        .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(config.group_id.as_deref(), Some("g"));
        assert_eq!(config.start, StartPolicy::Earliest);
        assert_eq!(config.fetch.max_wait, Duration::from_millis(250));
        assert!(config.enable_auto_commit);
        assert_eq!(config.assignment_strategy, ["cooperative-sticky", "range"]);
        assert_eq!(config.isolation, Isolation::ReadCommitted);
        assert_eq!(config.out_of_range, OutOfRangePolicy::Clamp);
        assert_eq!(config.fetch.partition_max_bytes, 65536);
    }

    #[test]
    fn a_malformed_value_names_its_key_and_what_is_wrong() {
        for (key, value, says) in [
            ("group.protocol", "eager", "neither classic nor consumer"),
            ("session.timeout.ms", "-5", "positive number of milliseconds"),
            (
                "partition.assignment.strategy",
                "sticky-ish",
                "not one of range, roundrobin, cooperative-sticky",
            ),
            ("enable.auto.commit", "yes", "neither true nor false"),
            ("fetch.max.bytes", "4294967296", "number of bytes"),
            ("kwire.offset.out.of.range", "reset", "fail, earliest, latest or clamp"),
        ] {
            let e = apply_consumer_properties(&mut ConsumerConfig::default(), [(key, value)]).unwrap_err();
            let text = e.to_string();
            assert!(text.starts_with(key) && text.contains(says), "{key}={value}: {text}");
        }
    }

    #[test]
    fn broker_side_settings_are_warnings_under_the_other_protocol() {
        let mut config = ConsumerConfig::default();
        let w = apply_consumer_properties(&mut config, [("group.remote.assignor", "uniform")]).unwrap();
        assert_eq!(w.len(), 1);
        assert!(w[0].message.contains("group.protocol=classic"), "{}", w[0]);
        let w = apply_consumer_properties(
            &mut config,
            [("group.protocol", "consumer"), ("heartbeat.interval.ms", "500"), ("group.instance.id", "")],
        )
        .unwrap();
        assert_eq!(w.iter().map(|w| w.key.as_str()).collect::<Vec<_>>(), ["heartbeat.interval.ms"]);
        assert_eq!(config.group_instance_id, None, "an empty id is none");
    }
}
