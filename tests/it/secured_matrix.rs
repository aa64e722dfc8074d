//! The secured-listener matrix: every `kwire` command and the direct stream through every
//! secured listener and SASL mechanism of the test cluster (`support::secured::setups`), with
//! the cluster's Java client files (`--command-config`). Each answer must equal the same
//! question asked on PLAINTEXT, and what kwire writes through a set-up must be what the Java
//! tools and kcat read through the same set-up, and the reverse.

use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_client::{apply_properties, Client, ClientConfig};
use kwire_stream::{DirectStream, KafkaGroupStore, StreamConfig};
use serde_json::Value;

use crate::secured_interop::{for_each_setup, kcat_records};
use crate::support::secured::{self, java_tool, kcat_produce, Setup};
use crate::support::{self, stderr, stdout, unique, Cluster};

const RECORDS: usize = 60;
const PARTITIONS: i32 = 3;
const TIMEOUT: Duration = Duration::from_secs(30);

/// `kwire ARGS` through `setup` (its bootstrap and client file), `stdin` fed if given.
fn kwire_via(setup: &Setup, args: &[&str], stdin: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kwire"));
    command
        .args(["--bootstrap-server", &setup.bootstrap, "--command-config"])
        .arg(&setup.kwire_config)
        .args(args);
    run(command, stdin)
}

/// `kwire ARGS` on PLAINTEXT.
fn kwire_plain(cluster: &Cluster, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kwire"));
    command.args(["--bootstrap-server", &cluster.bootstrap]).args(args);
    run(command, None)
}

fn run(mut command: Command, stdin: Option<&str>) -> Output {
    command
        .env_remove("KWIRE_BOOTSTRAP")
        .env_remove("KWIRE_ZOOKEEPER")
        .env_remove("KWIRE_ZOOKEEPER_AUTH")
        .env_remove("KWIRE_COMMAND_CONFIG");
    support::output_with_stdin(&mut command, stdin)
}

/// The JSON document of a successful run, or the failure as text.
fn json_of(what: &str, out: &Output) -> Result<Value, String> {
    if !out.status.success() {
        return Err(format!("{what}: exit {:?}: {}", out.status.code(), stderr(out)));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("{what}: not JSON ({e}): {}", stdout(out)))
}

fn ok(what: &str, out: &Output) -> Result<(), String> {
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{what}: exit {:?}: {}", out.status.code(), stderr(out)))
    }
}

fn same<T: PartialEq + std::fmt::Debug>(what: &str, secured: &T, plaintext: &T) -> Result<(), String> {
    if secured == plaintext {
        Ok(())
    } else {
        Err(format!("{what}: {secured:?} through the set-up, {plaintext:?} on PLAINTEXT"))
    }
}

fn by_partition(doc: &Value, key: &str) -> BTreeMap<i64, i64> {
    doc["partitions"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .filter_map(|p| Some((p["partition"].as_i64()?, p[key].as_i64().unwrap_or(-1))))
                .collect()
        })
        .unwrap_or_default()
}

/// Each broker's API ranges by node id (addresses differ between listeners).
fn api_ranges(doc: &Value) -> BTreeMap<i64, Value> {
    doc["brokers"]
        .as_array()
        .map(|bs| bs.iter().filter_map(|b| Some((b["node_id"].as_i64()?, b["apis"].clone()))).collect())
        .unwrap_or_default()
}

/// ConsumerGroupCommand --describe through `setup`: `partition -> current offset` of `topic`.
fn java_group_offsets(setup: &Setup, group: &str, topic: &str) -> Result<BTreeMap<i64, i64>, String> {
    let out = java_tool(
        setup,
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "--command-config",
        &["--describe", "--group", group],
    );
    if !out.status.success() {
        return Err(format!("ConsumerGroupCommand --describe: {}", stderr(&out)));
    }
    let text = stdout(&out);
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> =
        lines.by_ref().find(|l| l.contains("CURRENT-OFFSET")).unwrap_or("").split_whitespace().collect();
    let col = |name: &str| header.iter().position(|h| *h == name).ok_or(format!("no {name} in {text}"));
    let (t, p, c) = (col("TOPIC")?, col("PARTITION")?, col("CURRENT-OFFSET")?);
    Ok(lines
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.get(t) == Some(&topic))
        .filter_map(|f| Some((f.get(p)?.parse().ok()?, f.get(c)?.parse().ok()?)))
        .collect())
}

