//! The ZooKeeper store with SASL DIGEST-MD5 (`--zookeeper-auth sasl:USER:PASSWORD`, checked by
//! the server against its JAAS `Server` section): offsets written with a creator-only ACL name
//! the SASL identity, are refused to a session without credentials, and a wrong password is a
//! one-line authentication failure (exit 9) that is not retried.

use std::time::{Duration, Instant};

use crate::cli_zookeeper_auth::{refused_without_credentials, zk_cli};
use crate::support::{self, json, kwire, required_var, stderr, unique};

#[test]
fn offsets_written_with_zookeeper_sasl_credentials_are_refused_to_a_session_without_them() {
    let Some(cluster) = support::cluster() else { return };
    let Some(auth) = required_var("KWIRE_ZOOKEEPER_SASL_AUTH") else { return };
    let user = auth.split(':').nth(1).expect("sasl:USER:PASSWORD").to_owned();
    let password = auth.splitn(3, ':').nth(2).expect("sasl:USER:PASSWORD").to_owned();
    let topic = unique("zk-sasl");
    let group = unique("zk-sasl-group");
    let created =
        kwire(&cluster, &["topic", "create", &topic, "--partitions", "1", "--replication-factor", "1"]);
    assert!(created.status.success(), "{}", stderr(&created));
    let p0 = format!("{topic}:0=42");
    let commit = kwire(
        &cluster,
        &[
            "commit",
            "--force",
            "--group",
            &group,
            "--store",
            "zk",
            "--zookeeper-auth",
            &auth,
            "--zookeeper-acl",
            "creator-all",
            &p0,
        ],
    );
    assert!(commit.status.success(), "{}", stderr(&commit));
    assert!(!stderr(&commit).contains(&password), "password echoed: {}", stderr(&commit));

    let read = json(&kwire(
        &cluster,
        &["group", "describe", &group, "--store", "zk", "--zookeeper-auth", &auth, "--format", "json"],
    ));
    assert_eq!(read["partitions"][0]["committed"], 42);

    // ZooKeeper's own client and kwire without credentials are refused the node (and its ACL)...
    let path = refused_without_credentials(&cluster, &group, &topic);
    // ...and a digest identity of the same name is another identity: refused too.
    let digest = zk_cli(&cluster, Some(&format!("digest:{user}:{password}")), &format!("get {path}"));
    assert!(digest.contains("Insufficient permission"), "{digest}");
}

#[test]
fn a_wrong_zookeeper_sasl_password_is_one_security_error_without_retries() {
    let Some(cluster) = support::cluster() else { return };
    let Some(auth) = required_var("KWIRE_ZOOKEEPER_SASL_AUTH") else { return };
    let user = auth.split(':').nth(1).expect("sasl:USER:PASSWORD");
    let wrong = format!("sasl:{user}:not-the-password");
    let started = Instant::now();
    let out = kwire(
        &cluster,
        &[
            "group",
            "describe",
            &unique("zk-sasl-wrong"),
            "--timeout",
            "20s",
            "--store",
            "zk",
            "--zookeeper-auth",
            &wrong,
        ],
    );
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(9), "{text}");
    assert_eq!(text.trim_end().lines().count(), 1, "{text}");
    assert!(text.contains(&format!("refused the credentials sasl:{user}:***")), "{text}");
    assert!(!text.contains("not-the-password"), "{text}");
    // Refused at once, not retried until the 20 s timeout.
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
}
