//! A file sink's log (`OUTPUT/_spark_metadata/`), kept in step with the batches kwire writes
//! into the query's checkpoint.
//!
//! Spark's file sink records, per batch id, the data files the batch wrote, in a log of its
//! own (`FileStreamSinkLog`, a `CompactibleFileStreamLog`), and readers of the sink folder
//! (`spark.read`, the query's next compaction) need every batch id since the last compaction
//! in it. The format, read from Spark's source:
//!
//! - Batch `N` is the file `N`, except every `compactInterval`-th batch (`(N + 1) %
//!   compactInterval == 0`), which is `N.compact`.
//! - A file is `v1` then one JSON line per data file (`{"path":...,"action":"add",...}`), lines
//!   separated by `\n`, no trailing newline. A batch that wrote no files is `v1` alone.
//! - A compaction batch `N.compact` holds every entry of the batches `max(0, N - interval)`
//!   up to `N - 1` (the previous compaction's file included), then its own. Without the
//!   sink's `retention` option every entry is kept; with it, an entry whose
//!   `modificationTime` is more than the retention before the compaction's clock is left out
//!   ([`retention`], Spark's rule), and kwire applies the same rule when given the option.
//! - The interval is `spark.sql.streaming.fileSink.log.compactInterval` (default 10; it is
//!   not recorded in the checkpoint's `conf`) unless the log already has `.compact` files:
//!   with two or more, the distance between the newest two; with one, `C + 1` or its
//!   smallest divisor at least the configured interval. kwire derives it the same way.
//! - Spark deletes files older than the newest compaction's predecessors itself, at its own
//!   compactions (after `fileCleanupDelay`); kwire deletes nothing.
//!
//! [`plan`] reads the log and returns the files that bring it to batch `N`: `v1` for each
//! missing plain batch up to `N` (the batch kwire writes, and any batch before it that kwire
//! wrote without the sink), the compacted file for a compaction batch. [`write()`] puts each in
//! place atomically, never replacing a file.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::checkpoint::read_log_file;
use super::SparkStoreError;
use crate::file::replace::{self, Install, Ownership};

pub mod retention;

pub use retention::Retention;

/// The folder of a file sink's log inside the sink's output folder.
pub const METADATA_DIR: &str = "_spark_metadata";
/// Spark's default `spark.sql.streaming.fileSink.log.compactInterval`.
pub const DEFAULT_COMPACT_INTERVAL: u32 = 10;
/// The only version of the sink log Spark writes.
const VERSION: &str = "v1";
const COMPACT_SUFFIX: &str = ".compact";

/// One file of the sink log to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The batch id.
    pub batch: u64,
    /// `N` or `N.compact`.
    pub name: String,
    /// The file's bytes.
    pub bytes: Vec<u8>,
}

/// Whether batch `id` is a compaction batch at `interval`.
pub fn is_compaction(id: u64, interval: u32) -> bool {
    interval > 0 && id.checked_add(1).is_some_and(|n| n.is_multiple_of(u64::from(interval)))
}

/// The name Spark gives batch `id` at `interval`.
pub fn file_name(id: u64, interval: u32) -> String {
    if is_compaction(id, interval) {
        format!("{id}{COMPACT_SUFFIX}")
    } else {
        id.to_string()
    }
}

/// The interval Spark uses for a log whose newest `.compact` file is batch `latest`,
/// configured with `configured`: `latest + 1` when that is not above `configured`, else the
/// smallest divisor of `latest + 1` that is at least `configured` (`latest + 1` itself when
/// there is none below its half).
pub fn derive_interval(configured: u32, latest: u64) -> u32 {
    let n = latest.saturating_add(1);
    let configured64 = u64::from(configured.max(1));
    let chosen = if n <= configured64 {
        n
    } else if configured64 < n / 2 {
        (configured64..=n / 2).find(|d| n.is_multiple_of(*d)).unwrap_or(n)
    } else {
        n
    };
    u32::try_from(chosen).unwrap_or(u32::MAX)
}

