//! [`FrameSplitter`]: one direction's byte stream cut into Kafka frames (`i32 size`, then
//! `size` bytes), with a cap on a frame's size and resynchronisation after bytes that cannot
//! be a frame.

use bytes::{Buf, Bytes, BytesMut};

/// Highest API key a request may have while resynchronising (Kafka 4.1 defines keys up to 92;
/// room is left for new ones). In step, any key is accepted and reported if unknown.
const MAX_PLAUSIBLE_API_KEY: i16 = 255;
/// Highest API version a request may have while resynchronising.
const MAX_PLAUSIBLE_VERSION: i16 = 63;
/// The smallest request frame: api key, version, correlation id, client id length.
const MIN_REQUEST_FRAME: usize = 10;
/// The smallest response frame: the correlation id.
const MIN_RESPONSE_FRAME: usize = 4;

/// What a frame at this point of the stream must look like to be taken as one while
/// resynchronising.
#[derive(Clone, Copy)]
pub enum Plausible<'a> {
    /// A request: a size of at least 10 bytes (a header) and within the cap, a known-looking API
    /// key and version, a non-negative correlation id.
    Request,
    /// A response: a size within the cap and a correlation id the predicate accepts (one a
    /// request is waiting for).
    Response(&'a dyn Fn(i32) -> bool),
}

impl std::fmt::Debug for Plausible<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Request => "Request",
            Self::Response(_) => "Response",
        })
    }
}

impl Plausible<'_> {
    /// Bytes needed to judge a frame start.
    fn needed(self) -> usize {
        match self {
            Self::Request => 12,
            Self::Response(_) => 8,
        }
    }

    /// Whether `head` (at least [`needed`](Self::needed) bytes) can start a frame of at most
    /// `max_frame` bytes.
    fn accepts(self, head: &[u8], max_frame: usize) -> bool {
        let size = i32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        let Ok(size) = usize::try_from(size) else { return false };
        match self {
            Self::Request => {
                let api = i16::from_be_bytes([head[4], head[5]]);
                let version = i16::from_be_bytes([head[6], head[7]]);
                let correlation_id = i32::from_be_bytes([head[8], head[9], head[10], head[11]]);
                (MIN_REQUEST_FRAME..=max_frame).contains(&size)
                    && (0..=MAX_PLAUSIBLE_API_KEY).contains(&api)
                    && (0..=MAX_PLAUSIBLE_VERSION).contains(&version)
                    && correlation_id >= 0
            }
            Self::Response(pending) => {
                let correlation_id = i32::from_be_bytes([head[4], head[5], head[6], head[7]]);
                (MIN_RESPONSE_FRAME..=max_frame).contains(&size) && pending(correlation_id)
            }
        }
    }

    /// Whether an oversize frame looks like Kafka (so it is skipped by its size rather than
    /// treated as foreign bytes).
    fn oversize_looks_like_kafka(self, head: &[u8]) -> bool {
        self.accepts(head, usize::MAX)
    }
}

/// What the splitter found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SplitEvent {
    /// A whole frame, without its size prefix.
    Frame(Bytes),
    /// A frame whose size is above the cap: it is skipped as its bytes arrive.
    Oversize {
        /// The size the prefix claims.
        size: usize,
    },
    /// Where a frame should start there are bytes that cannot start one (a negative or huge
    /// size that does not look like Kafka): the splitter resynchronises.
    NotKafka {
        /// Up to 16 of those bytes.
        head: Vec<u8>,
    },
    /// A frame was found again after bytes that were skipped.
    Resynchronised {
        /// Bytes skipped before it (not counting bytes lost from the capture).
        skipped: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    InStep,
    Searching { skipped: u64 },
    SkippingOversize { remaining: u64 },
}

/// Cuts one direction of a connection into frames.
///
/// Memory: the buffer holds at most one frame (at most `max_frame` + 4 bytes) in step, and
/// fewer than 12 bytes while searching.
#[derive(Debug)]
pub struct FrameSplitter {
    buf: BytesMut,
    max_frame: usize,
    state: State,
}

impl FrameSplitter {
    /// A splitter in step with the stream (it starts at a frame boundary).
    pub fn new(max_frame: usize) -> Self {
        Self { buf: BytesMut::new(), max_frame, state: State::InStep }
    }

