//! Parsing `host:port` lists, so a typo is reported before anything connects, and keeping
//! passwords typed into an address out of messages (`error.rs` displays every address through
//! kafka_vocab's `redact_credentials`).

use crate::error::ClientError;

/// Splits a comma-separated `host:port` list. Hosts may be names, IPv4, or `[IPv6]`.
pub fn parse_bootstrap(list: &str) -> Result<Vec<String>, ClientError> {
    let addrs: Vec<String> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(parse_address)
        .collect::<Result<_, _>>()?;
    if addrs.is_empty() {
        return Err(ClientError::InvalidAddress { addr: list.to_owned(), reason: "no address given" });
    }
    Ok(addrs)
}

/// Checks one `host:port`.
pub fn parse_address(addr: &str) -> Result<String, ClientError> {
    let invalid = |reason| ClientError::InvalidAddress { addr: addr.to_owned(), reason };
    let (host, port) = addr.rsplit_once(':').ok_or_else(|| invalid("expected host:port"))?;
    if host.is_empty() {
        return Err(invalid("empty host"));
    }
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
        return Err(invalid("IPv6 hosts must be in brackets, e.g. [::1]:9092"));
    }
    match port.parse::<u16>() {
        Ok(0) | Err(_) => Err(invalid("port must be a number from 1 to 65535")),
        Ok(_) => Ok(addr.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_vocab::redact_credentials;

    #[test]
    fn accepts_lists_of_names_ipv4_and_bracketed_ipv6() {
        assert_eq!(parse_bootstrap("a:1, 127.0.0.1:9092,[::1]:9093").unwrap().len(), 3);
    }

    #[test]
    fn a_password_in_an_address_never_reaches_a_message() {
        assert_eq!(redact_credentials("user:SECRETPASS@host:9092"), "user:***@host:9092");
        assert_eq!(redact_credentials("kafka://u:p@ss@h:1,b:2"), "kafka://u:***@h:1,b:2");
        assert_eq!(redact_credentials("user@host:9092"), "user@host:9092");
        assert_eq!(redact_credentials("h:1,h:2"), "h:1,h:2");
        let err = parse_bootstrap("a:1,user:SECRETPASS@host:9092").unwrap_err().to_string();
        assert!(!err.contains("SECRETPASS") && err.contains("user:***@host:9092"), "{err}");
    }

    #[test]
    fn rejects_malformed_addresses_with_the_reason() {
        for (bad, reason) in [
            ("localhost", "expected host:port"),
            ("localhost:abc", "port"),
            (":9092", "empty host"),
            ("::1:9092", "brackets"),
            ("h:0", "port"),
            ("", "no address"),
        ] {
            let err = parse_bootstrap(bad).unwrap_err().to_string();
            assert!(err.contains(reason), "{bad}: {err}");
        }
    }
}
