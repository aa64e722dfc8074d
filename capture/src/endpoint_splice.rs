//! One pass over a response frame, driven by its schema, that replaces the host and port of
//! every broker endpoint (a struct [`rewrite::endpoint_fields`](crate::rewrite) recognises) and
//! copies every other byte as it is.
//!
//! Nothing is decoded into values and nothing is allocated while no endpoint changes: the
//! output is spliced lazily (input up to the edit, the new host and port, then on from after
//! the old ones). A tagged field whose contents change is walked on its own and written back
//! with its new size, so the tag sections of flexible versions stay consistent.
//!
//! Bounded like the typed decoder: every length and element count is checked against the bytes
//! left before it is used, and errors name the field's dotted path and absolute byte offset.

use kafka_wire::protocol::schema::{Field, FieldType};
use kafka_wire::protocol::{DecodeError, DecodeErrorKind};

use crate::rewrite::{endpoint_fields, type_has_endpoint, EndpointMap, RewriteError};

/// A walk over `input` (which starts at absolute offset `base` of the frame).
pub(crate) struct Splice<'a> {
    input: &'a [u8],
    pos: usize,
    base: usize,
    flexible: bool,
    version: i16,
    /// The rewritten bytes before `from`; empty while nothing changed.
    out: Vec<u8>,
    /// Input bytes from here on are not yet in `out`.
    from: usize,
    changed: bool,
}

/// Where and what the host and port of one endpoint were.
#[derive(Default)]
struct Found {
    host: Option<(usize, usize, bool)>,
    host_range: (usize, usize),
    port: Option<(usize, usize, bool)>,
    port_value: i32,
}

impl<'a> Splice<'a> {
    pub(crate) fn new(input: &'a [u8], base: usize, flexible: bool, version: i16) -> Self {
        Self { input, pos: 0, base, flexible, version, out: Vec::new(), from: 0, changed: false }
    }

    /// Skips a response header: the correlation id and, in header v1, its tag section.
    pub(crate) fn header(&mut self, header_version: i16) -> Result<(), RewriteError> {
        self.skip(4, "correlation_id")?;
        if header_version >= 1 {
            self.raw_tags("header.tagged_fields")?;
        }
        Ok(())
    }

    /// Walks the top-level fields of a body.
    pub(crate) fn body(
        &mut self,
        fields: &'static [Field],
        map: &mut EndpointMap<'_>,
    ) -> Result<(), RewriteError> {
        self.fields(fields, "body", map)
    }

    /// The rewritten bytes, or `None` when nothing changed. Trailing input is an error.
    pub(crate) fn finish(mut self, what: &'static str) -> Result<Option<Vec<u8>>, RewriteError> {
        if self.pos != self.input.len() {
            return Err(self.error(DecodeErrorKind::TrailingBytes(self.input.len() - self.pos), what));
        }
        if !self.changed {
            return Ok(None);
        }
        self.out.extend_from_slice(&self.input[self.from..]);
        Ok(Some(self.out))
    }

    fn error(&self, kind: DecodeErrorKind, field: &'static str) -> RewriteError {
        RewriteError::Decode(DecodeError::new(kind, field, self.base + self.pos))
    }

