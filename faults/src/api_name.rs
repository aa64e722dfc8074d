//! A Kafka API as people write it: the one reading of an API name or key, shared by a rule's
//! `api` key and the root crate's `--api` filters (`kwire proxy`, `kwire decode --pcap`), so a
//! name that selects pairs to print also selects requests to fault.

use kafka_wire::protocol::ApiKey;

/// An API for `--api` or a rule's `api`: any name Kafka gives one (any case, `-`/`_` ignored)
/// or a numeric key.
pub fn parse_api_filter(text: &str) -> Result<ApiKey, String> {
    if let Ok(key) = text.trim().parse::<i16>() {
        return Ok(ApiKey(key));
    }
    let wanted: String = text.chars().filter(|c| *c != '-' && *c != '_').collect::<String>().to_lowercase();
    (0..=i16::from(u8::MAX))
        .map(ApiKey)
        .find(|k| k.name().is_some_and(|n| n.to_lowercase() == wanted))
        .ok_or_else(|| {
            format!("unknown API `{text}` (give a Kafka API name, e.g. JoinGroup, or a numeric key)")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_filters_take_any_kafka_name_or_key() {
        assert_eq!(parse_api_filter("JoinGroup"), Ok(ApiKey::JOIN_GROUP));
        assert_eq!(parse_api_filter("join_group"), Ok(ApiKey::JOIN_GROUP));
        assert_eq!(parse_api_filter("68"), Ok(ApiKey(68)));
        assert!(parse_api_filter("Nope").is_err());
    }
}
