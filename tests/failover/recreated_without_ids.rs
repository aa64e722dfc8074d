//! Issue 33 live: a topic deleted and recreated under a position whose only evidence is its
//! leader epoch. Kafka drops a group's offsets when their topic is deleted, so on today's brokers
//! the case comes from a consumer that ran through the deletion and commits its position into
//! the new topic, as the Java consumer does: the offset with the epoch of its last record and no
//! kwire topic id. The new log's epoch (0) is below it. Before the fix the direct stream resumed
//! at the stored offset, the engine refused the commit ("leader epoch backwards"), and every
//! batch read the same records again; now the anomaly is named and the stream moves on.
//!
//! The stored epoch is a real one of the old topic: leadership is moved by stopping the leader's
//! broker (so this lives in the serial failover binary) and starting it again.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_client::{
    Client, ClientConfig, NewTopic, OffsetToCommit, ProduceOptions, ProduceRecord, TopicPartition,
};
use kwire_stores::KafkaGroupStore;
use kwire_stream::{
    Action, Anomaly, Batch, DirectStream, Event, Limits, OutOfRangePolicy, Resume, StreamConfig, StreamError,
};
use offset_engine::{LeaderEpoch, Offset};

use super::support;
use super::{cluster_script, committed_in, runtime, Restart, BROKER_STOPS, DEADLINE};

async fn produce(client: &Client, topic: &str, prefix: &str, range: std::ops::Range<i64>) {
    let records =
        range.map(|i| ProduceRecord::new(None, Some(Bytes::from(format!("{prefix}-{i}"))))).collect();
    client.produce(topic, 0, records, &ProduceOptions::default()).await.unwrap();
}

fn values(batch: &Batch) -> Vec<String> {
    batch
        .partitions()
        .iter()
        .flat_map(|p| p.records.iter())
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
        .collect()
}

fn anomalies(events: &[Event]) -> Vec<(Anomaly, Action)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Anomaly { anomaly, action, .. } => Some((*anomaly, *action)),
            _ => None,
        })
        .collect()
}

/// The partition's current leader and leader epoch, from ListOffsets.
async fn leader_and_epoch(client: &Client, tp: &TopicPartition) -> (Option<i32>, Option<i32>) {
    match &client.log_ranges(std::slice::from_ref(tp), DEADLINE).await[tp] {
        Ok(r) => (r.leader, r.leader_epoch),
        Err(_) => (None, None),
    }
}

