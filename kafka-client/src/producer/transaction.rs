//! Transactions (KIP-98) on a [`Producer`](crate::Producer) made with a `transactional_id`:
//! [`init_transactions`](crate::Producer::init_transactions) (the transaction coordinator gives the
//! producer id and a new epoch, fencing any older producer with the same id and aborting what
//! it left open), [`begin_transaction`](crate::Producer::begin_transaction), sends,
//! [`send_offsets_to_transaction`] (TxnOffsetCommit to the group's coordinator as a
//! non-member: generation −1, empty member id), [`commit_transaction`](crate::Producer::commit_transaction)
//! and [`abort_transaction`](crate::Producer::abort_transaction) (flush, then EndTxn).
//!
//! Each transaction speaks the [`TxnVersion`] its coordinator allows, chosen at init and at
//! every begin. On version 1 the sender adds the partitions new to the transaction before
//! their first batch (all those waiting in one AddPartitionsToTxn), `send_offsets` adds the
//! group with AddOffsetsToTxn, and the epoch stays. On version 2 (KIP-890, Kafka 4.0+ with
//! `transaction.version` 2) neither is sent — Produce v12+ and TxnOffsetCommit v5+ make the
//! brokers add them — and EndTxn v5+ answers with a new epoch (or a new producer id once the
//! epoch runs out), which the producer takes: a late write of the finished transaction, with
//! the old epoch, is refused.
//!
//! Errors are [`TransactionError`]s inside [`ClientError::Transaction`]: fenced, abortable (call
//! `abort_transaction` and go on) or fatal, decided per error code by [`txn_recovery`];
//! CONCURRENT_TRANSACTIONS and a moving coordinator are retried until `transaction_timeout`.
//!
//! This file is the protocol with the transaction coordinator and the sender's hooks into it;
//! the state it works on is in `shared.rs` (held by [`Shared`]), the application's calls on a
//! [`Producer`](crate::Producer) in `transactional.rs`.
//!
//! [`send_offsets_to_transaction`]: crate::Producer::send_offsets_to_transaction

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::cluster::client::{retire_on_decode_error, Client};
use crate::cluster::retry::Backoff;
use crate::cluster::router::TopicPartition;
use crate::deadline::deadline_after;
use crate::error::TransactionError;
use crate::error::{BrokerRef, ClientError};
use crate::net::negotiate::BrokerVersions;
use crate::producer::config::ProducerConfig;
use crate::producer::shared::{fail, Phase, Shared, Transactions, Txn};
use crate::producer::transaction_error::{txn_recovery, TxnRecovery};
use crate::producer::transaction_version::TxnVersion;
use crate::sync::lock;
use kafka_wire::protocol::messages::find_coordinator::KEY_TYPE_TRANSACTION;
use kafka_wire::protocol::messages::produce;
use kafka_wire::protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnTopic, ApiVersionsRequest,
};
use kafka_wire::protocol::{ApiSpec, Request, VersionRange};
use kafka_wire::protocol::{ErrorCode, TaggedFields};

/// Every version kwire speaks of a request (no narrowing).
pub(super) const ANY_VERSION: VersionRange = VersionRange::new(0, i16::MAX);

impl Transactions {
    /// The transaction side of a producer made with `config`, if it has a transactional id.
    pub(crate) fn from_config(config: &ProducerConfig) -> Option<Self> {
        let id = config.transactional_id.clone()?;
        Some(Self {
            id,
            timeout: config.transaction_timeout,
            inner: tokio::sync::Mutex::new(Txn::default()),
            v2: AtomicBool::new(false),
            batch_sent: AtomicBool::new(false),
            aborting: AtomicBool::new(false),
        })
    }

    /// The protocol of the open (or next) transaction.
    pub(crate) fn version(&self) -> TxnVersion {
        if self.v2.load(Ordering::Acquire) {
            TxnVersion::V2
        } else {
            TxnVersion::V1
        }
    }

