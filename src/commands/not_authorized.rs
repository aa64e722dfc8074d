//! What an ACL refused in a partial answer: a topic (Metadata hides its partitions, so the
//! whole topic is one refusal) or one partition (a ListOffsets answer), with Kafka's code.
//! Reading commands show each refusal as its own row next to the authorized rows and exit 10
//! at the end ([`partial`]); writing commands write nothing when any is refused
//! ([`nothing_written`]).

use std::fmt;

use kafka_client::ClientError;
use kafka_wire::protocol::ErrorCode;
use serde_json::{json, Value};

use crate::exit::{Exit, Failure};

/// One refused topic or partition.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Refusal {
    pub topic: String,
    /// `None` when the whole topic was refused (its partitions are not known).
    pub partition: Option<i32>,
    pub code: ErrorCode,
}

impl Refusal {
    /// The refusal in `e`, when an ACL refused the call for `topic` / `partition`.
    pub fn of(topic: &str, partition: Option<i32>, e: &ClientError) -> Option<Self> {
        e.authorization_code().map(|code| Self { topic: topic.to_owned(), partition, code })
    }

    /// Kafka's name of the code (`TOPIC_AUTHORIZATION_FAILED`).
    pub fn code_name(&self) -> String {
        self.code.name().map_or_else(|| format!("error code {}", self.code.0), str::to_owned)
    }

    /// The text row's marker: `not authorized (TOPIC_AUTHORIZATION_FAILED) for principal User:x`.
    pub fn marker(&self, principal: &str) -> String {
        format!("not authorized ({}) for principal {principal}", self.code_name())
    }

    /// The partition cell of a text row: the partition, or `-` for a whole topic.
    pub fn partition_cell(&self) -> String {
        self.partition.map_or_else(|| "-".to_owned(), |p| p.to_string())
    }

    /// The JSON row: `topic`, `partition` (null for a whole topic), `error` (the code's name),
    /// `principal`, and each of `absent` (the fields an authorized row has) as null, so every row
    /// of a document has the same keys.
    pub fn json_row(&self, principal: &str, absent: &[&str]) -> Value {
        let mut row = serde_json::Map::new();
        row.insert("topic".into(), json!(self.topic));
        row.insert("partition".into(), json!(self.partition));
        for key in absent {
            row.insert((*key).into(), Value::Null);
        }
        row.insert("error".into(), json!(self.code_name()));
        row.insert("principal".into(), json!(principal));
        Value::Object(row)
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.partition {
            None => write!(f, "topic `{}` ({})", self.topic, self.code_name()),
            Some(p) => write!(f, "partition {p} of `{}` ({})", self.topic, self.code_name()),
        }
    }
}

fn list(refused: &[Refusal]) -> String {
    refused.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// Exit 10 after a reading command printed every row it could: names what was refused
/// ([`crate::commands::Context::explain`] adds the principal).
pub fn partial(refused: &[Refusal], shown: usize) -> Failure {
    Failure::new(
        Exit::NOT_AUTHORIZED,
        format!(
            "not authorized for {}; the {shown} authorized row(s) are shown, the refused ones marked `not authorized`",
            list(refused)
        ),
    )
}

/// Exit 10 of a command that writes (or needs every partition): nothing was written.
pub fn nothing_written(refused: &[Refusal]) -> Failure {
    Failure::new(Exit::NOT_AUTHORIZED, format!("not authorized for {}; nothing written", list(refused)))
}

/// Exit 10 of a command that needs every partition and writes nothing.
pub fn refused(refused: &[Refusal]) -> Failure {
    Failure::new(Exit::NOT_AUTHORIZED, format!("not authorized for {}", list(refused)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_topic_is_one_row_with_the_code_and_principal_and_the_fields_of_the_others() {
        let r = Refusal { topic: "t".into(), partition: None, code: ErrorCode::TOPIC_AUTHORIZATION_FAILED };
        assert_eq!(r.marker("User:x"), "not authorized (TOPIC_AUTHORIZATION_FAILED) for principal User:x");
        assert_eq!(r.partition_cell(), "-");
        let row = r.json_row("User:x", &["offset"]);
        assert_eq!(
            row,
            json!({"topic": "t", "partition": null, "offset": null, "error": "TOPIC_AUTHORIZATION_FAILED", "principal": "User:x"})
        );
        let failure = partial(&[r], 3);
        assert_eq!(failure.exit, Exit::NOT_AUTHORIZED);
        assert!(failure.message.contains("topic `t` (TOPIC_AUTHORIZATION_FAILED)"), "{}", failure.message);
    }
}
