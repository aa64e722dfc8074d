//! Differential check at the library level, with a transaction left open by the Java producer:
//! the offsets and group offsets `Client` returns equal what Kafka's own `GetOffsetShell` and
//! `kafka-consumer-groups --describe` print for the same partitions. (`tests/it/cli_offsets.rs`
//! does the same through the `kwire` binary, without transactions.)
//!
//! Both Kafka tools list offsets read_uncommitted (they build a default `ListOffsetsOptions`),
//! so they are compared with kwire's high watermark; kwire's last stable offset is compared with
//! the offsets the Java producer reports for its open transaction.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use kafka_client::{
    Client, ClientConfig, Isolation, NewTopic, OffsetQuery, OffsetToCommit, ProduceOptions, ProduceRecord,
    TopicPartition,
};

use crate::support::runtime;
use crate::support::{self, consumer_groups_describe, get_offset_shell, stdout, Cluster};

const TIMEOUT: Duration = Duration::from_secs(30);

/// The Java producer from tests/support/java/AbortedTxn.java on the cached Kafka classpath.
fn aborted_txn(
    cluster: &Cluster,
    topic: &str,
    aborted: u32,
    committed: u32,
    open: u32,
) -> std::process::Child {
    let jars = Command::new(support::repo_root().join("scripts/cluster")).arg("fetch").output().unwrap();
    assert!(jars.status.success(), "scripts/cluster fetch: {}", support::stderr(&jars));
    let jars = stdout(&jars).lines().last().unwrap_or_default().trim().to_owned();
    Command::new("java")
        .args(["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"])
        .arg(format!("{jars}/*"))
        .arg(support::repo_root().join("tests/support/java/AbortedTxn.java"))
        .args([&cluster.bootstrap, topic, "0"])
        .args([aborted, committed, open].map(|n| n.to_string()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("java runs")
}

#[test]
fn offsets_and_group_offsets_equal_kafkas_tools_while_a_transaction_is_open() {
    // Transactions on the 4.1 cluster: transaction.version must stay as scripts/cluster left it.
    let _feature = support::transaction_version::shared();
    let Some(cluster) = support::cluster() else { return };
    let rt = runtime();
    let topic = support::unique("differential");
    let group = support::unique("differential-group");
    let tps = [TopicPartition::new(topic.as_str(), 0), TopicPartition::new(topic.as_str(), 1)];
    let client = rt.block_on(async {
        let client = Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap();
        let created = client.create_topics(&[NewTopic::new(&topic, 2, 3)], TIMEOUT).await;
        created[&topic].as_ref().unwrap();
        let records =
            (0..4).map(|i| ProduceRecord::new(None, Some(Bytes::from(format!("plain-{i}"))))).collect();
        client.produce(&topic, 1, records, &ProduceOptions::default()).await.unwrap();
        client
    });

    // Partition 0: 2 aborted, 3 committed, then 2 in a transaction left open.
    let mut java = aborted_txn(&cluster, &topic, 2, 3, 2);
    let mut lines = BufReader::new(java.stdout.take().unwrap()).lines();
    let mut first_open = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if line == "ready" {
            break;
        }
        if let Some(rest) = line.strip_prefix("open ") {
            first_open = first_open.or_else(|| rest.split(' ').next().and_then(|o| o.parse::<i64>().ok()));
        }
    }
    let first_open = first_open.expect("the Java producer wrote the open transaction");

    let (ranges, latest, max_ts, committed) = rt.block_on(async {
        let commits: Vec<OffsetToCommit> = [(0, 3), (1, 2)]
            .into_iter()
            .map(|(p, offset)| OffsetToCommit {
                tp: tps[p].clone(),
                offset,
                leader_epoch: None,
                metadata: Some("differential".to_owned()),
            })
            .collect();
        let results = client.commit_offsets(&group, &commits, TIMEOUT).await.unwrap();
        assert!(results.values().all(Result::is_ok), "{results:?}");
        let ranges = client.log_ranges(&tps, TIMEOUT).await;
        let latest =
            client.list_offsets(&tps, OffsetQuery::Latest, Isolation::ReadUncommitted, TIMEOUT).await;
        let max_ts =
            client.list_offsets(&tps, OffsetQuery::MaxTimestamp, Isolation::ReadUncommitted, TIMEOUT).await;
        let committed = client
            .committed_offsets(&group, Some(std::slice::from_ref(&topic)), TIMEOUT)
            .await
            .unwrap()
            .complete()
            .unwrap();
        (ranges, latest, max_ts, committed)
    });

    let shell_latest = get_offset_shell(&cluster, &topic, "-1");
    let shell_earliest = get_offset_shell(&cluster, &topic, "-2");
    let shell_max_ts = get_offset_shell(&cluster, &topic, "-3");
    let described = consumer_groups_describe(&cluster, &group, &topic);
    drop(java.stdin.take());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(java.wait().unwrap().success(), "{rest:?}");

    assert_eq!(shell_latest.len(), 2, "{shell_latest:?}");
    assert_eq!(described.len(), 2, "{described:?}");
    for tp in &tps {
        let p = tp.partition;
        let range = ranges[tp].as_ref().unwrap();
        assert_eq!(range.high_watermark, shell_latest[&p], "{tp} high watermark");
        assert_eq!(latest[tp].as_ref().unwrap().offset, Some(shell_latest[&p]), "{tp} latest");
        assert_eq!(range.log_start, shell_earliest[&p], "{tp} log start");
        assert_eq!(max_ts[tp].as_ref().unwrap().offset, Some(shell_max_ts[&p]), "{tp} max timestamp");
        assert_eq!(Some(committed[tp].offset), described.get(&p).map(|d| d.0), "{tp} committed");
        assert_eq!(Some(range.high_watermark), described.get(&p).map(|d| d.1), "{tp} log end");
    }
    // The last stable offset: at the open transaction's first record on partition 0, and at the
    // high watermark where no transaction is open.
    let p0 = ranges[&tps[0]].as_ref().unwrap();
    assert_eq!(p0.last_stable, first_open);
    assert!(p0.last_stable < p0.high_watermark, "{p0:?}");
    let p1 = ranges[&tps[1]].as_ref().unwrap();
    assert_eq!((p1.last_stable, p1.high_watermark), (4, 4));
}
