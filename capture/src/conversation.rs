//! [`CaptureDecoder`]: captured packets in, Kafka exchanges and notices out. Per TCP
//! connection to a broker port: both directions reassembled, cut into frames, and the frames
//! paired.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::net::SocketAddr;

use kafka_wire::protocol::frame::DEFAULT_MAX_FRAME;

use crate::capture_reader::Packet;
use crate::frame_splitter::{FrameSplitter, Plausible, SplitEvent};
use crate::pairing::{Exchange, Pairer, Unmatched};
use crate::reassembly::{Chunk, StreamReassembler, DEFAULT_MAX_PENDING};
use crate::{ip, link, tcp};

/// What the decoder is told about the capture.
#[derive(Debug, Clone)]
pub struct DecoderOptions {
    /// Broker ports: a connection to one of them is a Kafka connection (9092 by default).
    pub ports: Vec<u16>,
    /// The largest frame buffered; larger ones are reported and skipped.
    pub max_frame: usize,
    /// The most bytes held per direction waiting for a missing segment.
    pub max_out_of_order: usize,
}

impl Default for DecoderOptions {
    fn default() -> Self {
        Self { ports: vec![9092], max_frame: DEFAULT_MAX_FRAME, max_out_of_order: DEFAULT_MAX_PENDING }
    }
}

/// A connection's number, in order of first appearance in the capture (from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId(pub u64);

impl fmt::Display for ConnectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// The two ends of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Endpoints {
    /// The client's address.
    pub client: SocketAddr,
    /// The broker's address.
    pub broker: SocketAddr,
}

/// What the decoder found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A request and its response (or a request left without one).
    Exchange {
        /// The connection.
        connection: ConnectionId,
        /// Its ends.
        endpoints: Endpoints,
        /// The pair.
        exchange: Exchange,
    },
    /// A frame that could not be paired.
    Unmatched {
        /// The connection.
        connection: ConnectionId,
        /// Its ends.
        endpoints: Endpoints,
        /// The frame.
        unmatched: Unmatched,
    },
    /// Something about the stream worth a line: a resynchronisation, lost bytes, an oversize
    /// frame, bytes that are not Kafka, an incomplete frame at the end.
    Notice {
        /// The connection.
        connection: ConnectionId,
        /// Its ends.
        endpoints: Endpoints,
        /// When, in nanoseconds since the epoch.
        at_ns: i64,
        /// What, in words.
        text: String,
    },
}

/// Which way bytes flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    ToBroker,
    ToClient,
}

impl Way {
    fn stream(self) -> &'static str {
        match self {
            Self::ToBroker => "request stream",
            Self::ToClient => "response stream",
        }
    }
}

#[derive(Debug)]
struct HalfStream {
    reassembler: StreamReassembler,
    splitter: Option<FrameSplitter>,
    syn_seen: bool,
    fin_seen: bool,
}

impl HalfStream {
    fn new(max_out_of_order: usize) -> Self {
        Self {
            reassembler: StreamReassembler::new(max_out_of_order),
            splitter: None,
            syn_seen: false,
            fin_seen: false,
        }
    }
}

#[derive(Debug)]
struct Connection {
    id: ConnectionId,
    endpoints: Endpoints,
    to_broker: HalfStream,
    to_client: HalfStream,
    pairer: Pairer,
    has_data: bool,
}

/// Counts of packets that carried no Kafka bytes, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Not IPv4 or IPv6 (or a link type kwire does not read).
    pub not_ip: u64,
    /// IP, but not TCP.
    pub not_tcp: u64,
    /// IP fragments.
    pub fragments: u64,
    /// Headers cut short or inconsistent.
    pub malformed: u64,
    /// TCP on no broker port.
    pub other_ports: u64,
}

/// Turns packets into [`Event`]s. Feed packets in capture order, call [`finish`](Self::finish)
/// at the end, drain [`poll_event`](Self::poll_event) after each call.
#[derive(Debug)]
pub struct CaptureDecoder {
    options: DecoderOptions,
    connections: HashMap<Endpoints, Connection>,
    next_id: u64,
    events: VecDeque<Event>,
    skipped: Skipped,
    last_ns: i64,
}

impl CaptureDecoder {
    /// A decoder with these options.
    pub fn new(options: DecoderOptions) -> Self {
        Self {
            options,
            connections: HashMap::new(),
            next_id: 1,
            events: VecDeque::new(),
            skipped: Skipped::default(),
            last_ns: 0,
        }
    }

    /// Packets that carried no Kafka bytes, by reason.
    pub fn skipped(&self) -> Skipped {
        self.skipped
    }