/// The sink log's batch files: (batch id, whether `.compact`). Other names (Hadoop's `.N.crc`,
/// temporary files) are not batches, as for Spark.
fn list(dir: &Path) -> Result<Vec<(u64, bool)>, SparkStoreError> {
    let entries = fs::read_dir(dir).map_err(|source| SparkStoreError::Io {
        path: dir.to_path_buf(),
        op: "list",
        source,
    })?;
    let mut out = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|source| SparkStoreError::Io { path: dir.to_path_buf(), op: "list", source })?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let (digits, compact) = match name.strip_suffix(COMPACT_SUFFIX) {
            Some(d) => (d, true),
            None => (name, false),
        };
        if !digits.is_empty() && digits.len() <= 19 && digits.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(id) = digits.parse::<u64>() {
                out.push((id, compact));
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

fn refuse(path: &Path, line: Option<usize>, reason: impl Into<String>) -> SparkStoreError {
    SparkStoreError::Sink { path: path.to_path_buf(), line, reason: reason.into() }
}

/// The entry lines of a sink log file (after its `v1`), checked: the `v1` header, then JSON
/// objects only. Anything else is not a file sink's log.
fn entry_lines(path: &Path) -> Result<Vec<String>, SparkStoreError> {
    let (bytes, _) = read_log_file(path)?;
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()].split(|b| *b == b'\n').count();
        refuse(path, Some(line), "not UTF-8 text: not a file sink's log")
    })?;
    let mut lines = text.split('\n');
    let header = lines.next().unwrap_or_default();
    if header != VERSION {
        let shown: String = header.chars().take(40).collect();
        return Err(refuse(
            path,
            Some(1),
            format!("expected the file sink log's `{VERSION}` header, found `{shown}`: not a file sink's log, or a newer Spark's"),
        ));
    }
    let mut out = Vec::new();
    for (i, line) in lines.enumerate() {
        if !matches!(serde_json::from_str::<serde_json::Value>(line), Ok(serde_json::Value::Object(_))) {
            return Err(refuse(path, Some(i + 2), "not a JSON object: not a file sink's entry"));
        }
        out.push(line.to_owned());
    }
    Ok(out)
}

/// The `modificationTime` of a sink log entry as Spark's json4s reads it into a `Long`: an
/// integer (one between 2^63 and 2^64 wrapped, as `BigInt.longValue` wraps it) or a number
/// with a fraction or exponent (truncated toward zero, saturated, as `Double.toLong`). Missing,
/// `null`, a string or anything else fails Spark's own compaction, and is refused here; so is a
/// number beyond 64 bits, which no Spark writes (Spark would take an integer one modulo 2^64).
pub fn modification_time(line: &str) -> Result<i64, String> {
    let value = serde_json::from_str::<serde_json::Value>(line).map_err(|e| format!("not JSON: {e}"))?;
    let missing = "no `modificationTime`: Spark's compaction fails on this entry (json4s: no usable value), so kwire cannot apply the retention to it";
    match value.get("modificationTime") {
        None | Some(serde_json::Value::Null) => Err(missing.to_owned()),
        Some(serde_json::Value::Number(n)) => {
            if let Some(i) = n.as_i64() {
                Ok(i)
            } else if let Some(u) = n.as_u64() {
                Ok(u as i64) // the low 64 bits, as Java's BigInt.longValue
            } else {
                match n.as_f64() {
                    Some(f) if f.abs() < 2f64.powi(63) => Ok(f.trunc() as i64),
                    _ => Err(format!("`modificationTime` {n} is beyond 64 bits: not a time Spark wrote")),
                }
            }
        }
        Some(other) => Err(format!(
            "`modificationTime` is {other}, not a number: Spark's compaction fails on this entry (json4s cannot convert it into a long)"
        )),
    }
}

