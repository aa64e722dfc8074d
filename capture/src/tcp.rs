//! The TCP header: ports, sequence number, flags, and where the payload starts.

use nom::number::complete::{be_u16, be_u32, be_u8};
use nom::{IResult, Parser};

/// A TCP segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment<'a> {
    /// Source port.
    pub source_port: u16,
    /// Destination port.
    pub destination_port: u16,
    /// Sequence number of the first payload byte (of the SYN itself when `syn`).
    pub seq: u32,
    /// SYN flag: the sequence number is the initial one; data starts at `seq + 1`.
    pub syn: bool,
    /// ACK flag (with SYN: the server's half of the handshake).
    pub ack: bool,
    /// FIN flag.
    pub fin: bool,
    /// RST flag.
    pub rst: bool,
    /// The payload.
    pub payload: &'a [u8],
}

/// Parses a TCP header and returns the segment, or `None` when it is cut short or its data
/// offset is impossible.
pub fn parse(segment: &[u8]) -> Option<Segment<'_>> {
    #[allow(clippy::type_complexity)] // the header's fields, as nom's tuple parser returns them
    fn header(input: &[u8]) -> IResult<&[u8], (u16, u16, u32, u32, u8, u8)> {
        (be_u16, be_u16, be_u32, be_u32, be_u8, be_u8).parse(input)
    }
    let (_, (source_port, destination_port, seq, _ack, offset, flags)) = header(segment).ok()?;
    let header_len = usize::from(offset >> 4) * 4;
    if header_len < 20 || header_len > segment.len() {
        return None;
    }
    Some(Segment {
        source_port,
        destination_port,
        seq,
        syn: flags & 0x02 != 0,
        ack: flags & 0x10 != 0,
        fin: flags & 0x01 != 0,
        rst: flags & 0x04 != 0,
        payload: &segment[header_len..],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_sequence_flags_and_payload_past_the_options() {
        let mut s = 40000_u16.to_be_bytes().to_vec();
        s.extend(9092_u16.to_be_bytes());
        s.extend(7_u32.to_be_bytes());
        s.extend(0_u32.to_be_bytes());
        s.extend([0x60, 0x12, 0, 0, 0, 0, 0, 0]);
        s.extend([1, 1, 1, 1]); // 4 bytes of options
        s.extend(b"hi");
        let seg = parse(&s).unwrap();
        assert_eq!((seg.source_port, seg.destination_port, seg.seq), (40000, 9092, 7));
        assert!(seg.syn && seg.ack && !seg.fin && !seg.rst);
        assert_eq!(seg.payload, b"hi");
    }

    #[test]
    fn a_data_offset_past_the_segment_is_refused() {
        let mut s = vec![0; 12];
        s.extend([0xf0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(parse(&s), None);
        assert_eq!(parse(&s[..10]), None);
    }
}
