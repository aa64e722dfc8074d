//! Kafka's 128-bit UUID (topic ids), printed the way Kafka prints it: URL-safe base64 without
//! padding, 22 characters.

use std::fmt;

/// A Kafka UUID (a topic id): 16 bytes, big-endian; [`Uuid::ZERO`] means "none".
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Uuid(pub [u8; 16]);

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

impl Uuid {
    /// Kafka's "no id" value (all zero bits), returned for topics queried by name that have
    /// no id, and sent when a request has none to give.
    pub const ZERO: Uuid = Uuid([0; 16]);

    /// Whether this is [`Uuid::ZERO`] (no id).
    pub fn is_zero(&self) -> bool {
        *self == Self::ZERO
    }

    /// Parses Kafka's 22-character base64url form.
    pub fn parse(s: &str) -> Option<Uuid> {
        let s = s.as_bytes();
        if s.len() != 22 {
            return None;
        }
        let mut bits: u128 = 0;
        for (i, &c) in s.iter().enumerate() {
            let v = ALPHABET.iter().position(|&a| a == c)? as u128;
            if i == 21 {
                // The last character carries 2 bits of data and 4 bits of padding.
                if v & 0x0f != 0 {
                    return None;
                }
                bits = (bits << 2) | (v >> 4);
            } else {
                bits = (bits << 6) | v;
            }
        }
        Some(Uuid(bits.to_be_bytes()))
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
        f.write_str(std::str::from_utf8(&out).unwrap_or("invalid"))
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Uuid({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_prints_as_kafka_prints_it() {
        assert_eq!(Uuid::ZERO.to_string(), "AAAAAAAAAAAAAAAAAAAAAA");
    }

    #[test]
    fn parse_inverts_display() {
        let id = Uuid([0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0xff]);
        assert_eq!(Uuid::parse(&id.to_string()), Some(id));
        assert_eq!(Uuid::parse("short"), None);
    }
}
