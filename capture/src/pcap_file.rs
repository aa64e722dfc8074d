//! The classic pcap format (libpcap's `.pcap`): a 24-byte file header, then records of a
//! 16-byte header and the captured bytes. Either byte order; microsecond or nanosecond
//! timestamps (the magic says which).

use nom::bytes::complete::take;
use nom::number::complete::{u16 as u16_in, u32 as u32_in};
use nom::number::Endianness;
use nom::{IResult, Parser};

/// The file header's size in bytes.
pub(crate) const FILE_HEADER_LEN: usize = 24;
/// A record header's size in bytes.
pub(crate) const RECORD_HEADER_LEN: usize = 16;

/// What the file header says about every record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileHeader {
    pub endian: Endianness,
    /// Record timestamps' second fraction is in nanoseconds (else microseconds).
    pub nanos: bool,
    pub link_type: u32,
}

/// A record header: when, how many bytes follow, how long the packet was on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecordHeader {
    pub seconds: u32,
    pub fraction: u32,
    pub captured_len: u32,
    pub original_len: u32,
}

/// The byte order and timestamp unit a pcap magic number stands for, or `None` when the four
/// bytes are not a pcap magic.
pub(crate) fn magic(bytes: [u8; 4]) -> Option<(Endianness, bool)> {
    match bytes {
        [0xd4, 0xc3, 0xb2, 0xa1] => Some((Endianness::Little, false)),
        [0xa1, 0xb2, 0xc3, 0xd4] => Some((Endianness::Big, false)),
        [0x4d, 0x3c, 0xb2, 0xa1] => Some((Endianness::Little, true)),
        [0xa1, 0xb2, 0x3c, 0x4d] => Some((Endianness::Big, true)),
        _ => None,
    }
}

/// Parses the 24-byte file header (magic, version, zone, sigfigs, snaplen, link type).
pub(crate) fn file_header(input: &[u8]) -> IResult<&[u8], FileHeader> {
    let (rest, magic_bytes) = take(4usize)(input)?;
    let Some((endian, nanos)) = magic([magic_bytes[0], magic_bytes[1], magic_bytes[2], magic_bytes[3]])
    else {
        return Err(nom::Err::Error(nom::error::Error::new(input, nom::error::ErrorKind::Tag)));
    };
    let (rest, (_major, _minor, _zone, _sigfigs, _snaplen, link_type)) =
        (u16_in(endian), u16_in(endian), u32_in(endian), u32_in(endian), u32_in(endian), u32_in(endian))
            .parse(rest)?;
    // The upper 16 bits of the link-type field may carry FCS flags (pcap's LINKTYPE_* is 16-bit).
    Ok((rest, FileHeader { endian, nanos, link_type: link_type & 0xffff }))
}

/// Parses a 16-byte record header in the file's byte order.
pub(crate) fn record_header(input: &[u8], endian: Endianness) -> IResult<&[u8], RecordHeader> {
    let (rest, (seconds, fraction, captured_len, original_len)) =
        (u32_in(endian), u32_in(endian), u32_in(endian), u32_in(endian)).parse(input)?;
    Ok((rest, RecordHeader { seconds, fraction, captured_len, original_len }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_byte_orders_and_both_timestamp_units_are_recognised() {
        assert_eq!(magic([0xd4, 0xc3, 0xb2, 0xa1]), Some((Endianness::Little, false)));
        assert_eq!(magic([0xa1, 0xb2, 0x3c, 0x4d]), Some((Endianness::Big, true)));
        assert_eq!(magic(*b"GET "), None);
    }

    #[test]
    fn a_big_endian_header_reads_its_link_type() {
        let mut h = vec![0xa1, 0xb2, 0xc3, 0xd4, 0, 2, 0, 4];
        h.extend([0; 8]);
        h.extend(65535_u32.to_be_bytes());
        h.extend(113_u32.to_be_bytes());
        let (rest, header) = file_header(&h).unwrap();
        assert!(rest.is_empty());
        assert_eq!(header, FileHeader { endian: Endianness::Big, nanos: false, link_type: 113 });
    }

    #[test]
    fn a_short_header_is_an_error_not_a_panic() {
        assert!(file_header(&[0xd4, 0xc3, 0xb2, 0xa1, 2]).is_err());
        assert!(record_header(&[1, 2, 3], Endianness::Little).is_err());
    }
}
