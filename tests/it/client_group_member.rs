//! kwire as a consumer-group member on the real cluster, with both of Kafka's protocols
//! (classic cooperative-sticky and KIP-848): members split a group's partitions disjointly and
//! completely and hand them over through commits without losing or doubling a record; a kwire
//! member shares a group with Java's consumer; a batch longer than the session timeout keeps
//! the member (liveness is the heartbeat task's) while an application that stops polling is
//! told it left; and each assigned partition starts where offset-engine's rules say.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_client::{
    Client, ClientConfig, Consumer, ConsumerConfig, ConsumerError, GroupProtocol, MemberPhase,
    NotOwnedReason, OffsetToCommit, ProduceRecord, Producer, ProducerConfig, RebalanceListener,
    StartPosition, StartRefusal, Subscription, TopicPartition,
};
use offset_engine::{Anomaly, OutOfRangePolicy, StartPolicy};

use crate::support;
use crate::support::produced::produce_numbered;

const TIMEOUT: Duration = Duration::from_secs(90);

async fn connect(cluster: &support::Cluster) -> Arc<Client> {
    Arc::new(Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap())
}

fn member(group: &str, protocol: GroupProtocol) -> ConsumerConfig {
    ConsumerConfig {
        group_id: Some(group.to_owned()),
        group_protocol: protocol,
        start: StartPolicy::Earliest,
        assignment_strategy: vec!["cooperative-sticky".to_owned()],
        session_timeout: Duration::from_secs(10),
        heartbeat_interval: Duration::from_secs(1),
        enable_auto_commit: true,
        ..ConsumerConfig::default()
    }
}

/// What a member running on its own task has read and owns, for the test to watch.
#[derive(Default)]
struct Watch {
    read: Mutex<Vec<(TopicPartition, i64)>>,
    owned: Mutex<BTreeMap<String, Vec<TopicPartition>>>,
    stop: AtomicBool,
}

/// Polls `consumer` until the watch says stop, recording every record and what it owns.
async fn run_member(name: &'static str, mut consumer: Consumer, watch: Arc<Watch>) -> Consumer {
    while !watch.stop.load(Ordering::Relaxed) {
        match consumer.poll(Duration::from_millis(200)).await {
            Ok(Some(chunk)) => {
                let mut read = watch.read.lock().unwrap();
                read.extend(chunk.records.iter().map(|r| (chunk.partition.clone(), r.offset)));
            }
            Ok(None) => {}
            Err(e) => panic!("{name}: {e}"),
        }
        let owned = consumer.member_state().map(|s| s.owned).unwrap_or_default();
        watch.owned.lock().unwrap().insert(name.to_owned(), owned);
    }
    consumer
}

