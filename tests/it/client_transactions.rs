//! Transactions of the [`Producer`] against the real cluster: a committed transaction is read
//! by Kafka's read_committed consumer and by kcat with `isolation.level=read_committed`, an
//! aborted one is not (though its records are in the log); offsets sent to a transaction
//! become the group's only when it commits; a second producer with the same transactional id
//! fences the first, which gets [`TransactionError::Fenced`]; the partitions of a transaction
//! are added to it a request for many, not one each.

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use kafka_wire::client::{
    Client, ClientConfig, ClientError, Direction, OffsetToCommit, ProduceRecord, Producer, ProducerConfig,
    TopicPartition, TransactionError,
};
use kafka_wire::protocol::frame::decode_request;
use kafka_wire::protocol::messages::AddPartitionsToTxnRequest;
use kafka_wire::protocol::ApiKey;

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

#[test]
fn a_committed_transaction_is_read_with_read_committed_and_an_aborted_one_is_not() {
    let Some(cluster) = support::cluster() else { return };
    support::multi_thread_runtime().block_on(async {
        let client = Arc::new(Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap());
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
fn offsets_sent_to_a_transaction_are_the_groups_only_once_it_commits() {
    let Some(cluster) = support::cluster() else { return };
    support::multi_thread_runtime().block_on(async {
        let client = Arc::new(Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap());
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

        producer.begin_transaction().await.unwrap();
        send_values(&producer, &topic, "v", 10).await.unwrap();
        producer.send_offsets_to_transaction(&[offset(&tp0, 3), offset(&tp1, 4)], &group).await.unwrap();
        producer.commit_transaction().await.unwrap();
        producer.close().await;
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
fn a_zombie_producer_is_fenced_when_a_second_one_inits_with_the_same_transactional_id() {
    let Some(cluster) = support::cluster() else { return };
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
    });
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

/// The (topic, partition) pairs of one AddPartitionsToTxn request.
type AddedPartitions = BTreeSet<(String, i32)>;

#[test]
fn a_transaction_over_twelve_partitions_adds_them_in_a_few_requests_and_commits_every_record() {
    let Some(cluster) = support::cluster() else { return };
    // One thread: the sender runs only when the sending loop yields, so how many partitions it
    // finds waiting does not depend on the machine's load (on two worker threads under CI's load
    // it ran beside the loop and took the partitions a few at a time).
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        // The partitions of each AddPartitionsToTxn request sent (retries of one request, as
        // CONCURRENT_TRANSACTIONS while the previous commit completes, repeat its set).
        let adds: Arc<Mutex<Vec<AddedPartitions>>> = Arc::default();
        let mut config = ClientConfig::new(&cluster.bootstrap).unwrap();
        let seen = Arc::clone(&adds);
        config.trace = Some(Arc::new(move |event| {
            if event.direction == Direction::Request && event.api == ApiKey::ADD_PARTITIONS_TO_TXN {
                let body = Bytes::copy_from_slice(&event.frame[4..]);
                let (_, request) = decode_request::<AddPartitionsToTxnRequest>(body).unwrap();
                let partitions = request
                    .topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| (t.name.clone(), *p)))
                    .collect();
                seen.lock().unwrap().push(partitions);
            }
        }));
        let client = Arc::new(Client::connect(config).await.unwrap());
        let topic = support::new_topic_with_leaders(&client, "txn-twelve", 12).await;
        let producer = transactional(&client, &support::unique("txn-twelve"));
        producer.init_transactions().await.unwrap();
        let mut expected = Vec::new();
        for round in 0..2 {
            adds.lock().unwrap().clear();
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
            // One request per partition before; now the partitions new by the time the sender
            // looks go together (the first may go alone: its record woke the sender).
            let mut requests = adds.lock().unwrap().clone();
            requests.dedup();
            let added: BTreeSet<(String, i32)> = requests.iter().flatten().cloned().collect();
            assert_eq!(added.len(), 12, "round {round}: {requests:?}");
            assert!(
                requests.len() <= 3,
                "round {round}: {} requests for 12 partitions: {requests:?}",
                requests.len()
            );
        }
        producer.close().await;
        expected.sort();
        assert_eq!(
            java_read_committed(&cluster, &topic, expected.len()),
            expected,
            "the Java consumer's reading"
        );
    });
}
