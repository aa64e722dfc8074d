//! Kafka's 128-bit UUID and its text form: URL-safe base64 without padding, 22 characters
//! (Java's `Uuid.toString()`). The one codec for topic ids in every crate and file format.

use std::error::Error;
use std::fmt;
use std::str::FromStr;

/// A Kafka UUID (a topic id, KIP-516): 16 bytes, big-endian. [`Uuid::ZERO`] is Kafka's
/// "no id"; whether a zero is acceptable is the caller's decision ([`Uuid::known`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Uuid(pub [u8; 16]);

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Why a text is not a UUID in Kafka's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum UuidParseError {
    /// Kafka's text form is exactly 22 characters.
    WrongLength {
        /// The input's length in bytes.
        found: usize,
    },
    /// A character outside the URL-safe base64 alphabet, at this byte position.
    InvalidCharacter {
        /// 0-based byte index of the first such character.
        position: usize,
    },
    /// The last character carries bits beyond the 128 of the id (not what Kafka prints).
    NonCanonical,
}

impl fmt::Display for UuidParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::WrongLength { found } => {
                write!(f, "a topic id is 22 base64url characters, found {found}")
            }
            Self::InvalidCharacter { position } => {
                write!(f, "invalid base64url character at position {position}")
            }
            Self::NonCanonical => f.write_str("topic id has trailing bits set"),
        }
    }
}

impl Error for UuidParseError {}

impl Uuid {
    /// Kafka's "no id" value (all zero bits): what a broker answers for a topic that has no id
    /// and what a request sends when it has none to give.
    pub const ZERO: Uuid = Uuid([0; 16]);

    /// Whether this is [`Uuid::ZERO`].
    #[inline]
    pub fn is_zero(&self) -> bool {
        u128::from_ne_bytes(self.0) == 0
    }

    /// `Some(self)` unless it is [`Uuid::ZERO`]: a wire value read as "an id, if any".
    #[inline]
    pub fn known(self) -> Option<Uuid> {
        (!self.is_zero()).then_some(self)
    }

    /// Parses Kafka's 22-character base64url form; [`Uuid::ZERO`]'s form
    /// (`AAAAAAAAAAAAAAAAAAAAAA`) parses to the zero id.
    pub fn parse(text: &str) -> Result<Uuid, UuidParseError> {
        let bytes = text.as_bytes();
        if bytes.len() != 22 {
            return Err(UuidParseError::WrongLength { found: bytes.len() });
        }
        let mut bits: u128 = 0;
        for (position, &c) in bytes.iter().enumerate() {
            let v = match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'-' => 62,
                b'_' => 63,
                _ => return Err(UuidParseError::InvalidCharacter { position }),
            };
            if position == 21 {
                // 21 * 6 = 126 bits so far; the last character holds 2 data bits + 4 zero bits.
                if v & 0b1111 != 0 {
                    return Err(UuidParseError::NonCanonical);
                }
                bits = (bits << 2) | u128::from(v >> 4);
            } else {
                bits = (bits << 6) | u128::from(v);
            }
        }
        Ok(Uuid(bits.to_be_bytes()))
    }
}

impl From<[u8; 16]> for Uuid {
    fn from(bytes: [u8; 16]) -> Uuid {
        Uuid(bytes)
    }
}

impl FromStr for Uuid {
    type Err = UuidParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse(s)
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bits = u128::from_be_bytes(self.0);
        let mut out = [0u8; 22];
        for (i, slot) in out.iter_mut().enumerate().take(21) {
            let shift = 128 - 6 * (i + 1);
            *slot = ALPHABET[((bits >> shift) & 0x3f) as usize];
        }
        out[21] = ALPHABET[((bits & 0x3) << 4) as usize];
        // Only ASCII from the alphabet above was written.
        f.write_str(std::str::from_utf8(&out).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Uuid({self})")
    }
}

/// Serialized as its text form, as Kafka's JSON converters write it.
#[cfg(feature = "serde")]
impl serde::Serialize for Uuid {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn prints_as_java_uuid_to_string() {
        assert_eq!(Uuid::ZERO.to_string(), "AAAAAAAAAAAAAAAAAAAAAA");
        let mut one = [0u8; 16];
        one[15] = 1;
        assert_eq!(Uuid(one).to_string(), "AAAAAAAAAAAAAAAAAAAAAQ");
        assert_eq!(Uuid([0xff; 16]).to_string(), "_____________________w");
    }

    #[test]
    fn malformed_text_is_refused_with_the_reason() {
        assert_eq!(Uuid::parse(""), Err(UuidParseError::WrongLength { found: 0 }));
        assert_eq!(Uuid::parse("AAAAAAAAAAAAAAAAAAAAA"), Err(UuidParseError::WrongLength { found: 21 }));
        assert_eq!(
            Uuid::parse("AAAAAAAAAAAAAAAAAAAAA+"),
            Err(UuidParseError::InvalidCharacter { position: 21 })
        );
        assert_eq!(Uuid::parse("AAAAAAAAAAAAAAAAAAAAAB"), Err(UuidParseError::NonCanonical));
        // 22 bytes, but a two-byte character: refused, not sliced.
        assert!(Uuid::parse("AAAAAAAAAAAAAAAAAAAAéA").is_err());
    }

    #[test]
    fn zero_is_unknown() {
        assert_eq!(Uuid::ZERO.known(), None);
        assert_eq!(Uuid([7; 16]).known(), Some(Uuid([7; 16])));
    }

    proptest! {
        #[test]
        fn parse_inverts_display(bytes in any::<[u8; 16]>()) {
            let id = Uuid(bytes);
            prop_assert_eq!(Uuid::parse(&id.to_string()), Ok(id));
        }

        #[test]
        fn parse_never_panics(text in "\\PC{0,30}") {
            let _ = Uuid::parse(&text);
        }
    }
}
