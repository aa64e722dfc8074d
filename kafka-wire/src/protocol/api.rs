//! API keys, version ranges and flexibility: each message declares its [`ApiSpec`] once, and
//! every version check in the codec and the client reads it from there.

use std::fmt;

use super::decoder::{DecodeResult, Decoder};
use super::encoder::{EncodeResult, Encoder};
use super::error::{DecodeErrorKind, EncodeError};

/// A Kafka API key. An open set: keys kwire does not know still round-trip and print.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ApiKey(pub i16);

macro_rules! api_keys {
    ($($name:ident = $value:expr, $text:expr;)*) => {
        impl ApiKey {
            $(
                #[doc = concat!("`", $text, "` (key ", stringify!($value), ").")]
                pub const $name: ApiKey = ApiKey($value);
            )*

            /// Kafka's name for the API (`"ListOffsets"`), or `None` for a key kwire does not know.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some($text),)*
                    _ => None,
                }
            }
        }
    };
}

api_keys! {
    PRODUCE = 0, "Produce";
    FETCH = 1, "Fetch";
    LIST_OFFSETS = 2, "ListOffsets";
    METADATA = 3, "Metadata";
    OFFSET_COMMIT = 8, "OffsetCommit";
    OFFSET_FETCH = 9, "OffsetFetch";
    FIND_COORDINATOR = 10, "FindCoordinator";
    JOIN_GROUP = 11, "JoinGroup";
    HEARTBEAT = 12, "Heartbeat";
    LEAVE_GROUP = 13, "LeaveGroup";
    SYNC_GROUP = 14, "SyncGroup";
    DESCRIBE_GROUPS = 15, "DescribeGroups";
    LIST_GROUPS = 16, "ListGroups";
    SASL_HANDSHAKE = 17, "SaslHandshake";
    API_VERSIONS = 18, "ApiVersions";
    CREATE_TOPICS = 19, "CreateTopics";
    DELETE_TOPICS = 20, "DeleteTopics";
    DELETE_RECORDS = 21, "DeleteRecords";
    INIT_PRODUCER_ID = 22, "InitProducerId";
    OFFSET_FOR_LEADER_EPOCH = 23, "OffsetForLeaderEpoch";
    ADD_PARTITIONS_TO_TXN = 24, "AddPartitionsToTxn";
    ADD_OFFSETS_TO_TXN = 25, "AddOffsetsToTxn";
    END_TXN = 26, "EndTxn";
    DESCRIBE_CONFIGS = 32, "DescribeConfigs";
    ALTER_CONFIGS = 33, "AlterConfigs";
    SASL_AUTHENTICATE = 36, "SaslAuthenticate";
    CREATE_PARTITIONS = 37, "CreatePartitions";
    DELETE_GROUPS = 42, "DeleteGroups";
    OFFSET_DELETE = 47, "OffsetDelete";
    DESCRIBE_CLUSTER = 60, "DescribeCluster";
    DESCRIBE_PRODUCERS = 61, "DescribeProducers";
    DESCRIBE_TRANSACTIONS = 65, "DescribeTransactions";
    LIST_TRANSACTIONS = 66, "ListTransactions";
    CONSUMER_GROUP_HEARTBEAT = 68, "ConsumerGroupHeartbeat";
    CONSUMER_GROUP_DESCRIBE = 69, "ConsumerGroupDescribe";
    GET_TELEMETRY_SUBSCRIPTIONS = 71, "GetTelemetrySubscriptions";
    PUSH_TELEMETRY = 72, "PushTelemetry";
    LIST_CONFIG_RESOURCES = 74, "ListConfigResources";
    DESCRIBE_TOPIC_PARTITIONS = 75, "DescribeTopicPartitions";
    SHARE_GROUP_HEARTBEAT = 76, "ShareGroupHeartbeat";
    SHARE_GROUP_DESCRIBE = 77, "ShareGroupDescribe";
    SHARE_FETCH = 78, "ShareFetch";
    SHARE_ACKNOWLEDGE = 79, "ShareAcknowledge";
    LEADER_AND_ISR = 4, "LeaderAndIsr";
    STOP_REPLICA = 5, "StopReplica";
    UPDATE_METADATA = 6, "UpdateMetadata";
    CONTROLLED_SHUTDOWN = 7, "ControlledShutdown";
    WRITE_TXN_MARKERS = 27, "WriteTxnMarkers";
    TXN_OFFSET_COMMIT = 28, "TxnOffsetCommit";
    DESCRIBE_ACLS = 29, "DescribeAcls";
    CREATE_ACLS = 30, "CreateAcls";
    DELETE_ACLS = 31, "DeleteAcls";
    ALTER_REPLICA_LOG_DIRS = 34, "AlterReplicaLogDirs";
    DESCRIBE_LOG_DIRS = 35, "DescribeLogDirs";
    CREATE_DELEGATION_TOKEN = 38, "CreateDelegationToken";
    RENEW_DELEGATION_TOKEN = 39, "RenewDelegationToken";
    EXPIRE_DELEGATION_TOKEN = 40, "ExpireDelegationToken";
    DESCRIBE_DELEGATION_TOKEN = 41, "DescribeDelegationToken";
    ELECT_LEADERS = 43, "ElectLeaders";
    INCREMENTAL_ALTER_CONFIGS = 44, "IncrementalAlterConfigs";
    ALTER_PARTITION_REASSIGNMENTS = 45, "AlterPartitionReassignments";
    LIST_PARTITION_REASSIGNMENTS = 46, "ListPartitionReassignments";
    DESCRIBE_CLIENT_QUOTAS = 48, "DescribeClientQuotas";
    ALTER_CLIENT_QUOTAS = 49, "AlterClientQuotas";
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50, "DescribeUserScramCredentials";
    ALTER_USER_SCRAM_CREDENTIALS = 51, "AlterUserScramCredentials";
    VOTE = 52, "Vote";
    BEGIN_QUORUM_EPOCH = 53, "BeginQuorumEpoch";
    END_QUORUM_EPOCH = 54, "EndQuorumEpoch";
    DESCRIBE_QUORUM = 55, "DescribeQuorum";
    ALTER_PARTITION = 56, "AlterPartition";
    UPDATE_FEATURES = 57, "UpdateFeatures";
    ENVELOPE = 58, "Envelope";
    FETCH_SNAPSHOT = 59, "FetchSnapshot";
    BROKER_REGISTRATION = 62, "BrokerRegistration";
    BROKER_HEARTBEAT = 63, "BrokerHeartbeat";
    UNREGISTER_BROKER = 64, "UnregisterBroker";
    ALLOCATE_PRODUCER_IDS = 67, "AllocateProducerIds";
    CONTROLLER_REGISTRATION = 70, "ControllerRegistration";
    ASSIGN_REPLICAS_TO_DIRS = 73, "AssignReplicasToDirs";
    ADD_RAFT_VOTER = 80, "AddRaftVoter";
    REMOVE_RAFT_VOTER = 81, "RemoveRaftVoter";
    UPDATE_RAFT_VOTER = 82, "UpdateRaftVoter";
    INITIALIZE_SHARE_GROUP_STATE = 83, "InitializeShareGroupState";
    READ_SHARE_GROUP_STATE = 84, "ReadShareGroupState";
    WRITE_SHARE_GROUP_STATE = 85, "WriteShareGroupState";
    DELETE_SHARE_GROUP_STATE = 86, "DeleteShareGroupState";
    READ_SHARE_GROUP_STATE_SUMMARY = 87, "ReadShareGroupStateSummary";
    STREAMS_GROUP_HEARTBEAT = 88, "StreamsGroupHeartbeat";
    STREAMS_GROUP_DESCRIBE = 89, "StreamsGroupDescribe";
    DESCRIBE_SHARE_GROUP_OFFSETS = 90, "DescribeShareGroupOffsets";
    ALTER_SHARE_GROUP_OFFSETS = 91, "AlterShareGroupOffsets";
    DELETE_SHARE_GROUP_OFFSETS = 92, "DeleteShareGroupOffsets";
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "ApiKey({})", self.0),
        }
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}({})", self.0)
    }
}

