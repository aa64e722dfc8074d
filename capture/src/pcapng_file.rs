//! The pcapng format: a sequence of blocks `type, total length, body, total length`. Read here:
//! the Section Header (byte order; a new section resets the interfaces), Interface Description
//! (link type, timestamp resolution), Enhanced Packet and Simple Packet blocks. Every other
//! block type is skipped by its length.

use nom::bytes::complete::take;
use nom::number::complete::{u16 as u16_in, u32 as u32_in};
use nom::number::Endianness;
use nom::{IResult, Parser};

/// Section Header Block type (the same bytes in either order).
pub(crate) const SECTION_HEADER: u32 = 0x0a0d_0d0a;
/// Interface Description Block type.
pub(crate) const INTERFACE_DESCRIPTION: u32 = 1;
/// Simple Packet Block type.
pub(crate) const SIMPLE_PACKET: u32 = 3;
/// Enhanced Packet Block type.
pub(crate) const ENHANCED_PACKET: u32 = 6;
/// The byte-order magic inside a Section Header Block.
const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;
/// The `if_tsresol` option code of an Interface Description Block.
const OPTION_TSRESOL: u16 = 9;

/// The byte order of a section, from the first 12 bytes of its Section Header Block (type,
/// length, byte-order magic).
pub(crate) fn section_endianness(block_start: &[u8]) -> Option<Endianness> {
    let magic: [u8; 4] = block_start.get(8..12)?.try_into().ok()?;
    if u32::from_le_bytes(magic) == BYTE_ORDER_MAGIC {
        Some(Endianness::Little)
    } else if u32::from_be_bytes(magic) == BYTE_ORDER_MAGIC {
        Some(Endianness::Big)
    } else {
        None
    }
}

/// A block's type and total length (the first 8 bytes of every block).
pub(crate) fn block_header(input: &[u8], endian: Endianness) -> IResult<&[u8], (u32, u32)> {
    (u32_in(endian), u32_in(endian)).parse(input)
}

/// An interface: its link type and how many timestamp units make a second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Interface {
    pub link_type: u32,
    /// Timestamp units per second (10^6 unless `if_tsresol` says otherwise).
    pub units_per_second: u64,
}

/// Parses an Interface Description Block's body (after type and length, before the trailing
/// length): link type, reserved, snaplen, then options, of which `if_tsresol` is read.
pub(crate) fn interface_description(body: &[u8], endian: Endianness) -> IResult<&[u8], Interface> {
    let (mut rest, (link_type, _reserved, _snaplen)) =
        (u16_in(endian), u16_in(endian), u32_in(endian)).parse(body)?;
    let mut units_per_second = 1_000_000;
    while rest.len() >= 4 {
        let (after, (code, len)) = (u16_in(endian), u16_in(endian)).parse(rest)?;
        if code == 0 {
            break;
        }
        let padded = (usize::from(len) + 3) & !3;
        let (after, value) = take(padded.min(after.len()))(after)?;
        // An option cut short by the block's end is ignored.
        if let (OPTION_TSRESOL, Some(&resolution)) = (code, value.first()) {
            units_per_second = tsresol(resolution);
        }
        rest = after;
    }
    Ok((rest, Interface { link_type: u32::from(link_type), units_per_second }))
}

/// `if_tsresol`: the high bit set means a power of two, clear a power of ten. Resolutions finer
/// than what a `u64` holds saturate (no capture uses them).
fn tsresol(value: u8) -> u64 {
    let exponent = u32::from(value & 0x7f);
    let base: u64 = if value & 0x80 == 0 { 10 } else { 2 };
    base.checked_pow(exponent).unwrap_or(u64::MAX)
}

/// An Enhanced Packet Block's fixed fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EnhancedPacket {
    pub interface: u32,
    pub timestamp: u64,
    pub captured_len: u32,
    pub original_len: u32,
}

/// Parses an Enhanced Packet Block's body: the fixed fields, then the packet data (the
/// remaining input starts with it).
pub(crate) fn enhanced_packet(body: &[u8], endian: Endianness) -> IResult<&[u8], EnhancedPacket> {
    let (rest, (interface, high, low, captured_len, original_len)) =
        (u32_in(endian), u32_in(endian), u32_in(endian), u32_in(endian), u32_in(endian)).parse(body)?;
    let timestamp = (u64::from(high) << 32) | u64::from(low);
    Ok((rest, EnhancedPacket { interface, timestamp, captured_len, original_len }))
}

/// Parses a Simple Packet Block's body: the original length, then the data.
pub(crate) fn simple_packet(body: &[u8], endian: Endianness) -> IResult<&[u8], u32> {
    u32_in(endian)(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_says_its_byte_order() {
        let mut le = SECTION_HEADER.to_le_bytes().to_vec();
        le.extend(28_u32.to_le_bytes());
        le.extend(BYTE_ORDER_MAGIC.to_le_bytes());
        assert_eq!(section_endianness(&le), Some(Endianness::Little));
        let mut be = SECTION_HEADER.to_be_bytes().to_vec();
        be.extend(28_u32.to_be_bytes());
        be.extend(BYTE_ORDER_MAGIC.to_be_bytes());
        assert_eq!(section_endianness(&be), Some(Endianness::Big));
        assert_eq!(section_endianness(&be[..10]), None);
    }

    #[test]
    fn an_interface_with_nanosecond_resolution() {
        let mut body = 1_u16.to_le_bytes().to_vec();
        body.extend([0, 0]);
        body.extend(0_u32.to_le_bytes());
        body.extend(OPTION_TSRESOL.to_le_bytes());
        body.extend(1_u16.to_le_bytes());
        body.extend([9, 0, 0, 0]);
        body.extend([0, 0, 0, 0]);
        let (_, interface) = interface_description(&body, Endianness::Little).unwrap();
        assert_eq!(interface, Interface { link_type: 1, units_per_second: 1_000_000_000 });
        assert_eq!(tsresol(0x80 | 0x0a), 1024);
        assert_eq!(tsresol(0x7f), u64::MAX);
    }

    /// Fuzz crash (`capture` target): an `if_tsresol` option header at the very end of the
    /// block, its value missing, indexed an empty slice.
    #[test]
    fn a_tsresol_option_without_its_value_keeps_microseconds() {
        let mut body = 1_u16.to_le_bytes().to_vec();
        body.extend([0, 0, 0, 0, 0, 0]);
        body.extend(OPTION_TSRESOL.to_le_bytes());
        body.extend(1_u16.to_le_bytes());
        let (_, interface) = interface_description(&body, Endianness::Little).unwrap();
        assert_eq!(interface.units_per_second, 1_000_000);
    }

    #[test]
    fn options_that_run_past_the_block_do_not_panic() {
        let mut body = 1_u16.to_le_bytes().to_vec();
        body.extend([0, 0, 0, 0, 0, 0]);
        body.extend(OPTION_TSRESOL.to_le_bytes());
        body.extend(200_u16.to_le_bytes());
        body.push(6);
        let (_, interface) = interface_description(&body, Endianness::Little).unwrap();
        assert_eq!(interface.units_per_second, 1_000_000);
    }
}
