//! Offsets in the two text formats other tools speak, parsed and printed by hand (no serde).
//!
//! * kafka-consumer-groups `--export` / `--from-file` CSV: one `topic,partition,offset` per
//!   line, no header. Fields may be quoted as RFC 4180 says (`"a,b"`, `""` for a quote inside);
//!   [`to_csv`] quotes every topic that is not a legal Kafka topic name, so whatever it writes
//!   reads back as the same entries.
//! * Spark `startingOffsets` / `endingOffsets` JSON: `{"topic":{"0":23,"1":-2}}`, where `-2`
//!   means earliest and `-1` latest.
//!
//! Parsers never panic: every malformed input is a typed error naming its line (CSV) or its
//! byte position, line and column (JSON).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::error::Error;
use std::fmt;
use std::fmt::Write as _;
use std::sync::Arc;

use crate::model::{Offset, TopicPartition};

/// Kafka's limit on topic name length.
pub const MAX_TOPIC_LEN: usize = 249;

/// Whether `name` is a legal Kafka topic name: 1–249 characters of `[a-zA-Z0-9._-]`, and not
/// `.` or `..`.
pub fn is_valid_topic(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOPIC_LEN
        && name != "."
        && name != ".."
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

// ---------------------------------------------------------------------------------------------
// CSV
// ---------------------------------------------------------------------------------------------

/// A line of the CSV that is not `topic,partition,offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with the line.
    pub kind: CsvErrorKind,
}

/// What is wrong with a CSV line ([`CsvError::kind`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CsvErrorKind {
    /// Not exactly three comma-separated fields.
    FieldCount {
        /// How many fields the line has.
        found: usize,
    },
    /// Not a legal Kafka topic name (see [`is_valid_topic`]).
    InvalidTopic {
        /// The field as read, quotes removed.
        topic: String,
    },
    /// Not an integer in `0..=i32::MAX`.
    InvalidPartition {
        /// The field as read, quotes removed.
        text: String,
    },
    /// Not an integer in `0..=i64::MAX`.
    InvalidOffset {
        /// The field as read, quotes removed.
        text: String,
    },
    /// The same topic-partition appeared on an earlier line.
    Duplicate {
        /// 1-based number of the line that listed it first.
        first_line: usize,
    },
    /// A quoted field whose closing quote is missing.
    UnterminatedQuote,
    /// Something other than spaces between a closing quote and the next `,` or line end.
    TextAfterQuote,
}

impl fmt::Display for CsvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: ", self.line)?;
        match &self.kind {
            CsvErrorKind::FieldCount { found } => {
                write!(f, "expected 3 fields topic,partition,offset, found {found}")
            }
            CsvErrorKind::InvalidTopic { topic } => write!(f, "invalid topic name {topic:?}"),
            CsvErrorKind::InvalidPartition { text } => {
                write!(f, "partition {text:?} is not an integer between 0 and {}", i32::MAX)
            }
            CsvErrorKind::InvalidOffset { text } => {
                write!(f, "offset {text:?} is not an integer between 0 and {}", i64::MAX)
            }
            CsvErrorKind::Duplicate { first_line } => {
                write!(f, "topic-partition already given on line {first_line}")
            }
            CsvErrorKind::UnterminatedQuote => f.write_str("a quoted field has no closing quote"),
            CsvErrorKind::TextAfterQuote => f.write_str("text after a closing quote"),
        }
    }
}

impl Error for CsvError {}

