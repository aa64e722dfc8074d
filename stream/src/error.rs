//! Why a stream call failed. Every variant says what to do next in its docs.

use std::error::Error;
use std::fmt;

use kafka_client::{ClientError, ConsumerError, NotOwnedReason, TopicPartition};
use offset_store::{BoxError, StoreError};

use crate::batch::Event;

#[derive(Debug)]
#[non_exhaustive]
/// Why a batch could not be planned, read or committed.
pub enum StreamError {
    /// The configuration cannot work (no group, no topics).
    Config(String),
    /// Metadata or offsets could not be read from the cluster. Retriable errors can be retried
    /// by calling again.
    Cluster(Box<ClientError>),
    /// The offset store failed. After a `needs_reload` error the next call loads again.
    Store(Box<StoreError>),
    /// A partition's records could not be fetched after every attempt.
    Fetch {
        /// The partition.
        tp: TopicPartition,
        /// The underlying error.
        source: Box<ClientError>,
    },
    /// An anomaly met a `Fail` policy. Nothing was fetched; the events say which partitions and
    /// why. Change the policy ([`crate::DirectStream::set_out_of_range`]) or the stored offsets
    /// to go on.
    PolicyFailed {
        /// The events of the plan, the failing ones among them.
        events: Vec<Event>,
    },
    /// The application's closure failed; the batch was not committed and will be read again.
    Application(BoxError),
    /// Member mode: the group membership failed for good (a fatal error from the coordinator,
    /// a refused group id...), or could not start. Join again with a new stream.
    Membership(Box<ConsumerError>),
    /// Member mode: a partition of the batch is not this member's any more (revoked or lost
    /// while the batch was processed), so nothing of the batch was committed. Its next owner
    /// reads it again from the group's last commit; ask for the next batch.
    NotOwned {
        /// The partition.
        tp: TopicPartition,
        /// Why it is not owned.
        reason: NotOwnedReason,
    },
}

impl StreamError {
    /// The events of a [`StreamError::PolicyFailed`].
    pub fn events(&self) -> &[Event] {
        match self {
            Self::PolicyFailed { events } => events,
            _ => &[],
        }
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(m) => write!(f, "stream configuration: {m}"),
            Self::Cluster(e) => write!(f, "cluster: {e}"),
            Self::Store(e) => e.fmt(f),
            Self::Fetch { tp, source } => write!(f, "fetch of {tp} failed: {source}"),
            Self::PolicyFailed { events } => {
                f.write_str("an anomaly met the fail policy")?;
                for e in events {
                    write!(f, "; {e}")?;
                }
                Ok(())
            }
            Self::Application(e) => write!(f, "the application failed the batch: {e}"),
            Self::Membership(e) => write!(f, "group membership: {e}"),
            Self::NotOwned { tp, reason } => {
                write!(f, "{tp} is not this member's any more ({reason}): the batch was not committed")
            }
        }
    }
}

impl Error for StreamError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::Cluster(e) | Self::Fetch { source: e, .. } => Some(e.as_ref()),
            Self::Store(e) => Some(e.as_ref()),
            Self::Application(e) => Some(e.as_ref()),
            Self::Membership(e) => Some(e.as_ref()),
            _ => None,
        }
    }
}

impl From<StoreError> for StreamError {
    fn from(e: StoreError) -> Self {
        Self::Store(Box::new(e))
    }
}

impl From<ClientError> for StreamError {
    fn from(e: ClientError) -> Self {
        Self::Cluster(Box::new(e))
    }
}
