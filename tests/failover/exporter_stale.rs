//! `kwire exporter` while the broker that coordinates its group and is the only replica of some
//! partitions is stopped and started again: every scrape answers within a bound, the series of
//! what could not be refreshed are not served as current (the partitions led by the stopped
//! broker are left out with `kwire_topic_partition_up` 0, or the whole snapshot is stale), what
//! could be refreshed is served with the right numbers, and everything is fresh again once the
//! broker is back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kafka_client::{Client, ClientConfig, NewTopic, TopicPartition};

use super::support;
use super::support::exporter::{regex_escape, samples_of, Exporter, Sample};
use super::{
    cluster_script, commit_each, group_coordinated_by_one_of, produce_each, runtime, Restart, BROKER_STOPS,
    DEADLINE,
};

/// A scrape only renders the last snapshot: anything slower than this has waited on the cluster.
const SCRAPE_BOUND: Duration = Duration::from_secs(2);
/// The exporter's `--timeout`: how long one refresh waits for an answer.
const EXPORTER_TIMEOUT: Duration = Duration::from_secs(3);
/// The longest a refresh can take (the exporter bounds it by twice the larger of its interval and
/// timeout), plus a second: a snapshot refreshed this long after the stop was read after it.
const READ_AFTER: Duration = Duration::from_secs(7);
const PARTITIONS: i32 = 3;

fn records_in(partition: i32) -> i64 {
    4 + i64::from(partition)
}

fn committed_at(partition: i32) -> i64 {
    1 + i64::from(partition)
}

fn now_s() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// One scrape, as the test's scraper thread saw it.
struct Scrape {
    /// Wall clock (seconds since the epoch) when it was sent.
    at_s: f64,
    took: Duration,
    /// The samples, or why there was no 200 answer.
    samples: Result<Vec<Sample>, String>,
}

impl Scrape {
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples.as_ref().ok()?.iter().find_map(|(n, l, v)| {
            (n == name && labels.iter().all(|(k, want)| l.get(*k).is_some_and(|got| got == want)))
                .then_some(*v)
        })
    }

    fn stale(&self) -> bool {
        self.value("kwire_exporter_stale", &[]) != Some(0.0)
    }

    fn refreshed_at_s(&self) -> f64 {
        self.value("kwire_exporter_last_refresh_timestamp_seconds", &[]).unwrap_or(0.0)
    }

    /// Whether the scrape serves the group's numbers for `tp` as current.
    fn serves(&self, group: &str, tp: &TopicPartition) -> bool {
        let p = tp.partition.to_string();
        self.value(
            "kafka_consumergroup_lag",
            &[("consumergroup", group), ("topic", &tp.topic), ("partition", &p)],
        )
        .is_some()
    }

    /// Problems with what the scrape serves: every series present must carry the numbers the
    /// produce counts and commits give, a partition marked down or a group marked down must have
    /// no series, and a stale snapshot no group series at all.
    fn problems(&self, group: &str, tps: &[TopicPartition]) -> Vec<String> {
        let mut out = Vec::new();
        let Ok(samples) = &self.samples else {
            return vec![format!("no answer: {:?}", self.samples.as_ref().err())];
        };
        if self.took > SCRAPE_BOUND {
            out.push(format!("took {:?}", self.took));
        }
        let stale = self.stale();
        let group_up = self.value("kwire_consumergroup_up", &[("consumergroup", group)]);
        for tp in tps {
            let p = tp.partition.to_string();
            let of_tp = [("topic", &*tp.topic), ("partition", &*p)];
            let of_group = [("consumergroup", group), ("topic", &*tp.topic), ("partition", &*p)];
            let want_group = [
                ("kafka_consumergroup_current_offset", committed_at(tp.partition)),
                ("kafka_consumergroup_lag", records_in(tp.partition) - committed_at(tp.partition)),
                ("kwire_consumergroup_consumable", records_in(tp.partition) - committed_at(tp.partition)),
                ("kwire_consumergroup_lost", 0),
            ];
            let want_topic = [
                ("kafka_topic_partition_current_offset", records_in(tp.partition)),
                ("kafka_topic_partition_oldest_offset", 0),
            ];
            let partition_up = self.value("kwire_topic_partition_up", &of_tp);
            for (name, want) in want_topic {
                match self.value(name, &of_tp) {
                    Some(got) if stale || partition_up != Some(1.0) => {
                        out.push(format!(
                            "{tp}: {name} {got} served while stale={stale}, partition up={partition_up:?}"
                        ));
                    }
                    Some(got) if got as i64 != want => {
                        out.push(format!("{tp}: {name} {got}, expected {want}"));
                    }
                    _ => {}
                }
            }
            for (name, want) in want_group {
                match self.value(name, &of_group) {
                    Some(got) if stale || partition_up != Some(1.0) || group_up != Some(1.0) => out.push(format!(
                        "{tp}: {name} {got} served while stale={stale}, partition up={partition_up:?}, group up={group_up:?}"
                    )),
                    Some(got) if got as i64 != want => out.push(format!("{tp}: {name} {got}, expected {want}")),
                    _ => {}
                }
            }
        }
        if stale && samples.iter().any(|(_, l, _)| l.get("consumergroup").is_some_and(|g| g == group)) {
            out.push("group series served while stale".to_owned());
        }
        out
    }

    /// Fresh, and every series of the group there and right.
    fn complete(&self, group: &str, tps: &[TopicPartition]) -> bool {
        !self.stale() && self.problems(group, tps).is_empty() && tps.iter().all(|tp| self.serves(group, tp))
    }
}

