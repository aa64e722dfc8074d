//! Test support: finding the cluster, running `kwire` and Kafka's own tools, unique names.

#![allow(dead_code)]

pub mod exporter;
pub mod java;
pub mod kwire_proxy;
pub mod leaders;
pub mod produced;
pub mod proxy;
pub mod secured;
pub mod traffic;
pub mod transaction_version;

use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Addresses of the running local cluster.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// `host:port,host:port,host:port`.
    pub bootstrap: String,
    /// `host:port`.
    pub zookeeper: Option<String>,
}

impl Cluster {
    pub fn brokers(&self) -> Vec<String> {
        self.bootstrap.split(',').map(str::to_owned).collect()
    }
}

fn required() -> bool {
    ["CI", "KWIRE_REQUIRE_CLUSTER"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|s| !s.is_empty() && s != "false"))
}

/// The cluster to test against, or `None` (with a note) when none is configured outside CI.
/// In CI a missing or unreachable cluster panics: a skipped integration test is a failure there.
pub fn cluster() -> Option<Cluster> {
    let Ok(bootstrap) = std::env::var("KWIRE_BOOTSTRAP") else {
        assert!(
            !required(),
            "KWIRE_BOOTSTRAP is not set, and CI requires the cluster (run scripts/cluster up)"
        );
        eprintln!("note: KWIRE_BOOTSTRAP not set; skipping (run `eval \"$(scripts/cluster env --export)\"`)");
        return None;
    };
    let first = bootstrap.split(',').next().unwrap_or_default().to_owned();
    let reachable = first
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .is_some_and(|a| TcpStream::connect_timeout(&a, Duration::from_secs(3)).is_ok());
    if !reachable {
        assert!(!required(), "the cluster at {bootstrap} is not reachable, and CI requires it");
        eprintln!("note: cluster at {bootstrap} not reachable; skipping");
        return None;
    }
    Some(Cluster { bootstrap, zookeeper: std::env::var("KWIRE_ZOOKEEPER").ok() })
}

/// The Kafka 3.9 broker (`scripts/old-broker up`; `KWIRE_OLD_BOOTSTRAP`), for version
/// negotiation tests, or `None` (with a note) outside CI. In CI a missing or unreachable one
/// panics, as for [`cluster`].
pub fn old_broker() -> Option<String> {
    let Ok(addr) = std::env::var("KWIRE_OLD_BOOTSTRAP") else {
        assert!(
            !required(),
            "KWIRE_OLD_BOOTSTRAP is not set, and CI requires it (run scripts/old-broker up)"
        );
        eprintln!(
            "note: KWIRE_OLD_BOOTSTRAP not set; skipping (run `eval \"$(scripts/old-broker env --export)\"`)"
        );
        return None;
    };
    let reachable = addr
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .is_some_and(|a| TcpStream::connect_timeout(&a, Duration::from_secs(3)).is_ok());
    if !reachable {
        assert!(!required(), "the Kafka 3.9 broker at {addr} is not reachable, and CI requires it");
        eprintln!("note: Kafka 3.9 broker at {addr} not reachable; skipping");
        return None;
    }
    Some(addr)
}

/// The cluster ZooKeeper's digest credentials (`KWIRE_ZOOKEEPER_AUTH`, `digest:USER:PASSWORD`),
/// or `None` (with a note) outside CI; in CI a missing value panics.
pub fn zookeeper_auth() -> Option<String> {
    match std::env::var("KWIRE_ZOOKEEPER_AUTH") {
        Ok(v) if !v.trim().is_empty() => Some(v),
        _ => {
            assert!(!required(), "KWIRE_ZOOKEEPER_AUTH is not set, and CI requires it (scripts/cluster env)");
            eprintln!("note: KWIRE_ZOOKEEPER_AUTH not set; skipping");
            None
        }
    }
}

/// The environment variable `name` (from `scripts/cluster env`), or `None` (with a note) when
/// it is unset outside CI; with `CI` / `KWIRE_REQUIRE_CLUSTER` a missing value panics.
pub fn required_var(name: &str) -> Option<String> {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => Some(v),
        _ => {
            assert!(!required(), "{name} is not set, and CI requires it (scripts/cluster env)");
            eprintln!("note: {name} not set; skipping");
            None
        }
    }
}

