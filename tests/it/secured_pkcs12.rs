//! PKCS#12 stores on the secured listeners (`scripts/cluster env`: `KWIRE_CONFIG_SSL_P12`,
//! `KWIRE_CONFIG_MTLS_P12`, `KWIRE_CONFIG_MTLS_P12_LEGACY`, Java files naming only PKCS#12
//! stores): mTLS with a keytool keystore and truststore, with openssl's legacy keystore, and
//! with the cluster's Java mTLS file (openssl 3's AES keystore) answers what the PEM files
//! answer; SSL with a PKCS#12 truststore too. A wrong password, a JKS store and a damaged store
//! are one line naming the file, with the security exit code, at once.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::support::secured;
use crate::support::{self, required_var as var, stderr, stdout, unique};

/// Exit code of src/exit.rs for the connection's security settings.
const SECURITY: i32 = 9;

/// `kwire -b BOOTSTRAP --command-config FILE EXTRA... ARGS...`, stdin fed if given.
fn kwire_with(bootstrap: &str, file: &str, args: &[&str], stdin: Option<&str>) -> Output {
    support::output_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_kwire"))
            .args(["-b", bootstrap, "--command-config", file])
            .args(args)
            .env_remove("KWIRE_BOOTSTRAP")
            .env_remove("KWIRE_COMMAND_CONFIG"),
        stdin,
    )
}

fn succeeded(what: &str, out: &Output) -> String {
    assert!(out.status.success(), "{what}: exit {:?}: {}", out.status.code(), stderr(out));
    stdout(out)
}

/// What `file` sees of `topic`: its high watermarks and every record, in a stable order.
fn answers(bootstrap: &str, file: &str, topic: &str, records: usize) -> (String, Vec<String>) {
    let offsets = succeeded(
        &format!("offsets via {file}"),
        &kwire_with(bootstrap, file, &["offsets", topic, "--format", "json"], None),
    );
    let offsets: serde_json::Value = serde_json::from_str(&offsets).expect("offsets JSON");
    let consumed = succeeded(
        &format!("consume via {file}"),
        &kwire_with(bootstrap, file, &["consume", topic, "--count", &records.to_string()], None),
    );
    let mut lines: Vec<String> = consumed.lines().map(str::to_owned).collect();
    lines.sort();
    (offsets["partitions"].to_string(), lines)
}

#[test]
fn mtls_with_pkcs12_keystores_and_truststore_answers_what_the_pem_files_answer() {
    let Some(_) = support::cluster() else { return };
    let Some(setups) = secured::setups() else { return };
    let (Some(p12), Some(legacy)) = (var("KWIRE_CONFIG_MTLS_P12"), var("KWIRE_CONFIG_MTLS_P12_LEGACY"))
    else {
        return;
    };
    let mtls = setups.iter().find(|s| s.name == "MTLS").expect("the MTLS set-up");
    let pem = mtls.rdkafka_config.to_string_lossy().into_owned();
    let openssl_aes = mtls.java_config.to_string_lossy().into_owned();
    let topic = unique("kwire-pkcs12-mtls");
    let records = 30;
    succeeded(
        "topic create",
        &kwire_with(&mtls.bootstrap, &p12, &["topic", "create", &topic, "--partitions", "3"], None),
    );
    let lines: String = (0..records).flat_map(|i| [format!("k{i},v{i}"), "\n".to_owned()]).collect();
    succeeded(
        "produce through the keytool keystore",
        &kwire_with(&mtls.bootstrap, &p12, &["produce", &topic, "--key-separator", ","], Some(&lines)),
    );
    let expected = answers(&mtls.bootstrap, &pem, &topic, records);
    assert_eq!(expected.1.len(), records, "{:?}", expected.1);
    for file in [&p12, &legacy, &openssl_aes] {
        assert_eq!(answers(&mtls.bootstrap, file, &topic, records), expected, "{file}");
    }
    succeeded("topic delete", &kwire_with(&mtls.bootstrap, &p12, &["topic", "delete", &topic], None));
}

