//! The secured listeners of the test cluster (`scripts/cluster env`: `KWIRE_BOOTSTRAP_<LISTENER>`,
//! `KWIRE_CONFIG_<X>` in Java client names, `KWIRE_RDKAFKA_CONFIG_<X>` in librdkafka names) as
//! a list of set-ups: every listener with every mechanism it offers. Set-ups that the cluster's
//! files do not spell out (e.g. PLAIN over SASL_SSL) are written here from two of them: the
//! mechanism's file with the listener's protocol and the CA of the SSL file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::{required, unique};

/// One way to reach the cluster securely.
#[derive(Debug, Clone)]
pub struct Setup {
    /// `listener/mechanism`, e.g. `SASL_SSL/SCRAM-SHA-256`, `MTLS`.
    pub name: String,
    /// The listener's bootstrap servers.
    pub bootstrap: String,
    /// Java client properties (for `--command-config`).
    pub java_config: PathBuf,
    /// librdkafka properties (for `kcat -F`).
    pub rdkafka_config: PathBuf,
    /// The file kwire is run with: the Java one, except for mTLS, whose Java file names a
    /// PKCS#12 key store (Java's PEM key store needs an encrypted key): there kwire takes the
    /// librdkafka file's PEM certificate and key, so the matrix covers PEM, and
    /// secured_pkcs12.rs compares the PKCS#12 stores' answers with these.
    pub kwire_config: PathBuf,
    /// Whether kcat can use it: librdkafka before 2.6.1 (Debian's kcat links 2.0.2) sends a
    /// SCRAM client-final nonce Kafka 4 rejects, so SCRAM set-ups need `KWIRE_KCAT`
    /// (`scripts/librdkafka kcat`, which scripts/test exports).
    pub kcat: bool,
    /// Whether the Java tools are checked on it too: every listener and every mechanism once
    /// (the TLS-only listeners, each mechanism on SASL_PLAINTEXT, SCRAM-SHA-512 on the other
    /// SASL listeners); kcat covers the remaining combinations, each JVM costs seconds.
    pub java: bool,
}

/// The SASL listeners and the TLS-only ones, as `scripts/cluster` names them.
const SASL_LISTENERS: [&str; 3] = ["SASL_PLAINTEXT", "SASL_SSL", "REAUTH"];
/// Each mechanism with the stem of its `KWIRE_CONFIG_*` variable (files for SASL_PLAINTEXT).
const MECHANISMS: [(&str, &str); 4] = [
    ("PLAIN", "PLAIN"),
    ("SCRAM-SHA-256", "SCRAM_SHA_256"),
    ("SCRAM-SHA-512", "SASL_PLAINTEXT"),
    ("OAUTHBEARER", "OAUTHBEARER"),
];

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Every set-up, or `None` (with a note) when the secured listeners are not in the environment
/// outside CI; with `CI` / `KWIRE_REQUIRE_CLUSTER` a missing variable panics.
pub fn setups() -> Option<Vec<Setup>> {
    let mut names = vec!["KWIRE_BOOTSTRAP_SSL".to_owned(), "KWIRE_BOOTSTRAP_MTLS".to_owned()];
    names.extend(SASL_LISTENERS.iter().map(|l| format!("KWIRE_BOOTSTRAP_{l}")));
    for stem in
        ["SSL", "MTLS", "RESTRICTED", "PLAIN", "SCRAM_SHA_256", "SASL_PLAINTEXT", "SASL_SSL", "OAUTHBEARER"]
    {
        names.push(format!("KWIRE_CONFIG_{stem}"));
        names.push(format!("KWIRE_RDKAFKA_CONFIG_{stem}"));
    }
    let missing: Vec<&String> = names.iter().filter(|n| var(n).is_none()).collect();
    if !missing.is_empty() {
        assert!(
            !required(),
            "{missing:?} not set, and CI requires the secured listeners (scripts/cluster env)"
        );
        eprintln!("note: {missing:?} not set; skipping (run `eval \"$(scripts/cluster env --export)\"`)");
        return None;
    }
    let get = |n: &str| var(n).unwrap_or_default();
    let scram_kcat = var("KWIRE_KCAT").is_some();
    if !scram_kcat {
        assert!(
            !required(),
            "KWIRE_KCAT is not set, and CI requires kcat on a current librdkafka (scripts/librdkafka kcat)"
        );
        eprintln!("note: KWIRE_KCAT not set; SCRAM set-ups are checked without kcat");
    }
    let dir = std::env::temp_dir().join(unique("kwire-secured-setups"));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut out = Vec::new();
    for listener in ["SSL", "MTLS"] {
        let java_config: PathBuf = get(&format!("KWIRE_CONFIG_{listener}")).into();
        let rdkafka_config: PathBuf = get(&format!("KWIRE_RDKAFKA_CONFIG_{listener}")).into();
        out.push(Setup {
            name: listener.to_owned(),
            bootstrap: get(&format!("KWIRE_BOOTSTRAP_{listener}")),
            kwire_config: if listener == "MTLS" { rdkafka_config.clone() } else { java_config.clone() },
            java_config,
            rdkafka_config,
            kcat: true,
            java: true,
        });
    }
    let ssl_java = read(&get("KWIRE_CONFIG_SSL"));
    let ssl_rdkafka = read(&get("KWIRE_RDKAFKA_CONFIG_SSL"));
    for listener in SASL_LISTENERS {
        for (mechanism, stem) in MECHANISMS {
            let java = read(&get(&format!("KWIRE_CONFIG_{stem}")));
            let rdkafka = read(&get(&format!("KWIRE_RDKAFKA_CONFIG_{stem}")));
            let file = format!("{}-{}", listener.to_lowercase(), mechanism.to_lowercase());
            let tls = listener == "SASL_SSL";
            let java_config = dir.join(format!("{file}.properties"));
            let rdkafka_config = dir.join(format!("{file}.conf"));
            write_private(&java_config, &with_protocol(&java, tls, &ssl_java, "SASL_SSL"));
            write_private(&rdkafka_config, &with_protocol(&rdkafka, tls, &ssl_rdkafka, "sasl_ssl"));
            out.push(Setup {
                name: format!("{listener}/{mechanism}"),
                bootstrap: get(&format!("KWIRE_BOOTSTRAP_{listener}")),
                kwire_config: java_config.clone(),
                java_config,
                rdkafka_config,
                kcat: scram_kcat || !mechanism.starts_with("SCRAM"),
                java: listener == "SASL_PLAINTEXT" || mechanism == "SCRAM-SHA-512",
            });
        }
    }
    Some(out)
}

