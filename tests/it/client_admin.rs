//! The library client's admin calls against the real cluster: topics created, grown and
//! deleted as metadata shows them, records deleted, leader epochs, and requests routed one per
//! leader broker.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use kafka_client::{
    Client, ClientConfig, ClientError, Direction, Isolation, NewTopic, OffsetQuery, ProduceOptions,
    ProduceRecord, TopicPartition,
};
use kafka_wire::protocol::{ApiKey, ErrorCode};

use crate::support;
use crate::support::runtime;

const TIMEOUT: Duration = Duration::from_secs(60);

async fn client(cluster: &support::Cluster) -> Client {
    Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap()
}

fn partitions(topic: &str, n: i32) -> Vec<TopicPartition> {
    (0..n).map(|p| TopicPartition::new(topic, p)).collect()
}

async fn produce_n(client: &Client, topic: &str, partition: i32, n: usize) {
    let records = (0..n).map(|i| ProduceRecord::new(None, Some(Bytes::from(format!("r{i}"))))).collect();
    client.produce(topic, partition, records, &ProduceOptions::default()).await.unwrap();
}

type Counts = Arc<Mutex<HashMap<(String, ApiKey), u64>>>;

/// A client whose trace hook counts the requests it sends, by broker address and API.
async fn counting_client(cluster: &support::Cluster) -> (Client, Counts) {
    let counts: Counts = Arc::default();
    let mut config = ClientConfig::new(&cluster.bootstrap).unwrap();
    let sink = Arc::clone(&counts);
    config.trace = Some(Arc::new(move |event| {
        if event.direction == Direction::Request {
            *sink.lock().unwrap().entry((event.broker.to_owned(), event.api)).or_default() += 1;
        }
    }));
    (Client::connect(config).await.unwrap(), counts)
}

#[test]
fn a_topic_of_12_partitions_leads_on_every_broker_and_its_offsets_take_one_request_per_leader() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let (client, counts) = counting_client(&cluster).await;
        let topic = support::unique("twelve");
        let created = client.create_topics(&[NewTopic::new(&topic, 12, 3)], TIMEOUT).await;
        let created = created[&topic].as_ref().unwrap();
        assert_eq!((created.partitions, created.replication_factor), (12, 3));
        assert!(created.topic_id.is_some());

        let metadata = client.refresh_metadata(std::slice::from_ref(&topic)).await.unwrap();
        let info = metadata.topic(&topic).unwrap();
        let mut leaders: Vec<i32> = info.partitions.iter().map(|p| p.leader.unwrap()).collect();
        leaders.sort_unstable();
        leaders.dedup();
        assert_eq!(leaders.len(), 3, "leaders on all three brokers: {leaders:?}");
        assert!(info.partitions.iter().all(|p| p.replicas.len() == 3));
        let addrs: Vec<String> = leaders.iter().map(|id| metadata.broker(*id).unwrap().addr()).collect();

        let sent_before: Vec<u64> = addrs.iter().map(|a| client.requests_sent_to(a)).collect();
        counts.lock().unwrap().clear();
        let offsets = client
            .list_offsets(&partitions(&topic, 12), OffsetQuery::Latest, Isolation::ReadUncommitted, TIMEOUT)
            .await;
        assert_eq!(offsets.len(), 12);
        assert!(offsets.values().all(|o| o.as_ref().unwrap().offset == Some(0)));

        let counts = counts.lock().unwrap().clone();
        for addr in &addrs {
            assert_eq!(
                counts.get(&(addr.clone(), ApiKey::LIST_OFFSETS)),
                Some(&1),
                "ListOffsets to {addr}: {counts:?}"
            );
        }
        let list_offsets: u64 =
            counts.iter().filter(|((_, api), _)| *api == ApiKey::LIST_OFFSETS).map(|(_, n)| n).sum();
        assert_eq!(list_offsets, 3, "one ListOffsets per leader broker and no more: {counts:?}");
        // The client's own per-address counter agrees: the only other requests were Metadata.
        let sent: u64 =
            addrs.iter().zip(&sent_before).map(|(a, before)| client.requests_sent_to(a) - before).sum();
        let metadata_requests: u64 =
            counts.iter().filter(|((_, api), _)| *api == ApiKey::METADATA).map(|(_, n)| n).sum();
        assert_eq!(sent, list_offsets + metadata_requests, "{counts:?}");
    });
}

