//! [`ProducerConfig`] from the Java producer's property names (`acks`, `enable.idempotence`,
//! `transactional.id`, ...; librdkafka's aliases too), checked the way the Java client checks
//! them: an explicit `enable.idempotence=true` with `acks` other than all or more than 5
//! requests in flight is refused; without it, those settings turn idempotence off (Java's
//! implicit default), and a `transactional.id` then is refused, as is one with
//! `enable.idempotence=false`. Keys that are not producer settings are left to
//! [`apply_properties`](crate::apply_properties); a malformed value is a [`ConfigError`].

use std::time::Duration;

use crate::config::producer_keys::producer_key;
use crate::config::properties::{resolve, ConfigError};
use crate::producer::config::ProducerConfig;
use crate::producer::produce::Acks;
use kafka_wire::protocol::records::Compression;

fn invalid(key: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { key: key.to_owned(), reason: reason.into() }
}

fn number<T: std::str::FromStr + PartialOrd + Default>(
    key: &str,
    value: &str,
    what: &str,
) -> Result<T, ConfigError> {
    value
        .trim()
        .parse::<T>()
        .ok()
        .filter(|n| *n > T::default())
        .ok_or_else(|| invalid(key, format!("`{value}` is not a positive {what}")))
}

fn millis(key: &str, value: &str) -> Result<Duration, ConfigError> {
    number::<u64>(key, value, "number of milliseconds").map(Duration::from_millis)
}

/// `linger.ms` may be 0 (send at once).
fn millis_or_zero(key: &str, value: &str) -> Result<Duration, ConfigError> {
    value
        .trim()
        .parse::<u64>()
        .map(Duration::from_millis)
        .map_err(|_| invalid(key, format!("`{value}` is not a number of milliseconds")))
}

