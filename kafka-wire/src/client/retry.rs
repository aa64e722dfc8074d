//! Backoff and deadlines: every retrying call has one overall deadline, and waits between
//! attempts grow exponentially with jitter. The decision *whether* to retry lives with the
//! error ([`ClientError::is_retriable`](super::ClientError::is_retriable) and
//! [`ErrorCode::recovery`](crate::protocol::ErrorCode::recovery)).

use std::time::{Duration, Instant};

use super::deadline::fits_before;

/// Exponential backoff with jitter, bounded by a deadline.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    max: Duration,
    deadline: Instant,
    /// xorshift state for jitter; seeded from the deadline so no global RNG is needed.
    seed: u64,
}

impl Backoff {
    /// Waits start at about `initial`, double each time up to `max`, and never pass `deadline`.
    pub fn new(initial: Duration, max: Duration, deadline: Instant) -> Self {
        let seed = u64::from(deadline.elapsed().subsec_nanos()) | 1;
        Self { next: initial, max, deadline, seed: seed ^ 0x9e37_79b9_7f4a_7c15 }
    }

    /// The wait before the next attempt (between half and all of the current step), or `None`
    /// when that wait would pass the deadline.
    pub fn next_wait(&mut self) -> Option<Duration> {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        let step = self.next;
        self.next = (self.next * 2).min(self.max);
        let half = step / 2;
        let jitter =
            Duration::from_nanos(self.seed % (u64::try_from(half.as_nanos()).unwrap_or(u64::MAX).max(1)));
        let wait = half + jitter;
        fits_before(wait, self.deadline).then_some(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_and_stay_within_the_cap() {
        let mut b = Backoff::new(
            Duration::from_millis(10),
            Duration::from_millis(40),
            Instant::now() + Duration::from_secs(60),
        );
        let waits: Vec<_> = (0..6).map(|_| b.next_wait().unwrap()).collect();
        assert!(waits[0] <= Duration::from_millis(10) && waits[0] >= Duration::from_millis(5));
        assert!(waits.iter().all(|w| *w <= Duration::from_millis(40)));
        assert!(waits[5] >= Duration::from_millis(20));
    }

    #[test]
    fn stops_at_the_deadline() {
        let mut b = Backoff::new(
            Duration::from_secs(10),
            Duration::from_secs(10),
            Instant::now() + Duration::from_millis(1),
        );
        assert_eq!(b.next_wait(), None);
    }
}