fn check_setup(cluster: &Cluster, setup: &Setup) -> Result<(), String> {
    let tag = setup.name.to_lowercase().replace(['/', '_'], "-");
    let topic = unique(&format!("secmatrix-{tag}"));
    let group = format!("{topic}-group");
    let json = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--format", "json"]);
        json_of(&format!("kwire {args:?}"), &kwire_via(setup, &all, None))
    };
    let plain_json = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--format", "json"]);
        json_of(&format!("kwire {args:?} on PLAINTEXT"), &kwire_plain(cluster, &all))
    };

    // Topic admin and metadata.
    json(&["topic", "create", &topic, "--partitions", &PARTITIONS.to_string()])?;
    let versions = json(&["api-versions"])?;
    same("api-versions", &api_ranges(&versions), &api_ranges(&plain_json(&["api-versions"])?))?;
    let metadata = json(&["metadata", &topic])?;
    same("metadata topics", &metadata["topics"], &plain_json(&["metadata", &topic])?["topics"])?;
    // The librdkafka spelling of the same settings works too.
    let mut rdkafka = Command::new(env!("CARGO_BIN_EXE_kwire"));
    rdkafka
        .args(["--bootstrap-server", &setup.bootstrap, "--command-config"])
        .arg(&setup.rdkafka_config)
        .args(["metadata", &topic, "--format", "json"]);
    let via_rdkafka = json_of("metadata with the librdkafka file", &run(rdkafka, None))?;
    same("metadata topics (librdkafka file)", &via_rdkafka["topics"], &metadata["topics"])?;

    // Produce; offsets against PLAINTEXT; kcat reads what kwire wrote (GetOffsetShell through
    // each set-up is in secured_interop).
    let lines: String = (0..RECORDS).fold(String::new(), |mut all, i| {
        use std::fmt::Write;
        let _ = writeln!(all, "k{i},v{i}");
        all
    });
    ok("produce", &kwire_via(setup, &["produce", &topic, "--key-separator", ","], Some(&lines)))?;
    let ends = by_partition(&json(&["offsets", &topic])?, "high_watermark");
    same("offsets", &ends, &by_partition(&plain_json(&["offsets", &topic])?, "high_watermark"))?;
    if ends.values().sum::<i64>() != RECORDS as i64 {
        return Err(format!("{RECORDS} records produced, end offsets {ends:?}"));
    }
    if setup.kcat {
        let mut values: Vec<String> = kcat_records(setup, &topic)?
            .iter()
            .filter_map(|l| l.rsplit(':').next().map(str::to_owned))
            .collect();
        values.sort();
        let mut expected: Vec<String> = (0..RECORDS).map(|i| format!("v{i}")).collect();
        expected.sort();
        same("kcat's values of what kwire produced", &values, &expected)?;
    }

    // Consume everything.
    let consumed = kwire_via(setup, &["consume", &topic, "--count", &RECORDS.to_string()], None);
    ok("consume", &consumed)?;
    let mut values: Vec<String> =
        stdout(&consumed).lines().map(|l| l.rsplit('\t').next().unwrap_or("").to_owned()).collect();
    values.sort();
    let mut expected: Vec<String> = (0..RECORDS).map(|i| format!("v{i}")).collect();
    expected.sort();
    same("consumed values", &values, &expected)?;

    // Commit half; describe, list, plan against PLAINTEXT; ConsumerGroupCommand through the
    // set-up reads kwire's commit.
    let commits: Vec<String> = ends.iter().map(|(p, end)| format!("{topic}:{p}={}", end / 2)).collect();
    let mut args = vec!["commit", "--group", group.as_str()];
    args.extend(commits.iter().map(String::as_str));
    ok("commit", &kwire_via(setup, &args, None))?;
    let described = json(&["group", "describe", &group])?;
    let plain_described = plain_json(&["group", "describe", &group])?;
    same(
        "group describe committed",
        &by_partition(&described, "committed"),
        &by_partition(&plain_described, "committed"),
    )?;
    same("group describe lag", &by_partition(&described, "lag"), &by_partition(&plain_described, "lag"))?;
    let halves: BTreeMap<i64, i64> = ends.iter().map(|(p, e)| (*p, e / 2)).collect();
    if setup.java {
        let java = java_group_offsets(setup, &group, &topic)?;
        same("committed offsets vs ConsumerGroupCommand through the set-up", &java, &halves)?;
    }
    let listed = json(&["group", "list"])?;
    if !listed["groups"].as_array().is_some_and(|gs| gs.iter().any(|g| g["group"] == group.as_str())) {
        return Err(format!("group list lacks {group}: {listed}"));
    }
    let plan = json(&["plan", "--group", &group, "--topic", &topic])?;
    same("plan", &plan, &plain_json(&["plan", "--group", &group, "--topic", &topic])?)?;

    // Migrate the group's offsets into a file store.
    let dir = std::env::temp_dir().join(unique("secmatrix-migrate"));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let file = format!("file:{}", dir.join("offsets.json").display());
    let migrate =
        ["migrate", "--group", group.as_str(), "--from", "kafka", "--to", file.as_str(), "--execute"];
    ok("migrate to a file", &kwire_via(setup, &migrate, None))?;
    let migrated = json(&["group", "describe", &group, "--store", &file])?;
    same("migrated offsets", &by_partition(&migrated, "committed"), &halves)?;
    std::fs::remove_dir_all(&dir).ok();

    // Reset to earliest, executed through the set-up; PLAINTEXT sees it.
    let reset =
        ["reset", "--group", group.as_str(), "--topic", topic.as_str(), "--to", "earliest", "--execute"];
    ok("reset --execute", &kwire_via(setup, &reset, None))?;
    let zeros: BTreeMap<i64, i64> = ends.keys().map(|p| (*p, 0)).collect();
    let after = plain_json(&["group", "describe", &group])?;
    same("committed after reset", &by_partition(&after, "committed"), &zeros)?;

    // The Java tools and kcat write, kwire reads through the same set-up.
    if setup.java {
        let java_group = format!("{topic}-java");
        let reset = java_tool(
            setup,
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
            "--command-config",
            &["--reset-offsets", "--group", &java_group, "--topic", &topic, "--to-offset", "3", "--execute"],
        );
        ok("ConsumerGroupCommand --reset-offsets", &reset)?;
        let threes: BTreeMap<i64, i64> = ends.keys().map(|p| (*p, 3)).collect();
        let read = json(&["group", "describe", &java_group])?;
        same("kwire reads the Java tool's commit", &by_partition(&read, "committed"), &threes)?;
    }
    if setup.kcat {
        let end0 = ends.get(&0).copied().unwrap_or(0).to_string();
        ok("kcat -P", &kcat_produce(setup, &topic, "from-kcat\n"))?;
        let read =
            kwire_via(setup, &["consume", &topic, "--partition", "0", "--from", &end0, "--count", "1"], None);
        ok("consume kcat's record", &read)?;
        let values: Vec<String> =
            stdout(&read).lines().map(|l| l.rsplit('\t').next().unwrap_or("").to_owned()).collect();
        same("kcat's record read by kwire", &values, &vec!["from-kcat".to_owned()])?;
    }

    // More topic admin, then the direct stream, then delete.
    ok("delete-records", &kwire_via(setup, &["topic", "delete-records", &topic, "0=1"], None))?;
    ok("add-partitions", &kwire_via(setup, &["topic", "add-partitions", &topic, "4"], None))?;
    direct_stream(cluster, setup, &topic)?;
    ok("topic delete", &kwire_via(setup, &["topic", "delete", &topic], None))?;
    Ok(())
}

