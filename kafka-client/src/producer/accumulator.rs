//! The producer's per-partition queues: records appended into an open batch until it is full
//! or has lingered long enough, closed batches waiting for the sender, and the partition's
//! idempotence bookkeeping (next sequence, last acknowledged sequence, whether a retry holds
//! the partition to one batch in flight). No IO and no clock: times are arguments.
//!
//! A record is encoded into its batch's buffer when it is appended ([`BatchBuilder`]): the
//! caller's key and value buffers are free again at once, and a batch is held as the bytes it
//! goes on the wire as — sealed (header, CRC, compression) when first sent, restamped without
//! re-encoding when an epoch bump gives it a new producer epoch and sequence.

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::Notify;

use crate::cluster::retry::SequencePlace;
use crate::error::ClientError;
use crate::producer::produce::{Produced, RecordRef};
use kafka_wire::protocol::records::{restamp, BatchBuilder, Compression, ProducerStamp, RecordEncodeError};

/// Bytes a record is charged against `buffer_memory` beyond its key, value and headers: the
/// widest varints of its length, deltas and counts (as Java's estimate). A batch is filled to
/// `batch_size` by what its records take encoded (as Java's), which for small records is about
/// half of what they are charged.
pub(crate) const RECORD_OVERHEAD: usize = 21;

/// The buffer a new batch starts with (unless its first record needs more, or `batch_size`
/// is smaller); it doubles from there up to `batch_size`.
const INITIAL_BATCH_CAPACITY: usize = 64 * 1024;

/// Whether sequence `a` is `b` or comes before it, sequences wrapping at `i32::MAX` (the
/// nearer way round decides).
fn at_or_before(a: i32, b: i32) -> bool {
    (b.wrapping_sub(a) & i32::MAX) < (1 << 30)
}

/// Bytes of a batch beyond its records: the fixed header.
const BATCH_HEADER: usize = 61;

/// What a record costs in the buffer: its data plus [`RECORD_OVERHEAD`].
pub(crate) fn record_size(record: &RecordRef<'_>) -> usize {
    let data = |b: Option<&[u8]>| b.map_or(0, <[u8]>::len);
    let headers: usize = record.headers.iter().map(|h| 10 + h.key.len() + data(h.value.as_deref())).sum();
    RECORD_OVERHEAD + data(record.key) + data(record.value) + headers
}

/// The outcome of one batch, shared by the delivery handles of its records.
#[derive(Debug, Default)]
pub(crate) struct BatchOutcome {
    pub(crate) result: OnceLock<Result<Produced, ClientError>>,
    pub(crate) done: Notify,
}

impl BatchOutcome {
    /// Sets the outcome once and wakes every waiter; later calls are ignored.
    pub(crate) fn complete(&self, result: Result<Produced, ClientError>) {
        let _ = self.result.set(result);
        self.done.notify_waiters();
    }

    /// The outcome, once [`complete`](Self::complete) set it.
    pub(crate) async fn finished(&self) -> &Result<Produced, ClientError> {
        loop {
            let done = self.done.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            if let Some(result) = self.result.get() {
                return result;
            }
            done.await;
        }
    }
}

/// A batch's bytes: records being appended, or the whole batch as last sent.
#[derive(Debug)]
enum Body {
    Open(BatchBuilder),
    Sealed(Bytes),
}

/// A batch of one partition's records, open (being filled) or closed (waiting to be sent,
/// in flight, or waiting to be sent again).
#[derive(Debug)]
pub(crate) struct Batch {
    body: Body,
    count: i32,
    /// Producer id, epoch and base sequence (−1 until the batch is first taken under a
    /// producer id; kept across retries), and the transactional bit.
    pub(crate) stamp: ProducerStamp,
    /// Bytes charged against the buffer, given back when the batch completes.
    pub(crate) bytes: usize,
    pub(crate) created: Instant,
    /// When the batch may be sent again after a retriable failure.
    pub(crate) retry_at: Option<Instant>,
    pub(crate) attempts: u32,
    /// Whether a request carrying it was ever sent: an unsent batch can fail without leaving
    /// the broker a sequence gap.
    pub(crate) sent: bool,
    pub(crate) outcome: Arc<BatchOutcome>,
}

