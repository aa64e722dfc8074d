//! What a write did, partition by partition: `reset --execute`, `commit` and `migrate --execute`
//! show it (a STATUS column, a `status` field) and exit with the code it calls for. Kafka's
//! coordinator answers per partition, so a batch can be partly written; the report then says
//! exactly which partitions hold the new offset and which do not, never just "failed".

use kafka_client::TopicPartition;

use crate::exit::{Exit, Failure};
use crate::store::{Refused, Saved};

/// The outcome of one command's write (or of not writing).
#[derive(Debug)]
pub enum WriteReport {
    /// No `--execute`: nothing was written, by request.
    DryRun,
    /// The store took every partition, and each read back.
    All,
    /// The store took `written` (each read back) and refused `refused`.
    Partly { written: Vec<TopicPartition>, refused: Vec<Refused> },
    /// The write failed as a whole (the failure says why): nothing was written.
    Failed,
}

impl WriteReport {
    /// The report for a save's result, and the failure to end the command with, if any.
    pub fn of(result: Result<Saved, Failure>) -> (Self, Option<Failure>) {
        match result {
            Ok(Saved::All) => (Self::All, None),
            Ok(Saved::Partly { written, refused }) => {
                let failure = partly_failure(written.len(), &refused);
                (Self::Partly { written, refused }, Some(failure))
            }
            Err(failure) => (Self::Failed, Some(failure)),
        }
    }

    /// Whether anything was written.
    pub fn wrote(&self) -> bool {
        match self {
            Self::All => true,
            Self::Partly { written, .. } => !written.is_empty(),
            Self::DryRun | Self::Failed => false,
        }
    }

    /// `tp`'s status (`dry_run`, `written`, `refused`, `not_written`) and, when refused, why.
    pub fn status(&self, tp: &TopicPartition) -> (&'static str, Option<&str>) {
        match self {
            Self::DryRun => ("dry_run", None),
            Self::All => ("written", None),
            Self::Failed => ("not_written", None),
            Self::Partly { written, refused } => {
                if written.contains(tp) {
                    ("written", None)
                } else if let Some(r) = refused.iter().find(|r| &r.tp == tp) {
                    ("refused", Some(r.reason.as_str()))
                } else {
                    ("not_written", None)
                }
            }
        }
    }

    /// The STATUS cell of a text table: `written`, `refused: REASON`, `not written`.
    pub fn cell(&self, tp: &TopicPartition) -> String {
        match self.status(tp) {
            (_, Some(reason)) => format!("refused: {reason}"),
            ("not_written", None) => "not written".to_owned(),
            (status, None) => status.to_owned(),
        }
    }

    /// Whether the text table gets a STATUS column (only after a write was attempted).
    pub fn has_status(&self) -> bool {
        !matches!(self, Self::DryRun)
    }

    /// `tp`'s status as the two JSON fields `status` and `error`.
    pub fn json(&self, tp: &TopicPartition) -> (serde_json::Value, serde_json::Value) {
        let (status, reason) = self.status(tp);
        (status.into(), reason.map_or(serde_json::Value::Null, Into::into))
    }
}

/// The one-line failure for a partly written batch: exit PARTIAL, each refusal named.
fn partly_failure(written: usize, refused: &[Refused]) -> Failure {
    let reasons: Vec<String> = refused.iter().map(|r| format!("{}: {}", r.tp, r.reason)).collect();
    Failure::new(
        Exit::PARTIAL,
        format!(
            "partly written: {written} of {} partition(s) written and read back, {} refused (each partition's status is listed): {}",
            written + refused.len(),
            refused.len(),
            reasons.join("; ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partly_written_batch_names_each_partition_and_exits_partial() {
        let ok = TopicPartition::new("good", 0);
        let bad = TopicPartition::new("gone", 0);
        let (report, failure) = WriteReport::of(Ok(Saved::Partly {
            written: vec![ok.clone()],
            refused: vec![Refused { tp: bad.clone(), reason: "UNKNOWN_TOPIC_OR_PARTITION".into() }],
        }));
        let failure = failure.expect("a partial write is a failure");
        assert_eq!(failure.exit, Exit::PARTIAL);
        assert!(failure.message.contains("1 of 2") && failure.message.contains("gone-0"), "{failure}");
        assert_eq!(report.status(&ok), ("written", None));
        assert_eq!(report.status(&bad), ("refused", Some("UNKNOWN_TOPIC_OR_PARTITION")));
        assert!(report.wrote() && report.has_status());
        assert_eq!(report.cell(&bad), "refused: UNKNOWN_TOPIC_OR_PARTITION");
    }

    #[test]
    fn a_failed_write_marks_every_partition_not_written() {
        let (report, failure) = WriteReport::of(Err(Failure::new(Exit::REFUSED, "group active")));
        assert_eq!(failure.map(|f| f.exit), Some(Exit::REFUSED));
        assert_eq!(report.status(&TopicPartition::new("t", 0)), ("not_written", None));
        assert!(!report.wrote());
    }
}
