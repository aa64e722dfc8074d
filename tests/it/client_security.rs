//! kwire on the secured listeners (`scripts/cluster env`: `KWIRE_BOOTSTRAP_<LISTENER>`,
//! `KWIRE_CONFIG_*`): every listener and mechanism authenticates and sees what PLAINTEXT sees,
//! each security failure is provoked for real and gives its one line and exit code without a
//! hang, and a client outlives several SASL session lifetimes on the re-authentication listener.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_client::{
    Acks, Client, Direction, FetchOptions, FetchRange, Isolation, OffsetQuery, ProduceOptions, ProduceRecord,
    TopicPartition,
};
use kafka_wire::protocol::ApiKey;

use crate::secured_interop::for_each_setup;
use crate::support::secured::{self, Setup, RESTRICTED_TOPIC};
use crate::support::{self, create_topic, json, kwire, produce_with_kafka, stderr, stdout, unique};

/// Exit codes of src/exit.rs.
const SECURITY: i32 = 9;
const NOT_AUTHORIZED: i32 = 10;

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The set-up's properties file as kwire reads it: the Java file, except for mTLS, where the
/// librdkafka file names the same certificate in PEM (the Java file's PKCS#12 keystore is
/// covered by secured_pkcs12.rs).
fn kwire_config(setup: &Setup) -> &Path {
    if setup.name == "MTLS" {
        &setup.rdkafka_config
    } else {
        &setup.java_config
    }
}

/// Runs kwire with `args` (which name their own `-b` and settings) and no cluster settings from
/// the environment.
fn kwire_secured(args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_kwire"))
        .args(args)
        .env_remove("KWIRE_BOOTSTRAP")
        .env_remove("KWIRE_COMMAND_CONFIG")
        .output()
        .expect("kwire binary runs");
    (out, started.elapsed())
}

/// The high watermark of each partition in a `kwire offsets --format json` document.
fn high_watermarks(doc: &serde_json::Value) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = doc["partitions"]
        .as_array()
        .unwrap_or_else(|| panic!("no partitions array: {doc}"))
        .iter()
        .map(|p| (p["partition"].as_i64().unwrap(), p["high_watermark"].as_i64().unwrap()))
        .collect();
    out.sort_unstable();
    out
}

/// Asserts a failure: the exit code, one line on stderr containing each of `needles`, nothing
/// on stdout, and no secret of the cluster's files in the message.
fn assert_fails(out: &Output, code: i32, needles: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "stderr: {err} stdout: {}", stdout(out));
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    for needle in needles {
        assert!(err.contains(needle), "`{needle}` missing from: {err}");
    }
    for secret in ["admin-secret", "restricted-secret", "wrong-password"] {
        assert!(!err.contains(secret), "a password leaked: {err}");
    }
    assert!(stdout(out).is_empty(), "{}", stdout(out));
}

fn setup_named(setups: &[Setup], name: &str) -> Setup {
    setups.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no set-up {name}")).clone()
}

fn tls_dir() -> PathBuf {
    PathBuf::from(var("KWIRE_TLS_DIR").expect("scripts/cluster env prints KWIRE_TLS_DIR"))
}

#[test]
fn every_secured_listener_and_mechanism_authenticates_and_sees_the_plaintext_offsets() {
    let Some(cluster) = support::cluster() else { return };
    let Some(setups) = secured::setups() else { return };
    let topic = unique("secured-kwire");
    create_topic(&cluster, &topic, 3, 3);
    produce_with_kafka(&cluster, &topic, 30, 8);
    let plaintext = high_watermarks(&json(&kwire(&cluster, &["offsets", &topic, "--format", "json"])));
    assert_eq!(plaintext.iter().map(|(_, hw)| hw).sum::<i64>(), 30);

    for_each_setup(&setups, |setup| {
        let config = kwire_config(setup).to_string_lossy().into_owned();
        let (out, _) = kwire_secured(&[
            "-b",
            &setup.bootstrap,
            "--command-config",
            &config,
            "offsets",
            &topic,
            "--format",
            "json",
        ]);
        if !out.status.success() {
            return Err(format!("exit {:?}: {}", out.status.code(), stderr(&out)));
        }
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
        let seen = high_watermarks(&doc);
        if seen != plaintext {
            return Err(format!("saw {seen:?}, PLAINTEXT {plaintext:?}"));
        }
        let (consumed, _) = kwire_secured(&[
            "-b",
            &setup.bootstrap,
            "--command-config",
            &config,
            "consume",
            &topic,
            "--format",
            "json",
        ]);
        let records = stdout(&consumed).lines().count();
        if !consumed.status.success() || records != 30 {
            return Err(format!("consume read {records} records: {}", stderr(&consumed)));
        }
        Ok(())
    });
}

