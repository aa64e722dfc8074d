//! Apache Kafka as the schema interpreter's oracle, for every (API, version, direction) in the
//! table and both headers at every version: kafka-clients makes random messages
//! (`KafkaOracle schema`: a random value of the version's `Schema`, read by the generated `*Data`
//! class, written back by it, rendered by its `*JsonConverter`), and for each one
//!
//! - kwire's JSON of Kafka's bytes equals Kafka's JSON once Kafka's camelCase keys are snake
//!   cased. Two normalisations: a `records` field compares by null-ness only (Kafka's converter
//!   does not serialize record data: it writes `""` for any record set), and `float64` values
//!   compare as numbers within 1e-15 relative (Java prints `1.0E10` where serde prints
//!   `10000000000.0`, and serde_json's default parser can land one ulp off Java's shortest
//!   decimal text). The byte comparison below checks both exactly.
//! - kwire's encoding of its own JSON is Kafka's bytes, byte for byte (so record data, which
//!   the JSON comparison cannot see, is carried exactly).
//!
//! kafka-clients 4.1.1 answers for every entry the table took from it; kafka-clients 3.9.1 for
//! the versions and APIs Kafka 4.0 removed. `KWIRE_SCHEMA_SAMPLES` (default 3) samples per
//! line, `KWIRE_ORACLE_SEED` seeds both JVMs; one JVM run per jar.

mod oracle;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use bytes::Bytes;
use kafka_wire::protocol::schema::{self, decode, encode, FieldType, Message, MessageKind};
use serde_json::Value;

fn dir(kind: MessageKind) -> &'static str {
    match kind {
        MessageKind::Request => "request",
        MessageKind::Response => "response",
        MessageKind::Header => "header",
    }
}

/// `<Name> <dir> <version>` for every version of every schema taken from `source`.
fn wanted(source: &str) -> Vec<(&'static Message, i16)> {
    let mut out = Vec::new();
    for m in schema::messages().iter().filter(|m| m.source == source) {
        for v in m.valid.0..=m.valid.1 {
            out.push((m, v));
        }
    }
    out
}

/// The dotted paths of the struct fields that are nullable at `version` (Kafka's Schema objects
/// describe them as plain structs; the Java side needs to be told).
fn nullable_structs(fields: &[schema::Field], version: i16, prefix: &str, out: &mut Vec<String>) {
    for f in fields.iter().filter(|f| f.versions.contains(version) && !f.is_tagged_at(version)) {
        let path = if prefix.is_empty() { f.name.to_owned() } else { format!("{prefix}.{}", f.name) };
        let inner = match f.ty {
            FieldType::Struct(inner) => {
                if f.nullable.contains(version) {
                    out.push(path.clone());
                }
                inner
            }
            FieldType::Array(FieldType::Struct(inner)) => inner,
            _ => continue,
        };
        nullable_structs(inner, version, &path, out);
    }
}

