//! Lag in time on the real cluster: records stamped ten minutes ago, a group committed in the
//! middle, one caught up, one below the log start; `--time-lag fetch|estimate|off`.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use kafka_client::{Client, ClientConfig, ProduceOptions, ProduceRecord};
use serde_json::Value;

use crate::support::{self, create_topic, json, kwire, stderr, stdout, unique, Cluster};

const TEN_MINUTES_MS: i64 = 600_000;

fn now_ms() -> i64 {
    i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

/// Appends records to `partition` stamped `timestamp(i)` for the i-th.
fn produce_stamped(cluster: &Cluster, topic: &str, partition: i32, n: i64, timestamp: impl Fn(i64) -> i64) {
    let rt = crate::support::runtime();
    rt.block_on(async {
        let client = Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap();
        let records = (0..n)
            .map(|i| ProduceRecord {
                timestamp: Some(timestamp(i)),
                ..ProduceRecord::new(None, Some(Bytes::from(format!("r{i}"))))
            })
            .collect();
        client.produce(topic, partition, records, &ProduceOptions::default()).await.unwrap();
    });
}

fn by_partition(doc: &Value) -> BTreeMap<i64, Value> {
    doc["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["partition"].as_i64().unwrap(), p.clone()))
        .collect()
}

fn run_ok(cluster: &Cluster, args: &[&str]) -> std::process::Output {
    let out = kwire(cluster, args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    out
}

#[test]
fn records_ten_minutes_old_are_ten_minutes_of_time_lag_and_lost_records_are_not_counted() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("kwire-it-timelag");
    let group = unique("kwire-it-timelag-g");
    create_topic(&cluster, &topic, 3, 1);
    let old = now_ms() - TEN_MINUTES_MS;
    // 0: all stamped ten minutes ago, committed in the middle.
    produce_stamped(&cluster, &topic, 0, 100, |_| old);
    // 1: caught up.
    produce_stamped(&cluster, &topic, 1, 10, |_| old);
    // 2: one record a second from ten minutes ago; committed at 5, then 0..15 deleted.
    produce_stamped(&cluster, &topic, 2, 20, |i| old + i * 1000);
    run_ok(
        &cluster,
        &[
            "commit",
            "--group",
            &group,
            &format!("{topic}:0=50"),
            &format!("{topic}:1=10"),
            &format!("{topic}:2=5"),
        ],
    );
    run_ok(&cluster, &["topic", "delete-records", &topic, "2=15"]);

    let before = now_ms();
    let doc = json(&run_ok(&cluster, &["group", "describe", &group, "--format", "json"]));
    let after = now_ms();
    let rows = by_partition(&doc);
    let within = |p: &Value, stamped: i64| {
        let ms = p["time_lag_ms"].as_i64().unwrap_or_else(|| panic!("no time lag: {p}"));
        assert!(
            (before - stamped..=after - stamped).contains(&ms),
            "{ms} not in [{}, {}]: {p}",
            before - stamped,
            after - stamped
        );
        ms
    };
    let ms = within(&rows[&0], old);
    assert!((TEN_MINUTES_MS..TEN_MINUTES_MS + 60_000).contains(&ms), "{ms}");
    assert_eq!((rows[&0]["lag"].as_i64(), rows[&0]["time_lag_unknown"].clone()), (Some(50), Value::Null));
    assert_eq!(rows[&1]["time_lag_ms"], 0, "caught up: {}", rows[&1]);
    // Below the log start: lag 15 = 10 lost + 5 consumable, and the time lag is the age of the
    // first record still there (offset 15), not of the deleted one at the committed offset.
    let p2 = &rows[&2];
    assert_eq!(
        (p2["lag"].as_i64(), p2["lost"].as_i64(), p2["consumable"].as_i64()),
        (Some(15), Some(10), Some(5)),
        "{p2}"
    );
    within(p2, old + 15_000);
    // Without a second sample there is no catch-up estimate, and it says so.
    assert_eq!((p2["catch_up_ms"].clone(), p2["catch_up"].as_str()), (Value::Null, Some("unknown")));
    // The topic's total is its worst partition.
    assert_eq!(doc["topics"][0]["time_lag_ms"], rows[&0]["time_lag_ms"]);

    let text = stdout(&run_ok(&cluster, &["group", "describe", &group]));
    assert!(text.contains("TIME_LAG") && text.contains("10m0"), "{text}");

    let off =
        json(&run_ok(&cluster, &["group", "describe", &group, "--time-lag", "off", "--format", "json"]));
    let p0 = &by_partition(&off)[&0];
    assert_eq!(
        (p0["time_lag_ms"].clone(), p0["time_lag_unknown"].as_str()),
        (Value::Null, Some("not_measured"))
    );

    // An idle log gives the estimate nothing to interpolate: unknown, said as such; caught up
    // is still 0; a group not consuming while behind is not catching up.
    let est = json(&run_ok(
        &cluster,
        &["group", "describe", &group, "--time-lag", "estimate", "--sample", "500ms", "--format", "json"],
    ));
    let rows = by_partition(&est);
    assert_eq!(rows[&0]["time_lag_unknown"], "too_few_samples", "{}", rows[&0]);
    assert_eq!(rows[&1]["time_lag_ms"], 0, "{}", rows[&1]);
    assert_eq!(rows[&1]["catch_up_ms"], 0, "{}", rows[&1]);
    assert_eq!(rows[&0]["catch_up"], "not_catching_up", "{}", rows[&0]);
}
