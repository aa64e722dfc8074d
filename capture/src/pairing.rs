//! [`Pairer`]: responses matched to requests by correlation id, per connection. A response
//! header carries only the correlation id, so its request's API and version are what say how
//! to decode it.

use std::collections::HashMap;

use bytes::Bytes;

use crate::request_peek::{peek_request, RequestSummary};

/// Default cap on requests waiting for a response on one connection (Kafka clients keep at
/// most a handful in flight; librdkafka's default is 1,000,000 per broker, far above anything
/// seen).
pub const DEFAULT_MAX_WAITING: usize = 10_000;

/// A request, waiting for its response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingRequest {
    /// Its header fields.
    pub summary: RequestSummary,
    /// The frame, without its size prefix.
    pub frame: Bytes,
    /// When it was seen, in nanoseconds since the epoch.
    pub at_ns: i64,
}

/// A response frame and when it was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseFrame {
    /// The frame, without its size prefix.
    pub frame: Bytes,
    /// When it was seen, in nanoseconds since the epoch.
    pub at_ns: i64,
}

/// A request and, when there is one, its response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// The request.
    pub request: PendingRequest,
    /// The response; `None` for a request the broker does not answer (Produce with acks 0), or
    /// one still unanswered when the connection or capture ended or the waiting cap was hit.
    pub response: Option<ResponseFrame>,
}

/// A frame that could not be paired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unmatched {
    /// A request frame too short for a request header.
    ShortRequest(ResponseFrame),
    /// A response whose correlation id no waiting request has (or too short to carry one).
    Response {
        /// Its correlation id, if it has 4 bytes.
        correlation_id: Option<i32>,
        /// The frame.
        frame: ResponseFrame,
    },
}

/// Pairs one connection's requests and responses.
#[derive(Debug)]
pub struct Pairer {
    waiting: HashMap<i32, (u64, PendingRequest)>,
    arrivals: u64,
    max_waiting: usize,
}

impl Default for Pairer {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_WAITING)
    }
}

impl Pairer {
    /// A pairer holding at most `max_waiting` unanswered requests (the oldest is given up).
    pub fn new(max_waiting: usize) -> Self {
        Self { waiting: HashMap::new(), arrivals: 0, max_waiting: max_waiting.max(1) }
    }

    /// Whether a request with this correlation id waits for its response.
    pub fn is_waiting(&self, correlation_id: i32) -> bool {
        self.waiting.contains_key(&correlation_id)
    }

    /// How many requests wait.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// A request frame: it waits for its response, unless the broker will not answer (then it
    /// comes out at once). A request given up (its correlation id reused, or the cap hit) comes
    /// out without a response.
    pub fn request(&mut self, frame: Bytes, at_ns: i64, out: &mut impl FnMut(Result<Exchange, Unmatched>)) {
        let Some(summary) = peek_request(&frame) else {
            out(Err(Unmatched::ShortRequest(ResponseFrame { frame, at_ns })));
            return;
        };
        let request = PendingRequest { summary, frame, at_ns };
        if !request.summary.expects_response {
            out(Ok(Exchange { request, response: None }));
            return;
        }
        self.arrivals += 1;
        if let Some((_, replaced)) =
            self.waiting.insert(request.summary.correlation_id, (self.arrivals, request))
        {
            out(Ok(Exchange { request: replaced, response: None }));
        }
        if self.waiting.len() > self.max_waiting {
            if let Some(oldest) = self.waiting.iter().min_by_key(|(_, (n, _))| *n).map(|(c, _)| *c) {
                if let Some((_, given_up)) = self.waiting.remove(&oldest) {
                    out(Ok(Exchange { request: given_up, response: None }));
                }
            }
        }
    }

    /// A response frame: paired with its request, or unmatched.
    pub fn response(&mut self, frame: Bytes, at_ns: i64) -> Result<Exchange, Unmatched> {
        let correlation_id = frame.get(..4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        match correlation_id.and_then(|c| self.waiting.remove(&c)) {
            Some((_, request)) => Ok(Exchange { request, response: Some(ResponseFrame { frame, at_ns }) }),
            None => Err(Unmatched::Response { correlation_id, frame: ResponseFrame { frame, at_ns } }),
        }
    }

    /// The requests still waiting (the connection or capture ended), oldest first.
    pub fn finish(&mut self) -> Vec<Exchange> {
        let mut left: Vec<(u64, PendingRequest)> = self.waiting.drain().map(|(_, v)| v).collect();
        left.sort_by_key(|(n, _)| *n);
        left.into_iter().map(|(_, request)| Exchange { request, response: None }).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(api: i16, version: i16, correlation_id: i32) -> Bytes {
        let mut frame = api.to_be_bytes().to_vec();
        frame.extend(version.to_be_bytes());
        frame.extend(correlation_id.to_be_bytes());
        frame.extend(3_i16.to_be_bytes());
        frame.extend(b"cli");
        Bytes::from(frame)
    }

    fn response(correlation_id: i32) -> Bytes {
        let mut frame = correlation_id.to_be_bytes().to_vec();
        frame.extend([0, 0]);
        Bytes::from(frame)
    }

    #[test]
    fn responses_out_of_order_find_their_requests() {
        let mut p = Pairer::default();
        let mut early = Vec::new();
        p.request(request(3, 12, 1), 10, &mut |e| early.push(e));
        p.request(request(1, 17, 2), 20, &mut |e| early.push(e));
        assert!(early.is_empty());
        assert!(p.is_waiting(1) && p.is_waiting(2));
        let second = p.response(response(2), 50).unwrap();
        assert_eq!((second.request.summary.api.0, second.request.summary.version), (1, 17));
        assert_eq!(second.response.unwrap().at_ns - second.request.at_ns, 30);
        let first = p.response(response(1), 60).unwrap();
        assert_eq!(first.request.summary.client_id.as_deref(), Some("cli"));
        assert_eq!(p.waiting(), 0);
    }

    #[test]
    fn a_response_nobody_asked_for_is_unmatched() {
        let mut p = Pairer::default();
        assert!(matches!(
            p.response(response(5), 1),
            Err(Unmatched::Response { correlation_id: Some(5), .. })
        ));
        assert!(matches!(
            p.response(Bytes::from_static(&[1]), 1),
            Err(Unmatched::Response { correlation_id: None, .. })
        ));
    }

    #[test]
    fn the_oldest_waiting_request_is_given_up_at_the_cap_and_the_rest_at_the_end() {
        let mut p = Pairer::new(2);
        let mut out = Vec::new();
        for c in 0..3 {
            p.request(request(3, 1, c), i64::from(c), &mut |e| out.push(e));
        }
        assert_eq!(out.len(), 1);
        let given_up = out.pop().unwrap().unwrap();
        assert_eq!((given_up.request.summary.correlation_id, given_up.response), (0, None));
        let left: Vec<i32> = p.finish().iter().map(|e| e.request.summary.correlation_id).collect();
        assert_eq!(left, vec![1, 2]);
    }

    #[test]
    fn a_short_request_frame_is_unmatched() {
        let mut p = Pairer::default();
        let mut out = Vec::new();
        p.request(Bytes::from_static(&[0, 3, 0]), 1, &mut |e| out.push(e));
        assert!(matches!(out[..], [Err(Unmatched::ShortRequest(_))]));
    }
}
