//! The text of Spark's metadata-log files, read and written without Spark: an offsets file
//! (`offsets/N`), a commit file (`commits/N`) and a Kafka source's starting-offsets file
//! (`sources/I/0`). Pure: bytes in, values or an error naming the line out.
//!
//! An offsets file is lines separated by `\n` (no trailing newline):
//!
//! ```text
//! v1                                                    version header
//! {"batchWatermarkMs":0,"batchTimestampMs":...,"conf":{...}}   metadata (may be empty)
//! {"events":{"0":120,"1":98}}                           one line per source: its offset JSON,
//! -                                                     or `-` for a source without one
//! ```
//!
//! A Kafka source's offset is `{"TOPIC":{"PARTITION":OFFSET,...},...}`; any other JSON is
//! another kind of source (file, rate, ...) and is carried over untouched. A commit file is
//! `vN` and one JSON object (`{"nextBatchWatermarkMs":0}`, plus state ids in `v2`). The
//! starting-offsets file a Kafka source writes before its first batch is a zero byte, `v1`,
//! and the same Kafka offset JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The newest offsets-file version this build reads (Spark 3.5 and 4.x write `v1`).
pub const OFFSETS_VERSION: u32 = 1;
/// The newest commit-file version this build reads (`v2` adds state store ids, Spark 4.x).
pub const COMMITS_VERSION: u32 = 2;
/// The newest starting-offsets-file version of the Kafka source.
pub const SOURCE_VERSION: u32 = 1;

/// What is wrong with a file's text: the 1-based line, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// The line the problem is on (1-based); `None` for the file as a whole.
    pub line: Option<usize>,
    /// What is wrong.
    pub reason: String,
    /// A version newer than this build reads: `(found, newest read)`.
    pub newer_version: Option<(u32, u32)>,
}

impl LineError {
    fn at(line: usize, reason: impl Into<String>) -> Self {
        Self { line: Some(line), reason: reason.into(), newer_version: None }
    }
    fn whole(reason: impl Into<String>) -> Self {
        Self { line: None, reason: reason.into(), newer_version: None }
    }
}

/// One Kafka source's offsets: topic → partition → next offset to read.
pub type KafkaOffsets = BTreeMap<String, BTreeMap<i32, i64>>;

/// One source's line of an offsets file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceLine {
    /// `-`: the source had no offset yet.
    Absent,
    /// A Kafka source's offsets.
    Kafka(KafkaOffsets),
    /// Another kind of source; its line as read, written back unchanged.
    Other(String),
}

/// An offsets file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetsFile {
    /// The metadata line as read (empty when the file has none), written back unchanged.
    pub metadata: String,
    /// One entry per source of the query, in the query's order.
    pub sources: Vec<SourceLine>,
}

/// Reads the `vN` header of line 1, refusing versions above `max`.
fn version(line: &str, max: u32) -> Result<u32, LineError> {
    let n = line
        .strip_prefix('v')
        .filter(|d| !d.is_empty() && d.len() <= 9 && d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|d| d.parse::<u32>().ok())
        .filter(|n| *n > 0)
        .ok_or_else(|| {
            LineError::at(1, format!("expected a version header such as `v1`, found `{}`", clip(line)))
        })?;
    if n > max {
        return Err(LineError {
            line: Some(1),
            reason: format!("log version v{n} is newer than this kwire reads (up to v{max})"),
            newer_version: Some((n, max)),
        });
    }
    Ok(n)
}

/// At most 60 characters of `s`, for messages about foreign text.
fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(60).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

fn text(bytes: &[u8]) -> Result<&str, LineError> {
    std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()].split(|b| *b == b'\n').count();
        LineError::at(line, "not UTF-8 text")
    })
}

/// Parses an offsets file.
pub fn parse_offsets(bytes: &[u8]) -> Result<OffsetsFile, LineError> {
    let text = text(bytes)?;
    if text.is_empty() {
        return Err(LineError::whole("empty file (a half-written batch?)"));
    }
    let mut lines = text.split('\n');
    version(lines.next().unwrap_or_default(), OFFSETS_VERSION)?;
    let Some(metadata) = lines.next() else {
        return Err(LineError::whole(
            "incomplete: a version header and nothing else (a half-written batch?)",
        ));
    };
    let metadata = metadata.trim();
    if !metadata.is_empty()
        && !matches!(serde_json::from_str::<serde_json::Value>(metadata), Ok(serde_json::Value::Object(_)))
    {
        return Err(LineError::at(
            2,
            format!("the metadata line is not a JSON object: `{}`", clip(metadata)),
        ));
    }
    let mut sources = Vec::new();
    for (i, line) in lines.enumerate() {
        sources.push(parse_source(line).map_err(|reason| LineError::at(i + 3, reason))?);
    }
    Ok(OffsetsFile { metadata: metadata.to_owned(), sources })
}

