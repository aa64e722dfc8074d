//! [`ZkAuth`]: the credentials a session presents to ZooKeeper, as written on the command line:
//! `digest:user:password` (`addauth digest user:password`) or `sasl:user:password` (SASL
//! DIGEST-MD5 against the server's JAAS `Server` section). The password never appears in a
//! debug print or an error.

use std::fmt;

use zookeeper_client::{Connector, SaslOptions};

/// How the credentials are presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheme {
    /// ZooKeeper's built-in `digest` scheme: the server identifies the session as
    /// `digest:<user>:<base64(sha1(user:password))>`, which is what ACLs name. Never refused:
    /// a wrong password is another identity.
    Digest,
    /// SASL DIGEST-MD5: the server checks the password (a wrong one fails the session) and
    /// identifies the session as `sasl:<user>`.
    SaslDigestMd5,
}

/// Credentials for ZooKeeper sessions (see the module docs for the two schemes).
#[derive(Clone, PartialEq, Eq)]
pub struct ZkAuth {
    scheme: Scheme,
    user: String,
    password: String,
}

/// Why a `digest:user:password` text is not usable credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthError {
    /// The text does not start with a scheme kwire supports (`digest:` or `sasl:`).
    UnsupportedScheme {
        /// The scheme as written (text before the first `:`), or empty.
        scheme: String,
    },
    /// No `:` between user and password.
    MissingPassword,
    /// The user name is empty.
    EmptyUser,
    /// The user name contains `:` (ZooKeeper splits the credentials at the first one).
    ColonInUser,
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthError::UnsupportedScheme { scheme } if scheme.is_empty() => {
                f.write_str("expected digest:USER:PASSWORD or sasl:USER:PASSWORD")
            }
            AuthError::UnsupportedScheme { scheme } => write!(
                f,
                "unsupported ZooKeeper auth scheme {scheme:?}: digest:USER:PASSWORD and sasl:USER:PASSWORD (SASL DIGEST-MD5) are supported; Kerberos (GSSAPI) is not"
            ),
            AuthError::MissingPassword => {
                f.write_str("expected SCHEME:USER:PASSWORD (no password after the user)")
            }
            AuthError::EmptyUser => f.write_str("expected SCHEME:USER:PASSWORD (the user is empty)"),
            AuthError::ColonInUser => f.write_str("a ZooKeeper user cannot contain ':'"),
        }
    }
}

impl std::error::Error for AuthError {}

impl ZkAuth {
    /// Digest credentials. The user may not be empty or contain `:` (ZooKeeper splits the
    /// credentials at the first `:`); the password may contain anything.
    pub fn digest(user: &str, password: &str) -> Result<ZkAuth, AuthError> {
        if user.is_empty() {
            return Err(AuthError::EmptyUser);
        }
        if user.contains(':') {
            return Err(AuthError::ColonInUser);
        }
        Ok(ZkAuth { scheme: Scheme::Digest, user: user.to_owned(), password: password.to_owned() })
    }

    /// SASL DIGEST-MD5 credentials, with the same rules for the user as [`ZkAuth::digest`].
    pub fn sasl_digest_md5(user: &str, password: &str) -> Result<ZkAuth, AuthError> {
        Ok(ZkAuth { scheme: Scheme::SaslDigestMd5, ..ZkAuth::digest(user, password)? })
    }

    /// Parses `digest:USER:PASSWORD` or `sasl:USER:PASSWORD` (surrounding whitespace and a
    /// trailing newline, as in a file, are ignored; the password is everything after the
    /// second `:`).
    pub fn parse(text: &str) -> Result<ZkAuth, AuthError> {
        let text = text.trim();
        let Some((scheme, rest)) = text.split_once(':') else {
            return Err(AuthError::UnsupportedScheme { scheme: String::new() });
        };
        let make = if scheme.eq_ignore_ascii_case("digest") {
            ZkAuth::digest
        } else if scheme.eq_ignore_ascii_case("sasl") {
            ZkAuth::sasl_digest_md5
        } else {
            return Err(AuthError::UnsupportedScheme { scheme: scheme.to_owned() });
        };
        let (user, password) = rest.split_once(':').ok_or(AuthError::MissingPassword)?;
        make(user, password)
    }

    /// The user name (not secret).
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The scheme as written on the command line (`digest` or `sasl`); ACLs name the
    /// session's identity with the same word.
    pub fn scheme(&self) -> &'static str {
        match self.scheme {
            Scheme::Digest => "digest",
            Scheme::SaslDigestMd5 => "sasl",
        }
    }

    /// The bytes of the digest auth packet: `user:password`.
    pub(crate) fn packet(&self) -> Vec<u8> {
        format!("{}:{}", self.user, self.password).into_bytes()
    }

    /// `connector` presenting these credentials on every session it opens.
    pub(crate) fn apply(&self, connector: Connector) -> Connector {
        match self.scheme {
            Scheme::Digest => connector.with_auth("digest", &self.packet()),
            Scheme::SaslDigestMd5 => {
                connector.with_sasl(SaslOptions::digest_md5(self.user.clone(), self.password.clone()))
            }
        }
    }
}

impl fmt::Debug for ZkAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZkAuth")
            .field("scheme", &self.scheme)
            .field("user", &self.user)
            .field("password", &"***")
            .finish()
    }
}

impl fmt::Display for ZkAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:***", self.scheme(), self.user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_password_is_everything_after_the_user() {
        let auth = ZkAuth::parse("digest:kwire:pa:ss word\n").unwrap();
        assert_eq!(auth.user(), "kwire");
        assert_eq!(auth.packet(), b"kwire:pa:ss word");
    }

    #[test]
    fn other_schemes_and_missing_parts_are_refused_by_name() {
        assert_eq!(
            ZkAuth::parse("kerberos:kwire:x"),
            Err(AuthError::UnsupportedScheme { scheme: "kerberos".into() })
        );
        assert_eq!(ZkAuth::parse("kwire"), Err(AuthError::UnsupportedScheme { scheme: String::new() }));
        assert_eq!(ZkAuth::parse("digest:kwire"), Err(AuthError::MissingPassword));
        assert_eq!(ZkAuth::parse("digest::secret"), Err(AuthError::EmptyUser));
    }

    #[test]
    fn sasl_credentials_keep_their_scheme() {
        let auth = ZkAuth::parse("SASL:kwire-sasl:pa:ss").unwrap();
        assert_eq!((auth.scheme(), auth.user()), ("sasl", "kwire-sasl"));
        assert_eq!(auth.to_string(), "sasl:kwire-sasl:***");
        assert_ne!(auth, ZkAuth::parse("digest:kwire-sasl:pa:ss").unwrap());
        assert_eq!(ZkAuth::parse("sasl::x"), Err(AuthError::EmptyUser));
    }

    #[test]
    fn debug_and_display_hide_the_password() {
        for text in ["digest:kwire:SECRETPASS", "sasl:kwire:SECRETPASS"] {
            let auth = ZkAuth::parse(text).unwrap();
            for text in [format!("{auth:?}"), auth.to_string()] {
                assert!(!text.contains("SECRETPASS") && text.contains("kwire"), "{text}");
            }
        }
    }

    proptest! {
        #[test]
        fn any_text_parses_to_its_own_packet_or_a_named_error(text in ".{0,64}") {
            if let Ok(auth) = ZkAuth::parse(&text) {
                let trimmed = text.trim();
                prop_assert_eq!(auth.packet(), trimmed.as_bytes()[trimmed.find(':').unwrap() + 1..].to_vec());
            }
        }
    }
}
