//! The producer's per-partition queues: records appended into an open batch until it is full
//! or has lingered long enough, closed batches waiting for the sender, and the partition's
//! idempotence bookkeeping (next sequence, last acknowledged sequence, whether a retry holds
//! the partition to one batch in flight). No IO and no clock: times are arguments.
//!
//! A record is encoded into its batch's buffer when it is appended ([`BatchBuilder`]): the
//! caller's key and value buffers are free again at once, and a batch is held as the bytes it
//! goes on the wire as — sealed (header, CRC, compression) when first sent, restamped without
//! re-encoding when an epoch bump gives it a new producer epoch and sequence.
//!
//! Buffer memory is charged for what a batch holds, not for what its records weigh: its
//! buffer's capacity as it grows, and for a compressing producer room for the compressed copy
//! that exists beside the buffer while the batch is sealed ([`BatchBuilder::peak_bytes`]).
//! [`PartitionQueue::append_cost`] says before an append what it will charge (the caller
//! takes that much memory first), [`PartitionQueue::append`] charges exactly that, and a
//! sealed batch gives back all but its sealed bytes ([`Batch::seal`]). So `buffer_memory` is a
//! bound on the producer's record buffers, sealing included, not an estimate.

use std::cell::OnceCell;
use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::Notify;

use crate::cluster::retry::SequencePlace;
use crate::error::ClientError;
use crate::producer::produce::{Produced, RecordRef};
use kafka_wire::protocol::records::{
    max_record_len, restamp, BatchBuilder, Compression, ProducerStamp, RecordEncodeError,
};

/// Bytes a record weighs beyond its key, value and headers, for the partitioner's "does it
/// still fit the batch" (Java's estimate of the widest varints of its lengths, deltas and
/// counts). A batch is filled to `batch_size` by what its records take encoded (as Java's).
pub(crate) const RECORD_OVERHEAD: usize = 21;

/// The buffer a new batch starts with (unless its first record needs more, or `batch_size`
/// is smaller): Java's default `batch.size`, so a producer spread over many partitions holds
/// no more per open batch than Java's would. It doubles from there up to `batch_size`.
const INITIAL_BATCH_CAPACITY: usize = 16 * 1024;

/// The producer's constants every batch of a partition is built by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchShape {
    /// Bytes of encoded (uncompressed) records at which a batch closes.
    pub(crate) batch_size: usize,
    pub(crate) compression: Compression,
}

impl BatchShape {
    /// The first buffer of a batch opened for a record of `room` bytes ([`max_record_len`]).
    fn first_capacity(&self, room: usize) -> usize {
        INITIAL_BATCH_CAPACITY.min(self.capacity_cap()).max(room.saturating_add(BATCH_HEADER))
    }

    /// How far doubling grows a batch's buffer: a batch closes once its records pass
    /// `batch_size`, so it never needs more (a larger record alone gets the room it needs).
    fn capacity_cap(&self) -> usize {
        self.batch_size.saturating_add(BATCH_HEADER)
    }

    /// Buffer memory an open batch with a `capacity`-byte buffer is charged.
    fn charge(&self, capacity: usize) -> usize {
        BatchBuilder::peak_bytes(capacity, self.compression)
    }

    /// The most buffer memory a batch grown by appends is charged: its buffer at the cap, with
    /// room for a last record's widest varints (a batch takes a record while its records'
    /// [`record_size`]s fit `batch_size`), and its compressed copy.
    pub(crate) fn full_cost(&self) -> usize {
        self.charge(self.capacity_cap().saturating_add(max_record_len(None, None, &[]) - RECORD_OVERHEAD))
    }

    /// Buffer memory a batch holding only `record` is charged: more than `buffer_memory`, and
    /// the record can never be sent.
    pub(crate) fn alone_cost(&self, record: &RecordRef<'_>) -> usize {
        self.charge(self.first_capacity(room_of(record)))
    }
}

/// The time of one append call, read once: the wall clock in ms (the create time of records
/// without one), and the monotonic instant a new batch's linger counts from, read only when
/// a batch opens.
#[derive(Debug)]
pub(crate) struct AppendTime {
    pub(crate) ms: i64,
    instant: OnceCell<Instant>,
}

