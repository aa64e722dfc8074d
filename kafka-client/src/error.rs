//! Client errors: each names the broker, the API and what went wrong.
//!
//! [`TransactionError`] is here too, next to [`ClientError`]: each holds the other. It types what
//! went wrong with a transaction by what the application must do next, as the Java producer
//! sorts it: a fenced producer is done for good, an abortable error needs `abort_transaction` and
//! then the producer goes on, a fatal error ends the producer. This file imports only the release
//! table (`kafka_release.rs`), so every other file may use it.

use std::fmt;
use std::io;
use std::sync::Arc;

use crate::kafka_release::{self, Feature};
use kafka_vocab::{redact_credentials, TopicPartition};
use kafka_wire::protocol::names::InvalidName;
use kafka_wire::protocol::records::RecordEncodeError;
use kafka_wire::protocol::{ApiKey, DecodeError, DecodeErrorKind, EncodeError, ErrorCode, VersionRange};

/// Where a request went: a broker's node id (when known) and address.
///
/// Displayed as `broker 2 (host:9092)`, or the bare address when the node id is unknown; any
/// `user:password@` part of the address is redacted in the display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerRef {
    /// The broker's node id from cluster metadata; `None` for a bootstrap address not yet matched
    /// to a node (and for errors about the cluster as a whole rather than one broker).
    pub node_id: Option<i32>,
    /// The `host:port` the connection was made to, as given or as advertised in metadata.
    pub addr: String,
}

impl fmt::Display for BrokerRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.node_id {
            Some(id) => write!(f, "broker {id} ({})", redact_credentials(&self.addr)),
            None => write!(f, "{}", redact_credentials(&self.addr)),
        }
    }
}