/// Waits until `check` holds for the watched state, failing with what was seen.
async fn wait_for(
    watch: &Watch,
    what: &str,
    check: impl Fn(&BTreeMap<String, Vec<TopicPartition>>, usize) -> bool,
) {
    let started = Instant::now();
    loop {
        let (owned, read) = (watch.owned.lock().unwrap().clone(), watch.read.lock().unwrap().len());
        if check(&owned, read) {
            return;
        }
        assert!(started.elapsed() < TIMEOUT, "{what}: owned {owned:?}, {read} records read");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every one of `partitions` owned by exactly one member, and every member owning some.
fn split_among(
    owned: &BTreeMap<String, Vec<TopicPartition>>,
    members: usize,
    partitions: &[TopicPartition],
) -> bool {
    let mut all: Vec<&TopicPartition> = owned.values().flatten().collect();
    all.sort();
    let expected: Vec<&TopicPartition> = partitions.iter().collect();
    owned.len() == members && owned.values().all(|o| !o.is_empty()) && all == expected
}

fn two_members_split_the_group_and_hand_over_through_commits(protocol: GroupProtocol) {
    let Some(cluster) = support::cluster() else { return };
    support::multi_thread_runtime().block_on(async {
        let client = connect(&cluster).await;
        let topic = support::new_topic_with_leaders(&client, "group-member", 6).await;
        let partitions: Vec<TopicPartition> =
            (0..6).map(|p| TopicPartition::new(topic.as_str(), p)).collect();
        let group = support::unique("group-member-group");
        produce_numbered(&client, &topic, 0..300).await;

        let watch = Arc::new(Watch::default());
        let mut first = Consumer::new(Arc::clone(&client), member(&group, protocol));
        first.subscribe(Subscription::Topics(vec![topic.clone()])).unwrap();
        let first = tokio::spawn(run_member("first", first, Arc::clone(&watch)));
        wait_for(&watch, "the first member owns every partition and read the first 300", |owned, read| {
            split_among(owned, 1, &partitions) && read == 300
        })
        .await;

        // A second member joins: the partitions that move are revoked (their positions
        // committed) before the new owner starts from those commits.
        let mut second = Consumer::new(Arc::clone(&client), member(&group, protocol));
        second.subscribe(Subscription::Topics(vec![topic.clone()])).unwrap();
        let second = tokio::spawn(run_member("second", second, Arc::clone(&watch)));
        wait_for(&watch, "two members split the six partitions", |owned, _| {
            split_among(owned, 2, &partitions)
        })
        .await;
        produce_numbered(&client, &topic, 0..300).await;
        wait_for(&watch, "600 records read", |_, read| read >= 600).await;
        tokio::time::sleep(Duration::from_millis(500)).await;

        watch.stop.store(true, Ordering::Relaxed);
        let (mut first, mut second) = (first.await.unwrap(), second.await.unwrap());
        let owned = watch.owned.lock().unwrap().clone();
        assert!(split_among(&owned, 2, &partitions), "{owned:?}");
        let read = watch.read.lock().unwrap().clone();
        let distinct: BTreeSet<&(TopicPartition, i64)> = read.iter().collect();
        assert_eq!(distinct.len(), 600, "every record read");
        assert_eq!(read.len(), 600, "no record read twice: the handover went through the revoked commits");
        for c in [&first, &second] {
            let state = c.member_state().unwrap();
            assert_eq!((state.protocol, state.phase), (protocol, MemberPhase::Stable), "{state:?}");
        }
        first.close().await.unwrap();
        second.close().await.unwrap();
        // Both left and committed what they read: nothing is lagging.
        let committed =
            client.committed_offsets(&group, Some(std::slice::from_ref(&topic)), TIMEOUT).await.unwrap();
        let total: i64 = committed.offsets.values().map(|c| c.offset).sum();
        assert_eq!(total, 600, "{:?}", committed.offsets);
        let description = client.describe_group(&group, TIMEOUT).await.unwrap();
        assert!(description.members.is_empty(), "both left at close: {description:?}");
    });
}

#[test]
fn two_classic_cooperative_members_split_a_group_and_hand_over_without_loss_or_duplicates() {
    two_members_split_the_group_and_hand_over_through_commits(GroupProtocol::Classic);
}

#[test]
fn two_kip_848_members_split_a_group_and_hand_over_without_loss_or_duplicates() {
    two_members_split_the_group_and_hand_over_through_commits(GroupProtocol::Consumer);
}

fn a_kwire_member_and_a_java_consumer_share_a_group(protocol: GroupProtocol) {
    let Some(cluster) = support::cluster() else { return };
    support::multi_thread_runtime().block_on(async {
        let client = connect(&cluster).await;
        let topic = support::new_topic_with_leaders(&client, "group-java", 4).await;
        let group = support::unique("group-java-group");
        let java = support::ConsoleConsumer::start(&cluster, &topic, &group, protocol.as_str());
        let config = ConsumerConfig {
            assignment_strategy: vec!["range".to_owned(), "cooperative-sticky".to_owned()],
            ..member(&group, protocol)
        };
        let mut kwire = Consumer::new(Arc::clone(&client), config);
        kwire.subscribe(Subscription::Topics(vec![topic.clone()])).unwrap();
        let watch = Arc::new(Watch::default());
        let kwire = tokio::spawn(run_member("kwire", kwire, Arc::clone(&watch)));
        let started = Instant::now();
        let (owners, mine) = loop {
            assert!(started.elapsed() < TIMEOUT, "no stable split between kwire and Java");
            tokio::time::sleep(Duration::from_secs(1)).await;
            let owners = support::group_owners(&cluster, &group, &topic);
            let mine: Vec<TopicPartition> =
                watch.owned.lock().unwrap().get("kwire").cloned().unwrap_or_default();
            let ids: BTreeSet<&String> = owners.values().collect();
            if owners.len() == 4 && ids.len() == 2 && !mine.is_empty() && mine.len() < 4 {
                // kafka-consumer-groups agrees with kwire's own view of what it owns.
                let kwire_rows: Vec<i32> = mine.iter().map(|tp| tp.partition).collect();
                let kwire_id = &owners[&kwire_rows[0]];
                let theirs: Vec<i32> =
                    owners.iter().filter(|(_, id)| *id == kwire_id).map(|(p, _)| *p).collect();
                if theirs == kwire_rows {
                    break (owners, mine);
                }
            }
        };
        watch.stop.store(true, Ordering::Relaxed);
        let mut kwire = kwire.await.unwrap();
        assert_eq!(kwire.member_state().unwrap().protocol, protocol);
        kwire.close().await.unwrap();
        java.stop();
        assert_eq!(owners.len(), 4, "{owners:?} / kwire owns {mine:?}");
    });
}

#[test]
fn a_kwire_member_and_a_java_consumer_share_a_classic_group() {
    a_kwire_member_and_a_java_consumer_share_a_group(GroupProtocol::Classic);
}

#[test]
fn a_kwire_member_and_a_java_consumer_share_a_kip_848_group() {
    a_kwire_member_and_a_java_consumer_share_a_group(GroupProtocol::Consumer);
}

/// Seed 003: a batch that takes three session timeouts does not cost the member its
/// partitions (the heartbeats are the member task's), and its commit succeeds; an application
/// that stops asking for records for longer than max.poll.interval.ms is told so by its next
/// poll, and its commits for the partitions it had are refused before anything is sent.
#[test]
fn a_batch_longer_than_the_session_keeps_the_member_and_a_stalled_application_is_told_it_left() {
    let Some(cluster) = support::cluster() else { return };
    support::multi_thread_runtime().block_on(async {
        let client = connect(&cluster).await;
        let topic = support::new_topic_with_leaders(&client, "group-liveness", 2).await;
        let group = support::unique("group-liveness-group");
        produce_numbered(&client, &topic, 0..20).await;
        let config = ConsumerConfig {
            session_timeout: Duration::from_secs(6),
            max_poll_interval: Duration::from_secs(60),
            enable_auto_commit: false,
            ..member(&group, GroupProtocol::Classic)
        };
        let mut consumer = Consumer::new(Arc::clone(&client), config);
        consumer.subscribe(Subscription::Topics(vec![topic.clone()])).unwrap();
        let started = Instant::now();
        let mut read = 0;
        while read < 20 {
            assert!(started.elapsed() < TIMEOUT, "read {read} of 20");
            if let Some(chunk) = consumer.poll(Duration::from_millis(300)).await.unwrap() {
                read += chunk.records.len();
            }
        }
        let before = consumer.member_state().unwrap();
        // The "batch": 18 s without a poll, three times session.timeout.ms.
        tokio::time::sleep(Duration::from_secs(18)).await;
        let results = consumer.commit_positions().await.unwrap();
        assert!(results.values().all(Result::is_ok), "{results:?}");
        let after = consumer.member_state().unwrap();
        assert_eq!(
            (after.generation_or_epoch, &after.member_id, after.owned.len()),
            (before.generation_or_epoch, &before.member_id, 2),
            "the member kept its generation and partitions"
        );
        consumer.close().await.unwrap();

        // The same member with max.poll.interval.ms = 4 s, whose application stops asking.
        let config = ConsumerConfig {
            session_timeout: Duration::from_secs(6),
            max_poll_interval: Duration::from_secs(4),
            enable_auto_commit: false,
            ..member(&group, GroupProtocol::Classic)
        };
        let mut stalled = Consumer::new(Arc::clone(&client), config);
        stalled.subscribe(Subscription::Topics(vec![topic.clone()])).unwrap();
        let started = Instant::now();
        while stalled.assignment().len() < 2 {
            assert!(started.elapsed() < TIMEOUT, "no assignment");
            stalled.poll(Duration::from_millis(300)).await.unwrap();
        }
        let had = stalled.assignment();
        tokio::time::sleep(Duration::from_secs(8)).await;
        let told = stalled.poll(Duration::from_millis(300)).await;
        let Err(ConsumerError::PollIntervalExceeded { elapsed, limit }) = &told else { panic!("{told:?}") };
        assert!(*elapsed >= *limit && *limit == Duration::from_secs(4), "{told:?}");
        let refused = stalled.commit(&[(had[0].clone(), 1)]).await.unwrap_err();
        assert!(
            matches!(refused, ConsumerError::NotOwned { reason: NotOwnedReason::Lost, .. }),
            "a commit after leaving is refused before it is sent: {refused}"
        );
        // The next polls join again.
        let started = Instant::now();
        while stalled.assignment().len() < 2 {
            assert!(started.elapsed() < TIMEOUT, "did not rejoin");
            let _ = stalled.poll(Duration::from_millis(300)).await;
        }
        stalled.close().await.unwrap();
    });
}

/// Seed 003's control, on the same broker: the Java consumer whose batch takes longer than
/// max.poll.interval.ms (6 s here, the batch 12 s) has left the group when it commits, and
/// commitSync fails with CommitFailedException — the failure the kwire member above does not
/// have (its heartbeats are its own task's), or, given the same interval, reports as
/// `PollIntervalExceeded` on its next poll before any commit is attempted.
#[test]
fn seed_003_control_the_java_consumer_whose_batch_passes_max_poll_interval_fails_its_commit() {
    let Some(cluster) = support::cluster() else { return };
    let topic = support::multi_thread_runtime().block_on(async {
        let client = connect(&cluster).await;
        let topic = support::new_topic_with_leaders(&client, "group-java-slow", 2).await;
        produce_numbered(&client, &topic, 0..20).await;
        topic
    });
    let group = support::unique("group-java-slow-group");
    let args: Vec<String> = [cluster.bootstrap.as_str(), &topic, &group, "6000", "12000"]
        .iter()
        .map(|a| (*a).to_owned())
        .collect();
    let out = support::java::run("SlowBatch.java", &args);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.first().is_some_and(|l| l.starts_with("polled ") && *l != "polled 0"), "{out}");
    assert!(lines.get(1).is_some_and(|l| l.starts_with("CommitFailedException")), "{out}");
}

#[derive(Default, Clone)]
struct Starts(Arc<Mutex<Vec<StartPosition>>>);

impl RebalanceListener for Starts {
    fn on_assigned(&mut self, started: &[StartPosition]) {
        self.0.lock().unwrap().extend_from_slice(started);
    }
}

fn a_group_members_start_follows_the_engine(protocol: GroupProtocol) {
    let Some(cluster) = support::cluster() else { return };
    support::multi_thread_runtime().block_on(async {
        let client = connect(&cluster).await;
        let topic = support::new_topic_with_leaders(&client, "group-start", 1).await;
        let tp = TopicPartition::new(topic.as_str(), 0);
        let group = support::unique("group-start-group");
        produce_numbered(&client, &topic, 0..40).await;
        let commit = OffsetToCommit { tp: tp.clone(), offset: 5, leader_epoch: None, metadata: None };
        client.commit_offsets(&group, &[commit], TIMEOUT).await.unwrap()[&tp].as_ref().unwrap();
        client.delete_records(&[(tp.clone(), 20)], TIMEOUT).await[&tp].as_ref().unwrap();

        // The default policy refuses: the next poll names the anomaly, nothing is read.
        let refusal = first_refusal(&client, member(&group, protocol), &topic).await;
        let StartRefusal::Policy(Anomaly::DataLoss { stored, log_start, lost, .. }) = refusal else {
            panic!("{refusal:?}")
        };
        assert_eq!((stored.0, log_start.0, lost), (5, 20, 15));

        // clamp starts at the log start, and the listener gets the anomaly's numbers.
        let (read, anomaly) = read_clamped(&client, member(&group, protocol), &topic, 20).await;
        assert_eq!(read, (20..40).collect::<Vec<i64>>());
        assert!(matches!(anomaly, Some(Anomaly::DataLoss { lost: 15, .. })), "{anomaly:?}");
    });
}

/// What a member of `config`'s group (default out-of-range policy: fail) is told when it
/// subscribes to `topic`: the refusal its first poll returns. Nothing is read.
async fn first_refusal(client: &Arc<Client>, config: ConsumerConfig, topic: &str) -> StartRefusal {
    let mut refusing = Consumer::new(Arc::clone(client), config);
    refusing.subscribe(Subscription::Topics(vec![topic.to_owned()])).unwrap();
    let started = Instant::now();
    let refusal = loop {
        assert!(started.elapsed() < TIMEOUT, "no refusal");
        match refusing.poll(Duration::from_millis(300)).await {
            Err(ConsumerError::StartRefused { refusal, .. }) => break refusal,
            Ok(None) => {}
            other => panic!("{other:?}"),
        }
    };
    refusing.close().await.unwrap();
    *refusal
}

/// The offsets a member of `config`'s group reads of `topic` under the `clamp` policy, until
/// it has `count`, and the anomaly its listener was told of at the start.
async fn read_clamped(
    client: &Arc<Client>,
    config: ConsumerConfig,
    topic: &str,
    count: usize,
) -> (Vec<i64>, Option<Anomaly>) {
    let starts = Starts::default();
    let config = ConsumerConfig { out_of_range: OutOfRangePolicy::Clamp, ..config };
    let mut clamped = Consumer::new(Arc::clone(client), config);
    clamped.set_listener(starts.clone());
    clamped.subscribe(Subscription::Topics(vec![topic.to_owned()])).unwrap();
    let started = Instant::now();
    let mut read = Vec::new();
    while read.len() < count {
        assert!(started.elapsed() < TIMEOUT, "read {read:?} after clamp");
        if let Some(chunk) = clamped.poll(Duration::from_millis(300)).await.unwrap() {
            read.extend(chunk.records.iter().map(|r| r.offset));
        }
    }
    clamped.close().await.unwrap();
    let anomaly = starts.0.lock().unwrap().first().and_then(|s| s.anomaly);
    (read, anomaly)
}

#[test]
fn a_classic_members_start_below_the_log_start_is_refused_or_clamped_with_its_numbers() {
    a_group_members_start_follows_the_engine(GroupProtocol::Classic);
}

#[test]
fn a_kip_848_members_start_below_the_log_start_is_refused_or_clamped_with_its_numbers() {
    a_group_members_start_follows_the_engine(GroupProtocol::Consumer);
}

/// Item 6: read-process-write exactly once. A transactional producer commits the member's
/// offsets with its group metadata (KIP-447): the copy equals the input, the group's commits
/// are the input's ends, and a member's metadata from before a rebalance is fenced.
#[test]
fn a_read_process_write_copy_through_a_group_member_is_exact_and_a_stale_member_is_fenced() {
    let Some(cluster) = support::cluster() else { return };
    support::multi_thread_runtime().block_on(async {
        let client = connect(&cluster).await;
        let input = support::new_topic_with_leaders(&client, "eos-in", 2).await;
        let output = support::new_topic_with_leaders(&client, "eos-out", 2).await;
        let group = support::unique("eos-group");
        produce_numbered(&client, &input, 0..100).await;
        let config = ConsumerConfig { enable_auto_commit: false, ..member(&group, GroupProtocol::Classic) };
        let mut consumer = Consumer::new(Arc::clone(&client), config);
        consumer.subscribe(Subscription::Topics(vec![input.clone()])).unwrap();
        let producer_config = kafka_client::ProducerConfig {
            transactional_id: Some(support::unique("eos-txn")),
            ..ProducerConfig::default()
        };
        let producer = Producer::new(Arc::clone(&client), producer_config).unwrap();
        producer.init_transactions().await.unwrap();
        let started = Instant::now();
        let mut copied = 0;
        let mut stale = None;
        while copied < 100 {
            assert!(started.elapsed() < TIMEOUT, "copied {copied} of 100");
            let Some(chunk) = consumer.poll(Duration::from_millis(300)).await.unwrap() else { continue };
            producer.begin_transaction().await.unwrap();
            for r in &chunk.records {
                producer.send(&output, ProduceRecord::new(r.key.clone(), r.value.clone())).await.unwrap();
            }
            let next = chunk.records.last().unwrap().offset + 1;
            let offsets = [OffsetToCommit {
                tp: chunk.partition.clone(),
                offset: next,
                leader_epoch: None,
                metadata: None,
            }];
            let metadata = consumer.group_metadata().unwrap();
            assert!(metadata.is_member() && metadata.generation_id > 0, "{metadata:?}");
            stale.get_or_insert_with(|| metadata.clone());
            producer.send_offsets_to_transaction_of(&offsets, &metadata).await.unwrap();
            producer.commit_transaction().await.unwrap();
            copied += chunk.records.len();
        }

        // Another member joins: the first's generation moves on, and its old metadata is fenced.
        let mut other = Consumer::new(Arc::clone(&client), member(&group, GroupProtocol::Classic));
        other.subscribe(Subscription::Topics(vec![input.clone()])).unwrap();
        let stale = stale.unwrap();
        let started = Instant::now();
        while consumer.group_metadata().unwrap().generation_id == stale.generation_id
            || other.assignment().is_empty()
        {
            assert!(started.elapsed() < TIMEOUT, "no rebalance");
            let _ = tokio::join!(
                consumer.poll(Duration::from_millis(100)),
                other.poll(Duration::from_millis(100))
            );
        }
        producer.begin_transaction().await.unwrap();
        let tp = TopicPartition::new(input.as_str(), 0);
        let zombie = [OffsetToCommit { tp, offset: 1, leader_epoch: None, metadata: None }];
        let fenced = producer.send_offsets_to_transaction_of(&zombie, &stale).await;
        assert!(fenced.is_err(), "a commit under an old generation went through");
        let _ = producer.abort_transaction().await;

        // read_committed sees the copy exactly once.
        let reader_config = ConsumerConfig {
            isolation: kafka_client::Isolation::ReadCommitted,
            start: StartPolicy::Earliest,
            ..ConsumerConfig::default()
        };
        let mut reader = Consumer::new(Arc::clone(&client), reader_config);
        let parts: Vec<TopicPartition> = (0..2).map(|p| TopicPartition::new(output.as_str(), p)).collect();
        reader.assign(&parts).await.unwrap();
        let mut values = Vec::new();
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5) || values.len() < 100 {
            assert!(started.elapsed() < TIMEOUT, "read {} of 100 copies", values.len());
            if let Some(chunk) = reader.poll(Duration::from_millis(300)).await.unwrap() {
                values.extend(chunk.records.iter().map(|r| r.value.clone().unwrap()));
            }
        }
        values.sort();
        let mut expected: Vec<Bytes> = (0..100).map(|i| Bytes::from(format!("{i}"))).collect();
        expected.sort();
        assert_eq!(values, expected, "the copy is the input, once");
        let committed =
            client.committed_offsets(&group, Some(std::slice::from_ref(&input)), TIMEOUT).await.unwrap();
        assert_eq!(committed.offsets.values().map(|c| c.offset).sum::<i64>(), 100);
        consumer.close().await.unwrap();
        other.close().await.unwrap();
    });
}

