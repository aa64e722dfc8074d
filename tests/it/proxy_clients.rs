//! Real clients through `kwire proxy`: Kafka's own Java tools, kcat and kwire itself work
//! unchanged, every one of their connections stays on the proxy (the brokers are announced at
//! the proxy's listeners), and every frame is paired with no unmatched response and no notice.
//!
//! Decoding: frames of the APIs kwire types today (`supported_apis()`, 31 of them) must all
//! decode; the others print as "undecodable frame: api key N, M bytes" until the schema-driven
//! codec lands (issue 13 point 1), so for them only the pairing is asserted.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::process::{Command, Output, Stdio};

use kafka_wire::protocol::registry::supported_apis;

use crate::support::kwire_proxy::{KwireProxy, ProxyRun};
use crate::support::{self, create_topic, repo_root, stderr, stdout, try_kafka_tool, unique, Cluster};

/// A Java tool with `input` on its stdin.
fn kafka_tool_stdin(class: &str, args: &[&str], input: &str) -> Output {
    let mut child = Command::new(repo_root().join("scripts/cluster"))
        .arg("tool")
        .arg(class)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("scripts/cluster runs");
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("stdin written");
    child.wait_with_output().expect("tool ran")
}

fn ok(what: &str, out: &Output) -> String {
    assert!(out.status.success(), "{what} failed: {}{}", stdout(out), stderr(out));
    stdout(out)
}

/// The run's invariants: no notice (no unmatched response, no failed rewrite, no frame that
/// was not Kafka), every Metadata response names only the proxy's listeners, every frame of an
/// API kwire types decoded. Returns the API keys seen.
fn assert_clean(run: &ProxyRun, listener_ports: &[u16]) -> BTreeSet<i64> {
    assert!(run.notices().is_empty(), "notices: {:?}", run.notices());
    assert!(!run.pairs().is_empty(), "no pairs: {}", run.stderr);
    let announced = run.announced_ports();
    assert!(!announced.is_empty(), "no Metadata response decoded");
    for port in announced {
        assert!(
            listener_ports.iter().any(|p| i64::from(*p) == port),
            "a Metadata response names port {port}, not a proxy listener ({listener_ports:?})"
        );
    }
    let typed: BTreeSet<i64> = supported_apis().iter().map(|s| i64::from(s.key.0)).collect();
    let typed_undecodable: Vec<i64> = run.undecodable().into_iter().filter(|k| typed.contains(k)).collect();
    assert!(typed_undecodable.is_empty(), "frames of APIs kwire types did not decode: {typed_undecodable:?}");
    for pair in run.pairs() {
        // A request without a response is one still in flight when its connection closed
        // (a fetch or heartbeat when the client shut down), or a Produce with acks 0.
        if pair["response"].is_null() {
            assert!(
                [0, 1, 12, 68].contains(&pair["api_key"].as_i64().unwrap_or(-1)),
                "a request without a response: {pair}"
            );
        }
    }
    run.api_keys()
}

