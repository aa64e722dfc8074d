//! A live oracle for kwire's two record readers: batches written by other clients — librdkafka
//! (kcat) and Kafka's Java producer, with every codec — are fetched raw and read both through
//! the borrowed view (`records::BatchView`) and through the owning decoder
//! (`records::RecordBatch::decode`). Both must give the same records, and those must be what
//! the producer was given.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use kafka_client::{BrokerRef, Client, ClientConfig, NewTopic};
use kafka_wire::protocol::messages::fetch::CONSUMER_REPLICA_ID;
use kafka_wire::protocol::messages::{FetchPartition, FetchRequest, FetchTopic};
use kafka_wire::protocol::records::{BatchView, Compression, DecodeOptions, Header, Record, RecordBatch};
use kafka_wire::protocol::TaggedFields;

use crate::support::{self, java, Cluster};

const TIMEOUT: Duration = Duration::from_secs(30);
const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];
/// Records per topic: enough for several batches per codec.
const COUNT: usize = 2_000;

/// One record as both readers must report it: offset, key, value, headers.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    offset: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
}

fn padded_value(i: usize) -> Vec<u8> {
    format!("value-{i}-{}", "abc".repeat(40)).into_bytes()
}

/// What CodecProduce.java writes as record `i` (see its doc comment).
fn java_record(i: usize) -> Seen {
    let mut headers = vec![("i".to_owned(), Some(i.to_string().into_bytes()))];
    if i.is_multiple_of(5) {
        headers.push(("null".to_owned(), None));
    }
    Seen {
        offset: i64::try_from(i).unwrap(),
        key: (i % 7 != 3).then(|| format!("key-{i}").into_bytes()),
        value: (i % 11 != 5).then(|| padded_value(i)),
        headers,
    }
}

/// What the kcat run below writes as record `i`: key and value from the line, one header.
fn kcat_record(i: usize) -> Seen {
    Seen {
        offset: i64::try_from(i).unwrap(),
        key: Some(format!("key-{i}").into_bytes()),
        value: Some(padded_value(i)),
        headers: vec![("src".to_owned(), Some(b"kcat".to_vec()))],
    }
}