/// An inclusive range of API versions, `min..=max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionRange {
    /// The lowest version, inclusive.
    pub min: i16,
    /// The highest version, inclusive.
    pub max: i16,
}

impl VersionRange {
    /// The versions `min..=max`; empty if `min > max`.
    pub const fn new(min: i16, max: i16) -> Self {
        Self { min, max }
    }

    /// Whether `version` lies in the range (both ends inclusive).
    pub fn contains(self, version: i16) -> bool {
        (self.min..=self.max).contains(&version)
    }

    /// The highest version in both ranges, if they overlap.
    pub fn highest_common(self, other: VersionRange) -> Option<i16> {
        let max = self.max.min(other.max);
        (max >= self.min.max(other.min)).then_some(max)
    }
}

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.min, self.max)
    }
}

/// Everything a message declares about its API in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiSpec {
    /// The API key sent in every request header.
    pub key: ApiKey,
    /// Kafka's name for the API (`"ListOffsets"`), used in errors and JSON.
    pub name: &'static str,
    /// The versions kwire can encode and decode, inclusive.
    pub versions: VersionRange,
    /// The first flexible (KIP-482) version, or `None` if no version is flexible.
    pub flexible_from: Option<i16>,
}

impl ApiSpec {
    /// Whether `version` uses the flexible (KIP-482) encoding: compact strings and arrays, tagged fields.
    pub fn is_flexible(&self, version: i16) -> bool {
        self.flexible_from.is_some_and(|f| version >= f)
    }

