//! Legacy MessageSet, magic 0 (Kafka 0.8–0.9) and magic 1 (0.10): what old segments and old
//! brokers still return.
//!
//! ```text
//! offset i64, message_size i32, then the message:
//!   crc u32            CRC32 (IEEE) of magic..end
//!   magic i8           0 or 1
//!   attributes i8      bits 0-2 codec; magic 1: bit 3 timestamp type
//!   timestamp i64      magic 1 only
//!   key                i32 length (-1 null) + bytes
//!   value              i32 length (-1 null) + bytes
//! ```
//!
//! A compressed message is a *wrapper*: its value is a whole message set, compressed. With
//! magic 1 the inner offsets are relative (0, 1, ...) and the wrapper carries the absolute
//! offset of the last inner message; with magic 0 inner offsets are absolute. Decoding expands
//! each wrapper into its inner messages with absolute offsets.

use bytes::Bytes;

use super::batch::TimestampType;
use super::compression::{self, Compression, COMPRESSION_MASK};
use super::{Budget, Cursor, DecodeOptions, RecordEncodeError};
use crate::protocol::decoder::DecodeResult;
use crate::protocol::error::{DecodeError, DecodeErrorKind, EncodeError};

/// Offset and size fields before each message.
pub const LOG_OVERHEAD: usize = 12;
/// crc, magic, attributes, key length, value length.
pub const MIN_MESSAGE_SIZE_V0: usize = 14;
/// The same plus the timestamp.
pub const MIN_MESSAGE_SIZE_V1: usize = 22;
/// Where the CRC-covered bytes start within an entry (at the magic byte).
const CRC_START: usize = LOG_OVERHEAD + 4;

/// One message. Decoded wrappers are replaced by their inner messages, so `offset` is always
/// absolute and `attributes` is the message's own (normally uncompressed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyMessage {
    pub offset: i64,
    /// 0 or 1.
    pub magic: i8,
    pub attributes: i8,
    /// Magic 1 only (−1 when unknown). An inner message of a LogAppendTime wrapper carries
    /// the wrapper's timestamp, as Kafka reports it.
    pub timestamp: Option<i64>,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
}

/// One top-level entry of a legacy message set: a plain message, or a compressed wrapper
/// expanded into its inner messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyBatch {
    /// The wrapper's codec, or `None` for a plain message.
    pub compression: Compression,
    pub messages: Vec<LegacyMessage>,
}

impl LegacyBatch {
    /// The offset after the last message, or `None` if there is none.
    pub fn next_offset(&self) -> Option<i64> {
        self.messages.last().map(|m| m.offset.saturating_add(1))
    }
}

impl LegacyMessage {
    /// The codec in the attributes (`None` for an id Kafka never assigned).
    pub fn compression(&self) -> Option<Compression> {
        Compression::from_id((self.attributes as u8) & COMPRESSION_MASK)
    }

    /// Magic 1's timestamp type bit; magic 0 has no timestamps (reported as create time).
    pub fn timestamp_type(&self) -> TimestampType {
        if self.magic >= 1 && self.attributes & 0x08 != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Appends the entry (offset, size, message with its CRC) to `out`. A magic-0 message has
    /// no timestamp field, so `timestamp` is not written for it.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), RecordEncodeError> {
        if !(0..=1).contains(&self.magic) {
            return Err(RecordEncodeError::Invalid(format!(
                "legacy message magic {} is not 0 or 1",
                self.magic
            )));
        }
        let start = out.len();
        out.extend_from_slice(&self.offset.to_be_bytes());
        out.extend_from_slice(&[0; 8]); // size and crc, patched below
        out.push(self.magic as u8);
        out.push(self.attributes as u8);
        if self.magic == 1 {
            out.extend_from_slice(&self.timestamp.unwrap_or(-1).to_be_bytes());
        }
        for (v, field) in [(&self.key, "key"), (&self.value, "value")] {
            match v {
                None => out.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(b) => {
                    let n =
                        i32::try_from(b.len()).map_err(|_| EncodeError::TooLong { field, len: b.len() })?;
                    out.extend_from_slice(&n.to_be_bytes());
                    out.extend_from_slice(b);
                }
            }
        }
        let size = out.len() - start - LOG_OVERHEAD;
        let size =
            i32::try_from(size).map_err(|_| EncodeError::TooLong { field: "message_size", len: size })?;
        out[start + 8..start + 12].copy_from_slice(&size.to_be_bytes());
        let crc = crc32fast::hash(&out[start + CRC_START..]);
        out[start + 12..start + CRC_START].copy_from_slice(&crc.to_be_bytes());
        Ok(())
    }
}

