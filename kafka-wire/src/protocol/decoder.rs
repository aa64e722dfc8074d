//! The reading half of the primitives: a cursor over a [`Bytes`] buffer.
//!
//! Every read names the field it is reading so an error can say where it failed. Lengths and
//! counts read off the wire are checked against the bytes left before anything is allocated:
//! a count of 2^31 elements in a 7-byte body is an error, not a 171 GB reservation.

use bytes::Bytes;

use super::broker_ids::{self, BrokerIds};
use super::error::{DecodeError, DecodeErrorKind};
use super::tagged::TaggedFields;
use kafka_vocab::Uuid;

/// A read position in an immutable buffer, plus whether the message version being read is
/// flexible (KIP-482 compact lengths and tagged fields).
#[derive(Debug, Clone)]
pub struct Decoder {
    buf: Bytes,
    pos: usize,
    /// Offset of `buf[0]` in the outermost input, so nested decoders report absolute offsets.
    base: usize,
    flexible: bool,
}

/// The result of every read: the value, or where and why the bytes were wrong.
pub type DecodeResult<T> = Result<T, DecodeError>;

/// Most elements reserved up front for an array, whatever its count claims.
const PREALLOCATE_MAX: usize = 1024;

impl Decoder {
    /// A decoder for a non-flexible message; see [`Decoder::with_flexible`].
    pub fn new(buf: Bytes) -> Self {
        Self { buf, pos: 0, base: 0, flexible: false }
    }

    /// A decoder for a message at a version whose flexibility is `flexible`.
    pub fn with_flexible(buf: Bytes, flexible: bool) -> Self {
        Self { buf, pos: 0, base: 0, flexible }
    }

    /// Whether strings, arrays and bytes are read in the compact (flexible-version) form.
    pub fn is_flexible(&self) -> bool {
        self.flexible
    }

    /// Switches between the compact and classic forms (headers and bodies may differ).
    pub fn set_flexible(&mut self, flexible: bool) {
        self.flexible = flexible;
    }

    /// Absolute byte offset of the next read.
    #[inline]
    pub fn position(&self) -> usize {
        self.base + self.pos
    }

    /// Bytes not yet read.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// An error of `kind` in `field`, at the current position.
    #[cold]
    pub fn error(&self, kind: DecodeErrorKind, field: &'static str) -> DecodeError {
        DecodeError::new(kind, field, self.position())
    }

