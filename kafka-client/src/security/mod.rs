//! Security settings and the material behind them: `security.protocol`, TLS and SASL settings as
//! types (`settings.rs`), rustls configuration and handshake errors explained, CA bundles,
//! keystores and truststores (PEM, PKCS#12), certificate names, SCRAM proofs and OAUTHBEARER
//! tokens. No IO on a connection: the SASL exchange itself runs where connections are opened
//! (`cluster/sasl.rs`).
//!
//! May import only the shared files at the crate's top (`error.rs`); everything else may use it.

#[cfg(feature = "tls")]
pub(crate) mod certificate_names;
pub(crate) mod oauth_token;
#[cfg(feature = "pkcs12")]
pub(crate) mod pkcs12;
pub(crate) mod scram;
pub(crate) mod settings;
#[cfg(feature = "tls")]
pub(crate) mod tls;
#[cfg(feature = "tls")]
pub(crate) mod tls_files;