#[test]
fn every_command_gives_the_plaintext_answers_on_every_secured_listener_and_mechanism() {
    let Some(cluster) = support::cluster() else { return };
    let Some(setups) = secured::setups() else { return };
    for_each_setup(&setups, |setup| check_setup(&cluster, setup));
}

/// The properties of a client file as (key, value) pairs: the files `scripts/cluster` writes
/// are plain `key=value` lines and `#` comments (no continuations or escapes).
fn properties(path: &std::path::Path) -> Result<Vec<(String, String)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_once('=').map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned())))
        .collect())
}

/// The library's direct stream through `setup` (its Java client file applied with
/// `apply_properties`): reads every record from the log start and commits the end offsets,
/// which PLAINTEXT then reports.
fn direct_stream(cluster: &Cluster, setup: &Setup, topic: &str) -> Result<(), String> {
    let group = format!("{topic}-stream");
    let mut config = ClientConfig::new(&setup.bootstrap).map_err(|e| e.to_string())?;
    apply_properties(&mut config, properties(&setup.kwire_config)?).map_err(|e| e.to_string())?;
    // What the stream must read: from each partition's log start to its end, as PLAINTEXT says.
    let offsets = |extra: &[&str]| {
        let mut args = vec!["offsets", topic, "--format", "json"];
        args.extend_from_slice(extra);
        json_of("offsets on PLAINTEXT", &kwire_plain(cluster, &args))
    };
    let ends = by_partition(&offsets(&[])?, "high_watermark");
    let starts = by_partition(&offsets(&["--at", "earliest"])?, "offset");
    let total: i64 = ends.values().sum::<i64>() - starts.values().sum::<i64>();
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let client = Arc::new(Client::connect(config).await.map_err(|e| e.to_string())?);
        let store = KafkaGroupStore::new(Arc::clone(&client), TIMEOUT);
        let mut stream = DirectStream::new(Arc::clone(&client), store, StreamConfig::new(&group, [topic]))
            .map_err(|e| e.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = 0i64;
        while seen < total {
            if Instant::now() > deadline {
                return Err(format!("the stream read {seen} of {total} records in 60 s"));
            }
            let batch = stream.next_batch().await.map_err(|e| e.to_string())?;
            seen += i64::try_from(batch.records().count()).unwrap_or(i64::MAX);
            let report = stream.commit(&batch).await.map_err(|e| e.to_string())?;
            if !report.rejected.is_empty() {
                return Err(format!("commit rejected: {report:?}"));
            }
        }
        if seen != total {
            return Err(format!("the stream read {seen} records, the log holds {total}"));
        }
        Ok::<_, String>(())
    })?;
    let committed = by_partition(
        &json_of(
            "group describe",
            &kwire_plain(cluster, &["group", "describe", &group, "--format", "json"]),
        )?,
        "committed",
    );
    // Partitions with records (the one add-partitions made is empty: nothing to commit there).
    let expected: BTreeMap<i64, i64> = ends.into_iter().filter(|(_, end)| *end > 0).collect();
    let committed: BTreeMap<i64, i64> =
        committed.into_iter().filter(|(p, _)| expected.contains_key(p)).collect();
    same("the stream's committed offsets on PLAINTEXT", &committed, &expected)
}