    /// The timestamp of the last packet taken, in nanoseconds since the epoch (0 before any).
    pub fn last_timestamp_ns(&self) -> i64 {
        self.last_ns
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Takes one captured packet.
    pub fn packet(&mut self, packet: &Packet<'_>) {
        self.last_ns = packet.timestamp_ns;
        let ip = match ip::parse(link::network_payload(packet.link_type, packet.data)) {
            Ok(ip) => ip,
            Err(ip::Skip::NotIp(_)) => return self.skipped.not_ip += 1,
            Err(ip::Skip::NotTcp) => return self.skipped.not_tcp += 1,
            Err(ip::Skip::Fragment) => return self.skipped.fragments += 1,
            Err(ip::Skip::Malformed) => return self.skipped.malformed += 1,
        };
        let Some(segment) = tcp::parse(ip.segment) else { return self.skipped.malformed += 1 };
        let source = SocketAddr::new(ip.source, segment.source_port);
        let destination = SocketAddr::new(ip.destination, segment.destination_port);
        let (way, endpoints) = if self.options.ports.contains(&segment.destination_port) {
            (Way::ToBroker, Endpoints { client: source, broker: destination })
        } else if self.options.ports.contains(&segment.source_port) {
            (Way::ToClient, Endpoints { client: destination, broker: source })
        } else {
            return self.skipped.other_ports += 1;
        };
        // A new handshake on a known address pair is a new connection (the port was reused).
        if segment.syn && !segment.ack && way == Way::ToBroker {
            if let Some(old) = self.connections.get(&endpoints) {
                if old.has_data {
                    self.close(endpoints, packet.timestamp_ns);
                }
            }
        }
        let options = &self.options;
        let next_id = &mut self.next_id;
        let connection = self.connections.entry(endpoints).or_insert_with(|| {
            let id = ConnectionId(*next_id);
            *next_id += 1;
            Connection {
                id,
                endpoints,
                to_broker: HalfStream::new(options.max_out_of_order),
                to_client: HalfStream::new(options.max_out_of_order),
                pairer: Pairer::default(),
                has_data: false,
            }
        });
        connection.has_data |= !segment.payload.is_empty();
        feed(connection, way, &segment, packet.timestamp_ns, options.max_frame, &mut self.events);
        let done = segment.rst || (connection.to_broker.fin_seen && connection.to_client.fin_seen);
        if done {
            self.close(endpoints, packet.timestamp_ns);
        }
    }

    /// The capture ended: holes are given up, incomplete frames reported, and requests left
    /// without a response come out.
    pub fn finish(&mut self) {
        let mut open: Vec<(ConnectionId, Endpoints)> =
            self.connections.values().map(|c| (c.id, c.endpoints)).collect();
        open.sort_by_key(|(id, _)| *id);
        for (_, endpoints) in open {
            self.close(endpoints, self.last_ns);
        }
    }

    fn close(&mut self, endpoints: Endpoints, at_ns: i64) {
        let Some(mut connection) = self.connections.remove(&endpoints) else { return };
        for way in [Way::ToBroker, Way::ToClient] {
            let mut chunks = Vec::new();
            half(&mut connection, way).reassembler.finish(&mut |c| chunks.push(owned(c)));
            for chunk in chunks {
                deliver(
                    &mut connection,
                    way,
                    chunk.as_chunk(),
                    at_ns,
                    self.options.max_frame,
                    &mut self.events,
                );
            }
            let buffered = half(&mut connection, way).splitter.as_ref().map_or(0, FrameSplitter::buffered);
            let searching =
                half(&mut connection, way).splitter.as_ref().is_some_and(FrameSplitter::is_searching);
            if buffered > 0 && !searching {
                notice(
                    &connection,
                    at_ns,
                    format!("{}: {buffered} bytes of an incomplete frame at the end", way.stream()),
                    &mut self.events,
                );
            }
        }
        for exchange in connection.pairer.finish() {
            self.events.push_back(Event::Exchange { connection: connection.id, endpoints, exchange });
        }
    }
}

fn half(connection: &mut Connection, way: Way) -> &mut HalfStream {
    match way {
        Way::ToBroker => &mut connection.to_broker,
        Way::ToClient => &mut connection.to_client,
    }
}

enum OwnedChunk {
    Data(Vec<u8>),
    Gap(u64),
}

impl OwnedChunk {
    fn as_chunk(&self) -> Chunk<'_> {
        match self {
            Self::Data(d) => Chunk::Data(d),
            Self::Gap(n) => Chunk::Gap(*n),
        }
    }
}

fn owned(chunk: Chunk<'_>) -> OwnedChunk {
    match chunk {
        Chunk::Data(d) => OwnedChunk::Data(d.to_vec()),
        Chunk::Gap(n) => OwnedChunk::Gap(n),
    }
}