    /// Chooses the protocol of the next transaction from what the coordinator says in
    /// ApiVersions; keeps the current one when the coordinator is not known or not reachable
    /// (the calls that need it find it and report why they cannot). A coordinator that speaks
    /// the version 2 requests is asked again each time: `transaction.version` can be changed
    /// (FeatureCommand upgrade / downgrade) while a connection stays open, and the level the
    /// connection was opened with would keep a producer on version 2 after a downgrade to 1
    /// (Kafka 4.1.1 still accepted such a transaction, but the cluster asked for version 1).
    /// One round trip per begin, only to Kafka 4.0+ coordinators.
    pub(super) async fn choose_version(&self, txn: &Txn, client: &Client) {
        let Some(coordinator) = txn.coordinator.clone() else { return };
        let Ok(conn) = client.connection(&coordinator).await else { return };
        let version = if TxnVersion::speaks_v2_requests(&conn.versions) {
            let request = ApiVersionsRequest {
                client_software_name: Some("kwire".to_owned()),
                client_software_version: Some(env!("CARGO_PKG_VERSION").to_owned()),
                ..Default::default()
            };
            match send_in(client, &coordinator, ANY_VERSION, &|_: i16| request.clone()).await {
                Ok(response) if response.error_code.is_ok() => {
                    TxnVersion::for_coordinator(&BrokerVersions::from_response(&response))
                }
                // Not answered now: the next transactional call finds out why.
                _ => return,
            }
        } else {
            TxnVersion::V1
        };
        self.v2.store(version == TxnVersion::V2, Ordering::Release);
    }

    pub(super) fn invalid(&self, message: impl Into<String>) -> ClientError {
        ClientError::Transaction(TransactionError::InvalidState {
            transactional_id: self.id.clone(),
            message: message.into(),
        })
    }

    /// What a call may do in `phase`: `Ok` when the transaction is open.
    pub(super) fn require_open(&self, txn: &Txn, call: &str) -> Result<(), ClientError> {
        match &txn.phase {
            Phase::Open => Ok(()),
            Phase::MustAbort(e) => Err(ClientError::Transaction(TransactionError::Abortable {
                transactional_id: self.id.clone(),
                source: e.clone(),
            })),
            Phase::Failed(e) => Err(ClientError::Transaction(e.clone())),
            Phase::Uninitialized => Err(self.invalid(format!("{call} before init_transactions"))),
            Phase::Ready => {
                Err(self.invalid(format!("{call} outside a transaction: call begin_transaction first")))
            }
        }
    }

    /// Sorts a Kafka error code of a transactional request (not NONE) into a
    /// [`TransactionError`]; `Err` when the request should be retried (the coordinator
    /// forgotten first when it moved), with the error to report if the retries run out.
    pub(super) fn classify(
        &self,
        txn: &mut Txn,
        shared: &Shared,
        code: ErrorCode,
        error: ClientError,
    ) -> Result<ClientError, ClientError> {
        let id = self.id.clone();
        match txn_recovery(code) {
            TxnRecovery::Retry => Err(error),
            TxnRecovery::Refind => {
                txn.coordinator = None;
                Err(error)
            }
            TxnRecovery::Fenced => {
                Ok(ClientError::Transaction(TransactionError::Fenced { transactional_id: id, code }))
            }
            TxnRecovery::Abortable { bump_epoch } => {
                if bump_epoch {
                    lock(&shared.state).bump_epoch = true;
                }
                Ok(ClientError::Transaction(TransactionError::Abortable {
                    transactional_id: id,
                    source: Box::new(error),
                }))
            }
            TxnRecovery::Fatal => Ok(ClientError::Transaction(TransactionError::Fatal {
                transactional_id: id,
                source: Box::new(error),
            })),
        }
    }

