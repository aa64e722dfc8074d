//! Which transaction protocol a transaction speaks (KIP-890): version 1, where the client adds
//! each partition (AddPartitionsToTxn) and group (AddOffsetsToTxn) itself and keeps its epoch
//! across transactions, or version 2, where the broker adds them on the first Produce (v12+)
//! and TxnOffsetCommit (v5+) of the transaction and every EndTxn (v5+) bumps the epoch and
//! answers with the one to use next — so a late write of a finished transaction, carrying the
//! old epoch, is refused. Version 2 is used when the cluster finalizes `transaction.version`
//! at 2 or more (Kafka 4.0+) and the coordinator offers those request versions; version 1
//! otherwise, which every broker since 0.11 serves (Kafka 4.x serves both).

use crate::net::negotiate::BrokerVersions;
use kafka_wire::protocol::messages::{end_txn, produce, txn_offset_commit};
use kafka_wire::protocol::VersionRange;

/// The feature whose finalized level says which transaction protocols the cluster speaks.
pub(crate) const TRANSACTION_VERSION_FEATURE: &str = "transaction.version";

/// The request versions of transactions version 2: from these on, the broker adds partitions
/// and groups itself and EndTxn bumps the epoch.
const PRODUCE_TV2_MIN: i16 = 12;
const TXN_OFFSET_COMMIT_TV2_MIN: i16 = 5;
const END_TXN_TV2_MIN: i16 = 5;

/// A transaction's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TxnVersion {
    /// The client adds partitions and groups; the epoch stays across transactions.
    V1,
    /// The broker adds them; each EndTxn gives the producer a new epoch.
    V2,
}

impl TxnVersion {
    /// The version to use with a transaction coordinator that answered ApiVersions with
    /// `coordinator`: [`V2`](Self::V2) when it finalizes `transaction.version` ≥ 2 and both
    /// sides speak Produce v12, TxnOffsetCommit v5 and EndTxn v5 (a finalized feature is
    /// cluster-wide, so the partition leaders and group coordinators speak them too).
    pub(crate) fn for_coordinator(coordinator: &BrokerVersions) -> Self {
        let finalized = coordinator.finalized_level(TRANSACTION_VERSION_FEATURE).unwrap_or(0);
        if finalized >= 2 && Self::speaks_v2_requests(coordinator) {
            Self::V2
        } else {
            Self::V1
        }
    }

    /// Whether both sides speak Produce v12, TxnOffsetCommit v5 and EndTxn v5 — what a
    /// broker's connection says for good; only the feature's finalized level can change
    /// while the connection stays open.
    pub(crate) fn speaks_v2_requests(coordinator: &BrokerVersions) -> bool {
        let speaks = |spec: &kafka_wire::protocol::ApiSpec, min: i16| {
            coordinator.range(spec.key).is_some_and(|theirs| theirs.max >= min) && spec.versions.max >= min
        };
        speaks(&produce::SPEC, PRODUCE_TV2_MIN)
            && speaks(&txn_offset_commit::SPEC, TXN_OFFSET_COMMIT_TV2_MIN)
            && speaks(&end_txn::SPEC, END_TXN_TV2_MIN)
    }

    /// The Produce versions a transactional batch may go at: v12+ on version 2 (the leader
    /// adds the partition to the transaction), at most v11 on version 1.
    pub(crate) fn produce(self) -> VersionRange {
        self.split(produce::SPEC.versions, PRODUCE_TV2_MIN)
    }

    /// The TxnOffsetCommit versions: v5+ on version 2 (the group coordinator adds the group to
    /// the transaction), at most v4 on version 1 (after AddOffsetsToTxn).
    pub(crate) fn txn_offset_commit(self) -> VersionRange {
        self.split(txn_offset_commit::SPEC.versions, TXN_OFFSET_COMMIT_TV2_MIN)
    }

    /// The EndTxn versions: v5+ on version 2 (the answer carries the next epoch), at most v4
    /// on version 1.
    pub(crate) fn end_txn(self) -> VersionRange {
        self.split(end_txn::SPEC.versions, END_TXN_TV2_MIN)
    }

    /// Whether the client adds partitions and groups to the transaction itself.
    pub(crate) fn client_adds(self) -> bool {
        self == Self::V1
    }

