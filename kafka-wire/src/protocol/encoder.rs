//! The writing half of the primitives: appends to a `Vec<u8>` in a version's style.

use bytes::Bytes;

use super::broker_ids::BrokerIds;
use super::error::EncodeError;
use super::request_frame::{RequestFrame, SPLICE_MIN};
use super::tagged::TaggedFields;
use kafka_vocab::Uuid;

/// An output buffer plus whether the message version being written is flexible.
#[derive(Debug, Default)]
pub struct Encoder {
    buf: Vec<u8>,
    flexible: bool,
    /// With `Some`, [`shared_nullable_bytes`](Self::shared_nullable_bytes) of a large field
    /// records it here (at its offset in `buf`) instead of copying it.
    splices: Option<Vec<(usize, Bytes)>>,
}

/// The result of every write that can fail: a value the version cannot express.
pub type EncodeResult = Result<(), EncodeError>;

impl Encoder {
    /// An empty buffer for a message whose version is flexible or not.
    pub fn new(flexible: bool) -> Self {
        Self { buf: Vec::new(), flexible, splices: None }
    }

    /// Appends to `buf` (e.g. after a frame's reserved size prefix).
    pub fn with_buffer(buf: Vec<u8>, flexible: bool) -> Self {
        Self { buf, flexible, splices: None }
    }

    /// Like [`with_buffer`](Self::with_buffer), but large shared byte fields are kept by
    /// reference: finish with [`into_frame`](Self::into_frame).
    pub(crate) fn splicing(buf: Vec<u8>, flexible: bool) -> Self {
        Self { buf, flexible, splices: Some(Vec::new()) }
    }

    /// The written bytes with the spliced fields in place, as one frame.
    pub(crate) fn into_frame(self) -> RequestFrame {
        RequestFrame::new(self.buf, self.splices.unwrap_or_default())
    }

    /// Whether strings, arrays and bytes are written in the compact (flexible-version) form.
    #[inline]
    pub fn is_flexible(&self) -> bool {
        self.flexible
    }

    /// Switches between the compact and classic forms (headers and bodies may differ).
    pub fn set_flexible(&mut self, flexible: bool) {
        self.flexible = flexible;
    }

