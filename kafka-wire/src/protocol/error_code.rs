//! Kafka error codes: an open set with names, one-line descriptions, and — decided here and
//! nowhere else — what a client should do about each.

use std::fmt;

/// A Kafka error code. Codes kwire does not know keep their number and are treated as fatal.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ErrorCode(pub i16);

/// What a client does when a response carries an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// Not an error.
    None,
    /// Give up on this partition or call and report the error.
    Fatal,
    /// Retry the same request after a backoff.
    Retry,
    /// The client's metadata (leaders, topic ids) is stale: refresh it, then retry.
    RefreshMetadata,
    /// The group coordinator moved or is gone: find it again, then retry.
    RefindCoordinator,
}

macro_rules! error_codes {
    ($($code:expr, $name:ident, $recovery:ident, $about:expr;)*) => {
        impl ErrorCode {
            $(
                #[doc = concat!("`", stringify!($name), "` (", stringify!($code), "): ", $about, ".")]
                pub const $name: ErrorCode = ErrorCode($code);
            )*

            /// Kafka's name, e.g. `"NOT_LEADER_OR_FOLLOWER"`, or `None` for an unknown code.
            pub fn name(self) -> Option<&'static str> {
                match self.0 { $($code => Some(stringify!($name)),)* _ => None }
            }

            /// A one-line description.
            pub fn description(self) -> &'static str {
                match self.0 { $($code => $about,)* _ => "an error code kwire does not know" }
            }

            /// What a client should do about this error.
            pub fn recovery(self) -> Recovery {
                match self.0 { $($code => Recovery::$recovery,)* _ => Recovery::Fatal }
            }
        }
    };
}