#[test]
fn creating_a_topic_that_exists_names_the_topic_and_the_kafka_error() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let client = client(&cluster).await;
        let topic = support::unique("twice");
        let fresh = support::unique("fresh");
        client.create_topics(&[NewTopic::new(&topic, 1, 1)], TIMEOUT).await[&topic].as_ref().unwrap();
        let again =
            client.create_topics(&[NewTopic::new(&topic, 1, 1), NewTopic::new(&fresh, 2, 2)], TIMEOUT).await;
        let err = again[&topic].as_ref().unwrap_err();
        assert!(matches!(err, ClientError::Kafka { code: ErrorCode::TOPIC_ALREADY_EXISTS, .. }), "{err}");
        assert!(err.to_string().contains(&topic), "{err}");
        // The other topic of the same call was created all the same.
        assert_eq!(again[&fresh].as_ref().unwrap().partitions, 2);
    });
}

#[test]
fn topic_configs_given_at_creation_are_applied() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let client = client(&cluster).await;
        let topic = support::unique("configured");
        let mut new = NewTopic::new(&topic, 1, 1);
        new.configs = vec![("message.timestamp.type".to_owned(), "LogAppendTime".to_owned())];
        client.create_topics(&[new], TIMEOUT).await[&topic].as_ref().unwrap();
        let produced = client
            .produce(
                &topic,
                0,
                vec![ProduceRecord { timestamp: Some(1_000), ..ProduceRecord::new(None, None) }],
                &ProduceOptions::default(),
            )
            .await
            .unwrap();
        // The broker stamped its own time: the topic config took effect.
        assert!(produced.log_append_time.is_some_and(|t| t > 1_000), "{produced:?}");
        // An invalid config is refused with Kafka's error, naming the topic.
        let bad = support::unique("bad-config");
        let mut new = NewTopic::new(&bad, 1, 1);
        new.configs = vec![("cleanup.policy".to_owned(), "shred".to_owned())];
        let err = client.create_topics(&[new], TIMEOUT).await.remove(&bad).unwrap().unwrap_err();
        assert!(matches!(err, ClientError::Kafka { code: ErrorCode::INVALID_CONFIG, .. }), "{err}");
        assert!(err.to_string().contains(&bad));
    });
}

#[test]
fn delete_records_moves_the_log_start() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let client = client(&cluster).await;
        let topic = support::unique("trim");
        client.create_topics(&[NewTopic::new(&topic, 3, 3)], TIMEOUT).await[&topic].as_ref().unwrap();
        for p in 0..3 {
            produce_n(&client, &topic, p, 20).await;
        }
        let p0 = TopicPartition::new(topic.as_str(), 0);
        let p1 = TopicPartition::new(topic.as_str(), 1);
        let p2 = TopicPartition::new(topic.as_str(), 2);
        // -1: everything up to the high watermark.
        let deleted = client.delete_records(&[(p0.clone(), 7), (p1.clone(), -1)], TIMEOUT).await;
        assert_eq!(deleted[&p0].as_ref().unwrap(), &7);
        assert_eq!(deleted[&p1].as_ref().unwrap(), &20);
        let ranges = client.log_ranges(&partitions(&topic, 3), TIMEOUT).await;
        let start = |tp: &TopicPartition| ranges[tp].as_ref().unwrap().log_start;
        assert_eq!((start(&p0), start(&p1), start(&p2)), (7, 20, 0));
        assert_eq!(ranges[&p0].as_ref().unwrap().high_watermark, 20);
        // Past the high watermark is Kafka's OFFSET_OUT_OF_RANGE, for that partition only.
        let past = client.delete_records(&[(p2.clone(), 21), (p0.clone(), 8)], TIMEOUT).await;
        let err = past[&p2].as_ref().unwrap_err();
        assert!(matches!(err, ClientError::Kafka { code: ErrorCode::OFFSET_OUT_OF_RANGE, .. }), "{err}");
        assert!(err.to_string().contains(&p2.to_string()), "{err}");
        assert_eq!(past[&p0].as_ref().unwrap(), &8);
    });
}

