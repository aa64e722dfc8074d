//! What security costs in round trips: on the SASL_SSL listener every broker connection kwire
//! opens does one TLS handshake and one SASL authentication, and every request after that
//! reuses it: `kwire group describe` and `kwire offsets` (both ask every leader) send the same
//! requests as on PLAINTEXT plus one SaslHandshake and one SCRAM exchange per connection.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::Duration;

use kafka_client::{Client, TopicPartition};
use kafka_wire::protocol::ApiKey;

use crate::support::secured;
use crate::support::traffic::{Detail, Traffic};
use crate::support::{self, create_topic, kwire, stderr, unique, Cluster};

const AUTH_APIS: [&str; 2] = ["SaslHandshake", "SaslAuthenticate"];

/// What one `--trace` run sent: requests per API, and the broker addresses it talked to.
#[derive(Debug, PartialEq, Eq)]
struct Sent {
    requests: BTreeMap<String, usize>,
    brokers: BTreeSet<String>,
}

impl Sent {
    /// Reads the trace's request lines: `-> HOST:PORT API vN request correlation_id=...`.
    fn of(trace: &str) -> Self {
        let mut requests = BTreeMap::new();
        let mut brokers = BTreeSet::new();
        for line in trace.lines().filter(|l| l.starts_with("-> ") && l.contains(" request correlation_id=")) {
            let mut words = line.split(' ').skip(1);
            let (Some(broker), Some(api)) = (words.next(), words.next()) else { continue };
            brokers.insert(broker.to_owned());
            *requests.entry(api.to_owned()).or_insert(0) += 1;
        }
        Self { requests, brokers }
    }

    fn count(&self, api: &str) -> usize {
        self.requests.get(api).copied().unwrap_or(0)
    }

    /// The requests that are not authentication, per API.
    fn work(&self) -> BTreeMap<String, usize> {
        self.requests
            .iter()
            .filter(|(api, _)| !AUTH_APIS.contains(&api.as_str()))
            .map(|(a, n)| (a.clone(), *n))
            .collect()
    }
}

fn traced(args: &[&str], bootstrap: &str, config: Option<&std::path::Path>) -> Sent {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kwire"));
    command.args(["-b", bootstrap, "--trace"]);
    if let Some(config) = config {
        command.arg("--command-config").arg(config);
    }
    let out = command
        .args(args)
        .env_remove("KWIRE_BOOTSTRAP")
        .env_remove("KWIRE_COMMAND_CONFIG")
        .output()
        .expect("kwire binary runs");
    assert!(out.status.success(), "kwire {args:?} failed: {}", stderr(&out));
    Sent::of(&stderr(&out))
}

/// A topic whose 6 partitions have leaders on every live broker (one replica each, placed round
/// robin), and a group with an offset on each.
fn spread_topic_and_group(cluster: &Cluster) -> (String, String) {
    let topic = unique("handshakes");
    let group = unique("handshakes-group");
    create_topic(cluster, &topic, 6, 1);
    let offsets: Vec<String> = (0..6).map(|p| format!("{topic}:{p}=0")).collect();
    let mut args = vec!["commit", "--group", group.as_str()];
    args.extend(offsets.iter().map(String::as_str));
    let out = kwire(cluster, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    (topic, group)
}

#[test]
fn group_describe_and_offsets_on_sasl_ssl_authenticate_once_per_broker_connection_not_per_request() {
    let Some(cluster) = support::cluster() else { return };
    let Some(setups) = secured::setups() else { return };
    let sasl_ssl =
        setups.iter().find(|s| s.name == "SASL_SSL/SCRAM-SHA-512").expect("SASL_SSL set-up").clone();
    let (topic, group) = spread_topic_and_group(&cluster);
    for command in [vec!["group", "describe", group.as_str()], vec!["offsets", topic.as_str()]] {
        let plaintext = traced(&command, &cluster.bootstrap, None);
        let secured = traced(&command, &sasl_ssl.bootstrap, Some(&sasl_ssl.kwire_config));
        let connections = secured.brokers.len();
        let handshakes = secured.count("SaslHandshake");
        eprintln!(
            "{command:?}: PLAINTEXT {:?}; SASL_SSL {connections} connections, {handshakes} SaslHandshake, {} \
             SaslAuthenticate, {:?}",
            plaintext.requests,
            secured.count("SaslAuthenticate"),
            secured.work()
        );
        assert_eq!(plaintext.work(), secured.work(), "{command:?}: the same work on both listeners");
        assert_eq!(plaintext.count("SaslHandshake") + plaintext.count("SaslAuthenticate"), 0);
        // Each connection negotiates versions once and authenticates once (SCRAM: client-first
        // and client-final), whatever the number of requests it carries.
        assert!((2..=3).contains(&connections), "{command:?} asks every leader: {secured:?}");
        assert_eq!(handshakes, connections, "{command:?}: {secured:?}");
        assert_eq!(secured.count("ApiVersions"), connections, "{command:?}: {secured:?}");
        assert_eq!(secured.count("SaslAuthenticate"), 2 * connections, "{command:?}: {secured:?}");
        let requests: usize = secured.work().values().sum();
        assert!(requests > 2 * connections, "{command:?}: more requests than connections: {secured:?}");
    }
}

#[test]
fn a_sasl_ssl_client_opens_one_tls_connection_per_broker_and_reuses_it_for_every_later_request() {
    let Some(cluster) = support::cluster() else { return };
    let Some(setups) = secured::setups() else { return };
    let sasl_ssl =
        setups.iter().find(|s| s.name == "SASL_SSL/SCRAM-SHA-512").expect("SASL_SSL set-up").clone();
    let (topic, group) = spread_topic_and_group(&cluster);
    let runtime = support::multi_thread_runtime();
    runtime.block_on(async {
        let mut config = secured::client_config(&sasl_ssl.bootstrap, &sasl_ssl.kwire_config);
        let sasl_handshakes = Traffic::record(&mut config, ApiKey::SASL_HANDSHAKE, Detail::Sizes);
        let client = Client::connect(config).await.expect("authenticated");
        let timeout = Duration::from_secs(30);
        let partitions: Vec<TopicPartition> = (0..6).map(|p| TopicPartition::new(topic.clone(), p)).collect();
        // What `group describe` asks, twice: the second round may open no connection.
        let mut opened = Vec::new();
        for _ in 0..2 {
            client.describe_group(&group, timeout).await.expect("describe");
            client
                .committed_offsets(&group, None, timeout)
                .await
                .expect("offsets")
                .complete()
                .expect("every partition");
            let ranges = client.log_ranges(&partitions, timeout).await;
            assert!(ranges.values().all(Result::is_ok), "{ranges:?}");
            opened.push(client.connections_opened());
        }
        let handshakes = sasl_handshakes.request_brokers();
        let brokers: BTreeSet<&String> = handshakes.iter().collect();
        eprintln!("TLS connections opened {opened:?}, SaslHandshake per broker {handshakes:?}");
        assert_eq!(opened[0], opened[1], "the second round opened connections: {opened:?}");
        assert_eq!(
            usize::try_from(opened[1]).unwrap(),
            handshakes.len(),
            "one authentication per connection"
        );
        assert_eq!(brokers.len(), handshakes.len(), "one connection per broker: {handshakes:?}");
        assert!((2..=3).contains(&handshakes.len()), "{handshakes:?}");
    });
}
