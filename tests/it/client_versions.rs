//! Version negotiation against an older broker: the same operations on the Kafka 3.9 broker
//! (`scripts/old-broker`) and on the 4.1 cluster. kwire must use each broker's own highest
//! versions (lower ones on 3.9: ListOffsets 9, Metadata 12, Fetch 17, Produce 11,
//! DescribeGroups 5) and get identical results: log ranges, offsets by time and max timestamp,
//! fetched records, committed group offsets, group state.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use kafka_client::{
    Client, ClientConfig, Direction, FetchOptions, FetchRange, Isolation, NewTopic, OffsetQuery,
    OffsetToCommit, ProduceOptions, ProduceRecord, TopicPartition,
};
use kafka_wire::protocol::records::Header;
use kafka_wire::protocol::ApiKey;

use crate::support;
use crate::support::runtime;

const TIMEOUT: Duration = Duration::from_secs(30);
const PARTITIONS: i32 = 3;
/// Create time of record `i` of every partition (fixed, so time queries are comparable).
const T0: i64 = 1_700_000_000_000;

type Versions = Arc<Mutex<BTreeMap<ApiKey, BTreeSet<i16>>>>;

/// A client that records the version of every request it sends, by API.
async fn recording_client(bootstrap: &str) -> (Client, Versions) {
    let versions: Versions = Arc::default();
    let sink = Arc::clone(&versions);
    let mut config = ClientConfig::new(bootstrap).unwrap();
    config.trace = Some(Arc::new(move |event| {
        if event.direction == Direction::Request {
            sink.lock().unwrap().entry(event.api).or_default().insert(event.version);
        }
    }));
    (Client::connect(config).await.unwrap(), versions)
}

fn records_in(partition: i32) -> i64 {
    4 + i64::from(partition)
}

/// A fetched record as compared: offset, timestamp, key, value, headers.
type Row = (i64, Option<i64>, Option<Bytes>, Option<Bytes>, Vec<Header>);

/// Everything the comparison looks at, as plain values.
#[derive(Debug, PartialEq, Eq)]
struct Observed {
    ranges: BTreeMap<TopicPartition, (i64, i64, i64)>,
    by_time: BTreeMap<TopicPartition, (Option<i64>, Option<i64>)>,
    max_timestamp: BTreeMap<TopicPartition, (Option<i64>, Option<i64>)>,
    earliest: BTreeMap<TopicPartition, Option<i64>>,
    records: BTreeMap<TopicPartition, Vec<Row>>,
    committed: BTreeMap<TopicPartition, (i64, Option<String>)>,
    group_state: String,
}

