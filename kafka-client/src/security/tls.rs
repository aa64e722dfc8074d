//! TLS with rustls (ring provider, TLS 1.2 and 1.3): the client configuration built from
//! [`TlsConfig`], the handshake, and handshake failures turned into errors that say which
//! certificate problem it was and what to change.

use std::sync::Arc;

use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_rustls::rustls::{
    self, AlertDescription, CertificateError, ClientConfig, DigitallySignedStruct, OtherError, RootCertStore,
    SignatureScheme,
};

use crate::error::{BrokerRef, ClientError};
use crate::security::certificate_names::{certificate_names, CertificateNames};
use crate::security::settings::TlsConfig;
use crate::security::tls_files::{ca_certificates, client_identity};

fn config_error(message: String) -> ClientError {
    ClientError::SecurityConfig { message }
}

/// The rustls configuration for `tls`: its CA bundle or truststore (or the bundled Mozilla
/// roots), its client certificate and key or keystore for mTLS, and hostname checks unless
/// turned off.
pub(crate) fn client_config(tls: &TlsConfig) -> Result<Arc<ClientConfig>, ClientError> {
    let provider = Arc::new(ring::default_provider());
    let mut roots = RootCertStore::empty();
    match &tls.ca_file {
        Some(path) => {
            for cert in ca_certificates(path, tls.truststore_password.as_ref())? {
                roots
                    .add(cert)
                    .map_err(|e| config_error(format!("ssl.ca.location {}: {e}", path.display())))?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| config_error(format!("TLS versions: {e}")))?;
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
        .build()
        .map_err(|e| config_error(format!("TLS trust anchors: {e}")))?;
    let builder = builder.dangerous().with_custom_certificate_verifier(Arc::new(NamingVerifier {
        inner: verifier,
        verify_hostname: tls.verify_hostname,
    }));
    let config =
        match (&tls.client_cert_file, &tls.client_key_file) {
            (Some(cert), Some(key)) => {
                let (certs, key) = client_identity(cert, key, tls)?;
                builder
                    .with_client_auth_cert(certs, key)
                    .map_err(|e| config_error(format!("client certificate and key: {e}")))?
            }
            (None, None) => builder.with_no_client_auth(),
            (Some(_), None) | (None, Some(_)) => return Err(config_error(
                "mTLS needs both ssl.certificate.location and ssl.key.location (or ssl.keystore.location)"
                    .to_owned(),
            )),
        };
    Ok(Arc::new(config))
}

/// The broker's host as TLS names it (SNI and the certificate check): a DNS name, or an IP
/// address (checked against the certificate's IP SANs, no SNI sent).
fn server_name(broker: &BrokerRef) -> Result<ServerName<'static>, ClientError> {
    let host = match broker.addr.rsplit_once(':') {
        Some((host, _port)) => host.trim_start_matches('[').trim_end_matches(']'),
        None => broker.addr.as_str(),
    };
    ServerName::try_from(host.to_owned()).map_err(|_| ClientError::Tls {
        broker: broker.clone(),
        message: format!("`{host}` is not a host name TLS can check a certificate against"),
    })
}

/// The TLS handshake over `tcp`.
pub(crate) async fn handshake(
    config: &Arc<ClientConfig>,
    broker: &BrokerRef,
    tcp: TcpStream,
) -> Result<TlsStream<TcpStream>, ClientError> {
    let name = server_name(broker)?;
    let shown = name.to_str().into_owned();
    tokio_rustls::TlsConnector::from(Arc::clone(config))
        .connect(name, tcp)
        .await
        .map_err(|e| ClientError::Tls { broker: broker.clone(), message: explain(&e, &shown) })
}

/// Whether an IO error on a TLS stream is TLS's own (an alert, a bad record), not the socket's.
pub(crate) fn is_tls_error(e: &std::io::Error) -> bool {
    e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()).is_some()
}