/// The restricted user's set-up (SASL_PLAINTEXT, SCRAM-SHA-512), allowed to Describe and Read
/// only `kwire-restricted-topic` and group `kwire-restricted-group`.
pub fn restricted() -> Option<Setup> {
    let (Some(bootstrap), Some(java), Some(rdkafka)) = (
        var("KWIRE_BOOTSTRAP_SASL_PLAINTEXT"),
        var("KWIRE_CONFIG_RESTRICTED"),
        var("KWIRE_RDKAFKA_CONFIG_RESTRICTED"),
    ) else {
        assert!(!required(), "KWIRE_CONFIG_RESTRICTED not set, and CI requires it (scripts/cluster env)");
        eprintln!("note: KWIRE_CONFIG_RESTRICTED not set; skipping");
        return None;
    };
    Some(Setup {
        name: "SASL_PLAINTEXT/restricted".to_owned(),
        bootstrap,
        kwire_config: java.clone().into(),
        java_config: java.into(),
        rdkafka_config: rdkafka.into(),
        kcat: var("KWIRE_KCAT").is_some(),
        java: true,
    })
}

pub const RESTRICTED_TOPIC: &str = "kwire-restricted-topic";
pub const RESTRICTED_GROUP: &str = "kwire-restricted-group";

fn read(path: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read the cluster's client file {path}: {e}"))
}

fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write set-up file");
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).expect("chmod 600");
}

/// `text` (a SASL_PLAINTEXT file) for a TLS listener: `security.protocol` replaced, and the
/// trust lines of the SSL file (every line but its `security.protocol`) appended.
fn with_protocol(text: &str, tls: bool, ssl_file: &str, tls_protocol: &str) -> String {
    if !tls {
        return text.to_owned();
    }
    let mut out: Vec<String> = text
        .lines()
        .map(|l| {
            if l.starts_with("security.protocol=") {
                format!("security.protocol={tls_protocol}")
            } else {
                l.to_owned()
            }
        })
        .collect();
    out.extend(
        ssl_file
            .lines()
            .filter(|l| !l.starts_with("security.protocol=") && !l.starts_with('#'))
            .map(str::to_owned),
    );
    out.join("\n") + "\n"
}

/// Runs kcat (`KWIRE_KCAT`, else `kcat` on the PATH) with the set-up's librdkafka file.
pub fn kcat(setup: &Setup, args: &[&str]) -> Output {
    Command::new(var("KWIRE_KCAT").unwrap_or_else(|| "kcat".to_owned()))
        .args(["-b", &setup.bootstrap, "-F"])
        .arg(&setup.rdkafka_config)
        .args(args)
        .output()
        .expect("kcat runs (scripts/test installs it)")
}

/// `kcat -P` of `lines` to partition 0 of `topic` through the set-up.
pub fn kcat_produce(setup: &Setup, topic: &str, lines: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(var("KWIRE_KCAT").unwrap_or_else(|| "kcat".to_owned()))
        .args(["-b", &setup.bootstrap, "-F"])
        .arg(&setup.rdkafka_config)
        .args(["-P", "-t", topic, "-p", "0"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kcat runs (scripts/test installs it)");
    let mut pipe = child.stdin.take().expect("stdin is piped");
    pipe.write_all(lines.as_bytes()).expect("kcat reads stdin");
    drop(pipe);
    child.wait_with_output().expect("kcat runs")
}

/// Runs a Kafka Java tool with `--bootstrap-server` and `--command-config` of the set-up
/// (`config_flag`: the tool's name for it, e.g. `--command-config`, `--consumer.config`).
pub fn java_tool(setup: &Setup, class: &str, config_flag: &str, args: &[&str]) -> Output {
    let config = setup.java_config.to_string_lossy().into_owned();
    let mut all = vec!["--bootstrap-server", setup.bootstrap.as_str(), config_flag, config.as_str()];
    all.extend_from_slice(args);
    super::try_kafka_tool(class, &all)
}

/// A library client's settings for `bootstrap` from a Java properties file, read by the
/// library's own `apply_properties`.
pub fn client_config(bootstrap: &str, properties: &Path) -> kafka_client::ClientConfig {
    let mut config = kafka_client::ClientConfig::new(bootstrap).expect("bootstrap");
    let text = read(&properties.to_string_lossy());
    let pairs: Vec<(String, String)> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('=').map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned())))
        .collect();
    kafka_client::apply_properties(&mut config, pairs).expect("the properties file applies");
    config
}

/// A library client connected as `setup`'s user (its Java properties file).
pub async fn client(setup: &Setup) -> kafka_client::Client {
    let config = client_config(&setup.bootstrap, &setup.java_config);
    kafka_client::Client::connect(config).await.expect("authenticated")
}
