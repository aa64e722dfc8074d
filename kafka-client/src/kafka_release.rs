//! The Kafka release that introduced an API (or a feature that rides on an API version), so a
//! broker too old for a call can be named in one line: "not supported by this broker (needs
//! Kafka X.Y)". Releases are Apache Kafka's, as in each release's `validVersions` (see
//! `/work/shared/reference/kafka-protocol.md`, section 3) and the KIPs that added the APIs.

use kafka_wire::protocol::ApiKey;

/// Client features whose support is a minimum version of an API rather than the API itself.
/// [`Feature::check`], which makes the error naming the release, is in `error.rs`, so this table
/// stays below the error that quotes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feature {
    /// What the caller asked for, as the error names it.
    pub name: &'static str,
    /// The API whose version decides.
    pub api: ApiKey,
    /// The lowest version of `api` that carries the feature.
    pub min_version: i16,
    /// The first Kafka release with that version.
    pub since: &'static str,
}

/// Writing record batches (magic 2), the only format kwire produces: Produce v3 (KIP-98).
pub const PRODUCE_RECORD_BATCHES: Feature = Feature {
    name: "produce (record batches, magic 2)",
    api: ApiKey::PRODUCE,
    min_version: 3,
    since: "0.11",
};
/// Reading only committed transactional data: Fetch v4 (KIP-98).
pub const READ_COMMITTED_FETCH: Feature =
    Feature { name: "read_committed fetch", api: ApiKey::FETCH, min_version: 4, since: "0.11" };
/// The last stable offset and read_committed offsets: ListOffsets v2 (KIP-98).
pub const READ_COMMITTED_OFFSETS: Feature =
    Feature { name: "read_committed offsets", api: ApiKey::LIST_OFFSETS, min_version: 2, since: "0.11" };
/// The offset of the record with the largest timestamp: ListOffsets v7 (KIP-734).
pub const MAX_TIMESTAMP_OFFSETS: Feature =
    Feature { name: "max-timestamp offsets", api: ApiKey::LIST_OFFSETS, min_version: 7, since: "3.0" };
/// Leader-epoch fenced end offsets, the truncation check of KIP-320: OffsetForLeaderEpoch v2.
pub const LEADER_EPOCH_VALIDATION: Feature = Feature {
    name: "leader-epoch validation (OffsetForLeaderEpoch with the current epoch)",
    api: ApiKey::OFFSET_FOR_LEADER_EPOCH,
    min_version: 2,
    since: "2.1",
};