/// One source line: `-`, a Kafka source's offsets, or another source's JSON.
fn parse_source(line: &str) -> Result<SourceLine, String> {
    let line = line.trim();
    if line == "-" {
        return Ok(SourceLine::Absent);
    }
    let value: serde_json::Value = serde_json::from_str(line)
        .map_err(|e| format!("a source offset that is not JSON ({e}): `{}`", clip(line)))?;
    Ok(match kafka_offsets(&value)? {
        Some(offsets) => SourceLine::Kafka(offsets),
        None => SourceLine::Other(line.to_owned()),
    })
}

/// A Kafka source's offsets when `value` has their shape (a non-empty object of objects whose
/// keys are partition numbers and values whole numbers); `None` for any other shape. A
/// Kafka-shaped value with an offset Spark never writes (negative) is an error.
fn kafka_offsets(value: &serde_json::Value) -> Result<Option<KafkaOffsets>, String> {
    let Some(topics) = value.as_object().filter(|o| !o.is_empty()) else { return Ok(None) };
    let mut out = KafkaOffsets::new();
    for (topic, partitions) in topics {
        let Some(partitions) = partitions.as_object() else { return Ok(None) };
        let mut parsed = BTreeMap::new();
        for (partition, offset) in partitions {
            let (Some(p), Some(o)) = (partition_number(partition), offset.as_i64()) else { return Ok(None) };
            if o < 0 {
                return Err(format!(
                    "{topic}:{p} has offset {o}: a checkpoint holds only resolved offsets (>= 0)"
                ));
            }
            parsed.insert(p, o);
        }
        out.insert(topic.clone(), parsed);
    }
    Ok(Some(out))
}

fn partition_number(s: &str) -> Option<i32> {
    (!s.is_empty() && s.len() <= 10 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse::<i32>().ok())
        .flatten()
}

/// Writes a Kafka source's offsets as Spark does: topics and partitions in order, no spaces.
pub fn render_kafka(offsets: &KafkaOffsets) -> String {
    let mut out = String::from("{");
    for (i, (topic, partitions)) in offsets.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::Value::String(topic.clone()).to_string());
        out.push_str(":{");
        for (j, (p, o)) in partitions.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            let _ = write!(out, "\"{p}\":{o}");
        }
        out.push('}');
    }
    out.push('}');
    out
}

/// Writes an offsets file: `v1`, the metadata line, one line per source, no trailing newline.
pub fn render_offsets(file: &OffsetsFile) -> String {
    let mut out = format!("v{OFFSETS_VERSION}\n{}", file.metadata);
    for source in &file.sources {
        out.push('\n');
        match source {
            SourceLine::Absent => out.push('-'),
            SourceLine::Kafka(k) => out.push_str(&render_kafka(k)),
            SourceLine::Other(line) => out.push_str(line),
        }
    }
    out
}

/// Checks a commit file: a known version header and one JSON object.
pub fn check_commit(bytes: &[u8]) -> Result<(), LineError> {
    let text = text(bytes)?;
    if text.is_empty() {
        return Err(LineError::whole("empty file (a half-written commit?)"));
    }
    let mut lines = text.split('\n');
    version(lines.next().unwrap_or_default(), COMMITS_VERSION)?;
    match lines.next().map(str::trim) {
        None | Some("") => Err(LineError::whole("incomplete: a version header and no commit metadata")),
        Some(json) => match serde_json::from_str::<serde_json::Value>(json) {
            Ok(serde_json::Value::Object(_)) => Ok(()),
            _ => Err(LineError::at(2, format!("commit metadata is not a JSON object: `{}`", clip(json)))),
        },
    }
}

/// The commit file kwire writes when the checkpoint has no earlier one to carry over.
pub const DEFAULT_COMMIT: &str = "v1\n{\"nextBatchWatermarkMs\":0}";

