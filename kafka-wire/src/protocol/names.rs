//! Kafka's rules for topic names and group ids, checked before a name goes on the wire.
//!
//! A broker answers a name it cannot take (a 32,768-byte group id, a topic with a space) by
//! closing the connection, which a client can only report as "broker unreachable" after
//! retrying for its whole timeout. Checking here turns that into an immediate error naming the
//! rule. The client's entry points that take names call these; the `kwire` CLI calls them
//! before it connects.

use std::fmt;

/// Kafka's limit on a topic name, in characters (`Topic.MAX_NAME_LENGTH`).
pub const MAX_TOPIC_LEN: usize = 249;

/// The longest group id the protocol can carry, in bytes: a STRING's length is an `i16`.
pub const MAX_GROUP_ID_LEN: usize = i16::MAX as usize;

/// How much of a refused name an error message shows.
const SHOWN_CHARS: usize = 64;

/// What kind of name was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// A topic name.
    Topic,
    /// A consumer group id.
    Group,
}

/// Why a name was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameRule {
    /// The name is empty.
    Empty,
    /// `.` and `..` are not topic names.
    Dot,
    /// Longer than the limit: `len` in the limit's unit (characters for a topic, bytes for a
    /// group id).
    TooLong {
        /// The name's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A topic character outside `[a-zA-Z0-9._-]`.
    IllegalChar(char),
}

/// A name that breaks Kafka's rules: which kind, the name, and the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidName {
    /// Whether it was a topic name or a group id.
    pub kind: NameKind,
    /// The refused name, whole.
    pub name: String,
    /// The rule it breaks.
    pub rule: NameRule,
}

impl fmt::Display for InvalidName {
    /// One line; a long name is cut (the message must stay readable for a 1 MB name). Control
    /// characters are not escaped here: printing to a terminal is the caller's concern.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            NameKind::Topic => "topic name",
            NameKind::Group => "group id",
        };
        let shown: String = self.name.chars().take(SHOWN_CHARS).collect();
        let cut = if shown.len() < self.name.len() { "..." } else { "" };
        write!(f, "invalid {kind} `{shown}{cut}`: ")?;
        match self.rule {
            NameRule::Empty => f.write_str("must not be empty"),
            NameRule::Dot => f.write_str("must not be `.` or `..`"),
            NameRule::TooLong { len, max } => match self.kind {
                NameKind::Topic => write!(f, "{len} characters, Kafka allows at most {max}"),
                NameKind::Group => write!(f, "{len} bytes, the protocol allows at most {max}"),
            },
            NameRule::IllegalChar(c) => write!(
                f,
                "contains `{}`; Kafka allows only ASCII letters, digits, `.`, `_` and `-`",
                c.escape_debug()
            ),
        }
    }
}

impl std::error::Error for InvalidName {}

/// Kafka's rule for topic names (`Topic.validate`): 1 to 249 characters of `[a-zA-Z0-9._-]`,
/// not `.` or `..`.
pub fn validate_topic(topic: &str) -> Result<(), InvalidName> {
    let refuse = |rule| Err(InvalidName { kind: NameKind::Topic, name: topic.to_owned(), rule });
    if topic.is_empty() {
        return refuse(NameRule::Empty);
    }
    if topic == "." || topic == ".." {
        return refuse(NameRule::Dot);
    }
    if let Some(c) = topic.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))) {
        return refuse(NameRule::IllegalChar(c));
    }
    // Only ASCII is left, so bytes are characters.
    if topic.len() > MAX_TOPIC_LEN {
        return refuse(NameRule::TooLong { len: topic.len(), max: MAX_TOPIC_LEN });
    }
    Ok(())
}

/// Every name in `topics`, checked with [`validate_topic`]; the first refused one is the error.
pub fn validate_topics<'a>(topics: impl IntoIterator<Item = &'a str>) -> Result<(), InvalidName> {
    topics.into_iter().try_for_each(validate_topic)
}

/// A group id: not empty, and short enough for the protocol's STRING (Kafka takes any other
/// text).
pub fn validate_group(group: &str) -> Result<(), InvalidName> {
    let refuse = |rule| Err(InvalidName { kind: NameKind::Group, name: group.to_owned(), rule });
    if group.is_empty() {
        return refuse(NameRule::Empty);
    }
    if group.len() > MAX_GROUP_ID_LEN {
        return refuse(NameRule::TooLong { len: group.len(), max: MAX_GROUP_ID_LEN });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legal_topic_names_pass() {
        for name in ["kafka_direct", "a.b-C_9", "__consumer_offsets", &"x".repeat(249)] {
            assert_eq!(validate_topic(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn topic_names_breaking_kafkas_rule_are_refused_with_the_rule() {
        let rule = |name: &str| validate_topic(name).unwrap_err().rule;
        assert_eq!(rule(""), NameRule::Empty);
        assert_eq!(rule("."), NameRule::Dot);
        assert_eq!(rule(".."), NameRule::Dot);
        assert_eq!(rule(&"x".repeat(250)), NameRule::TooLong { len: 250, max: 249 });
        assert_eq!(rule("a b"), NameRule::IllegalChar(' '));
        assert_eq!(rule("a/b"), NameRule::IllegalChar('/'));
        assert_eq!(rule("é"), NameRule::IllegalChar('é'));
        assert_eq!(rule("a\u{1b}[31m"), NameRule::IllegalChar('\u{1b}'));
    }

    #[test]
    fn a_group_id_must_fit_the_protocols_string() {
        assert_eq!(validate_group("spark group: #1"), Ok(()));
        assert_eq!(validate_group(&"g".repeat(32_767)), Ok(()));
        let err = validate_group(&"g".repeat(32_768)).unwrap_err();
        assert_eq!(err.rule, NameRule::TooLong { len: 32_768, max: 32_767 });
        assert_eq!(validate_group("").unwrap_err().rule, NameRule::Empty);
    }

    #[test]
    fn the_message_is_one_short_line_for_a_huge_name() {
        let text = validate_group(&"g".repeat(1_000_000)).unwrap_err().to_string();
        assert!(text.len() < 200, "{text}");
        assert!(text.contains("1000000 bytes") && text.contains("at most 32767"), "{text}");
        let text = validate_topic(&"t".repeat(300)).unwrap_err().to_string();
        assert!(text.starts_with("invalid topic name `tttt") && text.contains("300 characters"), "{text}");
    }
}
