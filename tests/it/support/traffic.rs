//! The frames of one API a client sent and received, recorded through its trace hook: for tests
//! that check the requests themselves (how many, to which broker, how large, with which fields).

use std::sync::{Arc, Mutex};

use kafka_client::{ClientConfig, Direction};
use kafka_wire::protocol::ApiKey;

/// One traced frame.
#[derive(Debug, Clone)]
pub struct Frame {
    pub direction: Direction,
    /// The broker's `host:port`, as advertised.
    pub broker: String,
    /// Bytes, as the trace hook gives them: a request's size prefix included, a response's not.
    pub len: usize,
    /// A request's `Debug` rendering under [`Detail::RequestText`]; empty otherwise.
    pub text: String,
}

/// What is kept of each frame besides its direction, broker and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Nothing more (rendering a Produce request's records as text costs ~4× their size).
    Sizes,
    /// The request's decoded `Debug` text, for [`numbers_after`].
    RequestText,
}

/// The frames recorded so far, in the order the hook saw them.
#[derive(Debug, Clone, Default)]
pub struct Traffic(Arc<Mutex<Vec<Frame>>>);

impl Traffic {
    /// Sets `config`'s trace hook to record `api`'s frames.
    pub fn record(config: &mut ClientConfig, api: ApiKey, detail: Detail) -> Self {
        let traffic = Self::default();
        let sink = Arc::clone(&traffic.0);
        config.trace = Some(Arc::new(move |event| {
            if event.api != api {
                return;
            }
            let text = if detail == Detail::RequestText && event.direction == Direction::Request {
                format!("{:?}", event.decoded)
            } else {
                String::new()
            };
            let frame = Frame {
                direction: event.direction,
                broker: event.broker.to_owned(),
                len: event.frame.len(),
                text,
            };
            sink.lock().unwrap().push(frame);
        }));
        traffic
    }

    /// The requests sent so far.
    pub fn requests(&self) -> Vec<Frame> {
        self.of(Direction::Request)
    }

    /// The responses received so far.
    pub fn responses(&self) -> Vec<Frame> {
        self.of(Direction::Response)
    }

    /// The broker each request went to, in order.
    pub fn request_brokers(&self) -> Vec<String> {
        self.requests().into_iter().map(|f| f.broker).collect()
    }

    /// How many requests went to `broker` so far.
    pub fn requests_to(&self, broker: &str) -> usize {
        let frames = self.0.lock().unwrap();
        frames.iter().filter(|f| f.direction == Direction::Request && f.broker == broker).count()
    }

    fn of(&self, direction: Direction) -> Vec<Frame> {
        self.0.lock().unwrap().iter().filter(|f| f.direction == direction).cloned().collect()
    }
}

/// The integers after each `field: ` (or `field: Some(`) in a `Debug` rendering, in order. A
/// field whose name ends another's (`max_bytes`, `partition_max_bytes`) matches both.
pub fn numbers_after(text: &str, field: &str) -> Vec<i64> {
    text.split(&format!("{field}: "))
        .skip(1)
        .filter_map(|rest| {
            let rest = rest.strip_prefix("Some(").unwrap_or(rest);
            rest.split(|c: char| c != '-' && !c.is_ascii_digit()).next()?.parse().ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::numbers_after;

    #[test]
    fn numbers_after_reads_plain_optional_and_negative_values_in_order() {
        let text =
            "Fetch { max_bytes: 40960, session_epoch: Some(-1), topics: [P { partition_max_bytes: 7 }] }";
        assert_eq!(numbers_after(text, "max_bytes"), vec![40960, 7]);
        assert_eq!(numbers_after(text, "partition_max_bytes"), vec![7]);
        assert_eq!(numbers_after(text, "session_epoch"), vec![-1]);
        assert_eq!(numbers_after(text, "missing"), Vec::<i64>::new());
    }
}
