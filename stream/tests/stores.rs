//! The Kafka group store against a group that Kafka's own console consumer is a member of:
//! kwire refuses to write behind an active consumer's back (kafka-consumer-groups' rule), and
//! the stream reports it as a store error without moving anything.

mod support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kwire_stores::KafkaGroupStore;
use kwire_stream::{DirectStream, StreamConfig, StreamError};
use offset_store::{OffsetStore, StoreError, StoredOffset};

use support::{cluster, create_topic, produce, unique, values};

/// Kills the console consumer when the test ends, however it ends.
struct Consumer(Child);

impl Consumer {
    /// SIGTERM: the consumer closes and leaves the group.
    fn stop(mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while matches!(self.0.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kafka_store_refuses_a_group_with_active_members() {
    let Some(cluster) = cluster() else { return };
    let client = support::client(&cluster).await;
    let topic = unique("stream-active");
    let group = unique("stream-active-group");
    create_topic(&client, &topic, 1).await;
    produce(&client, &topic, 0, &values("v", 0, 0, 3)).await;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let child = Command::new(root.join("scripts/cluster"))
        .args(["tool", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server"])
        .args([&cluster.bootstrap, "--topic", &topic, "--group", &group])
        .args(["--consumer-property", "session.timeout.ms=6000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("scripts/cluster tool runs");
    let mut consumer = Consumer(child);
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let described = client.describe_group(&group, Duration::from_secs(10)).await;
        if described.as_ref().is_ok_and(|d| !d.members.is_empty() && d.state == "Stable") {
            break;
        }
        if let Ok(Some(status)) = consumer.0.try_wait() {
            panic!("the console consumer exited ({status})");
        }
        assert!(Instant::now() < deadline, "the console consumer never joined: {described:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    let store = KafkaGroupStore::new(client.clone(), Duration::from_secs(30));
    let offset = StoredOffset {
        topic: topic.clone(),
        partition: 0,
        offset: 1,
        leader_epoch: None,
        topic_id: None,
        commit_timestamp_ms: None,
    };
    let err = store.save(&group, std::slice::from_ref(&offset)).await.unwrap_err();
    match &err {
        StoreError::GroupActive { group: g, state, members } => {
            // The state names the group's protocol too (classic or consumer, KIP-848).
            assert_eq!(
                (g.as_str(), state.as_str(), *members),
                (group.as_str(), "Stable, classic protocol", 1)
            );
        }
        other => panic!("expected GroupActive, got {other}"),
    }
    assert!(err.to_string().contains("active member"), "{err}");

    // The stream reads (no membership needed) but cannot commit while the group is active.
    let mut stream =
        DirectStream::new(client.clone(), store.clone(), StreamConfig::new(group.clone(), [topic.clone()]))
            .unwrap();
    let batch = stream.next_batch().await.unwrap();
    assert_eq!(batch.record_count(), 3);
    let err = stream.commit(&batch).await.unwrap_err();
    assert!(matches!(&err, StreamError::Store(e) if matches!(**e, StoreError::GroupActive { .. })), "{err}");

    // Forced, kwire sends the commit; the coordinator itself refuses a non-member's commit to
    // a group with members, and the refusal is reported per partition.
    let forced = store.clone().force(true);
    let err = forced.save(&group, std::slice::from_ref(&offset)).await.unwrap_err();
    assert!(matches!(&err, StoreError::CommitRefused { partition: 0, .. }), "{err}");

    // Once the consumer is gone, the same commit goes through and reads back.
    consumer.stop();
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        match stream.commit(&batch).await {
            Ok(report) => {
                assert_eq!(report.written.len(), 1);
                break;
            }
            Err(e) => assert!(Instant::now() < deadline, "still refused after the consumer left: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let stored = store.load(&group, None).await.unwrap();
    assert_eq!(stored.iter().map(|o| o.offset).collect::<Vec<_>>(), [3]);
}
