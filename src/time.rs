//! Times on the command line: milliseconds since the epoch or RFC 3339, checked for
//! plausibility (a value that looks like seconds is refused with a hint).

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
    if text.bytes().all(|b| b.is_ascii_digit()) && !text.is_empty() {
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

fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        part.bytes().all(|c| c.is_ascii_digit()).then(|| part.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &s[19..];
    let mut millis = 0i64;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let padded = format!("{:0<3}", &frac[..digits.min(3)]);
        millis = padded.parse().ok()?;
        rest = &frac[digits..];
    }
    let offset_minutes = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let tz = rest.get(1..)?;
            if tz.len() != 5 || tz.as_bytes()[2] != b':' {
                return None;
            }
            let h: i64 = tz.get(0..2)?.parse().ok()?;
            let m: i64 = tz.get(3..5)?.parse().ok()?;
            sign * (h * 60 + m)
        }
    };
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

/// Milliseconds since the epoch, now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
