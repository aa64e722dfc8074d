//! The secured listeners of the test cluster through the peers kwire is compared with: kcat
//! (librdkafka) and Kafka's Java tools, each with the ready client files of `scripts/cluster
//! env`, on every listener and mechanism. They must see the same log as on PLAINTEXT, mTLS must
//! refuse a client without a certificate, and the restricted user only what its ACLs allow.

use std::collections::BTreeMap;

use crate::support::secured::{self, java_tool, kcat, Setup, RESTRICTED_GROUP, RESTRICTED_TOPIC};
use crate::support::{
    self, create_topic, get_offset_shell, parse_get_offset_shell, produce_with_kafka, stderr, stdout, unique,
};

/// Runs `check` for every set-up, three at a time (each may start a JVM), and fails with every
/// set-up's message at once.
pub fn for_each_setup(setups: &[Setup], check: impl Fn(&Setup) -> Result<(), String> + Sync) {
    let mut failures = Vec::new();
    for chunk in setups.chunks(3) {
        std::thread::scope(|s| {
            let running: Vec<_> = chunk.iter().map(|setup| (setup, s.spawn(|| check(setup)))).collect();
            for (setup, handle) in running {
                match handle.join() {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => failures.push(format!("{}: {e}", setup.name)),
                    Err(_) => failures.push(format!("{}: the check panicked", setup.name)),
                }
            }
        });
    }
    assert!(
        failures.is_empty(),
        "{} of {} set-ups failed:\n{}",
        failures.len(),
        setups.len(),
        failures.join("\n")
    );
}

/// The end offsets GetOffsetShell reports through `setup`.
pub fn java_end_offsets(setup: &Setup, topic: &str) -> Result<BTreeMap<i32, i64>, String> {
    let out = java_tool(
        setup,
        "org.apache.kafka.tools.GetOffsetShell",
        "--command-config",
        &["--topic", topic, "--time", "-1"],
    );
    if !out.status.success() {
        return Err(format!("GetOffsetShell failed: {}", stderr(&out)));
    }
    Ok(parse_get_offset_shell(&stdout(&out)))
}

/// Every record of `topic` as `partition:offset:value` lines read by kcat through `setup`.
pub fn kcat_records(setup: &Setup, topic: &str) -> Result<Vec<String>, String> {
    let out = kcat(setup, &["-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%p:%o:%s\\n"]);
    if !out.status.success() {
        return Err(format!("kcat -C failed: {}", stderr(&out)));
    }
    let mut lines: Vec<String> = stdout(&out).lines().map(str::to_owned).collect();
    lines.sort();
    Ok(lines)
}

#[test]
fn kcat_and_the_java_tools_see_the_plaintext_log_on_every_secured_listener_and_mechanism() {
    let Some(cluster) = support::cluster() else { return };
    let Some(setups) = secured::setups() else { return };
    let topic = unique("secured-oracle");
    create_topic(&cluster, &topic, 3, 3);
    produce_with_kafka(&cluster, &topic, 30, 8);
    let plaintext = get_offset_shell(&cluster, &topic, "-1");
    assert_eq!(plaintext.values().sum::<i64>(), 30);

    if let Some(uncovered) = setups.iter().find(|s| !s.java && !s.kcat) {
        panic!("{}: neither kcat nor the Java tools check it", uncovered.name);
    }
    for_each_setup(&setups, |setup| {
        if setup.java {
            let java = java_end_offsets(setup, &topic)?;
            if java != plaintext {
                return Err(format!("GetOffsetShell says {java:?}, PLAINTEXT {plaintext:?}"));
            }
        }
        if setup.kcat {
            let records = kcat_records(setup, &topic)?;
            if records.len() != 30 {
                return Err(format!("kcat read {} records, not 30", records.len()));
            }
        }
        Ok(())
    });
}

#[test]
fn the_mtls_listener_refuses_a_client_without_a_certificate() {
    let Some(setups) = secured::setups() else { return };
    let mtls = setups.iter().find(|s| s.name == "MTLS").expect("MTLS set-up");
    let ssl = setups.iter().find(|s| s.name == "SSL").expect("SSL set-up");
    // The SSL file trusts the CA but has no client certificate.
    let without_cert = Setup { rdkafka_config: ssl.rdkafka_config.clone(), ..mtls.clone() };
    let out = kcat(&without_cert, &["-L", "-m", "5"]);
    assert!(!out.status.success(), "metadata without a client certificate: {}", stdout(&out));
    assert!(stderr(&out).contains("certificate"), "{}", stderr(&out));
}

#[test]
fn the_restricted_user_sees_its_topic_and_is_refused_any_other_group() {
    let Some(restricted) = secured::restricted() else { return };
    let listed =
        java_tool(&restricted, "org.apache.kafka.tools.TopicCommand", "--command-config", &["--list"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    // Describe on one topic only: the listing shows nothing else (but the topics other tests
    // grant it, which may exist by now).
    let granted_by_other_tests = [
        crate::client_partial_authz::GRANTED_TOPIC_PREFIX,
        crate::secured_partial_authz::DESCRIBE_ONLY_TOPIC_PREFIX,
    ];
    let text = stdout(&listed);
    let topics: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !granted_by_other_tests.iter().any(|p| l.starts_with(p)))
        .collect();
    assert_eq!(topics, [RESTRICTED_TOPIC]);

    let own = java_tool(
        &restricted,
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "--command-config",
        &["--describe", "--group", RESTRICTED_GROUP],
    );
    assert!(own.status.success(), "{}{}", stdout(&own), stderr(&own));
    let other = java_tool(
        &restricted,
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "--command-config",
        &["--describe", "--group", &unique("not-restricted-group")],
    );
    let said = format!("{}{}", stdout(&other), stderr(&other));
    assert!(said.contains("GroupAuthorizationException"), "{said}");
}
