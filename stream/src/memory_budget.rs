//! A batch's records planned to fit in a number of bytes (issue 37's budget on the direct
//! stream's read path).
//!
//! A direct stream hands the application each batch whole — its records are the batch, as a
//! Spark RDD's are — so no budget can cut a batch short once it is planned: what bounds memory
//! is how many records the plan takes. [`MemoryBudget`] caps the records per batch at
//! `bytes ÷ record size`, the record size being the mean of the last batch read (what
//! [`record_bytes`] counts), or the configured guess before any. Like the processing budget's
//! rate, it is a plan from what was seen, not a hard cap: a batch whose records are larger
//! than the previous batch's mean takes more. The hard cap on what one compressed batch may
//! unpack to stays `DecodeOptions::max_decompressed_size`.

use kafka_client::FetchedRecord;
use offset_engine::Limits;

/// Caps each batch at `bytes ÷ record size` records (at least 1), the record size measured
/// from the last batch read, `initial_record_bytes` before the first. With
/// [`StreamConfig::prefetch`](crate::StreamConfig::prefetch) two batches are held at once:
/// the one handed out and the one read ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBudget {
    /// Bytes one batch's records may take, counted as [`record_bytes`] does; above 0.
    pub bytes: u64,
    /// Bytes per record assumed before a batch with records was read; above 0.
    pub initial_record_bytes: u64,
}

impl MemoryBudget {
    /// Refuses a budget of 0 bytes or a record size of 0 (no batch could be planned with it).
    pub fn validate(&self) -> Result<(), String> {
        if self.bytes == 0 {
            return Err("memory budget: 0 bytes holds no record".to_owned());
        }
        if self.initial_record_bytes == 0 {
            return Err("memory budget: the initial record size must be above 0 bytes".to_owned());
        }
        Ok(())
    }

    /// The most records a batch may hold when records take `record_bytes` each (the measured
    /// mean, or `None` before the first measurement): at least 1, so a stream whose records
    /// are each larger than the budget still moves, one record per batch.
    pub fn max_records(&self, record_bytes: Option<u64>) -> u64 {
        let each = record_bytes.unwrap_or(self.initial_record_bytes).max(1);
        (self.bytes / each).max(1)
    }
}

/// What a fetched record takes in memory: its struct, its key, its value and each header's
/// struct, key and value. Key and value bytes are counted whether they are slices of a
/// response (uncompressed batches) or of a decompressed buffer.
pub fn record_bytes(record: &FetchedRecord) -> u64 {
    let headers: usize = record
        .headers
        .iter()
        .map(|h| std::mem::size_of_val(h) + h.key.len() + h.value.as_deref().map_or(0, <[u8]>::len))
        .sum();
    let key = record.key.as_deref().map_or(0, <[u8]>::len);
    let value = record.value.as_deref().map_or(0, <[u8]>::len);
    let total = std::mem::size_of::<FetchedRecord>() + key + value + headers;
    u64::try_from(total).unwrap_or(u64::MAX)
}

/// The mean of [`record_bytes`] over `records`, rounded up; `None` for no records.
pub fn mean_record_bytes<'a>(records: impl IntoIterator<Item = &'a FetchedRecord>) -> Option<u64> {
    let (count, total) =
        records.into_iter().fold((0u64, 0u64), |(n, sum), r| (n + 1, sum.saturating_add(record_bytes(r))));
    (count > 0).then(|| total.div_ceil(count))
}

/// `limits` with the batch capped by `budget` at `record_bytes` per record (the tighter of
/// that cap and the configured `max_per_batch`); unchanged without a budget.
pub fn memory_limits(limits: Limits, budget: Option<MemoryBudget>, record_bytes: Option<u64>) -> Limits {
    let Some(budget) = budget else { return limits };
    let cap = budget.max_records(record_bytes);
    Limits { max_per_batch: Some(limits.max_per_batch.map_or(cap, |m| m.min(cap))), ..limits }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use kafka_wire::protocol::records::{Header, TimestampType};

    fn record(key: usize, value: Option<usize>, headers: &[(usize, usize)]) -> FetchedRecord {
        FetchedRecord {
            offset: 0,
            timestamp: Some(0),
            timestamp_type: TimestampType::CreateTime,
            key: (key > 0).then(|| Bytes::from(vec![b'k'; key])),
            value: value.map(|n| Bytes::from(vec![b'v'; n])),
            headers: headers
                .iter()
                .map(|&(k, v)| Header { key: "h".repeat(k), value: Some(Bytes::from(vec![0; v])) })
                .collect(),
            leader_epoch: None,
        }
    }

    #[test]
    fn a_record_counts_its_struct_key_value_and_headers() {
        let base = std::mem::size_of::<FetchedRecord>() as u64;
        let header = std::mem::size_of::<Header>() as u64;
        assert_eq!(record_bytes(&record(0, None, &[])), base);
        assert_eq!(record_bytes(&record(3, Some(1000), &[])), base + 1003);
        assert_eq!(record_bytes(&record(0, Some(10), &[(2, 5), (1, 0)])), base + 10 + 2 * header + 8);
    }

    #[test]
    fn the_mean_is_rounded_up_and_absent_for_no_records() {
        let base = std::mem::size_of::<FetchedRecord>() as u64;
        assert_eq!(mean_record_bytes(&[]), None);
        let records = [record(0, Some(100), &[]), record(0, Some(101), &[])];
        assert_eq!(mean_record_bytes(&records), Some(base + 101));
    }

    #[test]
    fn the_cap_follows_the_measured_size_and_never_falls_below_one_record() {
        let budget = MemoryBudget { bytes: 10_000, initial_record_bytes: 1_000 };
        assert_eq!(budget.max_records(None), 10, "the initial guess before a measurement");
        assert_eq!(budget.max_records(Some(100)), 100);
        assert_eq!(budget.max_records(Some(3_000)), 3);
        assert_eq!(budget.max_records(Some(50_000)), 1, "a record above the budget still moves");
        assert_eq!(budget.max_records(Some(0)), 10_000, "a zero size is taken as 1 byte");
    }

    #[test]
    fn the_tighter_of_the_budget_and_the_configured_batch_cap_wins() {
        let budget = Some(MemoryBudget { bytes: 10_000, initial_record_bytes: 1_000 });
        let open = Limits::default();
        assert_eq!(memory_limits(open, None, Some(10)), open, "no budget, nothing changed");
        assert_eq!(memory_limits(open, budget, Some(100)).max_per_batch, Some(100));
        let tight = Limits { max_per_batch: Some(7), max_per_partition: Some(3), ..Limits::default() };
        let capped = memory_limits(tight, budget, Some(100));
        assert_eq!((capped.max_per_batch, capped.max_per_partition), (Some(7), Some(3)));
        let loose = Limits { max_per_batch: Some(1_000), ..Limits::default() };
        assert_eq!(memory_limits(loose, budget, None).max_per_batch, Some(10));
    }

    #[test]
    fn a_budget_of_nothing_is_refused_by_name() {
        let zero = MemoryBudget { bytes: 0, initial_record_bytes: 1 }.validate().unwrap_err();
        assert!(zero.contains("0 bytes"), "{zero}");
        let no_size = MemoryBudget { bytes: 1, initial_record_bytes: 0 }.validate().unwrap_err();
        assert!(no_size.contains("initial record size"), "{no_size}");
        assert!(MemoryBudget { bytes: 1, initial_record_bytes: 1 }.validate().is_ok());
    }
}