#[test]
fn java_clients_work_unchanged_through_the_proxy_and_every_frame_is_paired() {
    // Transactions on the 4.1 cluster: transaction.version must stay as scripts/cluster left it.
    let _feature = support::transaction_version::shared();
    let Some(cluster) = support::cluster() else { return };
    let proxy = KwireProxy::start(&cluster, &[]);
    let via = proxy.bootstrap.clone();
    let topic = unique("proxy-java");
    let topics = "org.apache.kafka.tools.TopicCommand";
    ok(
        "kafka-topics --create",
        &try_kafka_tool(
            topics,
            &[
                "--bootstrap-server",
                &via,
                "--create",
                "--topic",
                &topic,
                "--partitions",
                "3",
                "--replication-factor",
                "2",
            ],
        ),
    );
    let described = ok(
        "kafka-topics --describe",
        &try_kafka_tool(topics, &["--bootstrap-server", &via, "--describe", "--topic", &topic]),
    );
    assert!(described.contains("PartitionCount: 3"), "{described}");

    let lines = (0..30).map(|i| format!("record-{i}\n")).collect::<Vec<_>>().concat();
    ok(
        "kafka-console-producer",
        &kafka_tool_stdin(
            "org.apache.kafka.tools.ConsoleProducer",
            &["--bootstrap-server", &via, "--topic", &topic],
            &lines,
        ),
    );
    for protocol in ["classic", "consumer"] {
        let group = unique(&format!("proxy-java-{protocol}"));
        let consumed = ok(
            &format!("kafka-console-consumer (group.protocol={protocol})"),
            &try_kafka_tool(
                "org.apache.kafka.tools.consumer.ConsoleConsumer",
                &[
                    "--bootstrap-server",
                    &via,
                    "--topic",
                    &topic,
                    "--group",
                    &group,
                    "--from-beginning",
                    "--max-messages",
                    "30",
                    "--timeout-ms",
                    "60000",
                    "--consumer-property",
                    &format!("group.protocol={protocol}"),
                ],
            ),
        );
        assert_eq!(consumed.lines().filter(|l| l.starts_with("record-")).count(), 30, "{consumed}");
        let groups = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand";
        let described = ok(
            "kafka-consumer-groups --describe",
            &try_kafka_tool(groups, &["--bootstrap-server", &via, "--describe", "--group", &group]),
        );
        assert!(described.contains(&topic), "{described}");
        let reset = ok(
            "kafka-consumer-groups --reset-offsets",
            &try_kafka_tool(
                groups,
                &[
                    "--bootstrap-server",
                    &via,
                    "--reset-offsets",
                    "--group",
                    &group,
                    "--topic",
                    &topic,
                    "--to-earliest",
                    "--execute",
                ],
            ),
        );
        assert!(reset.contains(&topic), "{reset}");
    }
    ok(
        "transactional ProducerPerformance",
        &try_kafka_tool(
            "org.apache.kafka.tools.ProducerPerformance",
            &[
                "--topic",
                &topic,
                "--num-records",
                "200",
                "--record-size",
                "20",
                "--throughput",
                "-1",
                "--transactional-id",
                &unique("proxy-tx"),
                "--transaction-duration-ms",
                "100",
                "--producer-props",
                &format!("bootstrap.servers={via}"),
            ],
        ),
    );
    // Every record arrived: read directly from the cluster (30 + 200, plus transaction markers).
    let direct = Command::new("kcat")
        .args(["-C", "-b", &cluster.bootstrap, "-t", &topic, "-o", "beginning", "-e", "-q", "-f", "%o\n"])
        .output()
        .expect("kcat runs");
    assert_eq!(ok("kcat -C (direct)", &direct).lines().count(), 230);

    let ports = proxy.listener_ports();
    let run = proxy.stop();
    let apis = assert_clean(&run, &ports);
    // Metadata, CreateTopics, Produce, InitProducerId, Fetch, FindCoordinator, JoinGroup,
    // SyncGroup (classic), ConsumerGroupHeartbeat (consumer protocol), OffsetCommit, EndTxn.
    // (No AddPartitionsToTxn: Kafka 4's transactions v2 add partitions with the Produce.)
    for key in [3, 19, 0, 22, 1, 10, 11, 14, 68, 8, 26] {
        assert!(apis.contains(&key), "API key {key} not seen through the proxy: {apis:?}");
    }
}

#[test]
fn kcat_and_kwire_work_through_the_proxy() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("proxy-kcat");
    create_topic(&cluster, &topic, 2, 1);
    let proxy = KwireProxy::start(&cluster, &[]);
    let via = proxy.bootstrap.clone();
    let mut child = Command::new("kcat")
        .args(["-P", "-b", &via, "-t", &topic])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kcat runs");
    let lines = (0..50).map(|i| format!("kcat-{i}\n")).collect::<Vec<_>>().concat();
    child.stdin.take().unwrap().write_all(lines.as_bytes()).unwrap();
    ok("kcat -P", &child.wait_with_output().unwrap());
    let consumed = Command::new("kcat")
        .args(["-C", "-b", &via, "-t", &topic, "-o", "beginning", "-e", "-q"])
        .output()
        .unwrap();
    assert_eq!(ok("kcat -C", &consumed).lines().filter(|l| l.starts_with("kcat-")).count(), 50);

    let via_cluster = Cluster { bootstrap: via.clone(), zookeeper: None };
    let offsets = support::kwire(&via_cluster, &["offsets", &topic, "--format", "json"]);
    let doc = support::json(&offsets);
    let total: i64 = doc.to_string().matches("\"high_watermark\":").count() as i64;
    assert!(total >= 2, "{doc}");
    let records =
        support::kwire(&via_cluster, &["consume", &topic, "--from", "earliest", "--format", "json"]);
    assert!(records.status.success(), "{}", stderr(&records));
    assert_eq!(stdout(&records).matches("\"value\":\"kcat-").count(), 50, "{}", stdout(&records));

    let ports = proxy.listener_ports();
    let run = proxy.stop();
    let apis = assert_clean(&run, &ports);
    for key in [18, 3, 0, 1, 2] {
        assert!(apis.contains(&key), "API key {key} not seen: {apis:?}");
    }
    // kcat (librdkafka) and kwire both pass their client ids through.
    let client_ids: BTreeSet<&str> = run.pairs().iter().filter_map(|p| p["client_id"].as_str()).collect();
    assert!(client_ids.contains("rdkafka"), "{client_ids:?}");
    assert!(client_ids.iter().any(|c| c.starts_with("kwire")), "{client_ids:?}");
}