/// Parses kafka-consumer-groups CSV. Blank lines are ignored, `\r\n` line ends and spaces or
/// tabs around fields are accepted (only those: no other whitespace is trimmed, so a name with
/// a Unicode space is not silently read as another name). An unquoted topic must be a legal
/// Kafka topic name; a quoted one is taken exactly as written (that is how [`to_csv`] writes
/// any other name). Entries come back in file order; an error names the line its entry starts
/// on.
pub fn from_csv(text: &str) -> Result<Vec<(TopicPartition, Offset)>, CsvError> {
    let mut out = Vec::new();
    let mut seen: HashMap<TopicPartition, usize> = HashMap::new();
    let mut last_topic: Option<Arc<str>> = None;
    let mut reader = CsvReader { rest: text, line: 1 };
    while let Some((line, fields)) = reader.record()? {
        let err = |kind| CsvError { line, kind };
        // A line of nothing but spaces is blank.
        if let [field] = &fields[..] {
            if !field.quoted && field.text.is_empty() {
                continue;
            }
        }
        let [topic, partition, offset] = &fields[..] else {
            return Err(err(CsvErrorKind::FieldCount { found: fields.len() }));
        };
        if !topic.quoted && !is_valid_topic(&topic.text) {
            return Err(err(CsvErrorKind::InvalidTopic { topic: topic.text.to_string() }));
        }
        let partition = parse_non_negative::<i32>(&partition.text)
            .ok_or_else(|| err(CsvErrorKind::InvalidPartition { text: partition.text.to_string() }))?;
        let offset = parse_non_negative::<i64>(&offset.text)
            .ok_or_else(|| err(CsvErrorKind::InvalidOffset { text: offset.text.to_string() }))?;
        let topic: Arc<str> = match &last_topic {
            Some(t) if **t == *topic.text => Arc::clone(t),
            _ => Arc::from(&*topic.text),
        };
        last_topic = Some(Arc::clone(&topic));
        let tp = TopicPartition { topic, partition };
        if let Some(&first_line) = seen.get(&tp) {
            return Err(err(CsvErrorKind::Duplicate { first_line }));
        }
        seen.insert(tp.clone(), line);
        out.push((tp, Offset(offset)));
    }
    Ok(out)
}

/// One CSV field: its text (unquoted, `""` turned into `"`) and whether it was quoted.
struct CsvField<'a> {
    text: Cow<'a, str>,
    quoted: bool,
}

/// Reads RFC 4180 records, keeping count of lines.
struct CsvReader<'a> {
    rest: &'a str,
    /// The line `rest` starts on.
    line: usize,
}

/// Spaces and tabs: the only whitespace trimmed around fields.
fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

impl<'a> CsvReader<'a> {
    /// The next record and the line it starts on; `None` at the end of the text.
    fn record(&mut self) -> Result<Option<(usize, Vec<CsvField<'a>>)>, CsvError> {
        if self.rest.is_empty() {
            return Ok(None);
        }
        let line = self.line;
        let mut fields = Vec::with_capacity(3);
        loop {
            let field = self.field().map_err(|kind| CsvError { line, kind })?;
            fields.push(field);
            // `field` stops at a ',', a line end or the end of the text.
            if let Some(rest) = self.rest.strip_prefix(',') {
                self.rest = rest;
                continue;
            }
            if let Some(rest) = self.rest.strip_prefix("\r\n").or_else(|| self.rest.strip_prefix('\n')) {
                self.rest = rest;
                self.line += 1;
            }
            return Ok(Some((line, fields)));
        }
    }

