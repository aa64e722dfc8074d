//! What a [`Consumer`](crate::Consumer) call can fail with. Each variant names the partition or
//! the group it is about; none is a stringly "commit failed".

use std::fmt;
use std::time::Duration;

use crate::cluster::router::TopicPartition;
use crate::consumer::start_positions::StartRefusal;
use crate::error::ClientError;

/// Why a commit for a partition is refused before anything is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotOwnedReason {
    /// The partition was never assigned to this consumer.
    NeverAssigned,
    /// It was revoked (its revocation finished): another member may own it now.
    Revoked,
    /// It was lost (the member was fenced or its session expired): its next owner may already
    /// have read past anything this consumer processed.
    Lost,
}

impl fmt::Display for NotOwnedReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NeverAssigned => "it is not assigned to this consumer",
            Self::Revoked => "it was revoked from this member",
            Self::Lost => "this member lost it (fenced, or its session expired)",
        })
    }
}

/// A consumer call's failure.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ConsumerError {
    /// A request failed ([`ClientError`] says which broker and why).
    Client(Box<ClientError>),
    /// A partition's records could not be read; reading it goes on from the same position at
    /// the next poll.
    Partition {
        /// The partition.
        partition: TopicPartition,
        /// What the fetch said.
        source: Box<ClientError>,
    },
    /// A commit names a partition this consumer does not own; nothing was sent.
    NotOwned {
        /// The partition.
        partition: TopicPartition,
        /// Why it is not owned.
        reason: NotOwnedReason,
    },
    /// A partition cannot start reading: the chosen offset policy refuses the commit (or the
    /// missing commit) with the anomaly and its numbers, or the partition is gone. It stays
    /// assigned and unread until [`seek`](crate::Consumer::seek) gives it a position.
    StartRefused {
        /// The partition.
        partition: TopicPartition,
        /// Why.
        refusal: Box<StartRefusal>,
    },
    /// The application did not poll for longer than `max.poll.interval.ms`, so the member left
    /// the group (its partitions were revoked first); the next poll joins again.
    PollIntervalExceeded {
        /// Time since the poll before this one.
        elapsed: Duration,
        /// `max.poll.interval.ms`.
        limit: Duration,
    },
    /// The member cannot go on in its group (FENCED_INSTANCE_ID, GROUP_AUTHORIZATION_FAILED,
    /// an assignor no other member supports, ...): the consumer must be closed.
    Membership {
        /// The group.
        group: String,
        /// What the coordinator or the member's own checks said.
        message: String,
    },
    /// A call needs `group.id` (commit, subscribe), and none is configured.
    NoGroup,
    /// The consumer is closed (or its membership task ended).
    Closed,
    /// An argument the call cannot use.
    InvalidArgument(String),
}

impl fmt::Display for ConsumerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Client(e) => write!(f, "{e}"),
            Self::Partition { partition, source } => write!(f, "{partition}: {source}"),
            Self::NotOwned { partition, reason } => {
                write!(f, "refusing to commit {partition}: {reason}")
            }
            Self::StartRefused { partition, refusal } => write!(f, "{partition} cannot start: {refusal}"),
            Self::PollIntervalExceeded { elapsed, limit } => write!(
                f,
                "left the group: the application did not poll for {} ms, more than max.poll.interval.ms={} \
                 (the next poll joins again)",
                elapsed.as_millis(),
                limit.as_millis()
            ),
            Self::Membership { group, message } => write!(f, "group `{group}`: {message}"),
            Self::NoGroup => f.write_str("this needs group.id, and none is configured"),
            Self::Closed => f.write_str("the consumer is closed"),
            Self::InvalidArgument(text) => f.write_str(text),
        }
    }
}

impl std::error::Error for ConsumerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Client(e) | Self::Partition { source: e, .. } => Some(e.as_ref()),
            _ => None,
        }
    }
}

impl From<ClientError> for ConsumerError {
    fn from(e: ClientError) -> Self {
        Self::Client(Box::new(e))
    }
}

impl From<crate::groups::member::model::NotOwnedReason> for NotOwnedReason {
    fn from(reason: crate::groups::member::model::NotOwnedReason) -> Self {
        use crate::groups::member::model::NotOwnedReason as Member;
        match reason {
            Member::Revoked => Self::Revoked,
            Member::Lost(_) => Self::Lost,
            Member::NeverAssigned => Self::NeverAssigned,
        }
    }
}
