//! Transactions of the [`Producer`] against the real brokers, each test on both protocols: the
//! Kafka 4.1 cluster finalizes `transaction.version` 2 (KIP-890: the brokers add partitions
//! and groups, every EndTxn bumps the epoch), the Kafka 3.9 broker speaks version 1 only (the
//! client adds them with AddPartitionsToTxn / AddOffsetsToTxn). A committed transaction is
//! read by Kafka's read_committed consumer and by kcat with `isolation.level=read_committed`,
//! an aborted one is not (though its records are in the log); offsets sent to a transaction
//! become the group's only when it commits; a second producer with the same transactional id
//! fences the first, which gets [`TransactionError::Fenced`] and whose late writes are
//! refused; the requests each protocol sends (traced) are checked, and so is the epoch each
//! EndTxn leaves the producer with.

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::{Arc, Mutex, RwLockReadGuard};
use std::time::Duration;

use bytes::Bytes;
use kafka_client::{
    BrokerRef, Client, ClientConfig, ClientError, Direction, OffsetToCommit, ProduceRecord, Producer,
    ProducerConfig, TopicPartition, TransactionError,
};
use kafka_wire::protocol::frame::{decode_request, decode_response};
use kafka_wire::protocol::messages::{
    AddPartitionsToTxnRequest, EndTxnRequest, PartitionProduceData, ProduceRequest, TopicProduceData,
};
use kafka_wire::protocol::records::{Compression, Record, RecordBatch};
use kafka_wire::protocol::{ApiKey, ErrorCode};

use crate::support;

const TIMEOUT: Duration = Duration::from_secs(60);

fn transactional(client: &Arc<Client>, id: &str) -> Producer {
    let config = ProducerConfig { transactional_id: Some(id.to_owned()), ..ProducerConfig::default() };
    Producer::new(Arc::clone(client), config).unwrap()
}

async fn send_values(producer: &Producer, topic: &str, prefix: &str, n: usize) -> Result<(), ClientError> {
    for i in 0..n {
        let record = ProduceRecord::new(
            Some(Bytes::from(format!("k{i}"))),
            Some(Bytes::from(format!("{prefix}-{i}"))),
        );
        producer.send(topic, record).await?;
    }
    Ok(())
}

fn offset(tp: &TopicPartition, offset: i64) -> OffsetToCommit {
    OffsetToCommit { tp: tp.clone(), offset, leader_epoch: None, metadata: None }
}

fn values(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

/// The values Kafka's console consumer reads with read_committed (stopping after `expect`
/// records or 20 s of silence).
fn java_read_committed(cluster: &support::Cluster, topic: &str, expect: usize) -> Vec<String> {
    let out = support::kafka_tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        &[
            "--bootstrap-server",
            &cluster.bootstrap,
            "--topic",
            topic,
            "--from-beginning",
            "--max-messages",
            &(expect + 1).to_string(),
            "--timeout-ms",
            "20000",
            "--isolation-level",
            "read_committed",
        ],
    );
    let mut read: Vec<String> = support::stdout(&out).lines().map(str::to_owned).collect();
    read.sort();
    read
}

/// Asserts that the Java read_committed consumer, and kcat at each of `kcat_isolations`, read
/// exactly `expected` (in any order) from `topic`.
fn assert_read_exactly(
    cluster: &support::Cluster,
    topic: &str,
    mut expected: Vec<String>,
    kcat_isolations: &[&str],
) {
    expected.sort();
    assert_eq!(java_read_committed(cluster, topic, expected.len()), expected, "the Java consumer's reading");
    for isolation in kcat_isolations {
        if let Some(read) = kcat_read(cluster, topic, isolation) {
            assert_eq!(read, expected, "kcat's {isolation} reading");
        }
    }
}

/// The values kcat reads at `isolation` to the end of the log.
fn kcat_read(cluster: &support::Cluster, topic: &str, isolation: &str) -> Option<Vec<String>> {
    let level = format!("isolation.level={isolation}");
    match Command::new("kcat")
        .args(["-b", &cluster.bootstrap, "-C", "-t", topic, "-e", "-q", "-X", &level, "-f", "%s\n"])
        .output()
    {
        Ok(out) => {
            assert!(out.status.success(), "kcat failed: {}", support::stderr(&out));
            let mut read: Vec<String> = support::stdout(&out).lines().map(str::to_owned).collect();
            read.sort();
            Some(read)
        }
        Err(e) => {
            assert!(std::env::var("CI").is_err(), "kcat is required in CI: {e}");
            None
        }
    }
}

/// The brokers each test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// The Kafka 4.1 cluster: `transaction.version` 2 finalized.
    Kafka41,
    /// The Kafka 3.9 broker: transactions version 1 only.
    Kafka39,
}

/// `target`'s cluster, with the shared hold on the 4.1 cluster's `transaction.version` (see
/// [`support::transaction_version`]) for as long as the test keeps it.
fn cluster_of(target: Target) -> Option<(support::Cluster, RwLockReadGuard<'static, ()>)> {
    let cluster = match target {
        Target::Kafka41 => support::cluster(),
        Target::Kafka39 => {
            support::old_broker().map(|bootstrap| support::Cluster { bootstrap, zookeeper: None })
        }
    }?;
    Some((cluster, support::transaction_version::shared()))
}

/// What a client sent, from its trace hook: each request's API and version, each AddPartitionsToTxn's
/// partitions, and each EndTxn answer's producer id and epoch (`None` before v5).
#[derive(Debug, Default)]
struct Seen {
    requests: Vec<(ApiKey, i16)>,
    added: Vec<AddedPartitions>,
    end_txn_answers: Vec<(Option<i64>, Option<i16>)>,
    /// The broker the last InitProducerId went to: the transaction coordinator.
    init_producer_id_broker: Option<String>,
}

