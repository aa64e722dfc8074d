//! The files behind the TLS settings — CA bundles and truststores, client certificates, keys and
//! keystores — read into rustls' types. A file's format comes from its bytes, not its name or
//! its `.type` setting: PEM, PKCS#12 (with the `pkcs12` feature), or JKS, which is refused with
//! the keytool command that converts it. (Since Java 9 keytool writes PKCS#12 under `.jks`
//! names, and Java's JKS type reads PKCS#12 too.) Every error is one line naming the setting
//! and the file, never a password.

use std::path::Path;

use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::ClientError;
use crate::security::settings::{Secret, TlsConfig};

/// What a certificate or key file holds, as its bytes tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// Text with `-----BEGIN ...-----` blocks.
    Pem,
    /// DER, which a PKCS#12 store is (an ASN.1 SEQUENCE); anything else that is neither PEM
    /// nor JKS is tried as PKCS#12 too, whose reader then says what is wrong with it.
    Pkcs12,
    /// A Java KeyStore (magic `FEEDFEED`) or JCEKS store (`CECECECE`).
    Jks,
}

/// The format of a file's contents.
pub(crate) fn format_of(bytes: &[u8]) -> Format {
    if bytes.starts_with(&[0xFE, 0xED, 0xFE, 0xED]) || bytes.starts_with(&[0xCE, 0xCE, 0xCE, 0xCE]) {
        Format::Jks
    } else if bytes.windows(11).any(|w| w == b"-----BEGIN ") {
        Format::Pem
    } else {
        Format::Pkcs12
    }
}

/// The one-line error for a JKS store in `setting`: the keytool command that makes a PKCS#12
/// store of it, which kwire reads.
pub(crate) fn jks_refusal(setting: &str, path: &Path) -> String {
    let path = path.display();
    format!(
        "{setting} {path} is a JKS store, which kwire cannot read; convert it with \
         `keytool -importkeystore -srckeystore {path} -destkeystore store.p12 -deststoretype PKCS12` \
         and point {setting} at store.p12 (with its .type set to PKCS12)"
    )
}

fn config_error(message: String) -> ClientError {
    ClientError::SecurityConfig { message }
}

fn read(path: &Path, setting: &str) -> Result<Vec<u8>, ClientError> {
    std::fs::read(path).map_err(|e| config_error(format!("{setting} {}: {e}", path.display())))
}

fn pem_certificates(
    bytes: &[u8],
    path: &Path,
    setting: &str,
) -> Result<Vec<CertificateDer<'static>>, ClientError> {
    let certs = CertificateDer::pem_slice_iter(bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| config_error(format!("{setting} {}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(config_error(format!("{setting} {}: no PEM certificate in it", path.display())));
    }
    Ok(certs)
}

fn pem_key(bytes: &[u8], path: &Path, setting: &str) -> Result<PrivateKeyDer<'static>, ClientError> {
    PrivateKeyDer::from_pem_slice(bytes).map_err(|e| {
        config_error(format!(
            "{setting} {}: {e} (an unencrypted PKCS#8, PKCS#1 or SEC1 PEM key is needed)",
            path.display()
        ))
    })
}

/// A PKCS#12 store's error, on the setting's line.
#[cfg(feature = "pkcs12")]
fn store_error(setting: &str, path: &Path, e: &crate::security::pkcs12::Pkcs12Error) -> ClientError {
    config_error(format!("{setting} {}: {e}", path.display()))
}

/// What a build without the `pkcs12` feature says of a file that is neither PEM nor JKS.
#[cfg(not(feature = "pkcs12"))]
fn without_pkcs12(setting: &str, path: &Path) -> ClientError {
    config_error(format!(
        "{setting} {path} is not PEM (a PKCS#12 store?), and this build of kafka-client lacks its `pkcs12` \
         feature; convert it with `openssl pkcs12 -in {path} -out store.pem -nodes`",
        path = path.display()
    ))
}

/// The CA certificates to trust from `path`: a PEM bundle (`ssl.ca.location`, a PEM
/// truststore), or the trusted entries of a PKCS#12 truststore opened with `password`
/// (`ssl.truststore.password`; none given is the empty password).
pub(crate) fn ca_certificates(
    path: &Path,
    password: Option<&Secret>,
) -> Result<Vec<CertificateDer<'static>>, ClientError> {
    let bytes = read(path, "ssl.ca.location")?;
    match format_of(&bytes) {
        Format::Pem => pem_certificates(&bytes, path, "ssl.ca.location"),
        Format::Jks => Err(config_error(jks_refusal("ssl.truststore.location", path))),
        #[cfg(feature = "pkcs12")]
        Format::Pkcs12 => {
            crate::security::pkcs12::trusted_certificates(&bytes, password.map_or("", Secret::expose))
                .map_err(|e| store_error("ssl.truststore.location", path, &e))
        }
        #[cfg(not(feature = "pkcs12"))]
        Format::Pkcs12 => {
            let _ = password;
            Err(without_pkcs12("ssl.truststore.location", path))
        }
    }
}