error_codes! {
    -1, UNKNOWN_SERVER_ERROR, Fatal, "the server hit an unexpected error";
    0, NONE, None, "no error";
    1, OFFSET_OUT_OF_RANGE, Fatal, "the requested offset is outside the partition's log range";
    2, CORRUPT_MESSAGE, Retry, "a message failed its CRC check or is otherwise corrupt";
    3, UNKNOWN_TOPIC_OR_PARTITION, RefreshMetadata, "this server does not host the topic-partition";
    4, INVALID_FETCH_SIZE, Fatal, "the requested fetch size is invalid";
    5, LEADER_NOT_AVAILABLE, RefreshMetadata, "the partition has no leader right now (election in progress)";
    6, NOT_LEADER_OR_FOLLOWER, RefreshMetadata, "this server is not the leader (or a follower) for the partition";
    7, REQUEST_TIMED_OUT, Retry, "the request timed out on the server";
    8, BROKER_NOT_AVAILABLE, Fatal, "the broker is not available";
    9, REPLICA_NOT_AVAILABLE, RefreshMetadata, "the replica is not available for the partition";
    10, MESSAGE_TOO_LARGE, Fatal, "the request included a message larger than the server accepts";
    11, STALE_CONTROLLER_EPOCH, Fatal, "the controller moved to another broker";
    12, OFFSET_METADATA_TOO_LARGE, Fatal, "the commit's metadata string is too large";
    13, NETWORK_EXCEPTION, RefreshMetadata, "the server disconnected before a response was received";
    14, COORDINATOR_LOAD_IN_PROGRESS, Retry, "the coordinator is loading and cannot serve yet";
    15, COORDINATOR_NOT_AVAILABLE, RefindCoordinator, "the coordinator is not available";
    16, NOT_COORDINATOR, RefindCoordinator, "this is not the correct coordinator";
    17, INVALID_TOPIC_EXCEPTION, Fatal, "the topic name is invalid or the topic is internal";
    18, RECORD_LIST_TOO_LARGE, Fatal, "the record batch is larger than the segment size";
    19, NOT_ENOUGH_REPLICAS, Retry, "fewer in-sync replicas than required";
    20, NOT_ENOUGH_REPLICAS_AFTER_APPEND, Retry, "written with fewer in-sync replicas than required";
    21, INVALID_REQUIRED_ACKS, Fatal, "the acks value is invalid";
    22, ILLEGAL_GENERATION, Fatal, "the group generation id is not valid";
    23, INCONSISTENT_GROUP_PROTOCOL, Fatal, "the member's protocol does not match the group's";
    24, INVALID_GROUP_ID, Fatal, "the group id is invalid";
    25, UNKNOWN_MEMBER_ID, Fatal, "the coordinator does not know this member";
    26, INVALID_SESSION_TIMEOUT, Fatal, "the session timeout is outside the broker's range";
    27, REBALANCE_IN_PROGRESS, Fatal, "the group is rebalancing";
    28, INVALID_COMMIT_OFFSET_SIZE, Fatal, "the committing offset data size is not valid";
    29, TOPIC_AUTHORIZATION_FAILED, Fatal, "not authorized to access the topic";
    30, GROUP_AUTHORIZATION_FAILED, Fatal, "not authorized to access the group";
    31, CLUSTER_AUTHORIZATION_FAILED, Fatal, "not authorized for this cluster operation";
    32, INVALID_TIMESTAMP, Fatal, "a timestamp is outside the accepted range";
    33, UNSUPPORTED_SASL_MECHANISM, Fatal, "the broker does not support this SASL mechanism";
    34, ILLEGAL_SASL_STATE, Fatal, "this request is not valid in the current SASL state";
    35, UNSUPPORTED_VERSION, Fatal, "the broker does not support this API version";
    36, TOPIC_ALREADY_EXISTS, Fatal, "the topic already exists";
    37, INVALID_PARTITIONS, Fatal, "the number of partitions is invalid";
    38, INVALID_REPLICATION_FACTOR, Fatal, "the replication factor is invalid";
    39, INVALID_REPLICA_ASSIGNMENT, Fatal, "the replica assignment is invalid";
    40, INVALID_CONFIG, Fatal, "the configuration is invalid";
    41, NOT_CONTROLLER, Retry, "this is not the active controller";
    42, INVALID_REQUEST, Fatal, "the request is malformed or not allowed";
    43, UNSUPPORTED_FOR_MESSAGE_FORMAT, Fatal, "the message format version does not support this request";
    44, POLICY_VIOLATION, Fatal, "the request violates a broker policy";
    45, OUT_OF_ORDER_SEQUENCE_NUMBER, Fatal, "the broker received an out-of-order sequence number";
    46, DUPLICATE_SEQUENCE_NUMBER, Fatal, "the broker received a duplicate sequence number";
    47, INVALID_PRODUCER_EPOCH, Fatal, "the producer was fenced by a newer epoch";
    48, INVALID_TXN_STATE, Fatal, "the transaction state does not allow this operation";
    49, INVALID_PRODUCER_ID_MAPPING, Fatal, "the producer id is not mapped to this transactional id";
    50, INVALID_TRANSACTION_TIMEOUT, Fatal, "the transaction timeout exceeds the broker's maximum";
    51, CONCURRENT_TRANSACTIONS, Retry, "another transaction for this producer is still completing";
    52, TRANSACTION_COORDINATOR_FENCED, Fatal, "the transaction coordinator was fenced";
    53, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Fatal, "not authorized for this transactional id";
    54, SECURITY_DISABLED, Fatal, "security features are disabled";
    55, OPERATION_NOT_ATTEMPTED, Fatal, "the broker did not attempt this operation";
    56, KAFKA_STORAGE_ERROR, RefreshMetadata, "a disk error on the broker";
    57, LOG_DIR_NOT_FOUND, Fatal, "the log directory does not exist";
    58, SASL_AUTHENTICATION_FAILED, Fatal, "SASL authentication failed";
    59, UNKNOWN_PRODUCER_ID, Fatal, "the broker has no state for this producer id";
    60, REASSIGNMENT_IN_PROGRESS, Fatal, "a partition reassignment is in progress";
    61, DELEGATION_TOKEN_AUTH_DISABLED, Fatal, "delegation tokens are disabled";
    62, DELEGATION_TOKEN_NOT_FOUND, Fatal, "delegation token not found";
    63, DELEGATION_TOKEN_OWNER_MISMATCH, Fatal, "delegation token owner mismatch";
    64, DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, Fatal, "delegation token requests are not allowed on this channel";
    65, DELEGATION_TOKEN_AUTHORIZATION_FAILED, Fatal, "not authorized for delegation tokens";
    66, DELEGATION_TOKEN_EXPIRED, Fatal, "the delegation token expired";
    67, INVALID_PRINCIPAL_TYPE, Fatal, "the principal type is not supported";
    68, NON_EMPTY_GROUP, Fatal, "the group is not empty";
    69, GROUP_ID_NOT_FOUND, Fatal, "the group does not exist";
    70, FETCH_SESSION_ID_NOT_FOUND, Retry, "the fetch session id was not found";
    71, INVALID_FETCH_SESSION_EPOCH, Retry, "the fetch session epoch is invalid";
    72, LISTENER_NOT_FOUND, RefreshMetadata, "the leader has no listener with the requested name";
    73, TOPIC_DELETION_DISABLED, Fatal, "topic deletion is disabled";
    74, FENCED_LEADER_EPOCH, RefreshMetadata, "the leader epoch in the request is older than the broker's";
    75, UNKNOWN_LEADER_EPOCH, RefreshMetadata, "the leader epoch in the request is newer than the broker's";
    76, UNSUPPORTED_COMPRESSION_TYPE, Fatal, "the requesting client does not support the compression type";
    77, STALE_BROKER_EPOCH, Fatal, "the broker epoch is stale";
    78, OFFSET_NOT_AVAILABLE, Retry, "the leader's high watermark has not caught up yet";
    79, MEMBER_ID_REQUIRED, Fatal, "the group member needs a member id";
    80, PREFERRED_LEADER_NOT_AVAILABLE, Retry, "the preferred leader is not available";
    81, GROUP_MAX_SIZE_REACHED, Fatal, "the group reached its maximum size";
    82, FENCED_INSTANCE_ID, Fatal, "a newer member with this static instance id joined";
    83, ELIGIBLE_LEADERS_NOT_AVAILABLE, Retry, "no eligible leader is available";
    84, ELECTION_NOT_NEEDED, Fatal, "leader election not needed";
    85, NO_REASSIGNMENT_IN_PROGRESS, Fatal, "no partition reassignment is in progress";
    86, GROUP_SUBSCRIBED_TO_TOPIC, Fatal, "the group is subscribed to the topic";
    87, INVALID_RECORD, Fatal, "the broker rejected a record";
    88, UNSTABLE_OFFSET_COMMIT, Retry, "pending transactional offsets exist for the partition";
    89, THROTTLING_QUOTA_EXCEEDED, Retry, "the throttling quota was exceeded";
    90, PRODUCER_FENCED, Fatal, "a newer producer with the same transactional id exists";
    91, RESOURCE_NOT_FOUND, Fatal, "the resource does not exist";
    92, DUPLICATE_RESOURCE, Fatal, "a resource appears twice in the request";
    93, UNACCEPTABLE_CREDENTIAL, Fatal, "the credential does not meet the broker's requirements";
    94, INCONSISTENT_VOTER_SET, Fatal, "the voter set is inconsistent";
    95, INVALID_UPDATE_VERSION, Fatal, "the update version is invalid";
    96, FEATURE_UPDATE_FAILED, Fatal, "the feature update failed";
    97, PRINCIPAL_DESERIALIZATION_FAILURE, Fatal, "the principal could not be deserialized";
    98, SNAPSHOT_NOT_FOUND, Fatal, "the snapshot was not found";
    99, POSITION_OUT_OF_RANGE, Fatal, "the position is out of range";
    100, UNKNOWN_TOPIC_ID, RefreshMetadata, "this server does not know the topic id";
    101, DUPLICATE_BROKER_REGISTRATION, Fatal, "the broker registered twice";
    102, BROKER_ID_NOT_REGISTERED, Fatal, "the broker id is not registered";
    103, INCONSISTENT_TOPIC_ID, RefreshMetadata, "the topic id does not match the topic name";
    104, INCONSISTENT_CLUSTER_ID, Fatal, "the cluster id does not match";
    105, TRANSACTIONAL_ID_NOT_FOUND, Fatal, "the transactional id was not found";
    106, FETCH_SESSION_TOPIC_ID_ERROR, Retry, "the fetch session hit a topic id error";
    107, INELIGIBLE_REPLICA, Fatal, "the replica is not eligible";
    108, NEW_LEADER_ELECTED, Retry, "a new leader was elected";
    109, OFFSET_MOVED_TO_TIERED_STORAGE, Fatal, "the offset was moved to tiered storage";
    110, FENCED_MEMBER_EPOCH, Fatal, "the member epoch is fenced";
    111, UNRELEASED_INSTANCE_ID, Fatal, "the instance id is still in use";
    112, UNSUPPORTED_ASSIGNOR, Fatal, "the assignor is not supported";
    113, STALE_MEMBER_EPOCH, Fatal, "the member epoch is stale";
    114, MISMATCHED_ENDPOINT_TYPE, Fatal, "the request was sent to the wrong endpoint type";
    115, UNSUPPORTED_ENDPOINT_TYPE, Fatal, "the endpoint type is not supported";
    116, UNKNOWN_CONTROLLER_ID, Fatal, "the controller id is unknown";
    117, UNKNOWN_SUBSCRIPTION_ID, Fatal, "the client telemetry subscription id is unknown";
    118, TELEMETRY_TOO_LARGE, Fatal, "the telemetry payload is too large";
    119, INVALID_REGISTRATION, Fatal, "the controller rejected the registration";
    120, TRANSACTION_ABORTABLE, Fatal, "the transaction must be aborted";
    121, INVALID_RECORD_STATE, Fatal, "the record state is invalid";
    122, SHARE_SESSION_NOT_FOUND, Retry, "the share session was not found";
    123, INVALID_SHARE_SESSION_EPOCH, Retry, "the share session epoch is invalid";
    124, FENCED_STATE_EPOCH, Fatal, "the share coordinator state epoch is fenced";
    125, INVALID_VOTER_KEY, Fatal, "the voter key is invalid";
    126, DUPLICATE_VOTER, Fatal, "the voter is already in the set";
    127, VOTER_NOT_FOUND, Fatal, "the voter is not in the set";
    128, INVALID_REGULAR_EXPRESSION, Fatal, "the regular expression is invalid";
    129, REBOOTSTRAP_REQUIRED, Fatal, "the client must rebootstrap";
}

