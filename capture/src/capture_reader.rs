//! [`CaptureReader`]: pcap or pcapng from any `Read`, one packet at a time, holding at most one
//! record (capped) in memory.

use std::fmt;
use std::io::{self, Read};

use nom::number::Endianness;

use crate::pcap_file::{self, FileHeader, FILE_HEADER_LEN, RECORD_HEADER_LEN};
use crate::pcapng_file::{
    self, Interface, ENHANCED_PACKET, INTERFACE_DESCRIPTION, SECTION_HEADER, SIMPLE_PACKET,
};

/// The default cap on one record or block: 16 MiB (a pcap snaplen is at most 256 KiB; a
/// loopback packet at most 64 KiB).
pub const DEFAULT_MAX_RECORD: usize = 16 * 1024 * 1024;

/// One captured packet, borrowed from the reader until the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// When it was captured, in nanoseconds since the Unix epoch.
    pub timestamp_ns: i64,
    /// The link type of its interface (pcap's `LINKTYPE_*`).
    pub link_type: u32,
    /// The captured bytes (possibly fewer than `original_len`).
    pub data: &'a [u8],
    /// The packet's length on the wire.
    pub original_len: u32,
}

/// Why the capture cannot be read further. Packets read before the error stay valid.
#[derive(Debug)]
#[non_exhaustive]
pub enum CaptureError {
    /// Reading the source failed.
    Io(io::Error),
    /// The file starts with neither a pcap magic nor a pcapng Section Header Block.
    NotACapture {
        /// Its first bytes.
        first_bytes: Vec<u8>,
    },
    /// The file ends inside a header or record.
    Truncated {
        /// File offset of the record or block that is cut short.
        offset: u64,
        /// Bytes that record or block needs.
        needed: u64,
        /// Bytes the file still had.
        available: u64,
    },
    /// A record or block claims more bytes than the cap.
    RecordTooLarge {
        /// File offset of the record or block.
        offset: u64,
        /// Its claimed size in bytes.
        size: u64,
        /// The cap in bytes.
        max: usize,
    },
    /// A header or block is not what the format allows.
    Malformed {
        /// File offset of the record or block.
        offset: u64,
        /// What is wrong.
        what: String,
    },
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "cannot read the capture: {e}"),
            Self::NotACapture { first_bytes } => {
                write!(f, "not a pcap or pcapng file (it starts with")?;
                for b in first_bytes {
                    write!(f, " {b:02x}")?;
                }
                write!(f, ")")
            }
            Self::Truncated { offset, needed, available } => write!(
                f,
                "truncated capture: the record at byte {offset} needs {needed} bytes, the file has {available} more"
            ),
            Self::RecordTooLarge { offset, size, max } => {
                write!(f, "the record at byte {offset} claims {size} bytes, above the {max}-byte cap")
            }
            Self::Malformed { offset, what } => write!(f, "malformed capture at byte {offset}: {what}"),
        }
    }
}

impl std::error::Error for CaptureError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            _ => None,
        }
    }
}

#[derive(Debug)]
enum Format {
    Unknown,
    Pcap(FileHeader),
    Pcapng { endian: Endianness, interfaces: Vec<Interface> },
}

/// Reads packets from a pcap or pcapng stream (the format is told by its first bytes).
///
/// Memory: one buffer that grows to the largest record read, capped (`with_max_record`); a
/// record above the cap is an error, since its length is then the only thing known about it.
#[derive(Debug)]
pub struct CaptureReader<R> {
    source: R,
    buf: Vec<u8>,
    /// `buf[start..end]` is unconsumed input; `offset` is the file offset of `buf[start]`.
    start: usize,
    end: usize,
    offset: u64,
    eof: bool,
    /// Bytes of the record handed out by the last call, consumed at the next.
    handed_out: usize,
    format: Format,
    max_record: usize,
    failed: bool,
}

impl<R: Read> CaptureReader<R> {
    /// A reader over `source` with the default record cap.
    pub fn new(source: R) -> Self {
        Self::with_max_record(source, DEFAULT_MAX_RECORD)
    }

    /// A reader over `source` that refuses records or blocks above `max_record` bytes.
    pub fn with_max_record(source: R, max_record: usize) -> Self {
        Self {
            source,
            buf: vec![0; 64 * 1024],
            start: 0,
            end: 0,
            offset: 0,
            eof: false,
            handed_out: 0,
            format: Format::Unknown,
            max_record,
            failed: false,
        }
    }

    /// Bytes of the file consumed so far.
    pub fn position(&self) -> u64 {
        self.offset + self.handed_out as u64
    }

