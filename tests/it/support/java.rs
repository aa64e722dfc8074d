//! Single-file Java programs from tests/support/java, run on the cached Kafka classpath.

use std::path::PathBuf;
use std::process::Command;

/// The Kafka jars directory (`scripts/cluster fetch` prints it).
fn kafka_jars() -> String {
    let out = Command::new(super::repo_root().join("scripts/cluster"))
        .arg("fetch")
        .output()
        .expect("scripts/cluster runs");
    assert!(out.status.success(), "scripts/cluster fetch: {}", super::stderr(&out));
    super::stdout(&out).lines().last().unwrap_or_default().trim().to_owned()
}

fn source(file: &str) -> PathBuf {
    super::repo_root().join("tests/support/java").join(file)
}

/// `java` running a single-file program from tests/support/java on the Kafka classpath.
pub fn command(file: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new("java");
    cmd.args(["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"])
        .arg(format!("{}/*", kafka_jars()))
        .arg(source(file))
        .args(args);
    cmd
}

/// Runs the program to its end, which must succeed; its standard output.
pub fn run(file: &str, args: &[String]) -> String {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = command(file, &args).output().expect("java runs");
    assert!(out.status.success(), "{file} failed: {}", super::stderr(&out));
    super::stdout(&out)
}
