//! Long runs on the re-authentication listener (`KWIRE_BOOTSTRAP_REAUTH`,
//! `connections.max.reauth.ms=10000`): `kwire consume --follow` and the direct stream each read
//! for 40 s — four session lifetimes — while a producer writes on PLAINTEXT. Each renews its
//! SASL sessions in place (KIP-368: SaslHandshake again on a live connection, no new
//! connection), reports no error and misses no record.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_client::{apply_properties, Client, ClientConfig, ProduceOptions, ProduceRecord};
use kwire_stream::{DirectStream, KafkaGroupStore, StreamConfig};

use crate::support::{self, create_topic, secured, unique, Cluster};

const PARTITIONS: i32 = 3;
/// Four session lifetimes of the listener.
const RUN: Duration = Duration::from_secs(40);

/// The re-authentication listener and the SCRAM-SHA-512 admin's client file, or `None` when the
/// secured listeners are not in the environment (a failure under `KWIRE_REQUIRE_CLUSTER`).
fn reauth_listener() -> Option<(String, PathBuf)> {
    secured::setups()?;
    let var = |n: &str| std::env::var(n).ok().filter(|v| !v.trim().is_empty());
    let bootstrap = var("KWIRE_BOOTSTRAP_REAUTH");
    let file = var("KWIRE_CONFIG_SASL_PLAINTEXT");
    assert!(bootstrap.is_some() && file.is_some(), "secured setups without the REAUTH listener");
    Some((bootstrap?, file?.into()))
}

/// Writes `r<n>` round-robin over the partitions, one record every 100 ms, until `stop`; returns
/// every value written.
async fn produce_until(cluster: &Cluster, topic: &str, stop: Arc<AtomicBool>) -> BTreeSet<String> {
    let client = Client::connect(ClientConfig::new(&cluster.bootstrap).expect("bootstrap"))
        .await
        .expect("the PLAINTEXT listener");
    let mut written = BTreeSet::new();
    let mut n = 0i32;
    while !stop.load(Ordering::SeqCst) {
        let value = format!("r{n}");
        let record = ProduceRecord::new(None, Some(value.clone().into_bytes().into()));
        client
            .produce(topic, n % PARTITIONS, vec![record], &ProduceOptions::default())
            .await
            .unwrap_or_else(|e| panic!("produce {value}: {e}"));
        written.insert(value);
        n += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    written
}

/// Every `<partition>\t<offset>\t…\t<value>` line: values by partition, in printed order.
fn printed_by_partition(stdout: &str) -> BTreeMap<i32, Vec<(i64, String)>> {
    let mut out: BTreeMap<i32, Vec<(i64, String)>> = BTreeMap::new();
    for line in stdout.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(fields.len(), 6, "a record line has six fields: {line:?}");
        let partition = fields[0].parse().unwrap_or_else(|_| panic!("partition in {line:?}"));
        let offset = fields[1].parse().unwrap_or_else(|_| panic!("offset in {line:?}"));
        out.entry(partition).or_default().push((offset, fields[5].to_owned()));
    }
    out
}

