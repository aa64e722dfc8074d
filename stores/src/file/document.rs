//! The file store's JSON document: decoded in one linear pass that checks a deadline as it
//! goes, and encoded sorted by topic and partition.
//!
//! Decoding is linear in the number of entries (the duplicate check is a hash set) and gives
//! up at the deadline, checked every [`DEADLINE_STRIDE`] entries, so neither a huge nor a
//! hostile file can hold a caller past its timeout.

use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;
use std::time::Instant;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::{FORMAT, VERSION};
use kafka_wire::protocol::Uuid;
use offset_store::StoredOffset;

/// How many entries are decoded or checked between two looks at the clock.
const DEADLINE_STRIDE: usize = 1024;

/// Why a document could not be decoded.
#[derive(Debug)]
pub(super) enum Problem {
    /// Not JSON, not a kwire offset document, or an invalid entry.
    Corrupt(String),
    /// A format version this build does not read.
    UnsupportedVersion(u32),
    /// Another group's document.
    WrongGroup(String),
    /// The deadline passed while decoding.
    TimedOut,
}

#[derive(Serialize)]
struct DocumentOut<'a> {
    format: &'a str,
    version: u32,
    group: &'a str,
    offsets: Vec<Entry>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    topic: String,
    partition: i32,
    offset: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    leader_epoch: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    topic_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    commit_timestamp_ms: Option<i64>,
}

