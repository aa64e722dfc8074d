//! The restricted user (may describe and read `kwire-restricted-topic` and group
//! `kwire-restricted-group` only) asking for its topic and a forbidden one at once: the reading
//! commands show every authorized row and each refused topic as its own row, then exit 10; a
//! reset over both writes nothing, nor one over a topic it may describe but not read.

use std::process::{Command, Output};

use crate::support::secured::{self, Setup, RESTRICTED_GROUP, RESTRICTED_TOPIC};
use crate::support::{self, create_topic, json, kwire, produce_with_kafka, stderr, stdout, unique, Cluster};

/// Exit code of src/exit.rs.
const NOT_AUTHORIZED: i32 = 10;
const MARKER: &str = "not authorized (TOPIC_AUTHORIZATION_FAILED) for principal User:restricted";

/// Runs kwire as the restricted user (its own `-b` and properties file, none from the env).
fn as_restricted(restricted: &Setup, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kwire"))
        .args(["-b", &restricted.bootstrap, "--command-config"])
        .arg(&restricted.java_config)
        .args(args)
        .env_remove("KWIRE_BOOTSTRAP")
        .env_remove("KWIRE_COMMAND_CONFIG")
        .output()
        .expect("kwire binary runs")
}

/// Exit 10 with one line on stderr naming the forbidden topic, the code and the principal.
fn assert_partial(out: &Output, forbidden: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(NOT_AUTHORIZED), "stderr: {err} stdout: {}", stdout(out));
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    for needle in [forbidden, "TOPIC_AUTHORIZATION_FAILED", "User:restricted"] {
        assert!(err.contains(needle), "`{needle}` missing from: {err}");
    }
}

/// The text lines of `topic` in a table (the lines that start with its name and a space).
fn text_rows<'a>(text: &'a str, topic: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.strip_prefix(topic).is_some_and(|rest| rest.starts_with(' '))).collect()
}

/// The JSON document a failed command printed on stdout.
fn document(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", stdout(out)))
}

/// The rows of `topic` in a document's `partitions`.
fn json_rows<'a>(doc: &'a serde_json::Value, topic: &str) -> Vec<&'a serde_json::Value> {
    doc["partitions"]
        .as_array()
        .unwrap_or_else(|| panic!("no partitions array: {doc}"))
        .iter()
        .filter(|p| p["topic"] == topic)
        .collect()
}

/// Asserts the refused topic is one JSON row with the code and principal and no numbers.
fn assert_refused_json_row(doc: &serde_json::Value, forbidden: &str, number_field: &str) {
    let refused = json_rows(doc, forbidden);
    assert_eq!(refused.len(), 1, "{doc}");
    assert_eq!(refused[0]["error"], "TOPIC_AUTHORIZATION_FAILED", "{doc}");
    assert_eq!(refused[0]["principal"], "User:restricted", "{doc}");
    assert!(refused[0]["partition"].is_null() && refused[0][number_field].is_null(), "{doc}");
}

/// A topic the restricted user may not describe, with records.
fn forbidden_topic(cluster: &Cluster) -> String {
    let topic = unique("kwire-forbidden-partial");
    create_topic(cluster, &topic, 1, 1);
    produce_with_kafka(cluster, &topic, 10, 8);
    topic
}

/// The prefix of the topics this file lets the restricted user describe (not read): other
/// tests that list what that user sees leave them out (the ACLs stay, as the topics do).
pub(crate) const DESCRIBE_ONLY_TOPIC_PREFIX: &str = "kwire-describe-only";