/// Applies the producer settings among `properties` to `config`, in order (a later pair, or
/// its alias, wins), then checks idempotence, `acks`, in-flight requests and
/// `transactional.id` together as the Java producer does. Other keys are skipped.
///
/// ```
/// use kafka_client::{apply_producer_properties, Acks, ProducerConfig};
///
/// let mut config = ProducerConfig::default();
/// apply_producer_properties(&mut config, [("acks", "1"), ("linger.ms", "20")]).unwrap();
/// // acks=1 without an explicit enable.idempotence turns idempotence off, as in Java.
/// assert_eq!((config.acks, config.idempotence), (Acks::Leader, false));
///
/// let refused = apply_producer_properties(
///     &mut ProducerConfig::default(),
///     [("enable.idempotence", "true"), ("acks", "1")],
/// );
/// assert!(refused.unwrap_err().to_string().contains("acks=all"));
/// ```
pub fn apply_producer_properties<K: AsRef<str>, V: AsRef<str>>(
    config: &mut ProducerConfig,
    properties: impl IntoIterator<Item = (K, V)>,
) -> Result<(), ConfigError> {
    let mut explicit_idempotence = None;
    for (key, value) in properties {
        let key = key.as_ref().trim();
        let Some(name) = producer_key(key) else { continue };
        let value = resolve(key, value.as_ref())?;
        let value = value.trim();
        match name {
            "acks" => {
                config.acks = match value.to_ascii_lowercase().as_str() {
                    "all" | "-1" => Acks::All,
                    "1" => Acks::Leader,
                    "0" => Acks::NoResponse,
                    _ => return Err(invalid(key, format!("`{value}` is not all, -1, 0 or 1"))),
                };
            }
            "enable.idempotence" => {
                let on = match value.to_ascii_lowercase().as_str() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(invalid(key, format!("`{value}` is not true or false"))),
                };
                explicit_idempotence = Some(on);
            }
            "linger.ms" => config.linger = millis_or_zero(key, value)?,
            "batch.size" => config.batch_size = number(key, value, "number of bytes")?,
            "buffer.memory" => config.buffer_memory = number(key, value, "number of bytes")?,
            "max.in.flight.requests.per.connection" => {
                config.max_in_flight = number(key, value, "number of requests")?;
            }
            "max.request.size" => config.max_request_size = number(key, value, "number of bytes")?,
            "compression.type" => {
                let codec = [
                    Compression::None,
                    Compression::Gzip,
                    Compression::Snappy,
                    Compression::Lz4,
                    Compression::Zstd,
                ]
                .into_iter()
                .find(|c| c.name().eq_ignore_ascii_case(value))
                .ok_or_else(|| invalid(key, format!("`{value}` is not none, gzip, snappy, lz4 or zstd")))?;
                if !codec.is_available() {
                    return Err(invalid(key, format!("{value} is not compiled into this build")));
                }
                config.compression = codec;
            }
            "transactional.id" => {
                if value.is_empty() {
                    return Err(invalid(key, "must not be empty"));
                }
                config.transactional_id = Some(value.to_owned());
            }
            "transaction.timeout.ms" => config.transaction_timeout = millis(key, value)?,
            "delivery.timeout.ms" => config.delivery_timeout = millis(key, value)?,
            "topic.metadata.propagation.max.ms" => config.topic_propagation = millis_or_zero(key, value)?,
            _ => {}
        }
    }
    let conflicts = || {
        let mut why = Vec::new();
        if config.acks != Acks::All {
            why.push(format!("acks={}", config.acks.wire()));
        }
        if config.max_in_flight > 5 {
            why.push(format!("max.in.flight.requests.per.connection={}", config.max_in_flight));
        }
        why
    };
    match explicit_idempotence {
        Some(true) => {
            if config.acks != Acks::All {
                return Err(invalid(
                    "enable.idempotence",
                    format!("the idempotent producer needs acks=all, not acks={}", config.acks.wire()),
                ));
            }
            if config.max_in_flight > 5 {
                return Err(invalid(
                    "enable.idempotence",
                    format!(
                        "the idempotent producer allows at most 5 requests in flight \
                         (max.in.flight.requests.per.connection={})",
                        config.max_in_flight
                    ),
                ));
            }
            config.idempotence = true;
        }
        Some(false) => {
            if config.transactional_id.is_some() {
                return Err(invalid(
                    "transactional.id",
                    "a transactional producer needs idempotence (enable.idempotence=false is set)",
                ));
            }
            config.idempotence = false;
        }
        None => {
            let why = conflicts();
            if !why.is_empty() {
                if config.transactional_id.is_some() {
                    return Err(invalid(
                        "transactional.id",
                        format!(
                            "a transactional producer needs idempotence, which {} turns off",
                            why.join(" and ")
                        ),
                    ));
                }
                config.idempotence = false;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(pairs: &[(&str, &str)]) -> Result<ProducerConfig, String> {
        let mut config = ProducerConfig::default();
        apply_producer_properties(&mut config, pairs.iter().copied()).map_err(|e| e.to_string())?;
        Ok(config)
    }

    #[test]
    fn java_producer_settings_become_the_typed_config() {
        let config = applied(&[
            ("acks", "all"),
            ("enable.idempotence", "true"),
            ("linger.ms", "0"),
            ("batch.size", "65536"),
            ("compression.type", "none"),
            ("buffer.memory", "8388608"),
            ("max.in.flight.requests.per.connection", "3"),
            ("max.request.size", "2097152"),
            ("transactional.id", "loader-1"),
            ("transaction.timeout.ms", "30000"),
            ("delivery.timeout.ms", "90000"),
            ("topic.metadata.propagation.max.ms", "2500"),
            ("bootstrap.servers", "ignored-here:9092"),
        ])
        .unwrap();
        assert_eq!(config.acks, Acks::All);
        assert!(config.idempotence);
        assert_eq!(config.linger, Duration::ZERO);
        assert_eq!((config.batch_size, config.buffer_memory, config.max_in_flight), (65536, 8 << 20, 3));
        assert_eq!(config.max_request_size, 2 << 20);
        assert_eq!(config.transactional_id.as_deref(), Some("loader-1"));
        assert_eq!(config.transaction_timeout, Duration::from_secs(30));
        assert_eq!(config.delivery_timeout, Duration::from_secs(90));
        assert_eq!(config.topic_propagation, Duration::from_millis(2500));
    }

    #[test]
    fn librdkafka_aliases_set_the_same_fields_and_the_later_one_wins() {
        let config = applied(&[
            ("linger.ms", "7"),
            ("queue.buffering.max.ms", "9"),
            ("max.in.flight", "2"),
            ("max.request.size", "5000"),
            ("message.max.bytes", "6000"),
        ])
        .unwrap();
        assert_eq!(config.linger, Duration::from_millis(9));
        assert_eq!(config.max_in_flight, 2);
        assert_eq!(config.max_request_size, 6000);
    }

    #[test]
    fn explicit_idempotence_with_acks_other_than_all_is_refused() {
        let e = applied(&[("enable.idempotence", "true"), ("acks", "1")]).unwrap_err();
        assert_eq!(e, "enable.idempotence: the idempotent producer needs acks=all, not acks=1");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn explicit_idempotence_with_more_than_five_in_flight_is_refused() {
        let e = applied(&[("max.in.flight.requests.per.connection", "6"), ("enable.idempotence", "true")])
            .unwrap_err();
        assert!(e.contains("at most 5 requests in flight"), "{e}");
    }

    #[test]
    fn acks_one_without_explicit_idempotence_turns_it_off_as_java_does() {
        let config = applied(&[("acks", "1"), ("max.in.flight.requests.per.connection", "10")]).unwrap();
        assert!(!config.idempotence);
        assert_eq!(config.max_in_flight, 10);
    }

    #[test]
    fn a_transactional_id_without_idempotence_is_refused() {
        let e = applied(&[("transactional.id", "t"), ("enable.idempotence", "false")]).unwrap_err();
        assert!(e.starts_with("transactional.id: "), "{e}");
        let e = applied(&[("transactional.id", "t"), ("acks", "0")]).unwrap_err();
        assert_eq!(e, "transactional.id: a transactional producer needs idempotence, which acks=0 turns off");
    }

    #[test]
    fn malformed_values_name_the_key() {
        for (key, value) in [
            ("acks", "2"),
            ("enable.idempotence", "yes"),
            ("linger.ms", "-1"),
            ("batch.size", "0"),
            ("buffer.memory", "lots"),
            ("max.request.size", "0"),
            ("compression.type", "brotli"),
            ("transaction.timeout.ms", "0"),
            ("transactional.id", " "),
        ] {
            let e = applied(&[(key, value)]).unwrap_err();
            assert!(e.starts_with(&format!("{key}: ")), "{key}={value}: {e}");
        }
    }
}
