//! Every API kwire can encode and decode, with its declared versions (from the one list,
//! [`for_each_api!`](crate::for_each_api)), and lookups by key and by name.

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
    let text = text.trim();
    SUPPORTED_APIS.iter().copied().find(|spec| {
        text.eq_ignore_ascii_case(spec.name)
            || text.replace('_', "-").eq_ignore_ascii_case(&words(spec.name).join("-"))
    })
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
        assert_eq!(specs.len(), 19);
        assert_eq!(spec_for(ApiKey::LIST_OFFSETS).map(|s| s.name), Some("ListOffsets"));
        assert_eq!(spec_for(ApiKey::JOIN_GROUP), None);
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
    fn other_names_are_not_apis() {
        for text in ["", "List", "listoffset", "list--offsets", "lis-toffsets", "JoinGroup", "2"] {
            assert_eq!(spec_by_name(text), None, "{text}");
        }
        assert_eq!(spec_by_name("  metadata\n").map(|s| s.key), Some(ApiKey::METADATA));
        assert_eq!(spec_by_name("Api-Versions").map(|s| s.key), Some(ApiKey::API_VERSIONS));
    }
}
