//! Times on the command line: milliseconds since the epoch or RFC 3339, checked for
//! plausibility (a value that looks like seconds is refused with a hint).

use nom::branch::alt;
use nom::bytes::complete::take_while_m_n;
use nom::character::complete::{char, digit1, one_of};
use nom::combinator::{all_consuming, opt, value};
use nom::sequence::{preceded, separated_pair};
use nom::{IResult, Parser};
use offset_engine::policy::check_timestamp_ms;

/// How far ahead of this machine's clock a time may be before it is refused as "in the future"
/// (room for clock skew between this machine and the brokers).
const FUTURE_TOLERANCE_MS: i64 = 60_000;

/// Parses `1732870000000` or `2024-11-29T10:00:00Z` / `2024-11-29T10:00:00.250+01:00` into
/// milliseconds since the Unix epoch. A time in the future is refused: no record can have it,
/// and it is almost always a typo (a wrong year, seconds where milliseconds were meant).
pub fn parse_time(text: &str) -> Result<i64, String> {
    let ms = parse_any_time(text)?;
    let now = now_ms();
    if ms > now.saturating_add(FUTURE_TOLERANCE_MS) {
        return Err(format!("`{}` is in the future (now is {now} ms since the epoch)", text.trim()));
    }
    Ok(ms)
}

fn parse_any_time(text: &str) -> Result<i64, String> {
    let text = text.trim();
    if all_consuming(digit1::<_, ()>).parse(text).is_ok() {
        let ms: i64 =
            text.parse().map_err(|_| format!("`{text}` is too large for a time in milliseconds"))?;
        return check_timestamp_ms(ms).map_err(|e| format!("`{text}`: {e}"));
    }
    parse_rfc3339(text).ok_or_else(|| {
        format!(
            "`{text}` is not a time: give milliseconds since the epoch or RFC 3339 like 2024-11-29T10:00:00Z"
        )
    })
}

/// Exactly `n` ASCII digits as a number (at most 4 here, so it cannot overflow).
fn fixed_digits<'a>(n: usize) -> impl Parser<&'a str, Output = i64, Error = ()> {
    take_while_m_n(n, n, |c: char| c.is_ascii_digit())
        .map(|d: &str| d.bytes().fold(0, |acc, b| acc * 10 + i64::from(b - b'0')))
}

/// `.ddd…`: at least one digit; the first three are the milliseconds, the rest are dropped.
fn fraction_millis(input: &str) -> IResult<&str, i64, ()> {
    preceded(char('.'), digit1)
        .map(|d: &str| {
            d.bytes().chain(std::iter::repeat(b'0')).take(3).fold(0, |acc, b| acc * 10 + i64::from(b - b'0'))
        })
        .parse(input)
}

/// `Z`, `z` or `±hh:mm`, in minutes east of UTC.
fn utc_offset_minutes(input: &str) -> IResult<&str, i64, ()> {
    alt((
        value(0, one_of("Zz")),
        (alt((value(1, char('+')), value(-1, char('-')))), fixed_digits(2), char(':'), fixed_digits(2))
            .map(|(sign, h, _, m)| sign * (h * 60 + m)),
    ))
    .parse(input)
}

/// The grammar of RFC 3339's `date-time` (with `t` or a space allowed for `T`, as the RFC's
/// note permits), before the calendar is checked.
fn rfc3339_fields(input: &str) -> IResult<&str, [i64; 8], ()> {
    all_consuming((
        separated_pair(
            fixed_digits(4),
            char('-'),
            separated_pair(fixed_digits(2), char('-'), fixed_digits(2)),
        ),
        one_of("Tt "),
        separated_pair(
            fixed_digits(2),
            char(':'),
            separated_pair(fixed_digits(2), char(':'), fixed_digits(2)),
        ),
        opt(fraction_millis),
        utc_offset_minutes,
    ))
    .map(|((year, (month, day)), _, (hour, (minute, second)), millis, offset)| {
        [year, month, day, hour, minute, second, millis.unwrap_or(0), offset]
    })
    .parse(input)
}

fn parse_rfc3339(s: &str) -> Option<i64> {
    let (_, [year, month, day, hour, minute, second, millis, offset_minutes]) = rfc3339_fields(s).ok()?;
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds * 1000 + millis)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A proleptic Gregorian date of days since 1970-01-01 (the inverse of [`days_from_civil`]).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (if month <= 2 { yoe + era * 400 + 1 } else { yoe + era * 400 }, month, day)
}

/// `2026-12-01T15:50:00.123Z` for milliseconds since the epoch (what [`parse_time`] reads).
pub fn format_rfc3339_ms(ms: i64) -> String {
    let in_day = ms.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(ms.div_euclid(86_400_000));
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    )
}

/// Nanoseconds since the epoch as RFC 3339 in UTC with microseconds:
/// `2026-12-01T15:20:01.123456Z` (what `kwire proxy` and `kwire decode --pcap` print).
pub fn format_rfc3339_micros(ns: i64) -> String {
    let micros = ns.div_euclid(1000);
    let seconds = micros.div_euclid(1_000_000);
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    let of_day = seconds.rem_euclid(86_400);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60,
        micros.rem_euclid(1_000_000)
    )
}

