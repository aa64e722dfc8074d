//! The seeds' situations end to end, on the real cluster and the real ZooKeeper: a topic
//! recreated under offsets kept in ZooKeeper (seed 000), DeleteRecords past the stored offset,
//! partitions added, a restart from the file store (seed 004), and at-least-once commits.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use kwire_stores::FileStore;
use kwire_stores::KafkaGroupStore;
use kwire_stream::{
    Action, Anomaly, Batch, Control, DirectStream, Event, Limits, OutOfRangePolicy, Resume, StreamConfig,
    StreamError, ZkStore,
};
use offset_engine::{Offset, TopicId};
use offset_store::OffsetStore;

use support::{cluster, create_topic, delete_topic, produce, tp, unique, values};

fn value_strings(batch: &Batch, partition: i32) -> Vec<String> {
    batch
        .partitions()
        .iter()
        .filter(|p| p.range.partition == partition)
        .flat_map(|p| p.records.iter())
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
        .collect()
}

fn anomalies(events: &[Event]) -> Vec<(i32, Anomaly, Action)> {
    let mut out: Vec<(i32, Anomaly, Action)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Anomaly { tp, anomaly, action } => Some((tp.partition, *anomaly, *action)),
            _ => None,
        })
        .collect();
    out.sort_by_key(|(p, _, _)| *p);
    out
}

/// Every planned range satisfies `from <= until`, and the records are inside it, in order.
fn assert_ranges_sound(batch: &Batch) {
    for p in batch.partitions() {
        assert!(p.range.from <= p.range.until, "negative range {}", p.range);
        let offsets: Vec<i64> = p.records.iter().map(|r| r.offset).collect();
        assert!(offsets.windows(2).all(|w| w[0] < w[1]), "records out of order in {}", p.range);
        assert!(
            offsets.iter().all(|o| (p.range.from..p.range.until).contains(o)),
            "record outside {}",
            p.range
        );
    }
}

async fn zk_store(cluster: &support::Cluster) -> ZkStore {
    ZkStore::connect(&cluster.zookeeper, Duration::from_secs(10), Duration::from_secs(30))
        .await
        .expect("ZooKeeper")
}