#[test]
fn consume_follow_renews_its_sasl_sessions_in_place_for_40_s_and_misses_no_record() {
    let Some(cluster) = support::cluster() else { return };
    let Some((bootstrap, file)) = reauth_listener() else { return };
    let topic = unique("reauth-follow");
    create_topic(&cluster, &topic, PARTITIONS as u32, 3);
    let dir = std::env::temp_dir().join(unique("kwire-reauth-follow"));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (out_path, trace_path) = (dir.join("stdout"), dir.join("trace"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_kwire"))
        .args(["-b", &bootstrap, "--command-config"])
        .arg(&file)
        .args(["--trace", "consume", &topic, "--follow"])
        .env_remove("KWIRE_BOOTSTRAP")
        .env_remove("KWIRE_COMMAND_CONFIG")
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&trace_path).expect("trace file"))
        .spawn()
        .expect("kwire runs");
    let stop = Arc::new(AtomicBool::new(false));
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let producer = runtime.spawn({
        let (cluster, topic, stop) = (cluster.clone(), topic.clone(), Arc::clone(&stop));
        async move { produce_until(&cluster, &topic, stop).await }
    });
    std::thread::sleep(RUN);
    stop.store(true, Ordering::SeqCst);
    let written = runtime.block_on(producer).expect("the producer finished");
    // The follower is given a few seconds for the last records, then asked to stop.
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        let printed = std::fs::read_to_string(&out_path).unwrap_or_default();
        if printed.lines().count() >= written.len() {
            break;
        }
        assert!(child.try_wait().expect("status").is_none(), "kwire stopped by itself");
        std::thread::sleep(Duration::from_millis(200));
    }
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    assert!(status.is_ok_and(|s| s.success()), "kill -TERM");
    let exit = child.wait().expect("kwire exits on SIGTERM");
    let trace = std::fs::read_to_string(&trace_path).expect("trace");
    let unexpected: Vec<&str> = trace
        .lines()
        .filter(|l| {
            !(l.starts_with("-> ") || l.starts_with("<- ") || l.starts_with('{') || l.starts_with("hex: "))
        })
        .collect();
    assert!(unexpected.is_empty(), "stderr holds more than the trace: {unexpected:?}");
    assert_eq!(exit.code(), Some(0), "SIGTERM ends --follow cleanly");

    let by_partition = printed_by_partition(&std::fs::read_to_string(&out_path).expect("stdout"));
    let mut printed = BTreeSet::new();
    for (partition, records) in &by_partition {
        let offsets: Vec<i64> = records.iter().map(|(o, _)| *o).collect();
        let expected: Vec<i64> = (0..offsets.len() as i64).collect();
        assert_eq!(offsets, expected, "partition {partition}: every offset once, in order");
        printed.extend(records.iter().map(|(_, v)| v.clone()));
    }
    let missing: Vec<&String> = written.difference(&printed).collect();
    let extra: Vec<&String> = printed.difference(&written).collect();
    assert!(missing.is_empty() && extra.is_empty(), "missing {missing:?}, not written {extra:?}");

    // One ApiVersions per connection opened; every SaslHandshake beyond one per connection is a
    // renewal on a live connection. A renewal the broker leaves unanswered (its last
    // SaslAuthenticate without a response) is the one reason for another connection.
    let count = |what: &str| trace.lines().filter(|l| l.contains(what)).count();
    let connections = count(" ApiVersions v4 request");
    let handshakes = count(" SaslHandshake v1 request");
    let unanswered =
        count(" SaslAuthenticate v2 request").saturating_sub(count(" SaslAuthenticate v2 response"));
    assert!(
        connections <= 1 + PARTITIONS as usize + unanswered,
        "{connections} connections opened in 40 s, {unanswered} renewals unanswered"
    );
    assert!(
        handshakes >= connections + 4,
        "{handshakes} handshakes on {connections} connections: sessions renewed in place"
    );
}

#[test]
fn a_direct_stream_renews_its_sasl_sessions_in_place_for_40_s_and_misses_no_record() {
    let Some(cluster) = support::cluster() else { return };
    let Some((bootstrap, file)) = reauth_listener() else { return };
    let topic = unique("reauth-stream");
    let group = unique("reauth-stream-group");
    create_topic(&cluster, &topic, PARTITIONS as u32, 3);
    let mut config = ClientConfig::new(&bootstrap).expect("bootstrap");
    let text = std::fs::read_to_string(&file).expect("properties file");
    let pairs = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()));
    apply_properties(&mut config, pairs).expect("the cluster's file applies");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = Arc::new(Client::connect(config).await.expect("authenticated"));
        let store = KafkaGroupStore::new(Arc::clone(&client), Duration::from_secs(30));
        let mut stream = DirectStream::new(Arc::clone(&client), store, StreamConfig::new(&group, [&topic]))
            .expect("stream");
        let stop = Arc::new(AtomicBool::new(false));
        let mut producer = Some(tokio::spawn({
            let (cluster, topic, stop) = (cluster.clone(), topic.clone(), Arc::clone(&stop));
            async move { produce_until(&cluster, &topic, stop).await }
        }));
        let started = Instant::now();
        let mut read: Vec<String> = Vec::new();
        let mut opened_after_first_batch = None;
        let mut written = None;
        loop {
            if started.elapsed() >= RUN {
                if let Some(producer) = producer.take() {
                    stop.store(true, Ordering::SeqCst);
                    written = Some(producer.await.expect("the producer finished"));
                }
            }
            let batch = stream
                .next_batch()
                .await
                .unwrap_or_else(|e| panic!("next batch after {:?}: {e}", started.elapsed()));
            read.extend(batch.records().map(|(_, _, r)| {
                String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned()
            }));
            let idle = batch.is_idle();
            let report = stream
                .commit(&batch)
                .await
                .unwrap_or_else(|e| panic!("commit after {:?}: {e}", started.elapsed()));
            assert!(report.rejected.is_empty(), "{report:?}");
            opened_after_first_batch.get_or_insert(client.connections_opened());
            if let Some(written) = &written {
                if read.len() >= written.len() || started.elapsed() > RUN + Duration::from_secs(20) {
                    break;
                }
            }
            if idle {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        let written = written.expect("the producer ran");
        let distinct: BTreeSet<String> = read.iter().cloned().collect();
        assert_eq!(distinct.len(), read.len(), "no record delivered twice");
        assert_eq!(distinct, written, "every record written was read");
        assert_eq!(
            opened_after_first_batch.map(|n| n + client.reauthentications_abandoned()),
            Some(client.connections_opened()),
            "no connection opened after the first batch but for a renewal the broker left unanswered"
        );
        assert!(client.reauthentications() >= 4, "{} re-authentications", client.reauthentications());
    });
}