    /// Sends a request built by `build` to the transaction coordinator (found, and found again
    /// when it moves) at a version within `allowed`, until its error code (`code_of`) is
    /// NONE or calls for something other than a retry, or `transaction_timeout` passes.
    pub(super) async fn coordinator_call<R, B, C>(
        &self,
        txn: &mut Txn,
        shared: &Shared,
        what: &str,
        allowed: VersionRange,
        build: B,
        code_of: C,
    ) -> Result<R::Response, ClientError>
    where
        R: Request + std::fmt::Debug,
        R::Response: std::fmt::Debug,
        B: Fn(i16) -> R,
        C: Fn(&R::Response) -> ErrorCode,
    {
        let client = &shared.client;
        let deadline = deadline_after(self.timeout);
        let mut backoff = Backoff::new(Duration::from_millis(20), Duration::from_secs(1), deadline);
        let subject = format!("transactional id `{}`", self.id);
        loop {
            let attempt = async {
                let broker = match txn.coordinator.clone() {
                    Some(b) => b,
                    None => {
                        let found = client
                            .find_coordinator_uncached(&self.id, KEY_TYPE_TRANSACTION, &subject)
                            .await?;
                        txn.coordinator = Some(found.clone());
                        found
                    }
                };
                let response = send_in(client, &broker, allowed, &build).await?;
                Ok::<_, ClientError>((broker, response))
            }
            .await;
            let retry_with = match attempt {
                Ok((broker, response)) => {
                    let code = code_of(&response);
                    if code.is_ok() {
                        return Ok(response);
                    }
                    let error =
                        ClientError::Kafka { broker, api: R::SPEC.key, code, context: subject.clone() };
                    match self.classify(txn, shared, code, error) {
                        Ok(settled) => return Err(settled),
                        Err(retry) => retry,
                    }
                }
                Err(ClientError::Kafka { broker, api, code, context }) => {
                    // FindCoordinator's own answer (COORDINATOR_NOT_AVAILABLE while the
                    // transaction log is created, ...).
                    let error = ClientError::Kafka { broker, api, code, context };
                    if code.is_retriable() {
                        txn.coordinator = None;
                        error
                    } else {
                        return Err(ClientError::Transaction(TransactionError::Fatal {
                            transactional_id: self.id.clone(),
                            source: Box::new(error),
                        }));
                    }
                }
                Err(e) if e.is_retriable() => {
                    txn.coordinator = None;
                    e
                }
                Err(e) if e.is_unsupported() => {
                    return Err(ClientError::Transaction(TransactionError::Fatal {
                        transactional_id: self.id.clone(),
                        source: Box::new(e),
                    }))
                }
                Err(e) => return Err(e),
            };
            match backoff.next_wait() {
                Some(wait) => tokio::time::sleep(wait).await,
                None => {
                    return Err(ClientError::DeadlineExceeded {
                        what: format!("{what} for {subject}"),
                        last_error: Box::new(retry_with),
                    })
                }
            }
        }
    }

    /// Notes `tp` as written in the open transaction (the sender adds it before its first
    /// batch goes out); fails outside a transaction, and once a record of the transaction
    /// failed.
    pub(crate) async fn note_partition(
        &self,
        shared: &Shared,
        tp: &TopicPartition,
    ) -> Result<(), ClientError> {
        let mut txn = self.inner.lock().await;
        self.require_open(&txn, "send")?;
        let mut state = lock(&shared.state);
        if let Some(e) = state.txn_failure.clone() {
            drop(state);
            let error = self.sorted_failure(&mut txn, shared, e);
            return Err(settle(&mut txn, error));
        }
        if !self.version().client_adds() {
            // The leader adds it with the Produce (v12+) that carries its first batch.
            if !state.txn_added.contains(tp) {
                state.txn_added.insert(tp.clone());
            }
        } else if !state.txn_added.contains(tp) && !state.txn_pending.contains(tp) {
            state.txn_pending.insert(tp.clone());
        }
        Ok(())
    }

    /// Adds every partition waiting for it to the open transaction in one AddPartitionsToTxn
    /// (v3 and below: one transaction per request; v4+ is for brokers only). Partitions the
    /// coordinator refused (each with its own error code, kept) get their queued batches
    /// failed, and the transaction must be aborted; the others are added and sent.
    pub(super) async fn add_pending(&self, txn: &mut Txn, shared: &Shared) {
        if !matches!(txn.phase, Phase::Open) {
            return;
        }
        let pending: Vec<TopicPartition> = lock(&shared.state).txn_pending.iter().cloned().collect();
        if pending.is_empty() {
            return;
        }
        let producer = match producer_of(shared, &self.id) {
            Ok(p) => p,
            Err(e) => return fail_pending(shared, &pending, &BTreeMap::new(), &e),
        };
        let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for tp in &pending {
            by_topic.entry(&tp.topic).or_default().push(tp.partition);
        }
        let topics: Vec<AddPartitionsToTxnTopic> = by_topic
            .into_iter()
            .map(|(name, partitions)| AddPartitionsToTxnTopic {
                name: name.to_owned(),
                partitions,
                tagged_fields: TaggedFields::default(),
            })
            .collect();
        let request = |_: i16| AddPartitionsToTxnRequest {
            transactional_id: self.id.clone(),
            producer_id: producer.0,
            producer_epoch: producer.1,
            topics: topics.clone(),
            tagged_fields: TaggedFields::default(),
        };
        // Each partition's code in the last answer, for the failures to name their own.
        let codes: std::sync::Mutex<BTreeMap<TopicPartition, ErrorCode>> =
            std::sync::Mutex::new(BTreeMap::new());
        let what = format!("adding {} partition(s) to the transaction", pending.len());
        let result = self
            .coordinator_call(txn, shared, &what, ANY_VERSION, request, |r| {
                let mut seen = lock(&codes);
                seen.clear();
                for t in &r.results_by_topic {
                    for p in &t.results_by_partition {
                        seen.insert(
                            TopicPartition::new(t.name.as_str(), p.partition_index),
                            p.partition_error_code,
                        );
                    }
                }
                // A partition's own error first; OPERATION_NOT_ATTEMPTED only says another
                // partition of the request failed.
                let failed: Vec<ErrorCode> = seen.values().copied().filter(|c| !c.is_ok()).collect();
                failed
                    .iter()
                    .copied()
                    .find(|c| *c != ErrorCode::OPERATION_NOT_ATTEMPTED)
                    .or_else(|| failed.first().copied())
                    .unwrap_or(ErrorCode::NONE)
            })
            .await;
        let codes = std::mem::take(&mut *lock(&codes));
        match result {
            Ok(_) => {
                let mut state = lock(&shared.state);
                for tp in pending {
                    state.txn_pending.remove(&tp);
                    state.txn_added.insert(tp);
                }
            }
            Err(e) => {
                let error = settle(txn, e);
                fail_pending(shared, &pending, &codes, &error);
            }
        }
        shared.wake.notify_one();
    }