/// The first Kafka release that has `api` at all, for the APIs a client sends; `None` for
/// inter-broker and controller APIs.
pub fn api_introduced_in(api: ApiKey) -> Option<&'static str> {
    let since = match api {
        ApiKey::PRODUCE | ApiKey::FETCH | ApiKey::LIST_OFFSETS | ApiKey::METADATA => "0.8",
        ApiKey::OFFSET_COMMIT | ApiKey::OFFSET_FETCH => "0.8.1",
        ApiKey::FIND_COORDINATOR => "0.8.2",
        ApiKey::JOIN_GROUP
        | ApiKey::HEARTBEAT
        | ApiKey::LEAVE_GROUP
        | ApiKey::SYNC_GROUP
        | ApiKey::DESCRIBE_GROUPS
        | ApiKey::LIST_GROUPS => "0.9",
        ApiKey::SASL_HANDSHAKE | ApiKey::API_VERSIONS => "0.10.0",
        ApiKey::CREATE_TOPICS | ApiKey::DELETE_TOPICS => "0.10.1",
        ApiKey::DELETE_RECORDS
        | ApiKey::INIT_PRODUCER_ID
        | ApiKey::OFFSET_FOR_LEADER_EPOCH
        | ApiKey::ADD_PARTITIONS_TO_TXN
        | ApiKey::ADD_OFFSETS_TO_TXN
        | ApiKey::END_TXN
        | ApiKey::TXN_OFFSET_COMMIT
        | ApiKey::DESCRIBE_ACLS
        | ApiKey::CREATE_ACLS
        | ApiKey::DELETE_ACLS
        | ApiKey::DESCRIBE_CONFIGS
        | ApiKey::ALTER_CONFIGS => "0.11",
        ApiKey::SASL_AUTHENTICATE
        | ApiKey::CREATE_PARTITIONS
        | ApiKey::ALTER_REPLICA_LOG_DIRS
        | ApiKey::DESCRIBE_LOG_DIRS => "1.0",
        ApiKey::DELETE_GROUPS => "1.1",
        ApiKey::ELECT_LEADERS => "2.2",
        ApiKey::INCREMENTAL_ALTER_CONFIGS => "2.3",
        ApiKey::OFFSET_DELETE
        | ApiKey::ALTER_PARTITION_REASSIGNMENTS
        | ApiKey::LIST_PARTITION_REASSIGNMENTS => "2.4",
        ApiKey::DESCRIBE_CLIENT_QUOTAS | ApiKey::ALTER_CLIENT_QUOTAS => "2.6",
        ApiKey::DESCRIBE_USER_SCRAM_CREDENTIALS | ApiKey::ALTER_USER_SCRAM_CREDENTIALS => "2.7",
        ApiKey::DESCRIBE_CLUSTER | ApiKey::DESCRIBE_PRODUCERS => "2.8",
        ApiKey::DESCRIBE_TRANSACTIONS | ApiKey::LIST_TRANSACTIONS => "3.0",
        ApiKey::GET_TELEMETRY_SUBSCRIPTIONS | ApiKey::PUSH_TELEMETRY => "3.7",
        ApiKey::DESCRIBE_TOPIC_PARTITIONS => "3.8",
        // KIP-848 groups: early access in 3.7, generally available (and on by default) in 4.0.
        ApiKey::CONSUMER_GROUP_HEARTBEAT | ApiKey::CONSUMER_GROUP_DESCRIBE => "4.0",
        // KIP-932 share groups: 4.0's early-access versions are gone; stable from 4.1 (with the
        // cluster's share.version finalized at 1).
        ApiKey::SHARE_GROUP_DESCRIBE | ApiKey::DESCRIBE_SHARE_GROUP_OFFSETS => "4.1",
        _ => return None,
    };
    Some(since)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{BrokerRef, ClientError};

    #[test]
    fn apis_of_the_0_11_release_name_0_11() {
        assert_eq!(api_introduced_in(ApiKey::DELETE_RECORDS), Some("0.11"));
        assert_eq!(api_introduced_in(ApiKey::INIT_PRODUCER_ID), Some("0.11"));
        assert_eq!(api_introduced_in(ApiKey::CREATE_PARTITIONS), Some("1.0"));
    }

    #[test]
    fn a_feature_below_its_version_names_the_release_that_has_it() {
        let broker = BrokerRef { node_id: Some(1), addr: "127.0.0.1:9092".into() };
        assert!(READ_COMMITTED_FETCH.check(4, &broker).is_ok());
        let text = READ_COMMITTED_FETCH.check(3, &broker).unwrap_err().to_string();
        assert!(text.contains("not supported by this broker (needs Kafka 0.11)"), "{text}");
        assert!(text.starts_with("read_committed fetch"), "{text}");
    }

    #[test]
    fn an_api_the_broker_lacks_names_the_release_that_added_it() {
        let broker = BrokerRef { node_id: Some(1), addr: "127.0.0.1:9092".into() };
        let missing = ClientError::UnsupportedApi {
            broker: broker.clone(),
            api: ApiKey::DELETE_RECORDS,
            ours: kafka_wire::protocol::VersionRange::new(0, 2),
            theirs: None,
        };
        assert!(missing.is_unsupported());
        let text = missing.to_string();
        assert!(text.contains("DeleteRecords") && text.contains("(needs Kafka 0.11)"), "{text}");
        // A broker newer than kwire is not "too old": no release to name.
        let too_new = ClientError::UnsupportedApi {
            broker,
            api: ApiKey::METADATA,
            ours: kafka_wire::protocol::VersionRange::new(0, 13),
            theirs: Some(kafka_wire::protocol::VersionRange::new(20, 30)),
        };
        assert!(!too_new.is_unsupported());
        assert!(!too_new.to_string().contains("needs Kafka"), "{too_new}");
    }

    #[test]
    fn broker_only_apis_have_no_client_release() {
        assert_eq!(api_introduced_in(ApiKey::LEADER_AND_ISR), None);
        assert_eq!(api_introduced_in(ApiKey::VOTE), None);
    }
}
