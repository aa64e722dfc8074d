//! The text of SCRAM's messages (RFC 5802 section 7): what the client writes and what it
//! reads from the broker. No crypto here — the proofs are computed by the client (the
//! kafka-client crate's `sasl` module); this module only frames and parses, so it needs no
//! dependency and can be fuzzed with the codec alone.
//!
//! The broker's messages are untrusted: every parser returns a [`ScramMessageError`] naming
//! what is wrong, caps the iteration count (a hostile broker could otherwise make the client
//! spin in PBKDF2) and never panics.

use std::fmt;

/// The most PBKDF2 iterations kwire accepts from a broker. Kafka allows 4096 to 16384; a
/// higher count is refused rather than computed.
pub const MAX_ITERATIONS: u32 = 65_536;

/// The fewest iterations accepted (RFC 7677 section 4: at least 4096).
pub const MIN_ITERATIONS: u32 = 4096;

/// What is wrong with a broker's SCRAM message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScramMessageError {
    /// The message is not UTF-8.
    NotUtf8,
    /// A required attribute (`r`, `s`, `i`, `v`) is missing.
    Missing(&'static str),
    /// An attribute's value is malformed; the text says how.
    Malformed {
        /// The attribute (`i`, `r`, ...).
        attribute: &'static str,
        /// What is wrong with its value.
        reason: &'static str,
    },
    /// The iteration count is outside [`MIN_ITERATIONS`, `MAX_ITERATIONS`].
    Iterations(u64),
    /// The broker refused the exchange with `e=...` in its final message.
    ServerError(String),
}

impl fmt::Display for ScramMessageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotUtf8 => f.write_str("SCRAM message is not UTF-8"),
            Self::Missing(attr) => write!(f, "SCRAM message lacks its `{attr}=` attribute"),
            Self::Malformed { attribute, reason } => {
                write!(f, "SCRAM attribute `{attribute}=` is malformed: {reason}")
            }
            Self::Iterations(n) => write!(
                f,
                "SCRAM iteration count {n} is outside the accepted {MIN_ITERATIONS}..={MAX_ITERATIONS}"
            ),
            Self::ServerError(e) => write!(f, "the broker ended the SCRAM exchange: {e}"),
        }
    }
}

impl std::error::Error for ScramMessageError {}

/// The broker's first message: `r=<nonce>,s=<salt base64>,i=<iterations>[,extensions]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerFirst<'a> {
    /// The combined nonce: the client's nonce followed by the broker's.
    pub nonce: &'a str,
    /// The salt, still base64 (decoded by the caller).
    pub salt_base64: &'a str,
    /// The PBKDF2 iteration count, within [`MIN_ITERATIONS`, `MAX_ITERATIONS`].
    pub iterations: u32,
}

/// The broker's final message: its signature to verify (`v=`), or its refusal (`e=`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerFinal<'a> {
    /// The server signature, still base64.
    pub verifier_base64: &'a str,
}

/// The attributes of a message, `k=value` separated by commas (values may contain `=`).
fn attributes(message: &str) -> impl Iterator<Item = (&str, &str)> {
    message.split(',').map(|part| part.split_once('=').unwrap_or((part, "")))
}

fn text(message: &[u8]) -> Result<&str, ScramMessageError> {
    std::str::from_utf8(message).map_err(|_| ScramMessageError::NotUtf8)
}

/// Whether `value` is printable ASCII without a comma (RFC 5802's `printable`, the nonce's set).
fn printable(value: &str) -> bool {
    value.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b',')
}

fn base64_text(value: &str) -> bool {
    value.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
}

/// Parses the broker's first message. `client_nonce` is the nonce kwire sent: the combined
/// nonce must start with it and add at least one character (else the broker is not answering
/// this exchange).
pub fn parse_server_first<'a>(
    message: &'a [u8],
    client_nonce: &str,
) -> Result<ServerFirst<'a>, ScramMessageError> {
    let message = text(message)?;
    let (mut nonce, mut salt, mut iterations) = (None, None, None);
    for (key, value) in attributes(message) {
        match key {
            // A mandatory extension kwire cannot honour (RFC 5802: `m=` must make the client fail).
            "m" => {
                return Err(ScramMessageError::Malformed {
                    attribute: "m",
                    reason: "a mandatory extension kwire does not know",
                })
            }
            "e" => return Err(ScramMessageError::ServerError(value.to_owned())),
            "r" if nonce.is_none() => nonce = Some(value),
            "s" if salt.is_none() => salt = Some(value),
            "i" if iterations.is_none() => iterations = Some(value),
            _ => {}
        }
    }
    let nonce = nonce.ok_or(ScramMessageError::Missing("r"))?;
    if !printable(nonce) {
        return Err(ScramMessageError::Malformed { attribute: "r", reason: "not printable ASCII" });
    }
    if !nonce.starts_with(client_nonce) || nonce.len() <= client_nonce.len() {
        return Err(ScramMessageError::Malformed {
            attribute: "r",
            reason: "does not extend the nonce kwire sent",
        });
    }
    let salt_base64 = salt.ok_or(ScramMessageError::Missing("s"))?;
    if salt_base64.is_empty() || !base64_text(salt_base64) {
        return Err(ScramMessageError::Malformed { attribute: "s", reason: "not base64" });
    }
    let iterations = iterations.ok_or(ScramMessageError::Missing("i"))?;
    if iterations.is_empty() || !iterations.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ScramMessageError::Malformed { attribute: "i", reason: "not a decimal count" });
    }
    let count: u64 = iterations.parse().unwrap_or(u64::MAX);
    if !(u64::from(MIN_ITERATIONS)..=u64::from(MAX_ITERATIONS)).contains(&count) {
        return Err(ScramMessageError::Iterations(count));
    }
    Ok(ServerFirst { nonce, salt_base64, iterations: count as u32 })
}

