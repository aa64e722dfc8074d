//! The one error type of this crate. Every variant names what it is about (the znode path, the
//! group, the partition) so a message is actionable without a debugger.

use std::fmt;
use std::time::Duration;

use kafka_vocab::redact_credentials;

use crate::layout::{NameError, OffsetTextError};
use crate::meta::MetaError;
use crate::probe::Probe;

/// The ZooKeeper client's own error, re-exported so callers can match on it.
pub use zookeeper_client::Error as ZooKeeperError;

/// This crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the ZooKeeper offset store.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The connect string is not `host:port[,host:port...][/chroot]`.
    InvalidConnectString {
        /// The connect string as given.
        connect_string: String,
        /// What is wrong with it.
        reason: NameError,
    },
    /// The group id cannot be a znode name.
    InvalidGroup {
        /// The group.
        group: String,
        /// What is wrong with it.
        reason: NameError,
    },
    /// The topic name breaks Kafka's naming rule.
    InvalidTopic {
        /// The topic.
        topic: String,
        /// What is wrong with it.
        reason: NameError,
    },
    /// A partition number below 0 was given to `write`.
    InvalidPartition {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
    },
    /// A negative offset was given to `write` (the old layout cannot say "no offset").
    InvalidOffset {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The offset given.
        offset: i64,
    },
    /// The same partition twice in one `write` batch.
    DuplicatePartition {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
    },
    /// An offset node whose value is not a non-negative decimal `i64`.
    CorruptOffset {
        /// The znode.
        path: String,
        /// The node's bytes, as read.
        value: Vec<u8>,
        /// What is wrong with it.
        reason: OffsetTextError,
    },
    /// A kwire metadata node that is not what kwire writes.
    CorruptMetadata {
        /// The znode.
        path: String,
        /// The node's bytes, as read.
        value: Vec<u8>,
        /// What is wrong with it.
        reason: MetaError,
    },
    /// A child of an `offsets` folder that cannot be a topic (under `.../offsets`) or a
    /// partition (under `.../offsets/<topic>`).
    UnexpectedChild {
        /// The znode holding the child.
        parent: String,
        /// The unexpected child's name.
        child: String,
    },
    /// The partition's offset node changed (or appeared, or vanished) since this store last saw
    /// it: another writer is active. Nothing in the batch was written. Read again to see the
    /// other writer's value before deciding to overwrite it.
    ConcurrentModification {
        /// The group.
        group: String,
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The znode.
        path: String,
    },
    /// The server kept failing (connection loss, session expiry, no server reachable) until the
    /// call's time budget (see `ZkOffsetStore::with_retry_budget`) ran out. For a write, `outcome_unknown` says the last attempt may or
    /// may not have been applied (it is resolved by the next read or write of the store).
    DeadlineExceeded {
        /// What was being done (`read`, `write`, `connect`).
        operation: &'static str,
        /// `group "<id>"` or the servers of a connect.
        target: String,
        /// The time budget that ran out.
        budget: Duration,
        /// The last error ZooKeeper reported, if any.
        last_error: Option<ZooKeeperError>,
        /// Whether a write may or may not have been applied.
        outcome_unknown: bool,
    },
    /// No session could be opened within `budget`. `probes` says what each server did when
    /// probed beside the connect (refused, silent, answered garbage, answered as ZooKeeper).
    Unreachable {
        /// The servers of the connect string.
        servers: String,
        /// The time budget that ran out.
        budget: Duration,
        /// The last error ZooKeeper reported, if any.
        last_error: Option<ZooKeeperError>,
        /// What each server did when probed.
        probes: Vec<(String, Probe)>,
    },
    /// No session could be opened because the connection's security does not match the
    /// server's: TLS against a plaintext port or the reverse, an untrusted server certificate,
    /// a refused client certificate. Retrying does not help. `probes` holds the servers whose
    /// probe found such a mismatch.
    Security {
        /// The servers of the connect string.
        servers: String,
        /// What each mismatching server did when probed.
        probes: Vec<(String, Probe)>,
    },
    /// ZooKeeper refused the session's SASL credentials (a wrong user or password).
    AuthFailed {
        /// The servers of the connect string.
        servers: String,
        /// The credentials, as shown (user and mechanism, never the password).
        credentials: String,
    },
    /// An ACL policy that names the writer's identity was asked for without credentials:
    /// ZooKeeper would refuse every create with `InvalidACL`.
    AclNeedsAuth {
        /// The policy asked for.
        policy: crate::acl::AclPolicy,
    },
    /// A ZooKeeper error that retrying does not fix (no authorization, quota, bad arguments...).
    ZooKeeper {
        /// What was being done (`read`, `write`, `connect`).
        operation: &'static str,
        /// The znode.
        path: String,
        /// The underlying error.
        source: ZooKeeperError,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidConnectString { connect_string, reason } => {
                write!(
                    f,
                    "invalid ZooKeeper connect string {:?}: {reason}",
                    redact_credentials(connect_string)
                )
            }
            Error::InvalidGroup { group, reason } => write!(f, "invalid group id {group:?}: {reason}"),
            Error::InvalidTopic { topic, reason } => write!(f, "invalid topic name {topic:?}: {reason}"),
            Error::InvalidPartition { topic, partition } => {
                write!(f, "invalid partition {topic}-{partition}: partitions are >= 0")
            }
            Error::InvalidOffset { topic, partition, offset } => {
                write!(f, "invalid offset {offset} for {topic}-{partition}: stored offsets are >= 0")
            }
            Error::DuplicatePartition { topic, partition } => {
                write!(f, "partition {topic}-{partition} appears more than once in one write")
            }
            Error::CorruptOffset { path, value, reason } => {
                write!(f, "corrupt offset at {path}: {reason} (value {})", Shown(value))
            }
            Error::CorruptMetadata { path, value, reason } => {
                write!(f, "corrupt kwire metadata at {path}: {reason} (value {})", Shown(value))
            }
            Error::UnexpectedChild { parent, child } => {
                write!(f, "unexpected node {child:?} under {parent}: not a Kafka topic or partition name")
            }
            Error::ConcurrentModification { group, topic, partition, path } => write!(
                f,
                "another writer changed the offset of {topic}-{partition} for group {group:?} ({path}) \
                 since it was read; nothing in the batch was written"
            ),
            Error::DeadlineExceeded { operation, target, budget, last_error, outcome_unknown } => {
                write!(
                    f,
                    "ZooKeeper {operation} of {} did not succeed within {budget:?}",
                    redact_credentials(target)
                )?;
                if let Some(e) = last_error {
                    write!(f, " (last error: {e})")?;
                }
                if *outcome_unknown {
                    f.write_str("; the last write attempt may or may not have been applied")?;
                }
                Ok(())
            }
            Error::Unreachable { servers, budget, last_error, probes } => {
                write!(f, "no ZooKeeper session with {} within {budget:?}", redact_credentials(servers))?;
                let mut separator = ": ";
                for (server, probe) in probes {
                    write!(f, "{separator}{} {probe}", redact_credentials(server))?;
                    separator = "; ";
                }
                if let Some(e) = last_error {
                    write!(f, " (client: {e})")?;
                }
                Ok(())
            }
            Error::Security { servers, probes } => {
                write!(f, "no ZooKeeper session with {}", redact_credentials(servers))?;
                let mut separator = ": ";
                for (server, probe) in probes {
                    write!(f, "{separator}{} {probe}", redact_credentials(server))?;
                    separator = "; ";
                }
                Ok(())
            }
            Error::AuthFailed { servers, credentials } => write!(
                f,
                "ZooKeeper at {} refused the credentials {credentials} (authentication failed: a wrong user or password?)",
                redact_credentials(servers)
            ),
            Error::AclNeedsAuth { policy } => write!(
                f,
                "the ZooKeeper ACL policy {policy} names the writer, which needs credentials \
                 (digest:USER:PASSWORD)"
            ),
            Error::ZooKeeper { operation, path, source: ZooKeeperError::NoAuth } => write!(
                f,
                "ZooKeeper {operation} refused at {path}: the node's ACL does not grant this session \
                 access (authenticate with the credentials, digest: or sasl:, that the ACL names)"
            ),
            Error::ZooKeeper { operation, path, source } => {
                write!(f, "ZooKeeper {operation} failed at {path}: {source}")
            }
        }
    }
}

