//! The two clocks both membership machines keep, read only from the `now` the driver passes:
//! the time since the application last asked for records (`max.poll.interval.ms`, KIP-62), and
//! the growing wait between failed attempts (`retry.backoff.ms` doubling up to
//! `retry.backoff.max.ms`, as Java's `ExponentialBackoff` without its jitter: a sans-IO machine
//! has no randomness, and one member's retries do not synchronise with anyone's).

use std::time::{Duration, Instant};

use crate::deadline::deadline_from;

/// When the application last asked for records, and how long it may go without.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PollTimer {
    last: Instant,
    max: Duration,
}

impl PollTimer {
    /// A timer that starts at `now` (a member is created when the application subscribes).
    pub(crate) fn new(now: Instant, max: Duration) -> Self {
        PollTimer { last: now, max }
    }

    /// The application asked for records at `now` (a `now` before the last one is ignored).
    pub(crate) fn polled(&mut self, now: Instant) {
        self.last = self.last.max(now);
    }

    /// When the interval runs out.
    pub(crate) fn deadline(&self) -> Instant {
        deadline_from(self.last, self.max)
    }

    /// How long since the last poll.
    pub(crate) fn elapsed(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.last)
    }

    /// Whether more than the interval has passed since the last poll (Java's `pollTimer`
    /// expires when `now` reaches the deadline).
    pub(crate) fn expired(&self, now: Instant) -> bool {
        now >= self.deadline()
    }
}

/// The wait before the next attempt after `failures` failed ones in a row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Backoff {
    base: Duration,
    max: Duration,
    failures: u32,
}

impl Backoff {
    pub(crate) fn new(base: Duration, max: Duration) -> Self {
        Backoff { base, max: max.max(base), failures: 0 }
    }

    /// Counts a failure and gives the wait before the next attempt: `base`, doubling per
    /// failure in a row, at most `max`.
    pub(crate) fn failed(&mut self) -> Duration {
        let doublings = self.failures.min(20);
        self.failures = self.failures.saturating_add(1);
        self.base.saturating_mul(1 << doublings).min(self.max)
    }

    /// An attempt succeeded: the next failure waits `base` again.
    pub(crate) fn reset(&mut self) {
        self.failures = 0;
    }
}

/// `now + wait`, saturating (a configured timeout of any size is a deadline, never a panic).
pub(crate) fn after(now: Instant, wait: Duration) -> Instant {
    deadline_from(now, wait)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_poll_timer_expires_at_the_interval_and_a_poll_restarts_it() {
        let t0 = Instant::now();
        let mut timer = PollTimer::new(t0, Duration::from_secs(10));
        assert!(!timer.expired(t0 + Duration::from_millis(9_999)));
        assert!(timer.expired(t0 + Duration::from_secs(10)));
        assert_eq!(timer.elapsed(t0 + Duration::from_secs(12)), Duration::from_secs(12));
        timer.polled(t0 + Duration::from_secs(5));
        assert!(!timer.expired(t0 + Duration::from_secs(12)));
        // A clock reading from before the last poll neither moves it back nor panics.
        timer.polled(t0);
        assert_eq!(timer.deadline(), t0 + Duration::from_secs(15));
        assert_eq!(timer.elapsed(t0), Duration::ZERO);
    }

    #[test]
    fn backoff_doubles_to_its_cap_and_starts_over_after_a_success() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
        let waits: Vec<u128> = (0..6).map(|_| b.failed().as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 800, 1000, 1000]);
        b.reset();
        assert_eq!(b.failed(), Duration::from_millis(100));
        // Thousands of failures in a row neither overflow nor pass the cap.
        for _ in 0..10_000 {
            assert!(b.failed() <= Duration::from_secs(1));
        }
    }

    #[test]
    fn a_huge_timeout_is_a_far_deadline_not_a_panic() {
        let t0 = Instant::now();
        assert!(after(t0, Duration::MAX) > t0 + Duration::from_secs(365 * 86_400));
        let timer = PollTimer::new(t0, Duration::MAX);
        assert!(!timer.expired(t0 + Duration::from_secs(86_400)));
    }
}
