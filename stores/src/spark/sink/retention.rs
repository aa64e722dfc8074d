//! The file sink's `retention` option (Spark 3.3+, SPARK-27188): a time to live for the sink's
//! output files, applied when the sink's log is compacted.
//!
//! Spark's rule (`FileStreamSinkLog.shouldRetain`, the same in 3.5.7 and 4.1.1, read from
//! their bytecode): at a compaction, with `now` the wall clock in milliseconds taken once for
//! the whole compaction, an entry is kept when the retention is `Long.MaxValue` or when
//! `now - modificationTime <= retention` (a 64-bit subtraction that wraps); otherwise it is
//! left out of the `.compact` file. Every entry the compaction writes is tested: the previous
//! compaction's, the batches' since, and the compaction batch's own. An entry exactly at the
//! retention is kept. Readers (`spark.read` of the sink folder) do not apply it.
//!
//! The option's value is parsed by Spark's `Utils.timeStringAsMs` ([`Retention::from_str`]).

use std::fmt;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

/// A file sink's `retention`, in milliseconds as Spark holds it (negative values included:
/// Spark accepts them, and they drop every entry not modified in the future).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    millis: i64,
}

/// Why a `retention` value is not one Spark accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRetention {
    given: String,
    reason: &'static str,
}

impl fmt::Display for BadRetention {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}`: {}; Spark's retention is an integer with an optional unit: us, ms (the default), s, m or min, h, d (e.g. 7d, 12h, 90s)",
            self.given, self.reason
        )
    }
}

impl std::error::Error for BadRetention {}

impl Retention {
    /// A retention of `millis` milliseconds.
    pub const fn from_millis(millis: i64) -> Self {
        Self { millis }
    }

    /// The retention in milliseconds.
    pub const fn millis(self) -> i64 {
        self.millis
    }

    /// Whether Spark keeps an entry whose `modificationTime` is `modified` (milliseconds since
    /// the epoch) at a compaction taking place at `now` (milliseconds since the epoch).
    pub fn retains(self, modified: i64, now: i64) -> bool {
        self.millis == i64::MAX || now.wrapping_sub(modified) <= self.millis
    }
}

/// `time` as Java's `System.currentTimeMillis()` gives it: milliseconds since the epoch,
/// negative before it, saturated at the ends of `i64`.
pub fn epoch_millis(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_millis()).map_or(i64::MIN, |m| -m),
    }
}

/// Spark's `Utils.timeStringAsMs`: the value lowercased and trimmed of ASCII control characters
/// and spaces, then `-?[0-9]+` and an optional unit among `us`, `ms`, `s`, `m`, `min`, `h`,
/// `d` (none: milliseconds); the number must fit a signed 64-bit integer, and the conversion
/// to milliseconds truncates microseconds toward zero and saturates at the ends of `i64`.
impl FromStr for Retention {
    type Err = BadRetention;

    fn from_str(given: &str) -> Result<Self, BadRetention> {
        let bad = |reason| BadRetention { given: given.to_owned(), reason };
        let lower = given.trim_matches(|c: char| c <= ' ').to_ascii_lowercase();
        let body = lower.strip_prefix('-').unwrap_or(&lower);
        let digits = body.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad("no number"));
        }
        let (number, unit) = lower.split_at(lower.len() - body.len() + digits);
        if !unit.bytes().all(|b| b.is_ascii_lowercase()) {
            return Err(bad("not a number followed by a unit"));
        }
        let value: i64 = number.parse().map_err(|_| bad("the number does not fit 64 bits"))?;
        let millis = match unit {
            "us" => value / 1000,
            "" | "ms" => value,
            "s" => value.saturating_mul(1000),
            "m" | "min" => value.saturating_mul(60_000),
            "h" => value.saturating_mul(3_600_000),
            "d" => value.saturating_mul(86_400_000),
            _ => return Err(bad("unknown unit")),
        };
        Ok(Self { millis })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> i64 {
        text.parse::<Retention>().unwrap_or_else(|e| panic!("{e}")).millis()
    }

    /// The values Spark 3.5.7's and 4.1.1's `Utils.timeStringAsMs` gave for the same strings.
    #[test]
    fn retention_values_parse_as_sparks_time_strings() {
        assert_eq!(ms("10"), 10);
        assert_eq!(ms("10ms"), 10);
        assert_eq!(ms("2s"), 2000);
        assert_eq!(ms(" 3M "), 180_000);
        assert_eq!(ms("1min"), 60_000);
        assert_eq!(ms("1m"), 60_000);
        assert_eq!(ms("1h"), 3_600_000);
        assert_eq!(ms("1d"), 86_400_000);
        assert_eq!(ms("1S"), 1000);
        assert_eq!(ms("1500us"), 1);
        assert_eq!(ms("-1500us"), -1);
        assert_eq!(ms("-5s"), -5000);
        assert_eq!(ms("0"), 0);
        assert_eq!(ms("9223372036854775807d"), i64::MAX);
        assert_eq!(ms("-9223372036854775808"), i64::MIN);
        assert_eq!(ms("-9223372036854775808d"), i64::MIN);
        for refused in
            ["1.5s", "", "10 s", "7x", "9223372036854775808", "+5s", "10sec", "-", "s", "5s5", "５s"]
        {
            let e = refused.parse::<Retention>().unwrap_err().to_string();
            assert!(e.contains(&format!("`{refused}`")) && e.contains("7d"), "{refused}: {e}");
        }
    }

    #[test]
    fn an_entry_exactly_at_the_retention_is_kept_and_one_millisecond_older_is_dropped() {
        let r = Retention::from_millis(1000);
        assert!(r.retains(9_000, 10_000));
        assert!(!r.retains(8_999, 10_000));
        // Modified after `now` (a clock behind the writer's): kept.
        assert!(r.retains(20_000, 10_000));
    }

    #[test]
    fn the_largest_retention_keeps_everything_and_the_age_wraps_as_in_java() {
        assert!(Retention::from_millis(i64::MAX).retains(i64::MIN, i64::MAX));
        // now - modified overflows to a negative age: kept, as Spark's `lsub` keeps it.
        assert!(Retention::from_millis(0).retains(i64::MIN, 1));
        // A negative retention drops what was modified at or before `now`.
        assert!(!Retention::from_millis(-1).retains(10, 10));
        assert!(Retention::from_millis(-1).retains(11, 10));
    }

    #[test]
    fn the_clock_is_read_as_java_reads_it() {
        assert_eq!(epoch_millis(UNIX_EPOCH), 0);
        assert_eq!(
            epoch_millis(UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_123)),
            1_700_000_000_123
        );
        assert_eq!(epoch_millis(UNIX_EPOCH - std::time::Duration::from_millis(5)), -5);
    }
}