/// A group's commit above the end of a topic deleted and recreated, stored with the old topic's
/// id (the commit a member makes as it runs through the recreation: Kafka drops the group's
/// offsets with the topic, the member's next commit puts its old position back). The default
/// policy refuses with `topic_recreated` and its numbers; clamp starts at the new log's start,
/// the listener told the same — no silent reset to latest, as `auto.offset.reset` would do.
fn a_group_members_start_on_a_recreated_topic_follows_the_engine(protocol: GroupProtocol) {
    let Some(cluster) = support::cluster() else { return };
    let topic = support::unique("group-recreated");
    support::create_topic_retrying(&cluster, &topic, 1);
    let tp = TopicPartition::new(topic.as_str(), 0);
    let group = support::unique("group-recreated-group");
    let old_id = support::multi_thread_runtime().block_on(async {
        let client = connect(&cluster).await;
        produce_numbered(&client, &topic, 0..40).await;
        let metadata = client.refresh_metadata(std::slice::from_ref(&topic)).await.unwrap();
        metadata.topic(&topic).unwrap().topic_id.expect("Kafka 4.1 names its topics' ids")
    });
    support::delete_topic_and_wait(&cluster, &topic);
    support::create_topic_retrying(&cluster, &topic, 1);
    support::multi_thread_runtime().block_on(async {
        let client = connect(&cluster).await;
        produce_numbered(&client, &topic, 0..10).await;
        let commit = OffsetToCommit {
            tp: tp.clone(),
            offset: 30,
            leader_epoch: None,
            metadata: kafka_client::topic_id_metadata(Some(old_id)),
        };
        client.commit_offsets(&group, &[commit], TIMEOUT).await.unwrap()[&tp].as_ref().unwrap();

        let refusal = first_refusal(&client, member(&group, protocol), &topic).await;
        let StartRefusal::Policy(Anomaly::TopicRecreated { stored, end, stored_topic_id, topic_id, .. }) =
            refusal
        else {
            panic!("{refusal:?}")
        };
        assert_eq!((stored.0, end.0), (30, 10));
        assert_ne!(stored_topic_id, topic_id);

        let (read, anomaly) = read_clamped(&client, member(&group, protocol), &topic, 10).await;
        assert_eq!(read, (0..10).collect::<Vec<i64>>(), "the whole new log, from its start");
        assert!(matches!(anomaly, Some(Anomaly::TopicRecreated { .. })), "{anomaly:?}");
    });
}

#[test]
fn a_classic_members_start_on_a_recreated_topic_is_refused_or_clamped_with_its_numbers() {
    a_group_members_start_on_a_recreated_topic_follows_the_engine(GroupProtocol::Classic);
}

#[test]
fn a_kip_848_members_start_on_a_recreated_topic_is_refused_or_clamped_with_its_numbers() {
    a_group_members_start_on_a_recreated_topic_follows_the_engine(GroupProtocol::Consumer);
}