    /// A splitter for a stream that may start inside a frame: it searches for the first
    /// plausible frame.
    pub fn searching(max_frame: usize) -> Self {
        Self { buf: BytesMut::new(), max_frame, state: State::Searching { skipped: 0 } }
    }

    /// Whether the splitter is searching for a frame boundary.
    pub fn is_searching(&self) -> bool {
        matches!(self.state, State::Searching { .. })
    }

    /// Bytes buffered (for the memory bound).
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Bytes of the stream were lost: whatever was buffered is dropped and the splitter
    /// searches for the next frame.
    pub fn lost(&mut self) {
        self.buf.clear();
        self.state = State::Searching { skipped: 0 };
    }

    /// Takes the next bytes of the stream; calls `out` for each event.
    pub fn push(&mut self, mut data: &[u8], plausible: Plausible<'_>, out: &mut impl FnMut(SplitEvent)) {
        loop {
            if let State::SkippingOversize { remaining } = self.state {
                let n = remaining.min(data.len() as u64);
                data = &data[n as usize..];
                self.state = if n == remaining {
                    State::InStep
                } else {
                    State::SkippingOversize { remaining: remaining - n }
                };
                if data.is_empty() {
                    return;
                }
                continue;
            }
            // Take bytes in pieces no larger than what the current step can use, so a search
            // never buffers more than a frame head.
            let want = match self.state {
                State::InStep if self.buf.len() < 4 => 4 - self.buf.len(),
                State::InStep => match frame_size(&self.buf) {
                    Some(size) if size <= self.max_frame => 4 + size - self.buf.len().min(4 + size),
                    // Only the head is needed to tell an oversize frame from foreign bytes.
                    _ => plausible.needed().saturating_sub(self.buf.len()),
                },
                State::Searching { .. } => plausible.needed().saturating_sub(self.buf.len()).max(1),
                State::SkippingOversize { .. } => 0,
            };
            let n = want.min(data.len());
            self.buf.extend_from_slice(&data[..n]);
            data = &data[n..];
            let progressed = self.step(plausible, out);
            if !progressed && data.is_empty() {
                return;
            }
        }
    }

    /// Acts on the buffer; false when it needs more bytes.
    fn step(&mut self, plausible: Plausible<'_>, out: &mut impl FnMut(SplitEvent)) -> bool {
        match self.state {
            State::SkippingOversize { .. } => true,
            State::InStep => {
                if self.buf.len() < 4 {
                    return false;
                }
                match frame_size(&self.buf) {
                    Some(size) if size <= self.max_frame => {
                        if self.buf.len() < 4 + size {
                            return false;
                        }
                        self.buf.advance(4);
                        out(SplitEvent::Frame(self.buf.split_to(size).freeze()));
                        true
                    }
                    _ => {
                        if self.buf.len() < plausible.needed() {
                            return false;
                        }
                        let size = frame_size(&self.buf);
                        if let Some(size) = size.filter(|_| plausible.oversize_looks_like_kafka(&self.buf)) {
                            out(SplitEvent::Oversize { size });
                            let buffered = self.buf.len() as u64 - 4;
                            self.buf.clear();
                            self.state = State::SkippingOversize { remaining: size as u64 - buffered };
                        } else {
                            out(SplitEvent::NotKafka { head: self.buf[..self.buf.len().min(16)].to_vec() });
                            self.state = State::Searching { skipped: 0 };
                        }
                        true
                    }
                }
            }
            State::Searching { skipped } => {
                let needed = plausible.needed();
                if self.buf.len() < needed {
                    return false;
                }
                if plausible.accepts(&self.buf, self.max_frame) {
                    out(SplitEvent::Resynchronised { skipped });
                    self.state = State::InStep;
                } else {
                    self.buf.advance(1);
                    self.state = State::Searching { skipped: skipped + 1 };
                }
                true
            }
        }
    }
}

