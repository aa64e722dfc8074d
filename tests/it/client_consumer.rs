//! The library `Consumer` against the real cluster, by hand-assigned partitions: it follows
//! the log past its end, resumes from its group's commit, and starts where offset-engine's
//! rules say when the commit is above a recreated topic or below the log start after
//! retention — with the anomaly and its numbers reported, never a silent reset.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_client::{
    Client, ClientConfig, Consumer, ConsumerConfig, ConsumerError, OffsetToCommit, ProduceRecord, Producer,
    ProducerConfig, RebalanceListener, StartPosition, StartRefusal, TopicPartition,
};
use offset_engine::{Anomaly, FromReason, OutOfRangePolicy, StartPolicy};

use crate::support;

const TIMEOUT: Duration = Duration::from_secs(60);

async fn connect(cluster: &support::Cluster) -> Arc<Client> {
    Arc::new(Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap())
}

/// Writes `count` keyed records (`first..first+count` as keys and values) and waits for them.
async fn produce(client: &Arc<Client>, topic: &str, first: usize, count: usize) {
    let producer = Producer::new(Arc::clone(client), ProducerConfig::default()).unwrap();
    for i in first..first + count {
        let text = Bytes::from(format!("{i}"));
        producer.send(topic, ProduceRecord::new(Some(text.clone()), Some(text))).await.unwrap();
    }
    producer.flush().await;
}

/// Polls until `count` records came (in offset order per partition, none twice), returning
/// the values read per partition.
async fn read(consumer: &mut Consumer, count: usize) -> BTreeMap<TopicPartition, Vec<i64>> {
    let mut read: BTreeMap<TopicPartition, Vec<i64>> = BTreeMap::new();
    let started = Instant::now();
    let mut total = 0;
    while total < count {
        assert!(started.elapsed() < TIMEOUT, "read {total} of {count} records");
        let Some(chunk) = consumer.poll(Duration::from_millis(500)).await.unwrap() else { continue };
        let offsets = read.entry(chunk.partition.clone()).or_default();
        for r in &chunk.records {
            if let Some(last) = offsets.last() {
                assert!(r.offset > *last, "{}: offset {} after {last}", chunk.partition, r.offset);
            }
            offsets.push(r.offset);
        }
        total += chunk.records.len();
        assert_eq!(consumer.position(&chunk.partition), chunk.records.last().map(|r| r.offset + 1));
    }
    read
}

fn earliest(group: Option<&str>) -> ConsumerConfig {
    ConsumerConfig {
        group_id: group.map(str::to_owned),
        start: StartPolicy::Earliest,
        ..ConsumerConfig::default()
    }
}

#[test]
fn an_assigned_consumer_follows_the_log_and_resumes_from_its_commit() {
    let Some(cluster) = support::cluster() else { return };
    support::multi_thread_runtime().block_on(async {
        let client = connect(&cluster).await;
        let topic = support::new_topic_with_leaders(&client, "consumer-assign", 3).await;
        let group = support::unique("consumer-assign-group");
        produce(&client, &topic, 0, 300).await;
        let partitions: Vec<TopicPartition> =
            (0..3).map(|p| TopicPartition::new(topic.as_str(), p)).collect();

        let mut consumer = Consumer::new(Arc::clone(&client), earliest(Some(&group)));
        let started = consumer.assign(&partitions).await.unwrap();
        assert!(started
            .iter()
            .all(|s| s.as_ref().is_ok_and(|s| s.offset == 0 && s.reason == FromReason::StartEarliest)));
        let first = read(&mut consumer, 300).await;
        for (tp, offsets) in &first {
            assert_eq!(offsets, &(0..offsets.len() as i64).collect::<Vec<_>>(), "{tp}: every offset once");
        }

        // Following: records written after the end was reached arrive without a new assign.
        produce(&client, &topic, 300, 30).await;
        read(&mut consumer, 30).await;
        let positions = consumer.positions();
        assert_eq!(positions.values().sum::<i64>(), 330);
        let committed = consumer.commit_positions().await.unwrap();
        assert!(committed.values().all(Result::is_ok), "{committed:?}");

        // A commit for a partition the consumer does not read is refused before it is sent.
        let other = TopicPartition::new(topic.as_str(), 7);
        let refused = consumer.commit(&[(other.clone(), 1)]).await.unwrap_err();
        assert!(
            matches!(&refused, ConsumerError::NotOwned { partition, .. } if *partition == other),
            "{refused}"
        );

        // Pause stops a partition's records; seek rewinds it; resume reads it from there.
        let p0 = partitions[0].clone();
        consumer.pause(std::slice::from_ref(&p0));
        consumer.seek(&p0, 0).unwrap();
        assert_eq!((consumer.paused(), consumer.position(&p0)), (vec![p0.clone()], Some(0)));
        produce(&client, &topic, 330, 30).await;
        let quiet = Instant::now();
        while quiet.elapsed() < Duration::from_secs(2) {
            if let Some(chunk) = consumer.poll(Duration::from_millis(200)).await.unwrap() {
                assert_ne!(chunk.partition, p0, "a record of a paused partition");
            }
        }
        consumer.resume(std::slice::from_ref(&p0));
        let resumed = Instant::now();
        let first_of_p0 = loop {
            assert!(resumed.elapsed() < TIMEOUT, "nothing of {p0} after resume");
            match consumer.poll(Duration::from_millis(500)).await.unwrap() {
                Some(chunk) if chunk.partition == p0 => break chunk.records[0].offset,
                _ => {}
            }
        };
        assert_eq!(first_of_p0, 0, "resumed at the seek");
        consumer.close().await.unwrap();
        assert!(matches!(consumer.poll(Duration::ZERO).await, Err(ConsumerError::Closed)));

        // A second consumer of the group starts at the commit, not at auto.offset.reset.
        let mut second = Consumer::new(Arc::clone(&client), earliest(Some(&group)));
        let starts = second.assign(&partitions).await.unwrap();
        for s in starts {
            let s = s.unwrap();
            assert_eq!((s.offset, s.reason, s.anomaly), (positions[&s.partition], FromReason::Stored, None));
        }
    });
}

