//! Kafka conversations from packet captures and from a proxy's sockets, sans-IO.
//!
//! - Reading captures: [`CaptureReader`] streams pcap and pcapng files block by block (nom
//!   parsers over a bounded buffer); [`link::network_payload`], [`ip::parse`] and [`tcp::parse`]
//!   peel Ethernet / Linux cooked (SLL, SLL2) / loopback / raw-IP frames down to TCP segments.
//! - Reassembly: [`StreamReassembler`] orders one direction of a TCP connection (out of order,
//!   retransmitted and overlapping segments); [`FrameSplitter`] cuts the byte stream into Kafka
//!   frames, bounded by a cap, and resynchronises on the next plausible frame after a gap, a
//!   mid-stream start or bytes that are not Kafka.
//! - Pairing: [`Pairer`] matches each response to its request by correlation id, so the
//!   response can be decoded with the request's API and version.
//! - [`CaptureDecoder`] ties these together: packets in, [`Event`]s out.
//! - The proxy's pure parts: [`rewrite`] replaces the broker endpoints in every response whose
//!   schema carries them (Metadata, FindCoordinator, DescribeCluster, the KIP-951 new-leader
//!   endpoints of Produce and Fetch, ShareFetch, DescribeQuorum, ...); [`PcapngWriter`] writes a conversation as
//!   synthesised TCP/IP packets.
//!
//! Nothing here opens a socket or reads a clock: time is an argument (nanoseconds since the
//! epoch), and no input can make it panic or hold more than the frame cap per stream.
//!
//! ```
//! use kwire_capture::{CaptureDecoder, CaptureReader, DecoderOptions};
//!
//! // An empty pcap file (just its header): no packets, no events.
//! let mut file = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
//! file.extend([0; 8]);
//! file.extend(65535_u32.to_le_bytes());
//! file.extend(1_u32.to_le_bytes());
//! let mut reader = CaptureReader::new(&file[..]);
//! let mut decoder = CaptureDecoder::new(DecoderOptions::default());
//! while let Some(packet) = reader.next_packet().unwrap() {
//!     decoder.packet(&packet);
//! }
//! decoder.finish();
//! assert!(decoder.poll_event().is_none());
//! ```

#![warn(missing_docs)]

mod capture_reader;
mod conversation;
mod endpoint_splice;
mod frame_splitter;
pub mod ip;
pub mod link;
mod pairing;
mod pcap_file;
mod pcapng_file;
mod pcapng_writer;
mod reassembly;
mod request_peek;
pub mod rewrite;
#[cfg(test)]
mod rewrite_tests;
pub mod tcp;

pub use capture_reader::{CaptureError, CaptureReader, Packet};
pub use conversation::{CaptureDecoder, ConnectionId, DecoderOptions, Endpoints, Event};
pub use frame_splitter::{FrameSplitter, Plausible, SplitEvent};
pub use pairing::{Exchange, Pairer, PendingRequest, ResponseFrame, Unmatched};
pub use pcapng_writer::{Direction, PcapngWriter};
pub use reassembly::{Chunk, StreamReassembler};
pub use request_peek::{peek_request, RequestSummary};