/// The document `bytes` holds, as the offsets of `group`. `deadline`: give up once it has
/// passed (`None`: never).
pub(super) fn decode(
    bytes: &[u8],
    group: &str,
    deadline: Option<Instant>,
) -> Result<Vec<StoredOffset>, Problem> {
    let timed_out = Cell::new(false);
    let passed = || {
        let late = deadline.is_some_and(|d| Instant::now() >= d);
        timed_out.set(late);
        late
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = DocumentSeed { passed: &passed }.deserialize(&mut de).and_then(|doc| de.end().map(|()| doc));
    let doc = match parsed {
        Ok(doc) => doc,
        Err(_) if timed_out.get() => return Err(Problem::TimedOut),
        Err(e) => return Err(Problem::Corrupt(e.to_string())),
    };
    if doc.format != FORMAT {
        return Err(Problem::Corrupt(format!("format is `{}`, expected `{FORMAT}`", doc.format)));
    }
    if doc.version > VERSION || doc.version == 0 {
        return Err(Problem::UnsupportedVersion(doc.version));
    }
    if doc.group != group {
        return Err(Problem::WrongGroup(doc.group));
    }
    let mut out = Vec::with_capacity(doc.offsets.len());
    for (i, e) in doc.offsets.into_iter().enumerate() {
        if i % DEADLINE_STRIDE == 0 && passed() {
            return Err(Problem::TimedOut);
        }
        let topic_id = match e.topic_id {
            None => None,
            Some(text) => Some(Uuid::parse(&text).map_err(|e| {
                Problem::Corrupt(format!("entry {i}: `{text}` is not a Kafka topic id: {e}"))
            })?),
        };
        out.push(StoredOffset {
            topic: e.topic,
            partition: e.partition,
            offset: e.offset,
            leader_epoch: e.leader_epoch,
            topic_id,
            commit_timestamp_ms: e.commit_timestamp_ms,
        });
    }
    check(&out, &passed).map_err(|p| match p {
        Some(reason) => Problem::Corrupt(reason),
        None => Problem::TimedOut,
    })?;
    Ok(out)
}

/// What every stored entry must be, read or about to be written: a named topic, a partition
/// and offset `>= 0`, each partition once. `Err(None)`: `passed` said the deadline passed.
/// Linear: the duplicate check is a hash set.
pub(super) fn check(offsets: &[StoredOffset], passed: &dyn Fn() -> bool) -> Result<(), Option<String>> {
    let mut seen = HashSet::with_capacity(offsets.len());
    for (i, o) in offsets.iter().enumerate() {
        if i % DEADLINE_STRIDE == 0 && passed() {
            return Err(None);
        }
        if o.offset < 0 || o.partition < 0 || o.topic.is_empty() {
            return Err(Some(format!(
                "entry {i} ({}:{}) has a negative offset or partition or an empty topic",
                o.topic, o.partition
            )));
        }
        if !seen.insert((o.topic.as_str(), o.partition)) {
            return Err(Some(format!("{}:{} appears twice", o.topic, o.partition)));
        }
    }
    Ok(())
}

/// `offsets` as the document of `group`, sorted by topic and partition, ending in a newline.
pub(super) fn encode(group: &str, offsets: &[StoredOffset]) -> Result<Vec<u8>, serde_json::Error> {
    let mut sorted: Vec<&StoredOffset> = offsets.iter().collect();
    sorted.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    let doc = DocumentOut {
        format: FORMAT,
        version: VERSION,
        group,
        offsets: sorted
            .into_iter()
            .map(|o| Entry {
                topic: o.topic.clone(),
                partition: o.partition,
                offset: o.offset,
                leader_epoch: o.leader_epoch,
                topic_id: o.topic_id.map(|id| id.to_string()),
                commit_timestamp_ms: o.commit_timestamp_ms,
            })
            .collect(),
    };
    let mut bytes = serde_json::to_vec_pretty(&doc)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// The document as read, before its fields are checked.
struct DocumentIn {
    format: String,
    version: u32,
    group: String,
    offsets: Vec<Entry>,
}

/// Decodes the top-level object; `passed` says whether the deadline has passed. Unknown
/// top-level fields are skipped (a newer minor writer may add some); a field given twice is an
/// error.
struct DocumentSeed<'a, F: Fn() -> bool> {
    passed: &'a F,
}

impl<'de, F: Fn() -> bool> DeserializeSeed<'de> for DocumentSeed<'_, F> {
    type Value = DocumentIn;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<DocumentIn, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, F: Fn() -> bool> Visitor<'de> for DocumentSeed<'_, F> {
    type Value = DocumentIn;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a kwire offset document (an object with format, version, group, offsets)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<DocumentIn, A::Error> {
        fn once<T, E: de::Error>(slot: &mut Option<T>, name: &'static str, value: T) -> Result<(), E> {
            if slot.replace(value).is_some() {
                return Err(E::duplicate_field(name));
            }
            Ok(())
        }
        let (mut format, mut version, mut group, mut offsets) = (None, None, None, None);
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "format" => once(&mut format, "format", map.next_value::<String>()?)?,
                "version" => once(&mut version, "version", map.next_value::<u32>()?)?,
                "group" => once(&mut group, "group", map.next_value::<String>()?)?,
                "offsets" => {
                    let entries = map.next_value_seed(EntriesSeed { passed: self.passed })?;
                    once(&mut offsets, "offsets", entries)?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(DocumentIn {
            format: format.ok_or_else(|| de::Error::missing_field("format"))?,
            version: version.ok_or_else(|| de::Error::missing_field("version"))?,
            group: group.ok_or_else(|| de::Error::missing_field("group"))?,
            offsets: offsets.ok_or_else(|| de::Error::missing_field("offsets"))?,
        })
    }
}

/// Decodes the `offsets` array, looking at the clock every [`DEADLINE_STRIDE`] entries.
struct EntriesSeed<'a, F: Fn() -> bool> {
    passed: &'a F,
}

impl<'de, F: Fn() -> bool> DeserializeSeed<'de> for EntriesSeed<'_, F> {
    type Value = Vec<Entry>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Vec<Entry>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, F: Fn() -> bool> Visitor<'de> for EntriesSeed<'_, F> {
    type Value = Vec<Entry>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of offset entries")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Entry>, A::Error> {
        // No capacity from a size hint: the count is not known before the entries are read.
        let mut out = Vec::new();
        while let Some(entry) = seq.next_element::<Entry>()? {
            if out.len() % DEADLINE_STRIDE == 0 && (self.passed)() {
                return Err(de::Error::custom("the deadline passed while reading the entries"));
            }
            out.push(entry);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(n: usize) -> Vec<StoredOffset> {
        (0..n)
            .map(|i| StoredOffset {
                topic: format!("t{}", i % 7),
                partition: i as i32,
                offset: i as i64,
                leader_epoch: (i % 2 == 0).then_some(3),
                topic_id: (i % 3 == 0).then_some(Uuid([i as u8; 16])),
                commit_timestamp_ms: Some(1_700_000_000_000),
            })
            .collect()
    }

    #[test]
    fn an_encoded_document_decodes_to_the_same_offsets_sorted() {
        let offsets = entries(50);
        let bytes = encode("g", &offsets).unwrap();
        let mut back = decode(&bytes, "g", None).unwrap();
        let mut want = offsets;
        want.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
        back.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
        assert_eq!(back, want);
    }

    #[test]
    fn a_deadline_already_passed_stops_decoding_a_large_document() {
        let bytes = encode("g", &entries(5000)).unwrap();
        assert!(matches!(decode(&bytes, "g", Some(Instant::now())), Err(Problem::TimedOut)));
    }

    #[test]
    fn a_field_given_twice_or_trailing_bytes_make_the_document_corrupt() {
        for text in [
            r#"{"format":"kwire-offsets","format":"kwire-offsets","version":1,"group":"g","offsets":[]}"#,
            r#"{"format":"kwire-offsets","version":1,"group":"g","offsets":[]} x"#,
            r#"{"format":"kwire-offsets","version":1,"group":"g"}"#,
            r"[1, 2]",
        ] {
            assert!(matches!(decode(text.as_bytes(), "g", None), Err(Problem::Corrupt(_))), "{text}");
        }
        let extra = r#"{"format":"kwire-offsets","version":1,"group":"g","offsets":[],"note":{"a":[1]}}"#;
        assert!(
            decode(extra.as_bytes(), "g", None).unwrap().is_empty(),
            "unknown top-level fields are skipped"
        );
    }
}
