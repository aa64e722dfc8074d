//! Control records: the transaction markers (and KRaft's internal records) that live in
//! control batches. A consumer never hands them to users; a read_committed consumer uses
//! ABORT markers to know where an aborted transaction ends.
//!
//! Key: `version i16, type i16`. Transaction-marker value (ABORT/COMMIT):
//! `version i16, coordinator_epoch i32`, possibly followed by fields of later versions.

use bytes::Bytes;

use crate::protocol::error::{DecodeError, DecodeErrorKind};

/// The type in a control record's key: an open set, as KRaft uses types 2–6 (and more may
/// come) for its own records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlRecordType {
    /// Ends an aborted transaction.
    Abort,
    /// Ends a committed transaction.
    Commit,
    /// Any other type, kept by number (2 = KRaft LeaderChange, 3 = SnapshotHeader, ...).
    Unknown(i16),
}

impl ControlRecordType {
    /// The type for a wire value; values other than 0 and 1 are kept as `Unknown`.
    pub fn from_i16(v: i16) -> Self {
        match v {
            0 => Self::Abort,
            1 => Self::Commit,
            v => Self::Unknown(v),
        }
    }

    /// The wire value.
    pub fn to_i16(self) -> i16 {
        match self {
            Self::Abort => 0,
            Self::Commit => 1,
            Self::Unknown(v) => v,
        }
    }

    /// Whether this is a transaction marker (ABORT or COMMIT).
    pub fn is_transaction_marker(self) -> bool {
        matches!(self, Self::Abort | Self::Commit)
    }
}

/// A control record's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlRecordKey {
    /// 0 so far; Kafka reads later versions by their first two fields.
    pub version: i16,
    /// Which control record this is.
    pub kind: ControlRecordType,
}

fn invalid(what: &str, field: &'static str) -> DecodeError {
    DecodeError::new(DecodeErrorKind::Invalid(what.to_owned()), field, 0)
}

fn i16_at(b: &[u8], at: usize) -> Option<i16> {
    b.get(at..at + 2)?.first_chunk::<2>().map(|c| i16::from_be_bytes(*c))
}

impl ControlRecordKey {
    /// Parses a control record's key. Offsets in errors are relative to the key.
    pub fn parse(key: &[u8]) -> Result<Self, DecodeError> {
        let (Some(version), Some(kind)) = (i16_at(key, 0), i16_at(key, 2)) else {
            return Err(DecodeError::new(
                DecodeErrorKind::LengthExceedsInput { claimed: 4, available: key.len() },
                "control_record.key",
                0,
            ));
        };
        if version < 0 {
            return Err(invalid(
                &format!("control record key version {version} is negative"),
                "control_record.key",
            ));
        }
        Ok(Self { version, kind: ControlRecordType::from_i16(kind) })
    }

    /// The key as stored in a control record: version then type, two INT16s.
    pub fn to_bytes(self) -> Bytes {
        let mut out = Vec::with_capacity(4);
        out.extend_from_slice(&self.version.to_be_bytes());
        out.extend_from_slice(&self.kind.to_i16().to_be_bytes());
        Bytes::from(out)
    }
}

/// The value of an ABORT or COMMIT control record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndTransactionMarker {
    /// 0 so far; later versions may append fields, which are ignored.
    pub version: i16,
    /// The epoch of the transaction coordinator that wrote the marker.
    pub coordinator_epoch: i32,
}

impl EndTransactionMarker {
    /// Parses a marker value. Offsets in errors are relative to the value.
    pub fn parse(value: &[u8]) -> Result<Self, DecodeError> {
        let version = i16_at(value, 0);
        let epoch = value.get(2..6).and_then(<[u8]>::first_chunk::<4>).map(|c| i32::from_be_bytes(*c));
        let (Some(version), Some(coordinator_epoch)) = (version, epoch) else {
            return Err(DecodeError::new(
                DecodeErrorKind::LengthExceedsInput { claimed: 6, available: value.len() },
                "end_transaction_marker",
                0,
            ));
        };
        if version < 0 {
            return Err(invalid(
                &format!("transaction marker version {version} is negative"),
                "end_transaction_marker.version",
            ));
        }
        // Version 0 is exactly six bytes; later versions may carry more.
        if version == 0 && value.len() != 6 {
            return Err(DecodeError::new(
                DecodeErrorKind::TrailingBytes(value.len() - 6),
                "end_transaction_marker",
                6,
            ));
        }
        Ok(Self { version, coordinator_epoch })
    }

    /// The value as stored in a control record: version 0, then coordinator epoch.
    pub fn to_bytes(self) -> Bytes {
        let mut out = Vec::with_capacity(6);
        out.extend_from_slice(&self.version.to_be_bytes());
        out.extend_from_slice(&self.coordinator_epoch.to_be_bytes());
        Bytes::from(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_and_abort_keys_are_recognised_and_other_types_kept() {
        assert_eq!(ControlRecordKey::parse(&[0, 0, 0, 0]).unwrap().kind, ControlRecordType::Abort);
        assert_eq!(ControlRecordKey::parse(&[0, 0, 0, 1]).unwrap().kind, ControlRecordType::Commit);
        assert_eq!(ControlRecordKey::parse(&[0, 0, 0, 5]).unwrap().kind, ControlRecordType::Unknown(5));
        let key = ControlRecordKey { version: 0, kind: ControlRecordType::Unknown(-7) };
        assert_eq!(ControlRecordKey::parse(&key.to_bytes()).unwrap(), key);
    }

    #[test]
    fn a_short_control_key_is_an_error_not_a_panic() {
        assert!(ControlRecordKey::parse(&[0, 0, 1]).is_err());
        assert!(ControlRecordKey::parse(&[]).is_err());
        assert!(ControlRecordKey::parse(&[0xff, 0xff, 0, 0]).is_err());
    }

    #[test]
    fn transaction_marker_value_round_trips() {
        let m = EndTransactionMarker { version: 0, coordinator_epoch: 42 };
        assert_eq!(EndTransactionMarker::parse(&m.to_bytes()).unwrap(), m);
        assert!(EndTransactionMarker::parse(&[0, 0, 0, 0, 0]).is_err());
        assert!(EndTransactionMarker::parse(&[0, 0, 0, 0, 0, 1, 9]).is_err());
        // A later version may carry more fields.
        let v1 = EndTransactionMarker::parse(&[0, 1, 0, 0, 0, 7, 1, 2, 3]).unwrap();
        assert_eq!(v1, EndTransactionMarker { version: 1, coordinator_epoch: 7 });
    }
}
