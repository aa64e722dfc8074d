//! One partition's part of a Fetch response taken into its range, sans-IO: the log bounds, the
//! records in `[position, until)` (`position` inclusive, `until` exclusive) out of the batches
//! of the `records` field, the position moved past every complete batch read. No socket, no
//! clock.
//!
//! Offsets missing inside a range (compacted away, or taken by transaction markers) are
//! skipped, not waited for; records at or past `until` are never taken, even when the broker
//! sends them. Control batches (transaction markers) are never taken, in either isolation.
//!
//! read_committed drops the records of aborted transactions the way the Java consumer does
//! ([`Aborted`]): the response lists each aborted transaction's producer id and first offset;
//! a transactional batch is dropped when its producer has an aborted transaction that started
//! at or before the batch's last offset and whose ABORT marker has not yet been passed.
//!
//! Decompressed bytes are bounded twice: per batch and per response by
//! [`DecodeOptions::max_decompressed_size`], across a response's partitions by its share of
//! [`FetchOptions::max_decompressed_bytes`](crate::FetchOptions::max_decompressed_bytes)
//! ([`Unpacked`]); a batch larger than that whole budget is streamed (`streamed.rs`).

use std::cmp::Reverse;
use std::collections::HashSet;

use bytes::Bytes;

use kafka_vocab::Isolation;
use kafka_wire::protocol::messages::fetch::AbortedTransaction;
use kafka_wire::protocol::messages::FetchPartitionResponse;
use kafka_wire::protocol::records::{
    legacy, BatchHeader, BatchView, Budget, ControlRecordKey, ControlRecordType, DecodeOptions, Entries,
    Entry, StreamedBatch,
};
use kafka_wire::protocol::{DecodeError, DecodeErrorKind};

use super::fetched::FetchedRecord;
use super::progress::Progress;
use super::streamed::{chunk_size, take_streamed, BatchIdentity, HeldBatch, Taken};

/// What one response may still decompress, across its partitions: its share of
/// [`FetchOptions::max_decompressed_bytes`](crate::FetchOptions::max_decompressed_bytes).
/// Spent, it stops the decoding at the next compressed batch — once the response has yielded a
/// batch, so that reading always moves on. A single batch larger than the whole budget
/// (`batch_limit`) is read as it decompresses, a budget's worth per round.
#[derive(Debug)]
pub(super) struct Unpacked {
    left: usize,
    yielded: bool,
    /// The most one batch may decompress to and still be unpacked whole.
    batch_limit: usize,
}

impl Unpacked {
    /// A response's share (`share` decompressed bytes) of a budget of `budget` bytes.
    pub(super) fn new(share: usize, budget: usize) -> Self {
        Self { left: share, yielded: false, batch_limit: budget }
    }

    /// No bound but [`DecodeOptions`]' (a caller that keeps every record anyway).
    pub(super) fn unbounded() -> Self {
        Self::new(usize::MAX, usize::MAX)
    }

    fn spent(&self) -> bool {
        self.yielded && self.left == 0
    }

    /// A batch was read that decompressed to `bytes` (0 when it was not compressed).
    fn charge(&mut self, bytes: usize) {
        self.left = self.left.saturating_sub(bytes);
        self.yielded = true;
    }
}

