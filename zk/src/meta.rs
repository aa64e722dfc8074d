//! kwire's metadata node, `/consumers/<group>/kwire/<topic>/<partition>`: what the old layout
//! cannot hold.
//!
//! ```text
//! {"version":1,"offset":42,"leader_epoch":7,"topic_id":"AAAAAAAAAAAAAAAAAAAAAQ"}
//! ```
//!
//! `offset` repeats the offset node's value: the metadata describes *that* offset only. An old
//! writer that moves the offset node leaves this node behind, so a reader uses the metadata only
//! when its `offset` equals the offset node's (see [`Meta::applies_to`]). `leader_epoch` and
//! `topic_id` are left out when unknown. `topic_id` is Kafka's own text form of a topic id:
//! URL-safe base64 without padding (`Uuid.toString()`), 22 characters, read and written by
//! [`Uuid`], the one codec of that form.

use std::fmt;

use kafka_vocab::Uuid;
use serde_json::{Map, Value};

/// The only format version this crate writes.
pub const VERSION: i64 = 1;

/// The decoded metadata of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// The offset this metadata describes.
    pub offset: i64,
    /// The leader epoch of the last record before the offset, when known.
    pub leader_epoch: Option<i32>,
    /// The topic's id when the offset was stored, when known.
    pub topic_id: Option<Uuid>,
}

/// Why a metadata node's bytes were refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetaError {
    /// Not a JSON object.
    NotJsonObject,
    /// `version` missing or not an integer.
    NoVersion,
    /// A version-1 field is missing or has the wrong type or range.
    BadField(&'static str),
}

impl fmt::Display for MetaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetaError::NotJsonObject => f.write_str("not a JSON object"),
            MetaError::NoVersion => f.write_str("no integer \"version\" field"),
            MetaError::BadField(name) => write!(f, "field {name:?} is missing or malformed"),
        }
    }
}

impl Meta {
    /// Whether this metadata describes `offset`; when it does not, an old writer moved the
    /// offset after kwire wrote this node and the metadata is stale.
    pub fn applies_to(&self, offset: i64) -> bool {
        self.offset == offset
    }

    /// The node's value, compact JSON with the fields in a fixed order.
    pub fn encode(&self) -> Vec<u8> {
        let mut s = format!("{{\"version\":{VERSION},\"offset\":{}", self.offset);
        if let Some(epoch) = self.leader_epoch {
            s.push_str(",\"leader_epoch\":");
            s.push_str(&epoch.to_string());
        }
        if let Some(id) = self.topic_id {
            s.push_str(",\"topic_id\":\"");
            s.push_str(&id.to_string());
            s.push('"');
        }
        s.push('}');
        s.into_bytes()
    }

    /// `Ok(None)` for a well-formed node of a later format version (a newer kwire wrote it; the
    /// offset node still holds the offset, so nothing is lost by not understanding it).
    pub fn decode(bytes: &[u8]) -> Result<Option<Meta>, MetaError> {
        let value: Value = serde_json::from_slice(bytes).map_err(|_| MetaError::NotJsonObject)?;
        let Value::Object(map) = value else { return Err(MetaError::NotJsonObject) };
        let version = map.get("version").and_then(Value::as_i64).ok_or(MetaError::NoVersion)?;
        if version != VERSION {
            return Ok(None);
        }
        let offset = map
            .get("offset")
            .and_then(Value::as_i64)
            .filter(|o| *o >= 0)
            .ok_or(MetaError::BadField("offset"))?;
        let leader_epoch = optional(&map, "leader_epoch", |v| {
            v.as_i64().and_then(|e| i32::try_from(e).ok()).filter(|e| *e >= 0)
        })?;
        let topic_id = optional(&map, "topic_id", |v| v.as_str().and_then(|t| Uuid::parse(t).ok()))?;
        Ok(Some(Meta { offset, leader_epoch, topic_id }))
    }
}

/// An absent or `null` field is `None`; a present one must convert.
fn optional<T>(
    map: &Map<String, Value>,
    name: &'static str,
    convert: impl Fn(&Value) -> Option<T>,
) -> Result<Option<T>, MetaError> {
    match map.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => convert(v).map(Some).ok_or(MetaError::BadField(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_round_trips_with_and_without_optional_fields() {
        let full = Meta { offset: 42, leader_epoch: Some(7), topic_id: Some(Uuid([9; 16])) };
        assert_eq!(Meta::decode(&full.encode()), Ok(Some(full)));
        let bare = Meta { offset: 0, leader_epoch: None, topic_id: None };
        assert_eq!(bare.encode(), br#"{"version":1,"offset":0}"#);
        assert_eq!(Meta::decode(&bare.encode()), Ok(Some(bare)));
    }

    #[test]
    fn metadata_text_is_stable() {
        let mut id = [0u8; 16];
        id[15] = 1;
        let meta = Meta { offset: 42, leader_epoch: Some(7), topic_id: Some(Uuid(id)) };
        assert_eq!(
            String::from_utf8(meta.encode()).unwrap(),
            r#"{"version":1,"offset":42,"leader_epoch":7,"topic_id":"AAAAAAAAAAAAAAAAAAAAAQ"}"#
        );
    }

    #[test]
    fn a_later_format_version_is_not_an_error() {
        assert_eq!(Meta::decode(br#"{"version":2,"whatever":[1,2]}"#), Ok(None));
    }

    #[test]
    fn damaged_metadata_is_an_error() {
        assert_eq!(Meta::decode(b""), Err(MetaError::NotJsonObject));
        assert_eq!(Meta::decode(b"42"), Err(MetaError::NotJsonObject));
        assert_eq!(Meta::decode(b"{\"version\":1,\"offset\":4"), Err(MetaError::NotJsonObject));
        assert_eq!(Meta::decode(br#"{"offset":4}"#), Err(MetaError::NoVersion));
        assert_eq!(Meta::decode(br#"{"version":1}"#), Err(MetaError::BadField("offset")));
        assert_eq!(Meta::decode(br#"{"version":1,"offset":-1}"#), Err(MetaError::BadField("offset")));
        assert_eq!(Meta::decode(br#"{"version":1,"offset":"4"}"#), Err(MetaError::BadField("offset")));
        assert_eq!(
            Meta::decode(br#"{"version":1,"offset":4,"leader_epoch":4294967296}"#),
            Err(MetaError::BadField("leader_epoch"))
        );
        assert_eq!(
            Meta::decode(br#"{"version":1,"offset":4,"topic_id":"nope"}"#),
            Err(MetaError::BadField("topic_id"))
        );
    }

    #[test]
    fn null_optional_fields_mean_unknown() {
        assert_eq!(
            Meta::decode(br#"{"version":1,"offset":4,"leader_epoch":null,"topic_id":null}"#),
            Ok(Some(Meta { offset: 4, leader_epoch: None, topic_id: None }))
        );
    }

    #[test]
    fn metadata_describes_only_its_own_offset() {
        let meta = Meta { offset: 42, leader_epoch: Some(1), topic_id: None };
        assert!(meta.applies_to(42));
        assert!(!meta.applies_to(43));
    }
}