    /// Fails unless every byte was consumed.
    pub fn finish(&self, field: &'static str) -> DecodeResult<()> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(self.error(DecodeErrorKind::TrailingBytes(n), field)),
        }
    }

    #[inline]
    fn need(&self, n: usize, field: &'static str) -> DecodeResult<()> {
        if self.remaining() < n {
            Err(self.incomplete(n, field))
        } else {
            Ok(())
        }
    }

    #[cold]
    #[inline(never)]
    fn incomplete(&self, n: usize, field: &'static str) -> DecodeError {
        self.error(DecodeErrorKind::Incomplete { needed: n - self.remaining() }, field)
    }

    /// Takes the next `n` bytes as a zero-copy slice of the input.
    pub fn take(&mut self, n: usize, field: &'static str) -> DecodeResult<Bytes> {
        self.need(n, field)?;
        let out = self.buf.slice(self.pos..self.pos + n);
        self.pos += n;
        Ok(out)
    }

    /// Splits off the next `n` bytes as a decoder of their own (same flexibility), keeping
    /// absolute offsets in its errors.
    pub fn sub(&mut self, n: usize, field: &'static str) -> DecodeResult<Decoder> {
        let base = self.position();
        let buf = self.take(n, field)?;
        Ok(Decoder { buf, pos: 0, base, flexible: self.flexible })
    }

    #[inline]
    fn fixed<const N: usize>(&mut self, field: &'static str) -> DecodeResult<[u8; N]> {
        match self.buf.get(self.pos..).and_then(<[u8]>::first_chunk::<N>) {
            Some(out) => {
                self.pos += N;
                Ok(*out)
            }
            None => Err(self.incomplete(N, field)),
        }
    }

    /// Reads a big-endian INT8; `field` names it in errors.
    #[inline]
    pub fn i8(&mut self, field: &'static str) -> DecodeResult<i8> {
        Ok(i8::from_be_bytes(self.fixed(field)?))
    }
    /// Reads a big-endian UINT8; `field` names it in errors.
    #[inline]
    pub fn u8(&mut self, field: &'static str) -> DecodeResult<u8> {
        Ok(u8::from_be_bytes(self.fixed(field)?))
    }
    /// Reads a BOOLEAN: one byte, any non-zero value is true.
    #[inline]
    pub fn bool(&mut self, field: &'static str) -> DecodeResult<bool> {
        Ok(self.u8(field)? != 0)
    }
    /// Reads a big-endian INT16; `field` names it in errors.
    #[inline]
    pub fn i16(&mut self, field: &'static str) -> DecodeResult<i16> {
        Ok(i16::from_be_bytes(self.fixed(field)?))
    }
    /// Reads a big-endian UINT16; `field` names it in errors.
    #[inline]
    pub fn u16(&mut self, field: &'static str) -> DecodeResult<u16> {
        Ok(u16::from_be_bytes(self.fixed(field)?))
    }
    /// Reads a big-endian INT32; `field` names it in errors.
    #[inline]
    pub fn i32(&mut self, field: &'static str) -> DecodeResult<i32> {
        Ok(i32::from_be_bytes(self.fixed(field)?))
    }
    /// Reads a big-endian UINT32; `field` names it in errors.
    #[inline]
    pub fn u32(&mut self, field: &'static str) -> DecodeResult<u32> {
        Ok(u32::from_be_bytes(self.fixed(field)?))
    }
    /// Reads a big-endian INT64; `field` names it in errors.
    #[inline]
    pub fn i64(&mut self, field: &'static str) -> DecodeResult<i64> {
        Ok(i64::from_be_bytes(self.fixed(field)?))
    }
    /// Reads a FLOAT64 (IEEE 754, big-endian).
    #[inline]
    pub fn f64(&mut self, field: &'static str) -> DecodeResult<f64> {
        Ok(f64::from_be_bytes(self.fixed(field)?))
    }
    /// Reads a UUID: 16 raw bytes.
    #[inline]
    pub fn uuid(&mut self, field: &'static str) -> DecodeResult<Uuid> {
        Ok(Uuid(self.fixed(field)?))
    }

    /// Unsigned LEB128 varint of at most 5 bytes (a `u32`).
    #[inline]
    pub fn uvarint(&mut self, field: &'static str) -> DecodeResult<u32> {
        // One byte (a compact length under 127, an empty tag section) is the common case.
        if let Some(&b) = self.buf.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                return Ok(u32::from(b));
            }
        }
        let v = self.uvarlong_bounded(5, field)?;
        u32::try_from(v).map_err(|_| self.error(DecodeErrorKind::VarintTooLong, field))
    }

    /// Unsigned LEB128 varint of at most 10 bytes (a `u64`).
    pub fn uvarlong(&mut self, field: &'static str) -> DecodeResult<u64> {
        self.uvarlong_bounded(10, field)
    }

    fn uvarlong_bounded(&mut self, max_bytes: usize, field: &'static str) -> DecodeResult<u64> {
        let mut value: u64 = 0;
        for i in 0..max_bytes {
            let byte = self.u8(field)?;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.error(DecodeErrorKind::VarintTooLong, field))
    }

    /// Zig-zag signed varint (protobuf style), as used inside records.
    pub fn varint(&mut self, field: &'static str) -> DecodeResult<i32> {
        let v = self.uvarint(field)?;
        Ok(((v >> 1) as i32) ^ -((v & 1) as i32))
    }

    /// Zig-zag signed varlong.
    pub fn varlong(&mut self, field: &'static str) -> DecodeResult<i64> {
        let v = self.uvarlong(field)?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    /// Reads a length prefix in this version's style: `None` is null.
    /// Classic: i16 (strings) or i32 (bytes, arrays) with −1 = null. Compact: uvarint N+1, 0 = null.
    /// Always inlined: every array and string starts here, and at the call site `classic_i16`
    /// is a constant, so only one of the three branches remains (out of line, it was 14% of a
    /// Metadata decode).
    #[inline(always)]
    #[allow(clippy::inline_always)]
    fn length(&mut self, classic_i16: bool, field: &'static str) -> DecodeResult<Option<usize>> {
        let n: i64 = if self.flexible {
            i64::from(self.uvarint(field)?) - 1
        } else if classic_i16 {
            i64::from(self.i16(field)?)
        } else {
            i64::from(self.i32(field)?)
        };
        match n {
            -1 => Ok(None),
            n if n < 0 => Err(self.error(DecodeErrorKind::NegativeLength(n), field)),
            n => Ok(Some(n as usize)),
        }
    }

    #[inline]
    pub(crate) fn checked_len(
        &self,
        len: usize,
        min_elem: usize,
        field: &'static str,
    ) -> DecodeResult<usize> {
        let needed = len.saturating_mul(min_elem.max(1));
        if needed > self.remaining() {
            return Err(self.exceeds(len, field));
        }
        Ok(len)
    }

    #[cold]
    #[inline(never)]
    fn exceeds(&self, len: usize, field: &'static str) -> DecodeError {
        self.error(
            DecodeErrorKind::LengthExceedsInput { claimed: len as u64, available: self.remaining() },
            field,
        )
    }

    /// Always inlined, with the copy out of line: a result returned through memory was
    /// written as 8-byte stores and read back as 16-byte loads, a store-forwarding stall per
    /// string (30% of an OffsetFetch decode, where most strings are the empty metadata).
    #[inline(always)]
    #[allow(clippy::inline_always)]
    pub fn nullable_string(&mut self, field: &'static str) -> DecodeResult<Option<String>> {
        match self.length(true, field)? {
            None => Ok(None),
            Some(0) => Ok(Some(String::new())),
            Some(n) => self.string_of_len(n, field).map(Some),
        }
    }

    /// The `n` bytes of a string whose length prefix was just read.
    fn string_of_len(&mut self, n: usize, field: &'static str) -> DecodeResult<String> {
        let n = self.checked_len(n, 1, field)?;
        let start = self.position();
        // Borrowed, not a refcounted `Bytes` slice: the string is copied out anyway.
        let raw = &self.buf[self.pos..self.pos + n];
        let out = match std::str::from_utf8(raw) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => Err(DecodeError::new(DecodeErrorKind::InvalidUtf8, field, start)),
        };
        self.pos += n;
        out
    }

    /// Reads a non-nullable STRING (COMPACT_STRING in flexible versions); null is
    /// [`DecodeErrorKind::UnexpectedNull`].
    #[inline]
    pub fn string(&mut self, field: &'static str) -> DecodeResult<String> {
        self.nullable_string(field)?.ok_or_else(|| self.error(DecodeErrorKind::UnexpectedNull, field))
    }

    /// The request header's client id: a classic i16-length nullable string even in flexible
    /// header v2, so any broker can parse it.
    pub fn classic_nullable_string(&mut self, field: &'static str) -> DecodeResult<Option<String>> {
        let flexible = std::mem::replace(&mut self.flexible, false);
        let out = self.nullable_string(field);
        self.flexible = flexible;
        out
    }

    /// Reads NULLABLE_BYTES (COMPACT_NULLABLE_BYTES in flexible versions), zero-copy.
    pub fn nullable_bytes(&mut self, field: &'static str) -> DecodeResult<Option<Bytes>> {
        match self.length(false, field)? {
            None => Ok(None),
            Some(n) => {
                let n = self.checked_len(n, 1, field)?;
                Ok(Some(self.take(n, field)?))
            }
        }
    }

    /// Reads non-nullable BYTES (COMPACT_BYTES in flexible versions), zero-copy.
    pub fn bytes(&mut self, field: &'static str) -> DecodeResult<Bytes> {
        self.nullable_bytes(field)?.ok_or_else(|| self.error(DecodeErrorKind::UnexpectedNull, field))
    }

    /// A nullable array whose elements each take at least `min_elem` bytes on the wire; the
    /// count is checked against the bytes left before any allocation.
    #[inline]
    pub fn nullable_array<T>(
        &mut self,
        field: &'static str,
        min_elem: usize,
        mut element: impl FnMut(&mut Decoder) -> DecodeResult<T>,
    ) -> DecodeResult<Option<Vec<T>>> {
        let Some(n) = self.length(false, field)? else { return Ok(None) };
        let n = self.checked_len(n, min_elem, field)?;
        // Capacity grows with decoded elements past a small head start, so memory stays
        // proportional to what was actually decoded, not to what the count claimed.
        let mut out = Vec::with_capacity(n.min(PREALLOCATE_MAX));
        for _ in 0..n {
            out.push(element(self)?);
        }
        Ok(Some(out))
    }

    /// A non-nullable array; see [`Decoder::nullable_array`] for `min_elem`.
    #[inline]
    pub fn array<T>(
        &mut self,
        field: &'static str,
        min_elem: usize,
        element: impl FnMut(&mut Decoder) -> DecodeResult<T>,
    ) -> DecodeResult<Vec<T>> {
        self.nullable_array(field, min_elem, element)?
            .ok_or_else(|| self.error(DecodeErrorKind::UnexpectedNull, field))
    }

    /// An array of INT32 (e.g. partition indexes).
    #[inline]
    pub fn i32_array(&mut self, field: &'static str) -> DecodeResult<Vec<i32>> {
        self.fixed_array(field, i32::from_be_bytes)
    }

    /// An array of INT64.
    #[inline]
    pub fn i64_array(&mut self, field: &'static str) -> DecodeResult<Vec<i64>> {
        self.fixed_array(field, i64::from_be_bytes)
    }

    /// A non-nullable array of broker ids (`int32`), kept inline when short.
    ///
    /// Always inlined: returned through memory, the ids were written as 4-byte stores and
    /// read back as 8- and 16-byte loads, a store-forwarding stall per list (a third of a
    /// Metadata decode).
    #[inline(always)]
    #[allow(clippy::inline_always)]
    pub fn broker_ids(&mut self, field: &'static str) -> DecodeResult<BrokerIds> {
        let n = self.fixed_array_len(4, field)?;
        let rest = &self.buf[self.pos..];
        let out = match rest.first_chunk::<{ broker_ids::WINDOW }>() {
            Some(window) if 4 * n <= broker_ids::WINDOW => BrokerIds::from_be_window(window, n),
            _ => BrokerIds::from_be_bytes(&rest[..4 * n]),
        };
        self.pos += 4 * n;
        Ok(out)
    }

    /// The element count of a non-nullable array of `width`-byte elements, checked against
    /// the bytes left; the elements follow at the current position. Inlined for the same
    /// reason as [`Decoder::broker_ids`].
    #[inline(always)]
    #[allow(clippy::inline_always)]
    fn fixed_array_len(&mut self, width: usize, field: &'static str) -> DecodeResult<usize> {
        let Some(n) = self.length(false, field)? else {
            return Err(self.error(DecodeErrorKind::UnexpectedNull, field));
        };
        self.checked_len(n, width, field)
    }

    /// A non-nullable array of `N`-byte big-endian numbers, read in one pass over a slice whose
    /// length was checked first (same errors as [`Decoder::array`] element by element).
    #[inline]
    fn fixed_array<T, const N: usize>(
        &mut self,
        field: &'static str,
        from_be: impl Fn([u8; N]) -> T,
    ) -> DecodeResult<Vec<T>> {
        let n = self.fixed_array_len(N, field)?;
        let raw = &self.buf[self.pos..self.pos + n * N];
        let out = raw.chunks_exact(N).map(|c| from_be(c.try_into().unwrap_or([0; N]))).collect();
        self.pos += n * N;
        Ok(out)
    }

    /// The tagged-field section ending every struct in a flexible version, or an empty set in
    /// a non-flexible one. All tags are kept raw; messages that model a tag take it out with
    /// [`TaggedFields::take`].
    #[inline]
    pub fn tagged_fields(&mut self, field: &'static str) -> DecodeResult<TaggedFields> {
        if !self.flexible {
            return Ok(TaggedFields::default());
        }
        // Almost every section is empty: one zero byte.
        if self.buf.get(self.pos) == Some(&0) {
            self.pos += 1;
            return Ok(TaggedFields::default());
        }
        self.tagged_fields_slow(field)
    }

    #[inline(never)]
    fn tagged_fields_slow(&mut self, field: &'static str) -> DecodeResult<TaggedFields> {
        let count = self.uvarint(field)? as usize;
        let count = self.checked_len(count, 2, field)?;
        let mut fields = Vec::with_capacity(count.min(PREALLOCATE_MAX));
        let mut previous: Option<u32> = None;
        for _ in 0..count {
            let tag = self.uvarint(field)?;
            if let Some(previous) = previous {
                if tag <= previous {
                    return Err(self.error(DecodeErrorKind::TagsOutOfOrder { previous, tag }, field));
                }
            }
            previous = Some(tag);
            let size = self.uvarint(field)? as usize;
            let size = self.checked_len(size, 1, field)?;
            fields.push((tag, self.take(size, field)?));
        }
        Ok(TaggedFields::new(fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_array_count_in_a_tiny_body_is_an_error_without_allocation() {
        // 7-byte body: i32 count 0x7fffffff then three bytes.
        let mut d = Decoder::new(Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 0, 0, 0]));
        let err = d.array("topics", 4, |d| d.i32("x")).unwrap_err();
        assert!(matches!(err.kind, DecodeErrorKind::LengthExceedsInput { claimed: 0x7fff_ffff, .. }));
        assert_eq!(err.field, "topics");
    }

    #[test]
    fn an_overlong_varint_is_rejected() {
        let mut d = Decoder::new(Bytes::from_static(&[0xff; 11]));
        assert_eq!(d.uvarlong("v").unwrap_err().kind, DecodeErrorKind::VarintTooLong);
        let mut d = Decoder::new(Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x7f]));
        assert_eq!(d.uvarint("v").unwrap_err().kind, DecodeErrorKind::VarintTooLong);
    }

    #[test]
    fn zigzag_varints_decode_negative_and_positive() {
        let mut d = Decoder::new(Bytes::from_static(&[0x01, 0x02, 0x7f, 0x80, 0x01]));
        assert_eq!(d.varint("a").unwrap(), -1);
        assert_eq!(d.varint("b").unwrap(), 1);
        assert_eq!(d.varint("c").unwrap(), -64);
        assert_eq!(d.varint("d").unwrap(), 64);
    }

    #[test]
    fn compact_null_string_and_empty_string_differ() {
        let mut d = Decoder::with_flexible(Bytes::from_static(&[0x00, 0x01]), true);
        assert_eq!(d.nullable_string("a").unwrap(), None);
        assert_eq!(d.nullable_string("b").unwrap(), Some(String::new()));
    }

    #[test]
    fn tags_must_ascend() {
        let mut d = Decoder::with_flexible(Bytes::from_static(&[2, 5, 0, 3, 0]), true);
        let err = d.tagged_fields("tags").unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::TagsOutOfOrder { previous: 5, tag: 3 });
    }

    #[test]
    fn errors_report_absolute_offsets_from_sub_decoders() {
        let mut d = Decoder::new(Bytes::from_static(&[0, 0, 0, 0, 0, 1]));
        d.take(4, "skip").unwrap();
        let mut sub = d.sub(2, "sub").unwrap();
        sub.i16("x").unwrap();
        let err = sub.i8("y").unwrap_err();
        assert_eq!(err.offset, 6);
    }
}
