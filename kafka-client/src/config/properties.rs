//! [`ClientConfig`] from the property names Kafka's Java client and librdkafka use
//! (`security.protocol`, `sasl.jaas.config`, `ssl.ca.location`, ...), so the properties file a
//! user already has for kafka-consumer-groups or kcat configures kwire too.
//!
//! The producer's settings (`acks`, `transactional.id`, ...) are skipped here and read by
//! [`apply_producer_properties`](crate::apply_producer_properties).
//! A key kwire does not know is a [`ConfigWarning`] naming it, never silently dropped; a key or
//! value it knows but does not support (GSSAPI, AWS_MSK_IAM, a JCEKS store type) is a
//! [`ConfigError`] saying so. Store files are read when a client connects (their format, PEM,
//! PKCS#12 or JKS, comes from their contents then), so a JKS store is refused there. Any value may be `${env:NAME}` (an environment variable) or `${file:PATH}` (a
//! file's content, trimmed), so passwords need not sit in the file or on the command line.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::cluster::client_config::ClientConfig;
use crate::net::address::parse_bootstrap;
use crate::security::settings::{SaslConfig, SaslMechanism, Secret, SecurityProtocol, TokenSource};

/// A property kwire took no action on, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning {
    /// The property's key.
    pub key: String,
    /// Why it was ignored, or what it changes that the user should know.
    pub message: String,
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

/// A property kwire cannot honour. Displayed on one line; never shows a secret value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// A value kwire knows but does not implement (GSSAPI, AWS_MSK_IAM, ...).
    Unsupported {
        /// The property's key.
        key: String,
        /// What is not supported and what to do instead.
        reason: String,
    },
    /// A value that is malformed for its key.
    Invalid {
        /// The property's key.
        key: String,
        /// What is wrong with the value.
        reason: String,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unsupported { key, reason } => write!(f, "{key}: not supported by kwire: {reason}"),
            Self::Invalid { key, reason } => write!(f, "{key}: {reason}"),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Keys whose value is a secret: never shown, not even in an error.
pub fn is_secret_key(key: &str) -> bool {
    key.contains("password") || key == "sasl.jaas.config" || key.contains("secret")
}

fn invalid(key: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { key: key.to_owned(), reason: reason.into() }
}

fn unsupported(key: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Unsupported { key: key.to_owned(), reason: reason.into() }
}

/// `${env:NAME}` and `${file:PATH}` resolved; any other value as given.
pub(crate) fn resolve(key: &str, value: &str) -> Result<String, ConfigError> {
    let value = value.trim();
    if let Some(name) = value.strip_prefix("${env:").and_then(|v| v.strip_suffix('}')) {
        return std::env::var(name)
            .map_err(|_| invalid(key, format!("the environment variable {name} is not set (or not UTF-8)")));
    }
    if let Some(path) = value.strip_prefix("${file:").and_then(|v| v.strip_suffix('}')) {
        return std::fs::read_to_string(path)
            .map(|text| text.trim().to_owned())
            .map_err(|e| invalid(key, format!("cannot read {path}: {e}")));
    }
    Ok(value.to_owned())
}

fn millis(key: &str, value: &str) -> Result<Duration, ConfigError> {
    value
        .parse::<u64>()
        .ok()
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis)
        .ok_or_else(|| invalid(key, format!("`{value}` is not a positive number of milliseconds")))
}

/// What a JAAS line (`sasl.jaas.config`) says.
#[derive(Debug, Default, PartialEq, Eq)]
struct Jaas {
    /// The login module class, e.g. `org.apache.kafka.common.security.scram.ScramLoginModule`.
    module: String,
    options: BTreeMap<String, String>,
}