    /// A record of the transaction failed: fenced when the broker said so, else abortable.
    pub(super) fn sorted_failure(&self, txn: &mut Txn, shared: &Shared, failure: ClientError) -> ClientError {
        let code = match &failure {
            ClientError::Kafka { code, .. } => Some(*code),
            ClientError::DeadlineExceeded { last_error, .. } => match last_error.as_ref() {
                ClientError::Kafka { code, .. } => Some(*code),
                _ => None,
            },
            _ => None,
        };
        match code.map(txn_recovery) {
            Some(TxnRecovery::Fenced | TxnRecovery::Fatal) => {
                self.classify(txn, shared, code.unwrap_or_default(), failure.clone()).unwrap_or(failure)
            }
            _ => ClientError::Transaction(TransactionError::Abortable {
                transactional_id: self.id.clone(),
                source: Box::new(failure),
            }),
        }
    }
}

/// Fails the queued batches of the `pending` partitions the coordinator did not add: each with
/// its own code from the answer (`codes`) when it has one, else with `error`. A partition the
/// answer says was added (NONE) counts as added.
fn fail_pending(
    shared: &Shared,
    pending: &[TopicPartition],
    codes: &BTreeMap<TopicPartition, ErrorCode>,
    error: &ClientError,
) {
    let mut state = lock(&shared.state);
    for tp in pending {
        state.txn_pending.remove(tp);
        let code = codes.get(tp).copied();
        if code == Some(ErrorCode::NONE) {
            state.txn_added.insert(tp.clone());
            continue;
        }
        let own = match (code, error) {
            (
                Some(code),
                ClientError::Transaction(TransactionError::Abortable { transactional_id, source }),
            ) if code != ErrorCode::OPERATION_NOT_ATTEMPTED => {
                let broker = match source.as_ref() {
                    ClientError::Kafka { broker, .. } => broker.clone(),
                    _ => BrokerRef { node_id: None, addr: String::new() },
                };
                ClientError::Transaction(TransactionError::Abortable {
                    transactional_id: transactional_id.clone(),
                    source: Box::new(ClientError::Kafka {
                        broker,
                        api: kafka_wire::protocol::messages::add_partitions_to_txn::SPEC.key,
                        code,
                        context: tp.to_string(),
                    }),
                })
            }
            _ => error.clone(),
        };
        let batches =
            state.partitions.get_mut(tp).map(crate::producer::accumulator::PartitionQueue::take_all);
        for batch in batches.into_iter().flatten() {
            fail(shared, &mut state, batch, own.clone());
        }
    }
}

/// Turns a failed transactional call's error into the producer's next phase; returns the error.
pub(super) fn settle(txn: &mut Txn, error: ClientError) -> ClientError {
    let ClientError::Transaction(e) = &error else { return error };
    match e {
        TransactionError::Abortable { source, .. } => txn.phase = Phase::MustAbort(source.clone()),
        TransactionError::Fenced { .. } | TransactionError::Fatal { .. } => {
            txn.phase = Phase::Failed(e.clone());
        }
        TransactionError::InvalidState { .. } | TransactionError::Aborted { .. } => {}
    }
    error
}

/// The producer id and epoch `init_transactions` got.
pub(super) fn producer_of(shared: &Shared, id: &str) -> Result<(i64, i16), ClientError> {
    lock(&shared.state).producer.ok_or_else(|| {
        ClientError::Transaction(TransactionError::InvalidState {
            transactional_id: id.to_owned(),
            message: "no producer id: call init_transactions first".into(),
        })
    })
}