#[test]
fn adding_partitions_grows_the_topic_and_the_new_ones_take_records() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let client = client(&cluster).await;
        let topic = support::unique("grow");
        client.create_topics(&[NewTopic::new(&topic, 2, 2)], TIMEOUT).await[&topic].as_ref().unwrap();
        let grown = client.create_partitions(&[(topic.clone(), 5)], TIMEOUT).await;
        assert_eq!(grown[&topic].as_ref().unwrap(), &5);
        let metadata = client.refresh_metadata(std::slice::from_ref(&topic)).await.unwrap();
        assert_eq!(metadata.topic(&topic).unwrap().partitions.len(), 5);
        produce_n(&client, &topic, 4, 3).await;
        let ranges = client.log_ranges(&partitions(&topic, 5), TIMEOUT).await;
        assert_eq!(ranges[&TopicPartition::new(topic.as_str(), 4)].as_ref().unwrap().high_watermark, 3);
        // Shrinking is refused by Kafka, and the error names the topic.
        let shrink = client.create_partitions(&[(topic.clone(), 3)], TIMEOUT).await;
        let err = shrink[&topic].as_ref().unwrap_err();
        assert!(matches!(err, ClientError::Kafka { code: ErrorCode::INVALID_PARTITIONS, .. }), "{err}");
        assert!(err.to_string().contains(&topic));
    });
}

#[test]
fn a_deleted_topic_is_gone_from_every_brokers_metadata() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let client = client(&cluster).await;
        let topic = support::unique("doomed");
        client.create_topics(&[NewTopic::new(&topic, 3, 3)], TIMEOUT).await[&topic].as_ref().unwrap();
        produce_n(&client, &topic, 0, 5).await;
        let deleted = client.delete_topics(std::slice::from_ref(&topic), TIMEOUT).await;
        deleted[&topic].as_ref().unwrap();
        // Ask each broker directly, not just the one the client happened to use.
        let metadata = client.refresh_metadata(&[]).await.unwrap();
        for broker in &metadata.brokers {
            let single = Client::connect(ClientConfig::new(&broker.addr()).unwrap()).await.unwrap();
            let view = single.refresh_metadata(std::slice::from_ref(&topic)).await.unwrap();
            assert!(
                view.topic(&topic).is_none_or(|t| t.error == ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
                "{view:?}"
            );
        }
        let offsets = client
            .list_offsets(&partitions(&topic, 1), OffsetQuery::Latest, Isolation::ReadUncommitted, TIMEOUT)
            .await;
        assert!(offsets.values().all(Result::is_err));
        // Deleting it again names the topic and Kafka's error.
        let again = client.delete_topics(std::slice::from_ref(&topic), TIMEOUT).await;
        let err = again[&topic].as_ref().unwrap_err();
        assert!(
            matches!(err, ClientError::Kafka { code: ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, .. }),
            "{err}"
        );
        assert!(err.to_string().contains(&topic));
    });
}

#[test]
fn the_current_leader_epoch_ends_at_the_log_end() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let client = client(&cluster).await;
        let topic = support::unique("epochs");
        client.create_topics(&[NewTopic::new(&topic, 2, 3)], TIMEOUT).await[&topic].as_ref().unwrap();
        produce_n(&client, &topic, 0, 9).await;
        let metadata = client.refresh_metadata(std::slice::from_ref(&topic)).await.unwrap();
        let epoch = |p: i32| metadata.topic(&topic).unwrap().partitions[p as usize].leader_epoch.unwrap();
        let p0 = TopicPartition::new(topic.as_str(), 0);
        let p1 = TopicPartition::new(topic.as_str(), 1);
        let ends =
            client.offset_for_leader_epoch(&[(p0.clone(), epoch(0)), (p1.clone(), epoch(1))], TIMEOUT).await;
        let e0 = ends[&p0].as_ref().unwrap();
        assert_eq!((e0.leader_epoch, e0.end_offset), (Some(epoch(0)), Some(9)));
        let e1 = ends[&p1].as_ref().unwrap();
        assert_eq!((e1.leader_epoch, e1.end_offset), (Some(epoch(1)), Some(0)));
    });
}
