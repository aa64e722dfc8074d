//! How a connection is secured: the typed form of Kafka's `security.protocol`, `ssl.*` and
//! `sasl.*` settings ([`crate::config::properties`] maps the property names onto these types).
//!
//! Secrets ([`Secret`]) never show in `Debug` or `Display`; only [`Secret::expose`] reads them.

use std::fmt;
use std::path::PathBuf;

/// Kafka's `security.protocol`: whether the connection uses TLS and whether it authenticates
/// with SASL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SecurityProtocol {
    /// Neither TLS nor SASL (the default).
    #[default]
    Plaintext,
    /// TLS, no SASL (the client may present a certificate: mTLS).
    Ssl,
    /// SASL over a plain TCP connection.
    SaslPlaintext,
    /// SASL over TLS.
    SaslSsl,
}

impl SecurityProtocol {
    /// Whether connections under this protocol start with a TLS handshake.
    pub fn uses_tls(self) -> bool {
        matches!(self, Self::Ssl | Self::SaslSsl)
    }

    /// Whether connections under this protocol authenticate with SASL after ApiVersions.
    pub fn uses_sasl(self) -> bool {
        matches!(self, Self::SaslPlaintext | Self::SaslSsl)
    }

    /// The name Kafka's `security.protocol` uses.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plaintext => "PLAINTEXT",
            Self::Ssl => "SSL",
            Self::SaslPlaintext => "SASL_PLAINTEXT",
            Self::SaslSsl => "SASL_SSL",
        }
    }

    /// Parses Kafka's name (case-insensitive, as the Java client accepts it).
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Plaintext, Self::Ssl, Self::SaslPlaintext, Self::SaslSsl]
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name.trim()))
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A password or token: shown as `<redacted>` by `Debug` and `Display`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// TLS settings, used when [`SecurityProtocol::uses_tls`]. Files are read when a client
/// connects, so an error names the file; a file's format (PEM, PKCS#12, or JKS, which is refused
/// with the keytool command that converts it) comes from its contents, not its name.
#[derive(Debug, Clone)]
pub struct TlsConfig {
    /// CA certificates to trust: a PEM bundle (`ssl.ca.location`) or a truststore
    /// (`ssl.truststore.location`): PEM, or PKCS#12 (its trusted certificate entries, with the
    /// `pkcs12` feature). `None` trusts the Mozilla root set bundled with kwire (webpki-roots).
    pub ca_file: Option<PathBuf>,
    /// The password of a PKCS#12 truststore in `ca_file` (`ssl.truststore.password`); `None` is
    /// the empty password. A PEM bundle needs none.
    pub truststore_password: Option<Secret>,
    /// The client certificate chain for mTLS (`ssl.certificate.location`), or a keystore holding
    /// chain and key (`ssl.keystore.location`: PEM, or PKCS#12 with the `pkcs12` feature), then
    /// also named by `client_key_file`.
    pub client_cert_file: Option<PathBuf>,
    /// The client's private key for mTLS (`ssl.key.location`, or the keystore), PKCS#8, PKCS#1
    /// or SEC1; a PEM key must be unencrypted.
    pub client_key_file: Option<PathBuf>,
    /// The password of a PKCS#12 keystore (`ssl.keystore.password`).
    pub keystore_password: Option<Secret>,
    /// `ssl.key.password`: for a PKCS#12 keystore its one password (used when
    /// `keystore_password` is not set, and must not differ from it); a PEM key with a
    /// password is refused (encrypted PEM keys are not read).
    pub key_password: Option<Secret>,
    /// Whether the broker's certificate must name the host connected to (Kafka's
    /// `ssl.endpoint.identification.algorithm=https`, the default). Off only when asked.
    pub verify_hostname: bool,
}

impl Default for TlsConfig {
    fn default() -> Self {
        Self {
            ca_file: None,
            truststore_password: None,
            client_cert_file: None,
            client_key_file: None,
            keystore_password: None,
            key_password: None,
            verify_hostname: true,
        }
    }
}

/// A SASL mechanism kwire implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaslMechanism {
    /// RFC 4616: user and password in the clear (use it over TLS only).
    Plain,
    /// RFC 7677, SHA-256.
    ScramSha256,
    /// RFC 5802 with SHA-512.
    ScramSha512,
    /// RFC 7628 / KIP-255: a bearer token.
    OAuthBearer,
}

impl SaslMechanism {
    /// The mechanism's name as Kafka's `sasl.mechanism` and SaslHandshake write it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plain => "PLAIN",
            Self::ScramSha256 => "SCRAM-SHA-256",
            Self::ScramSha512 => "SCRAM-SHA-512",
            Self::OAuthBearer => "OAUTHBEARER",
        }
    }

    /// Parses a mechanism name (case-insensitive); `None` for one kwire does not implement.
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Plain, Self::ScramSha256, Self::ScramSha512, Self::OAuthBearer]
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(name.trim()))
    }
}

impl fmt::Display for SaslMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where an OAUTHBEARER token comes from. Read again at every authentication, so a token
/// refreshed on disk (or by the command) is picked up when the old one expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// A file holding the token (`sasl.oauthbearer.token.file`); surrounding whitespace is
    /// ignored.
    File(PathBuf),
    /// A command run through `sh -c` whose standard output is the token
    /// (`sasl.oauthbearer.token.command`).
    Command(String),
    /// An unsecured JWS (`alg: none`) for this principal, made fresh at each authentication:
    /// what Kafka's unsecured validator accepts on test clusters (`unsecuredLoginStringClaim_sub`
    /// in the JAAS config, librdkafka's `sasl.oauthbearer.config=principal=...`).
    Unsecured {
        /// The `sub` claim.
        principal: String,
        /// How long each token is valid, in seconds.
        lifetime_s: u64,
    },
}

/// SASL settings, used when [`SecurityProtocol::uses_sasl`].
#[derive(Debug, Clone)]
pub struct SaslConfig {
    /// The mechanism asked of the broker.
    pub mechanism: SaslMechanism,
    /// The user (PLAIN, SCRAM); for OAUTHBEARER the principal shown in errors.
    pub username: String,
    /// The password (PLAIN, SCRAM); empty for OAUTHBEARER.
    pub password: Secret,
    /// Where OAUTHBEARER's token comes from; `None` for the other mechanisms.
    pub token: Option<TokenSource>,
}

impl SaslConfig {
    /// The principal a broker would check ACLs for, as Kafka writes it (`User:alice`).
    pub fn principal(&self) -> String {
        match &self.token {
            Some(TokenSource::Unsecured { principal, .. }) => format!("User:{principal}"),
            _ if self.username.is_empty() => "the token's principal".to_owned(),
            _ => format!("User:{}", self.username),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_never_shows_in_debug_output() {
        let sasl = SaslConfig {
            mechanism: SaslMechanism::ScramSha512,
            username: "alice".to_owned(),
            password: Secret::new("hunter2"),
            token: None,
        };
        let shown = format!("{sasl:?} {}", sasl.password);
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("alice"));
    }

    #[test]
    fn protocol_and_mechanism_names_are_kafkas() {
        assert_eq!(SecurityProtocol::from_name("sasl_ssl"), Some(SecurityProtocol::SaslSsl));
        assert_eq!(SecurityProtocol::from_name("TLS"), None);
        assert_eq!(SaslMechanism::from_name("scram-sha-256"), Some(SaslMechanism::ScramSha256));
        assert_eq!(SaslMechanism::from_name("GSSAPI"), None);
    }
}