/// Parses `Module required key="value" key2=value2;`. Quoted values may hold spaces and `\"`.
fn parse_jaas(text: &str) -> Result<Jaas, String> {
    let text = text.trim().trim_end_matches(';').trim();
    let mut words = text.splitn(3, char::is_whitespace);
    let module = words.next().filter(|m| !m.is_empty()).ok_or("no login module")?.to_owned();
    let flag = words.next().ok_or("no control flag (required, optional, ...)")?;
    if !["required", "requisite", "sufficient", "optional"].contains(&flag) {
        return Err(format!("`{flag}` is not a JAAS control flag"));
    }
    let mut options = BTreeMap::new();
    let mut rest = words.next().unwrap_or("").trim_start();
    while !rest.is_empty() {
        let (name, after) = rest.split_once('=').ok_or("an option without `=`")?;
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err("an option name is empty or has spaces".to_owned());
        }
        let (value, after) = if let Some(quoted) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next().map(|(_, c)| c)),
                    '"' => {
                        end = Some(i + 1);
                        break;
                    }
                    c => value.push(c),
                }
            }
            let end = end.ok_or("a quoted value without its closing quote")?;
            (value, &quoted[end..])
        } else {
            let end = after.find(char::is_whitespace).unwrap_or(after.len());
            (after[..end].to_owned(), &after[end..])
        };
        options.insert(name.to_owned(), value);
        rest = after.trim_start();
    }
    Ok(Jaas { module, options })
}

/// Two names of one setting (Java's, librdkafka's): whichever comes later wins.
const ALIASES: &[(&str, &str)] =
    &[("ssl.ca.location", "ssl.truststore.location"), ("sasl.mechanism", "sasl.mechanisms")];

/// Keys that only matter to Java or librdkafka internals and change nothing kwire does; they are
/// accepted with a warning that says so.
const IGNORED: &[(&str, &str)] = &[
    (
        "enable.sasl.oauthbearer.unsecure.jwt",
        "kwire makes an unsecured JWS from sasl.oauthbearer.config=principal=...",
    ),
    ("sasl.login.callback.handler.class", "kwire's OAUTHBEARER tokens come from sasl.oauthbearer.token.file"),
];

