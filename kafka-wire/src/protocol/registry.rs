//! Every API kwire can encode and decode, with its declared versions.

use super::api::ApiSpec;
use super::messages;

/// The specs of all implemented APIs, in API-key order.
pub fn supported_apis() -> Vec<ApiSpec> {
    let mut specs = vec![messages::api_versions::SPEC, messages::metadata::SPEC];
    specs.sort_by_key(|s| s.key);
    specs
}

/// The spec kwire implements for `key`, if any.
pub fn spec_for(key: super::ApiKey) -> Option<ApiSpec> {
    supported_apis().into_iter().find(|s| s.key == key)
}