/// The size prefix at the front of `buf` (4 bytes there), `None` when negative.
fn frame_size(buf: &[u8]) -> Option<usize> {
    let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    usize::try_from(size).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(api: i16, correlation_id: i32, body: &[u8]) -> Vec<u8> {
        let mut frame = api.to_be_bytes().to_vec();
        frame.extend(1_i16.to_be_bytes());
        frame.extend(correlation_id.to_be_bytes());
        frame.extend((-1_i16).to_be_bytes());
        frame.extend(body);
        let mut out = (frame.len() as u32).to_be_bytes().to_vec();
        out.extend(frame);
        out
    }

    fn split(splitter: &mut FrameSplitter, pieces: &[&[u8]], plausible: Plausible<'_>) -> Vec<SplitEvent> {
        let mut events = Vec::new();
        for piece in pieces {
            splitter.push(piece, plausible, &mut |e| events.push(e));
        }
        events
    }

    #[test]
    fn frames_split_across_and_within_pushes() {
        let a = request(3, 1, b"xyz");
        let b = request(18, 2, b"");
        let mut stream = a.clone();
        stream.extend(&b);
        let mut s = FrameSplitter::new(1024);
        let events = split(&mut s, &[&stream[..3], &stream[3..15], &stream[15..]], Plausible::Request);
        assert_eq!(
            events,
            vec![
                SplitEvent::Frame(Bytes::from(a[4..].to_vec())),
                SplitEvent::Frame(Bytes::from(b[4..].to_vec()))
            ]
        );
        assert_eq!(s.buffered(), 0);
    }

    #[test]
    fn a_frame_above_the_cap_is_reported_and_skipped_without_buffering_it() {
        let big = request(0, 5, &[7; 5000]);
        let next = request(3, 6, b"");
        let mut s = FrameSplitter::new(100);
        let mut events = Vec::new();
        for chunk in big.chunks(64) {
            s.push(chunk, Plausible::Request, &mut |e| events.push(e));
            assert!(s.buffered() <= 12);
        }
        s.push(&next, Plausible::Request, &mut |e| events.push(e));
        assert_eq!(
            events,
            vec![
                SplitEvent::Oversize { size: big.len() - 4 },
                SplitEvent::Frame(Bytes::from(next[4..].to_vec()))
            ]
        );
    }

    #[test]
    fn text_on_a_kafka_port_is_not_kafka_and_a_later_frame_is_found_again() {
        let mut stream = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
        let frame = request(3, 9, b"");
        stream.extend(&frame);
        let mut s = FrameSplitter::new(1 << 20);
        let events = split(&mut s, &[&stream], Plausible::Request);
        assert_eq!(events[0], SplitEvent::NotKafka { head: b"GET / HTTP/1".to_vec() });
        assert_eq!(events[1], SplitEvent::Resynchronised { skipped: 27 });
        assert_eq!(events[2], SplitEvent::Frame(Bytes::from(frame[4..].to_vec())));
    }

    #[test]
    fn a_stream_joined_mid_frame_resynchronises_on_the_next_request() {
        let first = request(1, 40, &[0; 30]);
        let second = request(1, 41, &[0; 3]);
        let mut stream = first[17..].to_vec();
        stream.extend(&second);
        let mut s = FrameSplitter::searching(1 << 20);
        let events = split(&mut s, &[&stream], Plausible::Request);
        assert_eq!(
            events,
            vec![
                SplitEvent::Resynchronised { skipped: (first.len() - 17) as u64 },
                SplitEvent::Frame(Bytes::from(second[4..].to_vec()))
            ]
        );
    }

    #[test]
    fn responses_resynchronise_on_a_correlation_id_a_request_waits_for() {
        let mut response = 8_u32.to_be_bytes().to_vec();
        response.extend(41_i32.to_be_bytes());
        response.extend([1, 2, 3, 4]);
        let mut stream = vec![0, 0, 0, 8, 0, 0, 0, 40, 9, 9];
        stream.extend(&response);
        let waiting = |c: i32| c == 41;
        let mut s = FrameSplitter::searching(1 << 20);
        let events = split(&mut s, &[&stream], Plausible::Response(&waiting));
        assert_eq!(
            events,
            vec![
                SplitEvent::Resynchronised { skipped: 10 },
                SplitEvent::Frame(Bytes::from(response[4..].to_vec()))
            ]
        );
    }

    #[test]
    fn a_negative_size_is_not_kafka() {
        let mut s = FrameSplitter::new(1 << 20);
        let events = split(&mut s, &[&[0xff; 12]], Plausible::Request);
        assert_eq!(events, vec![SplitEvent::NotKafka { head: vec![0xff; 12] }]);
        assert!(s.is_searching());
    }
}