/// Applies Kafka/librdkafka client properties to `config`, in order: a later pair overrides an
/// earlier one with the same key or an alias of it, and `sasl.username`/`sasl.password` after a
/// `sasl.jaas.config` override its user and password (and the reverse). Returns a warning for each key that changed nothing.
///
/// ```
/// use kafka_client::{apply_properties, ClientConfig, SecurityProtocol};
///
/// let mut config = ClientConfig::new("broker:9093").unwrap();
/// let props = [
///     ("security.protocol", "SASL_SSL"),
///     ("sasl.mechanism", "SCRAM-SHA-512"),
///     ("sasl.jaas.config", r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="s3cret";"#),
///     ("fetch.min.byte", "1"),
/// ];
/// let warnings = apply_properties(&mut config, props).unwrap();
/// assert_eq!(config.security_protocol, SecurityProtocol::SaslSsl);
/// assert_eq!(config.sasl.as_ref().unwrap().username, "alice");
/// assert_eq!(warnings[0].key, "fetch.min.byte"); // a typo: unknown to kwire
/// ```
pub fn apply_properties<K: AsRef<str>, V: AsRef<str>>(
    config: &mut ClientConfig,
    properties: impl IntoIterator<Item = (K, V)>,
) -> Result<Vec<ConfigWarning>, ConfigError> {
    // In the order given, each key once, at its last position: a later setting (an `-X` after
    // the file) wins, also over its alias (`ssl.ca.location` / `ssl.truststore.location`).
    let mut map: Vec<(String, String)> = Vec::new();
    for (key, value) in properties {
        let key = key.as_ref().trim().to_owned();
        let alias = ALIASES.iter().find_map(|(a, b)| match key.as_str() {
            k if k == *a => Some(*b),
            k if k == *b => Some(*a),
            _ => None,
        });
        map.retain(|(k, _)| *k != key && Some(k.as_str()) != alias);
        map.push((key, value.as_ref().to_owned()));
    }
    let mut warnings = Vec::new();
    let mut warn = |key: &str, message: &str| {
        warnings.push(ConfigWarning { key: key.to_owned(), message: message.to_owned() });
    };
    let mut mechanism = None;
    let (mut username, mut password, mut token) = (None, None, None);
    let mut jaas_module = None;
    // An unencrypted PEM key is all kwire reads; ssl.key.password belongs to a keystore.
    let separate_pem_key = map.iter().any(|(k, _)| k == "ssl.key.location");
    for (key, raw) in &map {
        let key = key.as_str();
        let value = resolve(key, raw)?;
        match key {
            "bootstrap.servers" => {
                config.bootstrap = parse_bootstrap(&value).map_err(|e| invalid(key, e.to_string()))?;
            }
            "client.id" => config.client_id = value,
            // Java and librdkafka both call it client.rack; empty means no rack, as there.
            "client.rack" => config.client_rack = Some(value).filter(|rack| !rack.is_empty()),
            "request.timeout.ms" => config.request_timeout = millis(key, &value)?,
            "socket.connection.setup.timeout.ms" => config.connect_timeout = millis(key, &value)?,
            "security.protocol" => {
                config.security_protocol = SecurityProtocol::from_name(&value).ok_or_else(|| {
                    invalid(key, format!("`{value}` is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"))
                })?;
            }
            "sasl.mechanism" | "sasl.mechanisms" => {
                let name = value.trim();
                mechanism = Some(SaslMechanism::from_name(name).ok_or_else(|| match name.to_ascii_uppercase().as_str() {
                    "GSSAPI" => unsupported(key, "GSSAPI (Kerberos) needs a Kerberos library kwire does not link; use SCRAM or OAUTHBEARER, or kafka-consumer-groups"),
                    "AWS_MSK_IAM" => unsupported(key, "AWS_MSK_IAM signs with AWS credentials kwire does not handle; MSK also offers SCRAM-SHA-512 and mTLS listeners"),
                    _ => invalid(key, format!("`{name}` is not PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER")),
                })?);
            }
            "sasl.jaas.config" => {
                let jaas = parse_jaas(&value).map_err(|reason| invalid(key, reason))?;
                let module = jaas.module.rsplit('.').next().unwrap_or_default().to_owned();
                match module.as_str() {
                    "PlainLoginModule" | "ScramLoginModule" => {
                        username = jaas.options.get("username").cloned().or(username);
                        password = jaas.options.get("password").cloned().or(password);
                    }
                    "OAuthBearerLoginModule" => {
                        if let Some(sub) = jaas.options.get("unsecuredLoginStringClaim_sub") {
                            token = Some(TokenSource::Unsecured { principal: sub.clone(), lifetime_s: 3600 });
                        }
                    }
                    "Krb5LoginModule" => {
                        return Err(unsupported(key, "Kerberos (Krb5LoginModule) is not supported by kwire"))
                    }
                    other => {
                        return Err(unsupported(
                            key,
                            format!("login module `{other}` is not one kwire implements"),
                        ))
                    }
                }
                jaas_module = Some(module);
            }
            "sasl.username" => username = Some(value),
            "sasl.password" => password = Some(value),
            "sasl.oauthbearer.token.file" => token = Some(TokenSource::File(PathBuf::from(value))),
            "sasl.oauthbearer.token.command" => token = Some(TokenSource::Command(value)),
            "sasl.oauthbearer.config" => {
                // librdkafka's unsecured token: `principal=NAME [lifeSeconds=N] ...`.
                let mut principal = None;
                let mut lifetime_s = 3600;
                for part in value.split_whitespace() {
                    match part.split_once('=') {
                        Some(("principal", p)) => principal = Some(p.to_owned()),
                        Some(("lifeSeconds", s)) => {
                            lifetime_s =
                                s.parse().map_err(|_| invalid(key, "lifeSeconds is not a number"))?;
                        }
                        _ => {}
                    }
                }
                let principal = principal.ok_or_else(|| invalid(key, "no principal=NAME"))?;
                token = Some(TokenSource::Unsecured { principal, lifetime_s });
            }
            k if k.starts_with("sasl.kerberos.") => {
                return Err(unsupported(key, "Kerberos (GSSAPI) is not supported by kwire"));
            }
            "ssl.ca.location" | "ssl.truststore.location" => config.tls.ca_file = Some(PathBuf::from(value)),
            "ssl.certificate.location" => config.tls.client_cert_file = Some(PathBuf::from(value)),
            "ssl.key.location" => config.tls.client_key_file = Some(PathBuf::from(value)),
            "ssl.key.password" => {
                if separate_pem_key && !value.is_empty() {
                    return Err(unsupported(
                        key,
                        "encrypted PEM keys; decrypt it once with `openssl pkey -in KEY -out KEY.pem` \
                         and keep the file private",
                    ));
                }
                config.tls.key_password = Some(Secret::new(value));
            }
            "ssl.keystore.location" => {
                config.tls.client_cert_file = Some(PathBuf::from(&value));
                config.tls.client_key_file = Some(PathBuf::from(value));
            }
            "ssl.truststore.password" => config.tls.truststore_password = Some(Secret::new(value)),
            "ssl.keystore.password" => config.tls.keystore_password = Some(Secret::new(value)),
            // The file's contents tell its format when it is read; a type kwire reads no file of
            // is refused now.
            "ssl.keystore.type" | "ssl.truststore.type" => check_store_type(key, &value)?,
            "ssl.endpoint.identification.algorithm" => match value.to_ascii_lowercase().as_str() {
                "https" => config.tls.verify_hostname = true,
                "" | "none" => {
                    config.tls.verify_hostname = false;
                    warn(key, "host name verification is off: any certificate the CA signed is accepted for any broker");
                }
                other => return Err(invalid(key, format!("`{other}` is neither `https` nor empty"))),
            },
            "ssl.enabled.protocols" | "ssl.protocol" => {
                for protocol in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    if !["TLS", "TLSv1.2", "TLSv1.3"].contains(&protocol) {
                        return Err(unsupported(
                            key,
                            format!("`{protocol}`: kwire speaks TLSv1.2 and TLSv1.3 only"),
                        ));
                    }
                }
            }
            // The producer's settings: read by `apply_producer_properties`.
            k if crate::config::producer_keys::producer_key(k).is_some() => {}
            // The consumer's settings: read by `apply_consumer_properties`.
            k if crate::config::consumer_keys::consumer_key(k).is_some() => {}
            _ => match IGNORED.iter().find(|(k, _)| *k == key) {
                Some((_, why)) => warn(key, &format!("ignored: {why}")),
                None => warn(key, "unknown to kwire, ignored"),
            },
        }
    }
    let mechanism = mechanism.or(match jaas_module.as_deref() {
        Some("PlainLoginModule") => Some(SaslMechanism::Plain),
        Some("OAuthBearerLoginModule") => Some(SaslMechanism::OAuthBearer),
        // Java's default sasl.mechanism is GSSAPI, which kwire lacks: SCRAM needs it named.
        _ => None,
    });
    if config.security_protocol.uses_sasl() {
        let mechanism = mechanism.ok_or_else(|| {
            invalid("sasl.mechanism", "a SASL security.protocol needs sasl.mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER)")
        })?;
        let sasl = match mechanism {
            SaslMechanism::OAuthBearer => SaslConfig {
                mechanism,
                username: String::new(),
                password: Secret::default(),
                token: Some(token.ok_or_else(|| {
                    invalid(
                        "sasl.oauthbearer.token.file",
                        "OAUTHBEARER needs a token file, a token command or an unsecured principal",
                    )
                })?),
            },
            _ => SaslConfig {
                mechanism,
                username: username.ok_or_else(|| {
                    invalid(
                        "sasl.jaas.config",
                        format!(
                            "{mechanism} needs a user name (sasl.jaas.config username=, or sasl.username)"
                        ),
                    )
                })?,
                password: Secret::new(password.ok_or_else(|| {
                    invalid(
                        "sasl.jaas.config",
                        format!(
                            "{mechanism} needs a password (sasl.jaas.config password=, or sasl.password)"
                        ),
                    )
                })?),
                token: None,
            },
        };
        config.sasl = Some(sasl);
    } else if mechanism.is_some() || username.is_some() {
        warn(
            "sasl.mechanism",
            &format!("ignored: security.protocol is {}, without SASL", config.security_protocol),
        );
    }
    Ok(warnings)
}

