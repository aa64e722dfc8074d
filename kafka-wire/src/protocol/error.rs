//! Typed decode and encode errors.
//!
//! A decode error separates "the bytes end too soon" ([`DecodeErrorKind::Incomplete`], which a
//! streaming reader answers by waiting for more) from "the bytes are wrong" (everything else),
//! and always says where: the field being read and its byte offset in the input.

use std::fmt;

/// What went wrong while decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The input ended `needed` bytes before the field did.
    Incomplete {
        /// At least this many more bytes are needed.
        needed: usize,
    },
    /// A length or count was negative (and not the −1 "null" marker where null is allowed).
    NegativeLength(i64),
    /// A length or element count claims more than the bytes left in the input could hold.
    LengthExceedsInput {
        /// The length or count read.
        claimed: u64,
        /// The bytes left in the input.
        available: usize,
    },
    /// A varint ran past its maximum width.
    VarintTooLong,
    /// A string was not valid UTF-8.
    InvalidUtf8,
    /// A non-nullable field was null.
    UnexpectedNull,
    /// Tagged fields must come in strictly ascending tag order.
    TagsOutOfOrder {
        /// The tag read before.
        previous: u32,
        /// The tag read now, not above `previous`.
        tag: u32,
    },
    /// A frame's size prefix is above the configured cap.
    FrameTooLarge {
        /// The size the prefix claims, in bytes.
        size: usize,
        /// The cap, in bytes.
        max: usize,
    },
    /// Bytes were left over after the message was fully decoded.
    TrailingBytes(usize),
    /// The message is not defined at this version.
    UnsupportedVersion {
        /// Kafka's name for the API.
        api: &'static str,
        /// The version asked for.
        version: i16,
    },
    /// Nesting (compressed record sets inside record sets) went deeper than allowed.
    TooDeep,
    /// A record batch's stored checksum does not match its bytes.
    CrcMismatch {
        /// The base offset of the batch (the offset of a legacy message) that failed.
        base_offset: i64,
        /// The checksum in the batch header.
        stored: u32,
        /// The checksum of the bytes received.
        computed: u32,
    },
    /// Decompressed data would exceed the configured cap (a decompression bomb).
    DecompressedTooLarge {
        /// The cap, in bytes
        /// ([`DecodeOptions::max_decompressed_size`](super::records::DecodeOptions::max_decompressed_size)).
        max: usize,
    },
    /// The compression codec is unknown or was compiled out.
    UnsupportedCompression(u8),
    /// A decompressor reported an error.
    Decompression(String),
    /// Any other violated invariant, described in words.
    Invalid(String),
}

/// A decode failure: what, in which field, at which byte offset of the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// What went wrong.
    pub kind: DecodeErrorKind,
    /// The field being read, e.g. `"brokers.host"`.
    pub field: &'static str,
    /// Byte offset from the start of the decoded buffer.
    pub offset: usize,
}

impl DecodeError {
    /// An error of `kind` in `field` at absolute byte `offset`.
    pub fn new(kind: DecodeErrorKind, field: &'static str, offset: usize) -> Self {
        Self { kind, field, offset }
    }

    /// True when more input could make the decode succeed.
    pub fn is_incomplete(&self) -> bool {
        matches!(self.kind, DecodeErrorKind::Incomplete { .. })
    }
}

impl fmt::Display for DecodeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Incomplete { needed } => write!(f, "input ends {needed} byte(s) too soon"),
            Self::NegativeLength(n) => write!(f, "negative length {n}"),
            Self::LengthExceedsInput { claimed, available } => {
                write!(f, "length {claimed} exceeds the {available} byte(s) left in the input")
            }
            Self::VarintTooLong => f.write_str("varint longer than its maximum width"),
            Self::InvalidUtf8 => f.write_str("string is not valid UTF-8"),
            Self::UnexpectedNull => f.write_str("null in a non-nullable field"),
            Self::TagsOutOfOrder { previous, tag } => {
                write!(f, "tagged field {tag} follows tag {previous} (must ascend)")
            }
            Self::FrameTooLarge { size, max } => {
                write!(f, "frame of {size} bytes exceeds the {max}-byte limit")
            }
            Self::TrailingBytes(n) => write!(f, "{n} unexpected trailing byte(s)"),
            Self::UnsupportedVersion { api, version } => {
                write!(f, "{api} is not defined at version {version}")
            }
            Self::TooDeep => f.write_str("nested record sets too deep"),
            Self::CrcMismatch { base_offset, stored, computed } => {
                write!(
                    f,
                    "checksum mismatch in the batch at offset {base_offset}: stored {stored:#010x}, computed {computed:#010x}"
                )
            }
            Self::DecompressedTooLarge { max } => {
                write!(f, "decompressed data exceeds the {max}-byte limit")
            }
            Self::UnsupportedCompression(c) => write!(f, "unsupported compression codec {c}"),
            Self::Decompression(e) => write!(f, "decompression failed: {e}"),
            Self::Invalid(s) => f.write_str(s),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (field `{}` at byte {})", self.kind, self.field, self.offset)
    }
}

impl std::error::Error for DecodeError {}

/// An encode failure: a value that the requested version cannot express.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// The message is not defined at this version.
    UnsupportedVersion {
        /// Kafka's name for the API.
        api: &'static str,
        /// The version asked for.
        version: i16,
    },
    /// A field holds a value that this version cannot carry (e.g. a null in a non-nullable
    /// version, or a non-default value in a field the version lacks).
    FieldNotInVersion {
        /// The field, e.g. `"topics.topic_id"`.
        field: &'static str,
        /// The version being written.
        version: i16,
    },
    /// A value handed to the schema interpreter (as JSON) is not of its field's type.
    InvalidValue {
        /// The field, e.g. `"topics.name"`.
        field: &'static str,
        /// What the field takes, e.g. `"an int16"`.
        expected: &'static str,
    },
    /// A string, bytes or array is longer than its length prefix can express.
    TooLong {
        /// The field, e.g. `"topics.name"`.
        field: &'static str,
        /// Its length: bytes, or elements for an array.
        len: usize,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnsupportedVersion { api, version } => {
                write!(f, "{api} is not defined at version {version}")
            }
            Self::FieldNotInVersion { field, version } => {
                write!(f, "field `{field}` cannot be expressed at version {version}")
            }
            Self::InvalidValue { field, expected } => write!(f, "field `{field}` must be {expected}"),
            Self::TooLong { field, len } => {
                write!(f, "field `{field}` is too long for its length prefix ({len})")
            }
        }
    }
}

impl std::error::Error for EncodeError {}