    /// The next packet, `Ok(None)` at the end of the file. After an error, every later call
    /// returns `Ok(None)`.
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>, CaptureError> {
        if self.failed {
            return Ok(None);
        }
        let found = self.next_record();
        match found {
            Ok(Some((at, len, timestamp_ns, link_type, original_len))) => {
                Ok(Some(Packet { timestamp_ns, link_type, data: &self.buf[at..at + len], original_len }))
            }
            Ok(None) => Ok(None),
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }

    /// Finds the next packet: `(buffer index, length, timestamp, link type, original length)`.
    #[allow(clippy::type_complexity)]
    fn next_record(&mut self) -> Result<Option<(usize, usize, i64, u32, u32)>, CaptureError> {
        self.consume(self.handed_out);
        self.handed_out = 0;
        loop {
            match &mut self.format {
                Format::Unknown => {
                    if !self.fill(4)? {
                        if self.end == self.start {
                            return Ok(None);
                        }
                        return Err(self.truncated(4));
                    }
                    let first = [
                        self.buf[self.start],
                        self.buf[self.start + 1],
                        self.buf[self.start + 2],
                        self.buf[self.start + 3],
                    ];
                    if pcap_file::magic(first).is_some() {
                        if !self.fill(FILE_HEADER_LEN)? {
                            return Err(self.truncated(FILE_HEADER_LEN as u64));
                        }
                        let header = pcap_file::file_header(&self.buf[self.start..self.end])
                            .map_err(|_| self.malformed("pcap file header"))?
                            .1;
                        self.consume(FILE_HEADER_LEN);
                        self.format = Format::Pcap(header);
                    } else if u32::from_le_bytes(first) == SECTION_HEADER {
                        // The Section Header Block itself is read as the first block.
                        self.format = Format::Pcapng { endian: Endianness::Little, interfaces: Vec::new() };
                    } else {
                        return Err(CaptureError::NotACapture { first_bytes: first.to_vec() });
                    }
                }
                Format::Pcap(header) => {
                    let header = *header;
                    if !self.fill(RECORD_HEADER_LEN)? {
                        if self.end == self.start {
                            return Ok(None);
                        }
                        return Err(self.truncated(RECORD_HEADER_LEN as u64));
                    }
                    let record = pcap_file::record_header(&self.buf[self.start..self.end], header.endian)
                        .map_err(|_| self.malformed("pcap record header"))?
                        .1;
                    let len = record.captured_len as usize;
                    if len > self.max_record {
                        return Err(self.too_large(u64::from(record.captured_len)));
                    }
                    if !self.fill(RECORD_HEADER_LEN + len)? {
                        return Err(self.truncated((RECORD_HEADER_LEN + len) as u64));
                    }
                    let fraction_ns = if header.nanos {
                        i64::from(record.fraction)
                    } else {
                        i64::from(record.fraction) * 1000
                    };
                    let timestamp_ns = i64::from(record.seconds) * 1_000_000_000 + fraction_ns;
                    self.handed_out = RECORD_HEADER_LEN + len;
                    return Ok(Some((
                        self.start + RECORD_HEADER_LEN,
                        len,
                        timestamp_ns,
                        header.link_type,
                        record.original_len,
                    )));
                }
                Format::Pcapng { .. } => {
                    if !self.fill(8)? {
                        if self.end == self.start {
                            return Ok(None);
                        }
                        return Err(self.truncated(8));
                    }
                    if let Some(found) = self.pcapng_block()? {
                        return Ok(Some(found));
                    }
                }
            }
        }
    }

    /// Reads one pcapng block (at least 8 bytes are buffered): a packet, or `None` after a
    /// block that is not one.
    #[allow(clippy::type_complexity)]
    fn pcapng_block(&mut self) -> Result<Option<(usize, usize, i64, u32, u32)>, CaptureError> {
        let head = &self.buf[self.start..self.end];
        let block_type = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        if block_type == SECTION_HEADER {
            if !self.fill(12)? {
                return Err(self.truncated(12));
            }
            let endian = pcapng_file::section_endianness(&self.buf[self.start..self.end])
                .ok_or_else(|| self.malformed("section header without the byte-order magic"))?;
            self.format = Format::Pcapng { endian, interfaces: Vec::new() };
        }
        let Format::Pcapng { endian, .. } = &self.format else { return Ok(None) };
        let endian = *endian;
        let (block_type, total) = pcapng_file::block_header(&self.buf[self.start..self.end], endian)
            .map_err(|_| self.malformed("block header"))?
            .1;
        let total_len = total as usize;
        if total_len < 12 || !total_len.is_multiple_of(4) {
            return Err(self.malformed(&format!("block length {total} (at least 12, a multiple of 4)")));
        }
        if total_len > self.max_record {
            return Err(self.too_large(u64::from(total)));
        }
        if !self.fill(total_len)? {
            return Err(self.truncated(u64::from(total)));
        }
        let body_start = self.start + 8;
        let body_end = self.start + total_len - 4;
        let body = &self.buf[body_start..body_end];
        let mut found = None;
        match block_type {
            INTERFACE_DESCRIPTION => {
                let interface = pcapng_file::interface_description(body, endian)
                    .map_err(|_| self.malformed("interface description block"))?
                    .1;
                if let Format::Pcapng { interfaces, .. } = &mut self.format {
                    // Bounded by the file: each interface costs a 20-byte block.
                    interfaces.push(interface);
                }
            }
            ENHANCED_PACKET => {
                let (data, epb) = pcapng_file::enhanced_packet(body, endian)
                    .map_err(|_| self.malformed("enhanced packet block"))?;
                let interface = self.interface(epb.interface)?;
                let len = epb.captured_len as usize;
                if len > data.len() {
                    return Err(self.malformed(&format!(
                        "enhanced packet claims {len} captured bytes in a {total}-byte block"
                    )));
                }
                let timestamp_ns = scale_timestamp(epb.timestamp, interface.units_per_second);
                let at = body_start + (body.len() - data.len());
                found = Some((at, len, timestamp_ns, interface.link_type, epb.original_len));
            }
            SIMPLE_PACKET => {
                let (data, original_len) = pcapng_file::simple_packet(body, endian)
                    .map_err(|_| self.malformed("simple packet block"))?;
                let interface = self.interface(0)?;
                let len = (original_len as usize).min(data.len());
                let at = body_start + 4;
                // A simple packet has no timestamp.
                found = Some((at, len, 0, interface.link_type, original_len));
            }
            _ => {}
        }
        if found.is_some() {
            self.handed_out = total_len;
        } else {
            self.consume(total_len);
        }
        Ok(found)
    }

    fn interface(&self, id: u32) -> Result<Interface, CaptureError> {
        let Format::Pcapng { interfaces, .. } = &self.format else {
            return Err(self.malformed("a pcapng block outside a pcapng section"));
        };
        interfaces
            .get(id as usize)
            .copied()
            .ok_or_else(|| self.malformed(&format!("a packet on interface {id}, which no block described")))
    }

    /// Makes `n` bytes available at `buf[start..]`; false when the source ends first.
    fn fill(&mut self, n: usize) -> Result<bool, CaptureError> {
        if self.end - self.start >= n {
            return Ok(true);
        }
        if self.start + n > self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if n > self.buf.len() {
                // Bounded by `max_record` plus a header: callers check sizes before filling.
                self.buf.resize(n.next_power_of_two(), 0);
            }
        }
        while self.end - self.start < n {
            if self.eof {
                return Ok(false);
            }
            match self.source.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(read) => self.end += read,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(CaptureError::Io(e)),
            }
        }
        Ok(true)
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        self.offset += n as u64;
    }

    fn truncated(&self, needed: u64) -> CaptureError {
        CaptureError::Truncated { offset: self.offset, needed, available: (self.end - self.start) as u64 }
    }

    fn too_large(&self, size: u64) -> CaptureError {
        CaptureError::RecordTooLarge { offset: self.offset, size, max: self.max_record }
    }

    fn malformed(&self, what: &str) -> CaptureError {
        CaptureError::Malformed { offset: self.offset, what: what.to_owned() }
    }
}

