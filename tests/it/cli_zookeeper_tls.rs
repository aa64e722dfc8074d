//! The ZooKeeper store over TLS (ZooKeeper's `secureClientPort`, which the test cluster runs
//! with `ssl.clientAuth=need`): kwire writes and reads offsets with `--zookeeper-tls-*`, and each
//! mismatch — plaintext to the TLS port, TLS to the plaintext port, an untrusted server
//! certificate, no client certificate — is one line naming it, exit 9, within the timeout.

use std::time::{Duration, Instant};

use crate::support::{self, json, kwire, required_var, stderr, unique};

/// `KWIRE_ZOOKEEPER_TLS` and the test CA's directory, or `None` outside CI.
fn zookeeper_tls() -> Option<(String, std::path::PathBuf)> {
    let address = required_var("KWIRE_ZOOKEEPER_TLS")?;
    let dir = required_var("KWIRE_TLS_DIR")?;
    Some((address, dir.into()))
}

fn path(dir: &std::path::Path, file: &str) -> String {
    dir.join(file).display().to_string()
}

#[test]
fn offsets_written_over_zookeeper_tls_are_read_back_over_tls_and_over_the_plaintext_port() {
    let Some(cluster) = support::cluster() else { return };
    let Some((tls_address, dir)) = zookeeper_tls() else { return };
    let topic = unique("zk-tls");
    let group = unique("zk-tls-group");
    let created =
        kwire(&cluster, &["topic", "create", &topic, "--partitions", "2", "--replication-factor", "1"]);
    assert!(created.status.success(), "{}", stderr(&created));
    let store = format!("zk:{tls_address}");
    let (ca, cert, key) = (path(&dir, "ca.pem"), path(&dir, "client.pem"), path(&dir, "client.key"));
    let tls = ["--zookeeper-tls-ca", &ca, "--zookeeper-tls-cert", &cert, "--zookeeper-tls-key", &key];

    let mut commit = vec!["commit", "--force", "--group", &group, "--store", &store];
    commit.extend(tls);
    let (p0, p1) = (format!("{topic}:0=11"), format!("{topic}:1=22"));
    commit.extend([p0.as_str(), p1.as_str()]);
    let out = kwire(&cluster, &commit);
    assert!(out.status.success(), "{}", stderr(&out));

    let committed = |args: &[&str]| -> Vec<serde_json::Value> {
        let mut describe = vec!["group", "describe", &group, "--format", "json"];
        describe.extend(args);
        let doc = json(&kwire(&cluster, &describe));
        doc["partitions"].as_array().unwrap().iter().map(|p| p["committed"].clone()).collect()
    };
    let mut over_tls = vec!["--store", &store];
    over_tls.extend(tls);
    assert_eq!(committed(&over_tls), [11, 22]);
    // The same ZooKeeper behind its plaintext port holds the same nodes.
    assert_eq!(committed(&["--store", "zk"]), [11, 22]);
}

#[test]
fn each_zookeeper_tls_mismatch_is_a_one_line_security_error_within_the_timeout() {
    let Some(cluster) = support::cluster() else { return };
    let Some((tls_address, dir)) = zookeeper_tls() else { return };
    let plain_address = cluster.zookeeper.clone().expect("KWIRE_ZOOKEEPER is set with the cluster");
    let group = unique("zk-tls-mismatch");
    let (ca, other_ca) = (path(&dir, "ca.pem"), path(&dir, "other-ca.pem"));
    let (cert, key) = (path(&dir, "client.pem"), path(&dir, "client.key"));
    let identity = ["--zookeeper-tls-cert", cert.as_str(), "--zookeeper-tls-key", key.as_str()];
    let cases: [(&str, &str, Vec<&str>, &str); 4] = [
        ("plaintext to the TLS port", &tls_address, vec![], "expects TLS (a secureClientPort)"),
        (
            "TLS to the plaintext port",
            &plain_address,
            [["--zookeeper-tls-ca", ca.as_str()].as_slice(), &identity].concat(),
            "is this a plaintext clientPort?",
        ),
        (
            "a CA that did not sign the server's certificate",
            &tls_address,
            [["--zookeeper-tls-ca", other_ca.as_str()].as_slice(), &identity].concat(),
            "not signed by a CA in --zookeeper-tls-ca",
        ),
        (
            "no client certificate where ZooKeeper requires one",
            &tls_address,
            vec!["--zookeeper-tls-ca", &ca],
            "refused the client certificate",
        ),
    ];
    for (situation, address, flags, expected) in cases {
        let store = format!("zk:{address}");
        let mut args = vec!["group", "describe", &group, "--timeout", "3s", "--store", &store];
        args.extend(flags);
        let started = Instant::now();
        let out = kwire(&cluster, &args);
        let elapsed = started.elapsed();
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(9), "{situation}: {text}");
        assert_eq!(text.trim_end().lines().count(), 1, "{situation}: not one line: {text}");
        assert!(text.contains(expected), "{situation}: {text}");
        assert!(!text.contains("panicked"), "{situation}: {text}");
        // The timeout bounds the attempt; the probe adds at most a few seconds.
        assert!(elapsed < Duration::from_secs(12), "{situation}: took {elapsed:?}");
    }
}

#[test]
fn a_zookeeper_client_certificate_without_a_ca_or_key_is_refused_before_connecting() {
    let Some(cluster) = support::cluster() else { return };
    let Some((tls_address, dir)) = zookeeper_tls() else { return };
    let store = format!("zk:{tls_address}");
    let cert = path(&dir, "client.pem");
    let no_ca =
        kwire(&cluster, &["group", "describe", "g", "--store", &store, "--zookeeper-tls-cert", &cert]);
    assert_eq!(no_ca.status.code(), Some(1), "{}", stderr(&no_ca));
    assert!(stderr(&no_ca).contains("need --zookeeper-tls-ca"), "{}", stderr(&no_ca));
    let ca = path(&dir, "ca.pem");
    let no_key = kwire(
        &cluster,
        &[
            "group",
            "describe",
            "g",
            "--store",
            &store,
            "--zookeeper-tls-ca",
            &ca,
            "--zookeeper-tls-cert",
            &cert,
        ],
    );
    assert_eq!(no_key.status.code(), Some(9), "{}", stderr(&no_key));
    assert!(stderr(&no_key).contains("both a client certificate and its key"), "{}", stderr(&no_key));
}
