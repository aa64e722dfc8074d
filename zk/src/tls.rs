//! [`ZkTls`]: TLS to ZooKeeper's `secureClientPort` — the CA that signed the server's
//! certificate and, for a server with `ssl.clientAuth=need`, the client's certificate and key
//! (all PEM). Checked when built, so a bad file fails before any connection.
//!
//! # The crypto provider
//!
//! `zookeeper-client` builds its rustls configuration with `ClientConfig::builder()`, which
//! takes the process-wide default provider and panics when more than one provider is compiled
//! in and none was chosen — and this workspace compiles two (kafka-client's ring, and aws-lc-rs,
//! which rustls' default features pull in through `zookeeper-client`). [`install_ring_provider`]
//! chooses ring, once per process, before a session with TLS is opened; a provider the
//! application installed itself is kept.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::crypto::ring;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore};
use zookeeper_client::TlsOptions;

/// Makes ring the process-wide rustls provider unless one is installed already. Idempotent,
/// cheap after the first call; every TLS path of this crate calls it before rustls is used.
pub fn install_ring_provider() {
    // Err means a provider is installed (ours from an earlier call, or the application's).
    let _ = ring::default_provider().install_default();
}

/// A certificate file that did not give TLS settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsError {
    /// The file could not be read or holds no PEM item of the kind needed.
    File {
        /// What the file is for (`CA`, `client certificate`, `client key`).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A client certificate without its key, or the reverse.
    HalfIdentity,
    /// rustls refused the material (a key that does not match the certificate, a CA that is
    /// not a valid trust anchor).
    Invalid {
        /// rustls' reason.
        reason: String,
    },
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsError::File { what, path, reason } => {
                write!(f, "ZooKeeper TLS {what} {}: {reason}", path.display())
            }
            TlsError::HalfIdentity => f.write_str(
                "ZooKeeper mTLS needs both a client certificate and its key (--zookeeper-tls-cert and --zookeeper-tls-key)",
            ),
            TlsError::Invalid { reason } => write!(f, "ZooKeeper TLS settings: {reason}"),
        }
    }
}

impl std::error::Error for TlsError {}

/// TLS settings for ZooKeeper sessions. The key is never printed.
#[derive(Clone)]
pub struct ZkTls {
    ca_pem: String,
    identity: Option<(String, String)>,
    ca_origin: String,
    /// The same settings as a ring-backed rustls configuration, for the probe that names a
    /// failed handshake (`zookeeper-client` reports only a timeout).
    probe_config: Arc<ClientConfig>,
}

impl fmt::Debug for ZkTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZkTls")
            .field("ca", &self.ca_origin)
            .field("client_certificate", &self.identity.is_some())
            .finish_non_exhaustive()
    }
}

fn read(what: &'static str, path: &Path) -> Result<String, TlsError> {
    std::fs::read_to_string(path).map_err(|e| TlsError::File {
        what,
        path: path.to_owned(),
        reason: e.to_string(),
    })
}

fn file_error<'p>(what: &'static str, path: &'p Path) -> impl FnOnce(String) -> TlsError + 'p {
    move |reason| TlsError::File { what, path: path.to_owned(), reason }
}

/// A client identity: its PEM texts (certificate, key) and the same parsed.
type Identity = ((String, String), (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>));

fn certificates(pem: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    if certs.is_empty() {
        return Err("no PEM certificate in it".to_owned());
    }
    Ok(certs)
}

impl ZkTls {
    /// Settings from files: the CA bundle, and optionally the client certificate (chain) and
    /// its unencrypted PEM key — both or neither.
    pub fn from_files(ca: &Path, cert: Option<&Path>, key: Option<&Path>) -> Result<ZkTls, TlsError> {
        let ca_pem = read("CA", ca)?;
        let identity = match (cert, key) {
            (Some(cert), Some(key)) => Some((
                (read("client certificate", cert)?, cert.to_owned()),
                (read("client key", key)?, key.to_owned()),
            )),
            (None, None) => None,
            _ => return Err(TlsError::HalfIdentity),
        };
        let roots = certificates(&ca_pem).map_err(file_error("CA", ca))?;
        let identity = match identity {
            Some(((cert_pem, cert_path), (key_pem, key_path))) => {
                let chain = certificates(&cert_pem).map_err(file_error("client certificate", &cert_path))?;
                let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|e| TlsError::File {
                    what: "client key",
                    path: key_path.clone(),
                    reason: format!("{e} (an unencrypted PKCS#8, PKCS#1 or SEC1 PEM key is needed)"),
                })?;
                Some(((cert_pem, key_pem), (chain, key)))
            }
            None => None,
        };
        ZkTls::build(ca_pem, ca.display().to_string(), roots, identity)
    }

    fn build(
        ca_pem: String,
        ca_origin: String,
        roots: Vec<CertificateDer<'static>>,
        identity: Option<Identity>,
    ) -> Result<ZkTls, TlsError> {
        let invalid = |e: rustls::Error| TlsError::Invalid { reason: e.to_string() };
        let mut store = RootCertStore::empty();
        for root in roots {
            store.add(root).map_err(invalid)?;
        }
        let builder = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(invalid)?
            .with_root_certificates(store);
        let (probe_config, identity) = match identity {
            Some((pems, (chain, key))) => {
                (builder.with_client_auth_cert(chain, key).map_err(invalid)?, Some(pems))
            }
            None => (builder.with_no_client_auth(), None),
        };
        Ok(ZkTls { ca_pem, identity, ca_origin, probe_config: Arc::new(probe_config) })
    }

    /// Whether a client certificate is presented.
    pub fn has_client_certificate(&self) -> bool {
        self.identity.is_some()
    }

    /// The rustls configuration the probe handshakes with.
    pub(crate) fn probe_config(&self) -> Arc<ClientConfig> {
        Arc::clone(&self.probe_config)
    }

    /// The options `zookeeper-client` connects with. Installs ring as the process provider
    /// first (see the module docs).
    pub(crate) fn options(&self) -> Result<TlsOptions, zookeeper_client::Error> {
        install_ring_provider();
        let options = TlsOptions::new().with_pem_ca(&self.ca_pem)?;
        match &self.identity {
            Some((cert, key)) => options.with_pem_identity(cert, key),
            None => Ok(options),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("kwire-zk-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_missing_or_empty_ca_file_is_named() {
        let missing = ZkTls::from_files(Path::new("/nonexistent/kwire-ca.pem"), None, None).unwrap_err();
        assert!(missing.to_string().contains("CA /nonexistent/kwire-ca.pem"), "{missing}");
        let empty = ZkTls::from_files(&temp("empty.pem", "not a certificate\n"), None, None).unwrap_err();
        assert!(empty.to_string().contains("no PEM certificate"), "{empty}");
    }

    #[test]
    fn a_certificate_without_its_key_is_refused_before_it_is_read() {
        let ca = temp("ca.pem", "anything\n");
        let half = ZkTls::from_files(&ca, Some(Path::new("/nonexistent/c.pem")), None).unwrap_err();
        assert_eq!(half, TlsError::HalfIdentity);
        assert!(half.to_string().contains("--zookeeper-tls-key"), "{half}");
    }

    #[test]
    fn installing_the_provider_twice_is_harmless() {
        install_ring_provider();
        install_ring_provider();
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