/// Creates `topic`, writes the same records, commits the same offsets, and reads it all back.
async fn run_everything(client: &Client, topic: &str, group: &str) -> Observed {
    let created = client.create_topics(&[NewTopic::new(topic, PARTITIONS, 1)], TIMEOUT).await;
    created[topic].as_ref().unwrap();
    let tps: Vec<TopicPartition> = (0..PARTITIONS).map(|p| TopicPartition::new(topic, p)).collect();
    for tp in &tps {
        let records = (0..records_in(tp.partition))
            .map(|i| ProduceRecord {
                key: Some(Bytes::from(format!("k{i}"))),
                value: Some(Bytes::from(format!("{}/{i}", tp.partition))),
                headers: vec![Header { key: "h".into(), value: Some(Bytes::from(format!("{i}"))) }],
                timestamp: Some(T0 + i * 1000),
            })
            .collect();
        let produced =
            client.produce(topic, tp.partition, records, &ProduceOptions::default()).await.unwrap();
        assert_eq!(produced.base_offset, Some(0));
    }

    let ranges = client
        .log_ranges(&tps, TIMEOUT)
        .await
        .into_iter()
        .map(|(tp, r)| {
            let r = r.unwrap();
            (tp, (r.log_start, r.high_watermark, r.last_stable))
        })
        .collect();
    let all = tps.as_slice();
    let listed = |query| async move {
        client
            .list_offsets(all, query, Isolation::ReadCommitted, TIMEOUT)
            .await
            .into_iter()
            .map(|(tp, o)| {
                let o = o.unwrap();
                (tp, (o.offset, o.timestamp))
            })
            .collect::<BTreeMap<_, _>>()
    };
    let by_time = listed(OffsetQuery::Timestamp(T0 + 2500)).await;
    let max_timestamp = listed(OffsetQuery::MaxTimestamp).await;
    let earliest = listed(OffsetQuery::Earliest).await.into_iter().map(|(tp, (o, _))| (tp, o)).collect();

    let ranges_to_fetch: Vec<FetchRange> =
        tps.iter().map(|tp| FetchRange::new(tp.clone(), 0, records_in(tp.partition))).collect();
    let options = FetchOptions { timeout: TIMEOUT, ..FetchOptions::default() };
    let records = client
        .fetch_range(&ranges_to_fetch, &options)
        .await
        .into_iter()
        .map(|(tp, fetched)| {
            let rows = fetched
                .unwrap()
                .records
                .into_iter()
                .map(|r| (r.offset, r.timestamp, r.key, r.value, r.headers))
                .collect();
            (tp, rows)
        })
        .collect();

    let commits: Vec<OffsetToCommit> = tps
        .iter()
        .map(|tp| OffsetToCommit {
            tp: tp.clone(),
            offset: records_in(tp.partition) - 2,
            leader_epoch: None,
            metadata: Some(format!("m{}", tp.partition)),
        })
        .collect();
    let results = client.commit_offsets(group, &commits, TIMEOUT).await.unwrap();
    assert!(results.values().all(Result::is_ok), "{results:?}");
    let committed = client
        .committed_offsets(group, Some(&[topic.to_owned()]), TIMEOUT)
        .await
        .unwrap()
        .complete()
        .unwrap()
        .into_iter()
        .map(|(tp, c)| (tp, (c.offset, c.metadata)))
        .collect();
    let group_state = client.describe_group(group, TIMEOUT).await.unwrap().state;

    Observed { ranges, by_time, max_timestamp, earliest, records, committed, group_state }
}

#[test]
fn kafka_3_9_gets_its_own_older_versions_and_the_same_answers_as_4_1() {
    let Some(cluster) = support::cluster() else { return };
    let Some(old) = support::old_broker() else { return };
    runtime().block_on(async {
        let (old_client, old_versions) = recording_client(&old).await;
        let (new_client, new_versions) = recording_client(&cluster.bootstrap).await;
        let topic = support::unique("versions");
        let group = support::unique("versions-group");

        let on_old = run_everything(&old_client, &topic, &group).await;
        let on_new = run_everything(&new_client, &topic, &group).await;

        // The numbers are the ones the writes imply, and identical on both.
        for p in 0..PARTITIONS {
            let tp = TopicPartition::new(topic.as_str(), p);
            let n = records_in(p);
            assert_eq!(on_old.ranges[&tp], (0, n, n));
            assert_eq!(on_old.by_time[&tp], (Some(3), Some(T0 + 3000)));
            assert_eq!(on_old.max_timestamp[&tp], (Some(n - 1), Some(T0 + (n - 1) * 1000)));
            assert_eq!(on_old.records[&tp].len(), usize::try_from(n).unwrap());
            assert_eq!(on_old.committed[&tp], (n - 2, Some(format!("m{p}"))));
        }
        assert_eq!(on_old.group_state, "Empty");
        assert_eq!(on_old, on_new);

        // Each broker was spoken to at its own highest version.
        let old_versions = old_versions.lock().unwrap().clone();
        let new_versions = new_versions.lock().unwrap().clone();
        for (api, on_3_9, on_4_1) in [
            (ApiKey::LIST_OFFSETS, 9, 10),
            (ApiKey::METADATA, 12, 13),
            (ApiKey::FETCH, 17, 18),
            (ApiKey::PRODUCE, 11, 13),
            (ApiKey::DESCRIBE_GROUPS, 5, 6),
        ] {
            assert_eq!(
                old_versions.get(&api),
                Some(&BTreeSet::from([on_3_9])),
                "{api} on 3.9: {old_versions:?}"
            );
            assert_eq!(
                new_versions.get(&api),
                Some(&BTreeSet::from([on_4_1])),
                "{api} on 4.1: {new_versions:?}"
            );
        }
        let versions = old_client.broker_versions().await.unwrap();
        assert_eq!(versions.len(), 1);
        let v = versions[0].1.as_ref().unwrap();
        assert_eq!(v.range(ApiKey::LIST_OFFSETS).map(|r| r.max), Some(9));
    });
}
