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
    /// The message's offset in the log (absolute, also for messages taken out of a wrapper).
    pub offset: i64,
    /// 0 or 1.
    pub magic: i8,
    /// Bits 0–2: compression codec; bit 3 (magic 1): log-append time.
    pub attributes: i8,
    /// Magic 1 only (−1 when unknown). An inner message of a LogAppendTime wrapper carries
    /// the wrapper's timestamp, as Kafka reports it.
    pub timestamp: Option<i64>,
    /// The key; `None` is null (length −1).
    pub key: Option<Bytes>,
    /// The value; `None` is null (a tombstone).
    pub value: Option<Bytes>,
}

/// One top-level entry of a legacy message set: a plain message, or a compressed wrapper
/// expanded into its inner messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyBatch {
    /// The wrapper's codec, or `None` for a plain message.
    pub compression: Compression,
    /// The plain message alone, or the wrapper's inner messages in order.
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
/// and the wrapper takes the last message's offset and the highest inner timestamp; it is a
/// LogAppendTime wrapper when every message is LogAppendTime at that one timestamp.
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
    if magic == 0 && codec == Compression::Lz4 {
        // As Kafka writes it (KAFKA-3160), which 0.8/0.9 readers check and later ones ignore.
        compression::lz4_legacy_header_checksum(&mut value, true);
    }
    let timestamp = (magic >= 1).then(|| messages.iter().filter_map(|m| m.timestamp).max().unwrap_or(-1));
    // Kafka writes a LogAppendTime wrapper with the type bit on it and on every inner message,
    // all at the append time, and readers take the type (and the time) from the wrapper. Such
    // messages (as decoded from Kafka) get that wrapper back; any other mix stays CreateTime.
    let log_append_time = magic >= 1
        && messages
            .iter()
            .all(|m| m.timestamp_type() == TimestampType::LogAppendTime && m.timestamp == timestamp);
    LegacyMessage {
        offset: last.offset,
        magic,
        attributes: codec.id() as i8 | if log_append_time { 0x08 } else { 0 },
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
/// entry's codec. Public, with [`Budget`] and [`Entry`](super::Entry), for lazy record-set
/// readers (the client's fetch); [`RecordSet::decode`](super::RecordSet::decode) uses it too.
pub fn read_entry(
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
            return Err(c.error_at(
                DecodeErrorKind::CrcMismatch { base_offset: offset, stored, computed },
                "crc",
                LOG_OVERHEAD,
            ));
        }
    }
    let attributes = c.i8("attributes")?;
    let timestamp = if magic == 1 { Some(c.i64("timestamp")?) } else { None };
    let key = c.i32_slice("key")?.map(|k| bytes.slice_ref(k));
    let value_at = c.pos();
    let value = c.i32_slice("value")?.map(|v| bytes.slice_ref(v));
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
    let plain = Bytes::from(if magic == 0 && codec == Compression::Lz4 {
        // Kafka writes magic-0 LZ4 frames with a non-standard header checksum (KAFKA-3160).
        let mut frame = compressed.to_vec();
        compression::lz4_legacy_header_checksum(&mut frame, false);
        budget.decompress(codec, &frame, "value", inner_at)?
    } else {
        budget.decompress(codec, compressed, "value", inner_at)?
    });
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::records::set::{RecordSet, RecordSetBatch};

    /// One entry built field by field from the format description, CRC by crc32fast.
    fn message(
        offset: i64,
        magic: i8,
        attributes: i8,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Vec<u8> {
        let mut body = vec![magic as u8, attributes as u8];
        if magic == 1 {
            body.extend_from_slice(&timestamp.to_be_bytes());
        }
        for field in [key, value] {
            match field {
                None => body.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(b) => {
                    body.extend_from_slice(&(b.len() as i32).to_be_bytes());
                    body.extend_from_slice(b);
                }
            }
        }
        let mut out = offset.to_be_bytes().to_vec();
        out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
        out.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
        out.extend_from_slice(&body);
        out
    }

    fn decode(bytes: Vec<u8>) -> DecodeResult<RecordSet> {
        RecordSet::decode(&Bytes::from(bytes), &DecodeOptions::default())
    }

    fn legacy(set: &RecordSet, i: usize) -> &LegacyBatch {
        match &set.batches[i] {
            RecordSetBatch::Legacy(b) => b,
            RecordSetBatch::V2(_) => panic!("entry {i} is not legacy"),
        }
    }

    #[test]
    fn a_magic_0_message_set_is_read() {
        let mut set = message(0, 0, 0, 0, Some(b"k0"), Some(b"v0"));
        set.extend(message(1, 0, 0, 0, None, Some(b"v1")));
        let decoded = decode(set).unwrap();
        assert_eq!(decoded.batches.len(), 2);
        let m = &legacy(&decoded, 0).messages[0];
        assert_eq!((m.offset, m.magic, m.timestamp), (0, 0, None));
        assert_eq!(m.key.as_deref(), Some(&b"k0"[..]));
        assert_eq!(legacy(&decoded, 1).messages[0].key, None);
        assert_eq!(decoded.next_offset(), Some(2));
    }

    #[test]
    fn a_magic_1_message_carries_its_timestamp() {
        let decoded = decode(message(5, 1, 0x08, 1_600_000_000_000, None, None)).unwrap();
        let m = &legacy(&decoded, 0).messages[0];
        assert_eq!(m.timestamp, Some(1_600_000_000_000));
        assert_eq!(m.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!((m.key.clone(), m.value.clone()), (None, None));
    }

    #[test]
    fn a_legacy_crc_mismatch_is_reported() {
        let mut set = message(0, 1, 0, 0, Some(b"k"), Some(b"v"));
        let last = set.len() - 1;
        set[last] ^= 0x20;
        let err = decode(set).unwrap_err();
        assert!(matches!(err.kind, DecodeErrorKind::CrcMismatch { .. }));
        assert_eq!(err.offset, 12);
    }

    #[cfg(feature = "gzip")]
    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        compression::compress(Compression::Gzip, data, &mut out).unwrap();
        out
    }

    #[cfg(feature = "gzip")]
    #[test]
    fn a_gzip_wrapped_magic_1_set_has_relative_inner_offsets() {
        // Inner offsets 0, 1, 2 (relative); the wrapper carries 102, the last absolute offset.
        let mut inner = Vec::new();
        for (i, ts) in [(0, 10), (1, 11), (2, 12)] {
            inner.extend(message(i, 1, 0, ts, None, Some(format!("v{i}").as_bytes())));
        }
        let wrapper = message(102, 1, 0x01, 12, None, Some(&gzip(&inner)));
        let decoded = decode(wrapper).unwrap();
        let batch = legacy(&decoded, 0);
        assert_eq!(batch.compression, Compression::Gzip);
        let offsets: Vec<_> = batch.messages.iter().map(|m| m.offset).collect();
        assert_eq!(offsets, [100, 101, 102]);
        let timestamps: Vec<_> = batch.messages.iter().map(|m| m.timestamp).collect();
        assert_eq!(timestamps, [Some(10), Some(11), Some(12)]);
        assert_eq!(batch.messages[1].value.as_deref(), Some(&b"v1"[..]));
        assert_eq!(decoded.next_offset(), Some(103));
    }

    #[cfg(feature = "gzip")]
    #[test]
    fn a_log_append_time_wrapper_stamps_its_time_on_every_inner_message() {
        let mut inner = message(0, 1, 0, 10, None, Some(b"a"));
        inner.extend(message(1, 1, 0, 11, None, Some(b"b")));
        let wrapper = message(41, 1, 0x01 | 0x08, 999, None, Some(&gzip(&inner)));
        let decoded = decode(wrapper).unwrap();
        let batch = legacy(&decoded, 0);
        assert_eq!(
            batch.messages.iter().map(|m| (m.offset, m.timestamp)).collect::<Vec<_>>(),
            [(40, Some(999)), (41, Some(999))]
        );
    }

    #[cfg(feature = "gzip")]
    #[test]
    fn a_gzip_wrapped_magic_0_set_keeps_absolute_inner_offsets() {
        let mut inner = message(7, 0, 0, 0, None, Some(b"a"));
        inner.extend(message(8, 0, 0, 0, None, Some(b"b")));
        let decoded = decode(message(8, 0, 0x01, 0, None, Some(&gzip(&inner)))).unwrap();
        let offsets: Vec<_> = legacy(&decoded, 0).messages.iter().map(|m| m.offset).collect();
        assert_eq!(offsets, [7, 8]);
    }

    #[cfg(feature = "gzip")]
    #[test]
    fn a_wrapper_inside_a_wrapper_is_too_deep_by_default() {
        let innermost = message(0, 1, 0, 0, None, Some(b"x"));
        let middle = message(0, 1, 0x01, 0, None, Some(&gzip(&innermost)));
        let outer = message(0, 1, 0x01, 0, None, Some(&gzip(&middle)));
        assert_eq!(decode(outer.clone()).unwrap_err().kind, DecodeErrorKind::TooDeep);
        let opts = DecodeOptions { max_legacy_nesting: 2, ..DecodeOptions::default() };
        let decoded = RecordSet::decode(&Bytes::from(outer), &opts).unwrap();
        assert_eq!(legacy(&decoded, 0).messages.len(), 1);
    }

    #[cfg(feature = "gzip")]
    #[test]
    fn a_wrapper_with_a_null_or_empty_value_is_an_error() {
        assert!(matches!(
            decode(message(0, 1, 0x01, 0, None, None)).unwrap_err().kind,
            DecodeErrorKind::Invalid(_)
        ));
        let empty = message(0, 1, 0x01, 0, None, Some(&gzip(&[])));
        assert!(matches!(decode(empty).unwrap_err().kind, DecodeErrorKind::Invalid(_)));
    }

    #[test]
    fn a_zstd_legacy_wrapper_is_unsupported() {
        let err = decode(message(0, 1, 0x04, 0, None, Some(b"x"))).unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::UnsupportedCompression(4));
    }

    #[test]
    fn a_message_smaller_than_its_magic_allows_is_an_error() {
        // A magic-1 message whose size only covers magic-0 fields.
        let mut m = message(0, 0, 0, 0, None, None);
        m[16] = 1;
        assert!(matches!(decode(m).unwrap_err().kind, DecodeErrorKind::Invalid(_)));
    }

    fn legacy_message() -> impl Strategy<Value = LegacyMessage> {
        let bytes =
            || proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40).prop_map(Bytes::from));
        (0i8..=1, any::<bool>(), any::<i64>(), bytes(), bytes()).prop_map(
            |(magic, log_append, ts, key, value)| LegacyMessage {
                offset: 0,
                magic,
                attributes: if magic == 1 && log_append { 0x08 } else { 0 },
                timestamp: (magic == 1).then_some(ts),
                key,
                value,
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn encoded_legacy_sets_read_back(
            base in 0i64..1 << 40,
            messages in proptest::collection::vec(legacy_message(), 1..6),
            codec in proptest::sample::select(vec![Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4]),
        ) {
            prop_assume!(codec.is_available());
            let magic = messages[0].magic;
            let messages: Vec<_> = messages
                .into_iter()
                .enumerate()
                .map(|(i, m)| LegacyMessage {
                    offset: base + i as i64,
                    magic,
                    attributes: if magic == 0 { 0 } else { m.attributes & 0x08 },
                    timestamp: if magic == 0 { None } else { m.timestamp.or(Some(-1)) },
                    ..m
                })
                .collect();
            let mut out = Vec::new();
            if codec == Compression::None {
                for m in &messages {
                    m.encode(&mut out).unwrap();
                }
            } else {
                encode_compressed(magic, codec, &messages, &mut out).unwrap();
            }
            let set = RecordSet::decode(&Bytes::from(out), &DecodeOptions::default()).unwrap();
            prop_assert_eq!(set.batches.len(), if codec == Compression::None { messages.len() } else { 1 });
            // The wrapper written here is CreateTime, so each inner message keeps its own
            // timestamp.
            let decoded: Vec<_> = (0..set.batches.len()).flat_map(|i| legacy(&set, i).messages.clone()).collect();
            prop_assert_eq!(decoded, messages);
        }
    }

    /// Kafka 4.1.1's MemoryRecordsBuilder, magic 0, lz4, six messages from offset 40 (from
    /// `testdata/kafka-4.1.1-records.txt`): the frame's header checksum byte is Kafka's
    /// non-standard one (KAFKA-3160), 0x1a where the LZ4 format says 0x82.
    #[cfg(feature = "lz4")]
    #[test]
    fn a_magic_0_lz4_wrapper_from_kafka_decodes_despite_its_header_checksum() {
        let fixture = include_str!("testdata/kafka-4.1.1-records.txt");
        let line = fixture.lines().find(|l| l.starts_with("set v0-lz4 ")).unwrap();
        let hex = &line["set v0-lz4 ".len()..];
        let bytes: Vec<u8> =
            (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
        assert_eq!(&bytes[26..33], [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x1a]);
        let set = decode(bytes).unwrap();
        let batch = legacy(&set, 0);
        assert_eq!(batch.compression, Compression::Lz4);
        let offsets: Vec<i64> = batch.messages.iter().map(|m| m.offset).collect();
        assert_eq!(offsets, [40, 41, 42, 43, 44, 45]);
        assert_eq!(batch.messages[1].key, None);
        assert_eq!(batch.messages[0].value.as_deref(), Some(&b"value-0-"[..]));
    }

    /// kwire writes magic-0 lz4 wrappers as Kafka does (so 0.8/0.9 brokers, which check that
    /// byte, accept them), and magic-1 ones with the standard checksum; both read back.
    #[cfg(feature = "lz4")]
    #[test]
    fn lz4_wrappers_carry_the_header_checksum_kafka_writes_for_their_magic() {
        for (magic, hc) in [(0i8, 0x1a), (1, 0x82)] {
            let messages: Vec<LegacyMessage> = (0..3)
                .map(|i| LegacyMessage {
                    offset: 40 + i,
                    magic,
                    attributes: 0,
                    timestamp: (magic == 1).then_some(1_700_000_000_000 + i),
                    key: None,
                    value: Some(Bytes::from(format!("value-{i}"))),
                })
                .collect();
            let mut out = Vec::new();
            encode_compressed(magic, Compression::Lz4, &messages, &mut out).unwrap();
            // offset, size, crc, magic, attributes, [timestamp], key -1, value length: then the frame.
            let frame = 8 + 4 + 4 + 2 + if magic == 1 { 8 } else { 0 } + 4 + 4;
            assert_eq!(&out[frame..frame + 7], [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, hc], "magic {magic}");
            let set = decode(out).unwrap();
            assert_eq!(legacy(&set, 0).messages, messages, "magic {magic}");
        }
    }

    /// A LogAppendTime wrapper (as Kafka's builder writes one: the type bit on the wrapper and
    /// on each inner message) decodes and re-encodes with the bit on the wrapper, so Kafka
    /// reads it back as LogAppendTime rather than CreateTime.
    #[cfg(feature = "gzip")]
    #[test]
    fn a_log_append_time_wrapper_keeps_its_timestamp_type_through_a_round_trip() {
        let messages: Vec<LegacyMessage> = (0..2)
            .map(|i| LegacyMessage {
                offset: 52 + i,
                magic: 1,
                attributes: 0x08,
                timestamp: Some(1_700_000_055_555),
                key: None,
                value: Some(Bytes::from(format!("v{i}"))),
            })
            .collect();
        let mut out = Vec::new();
        encode_compressed(1, Compression::Gzip, &messages, &mut out).unwrap();
        assert_eq!(out[17], 0x08 | Compression::Gzip.id(), "wrapper attributes");
        let set = decode(out).unwrap();
        let batch = legacy(&set, 0);
        assert_eq!(batch.messages, messages);
        assert_eq!(batch.messages[0].timestamp_type(), TimestampType::LogAppendTime);
    }
}