/// Everything a [`Client`](crate::Client) call can fail with.
///
/// Each variant names what is needed to act on it: the broker ([`BrokerRef`]), the API, the
/// partition. [`ClientError::is_retriable`] says whether trying again can help and
/// [`ClientError::is_unsupported`] whether the broker is too old for the call. New variants may be
/// added in minor releases, so a `match` needs a wildcard arm.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ClientError {
    /// A bootstrap or broker address is not `host:port`.
    InvalidAddress {
        /// The address as given (credentials are redacted when displayed).
        addr: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Opening a TCP connection failed or timed out.
    Connect {
        /// The broker the connection was for.
        broker: BrokerRef,
        /// The operating system's error (`TimedOut` when the connect timeout passed).
        source: Arc<io::Error>,
    },
    /// No address in the bootstrap list could be reached; each attempt's error is kept.
    NoBrokerReachable {
        /// `(address, error text)` for each bootstrap address tried, in the order tried.
        attempts: Vec<(String, String)>,
    },
    /// The connection failed while a request was in flight (reset, EOF, write error).
    Io {
        /// The broker the request was sent to.
        broker: BrokerRef,
        /// The API of the request that failed.
        api: ApiKey,
        /// The operating system's error.
        source: Arc<io::Error>,
    },
    /// The connection was closed (by the broker or after an earlier failure).
    ConnectionClosed {
        /// The broker the connection was to.
        broker: BrokerRef,
        /// Why it was closed, as far as known.
        reason: String,
    },
    /// The broker sent bytes that are not a Kafka response frame (a negative or oversized
    /// size prefix, a frame shorter than its header): the connection was dropped, and every
    /// request in flight on it fails with this error.
    InvalidFrame {
        /// The broker that sent the bytes.
        broker: BrokerRef,
        /// What was wrong with the frame.
        reason: String,
    },
    /// No response arrived within the request timeout.
    Timeout {
        /// The broker the request was sent to.
        broker: BrokerRef,
        /// The API of the request.
        api: ApiKey,
        /// The time waited, in milliseconds (the configured request timeout).
        after_ms: u64,
    },
    /// The broker's bytes did not decode.
    Decode {
        /// The broker that sent the response.
        broker: BrokerRef,
        /// The API of the response.
        api: ApiKey,
        /// The negotiated version the response was decoded at.
        version: i16,
        /// What the decoder refused.
        source: DecodeError,
    },
    /// A partition's record data in a Fetch response did not decode: a corrupt batch, or one
    /// that decompresses past [`DecodeOptions::max_decompressed_size`](kafka_wire::protocol::records::DecodeOptions::max_decompressed_size).
    /// Nothing of the batch was returned; the records before it were.
    Records {
        /// The partition whose records they are.
        partition: TopicPartition,
        /// The base offset of the batch that did not decode (the fetch position when the data
        /// cannot be split into batches, or is a legacy message set).
        offset: i64,
        /// The broker that sent the response.
        broker: BrokerRef,
        /// The Fetch version the response was decoded at.
        version: i16,
        /// What the decoder refused (boxed: it would double the size of every `ClientError`).
        source: Box<DecodeError>,
    },
    /// The request could not be encoded at the negotiated version.
    Encode {
        /// The API of the request.
        api: ApiKey,
        /// The negotiated version.
        version: i16,
        /// What the encoder refused (e.g. a field this version cannot carry).
        source: EncodeError,
    },
    /// A feature needs a newer API version than the broker has; `needs` is the first Kafka
    /// release with it (e.g. read_committed: "0.11").
    NotSupported {
        /// The broker that lacks the feature.
        broker: BrokerRef,
        /// The feature asked for, in words (e.g. "read_committed fetch").
        feature: String,
        /// The first Kafka release that has it (e.g. "0.11").
        needs: &'static str,
    },
    /// kwire and the broker share no version of this API.
    UnsupportedApi {
        /// The broker.
        broker: BrokerRef,
        /// The API with no common version.
        api: ApiKey,
        /// The versions kwire implements.
        ours: VersionRange,
        /// The versions the broker advertises; `None` when it does not have the API at all.
        theirs: Option<VersionRange>,
    },
    /// The broker answered with a Kafka error code.
    Kafka {
        /// The broker that answered.
        broker: BrokerRef,
        /// The API of the request.
        api: ApiKey,
        /// Kafka's error code.
        code: ErrorCode,
        /// What the code applies to (a topic, `topic-partition` or group); empty when it is the
        /// whole request.
        context: String,
    },
    /// A topic the caller named does not exist.
    UnknownTopic {
        /// The topic name as given.
        topic: String,
    },
    /// The overall deadline for a call passed while retrying.
    DeadlineExceeded {
        /// The call that gave up, in words.
        what: String,
        /// The error of the last attempt before the deadline.
        last_error: Box<ClientError>,
    },
    /// The response did not make sense (e.g. a leader id the broker list lacks).
    Protocol {
        /// The broker that answered (node id `None` when the problem is the cluster's view as a
        /// whole).
        broker: BrokerRef,
        /// What did not make sense.
        message: String,
    },
    /// Records could not be encoded into a batch (e.g. a compression codec compiled out).
    RecordEncode {
        /// What was being produced (topic and partition).
        context: String,
        /// What the record encoder refused.
        source: RecordEncodeError,
    },
    /// A fetch position is outside the partition's log (deleted by retention or
    /// `delete_records`, or past the end). `requested` is the caller's `[from, until)` range;
    /// `log_start` and `high_watermark` are the log's bounds when they could be read.
    OffsetOutOfRange {
        /// The partition fetched.
        partition: TopicPartition,
        /// The position the broker refused.
        offset: i64,
        /// The caller's range: `from` inclusive, `until` exclusive.
        requested: (i64, i64),
        /// The log start offset (first readable offset, inclusive); `None` when it could not be
        /// read after the refusal.
        log_start: Option<i64>,
        /// The high watermark (exclusive end of the committed log); `None` when it could not be
        /// read after the refusal.
        high_watermark: Option<i64>,
    },
    /// The caller's arguments cannot make a valid request (an empty range, acks 2, ...).
    InvalidArgument {
        /// What is wrong with them.
        message: String,
    },
    /// A topic name or group id breaks Kafka's rules: refused before anything was sent.
    InvalidName(InvalidName),
    /// The broker refused the SASL credentials (or the exchange failed). Never retried: the same
    /// credentials would be refused again.
    Authentication {
        /// The broker that refused.
        broker: BrokerRef,
        /// The SASL mechanism used (`SCRAM-SHA-512`, ...).
        mechanism: &'static str,
        /// The user (or principal) that was refused; never the password.
        user: String,
        /// The broker's message, or what failed on kwire's side.
        message: String,
    },
    /// The broker's listener does not enable the SASL mechanism asked for.
    SaslMechanismNotEnabled {
        /// The broker.
        broker: BrokerRef,
        /// The mechanism kwire asked for.
        mechanism: &'static str,
        /// The mechanisms the broker enables, as it listed them.
        enabled: Vec<String>,
    },
    /// The TLS handshake failed: an untrusted, expired or wrong-host certificate, a listener
    /// that wants a client certificate, or a peer that does not speak TLS.
    Tls {
        /// The broker.
        broker: BrokerRef,
        /// What failed, and what to change.
        message: String,
    },
    /// The security settings cannot be used (an unreadable PEM file, TLS asked of a build
    /// without the `tls` feature, SASL without credentials). Nothing was sent.
    SecurityConfig {
        /// What is wrong, naming the setting or file.
        message: String,
    },
    /// A transactional producer's call failed: fenced, abortable or fatal (see
    /// [`TransactionError`]).
    Transaction(TransactionError),
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidAddress { addr, reason } => {
                write!(f, "invalid broker address `{}`: {reason}", redact_credentials(addr))
            }
            Self::Connect { broker, source } => write!(f, "cannot connect to {broker}: {source}"),
            Self::NoBrokerReachable { attempts } => {
                f.write_str("no bootstrap broker reachable: ")?;
                for (i, (addr, err)) in attempts.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{}: {err}", redact_credentials(addr))?;
                }
                Ok(())
            }
            Self::Io { broker, api, source } => write!(f, "{api} request to {broker} failed: {source}"),
            Self::ConnectionClosed { broker, reason } => write!(f, "connection to {broker} closed: {reason}"),
            Self::InvalidFrame { broker, reason } => {
                write!(f, "{broker} sent bytes that are not a Kafka response ({reason}); connection dropped")
            }
            Self::Timeout { broker, api, after_ms } => {
                write!(f, "{api} request to {broker} got no response within {after_ms} ms")
            }
            Self::Decode { broker, api, version, source } => {
                write!(f, "malformed {api} v{version} response from {broker}: {source}")
            }
            Self::Records { partition, offset, broker, version, source } => write!(
                f,
                "malformed Fetch v{version} response from {broker}: the records of {partition} from offset {offset}: {source}"
            ),
            Self::Encode { api, version, source } => write!(f, "cannot encode {api} v{version}: {source}"),
            Self::NotSupported { broker, feature, needs } => {
                write!(f, "{feature} on {broker}: not supported by this broker (needs Kafka {needs})")
            }
            Self::UnsupportedApi { broker, api, ours, theirs } => {
                match (theirs, kafka_release::api_introduced_in(*api)) {
                    (None, Some(needs)) => write!(
                        f,
                        "{api} on {broker}: not supported by this broker (needs Kafka {needs}): it lacks {api}"
                    ),
                    (Some(theirs), _) => write!(
                        f,
                        "{broker} supports {api} versions {theirs}, kwire supports {ours}: no common version"
                    ),
                    (None, None) => write!(f, "{broker} does not support {api} (kwire supports {ours})"),
                }
            }
            Self::Kafka { broker, api, code, context } => {
                if context.is_empty() {
                    write!(f, "{api} on {broker}: {code}")
                } else {
                    write!(f, "{api} on {broker} for {context}: {code}")
                }
            }
            Self::UnknownTopic { topic } => write!(f, "unknown topic `{topic}`"),
            Self::DeadlineExceeded { what, last_error } => {
                write!(f, "{what}: gave up at the deadline; last error: {last_error}")
            }
            Self::Protocol { broker, message } => write!(f, "unexpected response from {broker}: {message}"),
            Self::RecordEncode { context, source } => {
                write!(f, "cannot encode records for {context}: {source}")
            }
            Self::OffsetOutOfRange { partition, offset, requested, log_start, high_watermark } => {
                write!(
                    f,
                    "offset {offset} of {partition} is out of range (fetching [{}, {}))",
                    requested.0, requested.1
                )?;
                match (log_start, high_watermark) {
                    (Some(start), Some(end)) => write!(f, "; the log holds [{start}, {end})"),
                    _ => Ok(()),
                }
            }
            Self::InvalidArgument { message } => write!(f, "invalid argument: {message}"),
            Self::InvalidName(e) => e.fmt(f),
            Self::Authentication { broker, mechanism, user, message } => {
                write!(f, "authentication failed on {broker}: {mechanism} as user `{user}`: {message}")
            }
            Self::SaslMechanismNotEnabled { broker, mechanism, enabled } => write!(
                f,
                "SASL mechanism {mechanism} is not enabled on {broker}; it enables: {}",
                if enabled.is_empty() { "none".to_owned() } else { enabled.join(", ") }
            ),
            Self::Tls { broker, message } => write!(f, "TLS with {broker} failed: {message}"),
            Self::SecurityConfig { message } => write!(f, "security settings: {message}"),
            Self::Transaction(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Connect { source, .. } | Self::Io { source, .. } => Some(source.as_ref()),
            Self::Decode { source, .. } => Some(source),
            Self::Records { source, .. } => Some(source.as_ref()),
            Self::Encode { source, .. } => Some(source),
            Self::RecordEncode { source, .. } => Some(source),
            Self::DeadlineExceeded { last_error, .. } => Some(last_error.as_ref()),
            Self::InvalidName(e) => Some(e),
            Self::Transaction(e) => Some(e),
            _ => None,
        }
    }
}