/// Adds one response's records in `[position, until)` to `p` and moves the position past
/// every complete batch read (data, aborted or control). Log bounds are taken from the
/// response.
///
/// Batches are read through [`BatchView`]: an aborted or control batch, or one wholly before
/// the position, costs its CRC check and nothing per record; records before the position are
/// skipped without being copied out; reading stops at `until`.
///
/// [`DecodeOptions::max_decompressed_size`] bounds what one response may decompress for the
/// partition: when the next batch would pass it after the position moved, reading stops at
/// that batch (the next fetch starts there with a fresh budget), so a highly compressible
/// topic is read in several rounds instead of failing. Only a single batch that alone
/// decompresses past the limit is an error.
///
/// `unpacked`, the response's share of
/// [`FetchOptions::max_decompressed_bytes`](crate::FetchOptions::max_decompressed_bytes), stops
/// the reading the same way across partitions: `Some(bytes)` says it stopped this one, after
/// `bytes` of its record data. A batch that alone decompresses past the whole of
/// `max_decompressed_bytes` is not unpacked at once but streamed (`super::streamed`), a
/// budget's worth of records per round.
pub(super) fn apply_response(
    p: &mut Progress,
    response: &FetchPartitionResponse,
    isolation: Isolation,
    decode: &DecodeOptions,
    unpacked: &mut Unpacked,
) -> Result<Option<usize>, Unreadable> {
    p.fetched.high_watermark = response.high_watermark;
    p.fetched.log_start = response.log_start_offset.filter(|o| *o >= 0);
    p.fetched.last_stable = response.last_stable_offset.filter(|o| *o >= 0);
    let Some(records) = &response.records else { return Ok(None) };
    let mut aborted = Aborted::new(response.aborted_transactions.as_deref().unwrap_or_default());
    let mut budget = Budget::new(decode);
    let mut entries = Entries::new(records);
    let start = p.position;
    while let Some(entry) = entries.next_entry().map_err(|e| Unreadable::at(p.position, e))? {
        if p.position >= p.until {
            break;
        }
        let after_progress = p.position > start;
        let budget_spent = |e: &DecodeError| after_progress && too_large(e);
        if unpacked.spent() {
            return Ok(Some(entry.at));
        }
        if entry.magic != 2 {
            let unpacked_before = budget.spent();
            match take_legacy(p, &entry, records, decode, &mut budget) {
                Ok(()) => {}
                Err(e) if budget_spent(&e) => break,
                Err(e) => return Err(Unreadable::at(p.position, e)),
            }
            unpacked.charge(budget.spent() - unpacked_before);
            continue;
        }
        let base_offset = entry_base_offset(&entry);
        let unreadable = |e| Unreadable::at(base_offset, e);
        let identity = BatchIdentity::of(entry.bytes);
        let resumed = HeldBatch::resume(p.streaming.take(), identity, p.position);
        let mut batch = match resumed {
            Some(batch) => batch,
            None => {
                let mut part = budget.part(unpacked.batch_limit);
                match BatchView::parse_entry(entry.bytes, entry.at, decode, &mut part) {
                    Ok(batch) => {
                        unpacked.charge(part.spent());
                        budget.absorb(&part);
                        take_whole(p, &batch, records, isolation, &mut aborted).map_err(unreadable)?;
                        continue;
                    }
                    // Larger than the whole decompressed budget: read as it decompresses, below.
                    Err(e) if too_large(&e) && unpacked.batch_limit < budget.left() => {}
                    Err(e) if budget_spent(&e) => break,
                    Err(e) => return Err(unreadable(e)),
                }
                let batch = StreamedBatch::parse_entry(
                    entry.bytes,
                    entry.at,
                    decode,
                    chunk_size(unpacked.batch_limit),
                )
                .map_err(unreadable)?;
                let control = || streamed_control_type(&entry, decode);
                let dropped = match isolation {
                    Isolation::ReadCommitted => aborted.drops(&batch.header, control),
                    Isolation::ReadUncommitted => false,
                };
                let next = batch.header.next_offset();
                if dropped || batch.header.attributes.is_control || next <= p.position {
                    p.position = p.position.max(next.min(p.until));
                    continue;
                }
                batch
            }
        };
        let limit = unpacked.batch_limit;
        let (taken, held) =
            take_streamed(&mut batch, &mut p.position, p.until, &mut p.fetched.records, limit)
                .map_err(unreadable)?;
        unpacked.charge(held);
        if taken == Taken::Part {
            // `identity` is there: an entry that parsed as a batch holds its CRC.
            if let Some(id) = identity {
                p.streaming = Some(HeldBatch::keep(id, p.position, batch));
            }
            return Ok(Some(entry.at));
        }
    }
    Ok(None)
}

/// A partition's record data that did not decode, and where.
#[derive(Debug)]
pub(super) struct Unreadable {
    /// The base offset of the batch that did not decode; the fetch position when the data
    /// cannot be split into batches, or for a legacy message set.
    pub(super) offset: i64,
    pub(super) source: DecodeError,
}