    pub(crate) fn check_encode(&self, version: i16) -> Result<(), EncodeError> {
        if self.versions.contains(version) {
            Ok(())
        } else {
            Err(EncodeError::UnsupportedVersion { api: self.name, version })
        }
    }

    pub(crate) fn check_decode(&self, d: &Decoder, version: i16) -> DecodeResult<()> {
        if self.versions.contains(version) {
            Ok(())
        } else {
            Err(d.error(DecodeErrorKind::UnsupportedVersion { api: self.name, version }, "version"))
        }
    }

    /// The request header version for `version` of this API.
    pub fn request_header_version(&self, version: i16) -> i16 {
        if self.is_flexible(version) {
            2
        } else {
            1
        }
    }

    /// The response header version; ApiVersions responses always use v0 (KIP-511) so a
    /// client can read them whatever version it asked for.
    pub fn response_header_version(&self, version: i16) -> i16 {
        i16::from(self.key != ApiKey::API_VERSIONS && self.is_flexible(version))
    }
}

/// A message body (request or response) that can be written and read at any version of its
/// API's [`ApiSpec`].
///
/// A version-gated field left `None` is written as Kafka's default where the version has it,
/// and a field the version lacks reads back as `None`:
///
/// ```
/// use bytes::Bytes;
/// use kafka_wire::protocol::messages::MetadataRequest;
/// use kafka_wire::protocol::Body;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let request = MetadataRequest::for_topics(&["orders".to_owned()]);
/// assert_eq!(request.include_topic_authorized_operations, None);
///
/// let body = request.encode_body(12)?; // v12 is flexible: compact strings, tagged fields
/// let v12 = MetadataRequest::decode_body(Bytes::from(body), 12)?;
/// assert_eq!(v12.topics.as_deref().unwrap()[0].name.as_deref(), Some("orders"));
/// assert_eq!(v12.include_topic_authorized_operations, Some(false)); // added in v8, default false
///
/// // `allow_auto_topic_creation` was added in v4.
/// let v3 = MetadataRequest::decode_body(Bytes::from(request.encode_body(3)?), 3)?;
/// assert_eq!(v3.allow_auto_topic_creation, None);
/// # Ok(())
/// # }
/// ```
pub trait Body: Sized {
    /// The API this body belongs to, its versions and first flexible version.
    const SPEC: ApiSpec;

    /// Writes the body at `version`. The encoder's flexibility is already set.
    fn write(&self, e: &mut Encoder, version: i16) -> EncodeResult;

    /// Reads the body at `version`. The decoder's flexibility is already set.
    fn read(d: &mut Decoder, version: i16) -> DecodeResult<Self>;

    /// Encodes the body alone at `version`.
    fn encode_body(&self, version: i16) -> Result<Vec<u8>, EncodeError> {
        Self::SPEC.check_encode(version)?;
        let mut e = Encoder::new(Self::SPEC.is_flexible(version));
        self.write(&mut e, version)?;
        Ok(e.into_inner())
    }

    /// Decodes a whole body at `version`; trailing bytes are an error.
    fn decode_body(bytes: bytes::Bytes, version: i16) -> DecodeResult<Self> {
        let mut d = Decoder::with_flexible(bytes, Self::SPEC.is_flexible(version));
        Self::SPEC.check_decode(&d, version)?;
        let out = Self::read(&mut d, version)?;
        d.finish(Self::SPEC.name)?;
        Ok(out)
    }
}

/// A request body, tied to the body of its response.
pub trait Request: Body {
    /// The body a broker answers this request with.
    type Response: Body + super::throttle::Throttled;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highest_common_version_needs_overlap() {
        let ours = VersionRange::new(0, 9);
        assert_eq!(ours.highest_common(VersionRange::new(1, 12)), Some(9));
        assert_eq!(ours.highest_common(VersionRange::new(3, 5)), Some(5));
        assert_eq!(VersionRange::new(4, 9).highest_common(VersionRange::new(0, 3)), None);
    }

    #[test]
    fn unknown_api_keys_still_print() {
        assert_eq!(ApiKey(999).to_string(), "ApiKey(999)");
        assert_eq!(ApiKey::LIST_OFFSETS.to_string(), "ListOffsets");
    }
}
