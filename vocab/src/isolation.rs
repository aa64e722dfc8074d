//! Kafka's `isolation.level`.

use std::error::Error;
use std::fmt;
use std::str::FromStr;

/// Which end of the log a consumer may read up to (Kafka's `isolation.level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Isolation {
    /// Up to the high watermark: records of open and aborted transactions included.
    #[default]
    ReadUncommitted,
    /// Up to the last stable offset: nothing of a transaction still open.
    ReadCommitted,
}

impl Isolation {
    /// Both levels, in wire order.
    pub const ALL: [Isolation; 2] = [Isolation::ReadUncommitted, Isolation::ReadCommitted];

    /// The `isolation_level` byte of ListOffsets and Fetch requests (0 or 1).
    pub const fn wire(self) -> i8 {
        match self {
            Self::ReadUncommitted => 0,
            Self::ReadCommitted => 1,
        }
    }

    /// The level a request's `isolation_level` byte names; `None` for any other byte.
    pub const fn from_wire(byte: i8) -> Option<Isolation> {
        match byte {
            0 => Some(Self::ReadUncommitted),
            1 => Some(Self::ReadCommitted),
            _ => None,
        }
    }

    /// Kafka's own spelling, as in `isolation.level=read_committed`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ReadUncommitted => "read_uncommitted",
            Self::ReadCommitted => "read_committed",
        }
    }
}

impl fmt::Display for Isolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Text that names no isolation level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsolationParseError {
    /// The text given.
    pub found: String,
}

impl fmt::Display for IsolationParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown isolation level {:?}: expected read_uncommitted or read_committed", self.found)
    }
}

impl Error for IsolationParseError {}

impl FromStr for Isolation {
    type Err = IsolationParseError;

    /// Kafka's spelling (`read_committed`), in any case, with `-` accepted for `_`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let normal = s.trim().to_ascii_lowercase().replace('-', "_");
        Self::ALL
            .into_iter()
            .find(|level| level.as_str() == normal)
            .ok_or_else(|| IsolationParseError { found: s.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_spelling_and_the_kebab_alias_both_parse() {
        for text in ["read_committed", "read-committed", "READ_COMMITTED"] {
            assert_eq!(text.parse::<Isolation>(), Ok(Isolation::ReadCommitted), "{text}");
        }
        assert_eq!("read_uncommitted".parse::<Isolation>(), Ok(Isolation::ReadUncommitted));
        assert!("committed".parse::<Isolation>().is_err());
    }

    #[test]
    fn display_reads_back_and_wire_bytes_round_trip() {
        for level in Isolation::ALL {
            assert_eq!(level.to_string().parse::<Isolation>(), Ok(level));
            assert_eq!(Isolation::from_wire(level.wire()), Some(level));
        }
        assert_eq!(Isolation::from_wire(2), None);
    }
}
