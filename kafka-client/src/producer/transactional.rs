//! A transactional [`Producer`]'s calls: `init_transactions`, `begin_transaction`,
//! `send_offsets_to_transaction`, `commit_transaction`, `abort_transaction` (the protocol
//! behind them is `transaction.rs`'s). Their own file, above both `handle.rs` (the producer
//! they are methods of) and `transaction.rs`, so the sender can use the transaction protocol
//! without a circle through the producer.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use crate::error::{ClientError, TransactionError};
use crate::groups::group_metadata::ConsumerGroupMetadata;
use crate::groups::non_member::OffsetToCommit;
use crate::producer::handle::Producer;
use crate::producer::shared::{AbortingFlag, Phase, Transactions, Txn};
use crate::producer::transaction::{
    fail_queued_as_aborted, producer_of, send_in, set_producer, settle, ANY_VERSION,
};
use crate::sync::lock;
use kafka_wire::protocol::messages::{
    AddOffsetsToTxnRequest, EndTxnRequest, InitProducerIdRequest, TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_wire::protocol::names::validate_group;
use kafka_wire::protocol::TaggedFields;

/// The first TxnOffsetCommit version with the member's generation, id and instance id.
const MEMBER_FIELDS_FROM: i16 = 3;

impl Producer {
    fn transactions(&self, call: &str) -> Result<&Transactions, ClientError> {
        self.shared.transactions.as_ref().ok_or_else(|| {
            ClientError::Transaction(TransactionError::InvalidState {
                transactional_id: String::new(),
                message: format!("{call} needs a producer with a transactional_id"),
            })
        })
    }

    /// Gets the producer id and a new epoch for the transactional id from its transaction
    /// coordinator. A producer that used the same id before is fenced from then on, and the
    /// transaction it left open is aborted (or its commit completed) first — the coordinator
    /// answers CONCURRENT_TRANSACTIONS meanwhile, which is waited out. Call once, before the
    /// first transaction.
    pub async fn init_transactions(&self) -> Result<(), ClientError> {
        let txns = self.transactions("init_transactions")?;
        let shared = &self.shared;
        let mut txn = txns.inner.lock().await;
        match &txn.phase {
            Phase::Uninitialized => {}
            Phase::Failed(e) => return Err(ClientError::Transaction(e.clone())),
            _ => return Err(txns.invalid("init_transactions called twice")),
        }
        let timeout_ms = i32::try_from(txns.timeout.as_millis()).unwrap_or(i32::MAX);
        let request = |version: i16| InitProducerIdRequest {
            transactional_id: Some(txns.id.clone()),
            transaction_timeout_ms: timeout_ms,
            producer_id: (version >= 3).then_some(-1),
            producer_epoch: (version >= 3).then_some(-1),
            tagged_fields: TaggedFields::default(),
        };
        let response = match txns
            .coordinator_call(&mut txn, shared, "InitProducerId", ANY_VERSION, request, |r| r.error_code)
            .await
        {
            Ok(r) => r,
            Err(e) => {
                // Nothing is open yet: an "abortable" error here leaves the producer as it was.
                return Err(match e {
                    ClientError::Transaction(TransactionError::Abortable { .. }) => e,
                    other => settle(&mut txn, other),
                });
            }
        };
        set_producer(shared, (response.producer_id, response.producer_epoch));
        txns.choose_version(&txn, &shared.client).await;
        txn.phase = Phase::Ready;
        Ok(())
    }

    /// Opens a transaction: records sent from now on are written in it.
    pub async fn begin_transaction(&self) -> Result<(), ClientError> {
        let txns = self.transactions("begin_transaction")?;
        let mut txn = txns.inner.lock().await;
        match &txn.phase {
            Phase::Ready => {}
            Phase::Open => return Err(txns.invalid("begin_transaction while a transaction is open")),
            _ => return txns.require_open(&txn, "begin_transaction"),
        }
        txn.groups.clear();
        {
            let mut state = lock(&self.shared.state);
            state.txn_failure = None;
            state.txn_pending.clear();
            state.txn_added.clear();
        }
        // Nothing of a transaction is queued now: the protocol may change here (as the Java
        // client's, at each begin).
        txns.choose_version(&txn, &self.shared.client).await;
        txns.batch_sent.store(false, Ordering::Release);
        txn.phase = Phase::Open;
        Ok(())
    }

    /// Commits `offsets` (each the *next* offset to read, with its leader epoch and metadata)
    /// of `group_id` in the open transaction: they become the group's committed offsets if and
    /// only if the transaction commits. The producer is not a member of the group (generation −1, empty member id), so
    /// the group must have no active members committing the same partitions; a consumer in the
    /// group passes its [`ConsumerGroupMetadata`] to
    /// [`send_offsets_to_transaction_of`](Self::send_offsets_to_transaction_of) instead.
    pub async fn send_offsets_to_transaction(
        &self,
        offsets: &[OffsetToCommit],
        group_id: &str,
    ) -> Result<(), ClientError> {
        validate_group(group_id)?;
        self.send_offsets_to_transaction_of(offsets, &ConsumerGroupMetadata::non_member(group_id)).await
    }

    /// Commits `offsets` in the open transaction as the group member `group` describes
    /// ([`Consumer::group_metadata`](crate::Consumer::group_metadata)): the coordinator fences
    /// the commit by the member's generation or epoch (KIP-447, TxnOffsetCommit v3+, Kafka
    /// 2.5+), so a member that lost its partitions in a rebalance cannot commit them — the
    /// transaction then fails and must be aborted. Against an older broker, whose
    /// TxnOffsetCommit has no member fields, a member's commit is refused
    /// ([`ClientError::NotSupported`]) rather than sent unfenced.
    pub async fn send_offsets_to_transaction_of(
        &self,
        offsets: &[OffsetToCommit],
        group: &ConsumerGroupMetadata,
    ) -> Result<(), ClientError> {
        let group_id = group.group_id.as_str();
        let txns = self.transactions("send_offsets_to_transaction")?;
        validate_group(group_id)?;
        let shared = &self.shared;
        let mut txn = txns.inner.lock().await;
        txns.require_open(&txn, "send_offsets_to_transaction")?;
        let (producer_id, producer_epoch) = producer_of(shared, &txns.id)?;
        let version = txns.version();
        if !version.client_adds() {
            // The group coordinator adds the group with the TxnOffsetCommit (v5+) below; if
            // that goes out at all, EndTxn must end the transaction.
            txn.groups.insert(group_id.to_owned());
        } else if !txn.groups.contains(group_id) {
            let request = |_: i16| AddOffsetsToTxnRequest {
                transactional_id: txns.id.clone(),
                producer_id,
                producer_epoch,
                group_id: group_id.to_owned(),
                tagged_fields: TaggedFields::default(),
            };
            let what = format!("adding group `{group_id}` to the transaction");
            if let Err(e) =
                txns.coordinator_call(&mut txn, shared, &what, ANY_VERSION, request, |r| r.error_code).await
            {
                return Err(settle(&mut txn, e));
            }
            txn.groups.insert(group_id.to_owned());
        }
        let mut by_topic: BTreeMap<&str, Vec<TxnOffsetCommitRequestPartition>> = BTreeMap::new();
        for o in offsets {
            by_topic.entry(&o.tp.topic).or_default().push(TxnOffsetCommitRequestPartition {
                partition_index: o.tp.partition,
                committed_offset: o.offset,
                committed_leader_epoch: o.leader_epoch,
                committed_metadata: Some(o.metadata.clone().unwrap_or_default()),
                tagged_fields: TaggedFields::default(),
            });
        }
        let topics: Vec<TxnOffsetCommitRequestTopic> = by_topic
            .into_iter()
            .map(|(name, partitions)| TxnOffsetCommitRequestTopic {
                name: name.to_owned(),
                partitions,
                tagged_fields: TaggedFields::default(),
            })
            .collect();
        let client = &shared.client;
        // A member's commit goes only at v3+, where the coordinator can fence it (KIP-447).
        let allowed = version.txn_offset_commit();
        let allowed = if group.is_member() {
            kafka_wire::protocol::VersionRange::new(allowed.min.max(MEMBER_FIELDS_FROM), allowed.max)
        } else {
            allowed
        };
        let request = |version: i16| TxnOffsetCommitRequest {
            transactional_id: txns.id.clone(),
            group_id: group_id.to_owned(),
            producer_id,
            producer_epoch,
            generation_id: (version >= 3).then_some(group.generation_id),
            member_id: (version >= 3).then(|| group.member_id.clone()),
            group_instance_id: group.group_instance_id.clone().filter(|_| version >= 3),
            topics: topics.clone(),
            tagged_fields: TaggedFields::default(),
        };
        let committed = client
            .with_coordinator(group_id, txns.timeout, |broker| async move {
                let response = send_in(client, &broker, allowed, &request).await?;
                let failed = response
                    .topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(move |p| (t, p)))
                    .find(|(_, p)| !p.error_code.is_ok());
                match failed {
                    None => Ok(()),
                    Some((t, p)) => Err(ClientError::Kafka {
                        broker,
                        api: kafka_wire::protocol::messages::txn_offset_commit::SPEC.key,
                        code: p.error_code,
                        context: format!("{}-{} of group `{group_id}`", t.name, p.partition_index),
                    }),
                }
            })
            .await;
        match committed {
            Ok(()) => Ok(()),
            Err(e) => {
                let code = match &e {
                    ClientError::Kafka { code, .. } => Some(*code),
                    _ => None,
                };
                let error = match code {
                    Some(code) => txns.classify(&mut txn, shared, code, e.clone()).unwrap_or(e),
                    None => e,
                };
                Err(settle(&mut txn, error))
            }
        }
    }

    /// Flushes every record of the open transaction, then commits it (EndTxn): its records
    /// become visible to read_committed consumers and its offsets the groups' committed
    /// offsets. A record that failed makes the commit fail with an abortable error (or
    /// [`TransactionError::Fenced`]); abort then.
    pub async fn commit_transaction(&self) -> Result<(), ClientError> {
        let txns = self.transactions("commit_transaction")?;
        let shared = &self.shared;
        let mut txn = txns.inner.lock().await;
        txns.require_open(&txn, "commit_transaction")?;
        // The sender cannot add partitions while this call holds the transaction.
        txns.add_pending(&mut txn, shared).await;
        self.flush().await;
        let failure = lock(&shared.state).txn_failure.take();
        if let Some(e) = failure {
            let error = txns.sorted_failure(&mut txn, shared, e);
            return Err(settle(&mut txn, error));
        }
        self.end_transaction(txns, &mut txn, true).await
    }

    /// Aborts the open transaction: records not yet sent are dropped (their sends fail),
    /// those in flight are waited for, then EndTxn marks everything written as aborted, and
    /// the epoch is bumped if a sequence error asked for it. The producer can begin again.
    pub async fn abort_transaction(&self) -> Result<(), ClientError> {
        let txns = self.transactions("abort_transaction")?;
        let shared = &self.shared;
        let mut txn = txns.inner.lock().await;
        match &txn.phase {
            Phase::Open | Phase::MustAbort(_) => {}
            Phase::Failed(e) => return Err(ClientError::Transaction(e.clone())),
            Phase::Uninitialized | Phase::Ready => {
                return Err(txns.invalid("abort_transaction outside a transaction"))
            }
        }
        let aborting = AbortingFlag::raise(&txns.aborting);
        {
            let mut state = lock(&shared.state);
            fail_queued_as_aborted(shared, &mut state, &txns.id);
            state.txn_pending.clear();
        }
        self.flush().await;
        drop(aborting);
        lock(&shared.state).txn_failure = None;
        self.end_transaction(txns, &mut txn, false).await?;
        let bump = {
            let state = lock(&shared.state);
            state.bump_epoch.then_some(state.producer).flatten()
        };
        if let Some((id, epoch)) = bump {
            let timeout_ms = i32::try_from(txns.timeout.as_millis()).unwrap_or(i32::MAX);
            let request = |version: i16| InitProducerIdRequest {
                transactional_id: Some(txns.id.clone()),
                transaction_timeout_ms: timeout_ms,
                producer_id: (version >= 3).then_some(id),
                producer_epoch: (version >= 3).then_some(epoch),
                tagged_fields: TaggedFields::default(),
            };
            match txns
                .coordinator_call(&mut txn, shared, "bumping the epoch", ANY_VERSION, request, |r| {
                    r.error_code
                })
                .await
            {
                Ok(r) => set_producer(shared, (r.producer_id, r.producer_epoch)),
                Err(e) => return Err(settle(&mut txn, e)),
            }
        }
        Ok(())
    }

    /// EndTxn for the open transaction (nothing to send when it wrote nothing: on version 1
    /// when no partition was added, on version 2 when no batch went out). On version 2 the
    /// answer's producer id and epoch (the epoch bumped, or a new id once it ran out) are the
    /// producer's from then on.
    async fn end_transaction(
        &self,
        txns: &Transactions,
        txn: &mut Txn,
        commit: bool,
    ) -> Result<(), ClientError> {
        let shared = &self.shared;
        let version = txns.version();
        let wrote = if version.client_adds() {
            !lock(&shared.state).txn_added.is_empty()
        } else {
            txns.batch_sent.load(Ordering::Acquire)
        };
        if wrote || !txn.groups.is_empty() {
            let (producer_id, producer_epoch) = producer_of(shared, &txns.id)?;
            let request = |_: i16| EndTxnRequest {
                transactional_id: txns.id.clone(),
                producer_id,
                producer_epoch,
                committed: commit,
                tagged_fields: TaggedFields::default(),
            };
            let what = if commit { "committing the transaction" } else { "aborting the transaction" };
            let response = match txns
                .coordinator_call(txn, shared, what, version.end_txn(), request, |r| r.error_code)
                .await
            {
                Ok(response) => response,
                Err(e) => return Err(settle(txn, e)),
            };
            if let (Some(id), Some(epoch)) = (response.producer_id, response.producer_epoch) {
                // v5+: −1 from a coordinator that did not bump (the transaction was version 1).
                if id >= 0 && epoch >= 0 {
                    set_producer(shared, (id, epoch));
                }
            }
        }
        txns.batch_sent.store(false, Ordering::Release);
        {
            let mut state = lock(&shared.state);
            state.txn_added.clear();
            state.txn_pending.clear();
        }
        txn.groups.clear();
        txn.phase = Phase::Ready;
        Ok(())
    }

    /// The transactional id this producer was made with.
    pub fn transactional_id(&self) -> Option<&str> {
        self.shared.config.transactional_id.as_deref()
    }
}
