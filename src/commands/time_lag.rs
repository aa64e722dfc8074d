//! The IO half of lag in time for `group describe`: one bounded Fetch per leader for the
//! timestamp of each partition's first unconsumed record, and a second sample for rates. The
//! arithmetic is the engine's (`offset_engine::time_lag`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_client::{Client, FetchOptions, FetchRange, TopicPartition};
use offset_engine::{
    catch_up, estimate_time_lag, time_lag_of_record, CatchUp, Isolation, Lag, LogState, Sample, TimeLag,
    TimeLagUnknown,
};

use super::group::PartitionRow;
use crate::cli::TimeLagArg;

/// Bytes asked per partition: the broker still sends the first batch whole, so this only
/// keeps it from sending more than that batch.
const PARTITION_MAX_BYTES: i32 = 1024;

/// Where the first unconsumed record of `row` is: `max(committed, log_start)`, when there is
/// something left to consume (records deleted before they were read are lost, not waiting).
fn first_unconsumed(row: &PartitionRow) -> Option<i64> {
    let committed = row.committed()?;
    let LogState::Found(view) = &row.log else { return None };
    matches!(row.lag, Lag::Committed { consumable, .. } if consumable > 0)
        .then_some(committed.max(view.log_start.0))
}

/// The timestamp of each row's first unconsumed record: one Fetch per leader for
/// `[first, first + 1)` of every partition with records left, in one call. A partition whose
/// record did not come back (compacted away, a transaction marker there, an error) is absent.
pub async fn first_unconsumed_timestamps(
    client: &Arc<Client>,
    rows: &[PartitionRow],
    isolation: Isolation,
    timeout: Duration,
) -> BTreeMap<TopicPartition, i64> {
    let ranges: Vec<FetchRange> = rows
        .iter()
        .filter_map(|r| first_unconsumed(r).map(|from| FetchRange::new(r.tp.clone(), from, from + 1)))
        .collect();
    if ranges.is_empty() {
        return BTreeMap::new();
    }
    let options = FetchOptions {
        max_wait: Duration::from_millis(100),
        partition_max_bytes: PARTITION_MAX_BYTES,
        isolation: match isolation {
            Isolation::ReadUncommitted => kafka_client::Isolation::ReadUncommitted,
            Isolation::ReadCommitted => kafka_client::Isolation::ReadCommitted,
        },
        timeout,
        ..FetchOptions::default()
    };
    client
        .fetch_range(&ranges, &options)
        .await
        .into_iter()
        .filter_map(|(tp, result)| {
            let record = result.ok()?.records.into_iter().next()?;
            Some((tp, record.timestamp.unwrap_or(-1)))
        })
        .collect()
}

/// One partition's sample for the engine.
pub fn sample_of(row: &PartitionRow, isolation: Isolation, at_ms: i64) -> Option<Sample> {
    let LogState::Found(view) = &row.log else { return None };
    Some(Sample { at_ms, end: view.end(isolation).0, committed: row.committed() })
}

/// A partition's lag in time and catch-up estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeNumbers {
    pub time_lag: TimeLag,
    /// `None` when only one sample was taken.
    pub catch_up: Option<CatchUp>,
}

/// The numbers for `row` (the newest sample) given how time lag is measured, the fetched
/// timestamps, and the earlier samples of its partition (empty when only one was taken).
pub fn time_numbers(
    mode: TimeLagArg,
    row: &PartitionRow,
    isolation: Isolation,
    now_ms: i64,
    timestamps: &BTreeMap<TopicPartition, i64>,
    earlier: &[Sample],
) -> TimeNumbers {
    let mut samples = earlier.to_vec();
    samples.extend(sample_of(row, isolation, now_ms));
    let time_lag = match mode {
        TimeLagArg::Off => TimeLag::Unknown(TimeLagUnknown::NotMeasured),
        TimeLagArg::Fetch => time_lag_of_record(
            now_ms,
            row.lag.consumable(),
            matches!(row.lag, Lag::NothingCommitted { .. }),
            timestamps.get(&row.tp).copied(),
        ),
        TimeLagArg::Estimate => match row.lag {
            Lag::Unknown => TimeLag::Unknown(TimeLagUnknown::NoLog),
            _ => estimate_time_lag(&samples, row.committed(), now_ms),
        },
    };
    TimeNumbers { time_lag, catch_up: (samples.len() >= 2).then(|| catch_up(&samples)) }
}

/// `10m00s`, `1.250s`, `0`: milliseconds for a person.
pub fn format_ms(ms: u64) -> String {
    match ms {
        0 => "0".to_owned(),
        ms if ms < 60_000 => format!("{}.{:03}s", ms / 1000, ms % 1000),
        ms if ms < 3_600_000 => format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60),
        ms if ms < 172_800_000 => format!("{}h{:02}m", ms / 3_600_000, (ms / 60_000) % 60),
        ms => format!("{}d{:02}h", ms / 86_400_000, (ms / 3_600_000) % 24),
    }
}

/// The TIME_LAG column: the duration, or `unknown (reason)`.
pub fn time_lag_text(t: TimeLag) -> String {
    match t {
        TimeLag::Unknown(TimeLagUnknown::NotMeasured) => "-".to_owned(),
        TimeLag::Unknown(why) => format!("unknown ({})", why.as_str().replace('_', " ")),
        known => format_ms(known.ms().unwrap_or_default()),
    }
}

/// The CATCH_UP column.
pub fn catch_up_text(c: Option<CatchUp>) -> String {
    match c {
        None | Some(CatchUp::Unknown) => "-".to_owned(),
        Some(CatchUp::NotCatchingUp) => "not catching up".to_owned(),
        Some(known) => format_ms(known.ms().unwrap_or_default()),
    }
}

/// `catch_up` in JSON: a state name where there is no number.
pub fn catch_up_state(c: Option<CatchUp>) -> Option<&'static str> {
    match c {
        None | Some(CatchUp::Unknown) => Some("unknown"),
        Some(CatchUp::NotCatchingUp) => Some("not_catching_up"),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_a_person_would_say_them() {
        assert_eq!(format_ms(0), "0");
        assert_eq!(format_ms(1250), "1.250s");
        assert_eq!(format_ms(600_000), "10m00s");
        assert_eq!(format_ms(3_720_000), "1h02m");
        assert_eq!(format_ms(3 * 86_400_000 + 3_600_000), "3d01h");
    }
}
