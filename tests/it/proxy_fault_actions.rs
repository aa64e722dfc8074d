//! Issue 36's "a test per action": one rule at a time between a client and the real cluster,
//! and the client sees what the rule says and nothing else — the delay drawn (within
//! tolerance), the answer held or never coming, the connection cut, the error code, the
//! bandwidth. `action = corrupt` has its own test in `proxy_faults.rs` (a checksum error naming
//! partition and offset); the producer and group scenarios there combine the actions.
//!
//! Most cases send Metadata for one new topic, straight to one broker through the proxy
//! (`Client::send`, no retry in between), so what comes back is the fault itself: the
//! selector `topic = T` leaves the client's own bootstrap requests alone.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_client::{BrokerRef, Client, ClientConfig, ClientError, Consumer, ConsumerConfig, TopicPartition};
use kafka_wire::protocol::messages::{MetadataRequest, MetadataResponse};
use kafka_wire::protocol::ErrorCode;
use offset_engine::StartPolicy;

use crate::support;
use crate::support::kwire_proxy::{KwireProxy, ProxyRun};

/// What one Metadata call through the proxy saw: how long it took and its topic's error code
/// (`UNKNOWN_TOPIC_OR_PARTITION` when the answer leaves the topic out), or the call's error.
type Call = (Duration, Result<ErrorCode, ClientError>);

/// [`Call`] with the whole answer.
type Answer = (Duration, Result<MetadataResponse, ClientError>);

/// Starts a proxy with `rule` (its `topic` filled in), and sends `calls` Metadata requests for
/// a new topic, one after another, to the proxy's first listener with `request_timeout`.
fn metadata_calls(rule: &str, calls: usize, request_timeout: Duration) -> (Vec<Call>, ProxyRun) {
    let (answers, topic, run) = metadata_answers(rule, calls, request_timeout);
    let calls = answers
        .into_iter()
        .map(|(took, answer)| {
            let code = answer.map(|response| {
                let named = response.topics.iter().find(|t| t.name.as_deref() == Some(topic.as_str()));
                named.map_or(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, |t| t.error_code)
            });
            (took, code)
        })
        .collect();
    (calls, run)
}

/// [`metadata_calls`] with the whole answers, and the topic.
fn metadata_answers(rule: &str, calls: usize, request_timeout: Duration) -> (Vec<Answer>, String, ProxyRun) {
    let cluster = support::cluster().expect("the callers checked");
    let rt = support::multi_thread_runtime();
    rt.block_on(async {
        let direct = Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap();
        let topic = support::new_topic_with_leaders(&direct, "proxy-action", 1).await;
        let rule = format!("api=Metadata,topic={topic},{rule}");
        let proxy = KwireProxy::start(&cluster, &["--fault-seed", "11", "--fault", &rule]);
        let mut config = ClientConfig::new(&proxy.bootstrap).unwrap();
        config.request_timeout = request_timeout;
        let client = Client::connect(config).await.unwrap();
        let first = proxy.bootstrap.split(',').next().unwrap().to_owned();
        let broker = BrokerRef { node_id: None, addr: first };
        let request = MetadataRequest::for_topics(std::slice::from_ref(&topic));
        let mut seen = Vec::new();
        for _ in 0..calls {
            let started = Instant::now();
            let answer = client.send(&broker, &request).await.map(|(_, response)| response);
            seen.push((started.elapsed(), answer));
        }
        (seen, topic, proxy.stop())
    })
}