/// A pcapng timestamp in units of `1 / units_per_second` seconds, in nanoseconds (saturating).
fn scale_timestamp(timestamp: u64, units_per_second: u64) -> i64 {
    if units_per_second == 0 {
        return 0;
    }
    let ns = u128::from(timestamp) * 1_000_000_000 / u128::from(units_per_second);
    i64::try_from(ns).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pcap(records: &[(u32, &[u8])]) -> Vec<u8> {
        let mut out = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
        out.extend([0; 8]);
        out.extend(65535_u32.to_le_bytes());
        out.extend(1_u32.to_le_bytes());
        for (seconds, data) in records {
            out.extend(seconds.to_le_bytes());
            out.extend(5_u32.to_le_bytes());
            out.extend((data.len() as u32).to_le_bytes());
            out.extend((data.len() as u32).to_le_bytes());
            out.extend(*data);
        }
        out
    }

    /// Reads one byte per `read` call: every record straddles buffer refills.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let Some((&first, rest)) = self.0.split_first() else { return Ok(0) };
            if buf.is_empty() {
                return Ok(0);
            }
            buf[0] = first;
            self.0 = rest;
            Ok(1)
        }
    }

    #[test]
    fn pcap_records_come_out_in_order_with_their_timestamps() {
        let file = pcap(&[(1, b"abc"), (2, b""), (3, b"defg")]);
        let mut reader = CaptureReader::new(Trickle(&file));
        let mut seen = Vec::new();
        while let Some(p) = reader.next_packet().unwrap() {
            seen.push((p.timestamp_ns, p.data.to_vec(), p.link_type));
        }
        assert_eq!(
            seen,
            vec![
                (1_000_005_000, b"abc".to_vec(), 1),
                (2_000_005_000, vec![], 1),
                (3_000_005_000, b"defg".to_vec(), 1)
            ]
        );
        assert_eq!(reader.position(), file.len() as u64);
    }

    #[test]
    fn a_capture_cut_inside_a_record_says_where() {
        let file = pcap(&[(1, b"abc"), (2, b"defgh")]);
        let mut reader = CaptureReader::new(&file[..file.len() - 2]);
        assert!(reader.next_packet().unwrap().is_some());
        let err = reader.next_packet().unwrap_err();
        assert!(matches!(err, CaptureError::Truncated { offset: 43, needed: 21, available: 19 }), "{err}");
        assert!(err.to_string().starts_with("truncated capture"), "{err}");
        assert!(reader.next_packet().unwrap().is_none());
    }

    #[test]
    fn a_record_above_the_cap_is_refused_before_it_is_buffered() {
        let mut file = pcap(&[]);
        file.extend([0; 8]);
        file.extend(u32::MAX.to_le_bytes());
        file.extend(u32::MAX.to_le_bytes());
        let mut reader = CaptureReader::with_max_record(&file[..], 1024);
        assert!(matches!(
            reader.next_packet(),
            Err(CaptureError::RecordTooLarge { size: 4_294_967_295, .. })
        ));
        assert!(reader.buf.len() <= 64 * 1024);
    }

    #[test]
    fn text_is_not_a_capture() {
        let err = CaptureReader::new(&b"GET / HTTP/1.1\r\n"[..]).next_packet().unwrap_err();
        assert_eq!(err.to_string(), "not a pcap or pcapng file (it starts with 47 45 54 20)");
        assert!(CaptureReader::new(&b""[..]).next_packet().unwrap().is_none());
    }

    fn block(block_type: u32, body: &[u8]) -> Vec<u8> {
        let total = (12 + body.len()) as u32;
        let mut out = block_type.to_le_bytes().to_vec();
        out.extend(total.to_le_bytes());
        out.extend(body);
        out.extend(total.to_le_bytes());
        out
    }

    #[test]
    fn pcapng_packets_use_their_interfaces_link_type_and_resolution() {
        let mut shb = 0x1a2b_3c4d_u32.to_le_bytes().to_vec();
        shb.extend([1, 0, 0, 0]);
        shb.extend((-1_i64).to_le_bytes());
        let mut file = block(SECTION_HEADER, &shb);
        let mut idb = vec![1, 0, 0, 0, 0, 0, 0, 0];
        idb.extend([9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0]);
        file.extend(block(INTERFACE_DESCRIPTION, &idb));
        file.extend(block(INTERFACE_DESCRIPTION, &[113, 0, 0, 0, 0, 0, 0, 0]));
        file.extend(block(0x0bad, &[1, 2, 3, 4]));
        let mut epb = 1_u32.to_le_bytes().to_vec();
        epb.extend(0_u32.to_le_bytes());
        epb.extend(2_000_000_u32.to_le_bytes());
        epb.extend(3_u32.to_le_bytes());
        epb.extend(60_u32.to_le_bytes());
        epb.extend([7, 8, 9, 0]);
        file.extend(block(ENHANCED_PACKET, &epb));
        let mut nano = 0_u32.to_le_bytes().to_vec();
        nano.extend(0_u32.to_le_bytes());
        nano.extend(1_500_u32.to_le_bytes());
        nano.extend(0_u32.to_le_bytes());
        nano.extend(0_u32.to_le_bytes());
        file.extend(block(ENHANCED_PACKET, &nano));
        let mut reader = CaptureReader::new(Trickle(&file));
        let p = reader.next_packet().unwrap().unwrap();
        assert_eq!(
            (p.timestamp_ns, p.link_type, p.data, p.original_len),
            (2_000_000_000, 113, &[7, 8, 9][..], 60)
        );
        let p = reader.next_packet().unwrap().unwrap();
        assert_eq!((p.timestamp_ns, p.link_type), (1_500, 1));
        assert!(reader.next_packet().unwrap().is_none());
    }

    #[test]
    fn a_pcapng_packet_on_an_undescribed_interface_is_malformed() {
        let mut shb = 0x1a2b_3c4d_u32.to_le_bytes().to_vec();
        shb.extend([1, 0, 0, 0]);
        let mut file = block(SECTION_HEADER, &shb);
        file.extend(block(ENHANCED_PACKET, &[0; 20]));
        let err = CaptureReader::new(&file[..]).next_packet().unwrap_err();
        assert!(err.to_string().contains("interface 0, which no block described"), "{err}");
    }
}
