//! [`PcapngWriter`]: a conversation written as a pcapng capture of synthesised TCP/IP packets
//! (raw IP link type, nanosecond timestamps), so Wireshark, tshark and `kwire decode --pcap`
//! read what a proxy saw as if it had been captured on the wire between the client and the
//! proxy.
//!
//! Each connection gets a three-way handshake, its bytes in segments of at most
//! [`MAX_SEGMENT`] bytes with consecutive sequence numbers, and a FIN from each side. TCP
//! checksums are left zero (capture tools do not check them by default; offloaded captures
//! have the same).

use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};

use crate::link::RAW;

/// The most payload bytes per synthesised segment (fits an IPv4 packet's 16-bit length).
pub const MAX_SEGMENT: usize = 32 * 1024;
const CLIENT_ISN: u32 = 0x1000_0000;
const BROKER_ISN: u32 = 0x2000_0000;
const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const PSH: u8 = 0x08;
const FIN: u8 = 0x01;

/// Which way bytes flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the client to the broker (requests).
    ToBroker,
    /// From the broker to the client (responses).
    ToClient,
}

#[derive(Debug, Clone, Copy)]
struct Flow {
    /// Next sequence number of the client's and the broker's side.
    client_seq: u32,
    broker_seq: u32,
}

/// Writes pcapng to `out`. Call [`open`](Self::open) before a connection's
/// [`data`](Self::data), [`close`](Self::close) at its end.
#[derive(Debug)]
pub struct PcapngWriter<W: Write> {
    out: W,
    flows: HashMap<(SocketAddr, SocketAddr), Flow>,
    packet: Vec<u8>,
}