pub use kafka_vocab::{now_ms, now_ns};

#[cfg(test)]
mod tests {
    use super::*;
    use offset_engine::policy::MIN_PLAUSIBLE_TIMESTAMP_MS as MIN_PLAUSIBLE;

    proptest::proptest! {
        #[test]
        fn formatted_past_times_parse_back(ms in 0i64..1_700_000_000_000) {
            proptest::prop_assert_eq!(parse_time(&format_rfc3339_ms(ms)), Ok(ms));
        }
    }

    #[test]
    fn printed_capture_times_parse_back_to_the_same_millisecond() {
        for ms in [0_i64, 951_782_400_123, 1_764_602_401_999, 4_102_444_800_000, -86_400_001] {
            let text = format_rfc3339_micros(ms * 1_000_000 + 456_789);
            assert_eq!(parse_rfc3339(&text), Some(ms), "{text}");
        }
        assert_eq!(format_rfc3339_micros(1_000_001_000), "1970-01-01T00:00:01.000001Z");
    }

    #[test]
    fn rfc3339_times_become_epoch_milliseconds() {
        assert_eq!(parse_rfc3339("2024-11-29T10:00:00Z"), Some(1_732_874_400_000));
        assert_eq!(parse_rfc3339("2024-11-29T11:00:00.25+01:00"), Some(1_732_874_400_250));
        assert_eq!(parse_rfc3339("2024-02-29T00:00:00Z"), Some(1_709_164_800_000));
        assert_eq!(parse_rfc3339("2023-02-29T00:00:00Z"), None);
        assert_eq!(parse_rfc3339("2024-11-29"), None);
    }

    #[test]
    fn a_time_in_the_future_is_refused() {
        assert!(parse_time("2999-01-01T00:00:00Z").unwrap_err().contains("in the future"));
        assert!(parse_time(&(now_ms() + 3_600_000).to_string()).unwrap_err().contains("in the future"));
        assert!(parse_time(&now_ms().to_string()).is_ok());
    }

    #[test]
    fn a_time_in_seconds_is_refused_with_a_hint() {
        let err = parse_time("1732874400").unwrap_err();
        assert!(err.contains("1732874400"), "{err}");
        assert_eq!(parse_time("1732874400000"), Ok(1_732_874_400_000));
        assert!(parse_time("yesterday").unwrap_err().contains("RFC 3339"));
    }

    #[test]
    fn rfc3339_offsets_must_be_two_digits_each() {
        assert_eq!(parse_rfc3339("2024-11-29T11:00:00+01:00"), Some(1_732_874_400_000));
        assert_eq!(parse_rfc3339("2024-11-29T11:00:00++1:00"), None);
        assert_eq!(parse_rfc3339("2024-11-29T11:00:00+1:00"), None);
        assert_eq!(parse_rfc3339("2024-11-29T11:00:00+01:00 "), None);
        assert_eq!(parse_rfc3339("2024-11-29T11:00:00."), None);
        assert_eq!(parse_rfc3339("2024-11-29T11:00:00.123456789Z"), Some(1_732_878_000_123));
    }

    proptest::proptest! {
        #[test]
        fn time_parsing_never_panics_on_any_text(text in ".{0,40}") {
            let _ = parse_time(&text);
            let _ = parse_rfc3339(&text);
        }

        #[test]
        fn time_parsing_never_panics_on_near_rfc3339_text(text in "[0-9:.+TZz -]{0,32}") {
            let _ = parse_time(&text);
        }

        #[test]
        fn past_milliseconds_round_trip_through_their_text(ms in MIN_PLAUSIBLE..now_ms()) {
            proptest::prop_assert_eq!(parse_time(&ms.to_string()), Ok(ms));
            proptest::prop_assert_eq!(parse_time(&format!(" {ms}\n")), Ok(ms));
        }

        /// The same instant written with a UTC offset and a fraction is the UTC time moved by
        /// the offset plus the fraction's first three digits.
        #[test]
        fn an_offset_and_a_fraction_move_the_instant_by_what_they_say(
            year in 1971i64..2030, month in 1i64..=12, day in 1i64..=28,
            hour in 0i64..24, minute in 0i64..60, second in 0i64..60,
            fraction in "[0-9]{1,9}", east in proptest::bool::ANY, oh in 0i64..24, om in 0i64..60,
        ) {
            let base = format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}");
            let utc = parse_rfc3339(&format!("{base}Z")).expect("a valid UTC time");
            let sign = if east { '+' } else { '-' };
            let shifted = parse_rfc3339(&format!("{base}.{fraction}{sign}{oh:02}:{om:02}")).expect("valid");
            let millis: i64 = format!("{fraction:0<3}")[..3].parse().unwrap();
            let offset_ms = (oh * 60 + om) * 60_000 * if east { 1 } else { -1 };
            proptest::prop_assert_eq!(shifted, utc - offset_ms + millis);
        }
    }
}