/// Parses the broker's final message: `v=<signature>` on success, `e=<reason>` as
/// [`ScramMessageError::ServerError`].
pub fn parse_server_final(message: &[u8]) -> Result<ServerFinal<'_>, ScramMessageError> {
    let message = text(message)?;
    for (key, value) in attributes(message) {
        match key {
            "e" => return Err(ScramMessageError::ServerError(value.to_owned())),
            "v" if !value.is_empty() && base64_text(value) => {
                return Ok(ServerFinal { verifier_base64: value })
            }
            "v" => return Err(ScramMessageError::Malformed { attribute: "v", reason: "not base64" }),
            _ => {}
        }
    }
    Err(ScramMessageError::Missing("v"))
}

/// A user name as SCRAM writes it (`saslname`): `=` becomes `=3D` and `,` becomes `=2C`.
pub fn escape_username(username: &str) -> String {
    username.replace('=', "=3D").replace(',', "=2C")
}

/// The client's first message without its GS2 header (`n=<user>,r=<nonce>`), which is also
/// part of the signed `AuthMessage`.
pub fn client_first_bare(username: &str, client_nonce: &str) -> String {
    format!("n={},r={client_nonce}", escape_username(username))
}

/// The GS2 header kwire sends: no channel binding, no authorization identity.
pub const GS2_HEADER: &str = "n,,";

/// `c=` of the client's final message: the GS2 header in base64 (`biws` for `n,,`).
pub const CHANNEL_BINDING: &str = "c=biws";

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const RFC7677_SERVER_FIRST: &[u8] =
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";

    #[test]
    fn the_rfc_7677_server_first_message_parses() {
        let first = parse_server_first(RFC7677_SERVER_FIRST, "rOprNGfwEbeRWgbNEkqO").unwrap();
        assert_eq!(first.nonce, "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");
        assert_eq!(first.salt_base64, "W22ZaJ0SNY7soEsUEjb6gQ==");
        assert_eq!(first.iterations, 4096);
    }

    #[test]
    fn a_broker_nonce_that_does_not_extend_ours_is_refused() {
        let error = parse_server_first(RFC7677_SERVER_FIRST, "someone-else").unwrap_err();
        assert!(matches!(error, ScramMessageError::Malformed { attribute: "r", .. }), "{error}");
        let same = parse_server_first(b"r=abc,s=QQ==,i=4096", "abc").unwrap_err();
        assert!(matches!(same, ScramMessageError::Malformed { attribute: "r", .. }), "{same}");
    }

    #[test]
    fn an_iteration_count_a_broker_could_stall_us_with_is_refused() {
        let error = parse_server_first(b"r=ab,s=QQ==,i=4294967296000", "a").unwrap_err();
        assert_eq!(error, ScramMessageError::Iterations(4_294_967_296_000));
        let overflow = parse_server_first(b"r=ab,s=QQ==,i=99999999999999999999999", "a").unwrap_err();
        assert_eq!(overflow, ScramMessageError::Iterations(u64::MAX));
        let low = parse_server_first(b"r=ab,s=QQ==,i=1", "a").unwrap_err();
        assert_eq!(low, ScramMessageError::Iterations(1));
    }

    #[test]
    fn a_server_error_in_the_final_message_is_the_brokers_reason() {
        assert_eq!(
            parse_server_final(b"e=invalid-proof").unwrap_err(),
            ScramMessageError::ServerError("invalid-proof".to_owned())
        );
        assert_eq!(
            parse_server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").unwrap().verifier_base64,
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
        assert_eq!(parse_server_final(b"x=1").unwrap_err(), ScramMessageError::Missing("v"));
    }

    #[test]
    fn user_names_with_comma_and_equals_are_escaped() {
        assert_eq!(client_first_bare("a=b,c", "n0"), "n=a=3Db=2Cc,r=n0");
    }

    proptest! {
        #[test]
        fn the_server_message_parsers_never_panic(message in proptest::collection::vec(any::<u8>(), 0..200),
                                                  nonce in "[ -~]{0,20}") {
            let _ = parse_server_first(&message, &nonce);
            let _ = parse_server_final(&message);
        }

        #[test]
        fn any_well_formed_server_first_message_parses_back(
            theirs in "[!-+--~]{1,40}", salt in "[A-Za-z0-9+/]{4,40}", iterations in MIN_ITERATIONS..=MAX_ITERATIONS,
        ) {
            let message = format!("r=ours{theirs},s={salt},i={iterations}");
            let first = parse_server_first(message.as_bytes(), "ours").unwrap();
            prop_assert_eq!(first.nonce, format!("ours{theirs}"));
            prop_assert_eq!(first.salt_base64, salt.as_str());
            prop_assert_eq!(first.iterations, iterations);
        }
    }
}