#[test]
fn ssl_with_a_pkcs12_truststore_answers_what_the_pem_ca_answers() {
    let Some(_) = support::cluster() else { return };
    let Some(setups) = secured::setups() else { return };
    let Some(p12) = var("KWIRE_CONFIG_SSL_P12") else { return };
    let ssl = setups.iter().find(|s| s.name == "SSL").expect("the SSL set-up");
    let pem = ssl.java_config.to_string_lossy().into_owned();
    let topic = unique("kwire-pkcs12-ssl");
    succeeded("topic create", &kwire_with(&ssl.bootstrap, &p12, &["topic", "create", &topic], None));
    succeeded("produce", &kwire_with(&ssl.bootstrap, &p12, &["produce", &topic], Some("a\nb\nc\n")));
    assert_eq!(answers(&ssl.bootstrap, &p12, &topic, 3), answers(&ssl.bootstrap, &pem, &topic, 3));
    succeeded("topic delete", &kwire_with(&ssl.bootstrap, &p12, &["topic", "delete", &topic], None));
}

#[test]
fn a_wrong_password_a_jks_store_or_a_damaged_pkcs12_store_is_one_line_naming_the_file() {
    let Some(_) = support::cluster() else { return };
    let Some(setups) = secured::setups() else { return };
    let (Some(p12), Some(tls_dir)) = (var("KWIRE_CONFIG_MTLS_P12"), var("KWIRE_TLS_DIR")) else { return };
    let tls_dir = PathBuf::from(tls_dir);
    let mtls = setups.iter().find(|s| s.name == "MTLS").expect("the MTLS set-up");
    let keystore = tls_dir.join("client.keystore.p12").to_string_lossy().into_owned();
    let truststore = tls_dir.join("truststore.p12").to_string_lossy().into_owned();
    let jks = tls_dir.join("truststore.jks").to_string_lossy().into_owned();
    let damaged_dir = std::env::temp_dir().join(unique("kwire-pkcs12-damaged"));
    std::fs::create_dir_all(&damaged_dir).expect("temp dir");
    let damaged = damaged_dir.join("client.keystore.p12");
    let bytes = std::fs::read(&keystore).expect("the keytool keystore");
    std::fs::write(&damaged, &bytes[..bytes.len() / 2]).expect("half a keystore");
    let damaged = damaged.to_string_lossy().into_owned();

    let cases: [(&str, Vec<String>, Vec<&str>); 5] = [
        (
            "wrong keystore password",
            vec!["ssl.keystore.password=not-it".into(), "ssl.key.password=not-it".into()],
            vec!["ssl.keystore.location", &keystore, "wrong password"],
        ),
        (
            "wrong truststore password",
            vec!["ssl.truststore.password=not-it".into()],
            vec!["ssl.truststore.location", &truststore, "wrong password"],
        ),
        (
            "key password contradicting the store's",
            vec!["ssl.key.password=not-it".into()],
            vec!["ssl.keystore.location", &keystore, "ssl.key.password differs"],
        ),
        (
            "JKS truststore",
            vec![format!("ssl.truststore.location={jks}"), "ssl.truststore.type=JKS".into()],
            vec!["ssl.truststore.location", &jks, "keytool -importkeystore -srckeystore"],
        ),
        (
            "truncated keystore",
            vec![format!("ssl.keystore.location={damaged}")],
            vec!["ssl.keystore.location", &damaged, "not a readable PKCS#12 store"],
        ),
    ];
    for (what, overrides, needles) in cases {
        let mut args = Vec::new();
        for o in &overrides {
            args.extend(["-X", o.as_str()]);
        }
        args.push("metadata");
        let started = Instant::now();
        let out = kwire_with(&mtls.bootstrap, &p12, &args, None);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(SECURITY), "{what}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{what}: one line: {err}");
        for needle in needles {
            assert!(err.contains(needle), "{what}: `{needle}` missing from: {err}");
        }
        assert!(
            !err.contains("kwire-store-secret") && !err.contains("not-it"),
            "{what}: a password shown: {err}"
        );
        assert!(started.elapsed() < Duration::from_secs(20), "{what}: took {:?}", started.elapsed());
    }
    std::fs::remove_dir_all(&damaged_dir).expect("temp dir removed");
}