/// The files that bring the sink log of `output` to batch `upto` (see the module doc), the
/// interval derived from the log's `.compact` files or `configured`; a compaction batch leaves
/// out the entries `retention` expires at `now` (milliseconds since the epoch, one clock for
/// the whole compaction as in Spark). Refused, naming the file: a missing log folder, a log
/// that already has `upto` (or a later batch), a file that is not a sink log's, a batch a
/// compaction needs that is missing, and with a retention, an entry whose `modificationTime`
/// Spark could not read (see [`modification_time`]).
pub fn plan(
    output: &Path,
    configured: u32,
    retention: Option<Retention>,
    upto: u64,
    now: i64,
) -> Result<Vec<Entry>, SparkStoreError> {
    let dir = output.join(METADATA_DIR);
    match fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(refuse(&dir, None, "not a folder: not a file sink's log")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(refuse(
                &dir,
                None,
                "no such folder: --spark-sink names the file sink's output folder (its `path`), which holds `_spark_metadata/` once the query has started",
            ))
        }
        Err(source) => return Err(SparkStoreError::Io { path: dir, op: "inspect", source }),
    }
    if configured == 0 {
        return Err(refuse(&dir, None, "the compact interval must be at least 1"));
    }
    let files = list(&dir)?;
    let compacts: Vec<u64> = files.iter().filter(|(_, c)| *c).map(|(id, _)| *id).rev().collect();
    let interval = match compacts.as_slice() {
        [newest, previous, ..] => u32::try_from(newest - previous).unwrap_or(u32::MAX),
        [only] => derive_interval(configured, *only),
        [] => configured,
    };
    // The newest batch Spark sees: a file under the name its id has at this interval.
    let latest = files.iter().rev().find(|(id, c)| *c == is_compaction(*id, interval)).map(|(id, _)| *id);
    if let Some(latest) = latest.filter(|l| *l >= upto) {
        return Err(refuse(
            &dir.join(file_name(latest, interval)),
            None,
            format!(
                "the file sink's log already has batch {latest}, and kwire writes batch {upto}: this sink belongs to another query or checkpoint, or the query ran past the checkpoint"
            ),
        ));
    }
    let first = latest.map_or(0, |l| l + 1);
    let mut planned: Vec<Entry> = Vec::new();
    for id in first..=upto {
        let mut lines = vec![VERSION.to_owned()];
        if is_compaction(id, interval) {
            for before in id.saturating_sub(u64::from(interval))..id {
                let name = file_name(before, interval);
                if let Some(e) = planned.iter().find(|e| e.batch == before) {
                    let text = String::from_utf8_lossy(&e.bytes).into_owned();
                    lines.extend(text.split('\n').skip(1).map(str::to_owned));
                    continue;
                }
                let path = dir.join(&name);
                if fs::symlink_metadata(&path).is_err() {
                    return Err(refuse(
                        &path,
                        None,
                        format!(
                            "missing, and compaction batch {id} (interval {interval}) needs it, as Spark would: the sink's log is damaged"
                        ),
                    ));
                }
                let kept = entry_lines(&path)?.into_iter().enumerate().filter_map(|(i, line)| {
                    let Some(retention) = retention else { return Some(Ok(line)) };
                    match modification_time(&line) {
                        Ok(modified) => retention.retains(modified, now).then_some(Ok(line)),
                        Err(reason) => Some(Err(refuse(&path, Some(i + 2), reason))),
                    }
                });
                lines.extend(kept.collect::<Result<Vec<_>, _>>()?);
            }
        }
        planned.push(Entry {
            batch: id,
            name: file_name(id, interval),
            bytes: lines.join("\n").into_bytes(),
        });
    }
    Ok(planned)
}

