//! Every API kwire can encode and decode with its typed messages, with their declared versions
//! (from the one list of typed APIs, [`for_each_api!`](crate::for_each_api)); every API Kafka
//! defines (from the [schema table](super::schema), which the JSON renderers decode), and
//! lookups of both by key and by name.

use super::api::{ApiKey, ApiSpec, Body};
#[allow(clippy::wildcard_imports)] // every message type, as the list names them
use super::messages::*;

macro_rules! specs {
    ($(($key:literal, $name:ident, $req:ident, $resp:ident)),* $(,)?) => {
        /// The specs of all implemented APIs, in API-key order.
        pub const SUPPORTED_APIS: &[ApiSpec] = &[$(<$req as Body>::SPEC),*];
    };
}

crate::for_each_api!(specs);

/// The specs of all implemented APIs, in API-key order ([`SUPPORTED_APIS`] as a `Vec`).
pub fn supported_apis() -> Vec<ApiSpec> {
    SUPPORTED_APIS.to_vec()
}

/// The spec kwire implements for `key`, if any.
pub fn spec_for(key: ApiKey) -> Option<ApiSpec> {
    SUPPORTED_APIS.iter().find(|s| s.key == key).copied()
}

/// The spellings of an API name that [`spec_by_name`] accepts (each in any case): Kafka's
/// protocol name (`ListOffsets`), kebab case (`list-offsets`), snake case (`list_offsets`) and
/// the Java `ApiKeys` enum's (`LIST_OFFSETS`).
pub fn name_forms(name: &str) -> [String; 4] {
    let words = words(name);
    [
        name.to_owned(),
        words.join("-").to_ascii_lowercase(),
        words.join("_").to_ascii_lowercase(),
        words.join("_").to_ascii_uppercase(),
    ]
}

/// The implemented API named `text` in any of its [`name_forms`], in any case (surrounding
/// whitespace ignored). Numeric keys are [`spec_for`]'s.
pub fn spec_by_name(text: &str) -> Option<ApiSpec> {
    SUPPORTED_APIS.iter().copied().find(|spec| names(spec, text))
}

/// Whether `text` is one of `spec`'s [`name_forms`], in any case, surrounding whitespace ignored.
fn names(spec: &ApiSpec, text: &str) -> bool {
    let text = text.trim();
    text.eq_ignore_ascii_case(spec.name)
        || text.replace('_', "-").eq_ignore_ascii_case(&words(spec.name).join("-"))
}

/// Every API Kafka defines — those of kafka-clients 4.1.1 and those Kafka 4.0 removed — with
/// all their versions, in key order ([`schema::api_specs`](super::schema::api_specs)). kwire
/// renders every one of them as JSON (feature `json`); [`SUPPORTED_APIS`] are those it also
/// has typed messages for.
pub fn all_apis() -> Vec<ApiSpec> {
    super::schema::api_specs()
}

/// The API Kafka defines for `key`, typed in kwire or not.
pub fn any_spec_for(key: ApiKey) -> Option<ApiSpec> {
    all_apis().into_iter().find(|s| s.key == key)
}

/// The API Kafka defines named `text` in any of its [`name_forms`], in any case.
pub fn any_spec_by_name(text: &str) -> Option<ApiSpec> {
    all_apis().into_iter().find(|spec| names(spec, text))
}

/// `ListOffsets` → `["List", "Offsets"]`: a word starts at each capital after a lowercase
/// letter or a digit.
fn words(name: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut start = 0;
    let bytes = name.as_bytes();
    for i in 1..bytes.len() {
        if bytes[i].is_ascii_uppercase()
            && (bytes[i - 1].is_ascii_lowercase() || bytes[i - 1].is_ascii_digit())
        {
            words.push(&name[start..i]);
            start = i;
        }
    }
    words.push(&name[start..]);
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_api_is_listed_once_in_key_order() {
        let specs = supported_apis();
        let keys: Vec<_> = specs.iter().map(|s| s.key).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(keys, sorted);
        assert_eq!(specs.len(), 31);
        assert_eq!(spec_for(ApiKey::LIST_OFFSETS).map(|s| s.name), Some("ListOffsets"));
        assert_eq!(spec_for(ApiKey::JOIN_GROUP).map(|s| s.name), Some("JoinGroup"));
        assert_eq!(spec_for(ApiKey::DESCRIBE_CONFIGS), None);
    }

    #[test]
    fn the_four_spellings_of_every_name() {
        assert_eq!(
            name_forms("ListOffsets"),
            ["ListOffsets", "list-offsets", "list_offsets", "LIST_OFFSETS"]
        );
        assert_eq!(
            name_forms("OffsetForLeaderEpoch"),
            [
                "OffsetForLeaderEpoch",
                "offset-for-leader-epoch",
                "offset_for_leader_epoch",
                "OFFSET_FOR_LEADER_EPOCH"
            ]
        );
        assert_eq!(name_forms("Fetch"), ["Fetch", "fetch", "fetch", "FETCH"]);
        for spec in SUPPORTED_APIS {
            for form in name_forms(spec.name) {
                for text in [form.clone(), form.to_ascii_lowercase(), form.to_ascii_uppercase()] {
                    assert_eq!(spec_by_name(&text), Some(*spec), "{text}");
                }
            }
        }
    }

    #[test]
    fn every_api_kafka_defines_is_found_by_every_spelling_of_its_name() {
        let all = all_apis();
        for spec in &all {
            for form in name_forms(spec.name) {
                assert_eq!(any_spec_by_name(&form.to_ascii_lowercase()), Some(*spec), "{form}");
            }
            assert_eq!(any_spec_for(spec.key), Some(*spec));
        }
        assert_eq!(
            any_spec_by_name("consumer-group-heartbeat").map(|s| s.key),
            Some(ApiKey::CONSUMER_GROUP_HEARTBEAT)
        );
        assert_eq!(any_spec_by_name("JOIN_GROUP").map(|s| s.key), Some(ApiKey::JOIN_GROUP));
        // Every typed API is one of them, with no more versions than Kafka defines.
        for typed in SUPPORTED_APIS {
            let any = any_spec_for(typed.key).expect("a typed API Kafka defines");
            assert_eq!(any.name, typed.name);
            assert!(
                any.versions.min <= typed.versions.min && typed.versions.max <= any.versions.max,
                "{}",
                typed.name
            );
        }
        assert_eq!(any_spec_by_name("NoSuchApi"), None);
        assert_eq!(any_spec_for(ApiKey(999)), None);
    }

    #[test]
    fn other_names_are_not_apis() {
        for text in ["", "List", "listoffset", "list--offsets", "lis-toffsets", "DescribeConfigs", "2"] {
            assert_eq!(spec_by_name(text), None, "{text}");
        }
        assert_eq!(spec_by_name("  metadata\n").map(|s| s.key), Some(ApiKey::METADATA));
        assert_eq!(spec_by_name("Api-Versions").map(|s| s.key), Some(ApiKey::API_VERSIONS));
    }
}
