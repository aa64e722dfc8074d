//! Deadlines from caller-given timeouts. `Instant + Duration` panics when the sum does not fit
//! the platform's clock (`--timeout 18446744073709551615` did); every deadline in the client is
//! made here instead, so a timeout of any size is a deadline, never a panic.

use std::time::{Duration, Instant};

/// How far ahead a deadline too large for the clock is put: about 30 years, which no call
/// outlives, and which every platform's `Instant` can represent.
pub const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 86_400);

/// `now + timeout`, or `now` + [`FAR_FUTURE`] when `timeout` is larger than that (or than the
/// clock can represent).
pub fn deadline_after(timeout: Duration) -> Instant {
    deadline_from(Instant::now(), timeout)
}

/// `start + timeout`, saturating at `start` + [`FAR_FUTURE`].
pub fn deadline_from(start: Instant, timeout: Duration) -> Instant {
    start.checked_add(timeout.min(FAR_FUTURE)).unwrap_or(start)
}

/// Whether waiting `wait` from now still ends before `deadline`.
pub fn fits_before(wait: Duration, deadline: Instant) -> bool {
    Instant::now().checked_add(wait).is_some_and(|end| end < deadline)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absurd_timeout_is_a_far_deadline_not_a_panic() {
        for timeout in
            [Duration::MAX, Duration::from_secs(u64::MAX), Duration::from_secs(9_300_000_000_000_000_000)]
        {
            let deadline = deadline_after(timeout);
            assert!(deadline > Instant::now() + Duration::from_secs(365 * 86_400), "{timeout:?}");
        }
    }

    #[test]
    fn an_ordinary_timeout_is_added_exactly() {
        let start = Instant::now();
        assert_eq!(deadline_from(start, Duration::from_secs(30)), start + Duration::from_secs(30));
        assert!(fits_before(Duration::from_millis(1), start + Duration::from_secs(60)));
        assert!(!fits_before(Duration::MAX, start + Duration::from_secs(60)));
    }
}