/// Writes `entries` into the sink log of `output`, in order, each to a temporary file renamed
/// into place without replacing anything, with the permissions and owner of the folder's
/// newest batch file.
pub fn write(output: &Path, entries: &[Entry]) -> Result<(), SparkStoreError> {
    let dir = output.join(METADATA_DIR);
    let sibling = list(&dir)?.last().map(|(id, c)| {
        let name = if *c { format!("{id}{COMPACT_SUFFIX}") } else { id.to_string() };
        dir.join(name)
    });
    let owner = match sibling.and_then(|s| fs::symlink_metadata(s).ok()) {
        Some(m) => Ownership { mode: m.mode() & 0o777, owner: Some((m.uid(), m.gid())) },
        None => Ownership { mode: 0o644, owner: None },
    };
    for e in entries {
        let target: PathBuf = dir.join(&e.name);
        replace::install(&dir, e.name.as_ref(), &target, &e.bytes, owner, Install::CreateNew)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sink(files: &[(&str, &str)]) -> PathBuf {
        let out = std::env::temp_dir().join(format!(
            "kwire-sink-unit-{}-{}",
            std::process::id(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
        ));
        fs::create_dir_all(out.join(METADATA_DIR)).unwrap();
        for (name, text) in files {
            fs::write(out.join(METADATA_DIR).join(name), text).unwrap();
        }
        out
    }

    const A: &str = r#"{"path":"file:///o/a.json","size":1,"isDir":false,"modificationTime":1,"blockReplication":1,"blockSize":1,"action":"add"}"#;
    const B: &str = r#"{"path":"file:///o/b.json","size":1,"isDir":false,"modificationTime":1,"blockReplication":1,"blockSize":1,"action":"add"}"#;

    #[test]
    fn the_interval_is_derived_as_spark_derives_it() {
        assert_eq!(derive_interval(10, 2), 3);
        assert_eq!(derive_interval(5, 11), 6);
        assert_eq!(derive_interval(10, 11), 12);
        assert_eq!(derive_interval(3, 8), 3);
        assert_eq!(derive_interval(1, 0), 1);
    }

    #[test]
    fn a_plain_batch_is_v1_alone_and_a_compaction_batch_holds_every_entry_since_the_last() {
        let out = sink(&[("0", &format!("v1\n{A}")), ("1", "v1")]);
        let plain = plan(&out, 10, None, 2, 0).unwrap();
        assert_eq!(plain, vec![Entry { batch: 2, name: "2".into(), bytes: b"v1".to_vec() }]);
        // Interval 3: batch 2 is a compaction of 0 and 1 and itself.
        let compact = plan(&out, 3, None, 2, 0).unwrap();
        assert_eq!(compact[0].name, "2.compact");
        assert_eq!(String::from_utf8(compact[0].bytes.clone()).unwrap(), format!("v1\n{A}"));
        write(&out, &compact).unwrap();
        // Batches 3 (kwire wrote it without the sink), 4 and the compaction 5 in one go: the
        // interval now comes from 2.compact (derived 3 even with 10 configured).
        fs::write(out.join(METADATA_DIR).join("3"), format!("v1\n{B}")).unwrap();
        let next = plan(&out, 10, None, 5, 0).unwrap();
        let names: Vec<&str> = next.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["4", "5.compact"]);
        assert_eq!(String::from_utf8(next[1].bytes.clone()).unwrap(), format!("v1\n{A}\n{B}"));
        fs::remove_dir_all(out).unwrap();
    }

    #[test]
    fn a_missing_foreign_or_ahead_sink_log_is_refused_naming_the_file() {
        let missing = std::env::temp_dir().join("kwire-sink-unit-none");
        let e = plan(&missing, 10, None, 0, 0).unwrap_err().to_string();
        assert!(e.contains("_spark_metadata") && e.contains("no such folder"), "{e}");
        let ahead = sink(&[("0", "v1"), ("1", "v1")]);
        let e = plan(&ahead, 10, None, 1, 0).unwrap_err().to_string();
        assert!(e.contains("_spark_metadata/1") && e.contains("already has batch 1"), "{e}");
        let foreign = sink(&[("0", "{\"x\":1}")]);
        let e = plan(&foreign, 3, None, 2, 0).unwrap_err().to_string();
        assert!(e.contains("_spark_metadata/0 line 1") && e.contains("`v1` header"), "{e}");
        let bad_line = sink(&[("0", "v1\nnot json"), ("1", "v1")]);
        let e = plan(&bad_line, 3, None, 2, 0).unwrap_err().to_string();
        assert!(e.contains("_spark_metadata/0 line 2"), "{e}");
        let gap = sink(&[("1", "v1")]);
        let e = plan(&gap, 3, None, 2, 0).unwrap_err().to_string();
        assert!(e.contains("_spark_metadata/0") && e.contains("missing"), "{e}");
        for dir in [ahead, foreign, bad_line, gap] {
            fs::remove_dir_all(dir).unwrap();
        }
    }

    fn entry(name: &str, modified: &str) -> String {
        format!(
            r#"{{"path":"file:///o/{name}.json","size":1,"isDir":false,{modified}"blockReplication":1,"blockSize":1,"action":"add"}}"#
        )
    }

    fn text(e: &Entry) -> String {
        String::from_utf8(e.bytes.clone()).unwrap()
    }

    #[test]
    fn a_compaction_with_retention_drops_the_entries_older_than_now_minus_the_retention_and_keeps_one_exactly_at_it(
    ) {
        let old = entry("old", r#""modificationTime":8999,"#);
        let edge = entry("edge", r#""modificationTime":9000,"#);
        let fresh = entry("fresh", r#""modificationTime":10000,"#);
        let fraction = entry("fraction", r#""modificationTime":9000.9,"#);
        let out = sink(&[("0", &format!("v1\n{old}\n{edge}")), ("1", &format!("v1\n{fresh}\n{fraction}"))]);
        let retention = Some(Retention::from_millis(1000));
        let planned = plan(&out, 3, retention, 2, 10_000).unwrap();
        assert_eq!(planned.len(), 1);
        assert_eq!(planned[0].name, "2.compact");
        assert_eq!(text(&planned[0]), format!("v1\n{edge}\n{fresh}\n{fraction}"));
        // One millisecond later the edge entry (and the fraction, read as 9000) is past it.
        let later = plan(&out, 3, retention, 2, 10_001).unwrap();
        assert_eq!(text(&later[0]), format!("v1\n{fresh}"));
        // Every entry expired: `v1` alone, as Spark writes it.
        let all = plan(&out, 3, retention, 2, 1_000_000).unwrap();
        assert_eq!(text(&all[0]), "v1");
        // Without the option every entry stays; a plain batch is `v1` alone either way.
        assert_eq!(
            text(&plan(&out, 3, None, 2, 1_000_000).unwrap()[0]),
            format!("v1\n{old}\n{edge}\n{fresh}\n{fraction}")
        );
        assert_eq!(text(&plan(&out, 10, retention, 2, 1_000_000).unwrap()[0]), "v1");
        fs::remove_dir_all(out).unwrap();
    }

    #[test]
    fn the_previous_compactions_entries_are_expired_again_at_the_next_compaction() {
        let kept_then = entry("kept-then", r#""modificationTime":5000,"#);
        let recent = entry("recent", r#""modificationTime":19000,"#);
        let out =
            sink(&[("2.compact", &format!("v1\n{kept_then}")), ("3", "v1"), ("4", &format!("v1\n{recent}"))]);
        let planned = plan(&out, 3, Some(Retention::from_millis(10_000)), 5, 20_000).unwrap();
        assert_eq!(planned[0].name, "5.compact");
        assert_eq!(text(&planned[0]), format!("v1\n{recent}"));
        fs::remove_dir_all(out).unwrap();
    }

    #[test]
    fn with_retention_an_entry_spark_cannot_read_the_time_of_is_refused_naming_its_file_and_line() {
        let good = entry("good", r#""modificationTime":1,"#);
        for (modified, says) in [
            ("", "no `modificationTime`"),
            (r#""modificationTime":null,"#, "no `modificationTime`"),
            (r#""modificationTime":"5","#, "not a number"),
            (r#""modificationTime":1e30,"#, "beyond 64 bits"),
        ] {
            let out = sink(&[("0", "v1"), ("1", &format!("v1\n{good}\n{}", entry("bad", modified)))]);
            let e = plan(&out, 3, Some(Retention::from_millis(i64::MAX)), 2, 10).unwrap_err().to_string();
            assert!(e.contains("_spark_metadata/1 line 3") && e.contains(says), "{modified}: {e}");
            // Without the option kwire copies the entry as it is (Spark's compaction needs none
            // of its fields from kwire).
            assert!(plan(&out, 3, None, 2, 10).is_ok());
            fs::remove_dir_all(out).unwrap();
        }
    }

    #[test]
    fn modification_times_are_read_as_json4s_reads_them_into_a_long() {
        let at = |v: &str| modification_time(&format!(r#"{{"modificationTime":{v}}}"#));
        assert_eq!(at("1700000000123"), Ok(1_700_000_000_123));
        assert_eq!(at("-5"), Ok(-5));
        assert_eq!(at("5.0"), Ok(5));
        assert_eq!(at("-5.9"), Ok(-5));
        assert_eq!(at("2e3"), Ok(2000));
        assert_eq!(at("9223372036854775808"), Ok(i64::MIN));
        assert_eq!(at("18446744073709551615"), Ok(-1));
        assert!(at("true").is_err());
        assert!(at("[1]").is_err());
    }
}