/// The (topic, partition) pairs of one AddPartitionsToTxn request.
type AddedPartitions = BTreeSet<(String, i32)>;

impl Seen {
    fn count(&self, api: ApiKey) -> usize {
        self.requests.iter().filter(|(a, _)| *a == api).count()
    }

    fn versions(&self, api: ApiKey) -> BTreeSet<i16> {
        self.requests.iter().filter(|(a, _)| *a == api).map(|(_, v)| *v).collect()
    }

    /// Checks that the transactions went the way `target`'s protocol goes: on version 2 no
    /// AddPartitionsToTxn / AddOffsetsToTxn and Produce v12+, EndTxn v5; on version 1
    /// AddPartitionsToTxn before the writes (AddOffsetsToTxn when `offsets`), Produce ≤ v11 and
    /// EndTxn ≤ v4.
    fn assert_protocol(&self, target: Target, offsets: bool) {
        let produce = self.versions(ApiKey::PRODUCE);
        let end_txn = self.versions(ApiKey::END_TXN);
        assert!(!produce.is_empty() && !end_txn.is_empty(), "{:?}", self.requests);
        match target {
            Target::Kafka41 => {
                assert_eq!(self.count(ApiKey::ADD_PARTITIONS_TO_TXN), 0, "AddPartitionsToTxn on version 2");
                assert_eq!(self.count(ApiKey::ADD_OFFSETS_TO_TXN), 0, "AddOffsetsToTxn on version 2");
                assert!(produce.iter().all(|v| *v >= 12), "Produce versions {produce:?}");
                assert_eq!(end_txn, BTreeSet::from([5]), "EndTxn versions");
                if offsets {
                    assert_eq!(self.versions(ApiKey::TXN_OFFSET_COMMIT), BTreeSet::from([5]));
                }
            }
            Target::Kafka39 => {
                assert!(self.count(ApiKey::ADD_PARTITIONS_TO_TXN) > 0, "no AddPartitionsToTxn on version 1");
                assert_eq!(
                    self.count(ApiKey::ADD_OFFSETS_TO_TXN) > 0,
                    offsets,
                    "AddOffsetsToTxn on version 1"
                );
                assert!(produce.iter().all(|v| *v <= 11), "Produce versions {produce:?}");
                assert!(end_txn.iter().all(|v| *v <= 4), "EndTxn versions {end_txn:?}");
                if offsets {
                    assert!(self.versions(ApiKey::TXN_OFFSET_COMMIT).iter().all(|v| *v <= 4));
                }
            }
        }
    }
}

/// A client whose every request (and EndTxn answer) is noted in the returned [`Seen`].
async fn traced_client(bootstrap: &str) -> (Arc<Client>, Arc<Mutex<Seen>>) {
    traced_client_of(ClientConfig::new(bootstrap).unwrap()).await
}

/// [`traced_client`] made from `config`.
async fn traced_client_of(mut config: ClientConfig) -> (Arc<Client>, Arc<Mutex<Seen>>) {
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let noted = Arc::clone(&seen);
    config.trace = Some(Arc::new(move |event| {
        let mut seen = noted.lock().unwrap();
        match event.direction {
            Direction::Request => {
                seen.requests.push((event.api, event.version));
                if event.api == ApiKey::INIT_PRODUCER_ID {
                    seen.init_producer_id_broker = Some(event.broker.to_owned());
                }
                if event.api == ApiKey::ADD_PARTITIONS_TO_TXN {
                    let body = Bytes::copy_from_slice(&event.frame[4..]);
                    let (_, request) = decode_request::<AddPartitionsToTxnRequest>(body).unwrap();
                    let partitions = request
                        .topics
                        .iter()
                        .flat_map(|t| t.partitions.iter().map(|p| (t.name.clone(), *p)))
                        .collect();
                    seen.added.push(partitions);
                }
            }
            Direction::Response if event.api == ApiKey::END_TXN => {
                let body = Bytes::copy_from_slice(event.frame);
                let (_, response) = decode_response::<EndTxnRequest>(body, event.version).unwrap();
                seen.end_txn_answers.push((response.producer_id, response.producer_epoch));
            }
            Direction::Response => {}
        }
    }));
    (Arc::new(Client::connect(config).await.unwrap()), seen)
}

fn committed_and_aborted(target: Target) {
    let Some((cluster, _feature)) = cluster_of(target) else { return };
    support::multi_thread_runtime().block_on(async {
        let (client, seen) = traced_client(&cluster.bootstrap).await;
        let topic = support::new_topic_with_leaders(&client, "txn-commit-abort", 3).await;
        let producer = transactional(&client, &support::unique("txn-commit-abort"));
        producer.init_transactions().await.unwrap();

        producer.begin_transaction().await.unwrap();
        send_values(&producer, &topic, "committed", 100).await.unwrap();
        producer.commit_transaction().await.unwrap();

        producer.begin_transaction().await.unwrap();
        send_values(&producer, &topic, "aborted", 100).await.unwrap();
        // Written to the log before the abort, so only the markers keep them from readers.
        producer.flush().await;
        producer.abort_transaction().await.unwrap();

        producer.begin_transaction().await.unwrap();
        send_values(&producer, &topic, "after", 50).await.unwrap();
        producer.commit_transaction().await.unwrap();
        producer.close().await;
        seen.lock().unwrap().assert_protocol(target, false);

        let mut expected: Vec<String> =
            values("committed", 100).into_iter().chain(values("after", 50)).collect();
        expected.sort();
        assert_eq!(
            java_read_committed(&cluster, &topic, expected.len()),
            expected,
            "the Java consumer's reading"
        );
        if let Some(read) = kcat_read(&cluster, &topic, "read_committed") {
            assert_eq!(read, expected, "kcat's read_committed reading");
        }
        // The aborted records are in the log: a read_uncommitted reader sees them.
        if let Some(read) = kcat_read(&cluster, &topic, "read_uncommitted") {
            assert_eq!(read.len(), 250, "kcat's read_uncommitted reading");
            assert!(read.contains(&"aborted-7".to_owned()));
        }
    });
}