/// Creates `topic` (one partition, replication 3), retrying while the brokers still remove a
/// deleted one of that name.
async fn create(client: &Client, topic: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let created = client.create_topics(&[NewTopic::new(topic, 1, 3)], DEADLINE).await;
        match &created[topic] {
            Ok(_) => return,
            Err(e) => assert!(Instant::now() < deadline, "cannot create {topic}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[test]
fn a_topic_recreated_under_a_position_known_only_by_its_leader_epoch_is_named_and_the_stream_moves_on() {
    let Some(cluster) = support::cluster() else { return };
    let _serial = BROKER_STOPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    runtime().block_on(async {
        let client = Arc::new(Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap());
        let topic = support::unique("recreated-epoch");
        let group = support::unique("recreated-epoch-group");
        let tp = TopicPartition::new(topic.as_str(), 0);
        create(&client, &topic).await;
        produce(&client, &topic, "old", 0..10).await;

        // Leadership moves: the leader's broker stops (controlled shutdown) and starts again.
        let (leader, epoch) = leader_and_epoch(&client, &tp).await;
        let (victim, first_epoch) = (leader.expect("a leader"), epoch.expect("Kafka 4 reports epochs"));
        let restart = Restart(victim);
        let n = victim.to_string();
        let out = tokio::task::spawn_blocking(move || cluster_script(&["stop-broker", &n])).await.unwrap();
        assert!(out.status.success(), "stop-broker: {}", support::stderr(&out));
        let deadline = Instant::now() + DEADLINE;
        let old_epoch = loop {
            if let (Some(l), Some(e)) = leader_and_epoch(&client, &tp).await {
                if l != victim && e > first_epoch {
                    break e;
                }
            }
            assert!(Instant::now() < deadline, "leadership did not move off broker {victim}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        tokio::task::spawn_blocking(move || restart.now()).await.unwrap();
        assert!(old_epoch >= 1);

        // A consumer reads [0, 5) at that epoch and commits 5.
        let store = || KafkaGroupStore::new(Arc::clone(&client), DEADLINE);
        let capped = StreamConfig::new(group.clone(), [topic.clone()])
            .prefetch(false)
            .limits(Limits { max_per_partition: Some(5), ..Limits::default() });
        let mut reader = DirectStream::new(Arc::clone(&client), store(), capped).unwrap();
        let batch = reader.next_batch().await.unwrap();
        assert_eq!(values(&batch), (0..5).map(|i| format!("old-{i}")).collect::<Vec<_>>());
        let report = reader.commit(&batch).await.unwrap();
        assert!(report.rejected.is_empty(), "{report:?}");
        let stored_epoch = report.written[0].1.leader_epoch.expect("committed with an epoch");
        assert!(stored_epoch.0 >= old_epoch, "{stored_epoch:?} below the leader's {old_epoch}");

        // Deleted (Kafka drops the group's offsets with it) and recreated: epoch 0, 18 records.
        let deleted = client.delete_topics(std::slice::from_ref(&topic), DEADLINE).await;
        deleted[&topic].as_ref().unwrap();
        create(&client, &topic).await;
        produce(&client, &topic, "new", 0..18).await;
        assert_eq!(leader_and_epoch(&client, &tp).await.1, Some(0), "a new topic starts at epoch 0");
        // The consumer that ran through it commits its position: the epoch, no kwire id.
        let commit =
            OffsetToCommit { tp: tp.clone(), offset: 5, leader_epoch: Some(stored_epoch.0), metadata: None };
        let results = client.commit_offsets(&group, &[commit], DEADLINE).await.unwrap();
        assert!(results.values().all(Result::is_ok), "{results:?}");

        let expected = |skipped, reread| Anomaly::LeaderEpochBackwards {
            stored: Offset(5),
            stored_leader_epoch: stored_epoch,
            leader_epoch: LeaderEpoch(0),
            log_start: Offset(0),
            end: Offset(18),
            skipped,
            reread,
        };

        // `kwire plan` names it, with its numbers, and stops under the default policy (exit 3).
        let out =
            support::kwire(&cluster, &["plan", "--group", &group, "--topic", &topic, "--format", "json"]);
        assert_eq!(out.status.code(), Some(3), "{}", support::stderr(&out));
        let plan: serde_json::Value = serde_json::from_str(&support::stdout(&out)).expect("the plan as JSON");
        let anomaly = &plan["partitions"][0]["anomaly"];
        assert_eq!(anomaly["kind"], "leader_epoch_backwards", "{plan}");
        assert_eq!(
            (
                anomaly["stored"].as_i64(),
                anomaly["stored_leader_epoch"].as_i64(),
                anomaly["leader_epoch"].as_i64()
            ),
            (Some(5), Some(i64::from(stored_epoch.0)), Some(0)),
            "{plan}"
        );

        // A stream under the default policy: named, nothing read.
        let strict = StreamConfig::new(group.clone(), [topic.clone()]).prefetch(false);
        let mut strict = DirectStream::new(Arc::clone(&client), store(), strict).unwrap();
        let err = strict.next_batch().await.expect_err("the fail policy stops it");
        let StreamError::PolicyFailed { events } = &err else { panic!("{err}") };
        assert_eq!(anomalies(events), [(expected(0, 0), Action::Failed)], "{err}");

        // Under clamp: the first batch reads the new log from 0 and its commit is accepted ...
        let clamp = StreamConfig::new(group.clone(), [topic.clone()])
            .prefetch(false)
            .out_of_range(OutOfRangePolicy::Clamp);
        let mut stream = DirectStream::new(Arc::clone(&client), store(), clamp).unwrap();
        let first = stream.next_batch().await.unwrap();
        assert_eq!(
            anomalies(first.events()),
            [(
                expected(0, 5),
                Action::Resumed { from: 0, policy: Resume::OutOfRange(OutOfRangePolicy::Clamp) }
            )]
        );
        assert_eq!(values(&first), (0..18).map(|i| format!("new-{i}")).collect::<Vec<_>>());
        let report = stream.commit(&first).await.unwrap();
        assert!(report.rejected.is_empty(), "the plan's own commit was refused: {report:?}");
        let committed = committed_in(&client, &group, &topic).await;
        assert_eq!((committed[&tp].offset, committed[&tp].leader_epoch), (18, Some(0)));

        // ... and the second one moves on instead of planning the same records again.
        produce(&client, &topic, "new", 18..20).await;
        let second = stream.next_batch().await.unwrap();
        assert_eq!(anomalies(second.events()), []);
        assert_eq!(values(&second), ["new-18", "new-19"]);
        let report = stream.commit(&second).await.unwrap();
        assert!(report.rejected.is_empty(), "{report:?}");
    });
}
