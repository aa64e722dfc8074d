//! Every API kwire can encode and decode, with its declared versions.

use super::api::ApiSpec;
use super::messages;

/// The specs of all implemented APIs, in API-key order.
pub fn supported_apis() -> Vec<ApiSpec> {
    let mut specs = vec![
        messages::produce::SPEC,
        messages::fetch::SPEC,
        messages::list_offsets::SPEC,
        messages::metadata::SPEC,
        messages::offset_commit::SPEC,
        messages::offset_fetch::SPEC,
        messages::find_coordinator::SPEC,
        messages::describe_groups::SPEC,
        messages::list_groups::SPEC,
        messages::sasl_handshake::SPEC,
        messages::api_versions::SPEC,
        messages::create_topics::SPEC,
        messages::delete_topics::SPEC,
        messages::delete_records::SPEC,
        messages::offset_for_leader_epoch::SPEC,
        messages::sasl_authenticate::SPEC,
        messages::create_partitions::SPEC,
        messages::offset_delete::SPEC,
    ];
    specs.sort_by_key(|s| s.key);
    specs
}

/// The spec kwire implements for `key`, if any.
pub fn spec_for(key: super::ApiKey) -> Option<ApiSpec> {
    supported_apis().into_iter().find(|s| s.key == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_api_is_listed_once() {
        let specs = supported_apis();
        let mut keys: Vec<_> = specs.iter().map(|s| s.key).collect();
        keys.dedup();
        assert_eq!(keys.len(), specs.len());
        assert_eq!(specs.len(), 18);
    }
}
