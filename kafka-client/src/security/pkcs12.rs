//! PKCS#12 stores (`.p12`, `.pfx`; what keytool and `openssl pkcs12 -export` write), read with
//! the p12-keystore crate: the trusted certificates of a truststore, the private key and its
//! certificate chain of a keystore.
//!
//! Read: PBES2 (PBKDF2 with AES, openssl 3's and keytool's default) and the legacy
//! pbeWithSHAAnd3-KeyTripleDES / pbeWithSHAAnd40BitRC2 (openssl 1.1, `-legacy`), with a SHA-1 or
//! SHA-256 MAC, which is checked first: a wrong password is [`Pkcs12Error::WrongPassword`], not
//! a decryption failure. Any input gives a value or an error, never a panic.

use p12_keystore::error::Error;
use p12_keystore::{KeyStore, KeyStoreEntry};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// Why a PKCS#12 store could not be used. Displayed as the end of a one-line message naming
/// the file and its setting; never shows the password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pkcs12Error {
    /// The MAC does not match: the password is wrong (or the file was altered).
    WrongPassword,
    /// The store's contents could not be decrypted (a store without a MAC and a wrong password,
    /// or a damaged one).
    Undecryptable(String),
    /// A PKCS#12 store in an encryption or MAC scheme the reader lacks.
    Unsupported(String),
    /// Not a PKCS#12 store, or a truncated or damaged one.
    Malformed(String),
    /// A truststore without a trusted certificate entry.
    NoTrustedCertificate,
    /// A keystore without a private key whose certificate is in it.
    NoPrivateKey,
}

impl std::fmt::Display for Pkcs12Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::WrongPassword => {
                f.write_str("wrong password: the store's integrity check (MAC) fails with the one given")
            }
            Self::Undecryptable(detail) => {
                write!(f, "cannot decrypt the PKCS#12 store: wrong password, or a damaged file ({detail})")
            }
            Self::Unsupported(detail) => write!(
                f,
                "a PKCS#12 store in a scheme kwire does not read ({detail}); kwire reads PBES2/AES \
                 and the legacy 3DES/RC2 stores with a SHA-1 or SHA-256 MAC: re-export it with \
                 `openssl pkcs12 -export` or keytool"
            ),
            Self::Malformed(detail) => {
                write!(f, "not a readable PKCS#12 store (truncated or damaged?): {detail}")
            }
            Self::NoTrustedCertificate => f.write_str(
                "no trusted certificate entry in this PKCS#12 store (Java reads none either: \
                 `openssl pkcs12 -export -nokeys` does not mark certificates trusted); make it with \
                 `keytool -importcert -file ca.pem -keystore truststore.p12 -storetype PKCS12`, or \
                 point the setting at the PEM CA file with its .type set to PEM",
            ),
            Self::NoPrivateKey => f.write_str(
                "no private key with its certificate in this PKCS#12 store (a truststore?); a \
                 keystore for mTLS holds the client's key and certificate chain",
            ),
        }
    }
}

impl std::error::Error for Pkcs12Error {}

/// The error's text on one line: p12-keystore passes on its parsers' messages.
fn one_line(e: &Error) -> String {
    e.to_string().split_whitespace().collect::<Vec<_>>().join(" ")
}

fn classify(e: &Error) -> Pkcs12Error {
    match e {
        Error::MacError(_) => Pkcs12Error::WrongPassword,
        Error::UnpadError | Error::Pkcs5Error(_) => Pkcs12Error::Undecryptable(one_line(e)),
        Error::UnsupportedEncryptionScheme
        | Error::UnsupportedMacAlgorithm
        | Error::UnsupportedContentType
        | Error::UnsupportedCertificateType
        | Error::InvalidVersion => Pkcs12Error::Unsupported(one_line(e)),
        _ => Pkcs12Error::Malformed(one_line(e)),
    }
}

fn open(der: &[u8], password: &str) -> Result<KeyStore, Pkcs12Error> {
    KeyStore::from_pkcs12(der, password).map_err(|e| classify(&e))
}

/// The trusted certificate entries of a truststore (keytool's `trustedCertEntry`s), as Java's
/// trust manager takes them: certificates that belong to a key entry are not trust anchors.
pub(crate) fn trusted_certificates(
    der: &[u8],
    password: &str,
) -> Result<Vec<CertificateDer<'static>>, Pkcs12Error> {
    let store = open(der, password)?;
    let certs: Vec<CertificateDer<'static>> = store
        .entries()
        .filter_map(|(_, entry)| match entry {
            KeyStoreEntry::Certificate(cert) => Some(CertificateDer::from(cert.as_der().to_vec())),
            _ => None,
        })
        .collect();
    if certs.is_empty() {
        return Err(Pkcs12Error::NoTrustedCertificate);
    }
    Ok(certs)
}

