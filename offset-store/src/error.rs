//! Why a store could not load or save. The variants say what happened, not which store it
//! happened in: an implementation maps its own errors here and keeps them as the `source`.

use std::error::Error;
use std::fmt;

use crate::BoxError;

/// One partition of a batch that a store refused, and why.
#[derive(Debug)]
pub struct RefusedPartition {
    /// The topic of the refused partition.
    pub topic: String,
    /// The refused partition.
    pub partition: i32,
    /// Why the store refused it (for Kafka, the coordinator's error for this partition).
    pub reason: BoxError,
}

/// Why a store could not load or save.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// Talking to the store's backend failed: the Kafka cluster (coordinator lookup,
    /// OffsetFetch, DescribeGroups), the file system (an IO error, the writers' lock held past
    /// the deadline). `retriable`: whether trying again later can help.
    Backend {
        /// The store's short name (`kafka`, `file`, `zookeeper`, ...).
        store: &'static str,
        /// Whether trying again later can help.
        retriable: bool,
        /// The implementation's own error.
        source: BoxError,
    },
    /// The group coordinator refused the commit of this partition; nothing of the batch was
    /// written. `retriable`: whether the coordinator's error is one that passes.
    CommitRefused {
        /// The store's short name (`kafka`, `file`, `zookeeper`, ...).
        store: &'static str,
        /// The partition's topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// Whether trying again later can help.
        retriable: bool,
        /// The implementation's own error.
        source: BoxError,
    },
    /// The store took some partitions of the batch and refused the others (a store that is not
    /// atomic, such as Kafka's: the coordinator answers per partition). What is in `written`
    /// (topic, partition) stays written; load again before the next save.
    PartlyWritten {
        /// The store's short name (`kafka`, `file`, `zookeeper`, ...).
        store: &'static str,
        /// The partitions written, as (topic, partition).
        written: Vec<(String, i32)>,
        /// The partitions refused, each with its reason.
        refused: Vec<RefusedPartition>,
    },
    /// The store answered some partitions and refused the others (Kafka's coordinator answers
    /// per partition, e.g. TOPIC_AUTHORIZATION_FAILED for a topic the principal may not
    /// describe). `loaded` is what it answered, `refused` each partition it did not; a caller that
    /// needs every partition treats this as the load failing, one that can show a partial
    /// answer shows both.
    PartlyRead {
        /// The store's short name (`kafka`, `file`, `zookeeper`, ...).
        store: &'static str,
        /// The offsets of the partitions answered (partitions with nothing stored are absent).
        loaded: Vec<crate::StoredOffset>,
        /// The partitions refused, each with its reason.
        refused: Vec<RefusedPartition>,
    },
    /// The group has active members: a non-member commit would fight their commits (the rule
    /// kafka-consumer-groups applies). Stop the consumers, or build the store with `force`.
    /// `state` is the group state the coordinator reported, `members` how many it has.
    GroupActive {
        /// The group.
        group: String,
        /// The group's state as the coordinator reported it.
        state: String,
        /// How many members the group has.
        members: usize,
    },
    /// The group is of a type whose positions this store cannot write (a Kafka share group:
    /// OffsetCommit does not move its share-partition start offsets). Refused whatever `force`
    /// says; nothing was written.
    GroupTypeNotWritable {
        /// The group.
        group: String,
        /// The group's type as the coordinator reported it (`share`, ...).
        group_type: String,
        /// Why, and what can write it instead.
        detail: String,
    },
    /// Another writer changed this partition's stored offset since this store last read it;
    /// nothing of the batch was written. Load again to see the other writer's value. `detail`
    /// says where (e.g. the znode).
    ConcurrentModification {
        /// The store's short name (`kafka`, `file`, `zookeeper`, ...).
        store: &'static str,
        /// The partition's topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// Where the change was seen (e.g. the znode).
        detail: String,
    },
    /// The store could not be reached within its time budget. `outcome_unknown`: a write may or
    /// may not have been applied (load again to find out).
    Unavailable {
        /// The store's short name (`kafka`, `file`, `zookeeper`, ...).
        store: &'static str,
        /// Whether a write may or may not have been applied.
        outcome_unknown: bool,
        /// The implementation's own error.
        source: BoxError,
    },
    /// After writing, the store holds something else than what was written: `wrote` the offset
    /// saved, `read` what a load then returned (`None`: nothing stored).
    ReadBackMismatch {
        /// The store's short name (`kafka`, `file`, `zookeeper`, ...).
        store: &'static str,
        /// The partition's topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The offset saved.
        wrote: i64,
        /// What a load returned afterwards (`None`: nothing stored).
        read: Option<i64>,
    },
    /// The stored data is damaged (an offset that is not a number, a malformed side node).
    Corrupt {
        /// The store's short name (`kafka`, `file`, `zookeeper`, ...).
        store: &'static str,
        /// The implementation's own error.
        source: BoxError,
    },
    /// The request cannot be stored (a bad group or topic name, a negative offset, a partition
    /// given twice); `message` says which.
    Invalid {
        /// The store's short name (`kafka`, `file`, `zookeeper`, ...).
        store: &'static str,
        /// What is wrong with the request.
        message: String,
    },
    /// Any other failure of a store implementation.
    Other {
        /// The store's short name (`kafka`, `file`, `zookeeper`, ...).
        store: &'static str,
        /// The implementation's own error.
        source: BoxError,
    },
}

