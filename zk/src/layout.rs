//! Every znode path kwire touches, in one place.
//!
//! ```text
//! <chroot>/consumers/<group>/offsets/<topic>/<partition>   decimal ASCII offset, no newline
//!                                                          (Kafka 0.8, Spark, Curator jobs)
//! <chroot>/consumers/<group>/kwire/<topic>/<partition>     kwire's extra metadata, see `meta`
//! ```
//!
//! The `offsets` subtree is exactly the one the old consumers use; nothing else is ever put in it,
//! because readers such as the seeds' Curator code take *every* child of
//! `/consumers/<group>/offsets/<topic>` for a partition number (`Integer.valueOf(child)`).
//! kwire's metadata lives in a sibling subtree the old tools never look at.

use std::fmt;

use nom::bytes::complete::tag;
use nom::character::complete::digit1;
use nom::combinator::{all_consuming, opt, verify};
use nom::{IResult, Parser};

/// Kafka's own limit on a topic name (`Topic.MAX_NAME_LENGTH`).
pub const MAX_TOPIC_LEN: usize = 249;

/// The ZooKeeper servers and optional chroot of a connect string
/// `host:port[,host:port...][/chroot]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectString {
    /// `host:port[,host:port...]`, handed to the ZooKeeper client unchanged.
    pub servers: String,
    /// Where kwire's paths start: `""` for the root, otherwise `/a/b` (no trailing slash).
    pub layout: Layout,
}

/// Why a connect string, group, topic or chroot was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameError {
    /// Nothing was given.
    Empty,
    /// `.` and `..` are not znode names.
    Dot,
    /// Longer than ZooKeeper or Kafka allows.
    TooLong {
        /// The longest allowed, in bytes.
        max: usize,
    },
    /// The character is not allowed here (a `/` inside a name, a topic character outside
    /// `[a-zA-Z0-9._-]`, or a character ZooKeeper refuses in any path).
    BadChar(char),
    /// A chroot must start with `/`, must not end with one, and has no empty component.
    BadChroot,
    /// No `host:port` before the chroot.
    NoServers,
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameError::Empty => f.write_str("must not be empty"),
            NameError::Dot => f.write_str("must not be \".\" or \"..\""),
            NameError::TooLong { max } => write!(f, "is longer than {max} characters"),
            NameError::BadChar(c) => write!(f, "contains the illegal character {c:?}"),
            NameError::BadChroot => {
                f.write_str("chroot must look like /a/b (leading '/', no trailing '/', no empty part)")
            }
            NameError::NoServers => f.write_str("has no host:port before the chroot"),
        }
    }
}

impl ConnectString {
    /// Splits `host:port[,host:port]/chroot` the way ZooKeeper's Java client does: everything
    /// from the first `/` is the chroot. A chroot of `/` means none.
    pub fn parse(s: &str) -> Result<ConnectString, NameError> {
        let (servers, chroot) = match s.find('/') {
            Some(i) => (&s[..i], &s[i..]),
            None => (s, ""),
        };
        if servers.split(',').all(|h| h.trim().is_empty()) {
            return Err(NameError::NoServers);
        }
        let layout = Layout::with_chroot(chroot)?;
        Ok(ConnectString { servers: servers.to_owned(), layout })
    }
}

/// Builds the znode paths under an optional chroot.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Layout {
    chroot: String,
}

impl Layout {
    /// The layout at the root of the ZooKeeper tree (no chroot).
    pub fn root() -> Layout {
        Layout { chroot: String::new() }
    }

    /// `""` and `"/"` mean no chroot; otherwise `/a/b` with valid znode names.
    pub fn with_chroot(chroot: &str) -> Result<Layout, NameError> {
        if chroot.is_empty() || chroot == "/" {
            return Ok(Layout::root());
        }
        let Some(rest) = chroot.strip_prefix('/') else { return Err(NameError::BadChroot) };
        for part in rest.split('/') {
            match validate_znode_name(part) {
                Ok(()) => {}
                Err(NameError::Empty) => return Err(NameError::BadChroot),
                Err(e) => return Err(e),
            }
        }
        Ok(Layout { chroot: chroot.to_owned() })
    }

    /// The chroot, `""` when there is none.
    pub fn chroot(&self) -> &str {
        &self.chroot
    }

    /// `<chroot>/consumers`: its children are the group names.
    pub fn consumers(&self) -> String {
        format!("{}/consumers", self.chroot)
    }

    /// `<chroot>/consumers/<group>`.
    pub fn group(&self, group: &str) -> String {
        format!("{}/consumers/{group}", self.chroot)
    }

    /// `<chroot>/consumers/<group>/offsets`: its children are the topic names.
    pub fn offsets_root(&self, group: &str) -> String {
        format!("{}/consumers/{group}/offsets", self.chroot)
    }