impl ErrorCode {
    /// Whether this is code 0 (`NONE`, no error).
    pub fn is_ok(self) -> bool {
        self.0 == 0
    }

    /// Whether retrying (after whatever [`recovery`](Self::recovery) says to refresh) can help.
    pub fn is_retriable(self) -> bool {
        matches!(self.recovery(), Recovery::Retry | Recovery::RefreshMetadata | Recovery::RefindCoordinator)
    }

    /// Whether an ACL refused the request: TOPIC, GROUP, CLUSTER or TRANSACTIONAL_ID
    /// _AUTHORIZATION_FAILED.
    pub fn is_authorization(self) -> bool {
        matches!(
            self,
            Self::TOPIC_AUTHORIZATION_FAILED
                | Self::GROUP_AUTHORIZATION_FAILED
                | Self::CLUSTER_AUTHORIZATION_FAILED
                | Self::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        )
    }

    /// `Ok(())` for [`ErrorCode::NONE`], the code itself otherwise.
    pub fn into_result(self) -> Result<(), ErrorCode> {
        if self.is_ok() {
            Ok(())
        } else {
            Err(self)
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name} ({}): {}", self.0, self.description()),
            None => write!(f, "error code {} (unknown to kwire)", self.0),
        }
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name}({})", self.0),
            None => write!(f, "ErrorCode({})", self.0),
        }
    }
}

impl std::error::Error for ErrorCode {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leadership_errors_refresh_metadata_and_coordinator_errors_refind() {
        assert_eq!(ErrorCode::NOT_LEADER_OR_FOLLOWER.recovery(), Recovery::RefreshMetadata);
        assert_eq!(ErrorCode::NOT_COORDINATOR.recovery(), Recovery::RefindCoordinator);
        assert_eq!(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.recovery(), Recovery::Retry);
        assert_eq!(ErrorCode::OFFSET_OUT_OF_RANGE.recovery(), Recovery::Fatal);
        assert!(!ErrorCode(31_000).is_retriable());
    }

    #[test]
    fn unknown_codes_keep_their_number() {
        assert_eq!(ErrorCode(4242).to_string(), "error code 4242 (unknown to kwire)");
        assert_eq!(ErrorCode::UNSUPPORTED_VERSION.name(), Some("UNSUPPORTED_VERSION"));
    }
}