    /// One field, leaving `rest` at the `,`, line end or end of text after it.
    fn field(&mut self) -> Result<CsvField<'a>, CsvErrorKind> {
        self.rest = self.rest.trim_start_matches(is_blank);
        let Some(quoted) = self.rest.strip_prefix('"') else {
            let end = self.rest.find([',', '\n']).unwrap_or(self.rest.len());
            let mut text = &self.rest[..end];
            self.rest = &self.rest[end..];
            if self.rest.is_empty() || self.rest.starts_with('\n') {
                text = text.strip_suffix('\r').unwrap_or(text);
            }
            return Ok(CsvField { text: Cow::Borrowed(text.trim_end_matches(is_blank)), quoted: false });
        };
        let mut text = String::new();
        let mut rest = quoted;
        loop {
            let Some(at) = rest.find('"') else {
                return Err(CsvErrorKind::UnterminatedQuote);
            };
            text.push_str(&rest[..at]);
            self.line += rest[..at].matches('\n').count();
            rest = &rest[at + 1..];
            match rest.strip_prefix('"') {
                Some(after) => {
                    text.push('"');
                    rest = after;
                }
                None => break,
            }
        }
        let rest = rest.trim_start_matches(is_blank);
        let rest = if rest == "\r" { "" } else { rest };
        let at_end =
            rest.is_empty() || rest.starts_with(',') || rest.starts_with('\n') || rest.starts_with("\r\n");
        if !at_end {
            return Err(CsvErrorKind::TextAfterQuote);
        }
        self.rest = rest;
        Ok(CsvField { text: Cow::Owned(text), quoted: true })
    }
}

fn parse_non_negative<T>(s: &str) -> Option<T>
where
    T: std::str::FromStr + Default + PartialOrd,
{
    // `str::parse` accepts a leading '+'; kafka-consumer-groups' Java parsing does too, but a
    // sign has no business in an offset file, so digits only.
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<T>().ok().filter(|v| *v >= T::default())
}

/// Prints kafka-consumer-groups CSV, one line per entry in the given order, each ending in `\n`.
/// A legal Kafka topic name is written as it is (as kafka-consumer-groups writes it); any other
/// name — the type holds any string — is quoted (RFC 4180, a quote doubled), so [`from_csv`]
/// reads back exactly these entries. A negative partition or offset cannot be in the format:
/// it is written as it is, and reading it back is an error naming its line.
pub fn to_csv(entries: &[(TopicPartition, Offset)]) -> String {
    let mut out = String::with_capacity(entries.len() * 24);
    for (tp, offset) in entries {
        if is_valid_topic(&tp.topic) {
            out.push_str(&tp.topic);
        } else {
            out.push('"');
            out.push_str(&tp.topic.replace('"', "\"\""));
            out.push('"');
        }
        // Writing to a String cannot fail.
        let _ = writeln!(out, ",{},{}", tp.partition, offset);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Spark JSON
// ---------------------------------------------------------------------------------------------

/// A Spark per-partition offset: a real offset or one of Spark's two special values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SparkOffset {
    /// A real offset, `>= 0`: the next offset to read.
    At(Offset),
    /// `-2`
    Earliest,
    /// `-1`
    Latest,
}

impl SparkOffset {
    /// The JSON integer Spark uses.
    pub const fn to_wire(self) -> i64 {
        match self {
            SparkOffset::At(o) => o.0,
            SparkOffset::Earliest => -2,
            SparkOffset::Latest => -1,
        }
    }
}

/// Where and why Spark offsets JSON did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    /// Byte offset into the input.
    pub position: usize,
    /// 1-based line number.
    pub line: usize,
    /// 1-based column within the line, counted in characters, not bytes.
    pub column: usize,
    /// What was wrong at that position.
    pub kind: JsonErrorKind,
}

