//! The one decision, per Kafka error code of a transactional request, of what it calls for:
//! which [`TransactionError`](crate::TransactionError) it becomes (fenced, abortable, fatal) or
//! whether to retry. The error type itself lives in `error.rs` with [`ClientError`](crate::ClientError),
//! which it holds and which holds it.

use kafka_wire::protocol::ErrorCode;

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