/// Sends `build(version)` to `broker` at the highest version both know within `allowed`
/// (an error naming the ranges when there is none).
pub(super) async fn send_in<R, B>(
    client: &Client,
    broker: &BrokerRef,
    allowed: VersionRange,
    build: &B,
) -> Result<R::Response, ClientError>
where
    R: Request + std::fmt::Debug,
    R::Response: std::fmt::Debug,
    B: Fn(i16) -> R,
{
    let conn = client.connection(broker).await?;
    let version = conn.versions.choose(&within(R::SPEC, allowed), broker)?;
    let response = client.round_trip(&conn.connection, &build(version), version).await;
    retire_on_decode_error(&conn, response)
}

/// `spec` with its versions narrowed to `allowed` (an empty range when they do not meet).
fn within(spec: ApiSpec, allowed: VersionRange) -> ApiSpec {
    let ours = spec.versions;
    ApiSpec { versions: VersionRange::new(ours.min.max(allowed.min), ours.max.min(allowed.max)), ..spec }
}

/// Produce as the producer may send it: a transactional producer's at the versions of its
/// transaction's protocol (v12+ on version 2, where the leader adds the partition; at most v11
/// on version 1), anyone else's at every version kwire speaks.
pub(crate) fn produce_spec(shared: &Shared) -> ApiSpec {
    match &shared.transactions {
        Some(txns) => within(produce::SPEC, txns.version().produce()),
        None => produce::SPEC,
    }
}

/// The sender took a batch of the open transaction to send it.
pub(crate) fn note_batch_sent(shared: &Shared) {
    if let Some(txns) = &shared.transactions {
        txns.batch_sent.store(true, Ordering::Release);
    }
}

/// The sender's turn at the partitions waiting to be added to the open transaction: skipped
/// (`false`, try again soon) while an application call holds the transaction — commit adds
/// them itself before it flushes.
pub(crate) async fn sender_add_pending(shared: &Shared) -> bool {
    let Some(txns) = &shared.transactions else { return true };
    if lock(&shared.state).txn_pending.is_empty() {
        return true;
    }
    let Ok(mut txn) = txns.inner.try_lock() else { return false };
    txns.add_pending(&mut txn, shared).await;
    true
}

/// The sender's gate for a transactional producer: batches go out only with the producer id
/// from `init_transactions`. After a sequence error (which asks for a new epoch) nothing more
/// of the transaction can be written: its queued batches fail, and the epoch is bumped by
/// `abort_transaction`.
pub(crate) fn sender_may_send(shared: &Shared) -> bool {
    let mut state = lock(&shared.state);
    if state.producer.is_none() {
        // Nothing can be queued before init_transactions (sends fail outside a transaction).
        return state.unfinished == 0;
    }
    if shared.transactions.as_ref().is_some_and(|t| t.aborting.load(Ordering::Acquire)) {
        // Batches back from a failed attempt while the abort waits for those in flight.
        let id = shared.config.transactional_id.clone().unwrap_or_default();
        fail_queued_as_aborted(shared, &mut state, &id);
        return true;
    }
    if !state.bump_epoch {
        return true;
    }
    let queued: Vec<_> = state
        .partitions
        .values_mut()
        .flat_map(crate::producer::accumulator::PartitionQueue::take_all)
        .collect();
    for batch in queued {
        let error = ClientError::InvalidArgument {
            message: "the transaction hit a sequence error and must be aborted".into(),
        };
        fail(shared, &mut state, batch, error);
    }
    false
}

/// Fails every queued batch of the transaction being aborted with [`TransactionError::Aborted`].
pub(super) fn fail_queued_as_aborted(
    shared: &Shared,
    state: &mut crate::producer::shared::State,
    transactional_id: &str,
) {
    let queued: Vec<_> = state
        .partitions
        .values_mut()
        .flat_map(crate::producer::accumulator::PartitionQueue::take_all)
        .collect();
    for batch in queued {
        let error = ClientError::Transaction(TransactionError::Aborted {
            transactional_id: transactional_id.to_owned(),
        });
        fail(shared, state, batch, error);
    }
}

/// Takes a producer id and epoch from the coordinator; sequences start again at 0.
pub(super) fn set_producer(shared: &Shared, producer: (i64, i16)) {
    let mut state = lock(&shared.state);
    for queue in state.partitions.values_mut() {
        queue.reset_sequences();
    }
    state.producer = Some(producer);
    state.bump_epoch = false;
    drop(state);
    shared.wake.notify_one();
}
