//! What the application side ([`Producer`](crate::Producer)), the sender task and the
//! transactions share: [`Shared`] (the client, the configuration, the state behind one lock,
//! buffer memory, the wake-ups) with the producer's [`State`], the transaction state it holds
//! ([`Transactions`]), and the bookkeeping of a batch that ends (`fail`, `complete`).
//!
//! Its own file, below `handle.rs`, `sender.rs` and `transaction.rs`, because all three take
//! from it: the protocol of a transaction is `transaction.rs`'s, its state is here.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};

use crate::cluster::client::Client;
use crate::cluster::router::TopicPartition;
use crate::error::{BrokerRef, ClientError, TransactionError};
use crate::producer::accumulator::{Batch, PartitionQueue};
use crate::producer::config::ProducerConfig;
use crate::producer::partitioner::partition_for_key;
use crate::producer::produce::Produced;

/// What the application side and the sender task share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) client: Arc<Client>,
    pub(crate) config: ProducerConfig,
    pub(crate) state: Mutex<State>,
    /// Permits are bytes of `buffer_memory` not in use.
    pub(crate) memory: Semaphore,
    /// Wakes the sender: a batch may be ready, an answer came, or the producer closes.
    pub(crate) wake: Notify,
    /// Told whenever a batch completes (flush waits on it).
    pub(crate) progress: Notify,
    /// With a `transactional_id`: the transaction state (its protocol is `transaction.rs`'s).
    pub(crate) transactions: Option<Transactions>,
}

/// The maps `send` looks a record's topic and partition up in: foldhash's fast hasher (seeded
/// per map), not SipHash, whose hashing was 4% of a 1 KB bulk load's CPU time.
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The producer's mutable state, behind one lock held only for bookkeeping (never across IO).
#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) partitions: FastMap<TopicPartition, PartitionQueue>,
    /// What [`Producer::send`](crate::Producer::send) needs of each topic it was given, from metadata.
    pub(crate) topics: FastMap<String, TopicState>,
    /// Producer id and epoch, once InitProducerId answered (idempotence only).
    pub(crate) producer: Option<(i64, i16)>,
    /// A sequence error or a failed sequenced batch asks for a new epoch before more is sent.
    pub(crate) bump_epoch: bool,
    /// Produce requests in flight per broker node id.
    pub(crate) in_flight: HashMap<i32, usize>,
    /// Where in `partitions` the sender's next look for sendable batches starts: it moves on
    /// by one each time, so partitions left out of a full request are not always the same.
    pub(crate) drain_start: usize,
    /// Flushes waiting: while any is, open batches are sent without lingering.
    pub(crate) flushing: usize,
    /// No more sends; the sender drains and stops.
    pub(crate) closed: bool,
    /// Batches not yet complete (open, queued or in flight).
    pub(crate) unfinished: usize,
    /// A metadata refresh is wanted (unknown leader, leader moved, connection lost).
    pub(crate) refresh_metadata: bool,
    /// An error that stops the producer (no producer id could be had).
    pub(crate) fatal: Option<ClientError>,
    /// A transactional producer's first failed record of the open transaction: the
    /// transaction cannot commit.
    pub(crate) txn_failure: Option<ClientError>,
    /// Partitions of the open transaction that have records but are not added to it yet:
    /// the sender adds them all in one AddPartitionsToTxn before sending their batches.
    pub(crate) txn_pending: BTreeSet<TopicPartition>,
    /// Partitions the coordinator added to the open transaction: only theirs are sent.
    pub(crate) txn_added: HashSet<TopicPartition>,
}

/// One topic as [`Producer::send`](crate::Producer::send) sees it.
#[derive(Debug)]
pub(crate) struct TopicState {
    /// The name every [`TopicPartition`] of the topic shares (no allocation per record).
    pub(super) name: Arc<str>,
    /// The partition count, from metadata.
    pub(super) partitions: i32,
    /// The partition null-key records go to until its batch fills (sticky), in
    /// `0..partitions`.
    pub(super) sticky: i32,
}