#[test]
fn the_restricted_user_asking_offsets_of_its_topic_and_a_forbidden_one_gets_its_rows_and_a_refused_row() {
    let Some(cluster) = support::cluster() else { return };
    let Some(restricted) = secured::restricted() else { return };
    let forbidden = forbidden_topic(&cluster);

    let out = as_restricted(&restricted, &["offsets", RESTRICTED_TOPIC, &forbidden]);
    assert_partial(&out, &forbidden);
    let text = stdout(&out);
    let refused = text_rows(&text, &forbidden);
    assert_eq!(refused.len(), 1, "{text}");
    assert!(refused[0].contains(MARKER), "{text}");
    let authorized = text_rows(&text, RESTRICTED_TOPIC);
    assert_eq!(authorized.len(), 3, "every partition of the authorized topic: {text}");
    assert!(authorized.iter().all(|l| !l.contains("not authorized")), "{text}");

    let out = as_restricted(&restricted, &["offsets", RESTRICTED_TOPIC, &forbidden, "--format", "json"]);
    assert_partial(&out, &forbidden);
    let doc = document(&out);
    assert_refused_json_row(&doc, &forbidden, "high_watermark");
    let authorized = json_rows(&doc, RESTRICTED_TOPIC);
    let mut partitions: Vec<i64> = authorized.iter().map(|p| p["partition"].as_i64().unwrap()).collect();
    partitions.sort_unstable();
    assert_eq!(partitions, [0, 1, 2], "{doc}");
    assert!(authorized.iter().all(|p| p["error"].is_null() && p["high_watermark"].is_i64()), "{doc}");
    // The same numbers the admin sees.
    let admin = json(&kwire(&cluster, &["offsets", RESTRICTED_TOPIC, "--format", "json"]));
    let high_watermarks = |rows: Vec<&serde_json::Value>| {
        let mut out: Vec<(i64, i64)> = rows
            .iter()
            .map(|p| (p["partition"].as_i64().unwrap(), p["high_watermark"].as_i64().unwrap()))
            .collect();
        out.sort_unstable();
        out
    };
    assert_eq!(high_watermarks(authorized), high_watermarks(json_rows(&admin, RESTRICTED_TOPIC)));
}

/// The stored offsets of `group` as the admin sees them: `(topic, partition, committed)`.
fn stored(cluster: &Cluster, group: &str, topics: &[&str]) -> Vec<(String, i64, Option<i64>)> {
    let mut args = vec!["group", "describe", group, "--format", "json"];
    for t in topics {
        args.extend(["--topic", t]);
    }
    let doc = json(&kwire(cluster, &args));
    let mut out: Vec<(String, i64, Option<i64>)> = doc["partitions"]
        .as_array()
        .unwrap_or_else(|| panic!("{doc}"))
        .iter()
        .map(|p| {
            (
                p["topic"].as_str().unwrap().to_owned(),
                p["partition"].as_i64().unwrap(),
                p["committed"].as_i64(),
            )
        })
        .collect();
    out.sort();
    out
}

