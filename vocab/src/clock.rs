//! The wall clock in Kafka's unit.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, as Kafka stamps records and commits. A clock set before
/// 1970 reads 0; one beyond `i64::MAX` milliseconds saturates. Never panics.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Nanoseconds since the Unix epoch (capture and trace timestamps), with [`now_ms`]'s rules: 0
/// before 1970, saturating at `i64::MAX` (the year 2262).
pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_time_after_this_code_was_written() {
        // 2026-01-01T00:00:00Z
        assert!(now_ms() > 1_767_225_600_000);
        assert!(now_ns() / 1_000_000 >= 1_767_225_600_000);
    }
}