    fn remaining(&self) -> usize {
        self.input.len() - self.pos
    }

    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], RewriteError> {
        if self.remaining() < n {
            return Err(self.error(DecodeErrorKind::Incomplete { needed: n - self.remaining() }, field));
        }
        let out = &self.input[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn skip(&mut self, n: usize, field: &'static str) -> Result<(), RewriteError> {
        self.take(n, field).map(|_| ())
    }

    fn i8(&mut self, field: &'static str) -> Result<i8, RewriteError> {
        Ok(i8::from_be_bytes([self.take(1, field)?[0]]))
    }

    fn i16(&mut self, field: &'static str) -> Result<i16, RewriteError> {
        let b = self.take(2, field)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self, field: &'static str) -> Result<i32, RewriteError> {
        let b = self.take(4, field)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn uvarint(&mut self, field: &'static str) -> Result<u32, RewriteError> {
        let mut value: u32 = 0;
        for i in 0..5 {
            let byte = self.take(1, field)?[0];
            if i == 4 && byte > 0x0f {
                break;
            }
            value |= u32::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.error(DecodeErrorKind::VarintTooLong, field))
    }

    /// A length or count prefix in this walk's form (`classic_i16`: a STRING's i16 in classic
    /// versions); `None` is null. Checked against the bytes left at `min_element` bytes each.
    fn length(
        &mut self,
        classic_i16: bool,
        min_element: usize,
        field: &'static str,
    ) -> Result<Option<usize>, RewriteError> {
        let n: i64 = if self.flexible {
            i64::from(self.uvarint(field)?) - 1
        } else if classic_i16 {
            i64::from(self.i16(field)?)
        } else {
            i64::from(self.i32(field)?)
        };
        match usize::try_from(n) {
            Ok(n) if n.saturating_mul(min_element.max(1)) > self.remaining() => Err(self.error(
                DecodeErrorKind::LengthExceedsInput { claimed: n as u64, available: self.remaining() },
                field,
            )),
            Ok(n) => Ok(Some(n)),
            Err(_) if n == -1 => Ok(None),
            Err(_) => Err(self.error(DecodeErrorKind::NegativeLength(n), field)),
        }
    }

    /// Copies the input up to `start` into the output, lets `write` append the replacement, and
    /// goes on copying from `end`.
    fn replace(&mut self, start: usize, end: usize, write: impl FnOnce(&mut Vec<u8>)) {
        self.out.extend_from_slice(&self.input[self.from..start]);
        write(&mut self.out);
        self.from = end;
        self.changed = true;
    }

    /// The in-line fields of one struct at this version, then (flexible) its tag section.
    fn fields(
        &mut self,
        fields: &'static [Field],
        path: &'static str,
        map: &mut EndpointMap<'_>,
    ) -> Result<(), RewriteError> {
        let endpoint = endpoint_fields(fields, self.version);
        let mut found = Found::default();
        for (i, f) in fields.iter().enumerate() {
            if !f.versions.contains(self.version) || f.is_tagged_at(self.version) {
                continue;
            }
            match endpoint {
                Some((host, _)) if host == i => {
                    let start = self.pos;
                    let flexible = self.flexible && !f.classic;
                    let saved = self.flexible;
                    self.flexible = flexible;
                    let len = self.length(true, 1, f.path);
                    self.flexible = saved;
                    if let Some(len) = len? {
                        let at = self.pos;
                        self.skip(len, f.path)?;
                        found.host = Some((start, self.pos, flexible));
                        found.host_range = (at, self.pos);
                    }
                }
                Some((_, port)) if port == i => {
                    let start = self.pos;
                    let (value, wide) = if f.ty == FieldType::Uint16 {
                        let b = self.take(2, f.path)?;
                        (i32::from(u16::from_be_bytes([b[0], b[1]])), false)
                    } else {
                        (self.i32(f.path)?, true)
                    };
                    found.port = Some((start, self.pos, wide));
                    found.port_value = value;
                }
                _ => self.field(f, &f.ty, f.nullable.contains(self.version), map)?,
            }
        }
        if let (Some(host), Some(port)) = (found.host, found.port) {
            self.endpoint(host, found.host_range, port, found.port_value, map)?;
        }
        if self.flexible {
            self.tags(fields, path, map)?;
        }
        Ok(())
    }

    /// Replaces one endpoint if `map` moves it. An endpoint that names no node (empty host or a
    /// negative port, as FindCoordinator answers when there is no coordinator) stays.
    fn endpoint(
        &mut self,
        (host_start, host_end, compact): (usize, usize, bool),
        host_range: (usize, usize),
        (port_start, port_end, wide): (usize, usize, bool),
        port: i32,
        map: &mut EndpointMap<'_>,
    ) -> Result<(), RewriteError> {
        let host_bytes = &self.input[host_range.0..host_range.1];
        let Ok(host) = std::str::from_utf8(host_bytes) else {
            return Err(RewriteError::Decode(DecodeError::new(
                DecodeErrorKind::InvalidUtf8,
                "host",
                self.base + host_range.0,
            )));
        };
        if host.is_empty() || port < 0 {
            return Ok(());
        }
        let Some((new_host, new_port)) = map(host, port) else { return Ok(()) };
        if new_host == host && new_port == port {
            return Ok(());
        }
        let host_len = new_host.len();
        if !compact && i16::try_from(host_len).is_err() || compact && u32::try_from(host_len + 1).is_err() {
            return Err(RewriteError::HostTooLong(host_len));
        }
        let port_bytes: Vec<u8> = if wide {
            new_port.to_be_bytes().to_vec()
        } else {
            u16::try_from(new_port)
                .map_err(|_| RewriteError::PortOutOfRange(new_port))?
                .to_be_bytes()
                .to_vec()
        };
        let write_host = |out: &mut Vec<u8>| {
            if compact {
                put_uvarint(out, (host_len + 1) as u32);
            } else {
                out.extend_from_slice(&(host_len as i16).to_be_bytes());
            }
            out.extend_from_slice(new_host.as_bytes());
        };
        // In-line fields come in schema order; either of the two may come first.
        if host_start < port_start {
            self.replace(host_start, host_end, write_host);
            self.replace(port_start, port_end, |out| out.extend_from_slice(&port_bytes));
        } else {
            self.replace(port_start, port_end, |out| out.extend_from_slice(&port_bytes));
            self.replace(host_start, host_end, write_host);
        }
        Ok(())
    }

    /// One value of type `ty` (a field's own type, or an array's element type).
    fn field(
        &mut self,
        f: &'static Field,
        ty: &'static FieldType,
        nullable: bool,
        map: &mut EndpointMap<'_>,
    ) -> Result<(), RewriteError> {
        let path = f.path;
        match ty {
            FieldType::Bool | FieldType::Int8 => self.skip(1, path),
            FieldType::Int16 | FieldType::Uint16 => self.skip(2, path),
            FieldType::Int32 | FieldType::Uint32 => self.skip(4, path),
            FieldType::Int64 | FieldType::Float64 => self.skip(8, path),
            FieldType::Uuid => self.skip(16, path),
            FieldType::String => {
                let saved = self.flexible;
                self.flexible = saved && !f.classic;
                let len = self.length(true, 1, path);
                self.flexible = saved;
                self.present(len?, nullable, path).and_then(|n| self.skip(n, path))
            }
            FieldType::Bytes | FieldType::Records => {
                let len = self.length(false, 1, path)?;
                self.present(len, nullable, path).and_then(|n| self.skip(n, path))
            }
            FieldType::Struct(fields) => {
                // A nullable struct is preceded by an INT8: −1 for null.
                if nullable && self.i8(path)? < 0 {
                    return Ok(());
                }
                self.fields(fields, path, map)
            }
            FieldType::Array(element) => {
                let len = self.length(false, element.min_size(self.flexible), path)?;
                let count = self.present(len, nullable, path)?;
                match element {
                    FieldType::Struct(_)
                    | FieldType::Array(_)
                    | FieldType::String
                    | FieldType::Bytes
                    | FieldType::Records => {
                        for _ in 0..count {
                            self.field(f, element, false, map)?;
                        }
                        Ok(())
                    }
                    // Fixed-size elements: the count was checked against the bytes left.
                    fixed => self.skip(count * fixed.min_size(self.flexible), path),
                }
            }
        }
    }

    /// A length that must not be null unless the field is nullable (null counts as 0 bytes).
    fn present(&self, len: Option<usize>, nullable: bool, path: &'static str) -> Result<usize, RewriteError> {
        match len {
            Some(n) => Ok(n),
            None if nullable => Ok(0),
            None => Err(self.error(DecodeErrorKind::UnexpectedNull, path)),
        }
    }

    /// A tag section: known tags whose type can hold an endpoint are walked (and written back
    /// with their new size if they changed); the rest are skipped.
    fn tags(
        &mut self,
        fields: &'static [Field],
        path: &'static str,
        map: &mut EndpointMap<'_>,
    ) -> Result<(), RewriteError> {
        let count = self.uvarint(path)? as usize;
        if count.saturating_mul(2) > self.remaining() {
            return Err(self.error(
                DecodeErrorKind::LengthExceedsInput { claimed: count as u64, available: self.remaining() },
                path,
            ));
        }
        let mut previous: Option<u32> = None;
        for _ in 0..count {
            let tag = self.uvarint(path)?;
            if let Some(previous) = previous.filter(|&p| tag <= p) {
                return Err(self.error(DecodeErrorKind::TagsOutOfOrder { previous, tag }, path));
            }
            previous = Some(tag);
            let size_at = self.pos;
            let size = self.uvarint(path)? as usize;
            let start = self.pos;
            let payload = self.take(size, path)?;
            let version = self.version;
            let known = fields.iter().find(|f| {
                f.is_tagged_at(version)
                    && u32::try_from(f.tag) == Ok(tag)
                    && type_has_endpoint(&f.ty, version)
            });
            if let Some(f) = known {
                let mut inner = Splice::new(payload, self.base + start, self.flexible, version);
                inner.field(f, &f.ty, f.nullable.contains(version), map)?;
                if let Some(new) = inner.finish(f.path)? {
                    let end = self.pos;
                    self.replace(size_at, end, |out| {
                        put_uvarint(out, new.len() as u32);
                        out.extend_from_slice(&new);
                    });
                }
            }
        }
        Ok(())
    }

    /// A tag section skipped whole (a header's).
    fn raw_tags(&mut self, path: &'static str) -> Result<(), RewriteError> {
        let count = self.uvarint(path)?;
        for _ in 0..count {
            self.uvarint(path)?;
            let size = self.uvarint(path)? as usize;
            self.skip(size, path)?;
        }
        Ok(())
    }
}

fn put_uvarint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}