/// A name no other test (or earlier run) uses.
pub fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    format!("{prefix}-{}-{}-{nanos:x}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `scripts/spark env`'s variables (`KWIRE_SPARK_PYTHON`, `KWIRE_SPARK_JARS`, ...) for the
/// real-Spark tests, or `None` (after a note) when Spark is not installed and nothing requires
/// it. Also builds the Python package their driver (examples/pyspark/batch_loop.py) imports.
pub fn spark_env() -> Option<std::collections::BTreeMap<String, String>> {
    spark_env_of("4")
}

/// [`spark_env`] for one of the pinned Sparks (`scripts/spark`'s `KWIRE_SPARK_VERSION`: `4`
/// or `3.5`).
pub fn spark_env_of(version: &str) -> Option<std::collections::BTreeMap<String, String>> {
    let env = Command::new(repo_root().join("scripts/spark"))
        .arg("env")
        .env("KWIRE_SPARK_VERSION", version)
        .output()
        .expect("scripts/spark runs");
    if !env.status.success() {
        assert!(
            !required(),
            "Spark {version} is not installed, and CI requires it (run KWIRE_SPARK_VERSION={version} scripts/spark install)"
        );
        eprintln!("note: Spark {version} not installed; skipping (KWIRE_SPARK_VERSION={version} scripts/spark install)");
        return None;
    }
    build_python_package();
    Some(
        stdout(&env)
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
            .collect(),
    )
}

/// Builds the Python package from this checkout once per test run (`scripts/python-test
/// --build-only`), so it is the code under test, imported from python/: every caller waits for
/// the one build, so no two builds race in its virtualenv.
fn build_python_package() {
    static BUILT: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let mut build = Command::new(repo_root().join("scripts/python-test"));
        build.arg("--build-only");
        let build = without_cargo_test_env(&mut build)
            .output()
            .map_err(|e| format!("scripts/python-test does not run: {e}"))?;
        if build.status.success() {
            Ok(())
        } else {
            Err(format!("{}{}", stdout(&build), stderr(&build)))
        }
    });
    if let Err(output) = built {
        panic!("building the Python package failed (scripts/python-test --build-only):\n{output}");
    }
}

/// `command` without the variables cargo sets for a test (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`,
/// ...), for a command that runs cargo itself (maturin's build). A build script that reruns when
/// one of them changes (ring's does, on `CARGO_MANIFEST_DIR`) would otherwise record the test's
/// value, and the next `cargo test` of scripts/test, which has none, would run it again and
/// rebuild ring and everything above it, replacing `target/debug/kwire` while other tests spawn it.
fn without_cargo_test_env(command: &mut Command) -> &mut Command {
    const SET_FOR_TESTS: [&str; 8] = [
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_MANIFEST_LINKS",
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
    ];
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if SET_FOR_TESTS.contains(&name.as_ref())
            || name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_BIN_EXE_")
        {
            command.env_remove(name.as_ref());
        }
    }
    command
}

/// Runs the `kwire` binary with `args` against `cluster`.
pub fn kwire(cluster: &Cluster, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kwire"))
        .args(args)
        .env("KWIRE_BOOTSTRAP", &cluster.bootstrap)
        .env("KWIRE_ZOOKEEPER", cluster.zookeeper.as_deref().unwrap_or(""))
        // Credentials only where a test passes them (scripts/test exports the cluster's).
        .env_remove("KWIRE_ZOOKEEPER_AUTH")
        .output()
        .expect("kwire binary runs")
}

/// Runs `kwire` with no cluster in the environment.
pub fn kwire_bare(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kwire"))
        .args(args)
        .env_remove("KWIRE_BOOTSTRAP")
        .env_remove("KWIRE_ZOOKEEPER")
        .env_remove("KWIRE_ZOOKEEPER_AUTH")
        .output()
        .expect("kwire binary runs")
}

/// Runs `command` with its output captured and `stdin` written to it, then closed (closed at
/// once when `None`).
pub fn output_with_stdin(command: &mut Command, stdin: Option<&str>) -> Output {
    let child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the command runs");
    wait_with_stdin(child, stdin.unwrap_or_default())
}

/// Writes `text` to a spawned child's piped stdin, closes it and waits for its output.
pub fn wait_with_stdin(mut child: std::process::Child, text: &str) -> Output {
    use std::io::Write as _;
    let mut pipe = child.stdin.take().expect("stdin is piped");
    pipe.write_all(text.as_bytes()).expect("the command reads stdin");
    drop(pipe);
    child.wait_with_output().expect("the command runs")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The message a panicking thread gave (`panic!` with a format string gives a `String`, with a
/// literal a `&str`), from the payload `JoinHandle::join` returns; `(no message)` for any other.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "(no message)".to_owned())
}

/// Parses stdout as one JSON document, with the command's stderr in the panic message.
pub fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "kwire failed ({:?}): {}", out.status.code(), stderr(out));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", stdout(out)))
}

