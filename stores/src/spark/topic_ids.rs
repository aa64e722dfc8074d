//! kwire's view of the topic ids of a checkpoint's topics, in a side file kwire owns in the
//! checkpoint folder: [`FILE_NAME`], a hidden name Spark does not read (Spark reads `metadata`,
//! `offsets/`, `commits/`, `sources/` and `state/`; a query started on a checkpoint holding this
//! file runs and resumes as without it, checked by `tests/it/spark_store.rs`).
//!
//! ```json
//! {"format": "kwire-spark-topic-ids", "version": 1, "batch": 7,
//!  "topic_ids": {"events": "6qgwkxhqQAivANSed-tpbg"}}
//! ```
//!
//! Written only by a save (`reset`/`commit`/`migrate --execute`), after the batch's commit
//! file, replacing the previous one atomically like the file store's document: the ids of the
//! offsets saved, and the previous file's ids of the topics the save carried over unchanged.
//! `batch` is the batch kwire wrote. The ids apply to that batch and the ones Spark commits
//! after it (Spark keeps no id and reads the same topics by name); they do not apply when the
//! query resumes from an older batch than `batch` (a checkpoint restored from a copy).
//!
//! Spark never checks ids, so after a topic was recreated and refilled past the stored
//! offsets (nothing is ahead of the log) these ids are the only sign: the stored offsets then
//! carry the old id and the plan names `topic_recreated` with the old and the new id.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use kafka_wire::protocol::Uuid;
use serde::{Deserialize, Serialize};

use super::checkpoint::read_log_file;
use super::SparkStoreError;
use crate::file::replace::{self, Install, Ownership};

/// The side file's name in the checkpoint folder.
pub const FILE_NAME: &str = ".kwire-topic-ids.json";
/// The `format` field of the side file.
pub const FORMAT: &str = "kwire-spark-topic-ids";
/// The newest side-file version this build reads, and the one it writes.
pub const VERSION: u32 = 1;

/// The side file, read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopicIds {
    /// The batch kwire wrote with these ids.
    pub batch: u64,
    /// Each topic's id when kwire wrote `batch`.
    pub ids: BTreeMap<String, Uuid>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    format: String,
    version: u32,
    batch: u64,
    topic_ids: BTreeMap<String, String>,
}

/// The side file's path in the checkpoint `dir`.
pub fn path(dir: &Path) -> PathBuf {
    dir.join(FILE_NAME)
}

/// The side file of the checkpoint `dir`; `None` when there is none. A damaged, foreign or
/// newer file is an error naming it.
pub fn read(dir: &Path) -> Result<Option<TopicIds>, SparkStoreError> {
    let path = path(dir);
    match fs::symlink_metadata(&path) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(SparkStoreError::Io { path, op: "inspect", source }),
    }
    let (bytes, _) = read_log_file(&path)?;
    parse(&bytes).map(Some).map_err(|reason| SparkStoreError::Corrupt { path, line: None, reason })
}

/// Parses the side file's bytes; `Err` says what is wrong.
pub fn parse(bytes: &[u8]) -> Result<TopicIds, String> {
    let doc: Document =
        serde_json::from_slice(bytes).map_err(|e| format!("not kwire's topic-id file: {e}"))?;
    if doc.format != FORMAT {
        return Err(format!("format is `{}`, expected `{FORMAT}`", doc.format));
    }
    if doc.version > VERSION {
        return Err(format!("version {} is newer than this kwire reads (up to {VERSION})", doc.version));
    }
    let ids = doc
        .topic_ids
        .into_iter()
        .map(|(topic, text)| match Uuid::parse(&text) {
            Ok(id) if !id.is_zero() => Ok((topic, id)),
            Ok(_) => Err(format!("topic `{topic}`: the zero id is no topic id")),
            Err(e) => Err(format!("topic `{topic}`: `{text}` is not a Kafka topic id: {e}")),
        })
        .collect::<Result<_, _>>()?;
    Ok(TopicIds { batch: doc.batch, ids })
}

/// The side file's bytes for `ids`.
pub fn render(ids: &TopicIds) -> Vec<u8> {
    let doc = Document {
        format: FORMAT.to_owned(),
        version: VERSION,
        batch: ids.batch,
        topic_ids: ids.ids.iter().map(|(t, id)| (t.clone(), id.to_string())).collect(),
    };
    let mut bytes = serde_json::to_vec(&doc).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// Replaces the side file of `dir` with `ids` (a new file `0644`, or the old one's permissions
/// and group). Call it under the writers' lock.
pub fn write(dir: &Path, ids: &TopicIds) -> Result<(), SparkStoreError> {
    let target = path(dir);
    let owner = match fs::symlink_metadata(&target) {
        Ok(m) => {
            use std::os::unix::fs::MetadataExt;
            Ownership { mode: m.mode() & 0o777, owner: Some((m.uid(), m.gid())) }
        }
        Err(_) => Ownership { mode: 0o644, owner: None },
    };
    replace::install(dir, FILE_NAME.as_ref(), &target, &render(ids), owner, Install::Replace)?;
    Ok(())
}

/// The ids that apply when the query resumes from batch `resume` (see the module doc).
pub fn applicable(side: Option<TopicIds>, resume: Option<u64>) -> BTreeMap<String, Uuid> {
    match (side, resume) {
        (Some(side), Some(resume)) if side.batch <= resume => side.ids,
        _ => BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(b: u8) -> Uuid {
        Uuid([b; 16])
    }

    #[test]
    fn a_rendered_side_file_parses_back_to_the_same_ids() {
        let ids = TopicIds { batch: 7, ids: [("a".to_owned(), id(1)), ("b".to_owned(), id(2))].into() };
        assert_eq!(parse(&render(&ids)).unwrap(), ids);
    }

    #[test]
    fn a_foreign_newer_or_damaged_side_file_is_an_error_saying_what_is_wrong() {
        let cases: [(&str, &str); 5] = [
            (r#"{"format":"x","version":1,"batch":0,"topic_ids":{}}"#, "format is `x`"),
            (
                r#"{"format":"kwire-spark-topic-ids","version":9,"batch":0,"topic_ids":{}}"#,
                "version 9 is newer",
            ),
            (
                r#"{"format":"kwire-spark-topic-ids","version":1,"batch":0,"topic_ids":{"t":"nope"}}"#,
                "topic `t`",
            ),
            (
                r#"{"format":"kwire-spark-topic-ids","version":1,"batch":0,"topic_ids":{"t":"AAAAAAAAAAAAAAAAAAAAAA"}}"#,
                "zero id",
            ),
            (r#"{"format":"kwire-spark-topic-ids","version":1,"batch":-1,"topic_ids":{}}"#, "not kwire's"),
        ];
        for (text, expected) in cases {
            let err = parse(text.as_bytes()).unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn ids_apply_from_the_batch_kwire_wrote_on_but_not_to_an_older_resume_point() {
        let side = TopicIds { batch: 5, ids: [("t".to_owned(), id(3))].into() };
        assert_eq!(applicable(Some(side.clone()), Some(5)).get("t"), Some(&id(3)));
        assert_eq!(applicable(Some(side.clone()), Some(9)).get("t"), Some(&id(3)), "Spark's later batches");
        assert!(applicable(Some(side.clone()), Some(4)).is_empty(), "a checkpoint restored from before");
        assert!(applicable(Some(side), None).is_empty());
        assert!(applicable(None, Some(5)).is_empty());
    }
}