impl Batch {
    /// An empty batch starting with a `capacity`-byte buffer that doubles up to `cap`.
    fn new(now: Instant, base_timestamp: i64, compression: Compression, capacity: usize, cap: usize) -> Self {
        Self {
            body: Body::Open(BatchBuilder::new(base_timestamp, compression, capacity, cap)),
            count: 0,
            stamp: ProducerStamp::NONE,
            bytes: 0,
            created: now,
            retry_at: None,
            attempts: 0,
            sent: false,
            outcome: Arc::new(BatchOutcome::default()),
        }
    }

    pub(crate) fn record_count(&self) -> i32 {
        self.count
    }

    /// Whether sequence numbers were given to it (they stay across retries).
    pub(crate) fn has_sequence(&self) -> bool {
        self.stamp.base_sequence >= 0
    }

    /// The sequence of its last record.
    pub(crate) fn last_sequence(&self) -> i32 {
        self.stamp.base_sequence.wrapping_add(self.record_count() - 1) & i32::MAX
    }

    /// The batch as it goes on the wire now, with its current stamp: sealed (and compressed)
    /// the first time, the same bytes after, restamped (a copy) when the stamp changed. CPU
    /// work for a compressed batch: call it off the IO threads.
    pub(crate) fn seal(&mut self) -> Result<Bytes, RecordEncodeError> {
        let sealed = match std::mem::replace(&mut self.body, Body::Sealed(Bytes::new())) {
            Body::Open(builder) => builder.seal(self.stamp)?,
            Body::Sealed(bytes) => restamp(bytes, self.stamp),
        };
        self.body = Body::Sealed(sealed.clone());
        Ok(sealed)
    }

    /// Whether sealing it is more than writing a header: its records are to be compressed.
    pub(crate) fn needs_compression(&self, compression: Compression) -> bool {
        compression != Compression::None && matches!(self.body, Body::Open(_))
    }

    fn push(&mut self, record: &RecordRef<'_>, size: usize, now_ms: i64) -> Result<i32, RecordEncodeError> {
        // Only the open batch is appended to, and it is sealed only once closed.
        let Body::Open(builder) = &mut self.body else {
            return Err(RecordEncodeError::Invalid("a record appended to a sealed batch".into()));
        };
        let timestamp = record.timestamp.unwrap_or(now_ms);
        let index = builder.append(timestamp, record.key, record.value, record.headers)?;
        self.count = builder.record_count();
        self.bytes += size;
        Ok(index)
    }

    /// Bytes its records take as encoded so far (uncompressed), for `batch_size`; a sealed
    /// batch is never appended to again, so what it was charged stands in.
    fn filled(&self) -> usize {
        match &self.body {
            Body::Open(builder) => builder.len().saturating_sub(BATCH_HEADER),
            Body::Sealed(_) => self.bytes,
        }
    }
}

/// One partition's batches and sequence state.
#[derive(Debug)]
pub(crate) struct PartitionQueue {
    open: Option<Batch>,
    /// Closed batches in send order: batches coming back for a retry first, by sequence.
    ready: VecDeque<Batch>,
    /// Batches of this partition in requests not yet answered.
    pub(crate) in_flight: usize,
    /// The sequence the next new batch gets.
    next_sequence: i32,
    /// The last sequence the broker acknowledged; −1 for none since the producer id was set.
    last_acked: i32,
    /// A batch came back to be sent again: until it is acknowledged, one batch at a time.
    pub(crate) retrying: bool,
}

impl Default for PartitionQueue {
    fn default() -> Self {
        Self {
            open: None,
            ready: VecDeque::new(),
            in_flight: 0,
            next_sequence: 0,
            last_acked: -1,
            retrying: false,
        }
    }
}

