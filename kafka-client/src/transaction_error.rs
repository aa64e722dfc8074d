//! What went wrong with a transaction, typed by what the application must do next — as the
//! Java producer sorts it: a fenced producer is done for good, an abortable error needs
//! `abort_transaction` and then the producer goes on, a fatal error ends the producer. And
//! the one decision, per Kafka error code of a transactional request, of which it is.

use std::fmt;

use super::error::ClientError;
use kafka_wire::protocol::ErrorCode;

/// A transactional producer's error ([`ClientError::Transaction`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TransactionError {
    /// A newer producer initialised the same transactional id (PRODUCER_FENCED, or
    /// INVALID_PRODUCER_EPOCH from brokers before Kafka 2.7): this one can neither commit nor
    /// abort again. Close it; the newer producer has aborted what this one left open.
    Fenced {
        /// The transactional id both producers use.
        transactional_id: String,
        /// The error code the broker answered with.
        code: ErrorCode,
    },
    /// The open transaction cannot commit (a record failed, a partition or group was refused,
    /// ...): call `abort_transaction`, then begin a new one.
    Abortable {
        /// The transactional id.
        transactional_id: String,
        /// Why.
        source: Box<ClientError>,
    },
    /// The producer cannot go on (an authorization failure on the transactional id, a state
    /// the coordinator refuses, a broker without transactions): close it.
    Fatal {
        /// The transactional id.
        transactional_id: String,
        /// Why.
        source: Box<ClientError>,
    },
    /// The record's transaction was aborted (`abort_transaction`) before the record left the
    /// producer: it was never written. The delivery result of every such record.
    Aborted {
        /// The transactional id.
        transactional_id: String,
    },
    /// The call does not fit the producer's state (commit without begin, send outside a
    /// transaction, begin twice, a producer without a transactional id, ...). Nothing was sent.
    InvalidState {
        /// The transactional id, empty for a producer without one.
        transactional_id: String,
        /// What was called and why it cannot be now.
        message: String,
    },
}

impl TransactionError {
    /// Whether the producer can go on after `abort_transaction`.
    pub fn is_abortable(&self) -> bool {
        matches!(self, Self::Abortable { .. })
    }

    /// Whether a newer producer with the same transactional id fenced this one.
    pub fn is_fenced(&self) -> bool {
        matches!(self, Self::Fenced { .. })
    }
}

impl fmt::Display for TransactionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fenced { transactional_id, code } => write!(
                f,
                "transactional id `{transactional_id}`: this producer was fenced by a newer one with the same id ({code}); close it"
            ),
            Self::Abortable { transactional_id, source } => {
                write!(f, "transactional id `{transactional_id}`: the transaction must be aborted: {source}")
            }
            Self::Fatal { transactional_id, source } => {
                write!(f, "transactional id `{transactional_id}`: the producer cannot continue: {source}")
            }
            Self::Aborted { transactional_id } => write!(
                f,
                "transactional id `{transactional_id}`: the transaction was aborted before this record was sent"
            ),
            Self::InvalidState { transactional_id, message } if transactional_id.is_empty() => f.write_str(message),
            Self::InvalidState { transactional_id, message } => {
                write!(f, "transactional id `{transactional_id}`: {message}")
            }
        }
    }
}

impl std::error::Error for TransactionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Abortable { source, .. } | Self::Fatal { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

/// What a transactional request's error code calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TxnRecovery {
    /// Send the same request again after a pause (CONCURRENT_TRANSACTIONS: the previous
    /// transaction's markers are still being written; a coordinator loading).
    Retry,
    /// Find the coordinator again, then retry.
    Refind,
    /// A newer producer owns the transactional id.
    Fenced,
    /// The transaction must be aborted; `bump_epoch` when the broker lost the producer's
    /// state, so the abort is followed by a new epoch (KIP-360).
    Abortable { bump_epoch: bool },
    /// The producer must stop.
    Fatal,
}

/// The one decision for an error code of InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
/// TxnOffsetCommit, EndTxn or a transactional Produce. `code` is not NONE.
pub(crate) fn txn_recovery(code: ErrorCode) -> TxnRecovery {
    match code {
        ErrorCode::PRODUCER_FENCED | ErrorCode::INVALID_PRODUCER_EPOCH => TxnRecovery::Fenced,
        ErrorCode::CONCURRENT_TRANSACTIONS
        | ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
        | ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        | ErrorCode::REQUEST_TIMED_OUT => TxnRecovery::Retry,
        ErrorCode::NOT_COORDINATOR | ErrorCode::COORDINATOR_NOT_AVAILABLE => TxnRecovery::Refind,
        ErrorCode::UNKNOWN_PRODUCER_ID | ErrorCode::INVALID_PRODUCER_ID_MAPPING => {
            TxnRecovery::Abortable { bump_epoch: true }
        }
        ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        | ErrorCode::CLUSTER_AUTHORIZATION_FAILED
        | ErrorCode::INVALID_TXN_STATE
        | ErrorCode::TRANSACTION_COORDINATOR_FENCED
        | ErrorCode::UNSUPPORTED_VERSION
        | ErrorCode::UNSUPPORTED_FOR_MESSAGE_FORMAT
        | ErrorCode::INVALID_TRANSACTION_TIMEOUT => TxnRecovery::Fatal,
        // TOPIC/GROUP_AUTHORIZATION_FAILED, OPERATION_NOT_ATTEMPTED, TRANSACTION_ABORTABLE, a
        // group's UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION, a record refused, ...: this
        // transaction is lost, the producer is not.
        _ => TxnRecovery::Abortable { bump_epoch: false },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_producer_fences_whichever_code_the_broker_uses() {
        assert_eq!(txn_recovery(ErrorCode::PRODUCER_FENCED), TxnRecovery::Fenced);
        assert_eq!(txn_recovery(ErrorCode::INVALID_PRODUCER_EPOCH), TxnRecovery::Fenced);
    }

    #[test]
    fn a_transaction_still_completing_is_waited_out() {
        assert_eq!(txn_recovery(ErrorCode::CONCURRENT_TRANSACTIONS), TxnRecovery::Retry);
        assert_eq!(txn_recovery(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS), TxnRecovery::Retry);
        assert_eq!(txn_recovery(ErrorCode::NOT_COORDINATOR), TxnRecovery::Refind);
    }

    #[test]
    fn abortable_and_fatal_errors_are_kept_apart() {
        assert_eq!(
            txn_recovery(ErrorCode::TOPIC_AUTHORIZATION_FAILED),
            TxnRecovery::Abortable { bump_epoch: false }
        );
        assert_eq!(
            txn_recovery(ErrorCode::TRANSACTION_ABORTABLE),
            TxnRecovery::Abortable { bump_epoch: false }
        );
        assert_eq!(txn_recovery(ErrorCode::UNKNOWN_PRODUCER_ID), TxnRecovery::Abortable { bump_epoch: true });
        assert_eq!(txn_recovery(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED), TxnRecovery::Fatal);
        assert_eq!(txn_recovery(ErrorCode::INVALID_TXN_STATE), TxnRecovery::Fatal);
    }
}