fn feed(
    connection: &mut Connection,
    way: Way,
    segment: &tcp::Segment<'_>,
    at_ns: i64,
    max_frame: usize,
    events: &mut VecDeque<Event>,
) {
    let stream = half(connection, way);
    stream.syn_seen |= segment.syn;
    stream.fin_seen |= segment.fin;
    if stream.splitter.is_none() && !segment.payload.is_empty() {
        stream.splitter = Some(if stream.syn_seen {
            FrameSplitter::new(max_frame)
        } else {
            FrameSplitter::searching(max_frame)
        });
        if !stream.syn_seen {
            notice(connection, at_ns, format!("{}: the capture starts mid-stream", way.stream()), events);
        }
    }
    // Chunks borrow the segment (in order, the common case) or the reassembler's held
    // segments; they are copied only when a hole was filled.
    let mut in_order: Option<&[u8]> = None;
    let mut later: Vec<OwnedChunk> = Vec::new();
    let payload = segment.payload;
    half(connection, way).reassembler.segment(segment.seq, segment.syn, payload, &mut |c| match c {
        Chunk::Data(d) if in_order.is_none() && later.is_empty() && is_tail_of(d, payload) => {
            in_order = Some(&payload[payload.len() - d.len()..]);
        }
        other => later.push(owned(other)),
    });
    if let Some(d) = in_order {
        deliver(connection, way, Chunk::Data(d), at_ns, max_frame, events);
    }
    for chunk in later {
        deliver(connection, way, chunk.as_chunk(), at_ns, max_frame, events);
    }
}

fn deliver(
    connection: &mut Connection,
    way: Way,
    chunk: Chunk<'_>,
    at_ns: i64,
    max_frame: usize,
    events: &mut VecDeque<Event>,
) {
    let data = match chunk {
        Chunk::Data(d) => d,
        Chunk::Gap(n) => {
            half(connection, way).splitter.get_or_insert_with(|| FrameSplitter::searching(max_frame)).lost();
            notice(connection, at_ns, format!("{}: {n} bytes were not captured", way.stream()), events);
            return;
        }
    };
    let mut split = Vec::new();
    {
        let Connection { to_broker, to_client, pairer, .. } = &mut *connection;
        let stream = if way == Way::ToBroker { to_broker } else { to_client };
        let splitter = stream.splitter.get_or_insert_with(|| FrameSplitter::new(max_frame));
        let waiting = |c: i32| pairer.is_waiting(c);
        let plausible = if way == Way::ToBroker { Plausible::Request } else { Plausible::Response(&waiting) };
        splitter.push(data, plausible, &mut |e| split.push(e));
    }
    for event in split {
        match event {
            SplitEvent::Frame(frame) => match way {
                Way::ToBroker => {
                    let (id, endpoints) = (connection.id, connection.endpoints);
                    connection.pairer.request(frame, at_ns, &mut |paired| {
                        events.push_back(paired_event(id, endpoints, paired));
                    });
                }
                Way::ToClient => {
                    let paired = connection.pairer.response(frame, at_ns);
                    events.push_back(paired_event(connection.id, connection.endpoints, paired));
                }
            },
            SplitEvent::Oversize { size } => notice(
                connection,
                at_ns,
                format!("{}: a frame of {size} bytes, above the {max_frame}-byte cap: skipped", way.stream()),
                events,
            ),
            SplitEvent::NotKafka { head } => notice(
                connection,
                at_ns,
                format!("{}: not a Kafka frame: {}", way.stream(), printable(&head)),
                events,
            ),
            SplitEvent::Resynchronised { skipped } => notice(
                connection,
                at_ns,
                format!("{}: resynchronised on a frame after skipping {skipped} bytes", way.stream()),
                events,
            ),
        }
    }
}

fn paired_event(
    connection: ConnectionId,
    endpoints: Endpoints,
    paired: Result<Exchange, Unmatched>,
) -> Event {
    match paired {
        Ok(exchange) => Event::Exchange { connection, endpoints, exchange },
        Err(unmatched) => Event::Unmatched { connection, endpoints, unmatched },
    }
}

fn notice(connection: &Connection, at_ns: i64, text: String, events: &mut VecDeque<Event>) {
    events.push_back(Event::Notice {
        connection: connection.id,
        endpoints: connection.endpoints,
        at_ns,
        text,
    });
}

/// Bytes as `"text"` when printable ASCII, else hex.
fn printable(bytes: &[u8]) -> String {
    if bytes.iter().all(|b| b.is_ascii_graphic() || *b == b' ' || *b == b'\r' || *b == b'\n') {
        format!("{:?}", String::from_utf8_lossy(bytes))
    } else {
        let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
        hex.join(" ")
    }
}

/// Whether `part` is the tail of `whole` in memory (the same bytes, not equal bytes).
fn is_tail_of(part: &[u8], whole: &[u8]) -> bool {
    let (p, w) = (part.as_ptr() as usize, whole.as_ptr() as usize);
    p >= w && p + part.len() == w + whole.len()
}
