//! Link layers down to the network packet: Ethernet (with 802.1Q/802.1ad tags), Linux cooked
//! captures v1 (SLL) and v2 (SLL2), BSD loopback (`NULL`, `LOOP`) and raw IP.

use nom::bytes::complete::take;
use nom::number::complete::{be_u16, be_u32, le_u32};
use nom::{IResult, Parser};

/// `LINKTYPE_NULL`: BSD loopback, a 4-byte address family in the capturing host's byte order.
pub const NULL: u32 = 0;
/// `LINKTYPE_ETHERNET`.
pub const ETHERNET: u32 = 1;
/// `LINKTYPE_RAW`: the packet is an IPv4 or IPv6 packet.
pub const RAW: u32 = 101;
/// `LINKTYPE_LOOP`: OpenBSD loopback, the address family in network byte order.
pub const LOOP: u32 = 108;
/// `LINKTYPE_LINUX_SLL`: Linux cooked capture v1 (`tcpdump -i any`, older libpcap).
pub const LINUX_SLL: u32 = 113;
/// `LINKTYPE_IPV4`.
pub const IPV4: u32 = 228;
/// `LINKTYPE_IPV6`.
pub const IPV6: u32 = 229;
/// `LINKTYPE_LINUX_SLL2`: Linux cooked capture v2 (`tcpdump -i any`, libpcap 1.10+).
pub const LINUX_SLL2: u32 = 276;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88a8;

/// The network packet inside a link-layer frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network<'a> {
    /// An IPv4 packet.
    Ipv4(&'a [u8]),
    /// An IPv6 packet.
    Ipv6(&'a [u8]),
    /// Something else (ARP, a link type kwire does not read...): the reason.
    Other(&'static str),
}

/// Takes the link-layer header of `link_type` off `frame`.
pub fn network_payload(link_type: u32, frame: &[u8]) -> Network<'_> {
    let parsed = match link_type {
        ETHERNET => ethernet(frame),
        LINUX_SLL => linux_sll(frame),
        LINUX_SLL2 => linux_sll2(frame),
        NULL => bsd_null(frame),
        LOOP => bsd_loop(frame),
        RAW | IPV4 | IPV6 | 12 | 14 => return raw_ip(frame),
        _ => return Network::Other("a link type kwire does not read"),
    };
    match parsed {
        Ok((payload, ethertype)) => by_ethertype(ethertype, payload),
        Err(_) => Network::Other("a link-layer header cut short"),
    }
}

fn by_ethertype(ethertype: u16, payload: &[u8]) -> Network<'_> {
    match ethertype {
        ETHERTYPE_IPV4 => Network::Ipv4(payload),
        ETHERTYPE_IPV6 => Network::Ipv6(payload),
        _ => Network::Other("not IP"),
    }
}

fn raw_ip(packet: &[u8]) -> Network<'_> {
    match packet.first().map(|b| b >> 4) {
        Some(4) => Network::Ipv4(packet),
        Some(6) => Network::Ipv6(packet),
        _ => Network::Other("not IP"),
    }
}

/// Destination and source MAC, then the ethertype; VLAN tags are skipped.
fn ethernet(frame: &[u8]) -> IResult<&[u8], u16> {
    let (mut rest, (_macs, mut ethertype)) = (take(12usize), be_u16).parse(frame)?;
    while ethertype == ETHERTYPE_VLAN || ethertype == ETHERTYPE_QINQ {
        (rest, (_, ethertype)) = (take(2usize), be_u16).parse(rest)?;
    }
    Ok((rest, ethertype))
}

/// Packet type, ARPHRD type, address length, 8 address bytes, then the protocol.
fn linux_sll(frame: &[u8]) -> IResult<&[u8], u16> {
    let (rest, (_, protocol)) = (take(14usize), be_u16).parse(frame)?;
    Ok((rest, protocol))
}

/// The protocol first, then reserved, interface index, ARPHRD, packet type, address length and
/// 8 address bytes: 20 bytes.
fn linux_sll2(frame: &[u8]) -> IResult<&[u8], u16> {
    let (rest, (protocol, _)) = (be_u16, take(18usize)).parse(frame)?;
    Ok((rest, protocol))
}

/// BSD address families that mean IPv6 (FreeBSD, NetBSD/OpenBSD, Darwin).
fn is_inet6_family(family: u32) -> bool {
    matches!(family, 10 | 24 | 28 | 30)
}

/// The family in the capturing host's byte order, which the file does not say: both are tried.
fn bsd_null(frame: &[u8]) -> IResult<&[u8], u16> {
    let (rest, family) = le_u32(frame)?;
    let family = if family > 0xffff { family.swap_bytes() } else { family };
    Ok((rest, family_ethertype(family)))
}

fn bsd_loop(frame: &[u8]) -> IResult<&[u8], u16> {
    let (rest, family) = be_u32(frame)?;
    Ok((rest, family_ethertype(family)))
}

fn family_ethertype(family: u32) -> u16 {
    if family == 2 {
        ETHERTYPE_IPV4
    } else if is_inet6_family(family) {
        ETHERTYPE_IPV6
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ethernet_with_a_vlan_tag_carries_ipv6() {
        let mut frame = vec![0; 12];
        frame.extend([0x81, 0x00, 0x00, 0x05, 0x86, 0xdd, 0x60]);
        assert_eq!(network_payload(ETHERNET, &frame), Network::Ipv6(&[0x60]));
    }

    #[test]
    fn cooked_captures_v1_and_v2() {
        let mut v1 = vec![0; 14];
        v1.extend([0x08, 0x00, 0x45]);
        assert_eq!(network_payload(LINUX_SLL, &v1), Network::Ipv4(&[0x45]));
        let mut v2 = vec![0x86, 0xdd];
        v2.extend([0; 18]);
        v2.push(0x60);
        assert_eq!(network_payload(LINUX_SLL2, &v2), Network::Ipv6(&[0x60]));
    }

    #[test]
    fn loopback_families_in_either_byte_order() {
        assert_eq!(network_payload(NULL, &[2, 0, 0, 0, 0x45]), Network::Ipv4(&[0x45]));
        assert_eq!(network_payload(NULL, &[0, 0, 0, 30, 0x60]), Network::Ipv6(&[0x60]));
        assert_eq!(network_payload(LOOP, &[0, 0, 0, 2, 0x45]), Network::Ipv4(&[0x45]));
        assert_eq!(network_payload(RAW, &[0x60]), Network::Ipv6(&[0x60]));
    }

    #[test]
    fn short_or_foreign_frames_say_why() {
        assert_eq!(network_payload(ETHERNET, &[0; 5]), Network::Other("a link-layer header cut short"));
        assert_eq!(network_payload(ETHERNET, &[0; 14]), Network::Other("not IP"));
        assert_eq!(network_payload(9999, &[0; 14]), Network::Other("a link type kwire does not read"));
    }
}
