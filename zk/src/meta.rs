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
//! URL-safe base64 without padding (`Uuid.toString()`), 22 characters.

use std::fmt;

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
    pub topic_id: Option<[u8; 16]>,
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
            s.push_str(&encode_topic_id(&id));
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
        let topic_id = optional(&map, "topic_id", |v| v.as_str().and_then(decode_topic_id))?;
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

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Kafka's `Uuid.toString()`: URL-safe base64, no padding, 22 characters.
pub fn encode_topic_id(id: &[u8; 16]) -> String {
    let mut out = String::with_capacity(22);
    for chunk in id.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 0x3f) as usize]));
        }
    }
    out
}

/// The inverse of [`encode_topic_id`]; `None` unless the text is exactly 22 characters of the
/// URL-safe alphabet encoding 16 bytes (the unused low bits of the last character must be 0).
pub fn decode_topic_id(text: &str) -> Option<[u8; 16]> {
    let bytes = text.as_bytes();
    if bytes.len() != 22 {
        return None;
    }
    let mut bits: u128 = 0;
    for (i, &c) in bytes.iter().enumerate() {
        let v = ALPHABET.iter().position(|&a| a == c)? as u128;
        if i == 21 {
            // 21 characters carry 126 bits; the last one contributes its top 2 bits only.
            if v & 0xf != 0 {
                return None;
            }
            bits = (bits << 2) | (v >> 4);
        } else {
            bits = (bits << 6) | v;
        }
    }
    Some(bits.to_be_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_id_text_matches_kafka_uuid_to_string() {
        // Kafka: new Uuid(0L, 1L).toString() == "AAAAAAAAAAAAAAAAAAAAAQ"
        let mut one = [0u8; 16];
        one[15] = 1;
        assert_eq!(encode_topic_id(&one), "AAAAAAAAAAAAAAAAAAAAAQ");
        assert_eq!(decode_topic_id("AAAAAAAAAAAAAAAAAAAAAQ"), Some(one));
        // Kafka: new Uuid(-1L, -1L).toString() == "_____________________w"
        assert_eq!(encode_topic_id(&[0xff; 16]), "_____________________w");
        assert_eq!(decode_topic_id("_____________________w"), Some([0xff; 16]));
    }

    #[test]
    fn topic_id_round_trips() {
        let mut id = [0u8; 16];
        for seed in 0u8..=255 {
            for (i, b) in id.iter_mut().enumerate() {
                *b = seed.wrapping_mul(31).wrapping_add(i as u8 * 17);
            }
            assert_eq!(decode_topic_id(&encode_topic_id(&id)), Some(id));
        }
    }

    #[test]
    fn malformed_topic_id_text_is_refused() {
        assert_eq!(decode_topic_id(""), None);
        assert_eq!(decode_topic_id("AAAAAAAAAAAAAAAAAAAAA"), None);
        assert_eq!(decode_topic_id("AAAAAAAAAAAAAAAAAAAAAAA"), None);
        assert_eq!(decode_topic_id("AAAAAAAAAAAAAAAAAAAAA+"), None);
        assert_eq!(decode_topic_id("AAAAAAAAAAAAAAAAAAAAAB"), None);
        assert_eq!(decode_topic_id("AAAAAAAAAAAAAAAAAAAAéA"), None);
    }

    #[test]
    fn metadata_round_trips_with_and_without_optional_fields() {
        let full = Meta { offset: 42, leader_epoch: Some(7), topic_id: Some([9; 16]) };
        assert_eq!(Meta::decode(&full.encode()), Ok(Some(full)));
        let bare = Meta { offset: 0, leader_epoch: None, topic_id: None };
        assert_eq!(bare.encode(), br#"{"version":1,"offset":0}"#);
        assert_eq!(Meta::decode(&bare.encode()), Ok(Some(bare)));
    }

    #[test]
    fn metadata_text_is_stable() {
        let mut id = [0u8; 16];
        id[15] = 1;
        let meta = Meta { offset: 42, leader_epoch: Some(7), topic_id: Some(id) };
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
