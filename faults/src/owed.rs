//! The responses one proxied connection owes its client, in the order the requests came: a
//! broker's (with what a rule decided for it) or one the proxy made (`action = error`). Kafka
//! answers a connection's requests in order and clients rely on it (the Java client checks each
//! response's correlation id against its oldest request), so a made answer waits behind the
//! broker responses owed before it.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;

/// What happens to a broker's response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Passed on as it came.
    Pass,
    /// Never passed on.
    Drop,
    /// Passed on this late (the responses behind it wait).
    Delay(Duration),
    /// Passed on at no more than this many bytes a second.
    Pace(u64),
    /// A response of this API and request version, passed on with the fields the request's
    /// rule names rewritten.
    Rewrite {
        /// The API of the request it answers.
        api: kafka_wire::protocol::ApiKey,
        /// The version of the request it answers.
        version: i16,
    },
    /// A Fetch response of this request version, passed on with a batch corrupted.
    Corrupt {
        /// The version of the Fetch request it answers.
        version: i16,
    },
}

#[derive(Debug)]
enum Owe {
    Broker { correlation_id: i32, fate: Fate },
    Made(Bytes),
}

/// A connection's owed responses.
#[derive(Debug, Default)]
pub struct Owed {
    queue: VecDeque<Owe>,
}

impl Owed {
    /// A request was forwarded; the broker will answer it.
    pub fn forwarded(&mut self, correlation_id: i32, fate: Fate) {
        self.queue.push_back(Owe::Broker { correlation_id, fate });
    }

    /// The proxy answers a request itself with `frame` (size prefix included).
    pub fn made(&mut self, frame: Bytes) {
        self.queue.push_back(Owe::Made(frame));
    }

    /// The broker answered `correlation_id`: what to do with it (`Pass` for one not owed).
    pub fn answered(&mut self, correlation_id: i32) -> Fate {
        let at = self
            .queue
            .iter()
            .position(|o| matches!(o, Owe::Broker { correlation_id: c, .. } if *c == correlation_id));
        match at.and_then(|i| self.queue.remove(i)) {
            Some(Owe::Broker { fate, .. }) => fate,
            _ => Fate::Pass,
        }
    }

    /// The made answers due now: those with no broker response owed before them.
    pub fn due(&mut self) -> Vec<Bytes> {
        let mut out = Vec::new();
        while let Some(Owe::Made(_)) = self.queue.front() {
            if let Some(Owe::Made(frame)) = self.queue.pop_front() {
                out.push(frame);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_made_answer_waits_for_the_broker_responses_owed_before_it() {
        let mut owed = Owed::default();
        owed.forwarded(1, Fate::Pass);
        owed.made(Bytes::from_static(b"two"));
        owed.forwarded(3, Fate::Drop);
        owed.made(Bytes::from_static(b"four"));
        assert!(owed.due().is_empty(), "1 is still owed");
        assert_eq!(owed.answered(1), Fate::Pass);
        assert_eq!(owed.due(), [Bytes::from_static(b"two")]);
        assert_eq!(owed.answered(3), Fate::Drop);
        assert_eq!(owed.due(), [Bytes::from_static(b"four")]);
        assert_eq!(owed.answered(9), Fate::Pass, "a response nobody owed passes");
        owed.made(Bytes::from_static(b"five"));
        assert_eq!(owed.due(), [Bytes::from_static(b"five")], "nothing owed before it: due at once");
    }
}