/// Reads batches and commits them until a batch has no records; every record value, by
/// partition.
async fn drain<S: OffsetStore>(stream: &mut DirectStream<S>) -> BTreeMap<i32, Vec<String>> {
    let mut seen: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for _ in 0..100 {
        let batch = stream.next_batch().await.expect("batch");
        assert_ranges_sound(&batch);
        if batch.record_count() == 0 {
            stream.commit(&batch).await.expect("commit");
            return seen;
        }
        for p in batch.partitions() {
            seen.entry(p.range.partition).or_default().extend(value_strings(&batch, p.range.partition));
        }
        let report = stream.commit(&batch).await.expect("commit");
        assert!(report.rejected.is_empty(), "{report:?}");
    }
    panic!("the stream never ran dry");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_recreated_with_fewer_records_under_zookeeper_offsets_resumes_at_the_new_log_start() {
    let Some(cluster) = cluster() else { return };
    let client = support::client(&cluster).await;
    let topic = unique("stream-recreated");
    let group = unique("stream-recreated-group");
    let old_id = create_topic(&client, &topic, 2).await;
    for p in 0..2 {
        produce(&client, &topic, p, &values("old", p, 0, 20)).await;
    }
    let config = StreamConfig::new(group.clone(), [topic.clone()]).out_of_range(OutOfRangePolicy::Clamp);
    let mut stream = DirectStream::new(client.clone(), zk_store(&cluster).await, config.clone()).unwrap();
    let seen = drain(&mut stream).await;
    assert_eq!(seen[&0], values("old", 0, 0, 20));
    assert_eq!(seen[&1], values("old", 1, 0, 20));
    // What a Spark job or a Kafka 0.8 consumer would read: decimal 20, and kwire's topic id beside it.
    let in_zk = zk_store(&cluster).await.load(&group, None).await.unwrap();
    assert_eq!(in_zk.iter().map(|o| (o.partition, o.offset)).collect::<Vec<_>>(), [(0, 20), (1, 20)]);
    assert!(in_zk.iter().all(|o| o.topic_id == Some(old_id)), "{in_zk:?}");

    delete_topic(&client, &topic).await;
    let new_id = create_topic(&client, &topic, 2).await;
    assert_ne!(new_id, old_id);
    for p in 0..2 {
        produce(&client, &topic, p, &values("new", p, 0, 5)).await;
    }

    // A restarted job with the default policy: the situation is named with its numbers, nothing
    // is fetched, nothing crashes.
    let strict = config.clone().out_of_range(OutOfRangePolicy::Fail);
    let mut restarted = DirectStream::new(client.clone(), zk_store(&cluster).await, strict).unwrap();
    let err = restarted.next_batch().await.expect_err("fail policy");
    let StreamError::PolicyFailed { events } = &err else { panic!("{err}") };
    let found = anomalies(events);
    assert_eq!(found.len(), 2, "{err}");
    for (_, anomaly, action) in &found {
        let expected = Anomaly::TopicRecreated {
            stored_topic_id: TopicId(old_id.0),
            topic_id: TopicId(new_id.0),
            stored: Offset(20),
            log_start: Offset(0),
            end: Offset(5),
            skipped: 0,
        };
        assert_eq!((*anomaly, *action), (expected, Action::Failed));
    }

    // The stream that was running all along survives it: resumes at the new log start.
    let batch = stream.next_batch().await.expect("batch after the recreation");
    assert_ranges_sound(&batch);
    for (_, anomaly, action) in anomalies(batch.events()) {
        assert!(
            matches!(anomaly, Anomaly::TopicRecreated { stored: Offset(20), end: Offset(5), .. }),
            "{anomaly}"
        );
        assert_eq!(action, Action::Resumed { from: 0, policy: Resume::OutOfRange(OutOfRangePolicy::Clamp) });
    }
    let ranges: Vec<(i32, i64, i64)> =
        batch.offset_ranges().iter().map(|r| (r.partition, r.from, r.until)).collect();
    assert_eq!(ranges, [(0, 0, 5), (1, 0, 5)]);
    assert_eq!(value_strings(&batch, 1), values("new", 1, 0, 5));
    let report = stream.commit(&batch).await.unwrap();
    assert_eq!(report.written.len(), 2, "the reset is written although it moves the offsets back");
    let in_zk = zk_store(&cluster).await.load(&group, None).await.unwrap();
    assert!(in_zk.iter().all(|o| o.offset == 5 && o.topic_id == Some(new_id)), "{in_zk:?}");

    // Offsets an old job left (decimal text only, no topic id) cannot tell a recreated topic from
    // a truncated one: ahead of the log, resumed at the log start by the earliest policy.
    let old_group = unique("stream-recreated-old-job");
    let zk = kwire_zk::ZkOffsetStore::connect(&cluster.zookeeper, Duration::from_secs(10)).await.unwrap();
    zk.read(&old_group, None).await.unwrap();
    zk.write(&old_group, &[kwire_zk::StoredOffset::new(topic.clone(), 0, 20)]).await.unwrap();
    let config = StreamConfig::new(old_group, [topic.clone()]).out_of_range(OutOfRangePolicy::Earliest);
    let mut old_job = DirectStream::new(client.clone(), zk_store(&cluster).await, config).unwrap();
    let batch = old_job.next_batch().await.unwrap();
    let found = anomalies(batch.events());
    assert_eq!(
        found[0].1,
        Anomaly::OffsetAheadOfLog { stored: Offset(20), log_start: Offset(0), high_watermark: Offset(5) }
    );
    assert!(matches!(found[1].1, Anomaly::NewPartition { .. }), "partition 1 had nothing stored: {found:?}");
    assert_eq!(batch.offset_ranges().iter().map(|r| (r.from, r.until)).collect::<Vec<_>>(), [(0, 5), (0, 5)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_deleted_past_the_stored_offset_are_data_loss_with_the_exact_count() {
    let Some(cluster) = cluster() else { return };
    let client = support::client(&cluster).await;
    let topic = unique("stream-deleted");
    let group = unique("stream-deleted-group");
    let id = create_topic(&client, &topic, 1).await;
    produce(&client, &topic, 0, &values("v", 0, 0, 100)).await;
    let store = KafkaGroupStore::new(client.clone(), Duration::from_secs(30));
    // Without reading ahead: a batch read ahead before the deletion below would hold [30, 60)
    // as read while it existed, and the loss would be counted from 60.
    let config = StreamConfig::new(group.clone(), [topic.clone()])
        .limits(Limits { max_per_partition: Some(30), ..Limits::default() })
        .prefetch(false);
    let mut stream = DirectStream::new(client.clone(), store.clone(), config).unwrap();
    let batch = stream.next_batch().await.unwrap();
    assert_eq!(batch.offset_ranges()[0].until, 30);
    stream.commit(&batch).await.unwrap();
    // The Kafka store keeps the topic id in the commit metadata and the leader epoch beside it.
    let stored = store.load(&group, Some(std::slice::from_ref(&topic))).await.unwrap();
    assert_eq!((stored[0].offset, stored[0].topic_id), (30, Some(id)));
    assert!(stored[0].leader_epoch.is_some(), "{stored:?}");

    let deleted = client.delete_records(&[(tp(&topic, 0), 70)], Duration::from_secs(30)).await;
    assert_eq!(deleted.get(&tp(&topic, 0)).map(|r| r.as_ref().ok().copied()), Some(Some(70)));

    let err = stream.next_batch().await.expect_err("the default policy fails on data loss");
    let found = anomalies(err.events());
    assert_eq!(
        found,
        [(
            0,
            Anomaly::DataLoss { stored: Offset(30), log_start: Offset(70), lost: 40, skipped: 0 },
            Action::Failed
        )]
    );
    stream.set_out_of_range(OutOfRangePolicy::Clamp);
    let batch = stream.next_batch().await.unwrap();
    assert_eq!(
        anomalies(batch.events())[0].1,
        Anomaly::DataLoss { stored: Offset(30), log_start: Offset(70), lost: 40, skipped: 40 },
        "resuming at the log start passes over the 40 lost records, and says so"
    );
    assert_eq!(batch.offset_ranges()[0].from, 70);
    assert_eq!(batch.offset_ranges()[0].until, 100);
    assert_eq!(value_strings(&batch, 0), values("v", 0, 70, 30));
    stream.commit(&batch).await.unwrap();
    assert_eq!(store.load(&group, None).await.unwrap()[0].offset, 100);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_added_are_read_from_their_start() {
    let Some(cluster) = cluster() else { return };
    let client = support::client(&cluster).await;
    let topic = unique("stream-grown");
    let dir = std::env::temp_dir().join(unique("kwire-stream-grown"));
    std::fs::create_dir_all(&dir).unwrap();
    create_topic(&client, &topic, 2).await;
    for p in 0..2 {
        produce(&client, &topic, p, &values("v", p, 0, 10)).await;
    }
    let store = FileStore::new(dir.join("offsets.json"));
    let mut stream =
        DirectStream::new(client.clone(), store, StreamConfig::new("grown", [topic.clone()])).unwrap();
    let seen = drain(&mut stream).await;
    assert_eq!(seen.values().map(Vec::len).sum::<usize>(), 20);

    let grown = client.create_partitions(&[(topic.clone(), 4)], Duration::from_secs(60)).await;
    assert!(matches!(grown.get(&topic), Some(Ok(4))), "{grown:?}");
    for p in 2..4 {
        produce(&client, &topic, p, &values("v", p, 0, 7)).await;
    }
    produce(&client, &topic, 0, &values("v", 0, 10, 3)).await;

    let batch = stream.next_batch().await.unwrap();
    assert_ranges_sound(&batch);
    let found = anomalies(batch.events());
    assert_eq!(found.len(), 2, "{found:?}");
    for (p, anomaly, action) in found {
        assert!(p >= 2);
        assert_eq!(anomaly, Anomaly::NewPartition { log_start: Offset(0), end: Offset(7), skipped: 0 });
        assert_eq!(action, Action::Resumed { from: 0, policy: Resume::Start });
    }
    let ranges: Vec<(i32, i64, i64)> =
        batch.offset_ranges().iter().map(|r| (r.partition, r.from, r.until)).collect();
    assert_eq!(ranges, [(0, 10, 13), (1, 10, 10), (2, 0, 7), (3, 0, 7)]);
    assert_eq!(value_strings(&batch, 3), values("v", 3, 0, 7));
    stream.commit(&batch).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_from_the_file_store_continues_exactly_where_it_stopped() {
    let Some(cluster) = cluster() else { return };
    let client = support::client(&cluster).await;
    let topic = unique("stream-restart");
    let dir = std::env::temp_dir().join(unique("kwire-stream-restart"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("offsets.json");
    let id = create_topic(&client, &topic, 3).await;
    for p in 0..3 {
        produce(&client, &topic, p, &values("v", p, 0, 50)).await;
    }
    let config = StreamConfig::new("restart", [topic.clone()])
        .limits(Limits { max_per_partition: Some(20), ..Limits::default() });
    let mut first = DirectStream::new(client.clone(), FileStore::new(&path), config.clone()).unwrap();
    let batch = first.next_batch().await.unwrap();
    first.commit(&batch).await.unwrap();
    // Read but never committed: the job dies while processing it.
    let unfinished = first.next_batch().await.unwrap();
    assert!(unfinished.offset_ranges().iter().all(|r| (r.from, r.until) == (20, 40)));
    drop(first);

    let saved = FileStore::new(&path).load("restart").unwrap();
    assert_eq!(saved.len(), 3, "every partition saved, not only the last one (seed 004)");
    assert!(saved.iter().all(|o| o.offset == 20 && o.topic_id == Some(id) && o.leader_epoch.is_some()));

    let mut second = DirectStream::new(client.clone(), FileStore::new(&path), config).unwrap();
    let again = second.next_batch().await.unwrap();
    assert_eq!(again.offset_ranges(), unfinished.offset_ranges(), "the unfinished batch comes again");
    for p in 0..3 {
        assert_eq!(value_strings(&again, p), values("v", p, 20, 20));
    }
    second.commit(&again).await.unwrap();
    let rest = drain(&mut second).await;
    for p in 0..3 {
        assert_eq!(rest[&p], values("v", p, 40, 10));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_commits_a_batch_only_after_the_application_finished_it() {
    let Some(cluster) = cluster() else { return };
    let client = support::client(&cluster).await;
    let topic = unique("stream-run");
    let dir = std::env::temp_dir().join(unique("kwire-stream-run"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("offsets.json");
    create_topic(&client, &topic, 2).await;
    for p in 0..2 {
        produce(&client, &topic, p, &values("v", p, 0, 12)).await;
    }
    let config = StreamConfig::new("run", [topic.clone()])
        .limits(Limits { max_per_partition: Some(5), ..Limits::default() })
        .poll_interval(Duration::from_millis(50));
    let mut stream = DirectStream::new(client.clone(), FileStore::new(&path), config).unwrap();
    let err = stream
        .run(|batch| async move {
            assert_eq!(batch.record_count(), 10);
            Err::<Control, _>("the output is down")
        })
        .await
        .expect_err("the application failed");
    assert!(matches!(err, StreamError::Application(_)), "{err}");
    assert!(FileStore::new(&path).load("run").unwrap().is_empty(), "nothing committed");

    let mut seen: Vec<String> = Vec::new();
    let mut batches = 0;
    stream
        .run(|batch| {
            batches += 1;
            seen.extend(batch.records().map(|(_, _, r)| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned()));
            let done = seen.len() >= 24;
            async move { Ok::<_, std::convert::Infallible>(if done { Control::Stop } else { Control::Continue }) }
        })
        .await
        .unwrap();
    assert_eq!(batches, 3, "5 + 5 + 2 records per partition");
    let mut expected: Vec<String> = (0..2).flat_map(|p| values("v", p, 0, 12)).collect();
    expected.sort();
    seen.sort();
    assert_eq!(seen, expected);
    let stored = FileStore::new(&path).load("run").unwrap();
    assert!(stored.iter().all(|o| o.offset == 12), "{stored:?}");
}