/// What is wrong in Spark offsets JSON ([`JsonError::kind`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonErrorKind {
    /// The input ended where more was required.
    UnexpectedEnd {
        /// What the parser needed next, in words.
        expected: &'static str,
    },
    /// A character that cannot appear at this position.
    Unexpected {
        /// The character found.
        found: char,
        /// What the parser needed instead, in words.
        expected: &'static str,
    },
    /// A backslash escape that JSON does not define, or a bad `\u` escape.
    InvalidEscape,
    /// An unescaped control character inside a string.
    ControlCharacter,
    /// A number with a fraction or exponent, or outside `i64`.
    InvalidNumber,
    /// A topic key that is not a legal Kafka topic name (see [`is_valid_topic`]).
    InvalidTopic {
        /// The key, unescaped.
        topic: String,
    },
    /// A partition key that is not an integer in `0..=i32::MAX`.
    InvalidPartition {
        /// The key, unescaped.
        key: String,
    },
    /// Below `-2`: not an offset, not earliest (-2), not latest (-1).
    InvalidOffset {
        /// The number as given.
        value: i64,
    },
    /// The same topic key appears twice in the object.
    DuplicateTopic {
        /// The repeated topic name.
        topic: String,
    },
    /// The same partition key appears twice within one topic.
    DuplicatePartition {
        /// The topic whose object repeats the key.
        topic: String,
        /// The repeated partition number.
        partition: i32,
    },
    /// Something after the closing brace.
    TrailingCharacters,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {} column {}: ", self.line, self.column)?;
        match &self.kind {
            JsonErrorKind::UnexpectedEnd { expected } => {
                write!(f, "input ended, expected {expected}")
            }
            JsonErrorKind::Unexpected { found, expected } => {
                write!(f, "found {found:?}, expected {expected}")
            }
            JsonErrorKind::InvalidEscape => f.write_str("invalid escape in string"),
            JsonErrorKind::ControlCharacter => f.write_str("unescaped control character in string"),
            JsonErrorKind::InvalidNumber => f.write_str("offsets are integers that fit in 64 bits"),
            JsonErrorKind::InvalidTopic { topic } => write!(f, "invalid topic name {topic:?}"),
            JsonErrorKind::InvalidPartition { key } => {
                write!(f, "partition key {key:?} is not an integer between 0 and {}", i32::MAX)
            }
            JsonErrorKind::InvalidOffset { value } => {
                write!(f, "offset {value} is not >= 0, -1 (latest) or -2 (earliest)")
            }
            JsonErrorKind::DuplicateTopic { topic } => write!(f, "topic {topic:?} given twice"),
            JsonErrorKind::DuplicatePartition { topic, partition } => {
                write!(f, "partition {partition} of topic {topic:?} given twice")
            }
            JsonErrorKind::TrailingCharacters => f.write_str("characters after the JSON object"),
        }
    }
}

impl Error for JsonError {}

/// Parses Spark `startingOffsets`/`endingOffsets` JSON. Entries come back in document order.
pub fn from_spark_json(text: &str) -> Result<Vec<(TopicPartition, SparkOffset)>, JsonError> {
    let mut p = JsonParser { text, pos: 0 };
    let out = p.document().map_err(|(position, kind)| {
        let before = text.get(..position).unwrap_or(text);
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        JsonError { position, line, column, kind }
    })?;
    Ok(out)
}

type JsonResult<T> = Result<T, (usize, JsonErrorKind)>;

struct JsonParser<'a> {
    text: &'a str,
    pos: usize,
}