/// Runs a Kafka or ZooKeeper Java tool (`scripts/cluster tool CLASS ARGS...`), which must
/// succeed.
pub fn kafka_tool(class: &str, args: &[&str]) -> Output {
    let out = try_kafka_tool(class, args);
    assert!(out.status.success(), "{class} failed: {}{}", stdout(&out), stderr(&out));
    out
}

/// Runs a Kafka or ZooKeeper Java tool, whatever its exit status.
pub fn try_kafka_tool(class: &str, args: &[&str]) -> Output {
    Command::new(repo_root().join("scripts/cluster"))
        .arg("tool")
        .arg(class)
        .args(args)
        .output()
        .expect("scripts/cluster runs")
}

/// Creates a topic with Kafka's own TopicCommand.
pub fn create_topic(cluster: &Cluster, topic: &str, partitions: u32, replication: u32) {
    let out = try_create_topic(cluster, topic, partitions, replication);
    assert!(out.status.success(), "TopicCommand failed: {}{}", stdout(&out), stderr(&out));
}

/// Runs TopicCommand --create, whatever its exit status (a caller may retry).
pub fn try_create_topic(cluster: &Cluster, topic: &str, partitions: u32, replication: u32) -> Output {
    try_kafka_tool(
        "org.apache.kafka.tools.TopicCommand",
        &[
            "--bootstrap-server",
            &cluster.bootstrap,
            "--create",
            "--topic",
            topic,
            "--partitions",
            &partitions.to_string(),
            "--replication-factor",
            &replication.to_string(),
        ],
    )
}

/// Writes `records` records of `record_size` bytes to `topic` with Kafka's own producer
/// (ProducerPerformance, acks=all), spread round robin over the partitions.
pub fn produce_with_kafka(cluster: &Cluster, topic: &str, records: u32, record_size: u32) {
    kafka_tool(
        "org.apache.kafka.tools.ProducerPerformance",
        &[
            "--topic",
            topic,
            "--num-records",
            &records.to_string(),
            "--record-size",
            &record_size.to_string(),
            "--throughput",
            "-1",
            "--producer-props",
            &format!("bootstrap.servers={}", cluster.bootstrap),
            "acks=all",
            "partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner",
        ],
    );
}

/// `partition -> offset` as Kafka's GetOffsetShell prints them at `time` (-1 latest,
/// -2 earliest, -3 max timestamp, or milliseconds).
pub fn get_offset_shell(cluster: &Cluster, topic: &str, time: &str) -> std::collections::BTreeMap<i32, i64> {
    let out = kafka_tool(
        "org.apache.kafka.tools.GetOffsetShell",
        &["--bootstrap-server", &cluster.bootstrap, "--topic", topic, "--time", time],
    );
    parse_get_offset_shell(&stdout(&out))
}

/// GetOffsetShell's `TOPIC:PARTITION:OFFSET` lines as `partition -> offset` (the same in every
/// Kafka release); other lines are skipped.
pub fn parse_get_offset_shell<P: std::str::FromStr + Ord>(text: &str) -> std::collections::BTreeMap<P, i64> {
    text.lines()
        .filter_map(|l| {
            let mut parts = l.rsplitn(3, ':');
            let offset = parts.next()?.parse().ok()?;
            let partition = parts.next()?.parse().ok()?;
            Some((partition, offset))
        })
        .collect()
}