/// The `"fault"` actions the proxy printed, in the order of their pairs.
fn actions(run: &ProxyRun) -> Vec<String> {
    run.pairs()
        .iter()
        .filter_map(|p| p.get("fault"))
        .map(|f| f["action"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn millis(d: Duration) -> u128 {
    d.as_millis()
}

#[test]
fn a_delay_holds_each_request_for_the_delay_it_drew_and_a_response_delay_holds_the_answer() {
    if support::cluster().is_none() {
        return;
    }
    // Drawn per request, uniform in 300 ± 150 ms: each call takes at least what its pair says
    // was drawn, and not much more.
    let (calls, run) = metadata_calls("action=delay,delay_ms=300,jitter_ms=150", 8, Duration::from_secs(10));
    let drawn: Vec<u64> = actions(&run)
        .iter()
        .map(|a| {
            let ms =
                a.rsplit(": ").next().and_then(|n| n.strip_suffix(" ms")).unwrap_or_else(|| panic!("{a}"));
            ms.parse().unwrap_or_else(|_| panic!("{a}"))
        })
        .collect();
    assert_eq!(drawn.len(), 8, "one fault per call: {:?}", actions(&run));
    assert!(drawn.iter().all(|d| (150..=450).contains(d)), "drawn in 300 ± 150 ms: {drawn:?}");
    assert!(drawn.iter().any(|d| *d != drawn[0]), "each request draws its own delay: {drawn:?}");
    for ((took, answer), want) in calls.iter().zip(&drawn) {
        assert_eq!(answer.as_ref().ok(), Some(&ErrorCode::NONE), "{answer:?}");
        let took = millis(*took);
        assert!(took + 2 >= u128::from(*want), "took {took} ms for a drawn {want} ms");
        assert!(took < u128::from(*want) + 1_500, "took {took} ms for a drawn {want} ms");
    }

    // On the response: the broker answered at once, the client hears it 400 ms later.
    let (calls, run) =
        metadata_calls("action=delay,delay_ms=400,direction=response", 3, Duration::from_secs(10));
    assert_eq!(actions(&run), vec!["delay 400 ms (response)"; 3]);
    for (took, answer) in &calls {
        assert_eq!(answer.as_ref().ok(), Some(&ErrorCode::NONE), "{answer:?}");
        assert!((400..1_900).contains(&millis(*took)), "took {took:?}");
    }
}

#[test]
fn a_hold_passes_the_answer_on_late_and_a_dropped_response_is_a_timeout() {
    if support::cluster().is_none() {
        return;
    }
    let (calls, run) = metadata_calls("first=1,action=hold,hold_ms=700", 2, Duration::from_secs(10));
    assert_eq!(actions(&run), ["hold the response 700 ms"]);
    assert!(calls.iter().all(|(_, a)| a.as_ref().ok() == Some(&ErrorCode::NONE)), "{calls:?}");
    assert!((700..2_200).contains(&millis(calls[0].0)), "held: {:?}", calls[0].0);
    assert!(millis(calls[1].0) < 700, "the rule fired once: {:?}", calls[1].0);

    let timeout = Duration::from_millis(1_500);
    let (calls, run) = metadata_calls("first=1,action=drop-response", 2, timeout);
    assert_eq!(actions(&run), ["drop-response"]);
    match &calls[0] {
        (took, Err(ClientError::Timeout { after_ms, .. })) => {
            assert_eq!(*after_ms, 1_500);
            assert!((1_500..3_000).contains(&millis(*took)), "timed out after {took:?}");
        }
        other => panic!("a dropped answer is the request timeout: {other:?}"),
    }
    assert_eq!(calls[1].1.as_ref().ok(), Some(&ErrorCode::NONE), "the next call: {:?}", calls[1]);
}

#[test]
fn a_cut_before_or_after_forwarding_closes_the_connection_and_only_that_request_fails() {
    if support::cluster().is_none() {
        return;
    }
    for action in ["cut-before", "cut-after"] {
        let (calls, run) = metadata_calls(&format!("first=1,action={action}"), 2, Duration::from_secs(10));
        assert_eq!(actions(&run), [action]);
        assert!(
            matches!(calls[0].1, Err(ClientError::ConnectionClosed { .. })),
            "{action}: the call sees its connection closed: {:?}",
            calls[0]
        );
        assert!(millis(calls[0].0) < 2_000, "{action}: at once, not at a timeout: {:?}", calls[0].0);
        // The client connects again for the next request.
        assert_eq!(calls[1].1.as_ref().ok(), Some(&ErrorCode::NONE), "{action}: {:?}", calls[1]);
    }
}

#[test]
fn an_error_answer_carries_exactly_the_code_asked_for() {
    if support::cluster().is_none() {
        return;
    }
    for (name, code) in [
        ("TOPIC_AUTHORIZATION_FAILED", ErrorCode::TOPIC_AUTHORIZATION_FAILED),
        ("LEADER_NOT_AVAILABLE", ErrorCode::LEADER_NOT_AVAILABLE),
    ] {
        let (calls, run) =
            metadata_calls(&format!("first=1,action=error,error={name}"), 2, Duration::from_secs(10));
        assert_eq!(actions(&run), [format!("error {name}")]);
        assert_eq!(calls[0].1.as_ref().ok(), Some(&code), "{name}: {:?}", calls[0]);
        assert_eq!(calls[1].1.as_ref().ok(), Some(&ErrorCode::NONE), "{name}: the rule fired once");
    }
}

#[test]
fn a_rewrite_sets_the_named_field_in_the_answer_the_client_reads() {
    if support::cluster().is_none() {
        return;
    }
    let (answers, topic, run) =
        metadata_answers("first=1,action=rewrite,field=leader_id,value=99", 2, Duration::from_secs(10));
    assert_eq!(actions(&run), ["rewrite leader_id = 99"]);
    let leaders = |n: usize| -> Vec<i32> {
        let response = answers[n].1.as_ref().unwrap_or_else(|e| panic!("call {n}: {e}"));
        let t = response.topics.iter().find(|t| t.name.as_deref() == Some(topic.as_str())).unwrap();
        t.partitions.iter().map(|p| p.leader_id).collect()
    };
    assert_eq!(leaders(0), [99], "the rewritten answer");
    assert_ne!(leaders(1), [99], "the next answer is the broker's");
    // The proxy printed what the client read.
    let pair = run.pairs().into_iter().find(|p| p.get("fault").is_some()).unwrap();
    assert_eq!(pair["response"]["body"]["topics"][0]["partitions"][0]["leader_id"], 99, "{pair}");
}

/// Bytes of Fetch (or Produce) frames a rule paced, from the pairs' sizes.
fn paced_bytes(run: &ProxyRun, response: bool) -> u64 {
    let key = if response { "response_bytes" } else { "request_bytes" };
    run.pairs()
        .iter()
        .filter(|p| p.get("fault").is_some())
        .map(|p| p[key].as_u64().unwrap_or_else(|| panic!("`{key}` in {p}")))
        .sum()
}

#[test]
fn bandwidth_paces_fetch_answers_and_produce_requests_at_the_rate_given() {
    const RATE: u64 = 100_000;
    let Some(cluster) = support::cluster() else { return };
    let rt = support::multi_thread_runtime();
    rt.block_on(async {
        let direct = Arc::new(Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap());
        let topic = support::new_topic_with_leaders(&direct, "proxy-bandwidth", 1).await;
        let tp = TopicPartition::new(topic.as_str(), 0);

        // Produce ≈ 200 KB through a 100 kB/s limit on the requests.
        let rule = format!("api=Produce,action=bandwidth,bytes_per_second={RATE},direction=request");
        let proxy = KwireProxy::start(&cluster, &["--fault", &rule]);
        let through = Arc::new(Client::connect(ClientConfig::new(&proxy.bootstrap).unwrap()).await.unwrap());
        let producer = kafka_client::Producer::new(through, kafka_client::ProducerConfig::default()).unwrap();
        let value = bytes::Bytes::from(vec![b'v'; 1_000]);
        let started = Instant::now();
        for i in 0..200 {
            let record = kafka_client::ProduceRecord::new(
                Some(bytes::Bytes::from(i.to_string())),
                Some(value.clone()),
            );
            producer.send(&topic, record).await.unwrap();
        }
        producer.flush().await;
        let took = started.elapsed();
        producer.close().await;
        let run = proxy.stop();
        let paced = paced_bytes(&run, false);
        assert_eq!(run.stderr.matches(" 0 unmatched responses").count(), 1, "{}", run.stderr);
        assert!(paced >= 200_000, "every Produce request was paced: {paced} bytes");
        let floor = Duration::from_secs_f64(paced as f64 / RATE as f64);
        assert!(took + Duration::from_millis(20) >= floor, "{paced} B at {RATE} B/s took {took:?}");
        assert!(took < floor * 2 + Duration::from_secs(3), "{paced} B at {RATE} B/s took {took:?}");

        // Read them back through a 100 kB/s limit on the Fetch answers of this topic: Fetch
        // v13+ names it by id, which the proxy learned from the client's Metadata answer.
        let rule = format!("api=Fetch,topic={topic},action=bandwidth,bytes_per_second={RATE}");
        let proxy = KwireProxy::start(&cluster, &["--fault", &rule]);
        let through = Arc::new(Client::connect(ClientConfig::new(&proxy.bootstrap).unwrap()).await.unwrap());
        let mut consumer = Consumer::new(
            through,
            ConsumerConfig { start: StartPolicy::Earliest, ..ConsumerConfig::default() },
        );
        consumer.assign(std::slice::from_ref(&tp)).await.unwrap();
        let started = Instant::now();
        let mut read = Vec::new();
        while read.len() < 200 && started.elapsed() < Duration::from_secs(60) {
            if let Some(chunk) = consumer.poll(Duration::from_millis(200)).await.unwrap() {
                read.extend(chunk.records.iter().map(|r| r.offset));
            }
        }
        let took = started.elapsed();
        consumer.close().await.unwrap();
        let run = proxy.stop();
        assert_eq!(read, (0..200).collect::<Vec<i64>>(), "every record once, in order");
        assert_eq!(run.stderr.matches(" 0 unmatched responses").count(), 1, "{}", run.stderr);
        // The answers that carried the records: at least the records' bytes, paced.
        let paced = paced_bytes(&run, true);
        assert!(paced >= 200_000, "the records came through paced answers: {paced} bytes");
        let carried = Duration::from_secs_f64(200_000.0 / RATE as f64);
        assert!(took + Duration::from_millis(20) >= carried, "200 kB at {RATE} B/s read in {took:?}");
        assert!(took < carried * 3 + Duration::from_secs(3), "200 kB at {RATE} B/s read in {took:?}");
    });
}