impl TopicState {
    pub(super) fn new(name: Arc<str>, partitions: i32) -> Self {
        Self { name, partitions, sticky: 0 }
    }

    /// The partition for a record with `key`: the Java client's key partitioner, or the sticky
    /// partition for a null key.
    pub(super) fn partition_for(&self, key: Option<&[u8]>) -> i32 {
        key.and_then(|key| partition_for_key(key, self.partitions)).unwrap_or(self.sticky)
    }

    /// `filled`'s open batch just became full: null-key records move on to the next partition
    /// if they were going there (round robin, so every partition gets its share of batches).
    pub(super) fn batch_filled(&mut self, filled: i32) {
        if self.sticky == filled {
            self.sticky = (filled + 1) % self.partitions;
        }
    }
}

/// A transactional producer's side of its transactions; one per producer, its calls one at a
/// time (a tokio mutex held across each call's requests).
#[derive(Debug)]
pub(crate) struct Transactions {
    pub(super) id: String,
    pub(super) timeout: Duration,
    pub(super) inner: tokio::sync::Mutex<Txn>,
    /// The open (or next) transaction speaks version 2; changed only by init and begin, while
    /// nothing of a transaction is queued, and read by the sender for the Produce version.
    pub(super) v2: AtomicBool,
    /// On version 2: a batch of the open transaction went out (set by the sender as it takes
    /// it), so the brokers may have added its partition and EndTxn must end the transaction.
    pub(super) batch_sent: AtomicBool,
    /// `abort_transaction` is waiting for the batches in flight: a batch that comes back to
    /// be retried is failed as aborted by the sender (as the Java sender aborts undrained
    /// batches while aborting), not sent again until `delivery_timeout`. Raised only through
    /// [`AbortingFlag`], which lowers it again even when the abort is dropped mid-flush.
    pub(super) aborting: AtomicBool,
}

/// Holds `Transactions::aborting` raised while `abort_transaction` waits for the batches in
/// flight, and lowers it when dropped: at the end of the wait, or when the caller drops the
/// abort's future (a timeout around it). The transaction is then still open, as it was before
/// the abort began, and its later sends go out instead of failing as aborted.
pub(super) struct AbortingFlag<'a>(&'a AtomicBool);

impl<'a> AbortingFlag<'a> {
    pub(super) fn raise(flag: &'a AtomicBool) -> Self {
        flag.store(true, Ordering::Release);
        Self(flag)
    }
}

impl Drop for AbortingFlag<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

#[derive(Debug, Default)]
pub(super) struct Txn {
    pub(super) phase: Phase,
    pub(super) coordinator: Option<BrokerRef>,
    /// Groups whose offsets the open transaction commits.
    pub(super) groups: HashSet<String>,
}

#[derive(Debug, Default)]
pub(super) enum Phase {
    /// `init_transactions` not called (or not succeeded) yet.
    #[default]
    Uninitialized,
    /// No transaction open.
    Ready,
    /// Between begin and commit/abort.
    Open,
    /// The open transaction can only be aborted.
    MustAbort(Box<ClientError>),
    /// Fenced or fatal: the producer can do nothing more.
    Failed(TransactionError),
}

/// Fails a batch; a batch that reached a broker with sequence numbers leaves a gap there, so
/// the epoch is bumped before more is sent (as the Java producer does).
pub(crate) fn fail(shared: &Shared, state: &mut State, batch: Batch, error: ClientError) {
    if batch.sent && batch.has_sequence() {
        state.bump_epoch = true;
    }
    complete(shared, state, batch, Err(error));
}

/// Gives the batch its outcome and its memory back.
pub(super) fn complete(
    shared: &Shared,
    state: &mut State,
    batch: Batch,
    result: Result<Produced, ClientError>,
) {
    let Batch { outcome, charged, .. } = batch;
    if let Err(e) = &result {
        if shared.config.transactional_id.is_some() && state.txn_failure.is_none() {
            state.txn_failure = Some(e.clone());
        }
    }
    outcome.complete(result);
    shared.memory.add_permits(charged);
    state.unfinished = state.unfinished.saturating_sub(1);
    shared.progress.notify_waiters();
}