/// Records what the consumer tells the application.
#[derive(Default, Clone)]
struct Seen(Arc<Mutex<Vec<StartPosition>>>);

impl RebalanceListener for Seen {
    fn on_assigned(&mut self, started: &[StartPosition]) {
        self.0.lock().unwrap().extend_from_slice(started);
    }
}

#[test]
fn a_commit_the_log_cannot_honour_is_refused_or_moved_by_the_chosen_policy_with_its_numbers() {
    let Some(cluster) = support::cluster() else { return };
    support::multi_thread_runtime().block_on(async {
        let client = connect(&cluster).await;
        let topic = support::new_topic_with_leaders(&client, "consumer-policy", 1).await;
        let tp = TopicPartition::new(topic.as_str(), 0);
        let group = support::unique("consumer-policy-group");
        produce(&client, &topic, 0, 40).await;

        // Retention: the log start passes the commit.
        let commit =
            |offset: i64| OffsetToCommit { tp: tp.clone(), offset, leader_epoch: None, metadata: None };
        client.commit_offsets(&group, &[commit(5)], TIMEOUT).await.unwrap()[&tp].as_ref().unwrap();
        client.delete_records(&[(tp.clone(), 20)], TIMEOUT).await[&tp].as_ref().unwrap();
        let mut consumer = Consumer::new(Arc::clone(&client), earliest(Some(&group)));
        let refused = consumer.assign(std::slice::from_ref(&tp)).await.unwrap().remove(0).unwrap_err();
        let ConsumerError::StartRefused { refusal, .. } = &refused else { panic!("{refused}") };
        let StartRefusal::Policy(Anomaly::DataLoss { stored, log_start, lost, .. }) = refusal.as_ref() else {
            panic!("{refused}")
        };
        assert_eq!((stored.0, log_start.0, *lost), (5, 20, 15), "{refused}");
        // The refusal is also what the next poll says, and nothing of the partition is read.
        let polled = consumer.poll(Duration::from_millis(300)).await;
        assert!(matches!(polled, Err(ConsumerError::StartRefused { .. })), "{polled:?}");
        assert!(matches!(consumer.poll(Duration::from_millis(300)).await, Ok(None)));
        assert_eq!(consumer.position(&tp), None);
        // seek gives it a position the application chose.
        consumer.seek(&tp, 20).unwrap();
        assert_eq!(read(&mut consumer, 20).await[&tp].first(), Some(&20));

        let seen = Seen::default();
        let config = ConsumerConfig { out_of_range: OutOfRangePolicy::Clamp, ..earliest(Some(&group)) };
        let mut clamped = Consumer::new(Arc::clone(&client), config);
        clamped.set_listener(seen.clone());
        let start = clamped.assign(std::slice::from_ref(&tp)).await.unwrap().remove(0).unwrap();
        assert_eq!((start.offset, start.reason), (20, FromReason::OutOfRange(OutOfRangePolicy::Clamp)));
        assert!(matches!(start.anomaly, Some(Anomaly::DataLoss { .. })), "{start:?}");
        assert_eq!(seen.0.lock().unwrap().as_slice(), std::slice::from_ref(&start), "the listener is told");

        // A recreated topic: a commit that names the old topic id (a member that read through
        // the deletion) above the new log's end.
        let old_id = client
            .refresh_metadata(std::slice::from_ref(&topic))
            .await
            .unwrap()
            .topic(&topic)
            .unwrap()
            .topic_id;
        support::delete_topic_and_wait(&cluster, &topic);
        support::create_topic_retrying(&cluster, &topic, 1);
        produce(&client, &topic, 0, 10).await;
        let stale = OffsetToCommit { metadata: kafka_client::topic_id_metadata(old_id), ..commit(40) };
        client.commit_offsets(&group, &[stale], TIMEOUT).await.unwrap()[&tp].as_ref().unwrap();
        let config = ConsumerConfig { out_of_range: OutOfRangePolicy::Clamp, ..earliest(Some(&group)) };
        let mut after = Consumer::new(Arc::clone(&client), config);
        let start = after.assign(std::slice::from_ref(&tp)).await.unwrap().remove(0).unwrap();
        assert_eq!(start.offset, 0, "{start:?}");
        let Some(Anomaly::TopicRecreated { stored, .. }) = start.anomaly else { panic!("{start:?}") };
        assert_eq!(stored.0, 40);
        assert_eq!(read(&mut after, 10).await[&tp], (0..10).collect::<Vec<_>>());
    });
}