impl Error {
    /// Whether the connection's security failed (TLS mismatch, certificate refused, SASL
    /// credentials refused): fixing the settings helps, retrying does not.
    pub fn is_security(&self) -> bool {
        matches!(self, Error::Security { .. } | Error::AuthFailed { .. })
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::ZooKeeper { source, .. } => Some(source),
            Error::DeadlineExceeded { last_error: Some(e), .. }
            | Error::Unreachable { last_error: Some(e), .. } => Some(e),
            _ => None,
        }
    }
}

/// A node value as quoted text, escaped, cut after 64 bytes (a corrupt node can be 1 MiB).
struct Shown<'a>(&'a [u8]);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MAX: usize = 64;
        let cut = &self.0[..self.0.len().min(MAX)];
        write!(f, "\"{}\"", cut.escape_ascii())?;
        if self.0.len() > MAX {
            write!(f, "... ({} bytes)", self.0.len())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrupt_offset_names_the_path_and_the_bytes() {
        let e = Error::CorruptOffset {
            path: "/consumers/g/offsets/t/0".into(),
            value: b"12x\n".to_vec(),
            reason: OffsetTextError::NotDecimal,
        };
        assert_eq!(
            e.to_string(),
            "corrupt offset at /consumers/g/offsets/t/0: not decimal digits (value \"12x\\n\")"
        );
    }

    #[test]
    fn a_huge_corrupt_value_is_cut_in_the_message() {
        let e = Error::CorruptOffset {
            path: "/p".into(),
            value: vec![b'a'; 1000],
            reason: OffsetTextError::NotDecimal,
        };
        let text = e.to_string();
        assert!(text.ends_with("... (1000 bytes))"), "{text}");
        assert!(text.len() < 200, "{text}");
    }

    #[test]
    fn a_password_in_the_connect_string_is_not_echoed() {
        let e = Error::DeadlineExceeded {
            operation: "connect",
            target: "zk1:2181,admin:SECRETPASS@zk2:2181".into(),
            budget: Duration::from_secs(1),
            last_error: None,
            outcome_unknown: false,
        };
        let text = e.to_string();
        assert!(!text.contains("SECRETPASS") && text.contains("zk1:2181,admin:***@zk2:2181"), "{text}");
    }

    #[test]
    fn concurrent_modification_names_group_and_partition() {
        let e = Error::ConcurrentModification {
            group: "g".into(),
            topic: "t".into(),
            partition: 3,
            path: "/consumers/g/offsets/t/3".into(),
        };
        let text = e.to_string();
        assert!(text.contains("t-3") && text.contains("\"g\"") && text.contains("/consumers/g/offsets/t/3"));
    }
}