fn snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev_lower = i > 0 && (chars[i - 1].is_ascii_lowercase() || chars[i - 1].is_ascii_digit());
            let acronym_end = i > 0
                && chars[i - 1].is_ascii_uppercase()
                && chars.get(i + 1).is_some_and(char::is_ascii_lowercase);
            if prev_lower || acronym_end {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn snake_keys(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (snake_case(&k), snake_keys(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(snake_keys).collect()),
        other => other,
    }
}

/// The first difference between kwire's and Kafka's documents of a struct with `fields`, as
/// `path: kwire vs kafka`, with the two normalisations of the module doc.
fn diff_struct(path: &str, fields: &[schema::Field], ours: &Value, kafka: &Value) -> Option<String> {
    let (Value::Object(a), Value::Object(b)) = (ours, kafka) else {
        return Some(format!("{path}: kwire {ours} vs kafka {kafka}"));
    };
    for key in a.keys().chain(b.keys()) {
        let here = format!("{path}.{key}");
        let (Some(x), Some(y)) = (a.get(key), b.get(key)) else {
            return Some(format!("{here}: kwire {:?} vs kafka {:?}", a.get(key), b.get(key)));
        };
        let ty = fields.iter().find(|f| f.name == key).map(|f| f.ty);
        if let Some(d) = diff_value(&here, ty.as_ref(), x, y) {
            return Some(d);
        }
    }
    None
}

fn diff_value(path: &str, ty: Option<&FieldType>, ours: &Value, kafka: &Value) -> Option<String> {
    let differ = || Some(format!("{path}: kwire {ours} vs kafka {kafka}"));
    match (ty, ours, kafka) {
        (Some(FieldType::Records), a, b) => (a.is_null() != b.is_null()).then(differ).flatten(),
        (Some(FieldType::Float64), Value::Number(a), Value::Number(b)) => {
            let (a, b) = (a.as_f64().unwrap_or(f64::NAN), b.as_f64().unwrap_or(f64::NAN));
            ((a - b).abs() > 1e-15 * a.abs().max(b.abs())).then(differ).flatten()
        }
        (Some(FieldType::Struct(fields)), a, b) if !a.is_null() && !b.is_null() => {
            diff_struct(path, fields, a, b)
        }
        (Some(FieldType::Array(element)), Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| diff_value(&format!("{path}[{i}]"), Some(element), x, y)),
        _ => (ours != kafka).then(differ).flatten(),
    }
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(2 * bytes.len()), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[test]
fn every_message_kafka_writes_reads_as_kafkas_json_and_writes_back_as_kafkas_bytes() {
    let Some(jvms) = oracle::oracle() else { return };
    let samples = std::env::var("KWIRE_SCHEMA_SAMPLES").unwrap_or_else(|_| "3".to_owned());
    let seed = std::env::var("KWIRE_ORACLE_SEED").unwrap_or_else(|_| "20251201".to_owned());
    let mut failures = Vec::new();
    // (name, dir) -> versions compared
    let mut covered: BTreeMap<(String, &'static str), Vec<i16>> = BTreeMap::new();
    let mut lines = 0;
    for (jvm, source) in jvms.iter().zip(["4.1.1", "3.9.1"]) {
        let wanted = wanted(source);
        let input = wanted.iter().fold(String::new(), |mut s, (m, v)| {
            let mut paths = Vec::new();
            nullable_structs(m.fields, *v, "", &mut paths);
            let _ = writeln!(s, "{} {} {v} {}", m.name, dir(m.kind), paths.join(" "));
            s
        });
        lines += wanted.len();
        let out = jvm.run(&["schema", &samples, &seed], &input);
        for line in out.lines() {
            if let Some(why) = line.strip_prefix("error ") {
                failures.push(format!("{}: Kafka made no message for {why}", jvm.label));
                continue;
            }
            let mut parts = line.splitn(5, ' ');
            let (Some(name), Some(d), Some(v), Some(body), Some(kafka)) =
                (parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
            else {
                panic!("{}: malformed line {line}", jvm.label)
            };
            let v: i16 = v.parse().expect("version");
            let Some(&(m, _)) = wanted.iter().find(|(m, wv)| m.name == name && dir(m.kind) == d && *wv == v)
            else {
                panic!("{}: an answer for a line not asked: {line}", jvm.label)
            };
            let what = format!("{name} {d} v{v} ({})", jvm.label);
            let bytes = unhex(body);
            let ours = match decode::message_to_json(m, v, Bytes::from(bytes.clone()), false) {
                Ok(ours) => ours,
                Err(e) => {
                    failures.push(format!("{what}: kwire cannot read Kafka's bytes: {e}\n  {body}"));
                    continue;
                }
            };
            let kafka = snake_keys(serde_json::from_str(kafka).expect("Kafka's JSON parses"));
            if let Some(d) = diff_struct("", m.fields, &ours, &kafka) {
                failures.push(format!("{what}: {d}\n  {body}"));
                continue;
            }
            match encode::json_to_message(m, v, &ours) {
                Ok(again) if again == bytes => {}
                Ok(again) => {
                    failures.push(format!("{what}: kwire wrote {}\n  Kafka wrote {body}", hex(&again)));
                }
                Err(e) => failures.push(format!("{what}: kwire cannot write its JSON back: {e}")),
            }
            covered.entry((name.to_owned(), dir(m.kind))).or_default().push(v);
        }
    }
    failures.truncate(40);
    assert!(failures.is_empty(), "{} (first 40):\n{}", failures.len(), failures.join("\n"));
    let compared: usize = covered
        .values()
        .map(|v| {
            let mut v = v.clone();
            v.dedup();
            v.len()
        })
        .sum();
    eprintln!(
        "schema oracle: {compared} of {lines} (message, version) lines compared, {samples} samples each"
    );
    // Every (API or header, direction, version) of the table was compared.
    assert_eq!(compared, lines, "lines compared vs asked");
    if let Some(path) = std::env::var_os("KWIRE_SCHEMA_COVERAGE") {
        let mut table = String::from(
            "| API | key | request versions | response versions | from |\n|---|---|---|---|---|\n",
        );
        for spec in kafka_wire::protocol::registry::all_apis() {
            let versions = |d: &str| {
                let mut all: Vec<i16> = covered
                    .iter()
                    .filter(|((n, dd), _)| {
                        *dd == d && schema::messages().iter().any(|m| m.name == n && m.key == spec.key.0)
                    })
                    .flat_map(|(_, v)| v.iter().copied())
                    .collect();
                all.sort_unstable();
                all.dedup();
                let total = usize::try_from(spec.versions.max - spec.versions.min + 1).unwrap_or(0);
                format!("{}/{total}", all.len())
            };
            let sources: Vec<&str> =
                schema::messages().iter().filter(|m| m.key == spec.key.0).map(|m| m.source).collect();
            let from = if sources.iter().all(|s| *s == "3.9.1") {
                "3.9.1"
            } else if sources.contains(&"3.9.1") {
                "4.1.1 + 3.9.1"
            } else {
                "4.1.1"
            };
            let _ = writeln!(
                table,
                "| {} | {} | {} | {} | {from} |",
                spec.name,
                spec.key.0,
                versions("request"),
                versions("response")
            );
        }
        std::fs::write(path, table).expect("write the coverage table");
    }
}

#[test]
fn the_committed_schema_table_is_what_the_jars_make() {
    // Skips (as the oracle does) where the jars or Python are missing, except under CI.
    if oracle::oracle().is_none() {
        return;
    }
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/gen-schemas");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg("--check")
        .output()
        .unwrap_or_else(|e| panic!("python3 {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