impl Unreadable {
    fn at(offset: i64, source: DecodeError) -> Self {
        Self { offset, source }
    }
}

fn too_large(e: &DecodeError) -> bool {
    matches!(e.kind, DecodeErrorKind::DecompressedTooLarge { .. })
}

/// An entry's first field: a batch's base offset (a legacy wrapper's last offset). [`Entries`]
/// yields only entries longer than their 12-byte log overhead.
fn entry_base_offset(entry: &Entry<'_>) -> i64 {
    entry.bytes.first_chunk::<8>().map_or(-1, |b| i64::from_be_bytes(*b))
}

/// Takes a batch unpacked whole: its records in `[position, until)` unless read_committed
/// drops it; the position moves past it either way.
fn take_whole(
    p: &mut Progress,
    batch: &BatchView<'_>,
    records: &Bytes,
    isolation: Isolation,
    aborted: &mut Aborted,
) -> Result<(), DecodeError> {
    // A batch's offsets are spoken for even when compaction removed its records.
    let next = batch.header.next_offset();
    let dropped = match isolation {
        Isolation::ReadCommitted => aborted.drops(&batch.header, || batch.control_type()),
        Isolation::ReadUncommitted => false,
    };
    if !dropped && !batch.header.attributes.is_control && next > p.position {
        take_v2(p, batch, records)?;
    }
    p.position = p.position.max(next.min(p.until));
    Ok(())
}

/// A streamed control batch's marker type, read from its first record's key.
fn streamed_control_type(entry: &Entry<'_>, decode: &DecodeOptions) -> Option<ControlRecordType> {
    let mut batch = StreamedBatch::parse_entry(entry.bytes, entry.at, decode, 4096).ok()?;
    let (first, _) = batch.next_record()?.ok()?;
    ControlRecordKey::parse(first.key?).ok().map(|k| k.kind)
}

/// Takes a legacy (magic 0/1) entry's messages in `[position, until)`.
fn take_legacy(
    p: &mut Progress,
    entry: &Entry<'_>,
    records: &Bytes,
    decode: &DecodeOptions,
    budget: &mut Budget,
) -> Result<(), DecodeError> {
    let mut messages = Vec::new();
    legacy::read_entry(&records.slice_ref(entry.bytes), entry.at, decode, budget, 0, &mut messages)?;
    for m in messages {
        if m.offset < p.position {
            continue;
        }
        if m.offset >= p.until {
            p.position = p.until;
            break;
        }
        p.position = m.offset.saturating_add(1);
        p.fetched.records.push(FetchedRecord {
            offset: m.offset,
            timestamp: m.timestamp.filter(|t| *t >= 0),
            timestamp_type: m.timestamp_type(),
            key: m.key,
            value: m.value,
            headers: Vec::new(),
            leader_epoch: None,
        });
    }
    Ok(())
}

/// Adds a data batch's records in `[position, until)`; `input` is the `records` field the
/// batch was read from (its keys and values become slices of it, or of the batch's
/// decompressed buffer).
fn take_v2(p: &mut Progress, batch: &BatchView<'_>, input: &Bytes) -> Result<(), DecodeError> {
    let h = &batch.header;
    let owner = batch.records_owner(input);
    for r in batch.records() {
        let r = r?;
        let offset = h.offset_of(&r);
        if offset < p.position {
            continue;
        }
        if offset >= p.until {
            break;
        }
        p.fetched.records.push(FetchedRecord::of_batch(h, r, &owner));
    }
    Ok(())
}

/// read_committed bookkeeping over one response, as the Java consumer keeps it: aborted
/// transactions not yet reached (by first offset), and producers inside an aborted
/// transaction whose ABORT marker is still ahead.
#[derive(Debug)]
struct Aborted {
    /// `(first_offset, producer_id)`, highest first offset first, so the next is `last()`.
    ahead: Vec<(i64, i64)>,
    open: HashSet<i64>,
}