impl AppendTime {
    /// The time now (`ms` read here, the instant when first needed).
    pub(crate) fn now() -> Self {
        Self { ms: kafka_vocab::now_ms(), instant: OnceCell::new() }
    }

    /// A given time (tests).
    #[cfg(test)]
    pub(crate) fn at(instant: Instant, ms: i64) -> Self {
        Self { ms, instant: OnceCell::from(instant) }
    }

    fn instant(&self) -> Instant {
        *self.instant.get_or_init(Instant::now)
    }
}

fn room_of(record: &RecordRef<'_>) -> usize {
    max_record_len(record.key, record.value, record.headers)
}

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
    /// Bytes of buffer memory charged, given back when the batch completes: while open, its
    /// buffer (and room for its compressed copy); once sealed, its sealed bytes.
    pub(crate) charged: usize,
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
    /// An empty batch for a first record of `room` bytes, charged its first buffer.
    fn new(now: Instant, base_timestamp: i64, shape: &BatchShape, room: usize) -> Self {
        let capacity = shape.first_capacity(room);
        let builder = BatchBuilder::new(base_timestamp, shape.compression, capacity, shape.capacity_cap());
        Self {
            charged: shape.charge(builder.capacity()),
            body: Body::Open(builder),
            count: 0,
            stamp: ProducerStamp::NONE,
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
    /// the first time, the same bytes after, restamped (a copy) when the stamp changed; and
    /// the buffer memory it gave up, to be given back (what it was charged beyond its sealed
    /// bytes, the first time). CPU work for a compressed batch: call it off the IO threads.
    pub(crate) fn seal(&mut self) -> Result<(Bytes, usize), RecordEncodeError> {
        let sealed = match std::mem::replace(&mut self.body, Body::Sealed(Bytes::new())) {
            Body::Open(builder) => builder.seal(self.stamp)?,
            Body::Sealed(bytes) => restamp(bytes, self.stamp),
        };
        let freed = self.charged.saturating_sub(sealed.len());
        self.charged -= freed;
        self.body = Body::Sealed(sealed.clone());
        Ok((sealed, freed))
    }

    /// Buffer memory appending a record of `room` bytes charges: what its buffer grows by.
    fn cost_of(&self, room: usize, shape: &BatchShape) -> usize {
        match &self.body {
            Body::Open(builder) => shape.charge(builder.capacity_after(room)) - self.charged,
            Body::Sealed(_) => 0,
        }
    }

    /// Whether sealing it is more than writing a header: its records are to be compressed.
    pub(crate) fn needs_compression(&self, compression: Compression) -> bool {
        compression != Compression::None && matches!(self.body, Body::Open(_))
    }

    /// Appends `record`; returns its index and the buffer memory its buffer grew by.
    fn push(
        &mut self,
        record: &RecordRef<'_>,
        shape: &BatchShape,
        now_ms: i64,
    ) -> Result<(i32, usize), RecordEncodeError> {
        // Only the open batch is appended to, and it is sealed only once closed.
        let Body::Open(builder) = &mut self.body else {
            return Err(RecordEncodeError::Invalid("a record appended to a sealed batch".into()));
        };
        let timestamp = record.timestamp.unwrap_or(now_ms);
        let index = builder.append(timestamp, record.key, record.value, record.headers)?;
        self.count = builder.record_count();
        let charged = shape.charge(builder.capacity());
        let grew = charged - self.charged;
        self.charged = charged;
        Ok((index, grew))
    }

    /// Bytes its records take as encoded so far (uncompressed), for `batch_size`; a sealed
    /// batch is never appended to again, so its sealed size stands in.
    fn filled(&self) -> usize {
        match &self.body {
            Body::Open(builder) => builder.len().saturating_sub(BATCH_HEADER),
            Body::Sealed(bytes) => bytes.len().saturating_sub(BATCH_HEADER),
        }
    }

    /// Bytes it takes in a Produce request (uncompressed while open: at most that).
    fn wire_len(&self) -> usize {
        match &self.body {
            Body::Open(builder) => builder.len(),
            Body::Sealed(bytes) => bytes.len(),
        }
    }

    /// Whether a record of `size` ([`record_size`]) would take it past `batch_size`.
    fn cannot_take(&self, size: usize, batch_size: usize) -> bool {
        self.filled() + size > batch_size || self.record_count() == i32::MAX
    }
}

/// One partition's batches and sequence state.
#[derive(Debug)]
pub(crate) struct PartitionQueue {
    shape: BatchShape,
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

impl PartitionQueue {
    /// An empty queue whose batches are built by `shape`.
    pub(crate) fn new(shape: BatchShape) -> Self {
        Self {
            shape,
            open: None,
            ready: VecDeque::new(),
            in_flight: 0,
            next_sequence: 0,
            last_acked: -1,
            retrying: false,
        }
    }

    /// The open batch `record` would go into: `None` when there is none or the record would
    /// take it past `batch_size` (then a new batch is opened for it).
    fn open_taking(&self, record: &RecordRef<'_>) -> Option<&Batch> {
        self.open.as_ref().filter(|b| !b.cannot_take(record_size(record), self.shape.batch_size))
    }

    /// Buffer memory [`append`](Self::append)ing `record` now charges: what the open batch's
    /// buffer grows by (mostly nothing), or a new batch's first buffer.
    pub(crate) fn append_cost(&self, record: &RecordRef<'_>) -> usize {
        let room = room_of(record);
        match self.open_taking(record) {
            Some(open) => open.cost_of(room, &self.shape),
            None => self.shape.charge(self.shape.first_capacity(room)),
        }
    }

    /// Appends `record`, closing the open batch first when the record would take it past
    /// `batch_size`, and hands `appended` the record's batch outcome and its index in the
    /// batch; returns that and the buffer memory charged, which is what
    /// [`append_cost`](Self::append_cost) said just before. Or returns why the record cannot be
    /// encoded (then nothing changed but a full batch closed, and nothing is charged).
    pub(crate) fn append<T>(
        &mut self,
        record: &RecordRef<'_>,
        at: &AppendTime,
        appended: impl FnOnce(&Arc<BatchOutcome>, i32) -> T,
    ) -> Result<(T, usize), RecordEncodeError> {
        if self.open.is_some() && self.open_taking(record).is_none() {
            self.close_open();
        }
        let shape = self.shape;
        let mut opened = 0;
        let open = self.open.get_or_insert_with(|| {
            let batch = Batch::new(at.instant(), record.timestamp.unwrap_or(at.ms), &shape, room_of(record));
            opened = batch.charged;
            batch
        });
        match open.push(record, &shape, at.ms) {
            Ok((index, grew)) => Ok((appended(&open.outcome, index), opened + grew)),
            Err(e) => {
                if open.count == 0 {
                    self.open = None;
                }
                Err(e)
            }
        }
    }

    /// Closes the open batch when a record of `size` would take it past `batch_size` (as
    /// [`append`](Self::append) would before adding it); returns whether it did.
    pub(crate) fn close_if_cannot_take(&mut self, size: usize) -> bool {
        let cannot = self.open.as_ref().is_some_and(|b| b.filled() + size > self.shape.batch_size);
        if cannot {
            self.close_open();
        }
        cannot
    }

    /// Whether the open batch is at least `batch_size` (a sticky partition moves on then).
    pub(crate) fn open_is_full(&self) -> bool {
        self.open.as_ref().is_some_and(|b| b.filled() >= self.shape.batch_size)
    }

    /// Bytes the batch [`take`](Self::take) would return takes in a request (at most: an
    /// unsealed batch counts uncompressed), header included; 0 when there is none.
    pub(crate) fn next_batch_bytes(&self) -> usize {
        self.ready.front().or(self.open.as_ref()).map_or(0, Batch::wire_len)
    }

    fn close_open(&mut self) {
        if let Some(batch) = self.open.take() {
            self.ready.push_back(batch);
        }
    }

    /// Whether a batch can go out now: a closed one (not waiting out a retry backoff), or an
    /// open one that is full, has lingered `linger`, or `drain_all` (flush, close).
    pub(crate) fn sendable(&self, now: Instant, linger: Duration, drain_all: bool) -> bool {
        if let Some(first) = self.ready.front() {
            return first.retry_at.is_none_or(|at| at <= now);
        }
        self.open.as_ref().is_some_and(|b| {
            drain_all || b.filled() >= self.shape.batch_size || now.duration_since(b.created) >= linger
        })
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

    /// Whether the broker acknowledged a batch of this partition since the producer id (or
    /// epoch) was set: from then on it holds the producer's state and refuses sequences out of
    /// order; before, it accepts any first sequence.
    pub(crate) fn has_acknowledged(&self) -> bool {
        self.last_acked >= 0
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

    fn queue(batch_size: usize) -> PartitionQueue {
        PartitionQueue::new(BatchShape { batch_size, compression: Compression::None })
    }

    /// Appends `n` records of 10 bytes (17 encoded, 31 by `record_size`); returns what they
    /// were charged.
    fn fill(q: &mut PartitionQueue, n: usize, now: Instant) -> usize {
        let mut charged = 0;
        for _ in 0..n {
            let r = record("0123456789");
            let cost = q.append_cost(&r.as_record_ref());
            let ((), took) = q.append(&r.as_record_ref(), &AppendTime::at(now, 1_000), |_, _| ()).unwrap();
            assert_eq!(took, cost, "append charges what append_cost said");
            charged += took;
        }
        charged
    }

    #[test]
    fn a_batch_closes_when_the_next_record_would_pass_batch_size() {
        let now = Instant::now();
        let mut q = queue(100);
        // 31 bytes by record_size, 17 encoded: five fit in 100 (the fifth is let in on the
        // four before it taking 68 and its 31), the sixth opens a new batch.
        let charged = fill(&mut q, 6, now);
        assert_eq!(q.ready.len(), 1);
        assert_eq!(q.ready[0].record_count(), 5);
        // Each batch is charged its buffer: opened at batch_size + header (below the initial
        // 16 KiB), grown past it only by the room the fifth record could have needed.
        let room = max_record_len(None, Some(b"0123456789"), &[]);
        assert_eq!(q.ready[0].charged, BATCH_HEADER + 4 * 17 + room);
        assert!(
            q.ready[0].charged <= BatchShape { batch_size: 100, compression: Compression::None }.full_cost()
        );
        assert_eq!(charged, q.ready[0].charged + (100 + BATCH_HEADER));
        assert!(q.sendable(now, Duration::from_secs(60), false));
    }

    #[test]
    fn the_next_batch_bytes_are_those_take_returns_header_included() {
        let now = Instant::now();
        let mut q = queue(100);
        assert_eq!(q.next_batch_bytes(), 0);
        fill(&mut q, 1, now); // one open batch of one 17-byte record
        assert_eq!(q.next_batch_bytes(), 17 + BATCH_HEADER);
        fill(&mut q, 5, now); // closed: 5 records; open: 1
        assert_eq!(q.next_batch_bytes(), 5 * 17 + BATCH_HEADER);
        let mut taken = q.take(None).unwrap();
        assert_eq!(taken.seal().unwrap().0.len(), 5 * 17 + BATCH_HEADER);
        assert_eq!(q.next_batch_bytes(), 17 + BATCH_HEADER);
    }

    #[test]
    fn an_open_batch_waits_for_linger_unless_everything_is_drained() {
        let now = Instant::now();
        let mut q = queue(1_000);
        fill(&mut q, 1, now);
        let linger = Duration::from_millis(5);
        assert!(!q.sendable(now, linger, false));
        assert!(q.sendable(now, linger, true));
        assert!(q.sendable(now + linger, linger, false));
        assert_eq!(q.next_due(linger), Some(now + linger));
    }

    #[test]
    fn sequences_follow_record_counts_and_survive_a_retry() {
        let now = Instant::now();
        let mut q = queue(100);
        fill(&mut q, 10, now); // batches of 5 and 5
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
        let mut q = queue(100);
        fill(&mut q, 15, now); // batches of 5, 5 and 5
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
        let mut q = queue(100);
        fill(&mut q, 6, now);
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
        let mut q = queue(100);
        fill(&mut q, 3, now);
        let mut first = q.take(Some((42, 0))).unwrap();
        let (sent, _) = first.seal().unwrap();
        q.in_flight -= 1;
        q.requeue(first, now);
        q.reset_sequences();
        let mut again = q.take(Some((42, 1))).unwrap();
        let (resent, freed) = again.seal().unwrap();
        assert_eq!(freed, 0, "a restamped copy replaces the sealed bytes");
        let read = |b: Bytes| RecordBatch::decode(b, &DecodeOptions::default()).unwrap();
        let (before, after) = (read(sent), read(resent));
        assert_eq!((before.producer_epoch, after.producer_epoch), (0, 1));
        assert_eq!((before.base_sequence, after.base_sequence), (0, 0));
        assert_eq!(before.records.len(), 3);
        assert_eq!(before.records[2].value.as_deref(), Some(&b"0123456789"[..]));
        assert_eq!(before.records, after.records);
    }

    #[test]
    fn the_broker_orders_sequences_only_after_acknowledging_one_under_the_epoch() {
        let now = Instant::now();
        let mut q = queue(100);
        fill(&mut q, 10, now); // batches of 5 and 5
        assert!(!q.has_acknowledged(), "nothing acknowledged yet: one batch in flight");
        let first = q.take(Some((42, 0))).unwrap();
        q.in_flight -= 1;
        q.acknowledged(&first);
        assert!(q.has_acknowledged());
        q.reset_sequences();
        assert!(!q.has_acknowledged(), "a new epoch starts without broker state again");
    }

    #[test]
    fn batches_past_the_delivery_timeout_expire_unsent_ones_included() {
        let now = Instant::now();
        let mut q = queue(100);
        fill(&mut q, 4, now);
        assert!(q.expire(now, Duration::from_secs(1)).is_empty());
        let expired = q.expire(now + Duration::from_secs(1), Duration::from_secs(1));
        assert_eq!(expired.iter().map(Batch::record_count).sum::<i32>(), 4);
        assert!(q.is_idle());
    }

    /// A batch of `n` records of 100 bytes each appended with `compression`: what append_cost
    /// said, what the queue holds, and what sealing gives back.
    fn charged_then_sealed(compression: Compression, n: usize, batch_size: usize) -> (usize, usize, usize) {
        let now = Instant::now();
        let mut q = PartitionQueue::new(BatchShape { batch_size, compression });
        let value = Bytes::from(vec![b'x'; 100]);
        let mut charged = 0;
        for _ in 0..n {
            let r = ProduceRecord::new(None, Some(value.clone()));
            let cost = q.append_cost(&r.as_record_ref());
            let ((), took) = q.append(&r.as_record_ref(), &AppendTime::at(now, 1_000), |_, _| ()).unwrap();
            assert_eq!(took, cost);
            charged += took;
        }
        let mut batch = q.take(None).unwrap();
        assert_eq!(batch.charged, charged, "one batch holds all");
        let (sealed, freed) = batch.seal().unwrap();
        assert_eq!(batch.charged, sealed.len(), "once sealed, its sealed bytes are charged");
        assert_eq!(charged - freed, sealed.len());
        (charged, sealed.len(), freed)
    }

    #[test]
    fn a_batch_is_charged_its_buffer_as_it_grows_and_a_compressing_one_room_for_its_copy() {
        // 250 records of 109 bytes encoded: the buffer doubles 16 KiB -> 32 KiB, under the
        // 1 MB cap.
        let (plain, sealed, freed) = charged_then_sealed(Compression::None, 250, 1_000_000);
        assert_eq!(plain, 32 * 1024);
        assert_eq!(sealed + freed, plain);
        if Compression::Lz4.is_available() {
            let (lz4, sealed, _) = charged_then_sealed(Compression::Lz4, 250, 1_000_000);
            assert_eq!(lz4, BatchBuilder::peak_bytes(32 * 1024, Compression::Lz4));
            assert!(lz4 > 2 * 32 * 1024, "the buffer and the compressed copy's worst case: {lz4}");
            assert!(sealed < 4096, "250 equal records compress: {sealed}");
        }
    }

    #[test]
    fn a_record_larger_than_the_initial_buffer_opens_a_batch_of_its_size() {
        let now = Instant::now();
        let mut q = queue(16);
        let value = Bytes::from(vec![0u8; 100_000]);
        let big = ProduceRecord::new(None, Some(value.clone()));
        let cost = q.append_cost(&big.as_record_ref());
        assert_eq!(cost, max_record_len(None, Some(&value), &[]) + BATCH_HEADER);
        let ((), took) = q.append(&big.as_record_ref(), &AppendTime::at(now, 0), |_, _| ()).unwrap();
        assert_eq!(took, cost, "the buffer was made big enough at once, not grown again");
        let shape = BatchShape { batch_size: 16, compression: Compression::None };
        assert_eq!(shape.alone_cost(&big.as_record_ref()), cost);
    }
}
