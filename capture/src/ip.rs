//! IPv4 and IPv6 down to the TCP segment: addresses and payload, the IPv6 extension headers
//! skipped. Fragments are reported, not reassembled (TCP over loopback and normal MTUs does not
//! fragment).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use nom::bytes::complete::take;
use nom::number::complete::{be_u16, be_u8};
use nom::{IResult, Parser};

use crate::link::Network;

/// IP protocol number of TCP.
pub const PROTOCOL_TCP: u8 = 6;

/// A TCP segment's addresses and bytes (the TCP header included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpPacket<'a> {
    /// Source address.
    pub source: IpAddr,
    /// Destination address.
    pub destination: IpAddr,
    /// The TCP header and payload.
    pub segment: &'a [u8],
}

/// Why an IP packet carries no TCP segment kwire can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Not TCP.
    NotTcp,
    /// A fragment of a larger packet.
    Fragment,
    /// The header is cut short or inconsistent.
    Malformed,
    /// Not IP at all (the reason from the link layer).
    NotIp(&'static str),
}

/// The TCP segment inside a network packet.
pub fn parse(network: Network<'_>) -> Result<IpPacket<'_>, Skip> {
    match network {
        Network::Ipv4(packet) => ipv4(packet),
        Network::Ipv6(packet) => ipv6(packet),
        Network::Other(why) => Err(Skip::NotIp(why)),
    }
}

fn ipv4(packet: &[u8]) -> Result<IpPacket<'_>, Skip> {
    #[allow(clippy::type_complexity)] // the header's fields, as nom's tuple parser returns them
    fn header(input: &[u8]) -> IResult<&[u8], (u8, u16, u16, u8, &[u8], &[u8])> {
        let (
            rest,
            (version_ihl, _tos, total_len, _id, fragment, _ttl, protocol, _checksum, source, destination),
        ) = (be_u8, be_u8, be_u16, be_u16, be_u16, be_u8, be_u8, be_u16, take(4usize), take(4usize))
            .parse(input)?;
        Ok((rest, (version_ihl, total_len, fragment, protocol, source, destination)))
    }
    let (_, (version_ihl, total_len, fragment, protocol, source, destination)) =
        header(packet).map_err(|_| Skip::Malformed)?;
    let header_len = usize::from(version_ihl & 0x0f) * 4;
    // A total length of 0 is what TSO-offloaded captures write: take the bytes there are.
    let end = if total_len == 0 { packet.len() } else { usize::from(total_len).min(packet.len()) };
    if version_ihl >> 4 != 4 || header_len < 20 || header_len > end {
        return Err(Skip::Malformed);
    }
    if fragment & 0x3fff != 0 {
        return Err(Skip::Fragment);
    }
    if protocol != PROTOCOL_TCP {
        return Err(Skip::NotTcp);
    }
    let octets = |b: &[u8]| IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]));
    Ok(IpPacket {
        source: octets(source),
        destination: octets(destination),
        segment: &packet[header_len..end],
    })
}

fn ipv6(packet: &[u8]) -> Result<IpPacket<'_>, Skip> {
    #[allow(clippy::type_complexity)] // the header's fields, as nom's tuple parser returns them
    fn header(input: &[u8]) -> IResult<&[u8], (u16, u8, &[u8], &[u8])> {
        let (rest, (_vtf, payload_len, next, _hops, source, destination)) =
            (take(4usize), be_u16, be_u8, be_u8, take(16usize), take(16usize)).parse(input)?;
        Ok((rest, (payload_len, next, source, destination)))
    }
    let (mut rest, (payload_len, mut next, source, destination)) =
        header(packet).map_err(|_| Skip::Malformed)?;
    if payload_len != 0 {
        rest = &rest[..usize::from(payload_len).min(rest.len())];
    }
    // Hop-by-hop, routing and destination options: skip by their length (in 8-byte units, not
    // counting the first 8). At most 8 of them: a chain longer than that is not a real packet.
    for _ in 0..8 {
        match next {
            0 | 43 | 60 => {
                let [following, len, ..] = *rest else { return Err(Skip::Malformed) };
                let skip = (usize::from(len) + 1) * 8;
                if skip > rest.len() {
                    return Err(Skip::Malformed);
                }
                next = following;
                rest = &rest[skip..];
            }
            44 => return Err(Skip::Fragment),
            _ => break,
        }
    }
    if next != PROTOCOL_TCP {
        return Err(Skip::NotTcp);
    }
    let address = |b: &[u8]| {
        let mut octets = [0; 16];
        octets.copy_from_slice(b);
        IpAddr::V6(Ipv6Addr::from(octets))
    };
    Ok(IpPacket { source: address(source), destination: address(destination), segment: rest })
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn ipv4_packet(payload: &[u8], protocol: u8, fragment: u16) -> Vec<u8> {
        let mut p = vec![0x45, 0];
        p.extend((20 + payload.len() as u16).to_be_bytes());
        p.extend([0, 0]);
        p.extend(fragment.to_be_bytes());
        p.extend([64, protocol, 0, 0, 127, 0, 0, 1, 10, 0, 0, 2]);
        p.extend(payload);
        p.extend([0xee; 6]); // Ethernet padding past the total length
        p
    }

    #[test]
    fn ipv4_payload_ends_at_the_total_length() {
        let p = ipv4_packet(b"tcp!", PROTOCOL_TCP, 0x4000);
        let packet = parse(Network::Ipv4(&p)).unwrap();
        assert_eq!(packet.segment, b"tcp!");
        assert_eq!(packet.source, IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(packet.destination.to_string(), "10.0.0.2");
    }

    #[test]
    fn fragments_other_protocols_and_short_headers_are_skipped() {
        assert_eq!(parse(Network::Ipv4(&ipv4_packet(b"x", PROTOCOL_TCP, 0x2000))), Err(Skip::Fragment));
        assert_eq!(parse(Network::Ipv4(&ipv4_packet(b"x", 17, 0))), Err(Skip::NotTcp));
        assert_eq!(parse(Network::Ipv4(&[0x45, 0, 0])), Err(Skip::Malformed));
        assert_eq!(parse(Network::Ipv4(&[0x4f; 20])), Err(Skip::Malformed));
    }

    #[test]
    fn ipv6_skips_extension_headers() {
        let mut p = vec![0x60, 0, 0, 0];
        p.extend(12_u16.to_be_bytes());
        p.extend([0, 64]); // hop-by-hop first
        p.extend(Ipv6Addr::LOCALHOST.octets());
        p.extend(Ipv6Addr::LOCALHOST.octets());
        p.extend([PROTOCOL_TCP, 0, 0, 0, 0, 0, 0, 0]);
        p.extend(b"tcp!");
        let packet = parse(Network::Ipv6(&p)).unwrap();
        assert_eq!(packet.segment, b"tcp!");
        assert_eq!(packet.source, IpAddr::V6(Ipv6Addr::LOCALHOST));
        p[40] = 44;
        assert_eq!(parse(Network::Ipv6(&p)), Err(Skip::Fragment));
        p[40] = PROTOCOL_TCP;
        p[41] = 200;
        assert_eq!(parse(Network::Ipv6(&p)), Err(Skip::Malformed));
    }
}