#[test]
fn a_wrong_password_is_refused_once_with_the_mechanism_and_user_and_exit_9() {
    let Some(setups) = secured::setups() else { return };
    for name in ["SASL_PLAINTEXT/SCRAM-SHA-512", "SASL_SSL/SCRAM-SHA-256", "SASL_PLAINTEXT/PLAIN"] {
        let setup = setup_named(&setups, name);
        let config = setup.java_config.to_string_lossy().into_owned();
        let (out, took) = kwire_secured(&[
            "-b",
            &setup.bootstrap,
            "--command-config",
            &config,
            "-X",
            "sasl.username=admin",
            "-X",
            "sasl.password=wrong-password",
            "metadata",
        ]);
        let mechanism = name.split('/').nth(1).unwrap();
        assert_fails(&out, SECURITY, &["authentication failed", mechanism, "`admin`"]);
        // Refused once: not tried on every bootstrap broker, not retried until a deadline.
        assert!(took < Duration::from_secs(10), "{name} took {took:?}");
    }
}

#[test]
fn a_broker_certificate_from_another_ca_is_untrusted_with_exit_9() {
    let Some(setups) = secured::setups() else { return };
    let ssl = setup_named(&setups, "SSL");
    let other_ca = tls_dir().join("other-ca.pem").to_string_lossy().into_owned();
    let (out, _) = kwire_secured(&[
        "-b",
        &ssl.bootstrap,
        "-X",
        "security.protocol=SSL",
        "-X",
        &format!("ssl.ca.location={other_ca}"),
        "metadata",
    ]);
    assert_fails(
        &out,
        SECURITY,
        &["untrusted certificate", "ssl.ca.location", "subject CN=localhost", "issued by CN=kwire test CA"],
    );
    // Without any CA setting the bundled public roots do not know the test CA either.
    let (out, _) = kwire_secured(&["-b", &ssl.bootstrap, "-X", "security.protocol=SSL", "metadata"]);
    assert_fails(&out, SECURITY, &["untrusted certificate"]);
}

#[test]
fn a_broker_certificate_for_another_host_names_the_hosts_it_is_for() {
    let Some(setups) = secured::setups() else { return };
    let ssl = setup_named(&setups, "SSL");
    // The machine's own name resolves to loopback but is not in the broker certificate
    // (which names localhost and 127.0.0.1).
    let host = String::from_utf8(Command::new("hostname").output().expect("hostname runs").stdout)
        .expect("host name is UTF-8")
        .trim()
        .to_owned();
    let port = ssl.bootstrap.split(',').next().unwrap().rsplit_once(':').unwrap().1.to_owned();
    let addr = format!("{host}:{port}");
    let resolves_to_loopback = std::net::ToSocketAddrs::to_socket_addrs(&addr.as_str())
        .is_ok_and(|mut a| a.any(|a| a.ip().is_loopback()));
    assert!(
        resolves_to_loopback,
        "this test needs the host name `{host}` to resolve to loopback (/etc/hosts)"
    );
    let config = ssl.java_config.to_string_lossy().into_owned();
    let (out, _) = kwire_secured(&["-b", &addr, "--command-config", &config, "metadata"]);
    assert_fails(&out, SECURITY, &["wrong host", &format!("`{host}`"), "localhost", "subject CN=localhost"]);
    // ssl.endpoint.identification.algorithm= turns the host check off, with a warning.
    let (out, _) = kwire_secured(&[
        "-b",
        &addr,
        "--command-config",
        &config,
        "-X",
        "ssl.endpoint.identification.algorithm=",
        "metadata",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("host name verification is off"), "{}", stderr(&out));
}

/// Runs `openssl` with `args` in `dir`; it must succeed.
fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").args(args).current_dir(dir).output().expect("openssl runs");
    assert!(out.status.success(), "openssl {args:?}: {}", stderr(&out));
}