#[test]
fn a_committed_transaction_is_read_with_read_committed_and_an_aborted_one_is_not_on_transactions_v2() {
    committed_and_aborted(Target::Kafka41);
}

#[test]
fn a_committed_transaction_is_read_with_read_committed_and_an_aborted_one_is_not_on_kafka_3_9() {
    committed_and_aborted(Target::Kafka39);
}

fn offsets_only_on_commit(target: Target) {
    let Some((cluster, _feature)) = cluster_of(target) else { return };
    support::multi_thread_runtime().block_on(async {
        let (client, seen) = traced_client(&cluster.bootstrap).await;
        let topic = support::new_topic_with_leaders(&client, "txn-offsets", 2).await;
        let group = support::unique("txn-offsets-group");
        let producer = transactional(&client, &support::unique("txn-offsets"));
        producer.init_transactions().await.unwrap();
        let tp0 = TopicPartition::new(topic.as_str(), 0);
        let tp1 = TopicPartition::new(topic.as_str(), 1);

        producer.begin_transaction().await.unwrap();
        send_values(&producer, &topic, "v", 10).await.unwrap();
        producer.send_offsets_to_transaction(&[offset(&tp0, 5), offset(&tp1, 7)], &group).await.unwrap();
        producer.abort_transaction().await.unwrap();
        let committed = client.committed_offsets(&group, None, TIMEOUT).await.unwrap().complete().unwrap();
        assert!(committed.is_empty(), "an aborted transaction's offsets: {committed:?}");

        // Offsets alone (no record) make a transaction too.
        producer.begin_transaction().await.unwrap();
        producer.send_offsets_to_transaction(&[offset(&tp0, 1)], &group).await.unwrap();
        producer.commit_transaction().await.unwrap();

        producer.begin_transaction().await.unwrap();
        send_values(&producer, &topic, "v", 10).await.unwrap();
        producer.send_offsets_to_transaction(&[offset(&tp0, 3), offset(&tp1, 4)], &group).await.unwrap();
        producer.commit_transaction().await.unwrap();
        producer.close().await;
        seen.lock().unwrap().assert_protocol(target, true);
        let mut offsets = Vec::new();
        for _ in 0..50 {
            let committed =
                client.committed_offsets(&group, None, TIMEOUT).await.unwrap().complete().unwrap();
            offsets = committed.iter().map(|(tp, c)| (tp.partition, c.offset)).collect();
            if offsets.len() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(offsets, vec![(0, 3), (1, 4)]);
    });
}

#[test]
fn offsets_sent_to_a_transaction_are_the_groups_only_once_it_commits_on_transactions_v2() {
    offsets_only_on_commit(Target::Kafka41);
}

#[test]
fn offsets_sent_to_a_transaction_are_the_groups_only_once_it_commits_on_kafka_3_9() {
    offsets_only_on_commit(Target::Kafka39);
}

fn zombie_fenced(target: Target) {
    let Some((cluster, _feature)) = cluster_of(target) else { return };
    support::multi_thread_runtime().block_on(async {
        let client = Arc::new(Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap());
        let topic = support::new_topic_with_leaders(&client, "txn-zombie", 2).await;
        let id = support::unique("txn-zombie");
        let zombie = transactional(&client, &id);
        zombie.init_transactions().await.unwrap();
        zombie.begin_transaction().await.unwrap();
        send_values(&zombie, &topic, "zombie", 20).await.unwrap();
        zombie.flush().await;

        // The newer producer's init aborts the zombie's open transaction and fences it.
        let newer = transactional(&client, &id);
        newer.init_transactions().await.unwrap();
        let (zombie_id, zombie_epoch) = zombie.producer_id_and_epoch().unwrap();
        let (newer_id, newer_epoch) = newer.producer_id_and_epoch().unwrap();
        assert_eq!(zombie_id, newer_id);
        assert!(newer_epoch > zombie_epoch, "epochs {zombie_epoch} then {newer_epoch}");

        // A late write of the zombie, with its old epoch, is refused by the leaders.
        let late = zombie
            .send(&topic, ProduceRecord::new(Some(Bytes::from("k0")), Some(Bytes::from("late"))))
            .await
            .unwrap();
        zombie.flush().await;
        let refused = late.wait().await.unwrap_err();
        assert!(
            matches!(
                &refused,
                ClientError::Kafka {
                    code: ErrorCode::INVALID_PRODUCER_EPOCH | ErrorCode::PRODUCER_FENCED,
                    ..
                }
            ),
            "the zombie's late write: {refused:?}"
        );
        let fenced = zombie.commit_transaction().await.unwrap_err();
        assert!(
            matches!(&fenced, ClientError::Transaction(e @ TransactionError::Fenced { .. }) if e.is_fenced()),
            "the zombie's commit: {fenced:?}"
        );
        // Fenced for good: neither a send nor an abort gets through.
        let again = zombie.abort_transaction().await.unwrap_err();
        assert!(matches!(again, ClientError::Transaction(TransactionError::Fenced { .. })), "{again:?}");
        zombie.close().await;

        newer.begin_transaction().await.unwrap();
        send_values(&newer, &topic, "newer", 20).await.unwrap();
        newer.commit_transaction().await.unwrap();
        newer.close().await;

        let mut expected = values("newer", 20);
        expected.sort();
        assert_eq!(java_read_committed(&cluster, &topic, expected.len()), expected);
        if let Some(read) = kcat_read(&cluster, &topic, "read_committed") {
            assert_eq!(read, expected, "kcat's read_committed reading");
        }
        if let Some(read) = kcat_read(&cluster, &topic, "read_uncommitted") {
            assert!(!read.contains(&"late".to_owned()), "the late write is in the log");
        }
    });
}

#[test]
fn a_zombie_producer_is_fenced_when_a_second_one_inits_with_the_same_transactional_id_on_transactions_v2() {
    zombie_fenced(Target::Kafka41);
}

#[test]
fn a_zombie_producer_is_fenced_when_a_second_one_inits_with_the_same_transactional_id_on_kafka_3_9() {
    zombie_fenced(Target::Kafka39);
}

#[test]
fn sending_outside_a_transaction_is_refused_before_anything_is_sent() {
    let Some(cluster) = support::cluster() else { return };
    support::multi_thread_runtime().block_on(async {
        let client = Arc::new(Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap());
        let topic = support::new_topic_with_leaders(&client, "txn-outside", 1).await;
        let producer = transactional(&client, &support::unique("txn-outside"));
        let record = || ProduceRecord::new(None, Some(Bytes::from_static(b"v")));
        let before_init = producer.send(&topic, record()).await.unwrap_err();
        assert!(matches!(before_init, ClientError::Transaction(TransactionError::InvalidState { .. })));
        producer.init_transactions().await.unwrap();
        let before_begin = producer.send(&topic, record()).await.unwrap_err();
        assert!(before_begin.to_string().contains("begin_transaction"), "{before_begin}");
        let commit = producer.commit_transaction().await.unwrap_err();
        assert!(matches!(commit, ClientError::Transaction(TransactionError::InvalidState { .. })));
        producer.close().await;
    });
}

/// Two transactions of 120 records over 12 partitions. On version 1 the partitions new by the
/// time the sender looks are added together: at most 3 AddPartitionsToTxn per transaction
/// (the first may go alone: its record woke the sender), where one per partition was sent
/// before. On version 2 none is sent: every batch goes at Produce v12+, whose leader adds its
/// partition.
fn twelve_partitions(target: Target) {
    let Some((cluster, _feature)) = cluster_of(target) else { return };
    // One thread: the sender runs only when the sending loop yields, so how many partitions it
    // finds waiting does not depend on the machine's load (on two worker threads under CI's load
    // it ran beside the loop and took the partitions a few at a time).
    let runtime = crate::support::runtime();
    runtime.block_on(async {
        let (client, seen) = traced_client(&cluster.bootstrap).await;
        let topic = support::new_topic_with_leaders(&client, "txn-twelve", 12).await;
        let producer = transactional(&client, &support::unique("txn-twelve"));
        producer.init_transactions().await.unwrap();
        let mut expected = Vec::new();
        for round in 0..2 {
            seen.lock().unwrap().added.clear();
            producer.begin_transaction().await.unwrap();
            for i in 0..120 {
                let value = format!("r{round}-{i}");
                let tp = TopicPartition::new(topic.as_str(), i % 12);
                producer
                    .send_to(tp, ProduceRecord::new(None, Some(Bytes::from(value.clone()))))
                    .await
                    .unwrap();
                expected.push(value);
            }
            producer.commit_transaction().await.unwrap();
            // Retries of one request (CONCURRENT_TRANSACTIONS while the previous commit
            // completes) repeat its set.
            let mut requests = seen.lock().unwrap().added.clone();
            requests.dedup();
            match target {
                Target::Kafka39 => {
                    let added: BTreeSet<(String, i32)> = requests.iter().flatten().cloned().collect();
                    assert_eq!(added.len(), 12, "round {round}: {requests:?}");
                    assert!(
                        requests.len() <= 3,
                        "round {round}: {} requests for 12 partitions: {requests:?}",
                        requests.len()
                    );
                }
                Target::Kafka41 => assert!(requests.is_empty(), "round {round}: {requests:?}"),
            }
        }
        producer.close().await;
        seen.lock().unwrap().assert_protocol(target, false);
        expected.sort();
        assert_eq!(
            java_read_committed(&cluster, &topic, expected.len()),
            expected,
            "the Java consumer's reading"
        );
    });
}

#[test]
fn a_transaction_over_twelve_partitions_adds_them_in_a_few_requests_on_kafka_3_9() {
    twelve_partitions(Target::Kafka39);
}

#[test]
fn a_transaction_over_twelve_partitions_on_transactions_v2_sends_no_add_partitions_and_commits_every_record()
{
    twelve_partitions(Target::Kafka41);
}

/// The producer's (id, epoch) after each EndTxn: on version 2 the one the coordinator answered,
/// the epoch one higher each time (commit or abort); on version 1 the same throughout. A
/// transaction that wrote nothing sends no EndTxn and keeps the epoch.
fn epoch_after_end_txn(target: Target) {
    let Some((cluster, _feature)) = cluster_of(target) else { return };
    support::multi_thread_runtime().block_on(async {
        let (client, seen) = traced_client(&cluster.bootstrap).await;
        let topic = support::new_topic_with_leaders(&client, "txn-epoch", 1).await;
        let producer = transactional(&client, &support::unique("txn-epoch"));
        producer.init_transactions().await.unwrap();
        let (id, first) = producer.producer_id_and_epoch().unwrap();
        let mut expected_epoch = first;
        for (round, commit) in [true, false, true].into_iter().enumerate() {
            producer.begin_transaction().await.unwrap();
            send_values(&producer, &topic, &format!("r{round}"), 5).await.unwrap();
            producer.flush().await;
            if commit {
                producer.commit_transaction().await.unwrap();
            } else {
                producer.abort_transaction().await.unwrap();
            }
            let answer = *seen.lock().unwrap().end_txn_answers.last().unwrap();
            let now = producer.producer_id_and_epoch().unwrap();
            match target {
                Target::Kafka41 => {
                    expected_epoch += 1;
                    assert_eq!(answer, (Some(now.0), Some(now.1)), "round {round}: the EndTxn answer");
                    assert_eq!(now, (id, expected_epoch), "round {round}");
                }
                Target::Kafka39 => {
                    assert_eq!(answer, (None, None), "round {round}: an EndTxn v4 answer");
                    assert_eq!(now, (id, first), "round {round}");
                }
            }
        }
        let ends = seen.lock().unwrap().count(ApiKey::END_TXN);
        producer.begin_transaction().await.unwrap();
        producer.commit_transaction().await.unwrap();
        assert_eq!(seen.lock().unwrap().count(ApiKey::END_TXN), ends, "EndTxn for an empty transaction");
        assert_eq!(producer.producer_id_and_epoch().unwrap(), (id, expected_epoch));
        // The next transaction goes out with the epoch taken.
        producer.begin_transaction().await.unwrap();
        send_values(&producer, &topic, "last", 5).await.unwrap();
        producer.commit_transaction().await.unwrap();
        producer.close().await;
        seen.lock().unwrap().assert_protocol(target, false);
        let mut expected: Vec<String> =
            values("r0", 5).into_iter().chain(values("r2", 5)).chain(values("last", 5)).collect();
        expected.sort();
        if let Some(read) = kcat_read(&cluster, &topic, "read_committed") {
            assert_eq!(read, expected, "kcat's read_committed reading");
        }
    });
}

#[test]
fn every_end_txn_on_transactions_v2_gives_the_producer_the_coordinators_next_epoch() {
    epoch_after_end_txn(Target::Kafka41);
}

#[test]
fn end_txn_on_kafka_3_9_leaves_the_epoch_as_it_was() {
    epoch_after_end_txn(Target::Kafka39);
}

/// A batch written by hand as a late Produce of a finished transaction would arrive: the
/// producer's id, the `epoch` and `sequence` given, transactional, to partition 0.
async fn late_write(
    client: &Client,
    topic: &str,
    transactional_id: &str,
    producer: (i64, i16),
    sequence: i32,
) -> ErrorCode {
    let metadata = client.refresh_metadata(&[topic.to_owned()]).await.unwrap();
    let info = metadata.topic(topic).unwrap();
    let leader = info.partitions.iter().find(|p| p.partition == 0).unwrap().leader.unwrap();
    let broker = BrokerRef { node_id: Some(leader), addr: metadata.broker(leader).unwrap().addr() };
    let mut batch =
        RecordBatch::new(0, 0, Compression::None, vec![Record::new(None, Some(Bytes::from("late")))]);
    batch.producer_id = producer.0;
    batch.producer_epoch = producer.1;
    batch.base_sequence = sequence;
    batch.attributes.is_transactional = true;
    let request = ProduceRequest {
        transactional_id: Some(transactional_id.to_owned()),
        acks: -1,
        timeout_ms: 30_000,
        topic_data: vec![TopicProduceData {
            name: Some(topic.to_owned()),
            topic_id: info.topic_id,
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(batch.to_bytes().unwrap()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let (_, response) = client.send(&broker, &request).await.unwrap();
    response.responses[0].partition_responses[0].error_code
}

/// KIP-890's hazard: a write of a committed transaction that arrives late, after the producer
/// began the next one on the same partition. On version 1 the epoch is the same, so with the
/// next sequence the broker takes it into the open transaction (shown on Kafka 3.9); on
/// version 2 the commit bumped the epoch, and the leader refuses the old one.
fn late_write_after_commit(target: Target) {
    let Some((cluster, _feature)) = cluster_of(target) else { return };
    support::multi_thread_runtime().block_on(async {
        let client = Arc::new(Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap());
        let topic = support::new_topic_with_leaders(&client, "txn-late", 1).await;
        let id = support::unique("txn-late");
        let producer = transactional(&client, &id);
        producer.init_transactions().await.unwrap();
        producer.begin_transaction().await.unwrap();
        send_values(&producer, &topic, "first", 1).await.unwrap();
        producer.commit_transaction().await.unwrap();
        let old = producer.producer_id_and_epoch().unwrap();
        let old = match target {
            // The epoch the first transaction wrote with.
            Target::Kafka41 => (old.0, old.1 - 1),
            Target::Kafka39 => old,
        };
        producer.begin_transaction().await.unwrap();
        send_values(&producer, &topic, "second", 1).await.unwrap();
        producer.flush().await;
        // Sequence 0 went with the first transaction, 1 with the second on version 1.
        let code = late_write(&client, &topic, &id, old, 2).await;
        producer.commit_transaction().await.unwrap();
        producer.close().await;
        let read = kcat_read(&cluster, &topic, "read_committed");
        match target {
            Target::Kafka41 => {
                assert!(
                    matches!(code, ErrorCode::INVALID_PRODUCER_EPOCH | ErrorCode::PRODUCER_FENCED),
                    "the late write: {code:?}"
                );
                if let Some(read) = read {
                    assert_eq!(read, vec!["first-0".to_owned(), "second-0".to_owned()]);
                }
            }
            Target::Kafka39 => {
                assert_eq!(code, ErrorCode::NONE, "the late write on version 1");
                if let Some(read) = read {
                    assert_eq!(read, vec!["first-0".to_owned(), "late".to_owned(), "second-0".to_owned()]);
                }
            }
        }
    });
}

#[test]
fn a_late_write_of_a_committed_transaction_is_refused_on_transactions_v2() {
    late_write_after_commit(Target::Kafka41);
}

#[test]
fn a_late_write_of_a_committed_transaction_joins_the_next_one_on_kafka_3_9() {
    late_write_after_commit(Target::Kafka39);
}

/// `kwire --trace produce --transactional-id` over two transactions: the (API, version) of every
/// request traced on stderr.
fn traced_cli_produce(cluster: &support::Cluster, topic: &str) -> Vec<(String, i16)> {
    let txn_id = support::unique("txn-trace");
    let lines: String = (0..20).map(|i| format!("v{i}")).collect::<Vec<_>>().join("\n");
    let out = support::output_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_kwire"))
            .args(["--trace", "produce", topic, "--transactional-id", &txn_id, "--txn-every", "10"])
            .env("KWIRE_BOOTSTRAP", &cluster.bootstrap),
        Some(&lines),
    );
    assert!(out.status.success(), "{}", support::stderr(&out));
    let trace = support::stderr(&out);
    let mut seen: Vec<(String, i16)> = Vec::new();
    // A request's header names its API key; an answer's has only the correlation id.
    for line in trace.lines().filter(|l| l.contains("\"request_api_key\"")) {
        let Some(rest) = line.split("\"api\":\"").nth(1) else { continue };
        let Some((api, rest)) = rest.split_once('"') else { continue };
        let Some(version) = rest
            .split("\"version\":")
            .nth(1)
            .and_then(|v| v.split(|c: char| !c.is_ascii_digit()).next().and_then(|v| v.parse::<i16>().ok()))
        else {
            continue;
        };
        seen.push((api.to_owned(), version));
    }
    seen
}

fn cli_trace(target: Target) {
    let Some((cluster, _feature)) = cluster_of(target) else { return };
    let topic = support::unique("txn-trace");
    let created = support::kwire(
        &cluster,
        &["topic", "create", &topic, "--partitions", "2", "--replication-factor", "1"],
    );
    assert!(created.status.success(), "{}", support::stderr(&created));
    let seen = traced_cli_produce(&cluster, &topic);
    let count = |api: &str| seen.iter().filter(|(a, _)| a == api).count();
    let versions =
        |api: &str| seen.iter().filter(|(a, _)| a == api).map(|(_, v)| *v).collect::<BTreeSet<i16>>();
    // Two transactions of 10 records, each ended by one EndTxn.
    assert_eq!(count("EndTxn"), 2, "{seen:?}");
    match target {
        Target::Kafka41 => {
            assert_eq!(count("AddPartitionsToTxn"), 0, "{seen:?}");
            assert_eq!(versions("EndTxn"), BTreeSet::from([5]));
            assert!(versions("Produce").iter().all(|v| *v >= 12), "{seen:?}");
        }
        Target::Kafka39 => {
            assert!(count("AddPartitionsToTxn") >= 2, "{seen:?}");
            assert!(versions("EndTxn").iter().all(|v| *v <= 4), "{seen:?}");
            assert!(versions("Produce").iter().all(|v| *v <= 11), "{seen:?}");
        }
    }
    if let Some(read) = kcat_read(&cluster, &topic, "read_committed") {
        assert_eq!(read.len(), 20, "kcat's read_committed reading");
    }
}

#[test]
fn kwire_trace_shows_no_add_partitions_to_txn_for_a_transactional_produce_on_transactions_v2() {
    cli_trace(Target::Kafka41);
}

#[test]
fn kwire_trace_shows_add_partitions_to_txn_for_a_transactional_produce_on_kafka_3_9() {
    cli_trace(Target::Kafka39);
}

/// An abort while every record of the transaction still lingers in the producer (a 60 s
/// `linger`): nothing was produced, so each record's delivery result is
/// [`TransactionError::Aborted`] and no reader ever sees one. On version 2 no request of the
/// transaction went out at all — no Produce, no EndTxn — and the epoch stays (the Java
/// producer 4.1.1 sends an EndTxn here anyway, which bumps it: it counts a transaction as
/// started at its first `send`; kwire at its first batch taken for sending, the earliest a
/// broker can have added a partition). On version 1 the sender adds the partitions while the
/// records linger, so the abort ends that transaction with an EndTxn. The next transaction
/// commits and only its records are read.
fn abort_while_lingering(target: Target) {
    let Some((cluster, _feature)) = cluster_of(target) else { return };
    support::multi_thread_runtime().block_on(async {
        let (client, seen) = traced_client(&cluster.bootstrap).await;
        let topic = support::new_topic_with_leaders(&client, "txn-abort-lingering", 3).await;
        let config = ProducerConfig {
            transactional_id: Some(support::unique("txn-abort-lingering")),
            linger: Duration::from_secs(60),
            ..ProducerConfig::default()
        };
        let producer = Producer::new(Arc::clone(&client), config).unwrap();
        producer.init_transactions().await.unwrap();
        let before = producer.producer_id_and_epoch().unwrap();

        producer.begin_transaction().await.unwrap();
        let mut deliveries = Vec::new();
        for i in 0..30 {
            let record = ProduceRecord::new(
                Some(Bytes::from(format!("k{i}"))),
                Some(Bytes::from(format!("aborted-{i}"))),
            );
            deliveries.push(producer.send(&topic, record).await.unwrap());
        }
        if target == Target::Kafka39 {
            // The sender adds the partitions without waiting for the batches to fill.
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while seen.lock().unwrap().count(ApiKey::ADD_PARTITIONS_TO_TXN) == 0 {
                assert!(std::time::Instant::now() < deadline, "no AddPartitionsToTxn while lingering");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        producer.abort_transaction().await.unwrap();
        for (i, delivery) in deliveries.into_iter().enumerate() {
            let result = tokio::time::timeout(TIMEOUT, delivery.wait()).await.expect("a delivery result");
            assert!(
                matches!(&result, Err(ClientError::Transaction(TransactionError::Aborted { .. }))),
                "record {i}: {result:?}"
            );
        }
        {
            let seen = seen.lock().unwrap();
            assert_eq!(seen.count(ApiKey::PRODUCE), 0, "a Produce of lingering records: {:?}", seen.requests);
            match target {
                Target::Kafka41 => {
                    assert_eq!(
                        seen.count(ApiKey::END_TXN),
                        0,
                        "EndTxn with nothing sent: {:?}",
                        seen.requests
                    );
                    assert_eq!(
                        producer.producer_id_and_epoch().unwrap(),
                        before,
                        "the epoch after the abort"
                    );
                }
                Target::Kafka39 => {
                    assert_eq!(seen.count(ApiKey::END_TXN), 1, "the abort of the added partitions");
                }
            }
        }

        producer.begin_transaction().await.unwrap();
        let mut deliveries = Vec::new();
        for i in 0..20 {
            let record = ProduceRecord::new(
                Some(Bytes::from(format!("k{i}"))),
                Some(Bytes::from(format!("after-{i}"))),
            );
            deliveries.push(producer.send(&topic, record).await.unwrap());
        }
        producer.commit_transaction().await.unwrap();
        for (i, delivery) in deliveries.into_iter().enumerate() {
            let result = tokio::time::timeout(TIMEOUT, delivery.wait()).await.expect("a delivery result");
            assert!(result.is_ok(), "record {i} of the committed transaction: {result:?}");
        }
        producer.close().await;
        seen.lock().unwrap().assert_protocol(target, false);

        // The aborted records never reached the log: not even a read_uncommitted reader sees them.
        assert_read_exactly(&cluster, &topic, values("after", 20), &["read_uncommitted"]);
    });
}

#[test]
fn records_still_lingering_when_a_transaction_aborts_fail_as_aborted_and_no_end_txn_goes_out_on_transactions_v2(
) {
    abort_while_lingering(Target::Kafka41);
}

#[test]
fn records_still_lingering_when_a_transaction_aborts_fail_as_aborted_after_an_end_txn_of_the_added_partitions_on_kafka_3_9(
) {
    abort_while_lingering(Target::Kafka39);
}

/// The requests of one stretch of a trace went the way `target`'s protocol goes (as
/// [`Seen::assert_protocol`], without offsets).
fn assert_stretch(requests: &[(ApiKey, i16)], target: Target, what: &str) {
    let stretch = Seen { requests: requests.to_vec(), ..Seen::default() };
    let checked = std::panic::catch_unwind(|| stretch.assert_protocol(target, false));
    assert!(checked.is_ok(), "the {what} transaction: {requests:?}");
}

/// One producer, three transactions, `transaction.version` changed by Kafka's FeatureCommand
/// between them: 2, then downgraded to 1, then upgraded to 2 again. Each transaction speaks
/// the version finalized at its begin — AddPartitionsToTxn, Produce v11 and EndTxn v4 only in
/// the middle one, Produce v12+ and EndTxn v5 in the others — although the producer's
/// connection to the coordinator stays open throughout, and every record of the three is read
/// by the Java read_committed consumer and kcat (no sequence or epoch error on the switches).
/// Holds the feature exclusively; the 4.1 cluster gets version 2 back even if this fails.
#[test]
fn a_producer_follows_transaction_version_downgraded_to_1_and_upgraded_to_2_between_its_transactions() {
    let Some(cluster) = support::cluster() else { return };
    let feature = support::transaction_version::exclusive(&cluster);
    support::multi_thread_runtime().block_on(async {
        feature.set(2).await;
        let (client, seen) = traced_client(&cluster.bootstrap).await;
        let topic = support::new_topic_with_leaders(&client, "txn-feature-change", 3).await;
        let producer = transactional(&client, &support::unique("txn-feature-change"));
        producer.init_transactions().await.unwrap();
        let mut marks = Vec::new();
        for (prefix, level) in [("v2-first", None), ("v1", Some(1)), ("v2-again", Some(2))] {
            if let Some(level) = level {
                feature.set(level).await;
            }
            marks.push(seen.lock().unwrap().requests.len());
            producer.begin_transaction().await.unwrap();
            send_values(&producer, &topic, prefix, 30).await.unwrap();
            producer.commit_transaction().await.unwrap_or_else(|e| panic!("committing {prefix}: {e}"));
        }
        producer.close().await;
        let requests = seen.lock().unwrap().requests.clone();
        assert_stretch(&requests[marks[0]..marks[1]], Target::Kafka41, "first (version 2)");
        assert_stretch(&requests[marks[1]..marks[2]], Target::Kafka39, "second (version 1)");
        assert_stretch(&requests[marks[2]..], Target::Kafka41, "third (version 2 again)");

        let expected = values("v2-first", 30)
            .into_iter()
            .chain(values("v1", 30))
            .chain(values("v2-again", 30))
            .collect();
        assert_read_exactly(&cluster, &topic, expected, &["read_committed"]);
    });
    drop(feature);
}

/// An abort while the transaction's records were taken for sending to a leader that cannot be
/// reached (its address mapped to a listener that never answers; the transaction coordinator
/// is another broker): the abort waits for the attempt under way (the 2 s timeouts), then
/// drops the records instead of retrying them until `delivery_timeout` (40 s), and each
/// fails with [`TransactionError::Aborted`]. As the Java producer
/// would, kwire ends the transaction with an EndTxn (a batch was taken, so a broker could have
/// added the partition), which bumps the epoch; the next transaction commits and is the only
/// one read. Kafka 4.1 only: the 3.9 broker is one broker, coordinator and leader at once.
#[test]
fn records_for_an_unreachable_leader_fail_as_aborted_when_the_transaction_aborts_on_transactions_v2() {
    abort_with_unreachable_leader(false);
}

/// As above, but a first `abort_transaction` is dropped while it waits for the unreachable
/// leader (a 300 ms timeout around it): the transaction stays open and usable — a record sent
/// then to a reachable leader is written, not failed as aborted — and a second abort ends it
/// all: the unreachable leader's records fail as aborted, the written record is not read by a
/// read_committed consumer.
#[test]
fn an_abort_dropped_while_waiting_for_an_unreachable_leader_leaves_the_transaction_open_on_transactions_v2() {
    abort_with_unreachable_leader(true);
}

fn abort_with_unreachable_leader(drop_a_first_abort: bool) {
    let Some((cluster, _feature)) = cluster_of(Target::Kafka41) else { return };
    support::multi_thread_runtime().block_on(async {
        let id = support::unique("txn-abort-unreachable");
        let (client, seen) = traced_client(&cluster.bootstrap).await;
        let topic = support::new_topic_with_leaders(&client, "txn-abort-unreachable", 6).await;
        let first = transactional(&client, &id);
        first.init_transactions().await.unwrap();
        first.close().await;
        let coordinator = seen.lock().unwrap().init_producer_id_broker.clone().expect("an InitProducerId");
        let metadata = client.refresh_metadata(std::slice::from_ref(&topic)).await.unwrap();
        let leaders: Vec<(i32, String)> = metadata
            .topic(&topic)
            .unwrap()
            .partitions
            .iter()
            .filter_map(|p| Some((p.partition, metadata.broker(p.leader?)?.addr())))
            .collect();
        let (unreachable, leader) = leaders
            .iter()
            .find(|(_, addr)| *addr != coordinator)
            .cloned()
            .expect("a leader besides the coordinator");
        let reachable = leaders.iter().find(|(_, addr)| *addr != leader).map(|(p, _)| *p).unwrap();

        // A listener that never accepts: a connection opens (the kernel's backlog) and its
        // ApiVersions is never answered, so each attempt holds the batches for the timeout.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        // Bootstrapped from the other brokers, so metadata never waits for the silent one.
        let others: Vec<String> = cluster.brokers().into_iter().filter(|b| *b != leader).collect();
        let mut config = ClientConfig::new(&others.join(",")).unwrap();
        config.address_map.insert(leader.clone(), silent.local_addr().unwrap().to_string());
        config.connect_timeout = Duration::from_secs(2);
        config.request_timeout = Duration::from_secs(2);
        let (client, seen) = traced_client_of(config).await;
        let config = ProducerConfig {
            transactional_id: Some(id),
            delivery_timeout: Duration::from_secs(40),
            ..ProducerConfig::default()
        };
        let producer = Producer::new(Arc::clone(&client), config).unwrap();
        producer.init_transactions().await.unwrap();
        let before = producer.producer_id_and_epoch().unwrap();
        producer.begin_transaction().await.unwrap();
        let tp = TopicPartition::new(topic.as_str(), unreachable);
        let mut deliveries = Vec::new();
        for i in 0..10 {
            let record = ProduceRecord::new(None, Some(Bytes::from(format!("aborted-{i}"))));
            deliveries.push(producer.send_to(tp.clone(), record).await.unwrap());
        }
        // The sender takes them; the abort comes while they wait for the silent leader.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let reachable_tp = TopicPartition::new(topic.as_str(), reachable);
        if drop_a_first_abort {
            let dropped =
                tokio::time::timeout(Duration::from_millis(300), producer.abort_transaction()).await;
            assert!(dropped.is_err(), "the first abort did not wait for the silent leader: {dropped:?}");
            let record = ProduceRecord::new(None, Some(Bytes::from_static(b"between-the-aborts")));
            let delivery = producer.send_to(reachable_tp.clone(), record).await.unwrap();
            let result = tokio::time::timeout(TIMEOUT, delivery.wait()).await.expect("a delivery result");
            assert!(result.is_ok(), "a record sent after the dropped abort: {result:?}");
        }
        let started = std::time::Instant::now();
        producer.abort_transaction().await.unwrap();
        let took = started.elapsed();
        for (i, delivery) in deliveries.into_iter().enumerate() {
            let result = tokio::time::timeout(TIMEOUT, delivery.wait()).await.expect("a delivery result");
            assert!(
                matches!(&result, Err(ClientError::Transaction(TransactionError::Aborted { .. }))),
                "record {i}: {result:?}"
            );
        }
        assert!(took < Duration::from_secs(10), "the abort waited {took:?} for records that cannot be sent");
        {
            let seen = seen.lock().unwrap();
            let produced = usize::from(drop_a_first_abort);
            assert_eq!(seen.count(ApiKey::PRODUCE), produced, "{:?}", seen.requests);
            assert_eq!(seen.count(ApiKey::END_TXN), 1, "{:?}", seen.requests);
        }
        let after = producer.producer_id_and_epoch().unwrap();
        assert_eq!(after, (before.0, before.1 + 1), "the epoch the abort's EndTxn gave");

        producer.begin_transaction().await.unwrap();
        for i in 0..10 {
            let record = ProduceRecord::new(None, Some(Bytes::from(format!("after-{i}"))));
            producer.send_to(reachable_tp.clone(), record).await.unwrap();
        }
        producer.commit_transaction().await.unwrap();
        producer.close().await;
        seen.lock().unwrap().assert_protocol(Target::Kafka41, false);
        // The record written between the aborts is in the log, aborted: read_uncommitted sees it.
        let isolation: &[&str] = if drop_a_first_abort { &["read_committed"] } else { &["read_uncommitted"] };
        assert_read_exactly(&cluster, &topic, values("after", 10), isolation);
    });
}