/// `ssl.truststore.type` / `ssl.keystore.type`: PEM, PKCS12, or JKS (Java's default type, which
/// since Java 9 reads PKCS#12 too; a file that really is JKS is refused when it is read, with
/// the keytool command that converts it). Other types (JCEKS, BCFKS, ...) are refused here.
fn check_store_type(key: &str, value: &str) -> Result<(), ConfigError> {
    match value.trim().to_ascii_uppercase().as_str() {
        "PEM" | "PKCS12" | "JKS" => Ok(()),
        other => Err(unsupported(
            key,
            format!("store type {other}: kwire reads PEM and PKCS12 stores; convert it with `keytool -importkeystore -deststoretype PKCS12`"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn config() -> ClientConfig {
        ClientConfig::new("127.0.0.1:9092").unwrap()
    }

    #[test]
    fn a_java_scram_over_tls_file_becomes_the_typed_config() {
        let mut c = config();
        let warnings = apply_properties(
            &mut c,
            [
                ("security.protocol", "SASL_SSL"),
                ("sasl.mechanism", "SCRAM-SHA-256"),
                (
                    "sasl.jaas.config",
                    r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="al ice" password="p\"w";"#,
                ),
                ("ssl.truststore.location", "/etc/ca.pem"),
                ("ssl.truststore.type", "PEM"),
            ],
        )
        .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let sasl = c.sasl.unwrap();
        assert_eq!((sasl.mechanism, sasl.username.as_str()), (SaslMechanism::ScramSha256, "al ice"));
        assert_eq!(sasl.password.expose(), "p\"w");
        assert_eq!(c.tls.ca_file, Some(PathBuf::from("/etc/ca.pem")));
        assert!(c.tls.verify_hostname);
    }

    #[test]
    fn librdkafka_names_configure_the_same_thing() {
        let mut c = config();
        apply_properties(
            &mut c,
            [
                ("security.protocol", "sasl_plaintext"),
                ("sasl.mechanisms", "PLAIN"),
                ("sasl.username", "bob"),
                ("sasl.password", "pw"),
                ("ssl.endpoint.identification.algorithm", "none"),
            ],
        )
        .unwrap();
        let sasl = c.sasl.unwrap();
        assert_eq!(
            (sasl.mechanism, sasl.username.as_str(), sasl.password.expose()),
            (SaslMechanism::Plain, "bob", "pw")
        );
        assert!(!c.tls.verify_hostname);
    }

    #[test]
    fn a_later_setting_wins_over_an_earlier_one_and_over_its_alias() {
        let mut c = config();
        apply_properties(&mut c, [("ssl.truststore.location", "/file.pem"), ("ssl.ca.location", "/x.pem")])
            .unwrap();
        assert_eq!(c.tls.ca_file, Some(PathBuf::from("/x.pem")));
        let mut c = config();
        apply_properties(
            &mut c,
            [
                ("security.protocol", "SASL_PLAINTEXT"),
                ("sasl.mechanism", "PLAIN"),
                ("sasl.username", "file-user"),
                ("sasl.password", "file-pw"),
                ("sasl.jaas.config", "x.PlainLoginModule required username=\"x-user\" password=\"x-pw\";"),
            ],
        )
        .unwrap();
        assert_eq!(c.sasl.unwrap().username, "x-user");
    }

    #[test]
    fn an_unknown_key_is_a_warning_naming_it() {
        let mut c = config();
        let warnings = apply_properties(&mut c, [("fetch.max.bytez", "1")]).unwrap();
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].to_string(), "fetch.max.bytez: unknown to kwire, ignored");
    }

    #[test]
    fn gssapi_and_msk_iam_are_refused_saying_why() {
        for mechanism in ["GSSAPI", "AWS_MSK_IAM"] {
            let error = apply_properties(&mut config(), [("sasl.mechanism", mechanism)]).unwrap_err();
            assert!(matches!(error, ConfigError::Unsupported { .. }), "{error}");
            assert!(error.to_string().contains("not supported"), "{error}");
        }
    }

    #[test]
    fn a_java_pkcs12_mtls_file_sets_both_stores_and_their_passwords() {
        let mut c = config();
        let warnings = apply_properties(
            &mut c,
            [
                ("security.protocol", "SSL"),
                ("ssl.truststore.type", "PKCS12"),
                ("ssl.truststore.location", "/x/kafka.client.truststore.jks"),
                ("ssl.truststore.password", "trust-pw"),
                ("ssl.keystore.type", "pkcs12"),
                ("ssl.keystore.location", "/x/client.p12"),
                ("ssl.keystore.password", "store-pw"),
                ("ssl.key.password", "store-pw"),
            ],
        )
        .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(c.tls.ca_file, Some(PathBuf::from("/x/kafka.client.truststore.jks")));
        assert_eq!(c.tls.truststore_password.as_ref().map(Secret::expose), Some("trust-pw"));
        assert_eq!(c.tls.client_cert_file, Some(PathBuf::from("/x/client.p12")));
        assert_eq!(c.tls.client_key_file, c.tls.client_cert_file);
        assert_eq!(c.tls.keystore_password.as_ref().map(Secret::expose), Some("store-pw"));
        assert_eq!(c.tls.key_password.as_ref().map(Secret::expose), Some("store-pw"));
        assert!(!format!("{c:?}").contains("-pw"), "{c:?}");
    }

    #[test]
    fn a_store_type_kwire_reads_no_file_of_or_an_encrypted_pem_key_is_refused() {
        let error = apply_properties(&mut config(), [("ssl.keystore.type", "JCEKS")]).unwrap_err();
        assert!(matches!(error, ConfigError::Unsupported { .. }), "{error}");
        assert!(error.to_string().contains("store type JCEKS"), "{error}");
        let error = apply_properties(
            &mut config(),
            [("ssl.key.location", "/x/client.key"), ("ssl.key.password", "pw")],
        )
        .unwrap_err();
        assert!(error.to_string().contains("encrypted PEM keys"), "{error}");
    }

    #[test]
    fn a_password_from_the_environment_or_a_file_is_resolved_and_never_shown() {
        let dir = std::env::temp_dir().join(format!("kwire-props-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("pw");
        std::fs::write(&file, "from-file\n").unwrap();
        let mut c = config();
        let file_ref = format!("${{file:{}}}", file.display());
        apply_properties(
            &mut c,
            [
                ("security.protocol", "SASL_PLAINTEXT"),
                ("sasl.mechanism", "SCRAM-SHA-512"),
                ("sasl.username", "u"),
                ("sasl.password", file_ref.as_str()),
            ],
        )
        .unwrap();
        assert_eq!(c.sasl.as_ref().unwrap().password.expose(), "from-file");
        assert!(!format!("{c:?}").contains("from-file"));
        let missing =
            apply_properties(&mut config(), [("sasl.password", "${env:KWIRE_TEST_SURELY_UNSET_VAR}")])
                .unwrap_err();
        assert!(missing.to_string().contains("KWIRE_TEST_SURELY_UNSET_VAR is not set"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sasl_without_credentials_says_which_setting_is_missing() {
        let error = apply_properties(
            &mut config(),
            [("security.protocol", "SASL_SSL"), ("sasl.mechanism", "SCRAM-SHA-512"), ("sasl.username", "u")],
        )
        .unwrap_err();
        assert!(error.to_string().contains("needs a password"), "{error}");
    }

    #[test]
    fn an_unsecured_oauthbearer_jaas_line_makes_unsecured_tokens() {
        let mut c = config();
        apply_properties(
            &mut c,
            [
                ("security.protocol", "SASL_PLAINTEXT"),
                ("sasl.mechanism", "OAUTHBEARER"),
                (
                    "sasl.jaas.config",
                    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"admin\";",
                ),
            ],
        )
        .unwrap();
        assert_eq!(
            c.sasl.unwrap().token,
            Some(TokenSource::Unsecured { principal: "admin".to_owned(), lifetime_s: 3600 })
        );
    }

    proptest! {
        #[test]
        fn the_jaas_parser_never_panics(text in ".{0,200}") {
            let _ = parse_jaas(&text);
        }

        #[test]
        fn any_properties_are_applied_or_refused_without_panicking(
            pairs in proptest::collection::vec(("(sasl|ssl|security)\\.[a-z.]{0,20}", ".{0,40}"), 0..8)
        ) {
            let _ = apply_properties(&mut config(), pairs);
        }

        #[test]
        fn jaas_options_round_trip_through_quoting(user in "[^\"\\\\]{0,20}", pw in "[^\"\\\\]{0,20}") {
            let line = format!("x.ScramLoginModule required username=\"{user}\" password=\"{pw}\";");
            let jaas = parse_jaas(&line).unwrap();
            prop_assert_eq!(jaas.options.get("username"), Some(&user));
            prop_assert_eq!(jaas.options.get("password"), Some(&pw));
        }
    }

    #[test]
    fn client_rack_is_sent_for_follower_fetching_and_empty_means_none() {
        let mut c = config();
        assert!(apply_properties(&mut c, [("client.rack", "r2")]).unwrap().is_empty());
        assert_eq!(c.client_rack.as_deref(), Some("r2"));
        apply_properties(&mut c, [("client.rack", "")]).unwrap();
        assert_eq!(c.client_rack, None);
    }
}
