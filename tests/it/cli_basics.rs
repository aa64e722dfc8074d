//! The first commands end to end, and how bad input is reported.

use crate::support::{self, create_topic, json, kwire, kwire_bare, stderr, unique};

#[test]
fn metadata_json_lists_the_three_brokers_and_a_new_topic() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("meta");
    create_topic(&cluster, &topic, 6, 3);
    let doc = json(&kwire(&cluster, &["metadata", &topic, "--format", "json"]));
    let brokers = doc["brokers"].as_array().expect("brokers array");
    assert_eq!(brokers.len(), 3, "{doc}");
    let mut ids: Vec<i64> = brokers.iter().map(|b| b["node_id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, [1, 2, 3]);
    assert!(doc["cluster_id"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(doc["controller_id"].as_i64().is_some());
    let topics = doc["topics"].as_array().unwrap();
    assert_eq!(topics.len(), 1);
    assert_eq!(topics[0]["name"], topic.as_str());
    assert_eq!(topics[0]["topic_id"].as_str().map(str::len), Some(22), "Kafka's base64 topic id");
    let partitions = topics[0]["partitions"].as_array().unwrap();
    assert_eq!(partitions.len(), 6);
    for (i, p) in partitions.iter().enumerate() {
        assert_eq!(p["partition"].as_i64(), Some(i as i64));
        assert_eq!(p["replicas"].as_array().unwrap().len(), 3);
        assert!(p["isr"].as_array().is_some_and(|isr| !isr.is_empty()));
        assert!(p["leader"].as_i64().is_some_and(|l| (1..=3).contains(&l)), "{p}");
        assert!(p["leader_epoch"].as_i64().is_some_and(|e| e >= 0));
    }
}

#[test]
fn api_versions_shows_every_broker_and_the_versions_kwire_uses() {
    let Some(cluster) = support::cluster() else { return };
    let doc = json(&kwire(&cluster, &["api-versions", "--format", "json"]));
    let brokers = doc["brokers"].as_array().unwrap();
    assert_eq!(brokers.len(), 3);
    for b in brokers {
        let apis = b["apis"].as_array().unwrap();
        let metadata = apis.iter().find(|a| a["api_key"] == 3).expect("Metadata listed");
        let used = metadata["kwire_uses"].as_i64().expect("kwire speaks Metadata");
        assert_eq!(used, metadata["max_version"].as_i64().unwrap().min(13));
        assert!(apis.iter().any(|a| a["api_key"] == 18 && a["kwire_uses"].as_i64().is_some()));
    }
}

#[test]
fn a_dead_first_bootstrap_address_is_skipped() {
    let Some(cluster) = support::cluster() else { return };
    let bootstrap = format!("127.0.0.1:1,{}", cluster.bootstrap);
    let out = kwire(&cluster, &["-b", &bootstrap, "metadata", "--format", "json"]);
    assert_eq!(json(&out)["brokers"].as_array().unwrap().len(), 3);
}

#[test]
fn an_unknown_topic_is_a_one_line_error_with_exit_4() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("missing");
    let out = kwire(&cluster, &["metadata", &topic]);
    assert_eq!(out.status.code(), Some(4));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&format!("unknown topic `{topic}`")), "{err}");
}

