#![warn(missing_docs)]

//! kafka-wire: a hand-written Kafka wire-protocol codec ([`protocol`], sans-IO). The tokio
//! client that negotiates versions and routes each request to the right broker is its own
//! crate, `kafka-client`, built on this one.
//!
//! With `default-features = false` the crate is the codec alone (bytes and the CRC crates;
//! nothing async, no serde). Features: `json` (`protocol::json`, serde_json), and one per
//! compression codec (`gzip`, `snappy`, `lz4`, `zstd`; `compression` turns on all four).
//! Default: `compression`.
//!
//! # The codec in one example
//!
//! A request goes out as one size-prefixed frame; the reading side takes whole frames off a
//! byte stream with [`split_frame`](protocol::frame::split_frame), which also says "need more
//! bytes" for a frame that has not fully arrived, and decodes each one. Nothing here touches a
//! socket: the bytes can come from anywhere.
//!
//! ```
//! use bytes::BytesMut;
//! use kafka_wire::protocol::frame::{decode_request, encode_request, split_frame, DEFAULT_MAX_FRAME};
//! use kafka_wire::protocol::messages::list_offsets::{CONSUMER_REPLICA_ID, READ_COMMITTED};
//! use kafka_wire::protocol::messages::{ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic};
//! use kafka_wire::protocol::messages::SpecialTimestamp;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // "Where does partition 0 of `orders` end, for a read_committed consumer?" at ListOffsets v7.
//! let request = ListOffsetsRequest {
//!     replica_id: CONSUMER_REPLICA_ID,
//!     isolation_level: Some(READ_COMMITTED),
//!     topics: vec![ListOffsetsTopic {
//!         name: "orders".to_owned(),
//!         partitions: vec![ListOffsetsPartition {
//!             partition_index: 0,
//!             current_leader_epoch: Some(-1),
//!             timestamp: SpecialTimestamp::LATEST.timestamp,
//!             ..Default::default()
//!         }],
//!         ..Default::default()
//!     }],
//!     ..Default::default()
//! };
//! let frame = encode_request(&request, 7, 42, Some("kwire-doc"))?;
//!
//! // The frame arrives in two pieces: the first is not enough.
//! let mut stream = BytesMut::from(&frame[..10]);
//! assert_eq!(split_frame(&mut stream, DEFAULT_MAX_FRAME)?, None);
//! stream.extend_from_slice(&frame[10..]);
//! let whole = split_frame(&mut stream, DEFAULT_MAX_FRAME)?.expect("complete frame");
//!
//! let (header, decoded) = decode_request::<ListOffsetsRequest>(whole)?;
//! assert_eq!((header.api_version, header.correlation_id), (7, 42));
//! assert_eq!(header.client_id.as_deref(), Some("kwire-doc"));
//! assert_eq!(decoded, request);
//! # Ok(())
//! # }
//! ```
//!
//! Where to go from there: [`protocol::Body`] (one message body at a version),
//! [`protocol::frame`] (framing and headers), [`protocol::records`] (the record batches inside
//! Fetch and Produce), [`protocol::registry`] (every API kwire implements) and
//! [`protocol::DecodeErrorKind`] (what "malformed" can mean, and the one kind that means
//! "incomplete").

pub mod protocol;