/// The first private key entry of a keystore (by alias, as keytool lists them) and its
/// certificate chain, leaf first. Keys are PKCS#8 inside PKCS#12, so rustls takes them as such.
pub(crate) fn private_key_chain(
    der: &[u8],
    password: &str,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), Pkcs12Error> {
    let store = open(der, password)?;
    let (_, chain) = store.private_key_chain().ok_or(Pkcs12Error::NoPrivateKey)?;
    let certs: Vec<CertificateDer<'static>> =
        chain.chain().iter().map(|cert| CertificateDer::from(cert.as_der().to_vec())).collect();
    if certs.is_empty() {
        return Err(Pkcs12Error::NoPrivateKey);
    }
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(chain.key().to_vec()));
    Ok((certs, key))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Made by `testdata/make-pkcs12-fixtures.sh` with openssl 3 and keytool (Java 17).
    const OPENSSL_AES: &[u8] = include_bytes!("testdata/pkcs12-openssl-aes.p12");
    const OPENSSL_LEGACY: &[u8] = include_bytes!("testdata/pkcs12-openssl-legacy.p12");
    const KEYTOOL: &[u8] = include_bytes!("testdata/pkcs12-keytool.p12");
    const KEYTOOL_TRUST: &[u8] = include_bytes!("testdata/pkcs12-keytool-trust.p12");
    const OPENSSL_NOKEYS: &[u8] = include_bytes!("testdata/pkcs12-openssl-nokeys.p12");
    const JKS: &[u8] = include_bytes!("testdata/store.jks");
    const PASSWORD: &str = "fixture-secret";

    #[test]
    fn keystores_from_openssl_and_keytool_give_the_key_and_the_chain_leaf_first() {
        let mut chains = Vec::new();
        for (name, store) in
            [("openssl aes", OPENSSL_AES), ("openssl legacy", OPENSSL_LEGACY), ("keytool", KEYTOOL)]
        {
            let (certs, key) = private_key_chain(store, PASSWORD).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(certs.len(), 2, "{name}: leaf and CA");
            let leaf =
                crate::security::certificate_names::certificate_names(&certs[0]).expect("a certificate");
            assert_eq!(leaf.subject, "CN=pkcs12 fixture client", "{name}");
            assert_eq!(leaf.issuer, "CN=pkcs12 fixture CA", "{name}");
            assert!(matches!(key, PrivateKeyDer::Pkcs8(_)), "{name}");
            chains.push((certs, key.secret_der().to_vec()));
        }
        // The three tools wrapped the same key and certificates.
        assert!(chains.windows(2).all(|w| w[0] == w[1]));
    }

    #[test]
    fn a_keytool_truststore_gives_its_trusted_ca_and_a_keystore_none() {
        let certs = trusted_certificates(KEYTOOL_TRUST, PASSWORD).unwrap();
        assert_eq!(certs.len(), 1);
        let names = crate::security::certificate_names::certificate_names(&certs[0]).expect("a certificate");
        assert_eq!(names.subject, "CN=pkcs12 fixture CA");
        assert_eq!(trusted_certificates(KEYTOOL, PASSWORD), Err(Pkcs12Error::NoTrustedCertificate));
        assert_eq!(trusted_certificates(OPENSSL_NOKEYS, PASSWORD), Err(Pkcs12Error::NoTrustedCertificate));
        assert_eq!(private_key_chain(KEYTOOL_TRUST, PASSWORD).unwrap_err(), Pkcs12Error::NoPrivateKey);
    }

    #[test]
    fn a_wrong_or_missing_password_is_named_as_such() {
        for store in [OPENSSL_AES, OPENSSL_LEGACY, KEYTOOL, KEYTOOL_TRUST] {
            assert_eq!(private_key_chain(store, "not-it").unwrap_err(), Pkcs12Error::WrongPassword);
            assert_eq!(trusted_certificates(store, "").unwrap_err(), Pkcs12Error::WrongPassword);
        }
        assert!(!Pkcs12Error::WrongPassword.to_string().contains(PASSWORD));
    }

    #[test]
    fn a_jks_store_or_a_truncated_store_is_malformed_on_one_line() {
        let e = private_key_chain(JKS, PASSWORD).unwrap_err();
        assert!(matches!(e, Pkcs12Error::Malformed(_)), "{e}");
        for len in 0..KEYTOOL.len() {
            let e = private_key_chain(&KEYTOOL[..len], PASSWORD).unwrap_err();
            assert!(!e.to_string().contains('\n'), "{len}: {e}");
        }
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_are_an_error_never_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            prop_assert!(private_key_chain(&bytes, PASSWORD).is_err());
            prop_assert!(trusted_certificates(&bytes, PASSWORD).is_err());
        }

        #[test]
        fn a_store_with_bytes_changed_gives_a_value_or_an_error_never_a_panic(
            changes in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
            which in 0..4usize,
        ) {
            let mut store = [OPENSSL_AES, OPENSSL_LEGACY, KEYTOOL, KEYTOOL_TRUST][which].to_vec();
            for (at, byte) in changes {
                let i = at.index(store.len());
                store[i] = byte;
            }
            let _ = private_key_chain(&store, PASSWORD);
            let _ = trusted_certificates(&store, PASSWORD);
        }
    }
}