#[test]
fn exporter_scrapes_answer_and_mark_unrefreshed_series_stale_while_the_coordinator_and_leader_broker_restarts(
) {
    let Some(cluster) = support::cluster() else { return };
    let _serial = BROKER_STOPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let rt = runtime();
    // Two topics: one replicated on all three brokers (its leadership moves; its series stay
    // current), one with a single replica per partition (a partition on the stopped broker
    // cannot be read until the broker is back).
    let replicated = support::unique("exporter-failover-r3");
    let single = support::unique("exporter-failover-r1");
    let (group, victim, tps) = rt.block_on(async {
        let client = Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap();
        let created = client
            .create_topics(
                &[NewTopic::new(&replicated, PARTITIONS, 3), NewTopic::new(&single, PARTITIONS, 1)],
                DEADLINE,
            )
            .await;
        for r in created.values() {
            r.as_ref().unwrap();
        }
        let tps: Vec<TopicPartition> = [&replicated, &single]
            .iter()
            .flat_map(|t| (0..PARTITIONS).map(|p| TopicPartition::new(t.as_str(), p)))
            .collect();
        produce_each(&client, &tps, records_in).await;
        let metadata = client.refresh_metadata(std::slice::from_ref(&single)).await.unwrap();
        let single_leaders: Vec<i32> =
            metadata.topic(&single).unwrap().partitions.iter().filter_map(|p| p.leader).collect();
        // A group whose coordinator is the only replica of some partition of `single`.
        let (group, victim) = group_coordinated_by_one_of(&client, "exporter-failover-g", &single_leaders)
            .await
            .expect("some group's coordinator leads a partition of the single-replica topic");
        commit_each(&client, &group, &tps, committed_at, None).await;
        (group, victim, tps)
    });
    let on_victim: Vec<TopicPartition> = rt.block_on(async {
        let client = Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap();
        let metadata = client.refresh_metadata(std::slice::from_ref(&single)).await.unwrap();
        metadata
            .topic(&single)
            .unwrap()
            .partitions
            .iter()
            .filter(|p| p.leader == Some(victim))
            .map(|p| TopicPartition::new(single.as_str(), p.partition))
            .collect()
    });
    let replicated_tps: Vec<TopicPartition> =
        tps.iter().filter(|tp| *tp.topic == *replicated).cloned().collect();

    let timeout = format!("{}s", EXPORTER_TIMEOUT.as_secs());
    let exporter = Arc::new(Exporter::start_with(
        &cluster,
        &format!("^{}$", regex_escape(&group)),
        &["--timeout", &timeout, "--stale-after", "3"],
    ));
    let scrapes: Arc<Mutex<Vec<Scrape>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let scraper = {
        let (exporter, scrapes, done) = (exporter.clone(), scrapes.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let (at_s, started) = (now_s(), Instant::now());
                // Twice the bound before giving up, so a slow answer is measured, not lost.
                let answer = exporter.try_get("/metrics", SCRAPE_BOUND * 2);
                let samples = match answer {
                    Ok((status, body)) if status == "HTTP/1.1 200 OK" && body.ends_with("# EOF\n") => {
                        Ok(samples_of(&body))
                    }
                    Ok((status, body)) => Err(format!("{status}: {body}")),
                    Err(e) => Err(e),
                };
                scrapes.lock().unwrap().push(Scrape { at_s, took: started.elapsed(), samples });
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    let wait_for = |what: &str, limit: Duration, pred: &dyn Fn(&Scrape) -> bool| -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if scrapes.lock().unwrap().iter().any(pred) {
                return true;
            }
            if Instant::now() > deadline {
                eprintln!("gave up waiting for {what} after {limit:?}");
                return false;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let before =
        wait_for("a complete scrape before the stop", Duration::from_secs(60), &|s| s.complete(&group, &tps));

    let restart = Restart(victim);
    let stopping_s = now_s();
    let out = cluster_script(&["stop-broker", &victim.to_string()]);
    assert!(out.status.success(), "stop-broker: {}", support::stderr(&out));
    let stopped_s = now_s();
    // Down until a snapshot read wholly after the stop is served; at most a minute (a refresh
    // failing all along leaves the snapshot stale, which the checks below accept as marked).
    let read_after_s = stopped_s + READ_AFTER.as_secs_f64();
    wait_for("a snapshot read while the broker is down", Duration::from_secs(60), &|s| {
        s.refreshed_at_s() > read_after_s
    });
    let restarting_s = now_s();
    restart.now();
    let restarted_s = now_s();
    let after = wait_for("a complete scrape read after the restart", Duration::from_secs(90), &|s| {
        s.refreshed_at_s() > restarted_s && s.complete(&group, &tps)
    });
    done.store(true, Ordering::Relaxed);
    scraper.join().unwrap();

    let scrapes = scrapes.lock().unwrap();
    let report: Vec<String> = scrapes
        .iter()
        .map(|s| {
            format!(
                "{:.1} took {:?} stale={} refreshed {:.1} serves {:?} problems {:?}",
                s.at_s,
                s.took,
                s.stale(),
                s.refreshed_at_s(),
                tps.iter().filter(|tp| s.serves(&group, tp)).map(ToString::to_string).collect::<Vec<_>>(),
                s.problems(&group, &tps)
            )
        })
        .collect();
    let report = format!(
        "group {group}, broker {victim} (only replica of {on_victim:?}) stopping at {stopping_s:.1}, stopped {stopped_s:.1}, restarting {restarting_s:.1}, back {restarted_s:.1}\n{}",
        report.join("\n")
    );
    assert!(before, "no complete scrape before the stop:\n{report}");
    assert!(after, "no complete scrape after the restart:\n{report}");
    for s in scrapes.iter() {
        assert!(
            s.problems(&group, &tps).is_empty(),
            "a scrape served wrong or unrefreshed numbers, or hung:\n{report}"
        );
    }
    // While the broker was down, every snapshot read after the stop leaves its partitions out.
    let down: Vec<&Scrape> = scrapes
        .iter()
        .filter(|s| s.at_s > stopped_s && s.at_s < restarting_s && s.refreshed_at_s() > read_after_s)
        .collect();
    let marked = scrapes.iter().any(|s| s.at_s > read_after_s && s.at_s < restarting_s && s.stale());
    assert!(!down.is_empty() || marked, "no scrape while the broker was down:\n{report}");
    for s in &down {
        for tp in &on_victim {
            assert!(
                !s.serves(&group, tp),
                "{tp} served as current while its only replica was down:\n{report}"
            );
            let p = tp.partition.to_string();
            assert_eq!(
                s.value("kwire_topic_partition_up", &[("topic", &tp.topic), ("partition", &p)]),
                Some(0.0),
                "{tp} not marked down:\n{report}"
            );
        }
    }
    // What could be refreshed was: the replicated topic's leadership moved, its series stayed.
    assert!(
        down.iter().any(|s| !s.stale() && replicated_tps.iter().all(|tp| s.serves(&group, tp))),
        "the replicated topic's series were not served while the broker was down:\n{report}"
    );
    drop(scrapes);
    let healthz = exporter.get("/healthz");
    assert_eq!(healthz.0, "HTTP/1.1 200 OK", "{healthz:?}");

    // The next test of this binary stops a broker too: leave every replica of the replicated
    // topic in sync again, so that stop can move leadership at once.
    rt.block_on(async {
        let client = Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let metadata = client.refresh_metadata(std::slice::from_ref(&replicated)).await.unwrap();
            let partitions = &metadata.topic(&replicated).unwrap().partitions;
            if partitions.iter().all(|p| p.isr.as_slice().len() == 3) {
                break;
            }
            assert!(Instant::now() < deadline, "replicas not back in sync: {partitions:?}");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    });
}