#[test]
fn trace_prints_each_frame_decoded_and_as_hex() {
    let Some(cluster) = support::cluster() else { return };
    let out = kwire(&cluster, &["metadata", "--trace"]);
    assert!(out.status.success());
    let err = stderr(&out);
    assert!(err.contains("-> 127.0.0.1:") && err.contains("ApiVersions v4 request"), "{err}");
    assert!(err.contains("<- ") && err.contains("Metadata v") && err.contains(" response "), "{err}");
    // Each frame: a summary line, its JSON on one line (as `kwire decode --frame` prints it),
    // then its hex.
    let lines: Vec<&str> = err.lines().collect();
    let mut frames = 0;
    let mut metadata_brokers = 0;
    for (i, line) in lines.iter().enumerate() {
        if !(line.starts_with("-> ") || line.starts_with("<- ")) {
            continue;
        }
        let doc: serde_json::Value =
            serde_json::from_str(lines[i + 1]).unwrap_or_else(|e| panic!("{e}: {err}"));
        let correlation_id = format!("correlation_id={} ", doc["header"]["correlation_id"]);
        assert!(line.contains(&correlation_id), "{line} vs {doc}");
        assert!(line.contains(&format!(" {} v{} ", doc["api"].as_str().unwrap(), doc["version"])), "{line}");
        assert!(lines[i + 2].starts_with("hex: "), "{err}");
        if line.starts_with("<- ") && doc["api"] == "Metadata" {
            metadata_brokers = doc["body"]["brokers"].as_array().map_or(0, Vec::len);
        }
        frames += 1;
    }
    assert!(frames >= 4, "{err}");
    assert!(metadata_brokers > 0, "{err}");
}

#[test]
fn an_unreachable_bootstrap_is_a_one_line_error_with_exit_2() {
    let out = kwire_bare(&["-b", "127.0.0.1:1", "metadata"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("127.0.0.1:1") && err.contains("refused"), "{err}");
}

#[test]
fn a_malformed_address_is_a_usage_error_naming_it() {
    let out = kwire_bare(&["-b", "localhost", "metadata"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("`localhost`: expected host:port"), "{}", stderr(&out));
}

#[test]
fn a_missing_bootstrap_says_how_to_give_one() {
    let out = kwire_bare(&["metadata"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--bootstrap-server"));
}

#[test]
fn an_unknown_flag_is_a_usage_error() {
    let out = kwire_bare(&["metadata", "--no-such-flag"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--no-such-flag"));
}

#[test]
fn every_command_prints_an_aligned_text_table() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("text");
    let group = unique("text-group");
    let store_file = std::env::temp_dir().join(unique("text-store")).with_extension("json");
    let store = format!("file:{}", store_file.display());
    let run = |args: &[&str]| {
        let out = kwire(&cluster, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        crate::support::stdout(&out)
    };
    assert!(run(&["topic", "create", &topic, "--partitions", "2", "--replication-factor", "3"])
        .contains("created"));
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kwire"))
        .args(["produce", &topic, "--key-separator", "="])
        .env("KWIRE_BOOTSTRAP", &cluster.bootstrap)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"a=1\nb=2\nc=3\n").unwrap();
    assert!(child.wait().unwrap().success());
    run(&["commit", "--group", &group, "--store", &store, &format!("{topic}:0=0")]);
    for (args, header) in [
        (vec!["metadata", topic.as_str()], "TOPIC  "),
        (vec!["api-versions"], "API  "),
        (vec!["offsets", topic.as_str()], "LOG_START"),
        (vec!["group", "list"], "GROUP  "),
        (vec!["group", "describe", group.as_str(), "--store", store.as_str()], "COMMITTED"),
        (
            vec!["plan", "--group", group.as_str(), "--store", store.as_str(), "--topic", topic.as_str()],
            "FROM",
        ),
        (
            vec![
                "reset",
                "--group",
                group.as_str(),
                "--store",
                store.as_str(),
                "--topic",
                topic.as_str(),
                "--to",
                "latest",
            ],
            "BEFORE",
        ),
        (vec!["migrate", "--group", group.as_str(), "--from", store.as_str(), "--to", "kafka"], "PARTITION"),
    ] {
        let text = run(&args);
        let line = text
            .lines()
            .find(|l| l.contains(header))
            .unwrap_or_else(|| panic!("{args:?}: no `{header}` in\n{text}"));
        // Columns are separated by at least two spaces, and rows line up under the header.
        assert!(line.contains("  "), "{args:?}: {line}");
    }
    let consumed = run(&["consume", &topic]);
    assert_eq!(consumed.lines().count(), 3, "{consumed}");
    assert!(consumed.lines().all(|l| l.split('\t').count() == 6), "{consumed}");
    std::fs::remove_file(&store_file).unwrap();
}