impl StoreError {
    /// Whether trying again later can help without anyone changing anything.
    pub fn is_retriable(&self) -> bool {
        match self {
            Self::Backend { retriable, .. } | Self::CommitRefused { retriable, .. } => *retriable,
            Self::Unavailable { .. } => true,
            _ => false,
        }
    }

    /// Whether what is stored is uncertain after this error, so the caller should load again
    /// before its next save.
    pub fn needs_reload(&self) -> bool {
        matches!(
            self,
            Self::ConcurrentModification { .. }
                | Self::Unavailable { outcome_unknown: true, .. }
                | Self::ReadBackMismatch { .. }
                | Self::CommitRefused { .. }
                | Self::PartlyWritten { .. }
                | Self::PartlyRead { .. }
        )
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CommitRefused { store, topic, partition, source, .. } => {
                write!(f, "{store} offset store: commit of {topic}:{partition} refused: {source}")
            }
            Self::PartlyWritten { store, written, refused } => {
                write!(f, "{store} offset store: partly written: {} partition(s) written, refused: ", written.len())?;
                for (i, r) in refused.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{}:{} ({})", r.topic, r.partition, r.reason)?;
                }
                Ok(())
            }
            Self::PartlyRead { store, loaded, refused } => {
                write!(f, "{store} offset store: partly read: {} offset(s) read, refused: ", loaded.len())?;
                for (i, r) in refused.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{}:{} ({})", r.topic, r.partition, r.reason)?;
                }
                Ok(())
            }
            Self::GroupActive { group, state, members } => write!(
                f,
                "group `{group}` has {members} active member(s) (state {state}): offsets can only be \
                 written while it is inactive; stop its consumers or force the write"
            ),
            Self::GroupTypeNotWritable { group, group_type, detail } => {
                write!(f, "group `{group}` is a {group_type} group: {detail}; nothing was written")
            }
            Self::ConcurrentModification { store, topic, partition, detail } => write!(
                f,
                "{store} offset store: {topic}:{partition} was changed by another writer; nothing \
                 was written ({detail})"
            ),
            Self::Unavailable { store, outcome_unknown, source } => {
                write!(f, "{store} offset store unavailable: {source}")?;
                if *outcome_unknown {
                    f.write_str(" (the last write may or may not have been applied)")?;
                }
                Ok(())
            }
            Self::ReadBackMismatch { store, topic, partition, wrote, read } => match read {
                Some(read) => write!(
                    f,
                    "{store} offset store: read-back mismatch for {topic}:{partition}: wrote {wrote}, read {read}"
                ),
                None => write!(
                    f,
                    "{store} offset store: read-back mismatch for {topic}:{partition}: wrote {wrote}, read nothing"
                ),
            },
            Self::Corrupt { store, source } => write!(f, "{store} offset store holds damaged data: {source}"),
            Self::Invalid { store, message } => write!(f, "{store} offset store: {message}"),
            Self::Backend { store, source, .. } | Self::Other { store, source } => {
                write!(f, "{store} offset store: {source}")
            }
        }
    }
}

impl Error for StoreError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::Backend { source, .. }
            | Self::CommitRefused { source, .. }
            | Self::Unavailable { source, .. }
            | Self::Corrupt { source, .. }
            | Self::Other { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}