impl From<InvalidName> for ClientError {
    fn from(e: InvalidName) -> Self {
        Self::InvalidName(e)
    }
}

impl ClientError {
    /// Whether the broker is too old for the call (an API it lacks or a feature its versions
    /// lack), as opposed to failing at it.
    pub fn is_unsupported(&self) -> bool {
        match self {
            Self::NotSupported { .. } => true,
            Self::UnsupportedApi { ours, theirs, .. } => theirs.is_none_or(|t| t.max < ours.min),
            _ => false,
        }
    }

    /// Whether the connection's security failed: TLS, SASL authentication, or settings that
    /// cannot be used. Trying again does not help; the settings must change.
    pub fn is_security(&self) -> bool {
        match self {
            Self::Authentication { .. }
            | Self::SaslMechanismNotEnabled { .. }
            | Self::Tls { .. }
            | Self::SecurityConfig { .. } => true,
            Self::DeadlineExceeded { last_error, .. } => last_error.is_security(),
            _ => false,
        }
    }

    /// Whether an ACL refused the call: TOPIC, GROUP, CLUSTER or TRANSACTIONAL_ID
    /// _AUTHORIZATION_FAILED (the error's context names the resource).
    pub fn is_authorization(&self) -> bool {
        match self {
            Self::Kafka { code, .. } => code.is_authorization(),
            Self::DeadlineExceeded { last_error, .. } => last_error.is_authorization(),
            _ => false,
        }
    }