/// What a TLS failure means for the user, in one line.
pub(crate) fn explain(e: &std::io::Error, host: &str) -> String {
    let Some(tls) = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) else {
        return match e.kind() {
            std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset => {
                "the broker closed the connection during the TLS handshake — is this a PLAINTEXT \
                 listener? (security.protocol)"
                    .to_owned()
            }
            _ => format!("handshake failed: {e}"),
        };
    };
    match tls {
        rustls::Error::InvalidCertificate(cert) => {
            let (cause, names) = match cert {
                CertificateError::Other(OtherError(inner)) => {
                    match inner.downcast_ref::<RefusedCertificate>() {
                        Some(refused) => (&refused.cause, refused.names.as_ref()),
                        None => (cert, None),
                    }
                }
                other => (other, None),
            };
            let who = match names {
                Some(names) => format!(
                    "the broker's certificate (subject {}, issued by {})",
                    names.subject, names.issuer
                ),
                None => "the broker's certificate".to_owned(),
            };
            explain_certificate(cause, &who, host)
        }
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
            "the broker answered without TLS — is this a PLAINTEXT listener? (security.protocol)".to_owned()
        }
        rustls::Error::AlertReceived(
            AlertDescription::CertificateRequired
            | AlertDescription::BadCertificate
            | AlertDescription::HandshakeFailure
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateUnknown,
        ) => format!(
            "the broker refused the handshake ({tls}): this listener may require a client certificate \
             (ssl.certificate.location and ssl.key.location) signed by a CA it trusts"
        ),
        other => format!("handshake failed: {other}"),
    }
}

/// Why `who` (the broker's certificate, with its names when known) was refused.
fn explain_certificate(cause: &CertificateError, who: &str, host: &str) -> String {
    match cause {
        CertificateError::UnknownIssuer => format!(
            "{who} is not signed by a trusted CA (untrusted certificate): set ssl.ca.location to the CA \
             bundle that signed it"
        ),
        CertificateError::ExpiredContext { time, not_after } => format!(
            "{who} has expired ({} days ago, at {} s since the epoch)",
            time.as_secs().saturating_sub(not_after.as_secs()) / 86_400,
            not_after.as_secs()
        ),
        CertificateError::Expired => format!("{who} has expired"),
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            format!("{who} is not valid yet (check the clock)")
        }
        CertificateError::NotValidForNameContext { presented, .. } => format!(
            "{who} is not valid for host `{host}` (wrong host): it names {}; connect by one of those \
             names, or set ssl.endpoint.identification.algorithm= to skip the check",
            presented.join(", ")
        ),
        CertificateError::NotValidForName => format!(
            "{who} is not valid for host `{host}` (wrong host); connect by a name it lists, or set \
             ssl.endpoint.identification.algorithm= to skip the check"
        ),
        other => format!("{who} was refused: {other:?}"),
    }
}

/// A certificate refusal with the names of the certificate refused (rustls' errors carry the
/// reason, not the certificate).
#[derive(Debug)]
struct RefusedCertificate {
    cause: CertificateError,
    names: Option<CertificateNames>,
}

impl std::fmt::Display for RefusedCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.cause)?;
        if let Some(names) = &self.names {
            write!(f, " (subject {}, issued by {})", names.subject, names.issuer)?;
        }
        Ok(())
    }
}

impl std::error::Error for RefusedCertificate {}

/// The WebPKI check, whose refusals name the certificate refused; with `verify_hostname` off
/// (`ssl.endpoint.identification.algorithm=`) without the host name part: the chain must still
/// lead to a trusted CA and be in date.
#[derive(Debug)]
struct NamingVerifier {
    inner: Arc<WebPkiServerVerifier>,
    verify_hostname: bool,
}

impl ServerCertVerifier for NamingVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.verify_hostname => Ok(ServerCertVerified::assertion()),
            Err(rustls::Error::InvalidCertificate(cause)) => {
                Err(rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(
                    RefusedCertificate { cause, names: certificate_names(end_entity) },
                )))))
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(cause: CertificateError, names: Option<CertificateNames>) -> std::io::Error {
        let error = rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(
            RefusedCertificate { cause, names },
        ))));
        std::io::Error::new(std::io::ErrorKind::InvalidData, error)
    }

    #[test]
    fn a_refused_certificate_is_explained_with_its_subject_and_issuer_when_known() {
        let names = CertificateNames { subject: "CN=broker1".to_owned(), issuer: "CN=Other CA".to_owned() };
        let message = explain(&refused(CertificateError::UnknownIssuer, Some(names)), "127.0.0.1");
        assert!(
            message.starts_with(
                "the broker's certificate (subject CN=broker1, issued by CN=Other CA) is not signed by a trusted CA"
            ),
            "{message}"
        );
        let message = explain(&refused(CertificateError::NotValidForName, None), "10.0.0.1");
        assert!(
            message.starts_with("the broker's certificate is not valid for host `10.0.0.1`"),
            "{message}"
        );
        // An error rustls made without the verifier's names is explained the same way.
        let bare = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(CertificateError::Expired),
        );
        assert_eq!(explain(&bare, "h"), "the broker's certificate has expired");
    }
}
