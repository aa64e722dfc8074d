//! Version negotiation: what a broker said in ApiVersions, and the version kwire uses for each
//! API against it (the highest both sides know).

use std::collections::BTreeMap;

use crate::error::{BrokerRef, ClientError};
use kafka_wire::protocol::messages::ApiVersionsResponse;
use kafka_wire::protocol::{ApiKey, ApiSpec, VersionRange};

/// The API ranges one broker supports.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BrokerVersions {
    ranges: BTreeMap<ApiKey, VersionRange>,
    /// Finalized feature levels by name (ApiVersions v3+).
    finalized: BTreeMap<String, i16>,
    /// True when the broker predates ApiVersions (0.8/0.9) and the ranges are a fixed table.
    pub legacy: bool,
}

impl BrokerVersions {
    /// The ranges and finalized features a broker listed in its ApiVersions response (not
    /// [`legacy`](Self::legacy)). A malformed finalized-features field counts as none
    /// finalized: what depends on a feature then takes the path every broker serves.
    pub fn from_response(response: &ApiVersionsResponse) -> Self {
        let ranges = response.api_keys.iter().map(|a| (a.api_key, a.range())).collect();
        let finalized = response
            .finalized_features()
            .unwrap_or_default()
            .into_iter()
            .map(|f| (f.name, f.max_version_level))
            .collect();
        Self { ranges, finalized, legacy: false }
    }

    /// The level at which the cluster finalized feature `name` (`transaction.version`, ...),
    /// as this broker reported it; `None` when not finalized (or before Kafka 2.7).
    pub fn finalized_level(&self, name: &str) -> Option<i16> {
        self.finalized.get(name).copied()
    }

    /// The fixed table for brokers that close the connection on ApiVersions (before 0.10.0):
    /// the 0.9.0 versions, which a 0.8.2 broker also answers for the APIs it has.
    pub fn legacy_0_9() -> Self {
        let ranges = [
            (ApiKey::PRODUCE, VersionRange::new(0, 1)),
            (ApiKey::FETCH, VersionRange::new(0, 1)),
            (ApiKey::LIST_OFFSETS, VersionRange::new(0, 0)),
            (ApiKey::METADATA, VersionRange::new(0, 0)),
            (ApiKey::OFFSET_COMMIT, VersionRange::new(0, 2)),
            (ApiKey::OFFSET_FETCH, VersionRange::new(0, 1)),
            (ApiKey::FIND_COORDINATOR, VersionRange::new(0, 0)),
            (ApiKey::LIST_GROUPS, VersionRange::new(0, 0)),
            (ApiKey::DESCRIBE_GROUPS, VersionRange::new(0, 0)),
        ]
        .into_iter()
        .collect();
        Self { ranges, finalized: BTreeMap::new(), legacy: true }
    }

    /// The broker's range for `api`, if it supports it at all.
    pub fn range(&self, api: ApiKey) -> Option<VersionRange> {
        self.ranges.get(&api).copied()
    }

    /// Every API the broker supports with its version range, in API key order.
    pub fn iter(&self) -> impl Iterator<Item = (ApiKey, VersionRange)> + '_ {
        self.ranges.iter().map(|(k, v)| (*k, *v))
    }

    /// The version kwire uses for `spec` on this broker, or an error naming both ranges.
    pub fn choose(&self, spec: &ApiSpec, broker: &BrokerRef) -> Result<i16, ClientError> {
        let theirs = self.range(spec.key);
        theirs.and_then(|theirs| spec.versions.highest_common(theirs)).ok_or_else(|| {
            ClientError::UnsupportedApi { broker: broker.clone(), api: spec.key, ours: spec.versions, theirs }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_wire::protocol::messages::{metadata, ApiVersionRange};
    use kafka_wire::protocol::TaggedFields;

    fn broker() -> BrokerRef {
        BrokerRef { node_id: Some(1), addr: "127.0.0.1:9092".into() }
    }

    #[test]
    fn picks_the_highest_version_both_sides_know() {
        let response = ApiVersionsResponse {
            api_keys: vec![ApiVersionRange {
                api_key: ApiKey::METADATA,
                min_version: 0,
                max_version: 99,
                tagged_fields: TaggedFields::default(),
            }],
            ..Default::default()
        };
        let versions = BrokerVersions::from_response(&response);
        assert_eq!(versions.choose(&metadata::SPEC, &broker()).unwrap(), metadata::SPEC.versions.max);
    }

    #[test]
    fn no_overlap_names_the_api_and_both_ranges() {
        let response = ApiVersionsResponse {
            api_keys: vec![ApiVersionRange {
                api_key: ApiKey::METADATA,
                min_version: 20,
                max_version: 30,
                tagged_fields: TaggedFields::default(),
            }],
            ..Default::default()
        };
        let err = BrokerVersions::from_response(&response).choose(&metadata::SPEC, &broker()).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("Metadata") && text.contains("20-30") && text.contains("0-13"), "{text}");
    }
}