    fn split(self, ours: VersionRange, v2_min: i16) -> VersionRange {
        match self {
            Self::V1 => VersionRange::new(ours.min, ours.max.min(v2_min - 1)),
            Self::V2 => VersionRange::new(ours.min.max(v2_min), ours.max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_wire::protocol::messages::{ApiVersionRange, ApiVersionsResponse};
    use kafka_wire::protocol::{ApiKey, TaggedFields};

    /// A broker's ApiVersions answer with `ranges` (key, max) and `transaction.version`
    /// finalized at `level` (none when `None`).
    fn broker(ranges: &[(ApiKey, i16)], level: Option<i16>) -> BrokerVersions {
        let mut tagged_fields = TaggedFields::default();
        if let Some(level) = level {
            let mut e = kafka_wire::protocol::Encoder::new(true);
            e.array(&[level], "finalized_features", |e, level| {
                e.string(TRANSACTION_VERSION_FEATURE, "name")?;
                e.i16(*level);
                e.i16(0);
                e.tagged_fields(&TaggedFields::default(), "tagged_fields", 3)
            })
            .unwrap();
            tagged_fields = TaggedFields::new(vec![(2, bytes::Bytes::from(e.into_inner()))]);
        }
        let api_keys = ranges
            .iter()
            .map(|(key, max)| ApiVersionRange {
                api_key: *key,
                min_version: 0,
                max_version: *max,
                tagged_fields: TaggedFields::default(),
            })
            .collect();
        BrokerVersions::from_response(&ApiVersionsResponse { api_keys, tagged_fields, ..Default::default() })
    }

    const KAFKA_4_1: &[(ApiKey, i16)] =
        &[(ApiKey::PRODUCE, 13), (ApiKey::TXN_OFFSET_COMMIT, 5), (ApiKey::END_TXN, 5)];

    #[test]
    fn a_kafka_4_cluster_finalizing_transaction_version_2_gets_version_2() {
        assert_eq!(TxnVersion::for_coordinator(&broker(KAFKA_4_1, Some(2))), TxnVersion::V2);
    }

    #[test]
    fn a_kafka_4_cluster_left_at_transaction_version_1_or_0_gets_version_1() {
        assert_eq!(TxnVersion::for_coordinator(&broker(KAFKA_4_1, Some(1))), TxnVersion::V1);
        assert_eq!(TxnVersion::for_coordinator(&broker(KAFKA_4_1, Some(0))), TxnVersion::V1);
        assert_eq!(TxnVersion::for_coordinator(&broker(KAFKA_4_1, None)), TxnVersion::V1);
    }

    #[test]
    fn a_kafka_3_9_broker_without_the_version_2_requests_gets_version_1() {
        let kafka_3_9 = &[(ApiKey::PRODUCE, 11), (ApiKey::TXN_OFFSET_COMMIT, 4), (ApiKey::END_TXN, 4)];
        assert_eq!(TxnVersion::for_coordinator(&broker(kafka_3_9, None)), TxnVersion::V1);
        // Even if it claimed the feature, it cannot speak the requests.
        assert_eq!(TxnVersion::for_coordinator(&broker(kafka_3_9, Some(2))), TxnVersion::V1);
    }

    #[test]
    fn a_coordinator_missing_any_one_version_2_request_gets_version_1() {
        for missing in [ApiKey::PRODUCE, ApiKey::TXN_OFFSET_COMMIT, ApiKey::END_TXN] {
            let ranges: Vec<(ApiKey, i16)> =
                KAFKA_4_1.iter().map(|(key, max)| (*key, if *key == missing { 4 } else { *max })).collect();
            assert_eq!(TxnVersion::for_coordinator(&broker(&ranges, Some(2))), TxnVersion::V1, "{missing:?}");
        }
    }

    #[test]
    fn version_1_caps_the_requests_below_version_2_and_version_2_starts_there() {
        assert_eq!(TxnVersion::V1.produce().max, 11);
        assert_eq!(TxnVersion::V2.produce().min, 12);
        assert_eq!(TxnVersion::V1.txn_offset_commit().max, 4);
        assert_eq!(TxnVersion::V2.txn_offset_commit().min, 5);
        assert_eq!(TxnVersion::V1.end_txn().max, 4);
        assert_eq!(TxnVersion::V2.end_txn(), VersionRange::new(5, end_txn::SPEC.versions.max));
        assert!(TxnVersion::V1.client_adds() && !TxnVersion::V2.client_adds());
    }
}