    /// Bytes written so far (spliced fields included).
    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len() + self.splices.as_ref().map_or(0, |s| s.iter().map(|(_, b)| b.len()).sum())
    }

    /// Whether nothing has been written.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The written bytes. Fields spliced by an encoder made with `splicing` are not in them:
    /// use `into_frame` there.
    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }

    /// The buffer, for patching a length or CRC written earlier (offsets before the first
    /// spliced field are the frame's own).
    pub fn as_mut_vec(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Appends `bytes` as they are, with no length prefix.
    #[inline]
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Writes a big-endian INT8.
    #[inline]
    pub fn i8(&mut self, v: i8) {
        self.buf.push(v as u8);
    }
    /// Writes a big-endian UINT8.
    #[inline]
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    /// Writes a BOOLEAN as 0 or 1.
    #[inline]
    pub fn bool(&mut self, v: bool) {
        self.buf.push(u8::from(v));
    }
    /// Writes a big-endian INT16.
    #[inline]
    pub fn i16(&mut self, v: i16) {
        self.raw(&v.to_be_bytes());
    }
    /// Writes a big-endian UINT16.
    #[inline]
    pub fn u16(&mut self, v: u16) {
        self.raw(&v.to_be_bytes());
    }
    /// Writes a big-endian INT32.
    #[inline]
    pub fn i32(&mut self, v: i32) {
        self.raw(&v.to_be_bytes());
    }
    /// Writes a big-endian UINT32.
    #[inline]
    pub fn u32(&mut self, v: u32) {
        self.raw(&v.to_be_bytes());
    }
    /// Writes a big-endian INT64.
    #[inline]
    pub fn i64(&mut self, v: i64) {
        self.raw(&v.to_be_bytes());
    }
    /// Writes a FLOAT64 (IEEE 754, big-endian).
    #[inline]
    pub fn f64(&mut self, v: f64) {
        self.raw(&v.to_be_bytes());
    }
    /// Writes a UUID: 16 raw bytes.
    #[inline]
    pub fn uuid(&mut self, v: Uuid) {
        self.raw(&v.0);
    }

    /// Writes an unsigned LEB128 varint (UNSIGNED_VARINT), 1–5 bytes.
    #[inline]
    pub fn uvarint(&mut self, v: u32) {
        self.uvarlong(u64::from(v));
    }

    /// Writes an unsigned LEB128 varlong, 1–10 bytes.
    #[inline]
    pub fn uvarlong(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    /// Writes a zig-zag signed varint (VARINT), as used inside records.
    #[inline]
    pub fn varint(&mut self, v: i32) {
        self.uvarint(((v << 1) ^ (v >> 31)) as u32);
    }

    /// Writes a zig-zag signed varlong (VARLONG).
    #[inline]
    pub fn varlong(&mut self, v: i64) {
        self.uvarlong(((v << 1) ^ (v >> 63)) as u64);
    }

    /// Writes a length prefix in this version's style; `None` is null.
    #[inline]
    fn length(&mut self, len: Option<usize>, classic_i16: bool, field: &'static str) -> EncodeResult {
        let too_long = || EncodeError::TooLong { field, len: len.unwrap_or(0) };
        if self.flexible {
            match len {
                None => self.uvarint(0),
                Some(n) => {
                    let n = u32::try_from(n).ok().and_then(|n| n.checked_add(1)).ok_or_else(too_long)?;
                    self.uvarint(n);
                }
            }
        } else if classic_i16 {
            match len {
                None => self.i16(-1),
                Some(n) => self.i16(i16::try_from(n).map_err(|_| too_long())?),
            }
        } else {
            match len {
                None => self.i32(-1),
                Some(n) => self.i32(i32::try_from(n).map_err(|_| too_long())?),
            }
        }
        Ok(())
    }

    /// Writes NULLABLE_STRING (COMPACT_NULLABLE_STRING in flexible versions); `None` is null. Too long for
    /// the prefix: [`EncodeError::TooLong`].
    #[inline]
    pub fn nullable_string(&mut self, v: Option<&str>, field: &'static str) -> EncodeResult {
        self.length(v.map(str::len), true, field)?;
        if let Some(s) = v {
            self.raw(s.as_bytes());
        }
        Ok(())
    }

    /// Writes a non-nullable STRING (COMPACT_STRING in flexible versions).
    #[inline]
    pub fn string(&mut self, v: &str, field: &'static str) -> EncodeResult {
        self.nullable_string(Some(v), field)
    }

    /// The request header's client id: always a classic i16-length string.
    pub fn classic_nullable_string(&mut self, v: Option<&str>, field: &'static str) -> EncodeResult {
        let flexible = std::mem::replace(&mut self.flexible, false);
        let out = self.nullable_string(v, field);
        self.flexible = flexible;
        out
    }

    /// Writes NULLABLE_BYTES (COMPACT_NULLABLE_BYTES in flexible versions); `None` is null.
    #[inline]
    pub fn nullable_bytes(&mut self, v: Option<&[u8]>, field: &'static str) -> EncodeResult {
        self.length(v.map(<[u8]>::len), false, field)?;
        if let Some(b) = v {
            self.raw(b);
        }
        Ok(())
    }

    /// [`nullable_bytes`](Self::nullable_bytes) of a shared buffer: an encoder made to splice
    /// keeps a large one by reference (no copy); any other copies it.
    #[inline]
    pub fn shared_nullable_bytes(&mut self, v: Option<&Bytes>, field: &'static str) -> EncodeResult {
        self.length(v.map(Bytes::len), false, field)?;
        match (v, self.splices.as_mut()) {
            (Some(b), Some(splices)) if b.len() >= SPLICE_MIN => splices.push((self.buf.len(), b.clone())),
            (Some(b), _) => self.raw(b),
            (None, _) => {}
        }
        Ok(())
    }

    /// Writes non-nullable BYTES (COMPACT_BYTES in flexible versions).
    #[inline]
    pub fn bytes(&mut self, v: &[u8], field: &'static str) -> EncodeResult {
        self.nullable_bytes(Some(v), field)
    }

    /// Writes a nullable array (compact in flexible versions): the count, then `element` for each item;
    /// `None` is null.
    #[inline]
    pub fn nullable_array<T>(
        &mut self,
        v: Option<&[T]>,
        field: &'static str,
        mut element: impl FnMut(&mut Encoder, &T) -> EncodeResult,
    ) -> EncodeResult {
        self.length(v.map(<[T]>::len), false, field)?;
        for item in v.unwrap_or_default() {
            element(self, item)?;
        }
        Ok(())
    }

    /// Writes a non-nullable array; see [`Encoder::nullable_array`].
    #[inline]
    pub fn array<T>(
        &mut self,
        v: &[T],
        field: &'static str,
        element: impl FnMut(&mut Encoder, &T) -> EncodeResult,
    ) -> EncodeResult {
        self.nullable_array(Some(v), field, element)
    }

    /// Writes an array of INT32.
    #[inline]
    pub fn i32_array(&mut self, v: &[i32], field: &'static str) -> EncodeResult {
        self.fixed_array(v, field, i32::to_be_bytes)
    }

    /// A list of broker ids as an `int32` array. One stored inline is appended as one
    /// fixed-size block and trimmed to its length: element by element, each append re-checks
    /// the capacity, and a variable-length copy is a `memcpy` call (Metadata writes two or
    /// three lists per partition).
    #[inline]
    pub fn broker_ids(&mut self, ids: &BrokerIds, field: &'static str) -> EncodeResult {
        let Some((window, len)) = ids.to_be_window() else {
            return self.i32_array(ids, field);
        };
        self.length(Some(len), false, field)?;
        let end = self.buf.len() + 4 * len;
        self.buf.extend_from_slice(&window);
        self.buf.truncate(end);
        Ok(())
    }

    /// Writes an array of INT64.
    #[inline]
    pub fn i64_array(&mut self, v: &[i64], field: &'static str) -> EncodeResult {
        self.fixed_array(v, field, i64::to_be_bytes)
    }

    /// A non-nullable array of `N`-byte big-endian numbers: the length, then every element.
    #[inline]
    fn fixed_array<T: Copy, const N: usize>(
        &mut self,
        v: &[T],
        field: &'static str,
        to_be: impl Fn(T) -> [u8; N],
    ) -> EncodeResult {
        self.length(Some(v.len()), false, field)?;
        self.buf.reserve(v.len() * N);
        for x in v {
            self.buf.extend_from_slice(&to_be(*x));
        }
        Ok(())
    }

    /// Writes the tagged-field section in a flexible version. In a non-flexible version the
    /// section does not exist, and any non-empty set is an error rather than silently lost.
    #[inline]
    pub fn tagged_fields(&mut self, tags: &TaggedFields, field: &'static str, version: i16) -> EncodeResult {
        if tags.is_empty() {
            if self.flexible {
                self.buf.push(0);
            }
            return Ok(());
        }
        self.tagged_fields_slow(tags, field, version)
    }

    #[inline(never)]
    fn tagged_fields_slow(&mut self, tags: &TaggedFields, field: &'static str, version: i16) -> EncodeResult {
        if !self.flexible {
            return if tags.is_empty() {
                Ok(())
            } else {
                Err(EncodeError::FieldNotInVersion { field, version })
            };
        }
        self.uvarint(u32::try_from(tags.len()).map_err(|_| EncodeError::TooLong { field, len: tags.len() })?);
        for (tag, data) in tags {
            self.uvarint(*tag);
            self.uvarint(
                u32::try_from(data.len()).map_err(|_| EncodeError::TooLong { field, len: data.len() })?,
            );
            self.raw(data);
        }
        Ok(())
    }
}