impl<W: Write> PcapngWriter<W> {
    /// Writes the section header and the one interface (raw IP, nanosecond timestamps).
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut shb = Vec::with_capacity(28);
        shb.extend(0x0a0d_0d0a_u32.to_le_bytes());
        shb.extend(28_u32.to_le_bytes());
        shb.extend(0x1a2b_3c4d_u32.to_le_bytes());
        shb.extend(1_u16.to_le_bytes());
        shb.extend(0_u16.to_le_bytes());
        shb.extend((-1_i64).to_le_bytes());
        shb.extend(28_u32.to_le_bytes());
        out.write_all(&shb)?;
        let mut idb = Vec::with_capacity(32);
        idb.extend(1_u32.to_le_bytes());
        idb.extend(32_u32.to_le_bytes());
        idb.extend((RAW as u16).to_le_bytes());
        idb.extend(0_u16.to_le_bytes());
        idb.extend(0_u32.to_le_bytes());
        idb.extend(9_u16.to_le_bytes()); // if_tsresol: 10^-9
        idb.extend(1_u16.to_le_bytes());
        idb.extend([9, 0, 0, 0]);
        idb.extend([0, 0, 0, 0]); // opt_endofopt
        idb.extend(32_u32.to_le_bytes());
        out.write_all(&idb)?;
        Ok(Self { out, flows: HashMap::new(), packet: Vec::new() })
    }

    /// A connection from `client` to `broker` opens: SYN, SYN-ACK, ACK.
    pub fn open(&mut self, client: SocketAddr, broker: SocketAddr, at_ns: i64) -> io::Result<()> {
        let flow = Flow { client_seq: CLIENT_ISN.wrapping_add(1), broker_seq: BROKER_ISN.wrapping_add(1) };
        self.flows.insert((client, broker), flow);
        self.segment(client, broker, CLIENT_ISN, 0, SYN, &[], at_ns)?;
        self.segment(broker, client, BROKER_ISN, flow.client_seq, SYN | ACK, &[], at_ns)?;
        self.segment(client, broker, flow.client_seq, flow.broker_seq, ACK, &[], at_ns)
    }

    /// Bytes of the connection, in `direction`, at `at_ns`. A connection not opened is opened
    /// first.
    pub fn data(
        &mut self,
        client: SocketAddr,
        broker: SocketAddr,
        direction: Direction,
        bytes: &[u8],
        at_ns: i64,
    ) -> io::Result<()> {
        if !self.flows.contains_key(&(client, broker)) {
            self.open(client, broker, at_ns)?;
        }
        for piece in bytes.chunks(MAX_SEGMENT) {
            let Some(flow) = self.flows.get_mut(&(client, broker)) else { return Ok(()) };
            let (source, destination, seq, ack) = match direction {
                Direction::ToBroker => {
                    let seq = flow.client_seq;
                    flow.client_seq = seq.wrapping_add(piece.len() as u32);
                    (client, broker, seq, flow.broker_seq)
                }
                Direction::ToClient => {
                    let seq = flow.broker_seq;
                    flow.broker_seq = seq.wrapping_add(piece.len() as u32);
                    (broker, client, seq, flow.client_seq)
                }
            };
            self.segment(source, destination, seq, ack, PSH | ACK, piece, at_ns)?;
        }
        Ok(())
    }

    /// The connection closes: a FIN from each side.
    pub fn close(&mut self, client: SocketAddr, broker: SocketAddr, at_ns: i64) -> io::Result<()> {
        let Some(flow) = self.flows.remove(&(client, broker)) else { return Ok(()) };
        self.segment(client, broker, flow.client_seq, flow.broker_seq, FIN | ACK, &[], at_ns)?;
        self.segment(broker, client, flow.broker_seq, flow.client_seq.wrapping_add(1), FIN | ACK, &[], at_ns)
    }

    /// Flushes and returns the sink.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }

    /// Flushes the sink.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    #[allow(clippy::too_many_arguments)]
    fn segment(
        &mut self,
        source: SocketAddr,
        destination: SocketAddr,
        seq: u32,
        ack: u32,
        flags: u8,
        payload: &[u8],
        at_ns: i64,
    ) -> io::Result<()> {
        let p = &mut self.packet;
        p.clear();
        let tcp_len = 20 + payload.len();
        match (as_v6_if_mixed(source.ip(), destination.ip()), as_v6_if_mixed(destination.ip(), source.ip())) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                let total = (20 + tcp_len) as u16;
                let mut header = [0_u8; 20];
                header[0] = 0x45;
                header[2..4].copy_from_slice(&total.to_be_bytes());
                header[6] = 0x40; // don't fragment
                header[8] = 64;
                header[9] = 6;
                header[12..16].copy_from_slice(&s.octets());
                header[16..20].copy_from_slice(&d.octets());
                let checksum = ipv4_checksum(&header);
                header[10..12].copy_from_slice(&checksum.to_be_bytes());
                p.extend_from_slice(&header);
            }
            (s, d) => {
                let (IpAddr::V6(s), IpAddr::V6(d)) = (to_v6(s), to_v6(d)) else { return Ok(()) };
                p.extend([0x60, 0, 0, 0]);
                p.extend((tcp_len as u16).to_be_bytes());
                p.extend([6, 64]);
                p.extend(s.octets());
                p.extend(d.octets());
            }
        }
        p.extend(source.port().to_be_bytes());
        p.extend(destination.port().to_be_bytes());
        p.extend(seq.to_be_bytes());
        p.extend(ack.to_be_bytes());
        p.extend([0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
        p.extend_from_slice(payload);
        let len = p.len();
        let padding = (4 - len % 4) % 4;
        let total = (28 + 4 + len + padding) as u32;
        let ts = at_ns.max(0) as u64;
        let mut head = [0_u8; 28];
        head[0..4].copy_from_slice(&6_u32.to_le_bytes());
        head[4..8].copy_from_slice(&total.to_le_bytes());
        head[12..16].copy_from_slice(&((ts >> 32) as u32).to_le_bytes());
        head[16..20].copy_from_slice(&(ts as u32).to_le_bytes());
        head[20..24].copy_from_slice(&(len as u32).to_le_bytes());
        head[24..28].copy_from_slice(&(len as u32).to_le_bytes());
        self.out.write_all(&head)?;
        self.out.write_all(&self.packet)?;
        self.out.write_all(&[0; 3][..padding])?;
        self.out.write_all(&total.to_le_bytes())
    }
}

