//! The Java side of the Kafka oracle tests, shared by `kafka_oracle.rs` and `schema_oracle.rs`:
//! `src/protocol/messages/testdata/KafkaOracle.java` compiled with javac into
//! `CARGO_TARGET_TMPDIR`, once per source and class path, against kafka-clients 4.1.1 and its
//! dependencies (the jar cache of `scripts/cluster fetch`, or `KWIRE_KAFKA_JARS`) and against
//! kafka-clients 3.9.1 from the local Maven repository (`KWIRE_KAFKA_CLIENTS_39`, fetched with
//! `mvn dependency:get` if missing). Without Java or a jar the tests skip with a note, except
//! under `CI`, where they fail.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

const ORACLE_SOURCE: &str = include_str!("../../src/protocol/messages/testdata/KafkaOracle.java");

/// One kafka-clients release with the compiled helper on its class path.
pub struct Jvm {
    pub label: &'static str,
    pub classpath: String,
}

impl Jvm {
    /// Runs `KafkaOracle <args>` with `input` on stdin; returns stdout.
    pub fn run(&self, args: &[&str], input: &str) -> String {
        let mut child = Command::new("java")
            .args(["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx512m", "-cp", &self.classpath])
            .arg("KafkaOracle")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: cannot start java: {e}", self.label));
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let input = input.to_owned();
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let out = child.wait_with_output().unwrap_or_else(|e| panic!("{}: java: {e}", self.label));
        writer
            .join()
            .expect("writer thread")
            .unwrap_or_else(|e| panic!("{}: writing stdin: {e}", self.label));
        assert!(
            out.status.success(),
            "{}: KafkaOracle {args:?} failed ({}):\n{}",
            self.label,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("KafkaOracle prints UTF-8")
    }
}

/// Why the Java side is missing, or the two JVMs (4.1.1 first).
pub fn oracle() -> Option<&'static [Jvm]> {
    static ORACLE: OnceLock<Result<Vec<Jvm>, String>> = OnceLock::new();
    match ORACLE.get_or_init(set_up) {
        Ok(jvms) => Some(jvms),
        Err(why) if std::env::var_os("CI").is_some() => {
            panic!("CI is set, so the Kafka oracle must run, but: {why}")
        }
        Err(why) => {
            eprintln!("note: skipping the Kafka oracle (set CI to make this a failure): {why}");
            None
        }
    }
}

fn has(tool: &str) -> bool {
    Command::new(tool)
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("kafka-wire sits in the workspace").to_path_buf()
}

/// The directory holding kafka-clients 4.1.1 and its dependencies.
fn kafka_jars() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("KWIRE_KAFKA_JARS") {
        return Ok(PathBuf::from(dir));
    }
    let script = repo_root().join("scripts/cluster");
    let out = Command::new(&script)
        .arg("fetch")
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("{}: {e}", script.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let dir = stdout.lines().last().unwrap_or_default().trim();
    if !out.status.success() || dir.is_empty() {
        return Err(format!("`scripts/cluster fetch` failed ({})", out.status));
    }
    Ok(PathBuf::from(dir))
}

/// kafka-clients 3.9.1 from the local Maven repository, fetched there if missing.
fn kafka_clients_3_9() -> Result<PathBuf, String> {
    if let Some(jar) = std::env::var_os("KWIRE_KAFKA_CLIENTS_39") {
        return Ok(PathBuf::from(jar));
    }
    let home = std::env::var_os("HOME").ok_or("HOME is not set")?;
    let jar =
        Path::new(&home).join(".m2/repository/org/apache/kafka/kafka-clients/3.9.1/kafka-clients-3.9.1.jar");
    if !jar.is_file() && has("mvn") {
        let _ = Command::new("mvn")
            .args([
                "-q",
                "-B",
                "dependency:get",
                "-Dartifact=org.apache.kafka:kafka-clients:3.9.1",
                "-Dtransitive=false",
            ])
            .stdout(Stdio::null())
            .status();
    }
    if jar.is_file() {
        Ok(jar)
    } else {
        Err(format!(
            "{} is missing (mvn dependency:get -Dartifact=org.apache.kafka:kafka-clients:3.9.1)",
            jar.display()
        ))
    }
}

fn set_up() -> Result<Vec<Jvm>, String> {
    for tool in ["java", "javac"] {
        if !has(tool) {
            return Err(format!("`{tool}` is not on PATH"));
        }
    }
    let jars = kafka_jars()?;
    let mut listed: Vec<PathBuf> = std::fs::read_dir(&jars)
        .map_err(|e| format!("{}: {e}", jars.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jar"))
        .collect();
    listed.sort();
    if !listed.iter().any(|p| p.ends_with("kafka-clients-4.1.1.jar")) {
        return Err(format!("no kafka-clients-4.1.1.jar in {}", jars.display()));
    }
    let join = |paths: &[PathBuf]| {
        std::env::join_paths(paths).map(|p| p.to_string_lossy().into_owned()).map_err(|e| e.to_string())
    };
    // 3.9.1 with the same third-party jars (compression codecs, jackson, slf4j), none of 4.1.1's.
    let mut with_3_9 = vec![kafka_clients_3_9()?];
    with_3_9.extend(
        listed
            .iter()
            .filter(|p| {
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                !name.starts_with("kafka-") && !name.starts_with("kafka_")
            })
            .cloned(),
    );
    let mut jvms = Vec::new();
    for (label, mut cp) in [("kafka-clients 4.1.1", listed), ("kafka-clients 3.9.1", with_3_9)] {
        let classes = compile(&join(&cp)?)?;
        cp.push(classes);
        jvms.push(Jvm { label, classpath: join(&cp)? });
    }
    Ok(jvms)
}

/// Compiles the helper against `classpath` into a directory named by the hash of both, unless
/// an earlier run already did.
fn compile(classpath: &str) -> Result<PathBuf, String> {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    ORACLE_SOURCE.hash(&mut h);
    classpath.hash(&mut h);
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kafka-oracle");
    let dir = root.join(format!("{:016x}", h.finish()));
    if dir.join("KafkaOracle.class").is_file() {
        return Ok(dir);
    }
    let tmp = root.join(format!("build-{}-{:016x}", std::process::id(), h.finish()));
    std::fs::create_dir_all(tmp.join("src")).map_err(|e| e.to_string())?;
    let src = tmp.join("src/KafkaOracle.java");
    std::fs::write(&src, ORACLE_SOURCE).map_err(|e| e.to_string())?;
    let out = Command::new("javac")
        .args(["-nowarn", "-cp", classpath, "-d"])
        .arg(tmp.join("classes"))
        .arg(&src)
        .output()
        .map_err(|e| format!("javac: {e}"))?;
    if !out.status.success() {
        return Err(format!("javac failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    // Another test process may have finished first; either copy will do.
    if std::fs::rename(tmp.join("classes"), &dir).is_err() && !dir.join("KafkaOracle.class").is_file() {
        return Err(format!("cannot create {}", dir.display()));
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(dir)
}