/// Appends a compressed wrapper holding `messages` (each written with its own magic and
/// attributes). With `magic` 1 the inner offsets are written relative to the first message
/// and the wrapper takes the last message's offset and the highest inner timestamp.
pub fn encode_compressed(
    magic: i8,
    codec: Compression,
    messages: &[LegacyMessage],
    out: &mut Vec<u8>,
) -> Result<(), RecordEncodeError> {
    let (Some(first), Some(last)) = (messages.first(), messages.last()) else {
        return Err(RecordEncodeError::Invalid("a compressed wrapper needs at least one message".into()));
    };
    if matches!(codec, Compression::None | Compression::Zstd) {
        return Err(RecordEncodeError::Invalid(format!("legacy messages cannot be wrapped with {codec}")));
    }
    let mut inner = Vec::new();
    for m in messages {
        let offset = if magic >= 1 {
            m.offset
                .checked_sub(first.offset)
                .ok_or_else(|| RecordEncodeError::Invalid("inner offsets do not fit relative form".into()))?
        } else {
            m.offset
        };
        LegacyMessage { offset, ..m.clone() }.encode(&mut inner)?;
    }
    let mut value = Vec::new();
    compression::compress(codec, &inner, &mut value)?;
    let timestamp = (magic >= 1).then(|| messages.iter().filter_map(|m| m.timestamp).max().unwrap_or(-1));
    LegacyMessage {
        offset: last.offset,
        magic,
        attributes: codec.id() as i8,
        timestamp,
        key: None,
        value: Some(Bytes::from(value)),
    }
    .encode(out)
}

fn invalid(c: &Cursor<'_>, what: String, field: &'static str) -> DecodeError {
    c.error(DecodeErrorKind::Invalid(what), field)
}

/// Decodes one entry (`bytes` is exactly offset, size and message; the size was checked by
/// the caller), appending its message — or a wrapper's inner messages — to `out`. Returns the
/// entry's codec.
pub(crate) fn read_entry(
    bytes: &Bytes,
    base: usize,
    opts: &DecodeOptions,
    budget: &mut Budget,
    depth: usize,
    out: &mut Vec<LegacyMessage>,
) -> DecodeResult<Compression> {
    let mut c = Cursor::new(bytes, base);
    let offset = c.i64("offset")?;
    let size = c.i32("message_size")?;
    let stored = c.u32("crc")?;
    let magic = c.i8("magic")?;
    let min = match magic {
        0 => MIN_MESSAGE_SIZE_V0,
        1 => MIN_MESSAGE_SIZE_V1,
        m => return Err(invalid(&c, format!("legacy message magic {m} is not 0 or 1"), "magic")),
    };
    if usize::try_from(size).map_or(true, |s| s < min) {
        return Err(invalid(
            &c,
            format!("message size {size} is below the {min}-byte minimum"),
            "message_size",
        ));
    }
    if opts.verify_crc {
        let computed = crc32fast::hash(bytes.get(CRC_START..).unwrap_or_default());
        if computed != stored {
            return Err(c.error_at(DecodeErrorKind::CrcMismatch { stored, computed }, "crc", LOG_OVERHEAD));
        }
    }
    let attributes = c.i8("attributes")?;
    let timestamp = if magic == 1 { Some(c.i64("timestamp")?) } else { None };
    let key = c.i32_bytes("key")?;
    let value_at = c.pos();
    let value = c.i32_bytes("value")?;
    if c.remaining() != 0 {
        return Err(c.error(DecodeErrorKind::TrailingBytes(c.remaining()), "message"));
    }
    let id = (attributes as u8) & COMPRESSION_MASK;
    let codec = match Compression::from_id(id) {
        Some(Compression::Zstd) | None => {
            return Err(c.error_at(DecodeErrorKind::UnsupportedCompression(id), "attributes", value_at))
        }
        Some(codec) => codec,
    };
    let message = LegacyMessage { offset, magic, attributes, timestamp, key, value };
    if codec == Compression::None {
        out.push(message);
        return Ok(codec);
    }
    if depth >= opts.max_legacy_nesting {
        return Err(c.error_at(DecodeErrorKind::TooDeep, "value", value_at));
    }
    let Some(compressed) = &message.value else {
        return Err(c.error_at(
            DecodeErrorKind::Invalid("compressed wrapper message has a null value".into()),
            "value",
            value_at,
        ));
    };
    let inner_at = base + value_at + 4;
    let plain = budget.decompress(codec, compressed, "value", inner_at)?;
    let first = out.len();
    read_inner_set(&plain, inner_at, opts, budget, depth + 1, out)?;
    let Some(inner) = out.get_mut(first..).filter(|inner| !inner.is_empty()) else {
        return Err(c.error_at(
            DecodeErrorKind::Invalid("compressed wrapper holds no messages".into()),
            "value",
            value_at,
        ));
    };
    if magic >= 1 {
        let last_relative = inner.last().map_or(0, |m| m.offset);
        let log_append = message.timestamp_type() == TimestampType::LogAppendTime;
        for m in inner.iter_mut() {
            m.offset = offset
                .checked_sub(last_relative)
                .and_then(|b| b.checked_add(m.offset))
                .ok_or_else(|| invalid(&c, "inner offset overflows".into(), "offset"))?;
            if log_append {
                m.timestamp = timestamp;
            }
        }
    }
    Ok(codec)
}

/// A wrapper's decompressed message set: every entry must be complete.
fn read_inner_set(
    data: &Bytes,
    base: usize,
    opts: &DecodeOptions,
    budget: &mut Budget,
    depth: usize,
    out: &mut Vec<LegacyMessage>,
) -> DecodeResult<()> {
    let mut c = Cursor::new(data, base);
    while c.remaining() > 0 {
        let at = c.pos();
        c.i64("offset")?;
        let size = c.i32("message_size")?;
        let size = usize::try_from(size)
            .map_err(|_| c.error(DecodeErrorKind::NegativeLength(i64::from(size)), "message_size"))?;
        c.take_slice(size, "message")?;
        let entry = data.slice(at..c.pos());
        read_entry(&entry, base + at, opts, budget, depth, out)?;
    }
    Ok(())
}