/// An IPv4 address stays IPv4 unless the other end is IPv6 (then both are written as IPv6).
fn as_v6_if_mixed(ip: IpAddr, other: IpAddr) -> IpAddr {
    match (ip, other) {
        (IpAddr::V4(v4), IpAddr::V6(_)) => IpAddr::V6(v4.to_ipv6_mapped()),
        _ => ip,
    }
}

fn to_v6(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V6(v4.to_ipv6_mapped()),
        v6 @ IpAddr::V6(_) => v6,
    }
}

fn ipv4_checksum(header: &[u8; 20]) -> u16 {
    let mut sum: u32 = header.chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture_reader::CaptureReader;
    use crate::conversation::{CaptureDecoder, DecoderOptions, Event};

    fn request(correlation_id: i32, body_len: usize) -> Vec<u8> {
        let mut frame = 3_i16.to_be_bytes().to_vec();
        frame.extend(12_i16.to_be_bytes());
        frame.extend(correlation_id.to_be_bytes());
        frame.extend(2_i16.to_be_bytes());
        frame.extend(b"me");
        frame.extend(vec![0; body_len]);
        let mut out = (frame.len() as u32).to_be_bytes().to_vec();
        out.extend(frame);
        out
    }

    fn response(correlation_id: i32, body_len: usize) -> Vec<u8> {
        let mut frame = correlation_id.to_be_bytes().to_vec();
        frame.extend(vec![0; body_len]);
        let mut out = (frame.len() as u32).to_be_bytes().to_vec();
        out.extend(frame);
        out
    }

    /// What the writer writes, the capture reader and decoder read back as the same
    /// exchanges, over IPv4 and IPv6, with frames larger than a segment.
    #[test]
    fn a_written_conversation_reads_back_as_the_same_exchanges() {
        for (client, broker) in [("127.0.0.1:40000", "127.0.0.1:19092"), ("[::1]:40001", "[::1]:19092")] {
            let client: SocketAddr = client.parse().unwrap();
            let broker: SocketAddr = broker.parse().unwrap();
            let mut w = PcapngWriter::new(Vec::new()).unwrap();
            w.open(client, broker, 1_000).unwrap();
            w.data(client, broker, Direction::ToBroker, &request(1, 10), 2_000).unwrap();
            w.data(client, broker, Direction::ToBroker, &request(2, 100_000), 3_000).unwrap();
            w.data(client, broker, Direction::ToClient, &response(2, 5), 4_000).unwrap();
            w.data(client, broker, Direction::ToClient, &response(1, 70_000), 5_000).unwrap();
            w.close(client, broker, 6_000).unwrap();
            let file = w.into_inner().unwrap();

            let mut reader = CaptureReader::new(&file[..]);
            let mut decoder =
                CaptureDecoder::new(DecoderOptions { ports: vec![19092], ..Default::default() });
            while let Some(p) = reader.next_packet().unwrap() {
                decoder.packet(&p);
            }
            decoder.finish();
            let mut seen = Vec::new();
            while let Some(event) = decoder.poll_event() {
                let Event::Exchange { exchange, endpoints, .. } = event else { panic!("{event:?}") };
                assert_eq!((endpoints.client, endpoints.broker), (client, broker));
                let response = exchange.response.unwrap();
                seen.push((
                    exchange.request.summary.correlation_id,
                    exchange.request.frame.len(),
                    response.frame.len(),
                    response.at_ns - exchange.request.at_ns,
                ));
            }
            assert_eq!(seen, vec![(2, 100_012, 9, 1_000), (1, 22, 70_004, 3_000)]);
        }
    }

    #[test]
    fn the_ipv4_header_checksum_verifies() {
        let mut header = [0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1];
        let checksum = ipv4_checksum(&header);
        header[10..12].copy_from_slice(&checksum.to_be_bytes());
        assert_eq!(ipv4_checksum(&header), 0);
    }
}
