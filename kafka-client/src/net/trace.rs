//! A hook that sees every request and response frame, for `kwire --trace`.

use std::fmt;
use std::sync::Arc;

use kafka_wire::protocol::ApiKey;

/// Which way a traced frame went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From kwire to the broker.
    Request,
    /// From the broker to kwire.
    Response,
}

/// One frame as it crossed the wire, with its decoded form.
#[derive(Debug)]
pub struct TraceEvent<'a> {
    /// Whether the frame was sent or received.
    pub direction: Direction,
    /// `host:port` of the broker.
    pub broker: &'a str,
    /// The API of the request (a response carries its request's).
    pub api: ApiKey,
    /// The negotiated API version the frame is encoded at.
    pub version: i16,
    /// The correlation id that pairs a response with its request.
    pub correlation_id: i32,
    /// The frame's bytes (requests include the size prefix, responses do not).
    pub frame: &'a [u8],
    /// The decoded message (`Debug` form), or the decode error.
    pub decoded: &'a dyn fmt::Debug,
}

/// Called for each frame; must be cheap and must not block.
pub type TraceHook = Arc<dyn Fn(&TraceEvent<'_>) + Send + Sync>;