    /// `<chroot>/consumers/<group>/offsets/<topic>`: its children are the partition numbers.
    pub fn offsets_topic(&self, group: &str, topic: &str) -> String {
        format!("{}/consumers/{group}/offsets/{topic}", self.chroot)
    }

    /// `<chroot>/consumers/<group>/offsets/<topic>/<partition>`: the offset as decimal text.
    pub fn offset(&self, group: &str, topic: &str, partition: i32) -> String {
        format!("{}/consumers/{group}/offsets/{topic}/{partition}", self.chroot)
    }

    /// `<chroot>/consumers/<group>/kwire`.
    pub fn meta_root(&self, group: &str) -> String {
        format!("{}/consumers/{group}/kwire", self.chroot)
    }

    /// `<chroot>/consumers/<group>/kwire/<topic>`.
    pub fn meta_topic(&self, group: &str, topic: &str) -> String {
        format!("{}/consumers/{group}/kwire/{topic}", self.chroot)
    }

    /// `<chroot>/consumers/<group>/kwire/<topic>/<partition>`: see [`crate::meta`].
    pub fn meta(&self, group: &str, topic: &str, partition: i32) -> String {
        format!("{}/consumers/{group}/kwire/{topic}/{partition}", self.chroot)
    }

    /// Every node that must exist before the offset and metadata nodes of `topic` can be
    /// created, parents first: the chroot's components, `/consumers`, the group, and the two
    /// topic folders.
    pub fn ancestors(&self, group: &str, topic: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut at = String::new();
        for part in self.chroot.split('/').filter(|p| !p.is_empty()) {
            at.push('/');
            at.push_str(part);
            out.push(at.clone());
        }
        out.push(self.consumers());
        out.push(self.group(group));
        out.push(self.offsets_root(group));
        out.push(self.offsets_topic(group, topic));
        out.push(self.meta_root(group));
        out.push(self.meta_topic(group, topic));
        out
    }
}

/// A consumer group id as a znode name. Kafka allows almost any string as a group id; ZooKeeper
/// needs it to be one path component.
pub fn validate_group(group: &str) -> Result<(), NameError> {
    validate_znode_name(group)
}

/// Kafka's rule for topic names (`Topic.validate`): 1 to 249 characters of `[a-zA-Z0-9._-]`,
/// not `.` or `..`.
pub fn validate_topic(topic: &str) -> Result<(), NameError> {
    if topic.is_empty() {
        return Err(NameError::Empty);
    }
    if topic == "." || topic == ".." {
        return Err(NameError::Dot);
    }
    if topic.len() > MAX_TOPIC_LEN {
        return Err(NameError::TooLong { max: MAX_TOPIC_LEN });
    }
    match topic.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))) {
        Some(c) => Err(NameError::BadChar(c)),
        None => Ok(()),
    }
}

/// One path component as ZooKeeper's `PathUtils.validatePath` accepts it.
fn validate_znode_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name == "." || name == ".." {
        return Err(NameError::Dot);
    }
    match name.chars().find(|&c| c == '/' || zookeeper_refuses(c)) {
        Some(c) => Err(NameError::BadChar(c)),
        None => Ok(()),
    }
}

/// The characters ZooKeeper refuses anywhere in a path.
fn zookeeper_refuses(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{f000}'..='\u{f8ff}' | '\u{fff0}'..='\u{ffff}')
}

/// A partition child name as the old writers produce it (`Integer.toString`): decimal digits,
/// no sign, no leading zero, fits an `i32`. Anything else is not a partition.
pub fn parse_partition(name: &str) -> Option<i32> {
    let (_, digits) = canonical_decimal(name).ok()?;
    digits.parse().ok()
}

/// Decimal digits without a leading zero (but `0` itself): all of the input.
fn canonical_decimal(input: &str) -> IResult<&str, &str, ()> {
    all_consuming(verify(digit1, |d: &str| d == "0" || !d.starts_with('0'))).parse(input)
}

/// Why the bytes of an offset node are not an offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetTextError {
    /// Nothing was given.
    Empty,
    /// A byte that is not an ASCII digit (a sign, a space, a newline, JSON quotes...).
    NotDecimal,
    /// A leading `-`: offsets are never negative.
    Negative,
    /// More than `i64::MAX`.
    Overflow,
}

impl fmt::Display for OffsetTextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OffsetTextError::Empty => "empty value",
            OffsetTextError::NotDecimal => "not decimal digits",
            OffsetTextError::Negative => "negative offset",
            OffsetTextError::Overflow => "offset does not fit in a signed 64-bit integer",
        })
    }
}