impl Aborted {
    fn new(list: &[AbortedTransaction]) -> Self {
        let mut ahead: Vec<(i64, i64)> = list.iter().map(|t| (t.first_offset, t.producer_id)).collect();
        ahead.sort_unstable_by_key(|&(first, pid)| Reverse((first, pid)));
        Self { ahead, open: HashSet::new() }
    }

    /// Whether read_committed drops this data batch. Must see every batch in offset order,
    /// control batches included (an ABORT marker closes its producer's aborted transaction).
    fn drops(&mut self, h: &BatchHeader, control_type: impl FnOnce() -> Option<ControlRecordType>) -> bool {
        if h.producer_id < 0 {
            return false;
        }
        while let Some(&(first, pid)) = self.ahead.last() {
            if first > h.last_offset() {
                break;
            }
            self.open.insert(pid);
            self.ahead.pop();
        }
        if h.attributes.is_control {
            if control_type() == Some(ControlRecordType::Abort) {
                self.open.remove(&h.producer_id);
            }
            return true;
        }
        h.attributes.is_transactional && self.open.contains(&h.producer_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(feature = "lz4")]
    use crate::fetch::test_support::{answer, compressible, rounds_of, tp};
    use crate::fetch::test_support::{data, mixed_log, offsets, progress, read_into, response};
    #[cfg(feature = "lz4")]
    use crate::fetch::{answer::apply_answer, ranges::FetchOptions};
    use kafka_wire::protocol::records::{Header, TimestampType};

    #[test]
    fn read_committed_drops_an_aborted_transaction_and_every_marker() {
        let mut p = progress(0, 13);
        read_into(&mut p, &mixed_log(), Isolation::ReadCommitted).unwrap();
        assert_eq!(offsets(&p), vec![0, 1, 2, 6, 7, 9, 10, 11]);
        assert_eq!(p.position, 13);
        assert!(p.done(Isolation::ReadCommitted));
    }

    #[test]
    fn read_uncommitted_keeps_aborted_records_but_not_markers() {
        let mut p = progress(0, 13);
        read_into(&mut p, &mixed_log(), Isolation::ReadUncommitted).unwrap();
        assert_eq!(offsets(&p), vec![0, 1, 2, 3, 4, 6, 7, 9, 10, 11]);
    }

    #[test]
    fn records_outside_the_range_are_never_returned() {
        let mut p = progress(4, 7);
        read_into(&mut p, &mixed_log(), Isolation::ReadUncommitted).unwrap();
        assert_eq!(offsets(&p), vec![4, 6]);
        assert_eq!(p.position, 7);
        assert!(p.done(Isolation::ReadUncommitted));
    }

    #[test]
    fn an_abort_marker_before_the_range_still_closes_the_transaction() {
        // Reading from 10: producer 7's aborted transaction ended at 5; its new one counts.
        let mut p = progress(10, 13);
        read_into(&mut p, &mixed_log(), Isolation::ReadCommitted).unwrap();
        assert_eq!(offsets(&p), vec![10, 11]);
    }

    #[test]
    fn offsets_compacted_away_are_skipped_not_waited_for() {
        // Offsets 0 and 3 survive of a batch that spanned 0–5; the next batch starts at 8.
        let mut gappy = data(0, 2, -1, false);
        gappy.records[1].offset_delta = 3;
        gappy.last_offset_delta = 5;
        let mut p = progress(0, 10);
        let r = response(&[gappy, data(8, 2, -1, false)], &[], 10);
        read_into(&mut p, &r, Isolation::ReadUncommitted).unwrap();
        assert_eq!(offsets(&p), vec![0, 3, 8, 9]);
        assert_eq!(p.position, 10);
    }

    #[test]
    fn a_batch_cut_short_by_the_broker_is_read_next_round() {
        let full = response(&[data(0, 2, -1, false), data(2, 2, -1, false)], &[], 4);
        let mut cut = full.clone();
        let records = full.records.clone().unwrap();
        cut.records = Some(records.slice(..records.len() - 3));
        let mut p = progress(0, 4);
        read_into(&mut p, &cut, Isolation::ReadUncommitted).unwrap();
        assert_eq!(offsets(&p), vec![0, 1]);
        assert_eq!(p.position, 2);
        assert!(!p.done(Isolation::ReadUncommitted));
    }

    #[test]
    fn record_fields_and_timestamps_come_through() {
        let mut b = data(0, 2, -1, false);
        b.records[0].key = Some(Bytes::from_static(b"k"));
        b.records[0].headers = vec![Header { key: "h".to_owned(), value: None }];
        b.partition_leader_epoch = 4;
        let mut appended = data(2, 1, -1, false);
        appended.attributes.timestamp_type = TimestampType::LogAppendTime;
        appended.max_timestamp = 9_999;
        let mut p = progress(0, 3);
        let r = response(&[b, appended], &[], 3);
        read_into(&mut p, &r, Isolation::ReadUncommitted).unwrap();
        let recs = &p.fetched.records;
        assert_eq!(recs[0].key.as_deref(), Some(&b"k"[..]));
        assert_eq!(recs[0].headers.len(), 1);
        assert_eq!(recs[0].leader_epoch, Some(4));
        assert_eq!((recs[0].timestamp, recs[1].timestamp), (Some(1_000), Some(1_001)));
        assert_eq!(recs[2].timestamp, Some(9_999));
        assert_eq!(recs[2].timestamp_type, TimestampType::LogAppendTime);
        assert_eq!(recs[2].leader_epoch, None);
    }

    #[test]
    fn garbage_record_data_is_a_decode_error_not_a_panic() {
        let mut r = response(&[data(0, 2, -1, false)], &[], 2);
        let mut bytes = r.records.clone().unwrap().to_vec();
        bytes[30] ^= 0xff;
        r.records = Some(Bytes::from(bytes));
        let mut p = progress(0, 2);
        assert!(read_into(&mut p, &r, Isolation::ReadUncommitted).is_err());
        assert!(p.fetched.records.is_empty());
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn a_response_that_decompresses_past_the_limit_is_read_up_to_the_batch_that_passes_it() {
        // Three batches of ≈ 30 KB decompressed each, 70 KB allowed per response: the first two
        // are read, the third waits for the next round (its own fresh budget), nothing fails.
        let r = response(&[compressible(0, 3), compressible(3, 3), compressible(6, 3)], &[], 9);
        let opts = DecodeOptions { max_decompressed_size: 70_000, ..DecodeOptions::default() };
        let mut p = progress(0, 9);
        apply_response(&mut p, &r, Isolation::ReadUncommitted, &opts, &mut Unpacked::unbounded()).unwrap();
        assert_eq!(offsets(&p), vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(p.position, 6);
        assert!(!p.done(Isolation::ReadUncommitted));

        let rest = response(&[compressible(6, 3)], &[], 9);
        apply_response(&mut p, &rest, Isolation::ReadUncommitted, &opts, &mut Unpacked::unbounded()).unwrap();
        assert_eq!(p.position, 9);
        assert_eq!(p.fetched.records.len(), 9);
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn a_single_batch_that_decompresses_past_the_limit_is_an_error_naming_it() {
        let r = response(&[compressible(0, 3)], &[], 3);
        let opts = DecodeOptions { max_decompressed_size: 20_000, ..DecodeOptions::default() };
        let mut p = progress(0, 3);
        let err = apply_response(&mut p, &r, Isolation::ReadUncommitted, &opts, &mut Unpacked::unbounded())
            .unwrap_err();
        assert_eq!(err.offset, 0, "the batch's base offset");
        let err = err.source;
        assert!(matches!(err.kind, DecodeErrorKind::DecompressedTooLarge { max: 20_000 }), "{err}");
        assert!(p.fetched.records.is_empty());
        assert_eq!(p.position, 0);
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn a_batch_larger_than_the_whole_budget_is_streamed_a_budget_per_round_every_record_once() {
        // 40 records of 10 KB: ≈ 400 KB decompressed, ≈ 4 KB on the wire; a 100 KB budget.
        let batch = compressible(0, 40);
        let (rounds, error) = rounds_of(&batch, &FetchOptions::default(), 100_000);
        assert!(error.is_none(), "{error:?}");
        let read: Vec<i64> = rounds.concat();
        assert_eq!(read, (0..40).collect::<Vec<_>>(), "every record once, in order");
        // A budget's worth per round (ten 10 KB records, at most a chunk more), not all at once.
        assert!(rounds.len() >= 4, "{} rounds", rounds.len());
        for round in &rounds {
            assert!(round.len() <= 12, "a round kept {} records of 10 KB under a 100 KB budget", round.len());
        }
    }

    /// One round of `r` for `p` with a budget of `budget` bytes (half of it the response's).
    #[cfg(feature = "lz4")]
    fn round(
        p: &mut Progress,
        r: FetchPartitionResponse,
        budget: usize,
    ) -> Result<Vec<i64>, crate::ClientError> {
        let options = FetchOptions::default();
        let mut share = Unpacked::new(budget / 2, budget);
        let result = apply_answer(&tp(), p, answer(r), options.isolation, &options.decode, &mut share);
        let read = p.fetched.records.drain(..).map(|r| r.offset).collect();
        result.map(|()| read)
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn a_streamed_batch_sent_again_is_read_on_from_the_kept_state_not_decompressed_again() {
        // 40 records of 10 KB under a 100 KB budget: the first round stops inside the batch.
        let batch = compressible(0, 40);
        let mut p = progress(0, 40);
        let first = round(&mut p, response(std::slice::from_ref(&batch), &[], 40), 100_000).unwrap();
        assert!(!first.is_empty() && p.position < 40, "stopped inside: {first:?}");
        assert!(p.streaming.is_some(), "the batch is kept for the next round");
        // The broker sends the batch again with its compressed bytes damaged after the header
        // (its CRC field unchanged): parsed again it would fail its checksum, so a round that
        // reads on proves it went on from the kept state.
        let mut again = response(std::slice::from_ref(&batch), &[], 40);
        let mut bytes = again.records.take().unwrap().to_vec();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        again.records = Some(Bytes::from(bytes));
        let position = p.position;
        let second = round(&mut p, again, 100_000).unwrap();
        assert_eq!(second.first(), Some(&position), "read on where the first round stopped");
        let mut read = first;
        read.extend(second);
        while p.position < 40 {
            read.extend(round(&mut p, response(std::slice::from_ref(&batch), &[], 40), 100_000).unwrap());
        }
        assert_eq!(read, (0..40).collect::<Vec<_>>(), "every record once, in order");
        assert!(p.streaming.is_none(), "nothing kept once the batch is read");
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn a_position_moved_back_inside_a_kept_batch_reads_from_the_new_position() {
        let batch = compressible(0, 40);
        let mut p = progress(0, 40);
        round(&mut p, response(std::slice::from_ref(&batch), &[], 40), 100_000).unwrap();
        assert!(p.streaming.is_some() && p.position > 3);
        // A seek back: the kept state is past it, so the batch is read again from its start.
        p.position = 3;
        let read = round(&mut p, response(std::slice::from_ref(&batch), &[], 40), 100_000).unwrap();
        assert_eq!(read.first(), Some(&3));
        assert!(read.windows(2).all(|w| w[1] == w[0] + 1), "{read:?}");
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn a_batch_within_the_budget_is_unpacked_whole_not_streamed() {
        let batch = compressible(0, 5);
        let (rounds, error) = rounds_of(&batch, &FetchOptions::default(), 100_000);
        assert!(error.is_none());
        assert_eq!(rounds, vec![vec![0, 1, 2, 3, 4]]);
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn a_response_always_yields_its_first_batch_whatever_its_share() {
        let r = response(&[compressible(0, 3), compressible(3, 3)], &[], 6);
        let mut p = progress(0, 6);
        let options = FetchOptions::default();
        apply_answer(
            &tp(),
            &mut p,
            answer(r),
            options.isolation,
            &options.decode,
            &mut Unpacked::new(1, usize::MAX),
        )
        .unwrap();
        assert_eq!(offsets(&p), vec![0, 1, 2], "one batch, ≈ 30 KB over a 1-byte share");
        assert_eq!(p.stalls, 0);
    }
}
