//! Backoff and deadlines: every retrying call has one overall deadline, and waits between
//! attempts grow exponentially with jitter. The decision *whether* to retry lives with the
//! error ([`ClientError::is_retriable`](crate::ClientError::is_retriable) and
//! [`ErrorCode::recovery`](kafka_wire::protocol::ErrorCode::recovery)), and for a produced batch in
//! [`batch_recovery`], which adds what the producer's sequence numbers mean.

use std::hash::{BuildHasher, RandomState};
use std::time::{Duration, Instant};

use crate::deadline::fits_before;
use crate::error::ClientError;
use kafka_wire::protocol::{ErrorCode, Recovery};

/// How long a produced batch waits before its `attempt`-th send (from 1): 100 ms, doubling
/// up to 1 s.
pub(crate) fn batch_backoff(attempt: u32) -> Duration {
    Duration::from_millis(100u64.saturating_mul(1 << attempt.saturating_sub(1).min(4)))
        .min(Duration::from_secs(1))
}

/// What the producer does with a batch after an answer (or a failed request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchRecovery {
    /// Written: complete its records.
    Done,
    /// Send it again, with the same sequence numbers; `refresh_metadata` when the leader may
    /// have moved.
    Retry {
        /// Whether to refresh metadata first.
        refresh_metadata: bool,
    },
    /// The broker lost (or never had) this producer's state while the batch is the next one it
    /// expects: bump the epoch (KIP-360), restart the partition's sequences at 0, send it again.
    BumpEpochAndRetry,
    /// Fail the batch's records with the error.
    Fail,
}

/// Where an idempotent batch's sequence numbers stand against its partition's last
/// acknowledged one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SequencePlace {
    /// Its base sequence is the one after the last acknowledged: no earlier batch of the
    /// partition is unresolved.
    NextInLine,
    /// An earlier batch of the partition is still unresolved.
    AfterUnresolved,
    /// A batch with later sequences was acknowledged. A broker appends a producer's batches
    /// only in sequence order, so it has this one: its answer was lost or came too late.
    Acknowledged,
}

/// The one retry decision for a produced batch, as the Java producer makes it.
///
/// `answer` is the partition's error code, or the error of the whole request (no answer: a
/// connection cut after sending, a timeout). `idempotent`: the batch carries a producer id and
/// sequence number; `place`: where its sequences stand (see [`SequencePlace`]).
///
/// - An idempotent batch whose place is `Acknowledged` is done when it has no answer or one
///   about its sequence (OUT_OF_ORDER_SEQUENCE_NUMBER: the broker keeps only its last five
///   batches to recognise a retry by, and this one is older) — Java resolves such a batch the
///   same way (`TransactionManager`'s unresolved sequences). Its records' offsets are unknown.
/// - Without an answer the batch is sent again: with idempotence the broker discards a copy it
///   already has (DUPLICATE_SEQUENCE_NUMBER, or the original's offset); without, it may be
///   appended twice.
/// - DUPLICATE_SEQUENCE_NUMBER: the broker has it — done.
/// - OUT_OF_ORDER_SEQUENCE_NUMBER behind an earlier unresolved batch is that batch's echo:
///   retry once it is resolved. Next in line, the broker lost records it had acknowledged:
///   fail the batch (Java's `OutOfOrderSequenceException`); the producer then bumps its epoch.
/// - UNKNOWN_PRODUCER_ID next in line: the producer's state expired with its records
///   (retention); bump the epoch and send again. Behind another batch: retry.
/// - INVALID_PRODUCER_EPOCH and PRODUCER_FENCED fail the batch: for a transactional producer it
///   is fenced; an idempotent one bumps its epoch for the batches that follow.
/// - Everything else as [`ErrorCode::recovery`] and [`ClientError::is_retriable`] say.
pub(crate) fn batch_recovery(
    answer: Result<ErrorCode, &ClientError>,
    idempotent: bool,
    place: SequencePlace,
) -> BatchRecovery {
    if idempotent && place == SequencePlace::Acknowledged {
        let about_its_sequence = match answer {
            Ok(code) => matches!(
                code,
                ErrorCode::NONE
                    | ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER
                    | ErrorCode::DUPLICATE_SEQUENCE_NUMBER
            ),
            Err(e) => e.is_retriable(),
        };
        if about_its_sequence {
            return BatchRecovery::Done;
        }
    }
    let next_in_line = place == SequencePlace::NextInLine;
    let code = match answer {
        Ok(code) => code,
        Err(ClientError::Kafka { code, .. }) => *code,
        Err(e) if e.is_retriable() => return BatchRecovery::Retry { refresh_metadata: true },
        Err(_) => return BatchRecovery::Fail,
    };
    if code.is_ok() {
        return BatchRecovery::Done;
    }
    if idempotent {
        match code {
            ErrorCode::DUPLICATE_SEQUENCE_NUMBER => return BatchRecovery::Done,
            ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER | ErrorCode::UNKNOWN_PRODUCER_ID if !next_in_line => {
                return BatchRecovery::Retry { refresh_metadata: false }
            }
            ErrorCode::UNKNOWN_PRODUCER_ID => return BatchRecovery::BumpEpochAndRetry,
            _ => {}
        }
    }
    match code.recovery() {
        Recovery::Retry => BatchRecovery::Retry { refresh_metadata: false },
        Recovery::RefreshMetadata | Recovery::RefindCoordinator => {
            BatchRecovery::Retry { refresh_metadata: true }
        }
        Recovery::None => BatchRecovery::Done,
        Recovery::Fatal => BatchRecovery::Fail,
    }
}

