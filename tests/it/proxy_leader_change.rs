//! A partition's leader moves while a Java producer writes through `kwire proxy`: the old
//! leader answers NOT_LEADER_OR_FOLLOWER with the new leader's endpoint (KIP-951
//! `node_endpoints`, Produce v10+), and the proxy must have rewritten that endpoint to one of
//! its own listeners, or the producer would follow it straight to the broker. The producer
//! then goes on writing to the new leader through that listener.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::kwire_proxy::KwireProxy;
use crate::support::leaders::{leader_and_replicas, move_leader};
use crate::support::{self, create_topic, repo_root, stderr, unique};

#[test]
fn a_leader_change_under_a_producer_names_the_new_leader_at_a_proxy_listener() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("proxy-leader");
    create_topic(&cluster, &topic, 1, 3);
    let (leader, replicas) = leader_and_replicas(&cluster, &topic);
    let proxy = KwireProxy::start(&cluster, &[]);
    // Writes until stopped (far more records than it gets to at 200/s).
    let mut producer = Command::new(repo_root().join("scripts/cluster"))
        .args(["tool", "org.apache.kafka.tools.ProducerPerformance", "--topic", &topic])
        .args(["--num-records", "10000000", "--record-size", "20", "--throughput", "200"])
        .args(["--producer-props", &format!("bootstrap.servers={}", proxy.bootstrap), "acks=all"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ProducerPerformance starts");
    proxy.wait_for_output("\"api\":\"Produce\",", Duration::from_secs(90));
    let new_leader = *replicas.iter().find(|r| **r != leader).expect("another replica");
    move_leader(&cluster, &topic, &replicas, new_leader);
    assert_eq!(leader_and_replicas(&cluster, &topic).0, new_leader, "the leader moved");
    proxy.wait_for_output("\"node_endpoints\":[{", Duration::from_secs(60));
    // A few seconds of writing to the new leader, then stop the producer.
    std::thread::sleep(Duration::from_secs(3));
    assert!(producer.try_wait().is_ok_and(|s| s.is_none()), "the producer stopped on its own");
    let _ = producer.kill();
    let ended = producer.wait_with_output().expect("ProducerPerformance ended");
    assert!(!stderr(&ended).contains("ERROR"), "{}", stderr(&ended));

    let listeners = proxy.listeners();
    let run = proxy.stop();
    assert!(run.notices().is_empty(), "notices: {:?}", run.notices());
    let produces: Vec<&Value> = run.pairs().into_iter().filter(|p| p["api_key"] == 0).collect();
    let first_redirect = produces
        .iter()
        .position(|p| p["response"]["body"]["node_endpoints"].as_array().is_some_and(|e| !e.is_empty()))
        .expect("a Produce response named the new leader (node_endpoints)");
    let redirect = produces[first_redirect];
    assert!(redirect["error_codes"].to_string().contains('6'), "NOT_LEADER_OR_FOLLOWER: {redirect}");
    let endpoints = redirect["response"]["body"]["node_endpoints"].as_array().expect("endpoints");
    let named = endpoints.iter().find(|e| e["node_id"] == new_leader).expect("the new leader's endpoint");
    let port = named["port"].as_i64().and_then(|p| u16::try_from(p).ok());
    let upstream = listeners.iter().find(|(local, _)| Some(*local) == port).map(|(_, up)| up.as_str());
    assert!(
        named["host"] == "127.0.0.1" && upstream.is_some(),
        "the new leader's endpoint is not a proxy listener ({listeners:?}): {named}"
    );
    // The producer followed it: later Produce requests went through that listener to the new
    // leader and succeeded.
    let followed = produces[first_redirect..]
        .iter()
        .filter(|p| p["broker"].as_str() == upstream && p["error_codes"] == serde_json::json!([]))
        .count();
    assert!(followed > 0, "no successful Produce to the new leader ({upstream:?}) after the redirect");
}
