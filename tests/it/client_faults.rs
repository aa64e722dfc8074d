//! Network faults between kwire and a broker, through the loopback fault proxy
//! (`support::proxy`): a response cut in half, one slower than the request timeout, one with
//! flipped bytes, a huge size prefix, an HTTP page instead of ApiVersions, a broker that
//! accepts and never answers. kwire reports a clear error or retries — never panics, never
//! returns a wrong offset — and the next call works on a new connection.
//!
//! Metadata advertises the real brokers, so single-connection behaviour is tested with
//! `Client::send_built` to the proxy's own address (the client bootstraps through it), and the
//! bootstrap path with a list whose first address is the proxy.

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_client::{
    BrokerRef, Client, ClientConfig, ClientError, Isolation, NewTopic, OffsetQuery, ProduceOptions,
    ProduceRecord, TopicPartition,
};
use kafka_wire::protocol::messages::{ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic};
use kafka_wire::protocol::{ApiKey, TaggedFields};

use crate::support;
use crate::support::proxy::{Fault, Proxy};
use crate::support::runtime;

const TIMEOUT: Duration = Duration::from_secs(30);
/// Records produced to the test partition: the latest offset every good answer must give.
const RECORDS: i64 = 7;

/// A one-partition topic holding [`RECORDS`] records, and a proxy in front of its leader.
struct Setup {
    topic: String,
    proxy: Proxy,
    /// The leader's real address.
    leader: String,
}

async fn setup(cluster: &support::Cluster) -> Setup {
    let direct = Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap();
    let topic = support::unique("faults");
    let created = direct.create_topics(&[NewTopic::new(&topic, 1, 1)], TIMEOUT).await;
    created[&topic].as_ref().unwrap();
    let records =
        (0..RECORDS).map(|i| ProduceRecord::new(None, Some(Bytes::from(format!("r{i}"))))).collect();
    direct.produce(&topic, 0, records, &ProduceOptions::default()).await.unwrap();
    let metadata = direct.refresh_metadata(std::slice::from_ref(&topic)).await.unwrap();
    let leader_id = metadata.topic(&topic).unwrap().partitions[0].leader.unwrap();
    let leader = metadata.broker(leader_id).unwrap().addr();
    Setup { topic, proxy: Proxy::start(&leader), leader }
}

/// A client bootstrapped through the proxy, with a short request timeout.
async fn client_via(proxy: &Proxy, request_timeout: Duration) -> Client {
    let mut config = ClientConfig::new(proxy.addr()).unwrap();
    config.request_timeout = request_timeout;
    Client::connect(config).await.unwrap()
}

fn via(proxy: &Proxy) -> BrokerRef {
    BrokerRef { node_id: None, addr: proxy.addr().to_owned() }
}

/// One ListOffsets request for partition 0 on `broker`'s single connection: earliest (-2) or
/// latest (-1).
async fn offset(
    client: &Client,
    broker: &BrokerRef,
    topic: &str,
    timestamp: i64,
) -> Result<i64, ClientError> {
    let (_, response) = client
        .send_built(broker, |version| ListOffsetsRequest {
            replica_id: -1,
            isolation_level: (version >= 2).then_some(0),
            topics: vec![ListOffsetsTopic {
                name: topic.to_owned(),
                partitions: vec![ListOffsetsPartition {
                    partition_index: 0,
                    current_leader_epoch: (version >= 4).then_some(-1),
                    timestamp,
                    max_num_offsets: (version == 0).then_some(1),
                    tagged_fields: TaggedFields::default(),
                }],
                tagged_fields: TaggedFields::default(),
            }],
            timeout_ms: (version >= 10).then_some(30_000),
            tagged_fields: TaggedFields::default(),
        })
        .await?;
    let p = &response.topics[0].partitions[0];
    assert!(p.error_code.is_ok(), "{:?}", p.error_code);
    Ok(p.offset.unwrap())
}

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;

#[test]
fn a_response_cut_in_half_is_connection_closed_and_the_next_call_reconnects() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let s = setup(&cluster).await;
        let client = client_via(&s.proxy, TIMEOUT).await;
        assert_eq!(offset(&client, &via(&s.proxy), &s.topic, LATEST).await.unwrap(), RECORDS);
        assert_eq!(s.proxy.connections(), 1);

        s.proxy.once(Fault::Cut);
        let err = offset(&client, &via(&s.proxy), &s.topic, LATEST).await.unwrap_err();
        let ClientError::ConnectionClosed { broker, reason } = &err else { panic!("{err}") };
        assert_eq!(broker.addr, s.proxy.addr());
        assert!(reason.contains("middle of a response"), "{err}");
        assert!(err.is_retriable());

        assert_eq!(offset(&client, &via(&s.proxy), &s.topic, LATEST).await.unwrap(), RECORDS);
        assert_eq!(s.proxy.connections(), 2, "the dead connection was replaced by a new one");
    });
}