impl PartitionQueue {
    /// Appends `record` (costing `size`), closing the open batch first when the record would
    /// take it past `batch_size`, and hands `appended` the record's batch outcome and its index
    /// in the batch; or returns why the record cannot be encoded (then nothing changed but a
    /// full batch closed). `now` is asked only when a batch is opened.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn append<T>(
        &mut self,
        record: &RecordRef<'_>,
        size: usize,
        batch_size: usize,
        compression: Compression,
        now: impl FnOnce() -> Instant,
        now_ms: i64,
        appended: impl FnOnce(&Arc<BatchOutcome>, i32) -> T,
    ) -> Result<T, RecordEncodeError> {
        let full = self
            .open
            .as_ref()
            .is_some_and(|b| b.filled() + size > batch_size || b.record_count() == i32::MAX);
        if full {
            self.close_open();
        }
        let open = self.open.get_or_insert_with(|| {
            // A batch closes once its records pass `batch_size`, so its buffer never needs to
            // double past that (a larger record alone gets the room it needs).
            let cap = batch_size.saturating_add(BATCH_HEADER);
            let capacity = INITIAL_BATCH_CAPACITY.min(cap).max(size.saturating_add(BATCH_HEADER));
            Batch::new(now(), record.timestamp.unwrap_or(now_ms), compression, capacity, cap)
        });
        match open.push(record, size, now_ms) {
            Ok(index) => Ok(appended(&open.outcome, index)),
            Err(e) => {
                if open.count == 0 {
                    self.open = None;
                }
                Err(e)
            }
        }
    }

    /// Closes the open batch when `size` more bytes would take it past `batch_size` (as
    /// [`append`](Self::append) would before adding them); returns whether it did.
    pub(crate) fn close_if_cannot_take(&mut self, size: usize, batch_size: usize) -> bool {
        let cannot = self.open.as_ref().is_some_and(|b| b.filled() + size > batch_size);
        if cannot {
            self.close_open();
        }
        cannot
    }

    /// Whether the open batch is at least `batch_size` (a sticky partition moves on then).
    pub(crate) fn open_is_full(&self, batch_size: usize) -> bool {
        self.open.as_ref().is_some_and(|b| b.filled() >= batch_size)
    }

    /// Bytes of the batch [`take`](Self::take) would return (its records as charged, and the
    /// batch header); 0 when there is none.
    pub(crate) fn next_batch_bytes(&self) -> usize {
        self.ready.front().or(self.open.as_ref()).map_or(0, |b| b.bytes + BATCH_HEADER)
    }

    fn close_open(&mut self) {
        if let Some(batch) = self.open.take() {
            self.ready.push_back(batch);
        }
    }

    /// Whether a batch can go out now: a closed one (not waiting out a retry backoff), or an
    /// open one that is full, has lingered `linger`, or `drain_all` (flush, close).
    pub(crate) fn sendable(
        &self,
        now: Instant,
        linger: Duration,
        batch_size: usize,
        drain_all: bool,
    ) -> bool {
        if let Some(first) = self.ready.front() {
            return first.retry_at.is_none_or(|at| at <= now);
        }
        self.open
            .as_ref()
            .is_some_and(|b| drain_all || b.filled() >= batch_size || now.duration_since(b.created) >= linger)
    }

    /// When a batch of this partition becomes sendable by time alone, if one will.
    pub(crate) fn next_due(&self, linger: Duration) -> Option<Instant> {
        match self.ready.front() {
            Some(first) => first.retry_at,
            None => self.open.as_ref().map(|b| b.created + linger),
        }
    }

    /// Takes the next batch to send (see [`sendable`](Self::sendable)), giving it sequence
    /// numbers under `producer` when it has none yet.
    pub(crate) fn take(&mut self, producer: Option<(i64, i16)>) -> Option<Batch> {
        if self.ready.is_empty() {
            self.close_open();
        }
        let mut batch = self.ready.pop_front()?;
        if let Some((id, epoch)) = producer {
            if !batch.has_sequence() {
                batch.stamp.producer_id = id;
                batch.stamp.producer_epoch = epoch;
                batch.stamp.base_sequence = self.next_sequence;
                self.next_sequence = self.next_sequence.wrapping_add(batch.record_count()) & i32::MAX;
            }
        }
        batch.retry_at = None;
        batch.sent = true;
        batch.attempts += 1;
        self.in_flight += 1;
        Some(batch)
    }

    /// Whether `batch` is the one the broker expects next: nothing before it is unresolved.
    pub(crate) fn is_next_in_line(&self, batch: &Batch) -> bool {
        batch.stamp.base_sequence == ((self.last_acked.wrapping_add(1)) & i32::MAX)
    }

    /// Where `batch`'s sequences stand against the last acknowledged one (a batch without
    /// sequences is always next in line).
    pub(crate) fn place_of(&self, batch: &Batch) -> SequencePlace {
        if batch.has_sequence()
            && self.last_acked >= 0
            && at_or_before(batch.last_sequence(), self.last_acked)
        {
            SequencePlace::Acknowledged
        } else if !batch.has_sequence() || self.is_next_in_line(batch) {
            SequencePlace::NextInLine
        } else {
            SequencePlace::AfterUnresolved
        }
    }

    /// Notes that the broker has `batch`; a partition held to one batch in flight by a retry
    /// is released once no retried batch is left. The last acknowledged sequence never moves
    /// back (a batch resolved as written after a later one was acknowledged).
    pub(crate) fn acknowledged(&mut self, batch: &Batch) {
        if batch.has_sequence()
            && (self.last_acked < 0 || !at_or_before(batch.last_sequence(), self.last_acked))
        {
            self.last_acked = batch.last_sequence();
        }
        if self.retrying && !self.ready.iter().any(|b| b.sent) {
            self.retrying = false;
        }
    }

    /// Puts `batch` back to be sent again no earlier than `at`, ahead of every batch with a
    /// later sequence, and holds the partition to one batch in flight until it is through.
    pub(crate) fn requeue(&mut self, mut batch: Batch, at: Instant) {
        batch.retry_at = Some(at);
        let position = self
            .ready
            .iter()
            .position(|b| !b.sent || b.stamp.base_sequence > batch.stamp.base_sequence)
            .unwrap_or(self.ready.len());
        self.ready.insert(position, batch);
        self.retrying = true;
    }

    /// After an epoch bump: sequences restart at 0, and batches not yet acknowledged get new
    /// ones (in their order) when next taken.
    pub(crate) fn reset_sequences(&mut self) {
        self.next_sequence = 0;
        self.last_acked = -1;
        for batch in &mut self.ready {
            batch.stamp = ProducerStamp { transactional: batch.stamp.transactional, ..ProducerStamp::NONE };
        }
    }

    /// Fails every batch not yet in flight whose delivery deadline passed; returns them.
    pub(crate) fn expire(&mut self, now: Instant, delivery_timeout: Duration) -> Vec<Batch> {
        let mut expired = Vec::new();
        let mut kept = VecDeque::with_capacity(self.ready.len());
        for batch in self.ready.drain(..) {
            if now.duration_since(batch.created) >= delivery_timeout {
                expired.push(batch);
            } else {
                kept.push_back(batch);
            }
        }
        self.ready = kept;
        if self.open.as_ref().is_some_and(|b| now.duration_since(b.created) >= delivery_timeout) {
            expired.extend(self.open.take());
        }
        expired
    }

    /// Batches closed to more records (full, or waiting to be retried), not yet in flight.
    pub(crate) fn closed_batches(&self) -> usize {
        self.ready.len()
    }

    /// Batches buffered (open or closed), not counting those in flight.
    pub(crate) fn batches(&self) -> usize {
        usize::from(self.open.is_some()) + self.ready.len()
    }

    /// Takes every buffered batch (the producer failed as a whole).
    pub(crate) fn take_all(&mut self) -> Vec<Batch> {
        let mut all: Vec<Batch> = self.ready.drain(..).collect();
        all.extend(self.open.take());
        all
    }

    /// Whether nothing of this partition is buffered or in flight.
    pub(crate) fn is_idle(&self) -> bool {
        self.open.is_none() && self.ready.is_empty() && self.in_flight == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::producer::produce::{AsRecordRef, ProduceRecord};
    use kafka_wire::protocol::records::{DecodeOptions, RecordBatch};

    fn record(value: &'static str) -> ProduceRecord {
        ProduceRecord::new(None, Some(Bytes::from_static(value.as_bytes())))
    }

    fn fill(q: &mut PartitionQueue, n: usize, batch_size: usize, now: Instant) {
        for _ in 0..n {
            let r = record("0123456789");
            let size = record_size(&r.as_record_ref());
            q.append(&r.as_record_ref(), size, batch_size, Compression::None, || now, 1_000, |_, _| ())
                .unwrap();
        }
    }

    #[test]
    fn a_batch_closes_when_the_next_record_would_pass_batch_size() {
        let now = Instant::now();
        let mut q = PartitionQueue::default();
        // 31 bytes charged a record, 17 encoded: five fit in 100 (the fifth is let in on the
        // four before it taking 68 and its charge of 31), the sixth opens a new batch.
        fill(&mut q, 6, 100, now);
        assert_eq!(q.ready.len(), 1);
        assert_eq!(q.ready[0].record_count(), 5);
        assert_eq!(q.ready[0].bytes, 5 * 31, "charged as before");
        assert!(q.sendable(now, Duration::from_secs(60), 100, false));
    }

    #[test]
    fn the_next_batch_bytes_are_those_take_returns_header_included() {
        let now = Instant::now();
        let mut q = PartitionQueue::default();
        assert_eq!(q.next_batch_bytes(), 0);
        fill(&mut q, 1, 100, now); // one open batch of 31 bytes
        assert_eq!(q.next_batch_bytes(), 31 + BATCH_HEADER);
        fill(&mut q, 5, 100, now); // closed: 5 records; open: 1
        assert_eq!(q.next_batch_bytes(), 5 * 31 + BATCH_HEADER);
        let taken = q.take(None).unwrap();
        assert_eq!(taken.bytes + BATCH_HEADER, 5 * 31 + BATCH_HEADER);
        assert_eq!(q.next_batch_bytes(), 31 + BATCH_HEADER);
    }

    #[test]
    fn an_open_batch_waits_for_linger_unless_everything_is_drained() {
        let now = Instant::now();
        let mut q = PartitionQueue::default();
        fill(&mut q, 1, 1_000, now);
        let linger = Duration::from_millis(5);
        assert!(!q.sendable(now, linger, 1_000, false));
        assert!(q.sendable(now, linger, 1_000, true));
        assert!(q.sendable(now + linger, linger, 1_000, false));
        assert_eq!(q.next_due(linger), Some(now + linger));
    }

    #[test]
    fn sequences_follow_record_counts_and_survive_a_retry() {
        let now = Instant::now();
        let mut q = PartitionQueue::default();
        fill(&mut q, 10, 100, now); // batches of 5 and 5
        let first = q.take(Some((42, 0))).unwrap();
        let second = q.take(Some((42, 0))).unwrap();
        assert_eq!((first.stamp.base_sequence, second.stamp.base_sequence), (0, 5));
        assert_eq!(first.stamp.producer_id, 42);
        assert!(q.is_next_in_line(&first) && !q.is_next_in_line(&second));
        // The first comes back (connection cut): it is resent before anything newer, with
        // the same sequence, and the partition is held to one batch in flight.
        q.in_flight -= 2;
        q.requeue(second, now);
        q.requeue(first, now);
        assert!(q.retrying);
        let again = q.take(Some((42, 0))).unwrap();
        assert_eq!(again.stamp.base_sequence, 0);
        assert_eq!(again.attempts, 2);
        q.acknowledged(&again);
        assert!(q.retrying, "the second batch is still to be resent");
        let again = q.take(Some((42, 0))).unwrap();
        assert!(q.is_next_in_line(&again));
        q.acknowledged(&again);
        assert!(!q.retrying);
    }

    #[test]
    fn a_batch_behind_an_acknowledged_one_is_placed_as_acknowledged_and_never_moves_the_mark_back() {
        let now = Instant::now();
        let mut q = PartitionQueue::default();
        fill(&mut q, 15, 100, now); // batches of 5, 5 and 5
        let first = q.take(Some((42, 0))).unwrap();
        let second = q.take(Some((42, 0))).unwrap();
        let third = q.take(Some((42, 0))).unwrap();
        assert_eq!(q.place_of(&first), SequencePlace::NextInLine);
        assert_eq!(q.place_of(&third), SequencePlace::AfterUnresolved);
        // The first's answer is lost; the second and third are acknowledged.
        q.acknowledged(&second);
        q.acknowledged(&third);
        assert_eq!(q.place_of(&first), SequencePlace::Acknowledged);
        q.acknowledged(&first);
        assert_eq!(q.last_acked, third.last_sequence(), "the mark stays at the third");
        assert!(at_or_before(i32::MAX - 2, 3), "across the wrap");
        assert!(!at_or_before(3, i32::MAX - 2));
    }

    #[test]
    fn an_epoch_bump_renumbers_unacknowledged_batches_from_zero() {
        let now = Instant::now();
        let mut q = PartitionQueue::default();
        fill(&mut q, 6, 100, now);
        let first = q.take(Some((42, 0))).unwrap();
        q.acknowledged(&first);
        let second = q.take(Some((42, 0))).unwrap();
        q.in_flight -= 1;
        q.requeue(second, now);
        q.reset_sequences();
        let renumbered = q.take(Some((42, 1))).unwrap();
        assert_eq!((renumbered.stamp.base_sequence, renumbered.stamp.producer_epoch), (0, 1));
        assert!(q.is_next_in_line(&renumbered));
    }

    #[test]
    fn a_sent_batch_renumbered_by_an_epoch_bump_goes_out_restamped_with_the_same_records() {
        let now = Instant::now();
        let mut q = PartitionQueue::default();
        fill(&mut q, 3, 100, now);
        let mut first = q.take(Some((42, 0))).unwrap();
        let sent = first.seal().unwrap();
        q.in_flight -= 1;
        q.requeue(first, now);
        q.reset_sequences();
        let mut again = q.take(Some((42, 1))).unwrap();
        let resent = again.seal().unwrap();
        let read = |b: Bytes| RecordBatch::decode(b, &DecodeOptions::default()).unwrap();
        let (before, after) = (read(sent), read(resent));
        assert_eq!((before.producer_epoch, after.producer_epoch), (0, 1));
        assert_eq!((before.base_sequence, after.base_sequence), (0, 0));
        assert_eq!(before.records.len(), 3);
        assert_eq!(before.records[2].value.as_deref(), Some(&b"0123456789"[..]));
        assert_eq!(before.records, after.records);
    }

    #[test]
    fn batches_past_the_delivery_timeout_expire_unsent_ones_included() {
        let now = Instant::now();
        let mut q = PartitionQueue::default();
        fill(&mut q, 4, 100, now);
        assert!(q.expire(now, Duration::from_secs(1)).is_empty());
        let expired = q.expire(now + Duration::from_secs(1), Duration::from_secs(1));
        assert_eq!(expired.iter().map(Batch::record_count).sum::<i32>(), 4);
        assert!(q.is_idle());
    }
}
