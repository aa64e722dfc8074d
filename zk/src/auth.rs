//! [`ZkAuth`]: the credentials a session presents to ZooKeeper (`addauth digest user:password`),
//! as written on the command line (`digest:user:password`). The password never appears in a
//! debug print or an error.

use std::fmt;

/// Digest credentials for ZooKeeper's built-in `digest` scheme: the server identifies the
/// session as `digest:<user>:<base64(sha1(user:password))>`, which is what ACLs name.
#[derive(Clone, PartialEq, Eq)]
pub struct ZkAuth {
    user: String,
    password: String,
}

/// Why a `digest:user:password` text is not usable credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthError {
    /// The text does not start with a scheme kwire supports (only `digest:`).
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
                f.write_str("expected digest:USER:PASSWORD")
            }
            AuthError::UnsupportedScheme { scheme } => write!(
                f,
                "unsupported ZooKeeper auth scheme {scheme:?}: only digest:USER:PASSWORD is supported"
            ),
            AuthError::MissingPassword => {
                f.write_str("expected digest:USER:PASSWORD (no password after the user)")
            }
            AuthError::EmptyUser => f.write_str("expected digest:USER:PASSWORD (the user is empty)"),
            AuthError::ColonInUser => f.write_str("a ZooKeeper digest user cannot contain ':'"),
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
        Ok(ZkAuth { user: user.to_owned(), password: password.to_owned() })
    }

    /// Parses `digest:USER:PASSWORD` (surrounding whitespace and a trailing newline, as in a
    /// file, are ignored; the password is everything after the second `:`).
    pub fn parse(text: &str) -> Result<ZkAuth, AuthError> {
        let text = text.trim();
        let Some((scheme, rest)) = text.split_once(':') else {
            return Err(AuthError::UnsupportedScheme { scheme: String::new() });
        };
        if !scheme.eq_ignore_ascii_case("digest") {
            return Err(AuthError::UnsupportedScheme { scheme: scheme.to_owned() });
        }
        let (user, password) = rest.split_once(':').ok_or(AuthError::MissingPassword)?;
        ZkAuth::digest(user, password)
    }

    /// The user name (not secret).
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The ZooKeeper auth scheme.
    pub fn scheme(&self) -> &'static str {
        "digest"
    }

    /// The bytes of the auth packet: `user:password`.
    pub(crate) fn packet(&self) -> Vec<u8> {
        format!("{}:{}", self.user, self.password).into_bytes()
    }
}

impl fmt::Debug for ZkAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZkAuth").field("user", &self.user).field("password", &"***").finish()
    }
}

impl fmt::Display for ZkAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "digest:{}:***", self.user)
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
            ZkAuth::parse("sasl:kwire:x"),
            Err(AuthError::UnsupportedScheme { scheme: "sasl".into() })
        );
        assert_eq!(ZkAuth::parse("kwire"), Err(AuthError::UnsupportedScheme { scheme: String::new() }));
        assert_eq!(ZkAuth::parse("digest:kwire"), Err(AuthError::MissingPassword));
        assert_eq!(ZkAuth::parse("digest::secret"), Err(AuthError::EmptyUser));
    }

    #[test]
    fn debug_and_display_hide_the_password() {
        let auth = ZkAuth::parse("digest:kwire:SECRETPASS").unwrap();
        for text in [format!("{auth:?}"), auth.to_string()] {
            assert!(!text.contains("SECRETPASS") && text.contains("kwire"), "{text}");
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