#[test]
fn a_response_slower_than_the_request_timeout_is_a_timeout_and_arrives_too_late_to_be_misread() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let s = setup(&cluster).await;
        let client = client_via(&s.proxy, Duration::from_millis(800)).await;

        // The answer to "earliest" (0) is held past the timeout; it then arrives on the same
        // connection just before the answer to "latest", and must not be taken for it.
        s.proxy.once(Fault::Delay(Duration::from_millis(1500)));
        let started = Instant::now();
        let err = offset(&client, &via(&s.proxy), &s.topic, EARLIEST).await.unwrap_err();
        assert!(started.elapsed() < Duration::from_millis(1400), "{:?}", started.elapsed());
        let ClientError::Timeout { broker, api, after_ms } = &err else { panic!("{err}") };
        assert_eq!((broker.addr.as_str(), *api, *after_ms), (s.proxy.addr(), ApiKey::LIST_OFFSETS, 800));
        let text = err.to_string();
        assert!(text.contains("ListOffsets") && text.contains(s.proxy.addr()), "{text}");

        assert_eq!(offset(&client, &via(&s.proxy), &s.topic, LATEST).await.unwrap(), RECORDS);
        assert_eq!(offset(&client, &via(&s.proxy), &s.topic, EARLIEST).await.unwrap(), 0);
        assert_eq!(s.proxy.connections(), 1, "a timeout alone keeps the connection");
        assert_eq!(s.proxy.frames(), 4, "ApiVersions and three ListOffsets answers, the late one included");
    });
}

#[test]
fn a_response_with_flipped_bytes_is_a_decode_error_and_the_connection_is_replaced() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let s = setup(&cluster).await;
        let client = client_via(&s.proxy, TIMEOUT).await;
        s.proxy.once(Fault::Flip);
        let err = offset(&client, &via(&s.proxy), &s.topic, LATEST).await.unwrap_err();
        let ClientError::Decode { broker, api, .. } = &err else { panic!("{err}") };
        assert_eq!((broker.addr.as_str(), *api), (s.proxy.addr(), ApiKey::LIST_OFFSETS));
        assert!(err.to_string().contains("malformed ListOffsets"), "{err}");

        assert_eq!(offset(&client, &via(&s.proxy), &s.topic, LATEST).await.unwrap(), RECORDS);
        assert_eq!(s.proxy.connections(), 2, "the connection that carried garbage was not reused");
    });
}

#[test]
fn a_huge_size_prefix_is_an_invalid_frame_and_the_next_call_reconnects() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let s = setup(&cluster).await;
        let client = client_via(&s.proxy, TIMEOUT).await;
        s.proxy.once(Fault::HugeSize);
        let started = Instant::now();
        let err = offset(&client, &via(&s.proxy), &s.topic, LATEST).await.unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5), "failed at once, not at a timeout");
        let ClientError::InvalidFrame { broker, reason } = &err else { panic!("{err}") };
        assert_eq!(broker.addr, s.proxy.addr());
        assert!(reason.contains("2147483632 bytes exceeds"), "{err}");

        assert_eq!(offset(&client, &via(&s.proxy), &s.topic, LATEST).await.unwrap(), RECORDS);
        assert_eq!(s.proxy.connections(), 2);
    });
}

#[test]
fn an_http_page_instead_of_api_versions_is_a_clear_error_not_a_pre_0_10_broker() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let s = setup(&cluster).await;
        s.proxy.set(Fault::Garbage);
        let mut config = ClientConfig::new(s.proxy.addr()).unwrap();
        config.request_timeout = Duration::from_secs(5);
        let started = Instant::now();
        let err = Client::connect(config).await.unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(4), "no wait for a timeout: {err}");
        let ClientError::NoBrokerReachable { attempts } = &err else { panic!("{err}") };
        let (addr, why) = &attempts[0];
        assert_eq!(addr, s.proxy.addr());
        assert!(why.contains("not a Kafka response") && why.contains("ApiVersions"), "{why}");
        assert_eq!(s.proxy.connections(), 1, "no second connection for a legacy-broker fallback");

        // The same proxy, forwarding again: the client connects and answers right.
        s.proxy.set(Fault::Pass);
        let client = client_via(&s.proxy, TIMEOUT).await;
        assert_eq!(offset(&client, &via(&s.proxy), &s.topic, LATEST).await.unwrap(), RECORDS);
    });
}