/// The client's certificate chain and private key for mTLS: from a keystore (`cert` and `key`
/// the same file, `ssl.keystore.location`: PEM with both, or PKCS#12), or from a PEM
/// certificate file and a PEM key file (`ssl.certificate.location`, `ssl.key.location`).
pub(crate) fn client_identity(
    cert: &Path,
    key: &Path,
    tls: &TlsConfig,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), ClientError> {
    if cert == key {
        return keystore(cert, tls);
    }
    let cert_bytes = read(cert, "ssl.certificate.location")?;
    if format_of(&cert_bytes) != Format::Pem {
        return Err(config_error(format!(
            "ssl.certificate.location {}: not a PEM certificate; a PKCS#12 or JKS store holding the \
             key too goes in ssl.keystore.location (with ssl.keystore.password)",
            cert.display()
        )));
    }
    let certs = pem_certificates(&cert_bytes, cert, "ssl.certificate.location")?;
    if tls.key_password.as_ref().is_some_and(|p| !p.expose().is_empty()) {
        return Err(encrypted_pem_key());
    }
    let key = pem_key(&read(key, "ssl.key.location")?, key, "ssl.key.location")?;
    Ok((certs, key))
}

fn encrypted_pem_key() -> ClientError {
    config_error(
        "ssl.key.password: encrypted PEM keys are not supported by kwire; decrypt it once with \
         `openssl pkey -in KEY -out KEY.pem` and keep the file private"
            .to_owned(),
    )
}

fn keystore(
    path: &Path,
    tls: &TlsConfig,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), ClientError> {
    const SETTING: &str = "ssl.keystore.location";
    let bytes = read(path, SETTING)?;
    match format_of(&bytes) {
        Format::Pem => {
            if tls.key_password.as_ref().is_some_and(|p| !p.expose().is_empty()) {
                return Err(encrypted_pem_key());
            }
            Ok((pem_certificates(&bytes, path, SETTING)?, pem_key(&bytes, path, SETTING)?))
        }
        Format::Jks => Err(config_error(jks_refusal(SETTING, path))),
        Format::Pkcs12 => {
            // One password guards a PKCS#12 store and its key (keytool ignores a different
            // -keypass for PKCS12, openssl asks for one): ssl.key.password stands in for a
            // missing ssl.keystore.password, and must not contradict it.
            let password = match (&tls.keystore_password, &tls.key_password) {
                (Some(store), Some(key)) if store.expose() != key.expose() && !key.expose().is_empty() => {
                    return Err(config_error(format!(
                        "{SETTING} {}: ssl.key.password differs from ssl.keystore.password, and a \
                         PKCS#12 store has one password for the store and its key (leave ssl.key.password out)",
                        path.display()
                    )))
                }
                (Some(store), _) => store.expose(),
                (None, Some(key)) => key.expose(),
                (None, None) => "",
            };
            #[cfg(feature = "pkcs12")]
            {
                crate::security::pkcs12::private_key_chain(&bytes, password)
                    .map_err(|e| store_error(SETTING, path, &e))
            }
            #[cfg(not(feature = "pkcs12"))]
            {
                let _ = password;
                Err(without_pkcs12(SETTING, path))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_told_apart_by_its_bytes_not_its_name() {
        assert_eq!(format_of(include_bytes!("testdata/store.jks")), Format::Jks);
        assert_eq!(format_of(&[0xCE, 0xCE, 0xCE, 0xCE, 0, 0]), Format::Jks);
        assert_eq!(format_of(include_bytes!("testdata/pkcs12-keytool.p12")), Format::Pkcs12);
        assert_eq!(format_of(b"Bag Attributes\n-----BEGIN CERTIFICATE-----\nMII\n"), Format::Pem);
        assert_eq!(format_of(b""), Format::Pkcs12);
    }

    #[test]
    fn the_jks_refusal_is_one_line_with_the_keytool_command() {
        let text = jks_refusal("ssl.truststore.location", Path::new("/x/client.truststore.jks"));
        assert!(text.contains("keytool -importkeystore -srckeystore /x/client.truststore.jks"), "{text}");
        assert!(!text.contains('\n'));
    }
}