/// Exponential backoff with jitter, bounded by a deadline.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    max: Duration,
    deadline: Instant,
    /// xorshift state for jitter, seeded by std's per-process random hash keys (no RNG crate).
    seed: u64,
}

impl Backoff {
    /// Waits start at about `initial`, double each time up to `max`, and never pass `deadline`.
    /// Each backoff draws its own jitter: clients that failed together come back apart.
    pub fn new(initial: Duration, max: Duration, deadline: Instant) -> Self {
        // Seeded from the deadline alone (`deadline.elapsed()`, zero for a deadline ahead),
        // every backoff drew the same waits.
        let seed = RandomState::new().hash_one(deadline) | 1;
        Self { next: initial, max, deadline, seed }
    }

    /// The wait before the next attempt (between half and all of the current step), or `None`
    /// when that wait would pass the deadline.
    pub fn next_wait(&mut self) -> Option<Duration> {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        let step = self.next;
        self.next = (self.next * 2).min(self.max);
        let half = step / 2;
        let jitter =
            Duration::from_nanos(self.seed % (u64::try_from(half.as_nanos()).unwrap_or(u64::MAX).max(1)));
        let wait = half + jitter;
        fits_before(wait, self.deadline).then_some(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoffs_made_alike_draw_different_waits() {
        let deadline = Instant::now() + Duration::from_secs(60);
        let first: Vec<Duration> = (0..8)
            .map(|_| {
                Backoff::new(Duration::from_secs(1), Duration::from_secs(1), deadline).next_wait().unwrap()
            })
            .collect();
        // Each between 0.5 and 1 s at nanosecond resolution: eight equal ones are jitter lost.
        assert!(first.iter().any(|w| *w != first[0]), "{first:?}");
    }

    #[test]
    fn waits_grow_and_stay_within_the_cap() {
        let mut b = Backoff::new(
            Duration::from_millis(10),
            Duration::from_millis(40),
            Instant::now() + Duration::from_secs(60),
        );
        let waits: Vec<_> = (0..6).map(|_| b.next_wait().unwrap()).collect();
        assert!(waits[0] <= Duration::from_millis(10) && waits[0] >= Duration::from_millis(5));
        assert!(waits.iter().all(|w| *w <= Duration::from_millis(40)));
        assert!(waits[5] >= Duration::from_millis(20));
    }

    #[test]
    fn a_batch_without_an_answer_is_sent_again_with_or_without_idempotence() {
        let cut = ClientError::ConnectionClosed {
            broker: crate::error::BrokerRef { node_id: Some(1), addr: "b:9092".into() },
            reason: "closed by the broker".into(),
        };
        for idempotent in [true, false] {
            assert_eq!(
                batch_recovery(Err(&cut), idempotent, SequencePlace::NextInLine),
                BatchRecovery::Retry { refresh_metadata: true }
            );
        }
        // Unless a later batch of the same producer was acknowledged meanwhile: then the
        // broker has it, and sending it again would only meet OUT_OF_ORDER_SEQUENCE_NUMBER.
        assert_eq!(batch_recovery(Err(&cut), true, SequencePlace::Acknowledged), BatchRecovery::Done);
    }

    #[test]
    fn sequence_errors_are_judged_by_whether_the_batch_is_next_in_line() {
        use BatchRecovery::*;
        use SequencePlace::{Acknowledged, AfterUnresolved, NextInLine};
        let ooo = ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER;
        let unknown = ErrorCode::UNKNOWN_PRODUCER_ID;
        assert_eq!(batch_recovery(Ok(ooo), true, AfterUnresolved), Retry { refresh_metadata: false });
        assert_eq!(batch_recovery(Ok(ooo), true, NextInLine), Fail);
        assert_eq!(
            batch_recovery(Ok(ooo), true, Acknowledged),
            Done,
            "an old retry the broker no longer recognises"
        );
        assert_eq!(batch_recovery(Ok(unknown), true, NextInLine), BumpEpochAndRetry);
        assert_eq!(batch_recovery(Ok(unknown), true, AfterUnresolved), Retry { refresh_metadata: false });
        assert_eq!(batch_recovery(Ok(ErrorCode::DUPLICATE_SEQUENCE_NUMBER), true, NextInLine), Done);
        assert_eq!(batch_recovery(Ok(ErrorCode::INVALID_PRODUCER_EPOCH), true, NextInLine), Fail);
        assert_eq!(batch_recovery(Ok(ErrorCode::PRODUCER_FENCED), true, NextInLine), Fail);
        assert_eq!(
            batch_recovery(Ok(ErrorCode::PRODUCER_FENCED), true, Acknowledged),
            Fail,
            "fencing stays fatal"
        );
        // A moved leader is retried after a refresh either way.
        let moved = ErrorCode::NOT_LEADER_OR_FOLLOWER;
        assert_eq!(batch_recovery(Ok(moved), false, NextInLine), Retry { refresh_metadata: true });
        assert_eq!(batch_recovery(Ok(ErrorCode::NONE), false, NextInLine), Done);
    }

    #[test]
    fn stops_at_the_deadline() {
        let mut b = Backoff::new(
            Duration::from_secs(10),
            Duration::from_secs(10),
            Instant::now() + Duration::from_millis(1),
        );
        assert_eq!(b.next_wait(), None);
    }
}