/// Deletes `topic` with TopicCommand and waits until kwire no longer finds it.
pub fn delete_topic_and_wait(cluster: &Cluster, topic: &str) {
    kafka_tool(
        "org.apache.kafka.tools.TopicCommand",
        &["--bootstrap-server", &cluster.bootstrap, "--delete", "--topic", topic],
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while kwire(cluster, &["metadata", topic]).status.code() != Some(4) {
        assert!(Instant::now() < deadline, "topic {topic} still exists after 60 s");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Creates `topic` (replication 3), retrying while the brokers still remove a deleted one.
pub fn create_topic_retrying(cluster: &Cluster, topic: &str, partitions: u32) {
    // Right after a delete, the brokers may still be removing the old log.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = try_create_topic(cluster, topic, partitions, 3);
        if out.status.success() {
            return;
        }
        assert!(Instant::now() < deadline, "cannot recreate {topic}: {}", stderr(&out));
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// kafka-consumer-groups --describe's rows for `topic`: partition → the columns after it
/// (CURRENT-OFFSET, LOG-END-OFFSET, LAG, CONSUMER-ID, HOST, CLIENT-ID; `-` where there is none).
fn consumer_groups_rows(
    cluster: &Cluster,
    group: &str,
    topic: &str,
) -> std::collections::BTreeMap<i32, Vec<String>> {
    let out = kafka_tool(
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        &["--bootstrap-server", &cluster.bootstrap, "--describe", "--group", group],
    );
    stdout(&out)
        .lines()
        .filter_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() < 6 || cols[1] != topic {
                return None;
            }
            Some((cols[2].parse().ok()?, cols[3..].iter().map(|c| (*c).to_owned()).collect()))
        })
        .collect()
}

/// `partition -> (CURRENT-OFFSET, LOG-END-OFFSET)` from kafka-consumer-groups --describe.
pub fn consumer_groups_describe(
    cluster: &Cluster,
    group: &str,
    topic: &str,
) -> std::collections::BTreeMap<i32, (i64, i64)> {
    consumer_groups_rows(cluster, group, topic)
        .into_iter()
        .filter_map(|(partition, cols)| Some((partition, (cols[0].parse().ok()?, cols[1].parse().ok()?))))
        .collect()
}

/// `partition -> CONSUMER-ID` from kafka-consumer-groups --describe: the owner of each owned
/// partition of `topic`.
pub fn group_owners(cluster: &Cluster, group: &str, topic: &str) -> std::collections::BTreeMap<i32, String> {
    consumer_groups_rows(cluster, group, topic)
        .into_iter()
        .filter_map(|(partition, cols)| Some((partition, cols.get(3).filter(|id| *id != "-")?.clone())))
        .collect()
}

/// A Kafka console consumer (`ConsoleConsumer`) running in `group` on `topic` until dropped,
/// on the classic protocol or the consumer protocol of KIP-848 (`group.protocol=consumer`), or
/// a share consumer (`ConsoleShareConsumer`, KIP-932) in share group `group`.
/// Dropping it stops it with SIGTERM, so it leaves the group the way a consumer shut down
/// cleanly does, and waits for it to exit (SIGKILL after 30 s).
pub struct ConsoleConsumer {
    child: std::process::Child,
}

impl ConsoleConsumer {
    /// Starts the consumer; `protocol` is `classic`, `consumer` or `share`.
    pub fn start(cluster: &Cluster, topic: &str, group: &str, protocol: &str) -> Self {
        let mut command = Command::new(repo_root().join("scripts/cluster"));
        if protocol == "share" {
            command.args(["tool", "org.apache.kafka.tools.consumer.ConsoleShareConsumer"]);
        } else {
            command.args(["tool", "org.apache.kafka.tools.consumer.ConsoleConsumer"]);
            command.args(["--consumer-property", &format!("group.protocol={protocol}")]);
        }
        let child = command
            .args(["--bootstrap-server", &cluster.bootstrap, "--topic", topic, "--group", group])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("scripts/cluster tool runs");
        Self { child }
    }

    /// Stops the consumer (SIGTERM, then SIGKILL after 30 s) and waits for it.
    pub fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        // `scripts/cluster tool` execs java, so this pid is the JVM's.
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ConsoleConsumer {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// A one-thread runtime for the library-client tests: a task runs only when the test's own
/// future yields, so what it finds waiting does not depend on the machine's load.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// A two-worker runtime for the library-client tests whose producer runs tasks of its own.
pub fn multi_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// A new topic (`prefix`, unique; replication 1) once metadata shows every partition with a
/// leader: a producer asks for the partition count right away.
pub async fn new_topic_with_leaders(client: &kafka_client::Client, prefix: &str, partitions: i32) -> String {
    let topic = unique(prefix);
    let timeout = Duration::from_secs(60);
    let created = client.create_topics(&[kafka_client::NewTopic::new(&topic, partitions, 1)], timeout).await;
    created[&topic].as_ref().unwrap();
    for _ in 0..50 {
        let m = client.refresh_metadata(std::slice::from_ref(&topic)).await.unwrap();
        if m.topic(&topic).is_some_and(|t| {
            t.partitions.len() == partitions as usize && t.partitions.iter().all(|p| p.leader.is_some())
        }) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    topic
}