/// Parses a Kafka source's starting-offsets file (`sources/I/0`): an optional zero byte, an
/// optional `vN` line, and the Kafka offset JSON.
pub fn parse_source_start(bytes: &[u8]) -> Result<KafkaOffsets, LineError> {
    let bytes = bytes.strip_prefix(&[0u8]).unwrap_or(bytes);
    let text = text(bytes)?;
    let (json, line) = match text.split_once('\n') {
        Some((head, rest)) if head.starts_with('v') => {
            version(head, SOURCE_VERSION)?;
            (rest, 2)
        }
        _ => (text, 1),
    };
    let value: serde_json::Value = serde_json::from_str(json.trim())
        .map_err(|e| LineError::at(line, format!("not JSON ({e}): `{}`", clip(json))))?;
    match kafka_offsets(&value).map_err(|r| LineError::at(line, r))? {
        Some(offsets) => Ok(offsets),
        None => Err(LineError::at(line, format!("not a Kafka source's offsets: `{}`", clip(json)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const META: &str = r#"{"batchWatermarkMs":0,"batchTimestampMs":1764600000000,"conf":{"spark.sql.shuffle.partitions":"2"}}"#;

    #[test]
    fn an_offsets_file_with_a_kafka_a_file_and_an_empty_source_round_trips() {
        let text = format!(
            "v1\n{META}\n{{\"b\":{{\"0\":5,\"10\":7,\"2\":1}},\"a\":{{\"0\":3}}}}\n{{\"logOffset\":4}}\n-"
        );
        let file = parse_offsets(text.as_bytes()).unwrap();
        assert_eq!(file.metadata, META);
        let SourceLine::Kafka(k) = &file.sources[0] else { panic!("{:?}", file.sources[0]) };
        assert_eq!(k["b"][&10], 7);
        assert_eq!(k["a"][&0], 3);
        assert_eq!(file.sources[1], SourceLine::Other("{\"logOffset\":4}".into()));
        assert_eq!(file.sources[2], SourceLine::Absent);
        let again = render_offsets(&file);
        assert!(again.contains(r#"{"a":{"0":3},"b":{"0":5,"2":1,"10":7}}"#), "{again}");
        assert_eq!(parse_offsets(again.as_bytes()).unwrap(), file);
    }

    #[test]
    fn damaged_offsets_files_name_the_line() {
        for (text, line, says) in [
            ("", None, "empty"),
            ("v1", None, "incomplete"),
            ("x1\n{}\n-", Some(1), "version header"),
            ("v1\nnot json\n-", Some(2), "metadata"),
            ("v1\n{}\n{\"t\":{\"0\":5}}\n{\"t\":", Some(4), "not JSON"),
            ("v1\n{}\n{\"t\":{\"0\":-3}}", Some(3), "t:0 has offset -3"),
        ] {
            let err = parse_offsets(text.as_bytes()).unwrap_err();
            assert_eq!(err.line, line, "{text:?}: {err:?}");
            assert!(err.reason.contains(says), "{text:?}: {err:?}");
        }
        let err = parse_offsets(b"v2\n{}\n-").unwrap_err();
        assert_eq!(err.newer_version, Some((2, 1)));
        let err = parse_offsets(b"v1\n{}\n{\"t\":{\"0\":1}}\n\xff").unwrap_err();
        assert_eq!(err.line, Some(4));
    }

    #[test]
    fn commit_files_of_both_versions_are_accepted_and_damage_is_not() {
        assert!(check_commit(DEFAULT_COMMIT.as_bytes()).is_ok());
        assert!(check_commit(b"v2\n{\"nextBatchWatermarkMs\":0,\"stateUniqueIds\":{}}").is_ok());
        assert!(check_commit(b"v3\n{}").unwrap_err().newer_version.is_some());
        assert_eq!(check_commit(b"v1\n[1]").unwrap_err().line, Some(2));
        assert!(check_commit(b"v1\n").is_err());
    }

    #[test]
    fn a_kafka_sources_starting_offsets_file_with_and_without_the_zero_byte() {
        let offsets = parse_source_start(b"\0v1\n{\"t\":{\"1\":0,\"0\":4}}").unwrap();
        assert_eq!(offsets["t"][&0], 4);
        assert_eq!(parse_source_start(b"{\"t\":{\"0\":2}}").unwrap()["t"][&0], 2);
        assert_eq!(parse_source_start(b"\0v1\n{\"logOffset\":2}").unwrap_err().line, Some(2));
    }

    proptest::proptest! {
        #[test]
        fn parsing_never_panics_on_any_bytes(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = parse_offsets(&bytes);
            let _ = check_commit(&bytes);
            let _ = parse_source_start(&bytes);
        }
    }
}
