//! A Spark checkpoint store's own facts, shown by `group describe --store spark:PATH` above the
//! partition table: the query id, the batch the query resumes after, each source (a Kafka
//! source's topics, another source's offset, `-` for none), and a batch planned but not
//! committed with its offsets (what the query re-runs on restart).

use std::path::Path;

use kwire_stores::spark::checkpoint::{Checkpoint, Origin};
use kwire_stores::spark::log::SourceLine;
use kwire_stores::SparkStore;
use serde_json::{json, Value};

use crate::exit::{Exit, Failure};
use crate::output::escape;

/// The checkpoint at `path`, read now.
pub fn read(path: &Path) -> Result<Checkpoint, Failure> {
    SparkStore::new(path).describe().map_err(|e| Failure::new(Exit::STORE, e.to_string()))
}

fn origin_text(ckpt: &Checkpoint) -> String {
    match ckpt.origin {
        Origin::Committed(id) => format!("resumes after committed batch {id}"),
        Origin::Start => "has not finished a batch: resumes from its starting offsets".to_owned(),
        Origin::Nothing => "has no offsets yet".to_owned(),
    }
}

fn kafka_summary(k: &kwire_stores::spark::log::KafkaOffsets) -> String {
    k.iter().map(|(t, ps)| format!("{} ({} partitions)", escape(t), ps.len())).collect::<Vec<_>>().join(", ")
}

/// The lines printed above the partition table.
pub fn text(ckpt: &Checkpoint) -> Vec<String> {
    let mut lines = vec![format!(
        "checkpoint {}  query {}  {}",
        escape(&ckpt.dir.display().to_string()),
        ckpt.query_id.as_deref().map_or("-".into(), escape),
        origin_text(ckpt)
    )];
    for (i, s) in ckpt.sources.iter().enumerate() {
        lines.push(match s {
            SourceLine::Kafka(k) => format!("  source {i}: kafka {}", kafka_summary(k)),
            SourceLine::Other(o) => format!("  source {i}: other {}", escape(o)),
            SourceLine::Absent => format!("  source {i}: -"),
        });
    }
    if let Some(p) = &ckpt.pending {
        let planned: Vec<String> = kwire_stores::spark::checkpoint::kafka_entries(&p.offsets.sources)
            .map(|(_, t, part, o)| format!("{}:{part}={o}", escape(t)))
            .collect();
        lines.push(format!(
            "  batch {} planned, not committed (the query re-runs it on restart), up to: {}",
            p.id,
            if planned.is_empty() { "-".to_owned() } else { planned.join(" ") }
        ));
    }
    lines
}

/// The `checkpoint` object of `--format json`.
pub fn json(ckpt: &Checkpoint) -> Value {
    let sources: Vec<Value> = ckpt
        .sources
        .iter()
        .enumerate()
        .map(|(i, s)| match s {
            SourceLine::Kafka(k) => {
                json!({"source": i, "kind": "kafka", "topics": k.keys().collect::<Vec<_>>()})
            }
            SourceLine::Other(o) => json!({"source": i, "kind": "other", "offset": o}),
            SourceLine::Absent => json!({"source": i, "kind": "none"}),
        })
        .collect();
    json!({
        "path": ckpt.dir.display().to_string(),
        "query_id": ckpt.query_id,
        "committed_batch": ckpt.committed.as_ref().map(|b| b.id),
        "origin": match ckpt.origin { Origin::Committed(_) => "committed", Origin::Start => "starting_offsets", Origin::Nothing => "none" },
        "sources": sources,
        "pending_batch": ckpt.pending.as_ref().map(|p| json!({
            "batch": p.id,
            "partitions": kwire_stores::spark::checkpoint::kafka_entries(&p.offsets.sources)
                .map(|(source, t, part, o)| json!({"source": source, "topic": t, "partition": part, "until": o}))
                .collect::<Vec<_>>(),
        })),
    })
}