fn kcat_produce(cluster: &Cluster, topic: &str, codec: &str) {
    let mut lines = Vec::new();
    for i in 0..COUNT {
        let r = kcat_record(i);
        lines.extend_from_slice(&r.key.unwrap());
        lines.push(b'\t');
        lines.extend_from_slice(&r.value.unwrap());
        lines.push(b'\n');
    }
    let mut child = Command::new(std::env::var("KWIRE_KCAT").unwrap_or_else(|_| "kcat".to_owned()))
        .args(["-b", &cluster.bootstrap, "-P", "-t", topic, "-p", "0", "-z", codec, "-K", "\t"])
        // Several batches per topic: librdkafka would put all of them in one.
        .args(["-H", "src=kcat", "-X", "linger.ms=20", "-X", "batch.num.messages=300"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kcat runs (scripts/test installs it)");
    child.stdin.take().expect("stdin is piped").write_all(&lines).expect("kcat reads stdin");
    let out = child.wait_with_output().expect("kcat runs");
    assert!(out.status.success(), "kcat -P -z {codec}: {}", support::stderr(&out));
}

/// Every batch of partition 0 of `topic` as the broker stores it, fetched raw from its leader
/// until `count` records were seen.
async fn raw_batches(client: &Client, topic: &str, count: usize) -> Vec<Bytes> {
    let metadata = client.refresh_metadata(&[topic.to_owned()]).await.unwrap();
    let info = metadata.topic(topic).unwrap();
    let leader = info.partitions[0].leader.expect("partition 0 has a leader");
    let broker = BrokerRef { node_id: Some(leader), addr: metadata.broker(leader).unwrap().addr() };
    let topic_id = info.topic_id;
    let mut batches = Vec::new();
    let mut offset = 0i64;
    let mut records = 0usize;
    while records < count {
        let (_, response) = client
            .send_built(&broker, |version| FetchRequest {
                cluster_id: None,
                replica_id: Some(CONSUMER_REPLICA_ID),
                replica_state: None,
                max_wait_ms: 500,
                min_bytes: 1,
                max_bytes: Some(8 << 20),
                isolation_level: Some(0),
                session_id: Some(0),
                session_epoch: Some(-1),
                topics: vec![FetchTopic {
                    topic: Some(topic.to_owned()),
                    topic_id,
                    partitions: vec![FetchPartition {
                        partition: 0,
                        current_leader_epoch: (version >= 9).then_some(-1),
                        fetch_offset: offset,
                        last_fetched_epoch: (version >= 12).then_some(-1),
                        log_start_offset: (version >= 5).then_some(-1),
                        partition_max_bytes: 8 << 20,
                        replica_directory_id: None,
                        high_watermark: None,
                        tagged_fields: TaggedFields::default(),
                    }],
                    tagged_fields: TaggedFields::default(),
                }],
                forgotten_topics_data: Some(Vec::new()),
                rack_id: Some(String::new()),
                tagged_fields: TaggedFields::default(),
            })
            .await
            .unwrap();
        let part = &response.responses[0].partitions[0];
        assert!(part.error_code.is_ok(), "fetch of {topic}: {:?}", part.error_code);
        let data = part.records.clone().unwrap_or_default();
        let mut at = 0;
        // Whole batches only: the broker may cut the last one short.
        while data.len() - at >= 12 {
            let length = i32::from_be_bytes(data[at + 8..at + 12].try_into().unwrap());
            let end = at + 12 + usize::try_from(length).unwrap();
            if end > data.len() {
                break;
            }
            let batch = data.slice(at..end);
            let owned = RecordBatch::decode(batch.clone(), &DecodeOptions::default()).unwrap();
            records += owned.records.len();
            offset = owned.next_offset();
            batches.push(batch);
            at = end;
        }
    }
    batches
}

fn seen_owned(batch: &RecordBatch) -> Vec<Seen> {
    batch
        .records
        .iter()
        .map(|r: &Record| Seen {
            offset: batch.base_offset + i64::from(r.offset_delta),
            key: r.key.as_deref().map(<[u8]>::to_vec),
            value: r.value.as_deref().map(<[u8]>::to_vec),
            headers: r
                .headers
                .iter()
                .map(|h: &Header| (h.key.clone(), h.value.as_deref().map(<[u8]>::to_vec)))
                .collect(),
        })
        .collect()
}

fn seen_viewed(view: &BatchView<'_>) -> Vec<Seen> {
    view.records()
        .map(|r| {
            let r = r.unwrap();
            Seen {
                offset: view.header.offset_of(&r),
                key: r.key.map(<[u8]>::to_vec),
                value: r.value.map(<[u8]>::to_vec),
                headers: r.headers.iter().map(|h| (h.key.to_owned(), h.value.map(<[u8]>::to_vec))).collect(),
            }
        })
        .collect()
}

/// Reads `batches` both ways; checks each batch's codec, that the readers agree on every field
/// (timestamps included), and returns the records.
fn read_both_ways(batches: &[Bytes], codec: Compression, who: &str) -> Vec<Seen> {
    let opts = DecodeOptions::default();
    let mut all = Vec::new();
    for batch in batches {
        let owned = RecordBatch::decode(batch.clone(), &opts).unwrap();
        let view = BatchView::parse(batch, &opts).unwrap();
        assert_eq!(owned.attributes.compression, codec, "{who}: a batch's codec");
        assert_eq!(view.header.attributes, owned.attributes, "{who}: attributes");
        assert_eq!(
            (view.header.base_offset, view.header.base_timestamp, view.header.max_timestamp),
            (owned.base_offset, owned.base_timestamp, owned.max_timestamp),
            "{who}: header"
        );
        let viewed: Vec<Record> = view.records().map(|r| r.unwrap().to_record()).collect();
        assert_eq!(viewed, owned.records, "{who} {codec:?}: the view and the owning decoder differ");
        let seen = seen_viewed(&view);
        assert_eq!(seen, seen_owned(&owned), "{who} {codec:?}: offsets differ");
        all.extend(seen);
    }
    all
}

fn codec_of(name: &str) -> Compression {
    match name {
        "none" => Compression::None,
        "gzip" => Compression::Gzip,
        "snappy" => Compression::Snappy,
        "lz4" => Compression::Lz4,
        "zstd" => Compression::Zstd,
        other => panic!("no codec {other}"),
    }
}

#[test]
fn batches_from_kcat_and_the_java_producer_read_the_same_through_the_view_and_the_owning_decoder() {
    let Some(cluster) = support::cluster() else { return };
    let rt = crate::support::runtime();
    let prefix = support::unique("record-oracle");
    let mut topics = Vec::new();
    for who in ["java", "kcat"] {
        topics.extend(CODECS.iter().map(|codec| NewTopic::new(format!("{prefix}-{who}-{codec}"), 1, 1)));
    }
    let client = rt.block_on(async {
        let client = Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap();
        for (name, created) in client.create_topics(&topics, TIMEOUT).await {
            created.unwrap_or_else(|e| panic!("creating {name}: {e}"));
        }
        client
    });

    let java_prefix = format!("{prefix}-java");
    let mut args = vec![cluster.bootstrap.clone(), java_prefix.clone(), COUNT.to_string()];
    args.extend(CODECS.iter().map(|c| (*c).to_owned()));
    let printed = java::run("CodecProduce.java", &args);
    assert_eq!(printed.lines().count(), CODECS.len(), "CodecProduce printed: {printed}");
    for codec in CODECS {
        kcat_produce(&cluster, &format!("{prefix}-kcat-{codec}"), codec);
    }

    for codec in CODECS {
        for (who, expected) in [("java", java_record as fn(usize) -> Seen), ("kcat", kcat_record)] {
            let topic = format!("{prefix}-{who}-{codec}");
            let batches = rt.block_on(raw_batches(&client, &topic, COUNT));
            assert!(batches.len() > 1, "{topic}: one batch only, the oracle wants several");
            let seen = read_both_ways(&batches, codec_of(codec), who);
            let wanted: Vec<Seen> = (0..COUNT).map(expected).collect();
            assert_eq!(seen.len(), COUNT, "{topic}: record count");
            for (got, want) in seen.iter().zip(&wanted) {
                assert_eq!(got, want, "{topic}: record {}", want.offset);
            }
        }
    }
}