/// Parses an offset node's value: decimal ASCII digits only, as Kafka 0.8 (`offset.toString`)
/// and Jackson (`writeValueAsBytes(Long)`) write it. Leading zeros are accepted (the value is
/// still unambiguous); whitespace and signs are not, so a damaged node is reported instead of
/// half-read. A value both damaged and too long is reported as damaged.
pub fn parse_offset(bytes: &[u8]) -> Result<i64, OffsetTextError> {
    if bytes.is_empty() {
        return Err(OffsetTextError::Empty);
    }
    let (_, (minus, digits)) = signed_digits(bytes).map_err(|_| OffsetTextError::NotDecimal)?;
    if minus {
        return Err(OffsetTextError::Negative);
    }
    digits
        .iter()
        .try_fold(0i64, |value, &b| value.checked_mul(10)?.checked_add(i64::from(b - b'0')))
        .ok_or(OffsetTextError::Overflow)
}

/// An optional `-` (whether there was one) and at least one ASCII digit: all of the input.
fn signed_digits(input: &[u8]) -> IResult<&[u8], (bool, &[u8]), ()> {
    all_consuming((opt(tag(&b"-"[..])).map(|minus| minus.is_some()), digit1)).parse(input)
}

/// The value of an offset node: `offset.to_string()`, byte for byte what Kafka 0.8 writes.
pub fn format_offset(offset: i64) -> Vec<u8> {
    offset.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_string_without_chroot_uses_the_root() {
        let cs = ConnectString::parse("zk1:2181,zk2:2181").unwrap();
        assert_eq!(cs.servers, "zk1:2181,zk2:2181");
        assert_eq!(cs.layout.offset("g", "t", 3), "/consumers/g/offsets/t/3");
        assert_eq!(cs.layout.meta("g", "t", 3), "/consumers/g/kwire/t/3");
    }

    #[test]
    fn connect_string_chroot_prefixes_every_path() {
        let cs = ConnectString::parse("zk1:2181,zk2:2181/kafka/prod").unwrap();
        assert_eq!(cs.servers, "zk1:2181,zk2:2181");
        assert_eq!(cs.layout.chroot(), "/kafka/prod");
        assert_eq!(cs.layout.offset("g", "t", 0), "/kafka/prod/consumers/g/offsets/t/0");
        assert_eq!(cs.layout.consumers(), "/kafka/prod/consumers");
        assert_eq!(
            cs.layout.ancestors("g", "t"),
            [
                "/kafka",
                "/kafka/prod",
                "/kafka/prod/consumers",
                "/kafka/prod/consumers/g",
                "/kafka/prod/consumers/g/offsets",
                "/kafka/prod/consumers/g/offsets/t",
                "/kafka/prod/consumers/g/kwire",
                "/kafka/prod/consumers/g/kwire/t",
            ]
        );
    }

    #[test]
    fn slash_alone_is_no_chroot() {
        let cs = ConnectString::parse("127.0.0.1:2181/").unwrap();
        assert_eq!(cs.layout, Layout::root());
        assert_eq!(cs.layout.ancestors("g", "t")[0], "/consumers");
    }

    #[test]
    fn malformed_chroots_and_server_lists_are_refused() {
        assert_eq!(ConnectString::parse("/kafka"), Err(NameError::NoServers));
        assert_eq!(ConnectString::parse(""), Err(NameError::NoServers));
        assert_eq!(ConnectString::parse("zk:2181/kafka/"), Err(NameError::BadChroot));
        assert_eq!(ConnectString::parse("zk:2181//kafka"), Err(NameError::BadChroot));
        assert_eq!(ConnectString::parse("zk:2181/a/../b"), Err(NameError::Dot));
        assert_eq!(ConnectString::parse("zk:2181/a\u{1}"), Err(NameError::BadChar('\u{1}')));
    }

    #[test]
    fn group_names_must_be_one_znode_component() {
        assert_eq!(validate_group("spark-group"), Ok(()));
        assert_eq!(validate_group("group with spaces:and#symbols"), Ok(()));
        assert_eq!(validate_group(""), Err(NameError::Empty));
        assert_eq!(validate_group(".."), Err(NameError::Dot));
        assert_eq!(validate_group("a/b"), Err(NameError::BadChar('/')));
        assert_eq!(validate_group("a\nb"), Err(NameError::BadChar('\n')));
    }

    #[test]
    fn topic_names_follow_kafka() {
        assert_eq!(validate_topic("kafka_direct"), Ok(()));
        assert_eq!(validate_topic("a.b-C_9"), Ok(()));
        assert_eq!(validate_topic(""), Err(NameError::Empty));
        assert_eq!(validate_topic("."), Err(NameError::Dot));
        assert_eq!(validate_topic("a/b"), Err(NameError::BadChar('/')));
        assert_eq!(validate_topic("a b"), Err(NameError::BadChar(' ')));
        assert_eq!(validate_topic("é"), Err(NameError::BadChar('é')));
        assert_eq!(validate_topic(&"x".repeat(249)), Ok(()));
        assert_eq!(validate_topic(&"x".repeat(250)), Err(NameError::TooLong { max: 249 }));
    }

    #[test]
    fn partition_children_are_canonical_decimal() {
        assert_eq!(parse_partition("0"), Some(0));
        assert_eq!(parse_partition("63"), Some(63));
        assert_eq!(parse_partition("2147483647"), Some(i32::MAX));
        assert_eq!(parse_partition("2147483648"), None);
        assert_eq!(parse_partition("-1"), None);
        assert_eq!(parse_partition("07"), None);
        assert_eq!(parse_partition(""), None);
        assert_eq!(parse_partition("lock"), None);
    }

    #[test]
    fn offset_text_is_what_kafka_08_writes() {
        assert_eq!(format_offset(0), b"0");
        assert_eq!(format_offset(42), b"42");
        assert_eq!(format_offset(i64::MAX), b"9223372036854775807");
        assert_eq!(parse_offset(b"42"), Ok(42));
        assert_eq!(parse_offset(b"0"), Ok(0));
        assert_eq!(parse_offset(b"007"), Ok(7));
        assert_eq!(parse_offset(b"9223372036854775807"), Ok(i64::MAX));
    }

    #[test]
    fn damaged_offset_text_is_an_error_not_a_guess() {
        assert_eq!(parse_offset(b""), Err(OffsetTextError::Empty));
        assert_eq!(parse_offset(b"-1"), Err(OffsetTextError::Negative));
        assert_eq!(parse_offset(b"-"), Err(OffsetTextError::NotDecimal));
        assert_eq!(parse_offset(b"+5"), Err(OffsetTextError::NotDecimal));
        assert_eq!(parse_offset(b"42\n"), Err(OffsetTextError::NotDecimal));
        assert_eq!(parse_offset(b" 42"), Err(OffsetTextError::NotDecimal));
        assert_eq!(parse_offset(b"\"42\""), Err(OffsetTextError::NotDecimal));
        assert_eq!(parse_offset(b"4.2"), Err(OffsetTextError::NotDecimal));
        assert_eq!(parse_offset(b"127.0.0.1"), Err(OffsetTextError::NotDecimal));
        assert_eq!(parse_offset(b"9223372036854775808"), Err(OffsetTextError::Overflow));
        assert_eq!(parse_offset(&[0xff, b'1']), Err(OffsetTextError::NotDecimal));
    }

    #[test]
    fn every_offset_round_trips_through_its_text() {
        for offset in [0, 1, 9, 10, 99, 100, 1_000_000_007, i64::from(i32::MAX) + 1, i64::MAX - 1, i64::MAX] {
            assert_eq!(parse_offset(&format_offset(offset)), Ok(offset));
        }
    }

    #[test]
    fn a_damaged_value_is_reported_as_damaged_even_when_too_long() {
        assert_eq!(parse_offset(b"99999999999999999999x"), Err(OffsetTextError::NotDecimal));
        assert_eq!(parse_offset(b"-99999999999999999999"), Err(OffsetTextError::Negative));
        assert_eq!(parse_offset(b"-1x"), Err(OffsetTextError::NotDecimal));
    }

    proptest::proptest! {
        #[test]
        fn offset_text_never_panics_on_any_bytes(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..32)) {
            let _ = parse_offset(&bytes);
        }

        #[test]
        fn partition_names_never_panic_on_any_text(name in ".{0,16}") {
            let _ = parse_partition(&name);
        }

        #[test]
        fn offsets_round_trip_through_their_text(offset in 0..=i64::MAX) {
            proptest::prop_assert_eq!(parse_offset(&format_offset(offset)), Ok(offset));
        }

        #[test]
        fn partitions_round_trip_through_their_name(partition in 0..=i32::MAX) {
            proptest::prop_assert_eq!(parse_partition(&partition.to_string()), Some(partition));
            proptest::prop_assert_eq!(parse_partition(&format!("0{partition}")), None);
            proptest::prop_assert_eq!(parse_partition(&format!("-{partition}")), None);
        }

        /// Only ASCII digits are ever read: any other byte anywhere makes the value damaged.
        #[test]
        fn one_foreign_byte_makes_the_offset_text_damaged(
            offset in 0..=i64::MAX, at in proptest::num::usize::ANY, byte in proptest::num::u8::ANY,
        ) {
            proptest::prop_assume!(!byte.is_ascii_digit());
            let mut text = format_offset(offset);
            let at = at % (text.len() + 1);
            text.insert(at, byte);
            let expected = if at == 0 && byte == b'-' { OffsetTextError::Negative } else { OffsetTextError::NotDecimal };
            proptest::prop_assert_eq!(parse_offset(&text), Err(expected));
        }
    }
}