/// One test for everything on the shared restricted group, so no other test moves its offsets
/// in between.
#[test]
fn the_restricted_user_describing_planning_and_resetting_its_group_over_a_forbidden_topic_sees_its_rows_and_writes_nothing(
) {
    let Some(cluster) = support::cluster() else { return };
    let Some(restricted) = secured::restricted() else { return };
    let forbidden = forbidden_topic(&cluster);
    produce_with_kafka(&cluster, RESTRICTED_TOPIC, 6, 8);
    // As the admin: the group has offsets on both topics, none at the end of its log.
    let committed = kwire(
        &cluster,
        &[
            "commit",
            "--group",
            RESTRICTED_GROUP,
            &format!("{RESTRICTED_TOPIC}:0=0"),
            &format!("{RESTRICTED_TOPIC}:1=0"),
            &format!("{RESTRICTED_TOPIC}:2=0"),
            &format!("{forbidden}:0=1"),
        ],
    );
    assert!(committed.status.success(), "{}", stderr(&committed));
    let both = [RESTRICTED_TOPIC, forbidden.as_str()];
    let before = stored(&cluster, RESTRICTED_GROUP, &both);
    assert_eq!(before.len(), 4, "{before:?}");

    // group describe, text and JSON.
    let describe =
        ["group", "describe", RESTRICTED_GROUP, "--topic", RESTRICTED_TOPIC, "--topic", &forbidden];
    let out = as_restricted(&restricted, &describe);
    assert_partial(&out, &forbidden);
    let text = stdout(&out);
    let refused = text_rows(&text, &forbidden);
    assert_eq!(refused.len(), 1, "{text}");
    assert!(refused[0].contains(MARKER), "{text}");
    // Three partition rows and the totals row of the authorized topic.
    assert_eq!(text_rows(&text, RESTRICTED_TOPIC).len(), 4, "{text}");
    let out = as_restricted(&restricted, &[&describe[..], &["--format", "json"]].concat());
    assert_partial(&out, &forbidden);
    let doc = document(&out);
    assert_refused_json_row(&doc, &forbidden, "committed");
    let authorized = json_rows(&doc, RESTRICTED_TOPIC);
    assert_eq!(authorized.len(), 3, "{doc}");
    assert!(authorized.iter().all(|p| p["committed"] == 0 && p["error"].is_null()), "{doc}");

    // plan, text and JSON.
    let plan = ["plan", "--group", RESTRICTED_GROUP, "--topic", RESTRICTED_TOPIC, "--topic", &forbidden];
    let out = as_restricted(&restricted, &plan);
    assert_partial(&out, &forbidden);
    let text = stdout(&out);
    assert!(text_rows(&text, &forbidden).first().is_some_and(|l| l.contains(MARKER)), "{text}");
    assert_eq!(text_rows(&text, RESTRICTED_TOPIC).len(), 3, "{text}");
    let out = as_restricted(&restricted, &[&plan[..], &["--format", "json"]].concat());
    assert_partial(&out, &forbidden);
    let doc = document(&out);
    assert_refused_json_row(&doc, &forbidden, "from");
    let planned = json_rows(&doc, RESTRICTED_TOPIC);
    assert_eq!(planned.len(), 3, "{doc}");
    assert!(planned.iter().all(|p| p["from"] == 0 && p["error"].is_null()), "{doc}");
    // A Spark job must not read a batch that misses partitions: nothing on stdout.
    let out = as_restricted(&restricted, &[&plan[..], &["--format", "spark"]].concat());
    assert_partial(&out, &forbidden);
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));

    // `reset --execute` of the group over its own topic and `other`.
    let reset_with = |other: &str| {
        as_restricted(
            &restricted,
            &[
                "reset",
                "--group",
                RESTRICTED_GROUP,
                "--topic",
                RESTRICTED_TOPIC,
                "--topic",
                other,
                "--to",
                "latest",
                "--execute",
            ],
        )
    };
    // reset --execute over both: refused, naming the forbidden topic, nothing written.
    let out = reset_with(&forbidden);
    assert_partial(&out, &forbidden);
    assert!(stderr(&out).contains("nothing written"), "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    assert_eq!(stored(&cluster, RESTRICTED_GROUP, &both), before, "the refused reset wrote offsets");

    // A topic it may describe but not read: the coordinator would commit the other topic's
    // offsets and refuse this one's; kwire finds it first and writes nothing.
    let describe_only = unique(DESCRIBE_ONLY_TOPIC_PREFIX);
    create_topic(&cluster, &describe_only, 1, 1);
    support::kafka_tool(
        "org.apache.kafka.tools.AclCommand",
        &[
            "--bootstrap-server",
            &cluster.bootstrap,
            "--add",
            "--allow-principal",
            "User:restricted",
            "--operation",
            "Describe",
            "--topic",
            &describe_only,
        ],
    );
    let out = reset_with(&describe_only);
    assert_partial(&out, &describe_only);
    assert!(stderr(&out).contains("nothing written"), "{}", stderr(&out));
    assert_eq!(stored(&cluster, RESTRICTED_GROUP, &both), before, "the refused reset wrote offsets");

    // Its own topic alone it may reset (the ACLs allow it: the refusal above was the other topic).
    let out = as_restricted(
        &restricted,
        &["reset", "--group", RESTRICTED_GROUP, "--topic", RESTRICTED_TOPIC, "--to", "latest", "--execute"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let after = stored(&cluster, RESTRICTED_GROUP, &[RESTRICTED_TOPIC]);
    assert!(after.iter().any(|(_, _, c)| c.is_some_and(|c| c > 0)), "{after:?}");
}