    /// The ACL refusal's code (TOPIC, GROUP, CLUSTER or TRANSACTIONAL_ID
    /// _AUTHORIZATION_FAILED) when [`is_authorization`](Self::is_authorization), so that a caller
    /// holding one result per partition can report the refused ones and keep the others.
    pub fn authorization_code(&self) -> Option<ErrorCode> {
        match self {
            Self::Kafka { code, .. } if code.is_authorization() => Some(*code),
            Self::DeadlineExceeded { last_error, .. } => last_error.authorization_code(),
            _ => None,
        }
    }

    /// Whether a Fetch answer's batch failed its checksum ([`ClientError::Records`] with a CRC
    /// mismatch): bytes changed since the producer wrote them, on the way or in the log.
    pub fn is_checksum_mismatch(&self) -> bool {
        matches!(self, Self::Records { source, .. } if matches!(source.kind, DecodeErrorKind::CrcMismatch { .. }))
    }

    /// Whether trying again (possibly on a new connection or after a metadata refresh) can help.
    pub fn is_retriable(&self) -> bool {
        match self {
            Self::Connect { .. }
            | Self::Io { .. }
            | Self::ConnectionClosed { .. }
            | Self::Timeout { .. }
            | Self::NoBrokerReachable { .. } => true,
            Self::Kafka { code, .. } => code.is_retriable(),
            _ => false,
        }
    }
}

// Here rather than in `kafka_release.rs`: the release table is below the error, which names its
// releases in `Display`.
impl Feature {
    /// `Ok` when `version` (the one negotiated for [`Feature::api`]) carries the feature, else
    /// the error naming the release that has it.
    pub fn check(self, version: i16, broker: &BrokerRef) -> Result<(), ClientError> {
        if version >= self.min_version {
            return Ok(());
        }
        Err(ClientError::NotSupported {
            broker: broker.clone(),
            feature: self.name.to_owned(),
            needs: self.since,
        })
    }
}

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