#[test]
fn a_broker_that_never_answers_does_not_hold_up_requests_to_the_others() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let s = setup(&cluster).await;
        let mut config = ClientConfig::new(&s.leader).unwrap();
        config.request_timeout = Duration::from_secs(4);
        let client = Client::connect(config).await.unwrap();
        let leader = BrokerRef { node_id: None, addr: s.leader.clone() };
        let stalled = via(&s.proxy);
        s.proxy.set(Fault::Delay(Duration::from_secs(10)));

        // Opening the proxied connection waits on ApiVersions; meanwhile the leader answers.
        let (slow, fast) = tokio::join!(offset(&client, &stalled, &s.topic, LATEST), async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let started = Instant::now();
            let got = offset(&client, &leader, &s.topic, LATEST).await;
            (got, started.elapsed())
        });
        let err = slow.unwrap_err();
        assert!(matches!(&err, ClientError::Timeout { api, .. } if *api == ApiKey::API_VERSIONS), "{err}");
        assert_eq!(fast.0.unwrap(), RECORDS);
        assert!(fast.1 < Duration::from_secs(2), "the leader's answer waited {:?}", fast.1);
    });
}

#[test]
fn a_leader_or_coordinator_that_never_answers_cannot_hold_a_call_past_its_deadline() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let s = setup(&cluster).await;
        // A request timeout far beyond the calls' deadline: only the deadline can end them.
        let mut config = ClientConfig::new(&cluster.bootstrap).unwrap();
        config.request_timeout = Duration::from_secs(60);
        let client = Client::connect(config).await.unwrap();
        let stalled = via(&s.proxy);
        assert_eq!(offset(&client, &stalled, &s.topic, LATEST).await.unwrap(), RECORDS);
        s.proxy.set(Fault::Delay(Duration::from_secs(30)));
        let deadline = Duration::from_millis(1500);

        // The routed call sends each leader's share through the proxy, as if it were the leader.
        let tp = TopicPartition::new(&s.topic, 0);
        let started = Instant::now();
        let results = client
            .route_by_leader(ApiKey::LIST_OFFSETS, std::slice::from_ref(&tp), deadline, |_, _| async {
                offset(&client, &stalled, &s.topic, LATEST).await.map(|o| vec![(tp.clone(), Ok(o))])
            })
            .await;
        assert!(started.elapsed() < Duration::from_secs(3), "routed call took {:?}", started.elapsed());
        let err = results[&tp].as_ref().unwrap_err();
        let ClientError::DeadlineExceeded { last_error, .. } = err else { panic!("{err}") };
        assert!(
            matches!(last_error.as_ref(), ClientError::Timeout { broker, api, .. }
                if *api == ApiKey::LIST_OFFSETS && broker.addr != "any broker"),
            "{err}"
        );

        let group = support::unique("stalled-group");
        let started = Instant::now();
        let err = client
            .with_coordinator(&group, deadline, |_| offset(&client, &stalled, &s.topic, LATEST))
            .await
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(3), "coordinator call took {:?}", started.elapsed());
        assert!(matches!(err, ClientError::DeadlineExceeded { .. }), "{err}");
        assert!(err.to_string().contains(&group), "{err}");
    });
}

#[test]
fn metadata_asks_the_next_bootstrap_address_when_the_first_cuts_the_answer() {
    let Some(cluster) = support::cluster() else { return };
    runtime().block_on(async {
        let s = setup(&cluster).await;
        let others: Vec<String> = cluster.brokers().into_iter().filter(|b| *b != s.leader).collect();
        let list = format!("{},{}", s.proxy.addr(), others[0]);
        let client = Client::connect(ClientConfig::new(&list).unwrap()).await.unwrap();
        assert_eq!(s.proxy.connections(), 1, "bootstrapped through the proxy");

        s.proxy.once(Fault::Cut);
        let metadata = client.refresh_metadata(std::slice::from_ref(&s.topic)).await.unwrap();
        assert_eq!(metadata.brokers.len(), 3);
        assert_eq!(s.proxy.frames(), 2, "the proxy's Metadata answer was cut");

        // Routed calls go to the advertised leaders and get the right numbers.
        let tp = TopicPartition::new(&s.topic, 0);
        let offsets = client
            .list_offsets(std::slice::from_ref(&tp), OffsetQuery::Latest, Isolation::ReadUncommitted, TIMEOUT)
            .await;
        assert_eq!(offsets[&tp].as_ref().unwrap().offset, Some(RECORDS));
    });
}