/// Kills the TLS server of a test when it ends, whatever happens.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn an_expired_broker_certificate_is_refused_saying_it_expired() {
    // No broker serves an expired certificate, so `openssl s_server` stands in for one: the
    // failure is in the TLS handshake, before any Kafka byte.
    let dir = std::env::temp_dir().join(unique("kwire-expired-cert"));
    std::fs::create_dir_all(dir.join("db")).unwrap();
    std::fs::write(dir.join("db/index.txt"), "").unwrap();
    std::fs::write(dir.join("db/serial"), "01\n").unwrap();
    std::fs::write(
        dir.join("ca.cnf"),
        "[ca]\ndefault_ca = test\n[test]\ndatabase = db/index.txt\nserial = db/serial\nnew_certs_dir = db\n\
         default_md = sha256\npolicy = any\ncopy_extensions = none\nx509_extensions = ext\n[any]\n\
         commonName = supplied\n[ext]\nsubjectAltName = IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    openssl(
        &dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=kwire-test-ca",
        ],
    );
    openssl(
        &dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "srv.key",
            "-out",
            "srv.csr",
            "-subj",
            "/CN=localhost",
        ],
    );
    openssl(
        &dir,
        &[
            "ca",
            "-batch",
            "-config",
            "ca.cnf",
            "-cert",
            "ca.pem",
            "-keyfile",
            "ca.key",
            "-in",
            "srv.csr",
            "-out",
            "srv.pem",
            "-startdate",
            "20200101000000Z",
            "-enddate",
            "20200102000000Z",
        ],
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let accept = format!("127.0.0.1:{port}");
    let _server = KillOnDrop(
        Command::new("openssl")
            .args(["s_server", "-accept", &accept, "-cert", "srv.pem", "-key", "srv.key", "-quiet"])
            .current_dir(&dir)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("openssl s_server starts"),
    );
    let started = Instant::now();
    while std::net::TcpStream::connect(&accept).is_err() {
        assert!(started.elapsed() < Duration::from_secs(10), "openssl s_server did not listen on {accept}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let ca = dir.join("ca.pem").to_string_lossy().into_owned();
    let (out, _) = kwire_secured(&[
        "-b",
        &accept,
        "-X",
        "security.protocol=SSL",
        "-X",
        &format!("ssl.ca.location={ca}"),
        "metadata",
    ]);
    assert_fails(
        &out,
        SECURITY,
        &["has expired", "1577923200", "subject CN=localhost", "issued by CN=kwire-test-ca"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_mtls_listener_refuses_kwire_without_a_client_certificate_with_exit_9() {
    let Some(setups) = secured::setups() else { return };
    let mtls = setup_named(&setups, "MTLS");
    let ssl = setup_named(&setups, "SSL");
    let config = ssl.java_config.to_string_lossy().into_owned();
    let (out, took) = kwire_secured(&["-b", &mtls.bootstrap, "--command-config", &config, "metadata"]);
    assert_fails(&out, SECURITY, &["client certificate"]);
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn plaintext_to_a_tls_port_and_tls_to_a_plaintext_port_fail_fast_saying_which() {
    let Some(cluster) = support::cluster() else { return };
    let Some(setups) = secured::setups() else { return };
    let ssl = setup_named(&setups, "SSL");
    let (out, took) = kwire_secured(&["-b", &ssl.bootstrap, "--timeout", "30s", "metadata"]);
    assert_fails(&out, SECURITY, &["answered with TLS", "security.protocol"]);
    assert!(took < Duration::from_secs(10), "no hang: took {took:?}");

    let config = ssl.java_config.to_string_lossy().into_owned();
    let (out, took) = kwire_secured(&[
        "-b",
        &cluster.bootstrap,
        "--command-config",
        &config,
        "--timeout",
        "30s",
        "metadata",
    ]);
    assert_fails(&out, SECURITY, &["PLAINTEXT listener"]);
    assert!(took < Duration::from_secs(10), "no hang: took {took:?}");
}

#[test]
fn sasl_settings_on_a_listener_without_sasl_and_no_sasl_on_a_sasl_listener_say_so() {
    let Some(setups) = secured::setups() else { return };
    let ssl = setup_named(&setups, "SSL");
    let sasl_ssl = setup_named(&setups, "SASL_SSL/SCRAM-SHA-512");
    let config = sasl_ssl.java_config.to_string_lossy().into_owned();
    let (out, _) = kwire_secured(&["-b", &ssl.bootstrap, "--command-config", &config, "metadata"]);
    assert_fails(&out, SECURITY, &["does not take SASL", "ILLEGAL_SASL_STATE"]);

    let sasl_plaintext = setup_named(&setups, "SASL_PLAINTEXT/PLAIN");
    let (out, _) = kwire_secured(&["-b", &sasl_plaintext.bootstrap, "metadata"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("does this listener need SASL?"), "{}", stderr(&out));
}

#[test]
fn the_restricted_user_is_refused_a_foreign_group_and_topic_naming_the_principal_and_nothing_is_written() {
    let Some(cluster) = support::cluster() else { return };
    let Some(restricted) = secured::restricted() else { return };
    let config = restricted.java_config.to_string_lossy().into_owned();
    let group = unique("kwire-forbidden-group");
    let (out, _) = kwire_secured(&[
        "-b",
        &restricted.bootstrap,
        "--command-config",
        &config,
        "group",
        "describe",
        &group,
    ]);
    assert_fails(&out, NOT_AUTHORIZED, &["GROUP_AUTHORIZATION_FAILED", &group, "User:restricted"]);

    let (out, _) = kwire_secured(&[
        "-b",
        &restricted.bootstrap,
        "--command-config",
        &config,
        "reset",
        "--group",
        &group,
        "--topic",
        RESTRICTED_TOPIC,
        "--to",
        "earliest",
        "--execute",
    ]);
    assert_fails(&out, NOT_AUTHORIZED, &["GROUP_AUTHORIZATION_FAILED", "User:restricted"]);
    let listed = json(&kwire(&cluster, &["group", "list", "--format", "json"]));
    assert!(!listed.to_string().contains(&group), "the refused reset created the group: {listed}");

    // A forbidden topic alone: its one refused row, exit 10 (with an authorized one:
    // secured_partial_authz).
    let topic = unique("kwire-forbidden-topic");
    create_topic(&cluster, &topic, 1, 1);
    let (out, _) =
        kwire_secured(&["-b", &restricted.bootstrap, "--command-config", &config, "offsets", &topic]);
    assert_eq!(out.status.code(), Some(NOT_AUTHORIZED), "{}", stderr(&out));
    for needle in ["TOPIC_AUTHORIZATION_FAILED", &topic, "User:restricted"] {
        assert!(stderr(&out).contains(needle), "`{needle}` missing from: {}", stderr(&out));
    }
    assert!(stdout(&out).contains("not authorized (TOPIC_AUTHORIZATION_FAILED)"), "{}", stdout(&out));
    // Its own topic it may read.
    let (out, _) = kwire_secured(&[
        "-b",
        &restricted.bootstrap,
        "--command-config",
        &config,
        "offsets",
        RESTRICTED_TOPIC,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn trace_shows_sasl_exchanges_with_their_tokens_redacted() {
    let Some(setups) = secured::setups() else { return };
    for name in ["SASL_PLAINTEXT/PLAIN", "SASL_PLAINTEXT/SCRAM-SHA-512", "SASL_PLAINTEXT/OAUTHBEARER"] {
        let setup = setup_named(&setups, name);
        let config = setup.java_config.to_string_lossy().into_owned();
        let (out, _) =
            kwire_secured(&["-b", &setup.bootstrap, "--command-config", &config, "--trace", "api-versions"]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let trace = stderr(&out);
        assert!(trace.contains("SaslAuthenticate"), "{name}: {trace}");
        // base64 of "<redacted>", and hex of it, in every SaslAuthenticate frame.
        assert!(trace.contains("PHJlZGFjdGVkPg=="), "{name}: {trace}");
        for secret in ["admin-secret", "YWRtaW4tc2VjcmV0", "61646d696e2d736563726574", "auth=Bearer"] {
            assert!(!trace.contains(secret), "{name}: `{secret}` in the trace");
        }
    }
}

/// A client on the re-authentication listener (`connections.max.reauth.ms=10000`): for 40 s it
/// produces one record a second and reads everything back, across several session lifetimes,
/// renewing each session in place (KIP-368) on the connections it opened in the first second.
#[test]
fn a_client_outlives_four_sasl_session_lifetimes_on_the_same_connections_without_a_missed_record() {
    let Some(cluster) = support::cluster() else { return };
    let Some(_) = secured::setups() else { return };
    let (Some(bootstrap), Some(file)) = (var("KWIRE_BOOTSTRAP_REAUTH"), var("KWIRE_CONFIG_SASL_PLAINTEXT"))
    else {
        return;
    };
    let topic = unique("reauth");
    create_topic(&cluster, &topic, 1, 3);
    let authentications = Arc::new(AtomicUsize::new(0));
    let lifetimes = Arc::new(std::sync::Mutex::new(Vec::new()));
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let mut config = secured::client_config(&bootstrap, Path::new(&file));
        let (counter, seen) = (Arc::clone(&authentications), Arc::clone(&lifetimes));
        config.trace = Some(Arc::new(move |event| {
            if event.api == ApiKey::SASL_AUTHENTICATE && event.direction == Direction::Response {
                counter.fetch_add(1, Ordering::Relaxed);
                seen.lock().unwrap().push(format!("{:?}", event.decoded));
            }
        }));
        let client = Client::connect(config).await.expect("authenticated");
        let tp = TopicPartition::new(topic.clone(), 0);
        let started = Instant::now();
        let mut produced = 0i64;
        let mut read = 0i64;
        let mut opened_by_first_round = None;
        while started.elapsed() < Duration::from_secs(40) {
            let record = ProduceRecord::new(None, Some(format!("r{produced}").into_bytes().into()));
            let options = ProduceOptions { acks: Acks::All, ..ProduceOptions::default() };
            client
                .produce(&topic, 0, vec![record], &options)
                .await
                .unwrap_or_else(|e| panic!("produce after {:?}: {e}", started.elapsed()));
            produced += 1;
            let end = client
                .list_offsets(
                    std::slice::from_ref(&tp),
                    OffsetQuery::Latest,
                    Isolation::ReadUncommitted,
                    Duration::from_secs(10),
                )
                .await;
            let end =
                end.into_iter().next().unwrap().1.unwrap_or_else(|e| panic!("list offsets: {e}")).offset;
            let end = end.expect("the latest offset");
            let range = FetchRange::new(tp.clone(), read, end);
            let fetched = client
                .fetch_range(&[range], &FetchOptions::default())
                .await
                .remove(&tp)
                .expect("an answer for the partition")
                .unwrap_or_else(|e| panic!("fetch after {:?}: {e}", started.elapsed()));
            read += fetched.records.len() as i64;
            opened_by_first_round.get_or_insert(client.connections_opened());
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        assert_eq!(read, produced, "every record produced was read back");
        assert_eq!(
            opened_by_first_round.map(|n| n + client.reauthentications_abandoned()),
            Some(client.connections_opened()),
            "no new connection after the first round but for a renewal the broker left unanswered"
        );
        // 40 s at 10 s lifetimes, renewed at 8.5 s: the leader's connection alone renews four times.
        assert!(client.reauthentications() >= 4, "{} re-authentications", client.reauthentications());
    });
    let lifetimes = lifetimes.lock().unwrap();
    // The listener granted sessions with a lifetime (KIP-368), and kwire renewed them.
    assert!(
        lifetimes.iter().any(|l| l.contains("session_lifetime_ms: Some(") && !l.contains("Some(0)")),
        "{lifetimes:?}"
    );
    // SCRAM takes two SaslAuthenticate rounds per authentication; 40 s at 10 s lifetimes (renewed
    // at 8.5 s) is at least four authentications of the leader's connection.
    assert!(authentications.load(Ordering::Relaxed) >= 2 * 4, "{lifetimes:?}");
}

/// The SCRAM_ONLY listener enables SCRAM-SHA-512 alone: a PLAIN client is told which mechanism
/// is missing and which the broker offers, exit 9, at once; SCRAM-SHA-512 on it works.
#[test]
fn a_mechanism_the_listener_does_not_enable_is_refused_with_the_brokers_list_and_exit_9() {
    let Some(setups) = secured::setups() else { return };
    let Some(bootstrap) = support::required_var("KWIRE_BOOTSTRAP_SCRAM_ONLY") else { return };
    let plain = setup_named(&setups, "SASL_PLAINTEXT/PLAIN").java_config.to_string_lossy().into_owned();
    let (out, took) = kwire_secured(&["-b", &bootstrap, "--command-config", &plain, "metadata"]);
    assert_fails(&out, SECURITY, &["SASL mechanism PLAIN is not enabled", "it enables: SCRAM-SHA-512"]);
    assert!(took < Duration::from_secs(10), "refused in {took:?}");
    let scram =
        setup_named(&setups, "SASL_PLAINTEXT/SCRAM-SHA-512").java_config.to_string_lossy().into_owned();
    let (out, _) = kwire_secured(&["-b", &bootstrap, "--command-config", &scram, "metadata"]);
    assert!(out.status.success(), "SCRAM-SHA-512 on the SCRAM_ONLY listener: {}", stderr(&out));
}