impl JsonParser<'_> {
    fn peek(&self) -> Option<char> {
        self.text.get(self.pos..).and_then(|s| s.chars().next())
    }

    fn skip_ws(&mut self) {
        while let Some(c) = self.peek() {
            if matches!(c, ' ' | '\t' | '\n' | '\r') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    /// Consumes `want` after whitespace.
    fn expect(&mut self, want: char, expected: &'static str) -> JsonResult<()> {
        self.skip_ws();
        match self.peek() {
            Some(c) if c == want => {
                self.pos += c.len_utf8();
                Ok(())
            }
            Some(found) => Err((self.pos, JsonErrorKind::Unexpected { found, expected })),
            None => Err((self.pos, JsonErrorKind::UnexpectedEnd { expected })),
        }
    }

    /// After an element: `true` at `,` (more follow), `false` at `close`.
    fn next_or_close(&mut self, close: char, expected: &'static str) -> JsonResult<bool> {
        self.skip_ws();
        match self.peek() {
            Some(',') => {
                self.pos += 1;
                Ok(true)
            }
            Some(c) if c == close => {
                self.pos += 1;
                Ok(false)
            }
            Some(found) => Err((self.pos, JsonErrorKind::Unexpected { found, expected })),
            None => Err((self.pos, JsonErrorKind::UnexpectedEnd { expected })),
        }
    }

    /// `true` if the object is empty (and consumes its `}`).
    fn empty_object(&mut self) -> bool {
        self.skip_ws();
        if self.peek() == Some('}') {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn document(&mut self) -> JsonResult<Vec<(TopicPartition, SparkOffset)>> {
        let mut out = Vec::new();
        let mut topics: HashSet<String> = HashSet::new();
        self.expect('{', "'{'")?;
        if !self.empty_object() {
            loop {
                self.skip_ws();
                let at = self.pos;
                let name = self.string("a topic name in quotes")?;
                if !is_valid_topic(&name) {
                    return Err((at, JsonErrorKind::InvalidTopic { topic: name }));
                }
                if !topics.insert(name.clone()) {
                    return Err((at, JsonErrorKind::DuplicateTopic { topic: name }));
                }
                self.expect(':', "':'")?;
                self.partitions(&Arc::from(name.as_str()), &mut out)?;
                if !self.next_or_close('}', "',' or '}'")? {
                    break;
                }
            }
        }
        self.skip_ws();
        if self.pos < self.text.len() {
            return Err((self.pos, JsonErrorKind::TrailingCharacters));
        }
        Ok(out)
    }

    fn partitions(
        &mut self,
        topic: &Arc<str>,
        out: &mut Vec<(TopicPartition, SparkOffset)>,
    ) -> JsonResult<()> {
        let mut seen: HashSet<i32> = HashSet::new();
        self.expect('{', "'{' starting the topic's partitions")?;
        if self.empty_object() {
            return Ok(());
        }
        loop {
            self.skip_ws();
            let at = self.pos;
            let key = self.string("a partition number in quotes")?;
            let Some(partition) = parse_non_negative::<i32>(&key) else {
                return Err((at, JsonErrorKind::InvalidPartition { key }));
            };
            if !seen.insert(partition) {
                return Err((at, JsonErrorKind::DuplicatePartition { topic: topic.to_string(), partition }));
            }
            self.expect(':', "':'")?;
            self.skip_ws();
            let at = self.pos;
            let value = self.integer()?;
            let offset = match value {
                -2 => SparkOffset::Earliest,
                -1 => SparkOffset::Latest,
                v if v >= 0 => SparkOffset::At(Offset(v)),
                v => return Err((at, JsonErrorKind::InvalidOffset { value: v })),
            };
            out.push((TopicPartition { topic: Arc::clone(topic), partition }, offset));
            if !self.next_or_close('}', "',' or '}'")? {
                return Ok(());
            }
        }
    }

    fn string(&mut self, expected: &'static str) -> JsonResult<String> {
        match self.peek() {
            Some('"') => self.pos += 1,
            Some(found) => return Err((self.pos, JsonErrorKind::Unexpected { found, expected })),
            None => return Err((self.pos, JsonErrorKind::UnexpectedEnd { expected })),
        }
        let mut s = String::new();
        loop {
            let at = self.pos;
            let Some(c) = self.peek() else {
                return Err((at, JsonErrorKind::UnexpectedEnd { expected: "'\"'" }));
            };
            self.pos += c.len_utf8();
            match c {
                '"' => return Ok(s),
                '\\' => s.push(self.escape(at)?),
                c if u32::from(c) < 0x20 => return Err((at, JsonErrorKind::ControlCharacter)),
                c => s.push(c),
            }
        }
    }

    /// After a backslash at `at`.
    fn escape(&mut self, at: usize) -> JsonResult<char> {
        let Some(c) = self.peek() else {
            return Err((self.pos, JsonErrorKind::UnexpectedEnd { expected: "an escape" }));
        };
        self.pos += c.len_utf8();
        Ok(match c {
            '"' => '"',
            '\\' => '\\',
            '/' => '/',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'u' => {
                let hi = self.hex4(at)?;
                if (0xD800..0xDC00).contains(&hi) {
                    // A high surrogate must be followed by `\u` and a low surrogate.
                    if self.text.get(self.pos..self.pos + 2) != Some("\\u") {
                        return Err((at, JsonErrorKind::InvalidEscape));
                    }
                    self.pos += 2;
                    let lo = self.hex4(at)?;
                    if !(0xDC00..0xE000).contains(&lo) {
                        return Err((at, JsonErrorKind::InvalidEscape));
                    }
                    let code = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                    char::from_u32(code).ok_or((at, JsonErrorKind::InvalidEscape))?
                } else {
                    char::from_u32(hi).ok_or((at, JsonErrorKind::InvalidEscape))?
                }
            }
            _ => return Err((at, JsonErrorKind::InvalidEscape)),
        })
    }

    fn hex4(&mut self, at: usize) -> JsonResult<u32> {
        let digits = self.text.get(self.pos..self.pos + 4).ok_or((at, JsonErrorKind::InvalidEscape))?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err((at, JsonErrorKind::InvalidEscape));
        }
        self.pos += 4;
        u32::from_str_radix(digits, 16).map_err(|_| (at, JsonErrorKind::InvalidEscape))
    }

    fn integer(&mut self) -> JsonResult<i64> {
        let start = self.pos;
        let bytes = self.text.as_bytes();
        let mut end = start;
        if bytes.get(end) == Some(&b'-') {
            end += 1;
        }
        let digits_start = end;
        while bytes.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        let digits = end - digits_start;
        if digits == 0 {
            return match self.peek() {
                Some(found) => {
                    Err((start, JsonErrorKind::Unexpected { found, expected: "an integer offset" }))
                }
                None => Err((start, JsonErrorKind::UnexpectedEnd { expected: "an integer offset" })),
            };
        }
        // JSON forbids leading zeros; a fraction or exponent is not an offset.
        let leading_zero = digits > 1 && bytes[digits_start] == b'0';
        let fraction = matches!(bytes.get(end), Some(b'.' | b'e' | b'E'));
        if leading_zero || fraction {
            return Err((start, JsonErrorKind::InvalidNumber));
        }
        let text = &self.text[start..end];
        let value = text.parse::<i64>().map_err(|_| (start, JsonErrorKind::InvalidNumber))?;
        self.pos = end;
        Ok(value)
    }
}

/// Prints Spark offsets JSON: topics sorted by name, partitions by number, no whitespace, e.g.
/// `{"orders":{"0":23,"1":-2}}`. A topic-partition given twice keeps the last value.
pub fn to_spark_json(entries: &[(TopicPartition, SparkOffset)]) -> String {
    let mut by_topic: BTreeMap<&str, BTreeMap<i32, i64>> = BTreeMap::new();
    for (tp, o) in entries {
        by_topic.entry(&tp.topic).or_default().insert(tp.partition, o.to_wire());
    }
    let mut out = String::from("{");
    for (ti, (topic, parts)) in by_topic.iter().enumerate() {
        if ti > 0 {
            out.push(',');
        }
        push_json_string(&mut out, topic);
        out.push_str(":{");
        for (pi, (p, v)) in parts.iter().enumerate() {
            if pi > 0 {
                out.push(',');
            }
            let _ = write!(out, "\"{p}\":{v}");
        }
        out.push('}');
    }
    out.push('}');
    out
}

/// Spark JSON of exact offsets (e.g. [`crate::Plan::starting_offsets`]).
pub fn offsets_to_spark_json(entries: &[(TopicPartition, Offset)]) -> String {
    let v: Vec<(TopicPartition, SparkOffset)> =
        entries.iter().map(|(tp, o)| (tp.clone(), SparkOffset::At(*o))).collect();
    to_spark_json(&v)
}

fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(t: &str, p: i32) -> TopicPartition {
        TopicPartition::new(t, p)
    }

    #[test]
    fn csv_round_trip_as_kafka_consumer_groups_exports_it() {
        let text = "orders,0,23\r\norders,1,0\n\npayments,0,7\n";
        let parsed = from_csv(text).unwrap();
        assert_eq!(
            parsed,
            vec![(tp("orders", 0), Offset(23)), (tp("orders", 1), Offset(0)), (tp("payments", 0), Offset(7)),]
        );
        assert_eq!(to_csv(&parsed), "orders,0,23\norders,1,0\npayments,0,7\n");
    }

    #[test]
    fn csv_errors_name_the_line() {
        let e = |t: &str| from_csv(t).unwrap_err();
        assert_eq!(e("a,0,1\nb,0\n"), CsvError { line: 2, kind: CsvErrorKind::FieldCount { found: 2 } });
        assert_eq!(e("a,0,-1").kind, CsvErrorKind::InvalidOffset { text: "-1".into() });
        assert_eq!(e("a,x,1").kind, CsvErrorKind::InvalidPartition { text: "x".into() });
        assert_eq!(e("a,2147483648,1").kind, CsvErrorKind::InvalidPartition { text: "2147483648".into() });
        assert_eq!(e("a b,0,1").kind, CsvErrorKind::InvalidTopic { topic: "a b".into() });
        assert_eq!(e("a,0,1\na,0,2"), CsvError { line: 2, kind: CsvErrorKind::Duplicate { first_line: 1 } });
        assert!(e("a,0,1\n,0,1").to_string().starts_with("line 2:"));
    }

    #[test]
    fn csv_quotes_names_that_are_not_kafka_names_and_reads_them_back() {
        let entries = vec![
            (tp("a,b", 0), Offset(1)),
            (tp("x\ny", 1), Offset(2)),
            (tp("q\"t", 0), Offset(3)),
            (tp(" padded\t", 0), Offset(4)),
            (tp("cr\r", 0), Offset(5)),
            (tp("", 0), Offset(6)),
            (tp("orders\u{2003}", 0), Offset(7)),
            (tp("orders", 0), Offset(8)),
        ];
        let text = to_csv(&entries);
        assert_eq!(
            text,
            "\"a,b\",0,1\n\"x\ny\",1,2\n\"q\"\"t\",0,3\n\" padded\t\",0,4\n\"cr\r\",0,5\n\"\",0,6\n\
             \"orders\u{2003}\",0,7\norders,0,8\n"
        );
        assert_eq!(from_csv(&text), Ok(entries));
        // Errors name the line the entry starts on, past a quoted line end.
        assert_eq!(
            from_csv("\"a\nb\",0,1\nx,0").unwrap_err(),
            CsvError { line: 3, kind: CsvErrorKind::FieldCount { found: 2 } }
        );
        assert_eq!(from_csv("\"a,0,1\n").unwrap_err().kind, CsvErrorKind::UnterminatedQuote);
        assert_eq!(from_csv("\"a\"b,0,1\n").unwrap_err().kind, CsvErrorKind::TextAfterQuote);
        // Quoted numbers, spaces around quotes.
        assert_eq!(from_csv(" \"t\" ,\"0\", 5 \r\n"), Ok(vec![(tp("t", 0), Offset(5))]));
    }

    #[test]
    fn csv_does_not_trim_unicode_whitespace() {
        // Issue 18: `str::trim` read "orders\u{2003}" as "orders".
        assert_eq!(
            from_csv("orders\u{2003},0,1\n").unwrap_err().kind,
            CsvErrorKind::InvalidTopic { topic: "orders\u{2003}".into() }
        );
        assert_eq!(
            from_csv("\u{a0}orders,0,1").unwrap_err().kind,
            CsvErrorKind::InvalidTopic { topic: "\u{a0}orders".into() }
        );
        assert_eq!(
            from_csv("orders,0,1\u{2003}").unwrap_err().kind,
            CsvErrorKind::InvalidOffset { text: "1\u{2003}".into() }
        );
        assert_eq!(from_csv(" \t\n\r\n"), Ok(vec![]), "space-only lines are blank");
        assert_eq!(from_csv("a,0,1\r"), Ok(vec![(tp("a", 0), Offset(1))]));
        assert_eq!(from_csv("\"a\",0,\"1\"\r"), Ok(vec![(tp("a", 0), Offset(1))]));
    }

    #[test]
    fn spark_json_with_earliest_and_latest() {
        let parsed = from_spark_json(r#" {"topicA":{"0":23,"1":-2}, "topicB":{"0":-1}} "#).unwrap();
        assert_eq!(
            parsed,
            vec![
                (tp("topicA", 0), SparkOffset::At(Offset(23))),
                (tp("topicA", 1), SparkOffset::Earliest),
                (tp("topicB", 0), SparkOffset::Latest),
            ]
        );
        assert_eq!(to_spark_json(&parsed), r#"{"topicA":{"0":23,"1":-2},"topicB":{"0":-1}}"#);
        assert_eq!(from_spark_json("{}").unwrap(), vec![]);
        assert_eq!(from_spark_json(r#"{"t":{}}"#).unwrap(), vec![]);
    }

    #[test]
    fn spark_json_escapes_decode() {
        let parsed = from_spark_json(r#"{"a\u002db\/c":{"0":1}}"#);
        // `/` is not legal in a topic name, so this is an invalid topic, found at the key.
        assert_eq!(parsed.unwrap_err().kind, JsonErrorKind::InvalidTopic { topic: "a-b/c".into() });
        let parsed = from_spark_json(r#"{"a\u002db":{"0":1}}"#).unwrap();
        assert_eq!(parsed[0].0, tp("a-b", 0));
    }

    #[test]
    fn spark_json_errors_name_line_and_column() {
        let e = from_spark_json("{\"t\":{\"0\":1,\n  \"1\":1.5}}").unwrap_err();
        assert_eq!(e.kind, JsonErrorKind::InvalidNumber);
        assert_eq!((e.line, e.column, e.position), (2, 7, 19));
        let kinds = [
            ("", JsonErrorKind::UnexpectedEnd { expected: "'{'" }),
            (r#"{"t":{"0":1}"#, JsonErrorKind::UnexpectedEnd { expected: "',' or '}'" }),
            (r#"{"t":{"0":-3}}"#, JsonErrorKind::InvalidOffset { value: -3 }),
            (r#"{"t":{"0":01}}"#, JsonErrorKind::InvalidNumber),
            (r#"{"t":{"0":99999999999999999999}}"#, JsonErrorKind::InvalidNumber),
            (r#"{"t":{"-1":1}}"#, JsonErrorKind::InvalidPartition { key: "-1".into() }),
            (r#"{"t":{"0":1,"0":2}}"#, JsonErrorKind::DuplicatePartition { topic: "t".into(), partition: 0 }),
            (r#"{"t":{},"t":{}}"#, JsonErrorKind::DuplicateTopic { topic: "t".into() }),
            (r#"{"t":{}} x"#, JsonErrorKind::TrailingCharacters),
            (r#"{"t\q":{}}"#, JsonErrorKind::InvalidEscape),
            (r#"{"t\ud800":{}}"#, JsonErrorKind::InvalidEscape),
            ("{\"t\u{1}\":{}}", JsonErrorKind::ControlCharacter),
            (
                r#"{"t":[1]}"#,
                JsonErrorKind::Unexpected { found: '[', expected: "'{' starting the topic's partitions" },
            ),
        ];
        for (input, kind) in kinds {
            assert_eq!(from_spark_json(input).unwrap_err().kind, kind, "{input}");
        }
    }
}
