//! `kwire exporter --listen HOST:PORT`: OpenMetrics `/metrics` for every group of the cluster
//! (or those `--group REGEX` matches) and `/healthz`.
//!
//! A refresh loop, independent of scrapes, reads the cluster every `--interval`: ListGroups
//! (one per broker), the member counts with one DescribeGroups (classic groups) and one
//! ConsumerGroupDescribe (consumer-protocol groups) per coordinator, the coordinators not yet
//! known with one FindCoordinator for all of them (v4+), the committed offsets of all groups
//! with one OffsetFetch per coordinator (v8+ multi-group), one Metadata for the topics, the log
//! start and high watermark with two ListOffsets per leader (earliest and latest: a leader
//! refuses a partition twice in one request; lag is read_uncommitted, as kafka_exporter and
//! kafka-consumer-groups report it, so no third read_committed request), and the first
//! unconsumed record of each lagging partition with one Fetch per leader per round (a round
//! per distinct committed offset of a partition). None of it grows with the number of groups
//! or partitions; `kwire_exporter_refresh_requests{api}` shows what the last refresh sent. A scrape
//! only renders the last snapshot, so it never waits on the cluster; a snapshot older than
//! `--stale-after` intervals is not served as current: the group series are left out and
//! `kwire_exporter_stale` is 1. Within a fresh snapshot, what one refresh could not read is left
//! out too, never carried over from an earlier refresh: the series of a group whose offsets
//! could not be read (`kwire_consumergroup_up` 0) and of a partition whose log bounds could not
//! be read, its leader being down (`kwire_topic_partition_up` 0). Prometheus marks a series
//! that disappears from a scrape stale.
//!
//! Names and labels follow kafka_exporter (danielqsj) where it has the number
//! (`kafka_consumergroup_current_offset`, `kafka_consumergroup_lag`,
//! `kafka_topic_partition_current_offset`, `kafka_topic_partition_oldest_offset`, labels
//! `consumergroup`, `topic`, `partition`); kwire's own are `kwire_consumergroup_consumable`,
//! `kwire_consumergroup_lost`, `kwire_consumergroup_lag_seconds` and the state set
//! `kwire_consumergroup_health`; `kafka_consumergroup_members` is kafka_exporter's too.
//!
//! `--store zk[:CONNECT]` adds the groups of a ZooKeeper offset store (read at each refresh, one
//! read per group), `--store file:PATH` the group of a kwire offset file: the same series with a `store` label naming it, measured against the same
//! log bounds; the cluster's own groups carry no `store` label, as in kafka_exporter.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_wire::client::{Client, FetchOptions, FetchRange, TopicPartition};
use offset_engine::{
    evaluate_health, lag, time_lag_of_record, Health, HealthConfig, HealthFacts, Isolation, Lag, LogView,
    Offset, Sample,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use super::exporter_requests::RequestCounts;
use super::exporter_stores::{FileSource, Source, ZkSource};
use super::Context;
use crate::cli::ExporterArgs;
use crate::exit::{Exit, Failure};

/// What the last successful refresh saw, rendered.
#[derive(Debug, Default)]
struct Snapshot {
    /// The group and topic series, OpenMetrics text without `# EOF`.
    series: String,
    refreshed_at: Option<Instant>,
    refreshed_at_ms: i64,
    duration: Duration,
    groups: usize,
    /// Groups whose offsets could not be read (their series are left out; `kwire_consumergroup_up` is 0).
    group_errors: usize,
    partitions: usize,
    /// Requests the refresh sent, by API.
    requests: BTreeMap<String, u64>,
}

/// Shared between the refresh loop and the HTTP side.
#[derive(Debug, Default)]
struct State {
    snapshot: Snapshot,
    refreshes: u64,
    refresh_errors: u64,
    last_error: Option<String>,
    scrapes: u64,
    /// How long rendering the previous scrape took.
    scrape_duration: Duration,
}

/// OpenMetrics label value escaping: backslash, double quote, newline.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// The per-partition numbers of one group.
struct Row {
    /// The non-Kafka store the group is kept in (its `store` label); `None` for the cluster's.
    store: Option<String>,
    group: String,
    tp: TopicPartition,
    committed: i64,
    view: LogView,
    lag: Lag,
}

/// Timestamps of the records at `(partition, offset)`: one `fetch_range` per round, each round
/// holding at most one offset per partition (so one Fetch per leader per round).
async fn timestamps_at(
    client: &Client,
    wanted: &BTreeMap<TopicPartition, BTreeSet<i64>>,
    timeout: Duration,
) -> BTreeMap<(TopicPartition, i64), i64> {
    let mut out = BTreeMap::new();
    let rounds = wanted.values().map(BTreeSet::len).max().unwrap_or(0);
    let options = FetchOptions {
        max_wait: Duration::from_millis(100),
        partition_max_bytes: 1024,
        timeout,
        ..FetchOptions::default()
    };
    for round in 0..rounds {
        let ranges: Vec<FetchRange> = wanted
            .iter()
            .filter_map(|(tp, offsets)| {
                offsets.iter().nth(round).map(|&o| FetchRange::new(tp.clone(), o, o + 1))
            })
            .collect();
        for (tp, result) in client.fetch_range(&ranges, &options).await {
            if let Some(r) = result.ok().and_then(|f| f.records.into_iter().next()) {
                let from = ranges.iter().find(|x| x.partition == tp).map_or(r.offset, |x| x.from);
                out.insert((tp, from), r.timestamp.unwrap_or(-1));
            }
        }
    }
    out
}

type Tracks = BTreeMap<(String, TopicPartition), VecDeque<Sample>>;

/// One group's committed offsets (next offset to read, by partition), or why they could not be read.
pub(super) type StoredResult = Result<BTreeMap<TopicPartition, i64>, String>;

/// One refresh: reads the cluster and renders the series.
async fn refresh(
    client: &Client,
    stores: &[Source],
    filter: Option<&regex::Regex>,
    timeout: Duration,
    tracks: &mut Tracks,
    window: usize,
) -> Result<Snapshot, String> {
    let started = Instant::now();
    let listed = client.list_groups().await.map_err(|e| e.to_string())?;
    let listed: Vec<_> =
        listed.into_iter().filter(|g| filter.is_none_or(|re| re.is_match(&g.group_id))).collect();
    let groups: Vec<String> = listed.iter().map(|g| g.group_id.clone()).collect();
    let (committed, members) = tokio::join!(
        client.committed_offsets_of_groups(&groups, timeout),
        client.member_counts(&listed, timeout)
    );
    // Every group of every source: (store label, group, offsets or why not).
    let mut sources: Vec<(Option<String>, String, StoredResult)> = committed
        .into_iter()
        .map(|(g, r)| {
            let r =
                r.map(|m| m.into_iter().map(|(tp, c)| (tp, c.offset)).collect()).map_err(|e| e.to_string());
            (None, g, r)
        })
        .collect();
    for store in stores {
        for (g, r) in store.read(filter, timeout).await? {
            sources.push((Some(store.label().to_owned()), g, r));
        }
    }
    let topics: BTreeSet<String> = sources
        .iter()
        .filter_map(|(_, _, r)| r.as_ref().ok())
        .flat_map(|m| m.keys().map(|tp| tp.topic.to_string()))
        .collect();
    let topics: Vec<String> = topics.into_iter().collect();
    let metadata = client.refresh_metadata(&topics).await.map_err(|e| e.to_string())?;
    let partitions: Vec<TopicPartition> = topics
        .iter()
        .filter_map(|t| metadata.topic(t))
        .flat_map(|t| t.partitions.iter().map(|p| TopicPartition::new(t.name.clone(), p.partition)))
        .collect();
    let ranges = client.log_bounds(&partitions, timeout).await;
    let views: BTreeMap<TopicPartition, LogView> = ranges
        .into_iter()
        .filter_map(|(tp, r)| r.ok().map(|r| (tp, LogView::new(r.log_start, r.high_watermark))))
        .collect();
    let failed = sources.iter().filter(|(_, _, r)| r.is_err()).count();
    let mut rows = Vec::new();
    for (store, group, offsets) in &sources {
        let Ok(offsets) = offsets else { continue };
        for (tp, &c) in offsets {
            let Some(view) = views.get(tp) else { continue };
            let l = lag(Some(Offset(c)), view, Isolation::ReadUncommitted);
            rows.push(Row {
                store: store.clone(),
                group: group.clone(),
                tp: tp.clone(),
                committed: c,
                view: *view,
                lag: l,
            });
        }
    }
    let mut wanted: BTreeMap<TopicPartition, BTreeSet<i64>> = BTreeMap::new();
    for r in &rows {
        if r.lag.consumable().is_some_and(|c| c > 0) {
            wanted.entry(r.tp.clone()).or_default().insert(r.committed.max(r.view.log_start.0));
        }
    }
    let stamps = timestamps_at(client, &wanted, timeout).await;
    let now = crate::time::now_ms();

    let mut s = String::new();
    let metric = |s: &mut String, name: &str, kind: &str, help: &str| {
        let _ = writeln!(s, "# TYPE {name} {kind}\n# HELP {name} {help}");
    };
    metric(
        &mut s,
        "kwire_topic_partition_up",
        "gauge",
        "1 when the partition's log bounds were read in the last refresh (0: its series are left out).",
    );
    for tp in &partitions {
        let _ = writeln!(
            s,
            "kwire_topic_partition_up{{topic=\"{}\",partition=\"{}\"}} {}",
            label(&tp.topic),
            tp.partition,
            u8::from(views.contains_key(tp))
        );
    }
    metric(&mut s, "kafka_topic_partition_current_offset", "gauge", "High watermark of the partition.");
    for (tp, v) in &views {
        let _ = writeln!(
            s,
            "kafka_topic_partition_current_offset{{topic=\"{}\",partition=\"{}\"}} {}",
            label(&tp.topic),
            tp.partition,
            v.high_watermark.0
        );
    }
    metric(&mut s, "kafka_topic_partition_oldest_offset", "gauge", "Log start offset of the partition.");
    for (tp, v) in &views {
        let _ = writeln!(
            s,
            "kafka_topic_partition_oldest_offset{{topic=\"{}\",partition=\"{}\"}} {}",
            label(&tp.topic),
            tp.partition,
            v.log_start.0
        );
    }
    let store_label = |store: &Option<String>| {
        store.as_ref().map_or_else(String::new, |s| format!(",store=\"{}\"", label(s)))
    };
    let labels = |r: &Row| {
        format!(
            "consumergroup=\"{}\",topic=\"{}\",partition=\"{}\"{}",
            label(&r.group),
            label(&r.tp.topic),
            r.tp.partition,
            store_label(&r.store)
        )
    };
    let per_row = |s: &mut String, name: &str, value: &dyn Fn(&Row) -> Option<String>| {
        for r in &rows {
            if let Some(v) = value(r) {
                let _ = writeln!(s, "{name}{{{}}} {v}", labels(r));
            }
        }
    };
    metric(
        &mut s,
        "kwire_consumergroup_up",
        "gauge",
        "1 when the group's offsets were read in the last refresh.",
    );
    for (store, group, result) in &sources {
        let _ = writeln!(
            s,
            "kwire_consumergroup_up{{consumergroup=\"{}\"{}}} {}",
            label(group),
            store_label(store),
            u8::from(result.is_ok())
        );
    }
    metric(&mut s, "kafka_consumergroup_members", "gauge", "Members of the group.");
    for (group, count) in &members {
        if let Ok(count) = count {
            let _ = writeln!(s, "kafka_consumergroup_members{{consumergroup=\"{}\"}} {count}", label(group));
        }
    }
    metric(&mut s, "kafka_consumergroup_current_offset", "gauge", "Committed offset of the group.");
    per_row(&mut s, "kafka_consumergroup_current_offset", &|r| Some(r.committed.to_string()));
    metric(&mut s, "kafka_consumergroup_lag", "gauge", "High watermark minus committed offset.");
    per_row(&mut s, "kafka_consumergroup_lag", &|r| r.lag.lag().map(|l| l.to_string()));
    metric(&mut s, "kwire_consumergroup_consumable", "gauge", "Records still in the log to be read.");
    per_row(&mut s, "kwire_consumergroup_consumable", &|r| r.lag.consumable().map(|c| c.to_string()));
    metric(&mut s, "kwire_consumergroup_lost", "gauge", "Records deleted before the group read them.");
    per_row(&mut s, "kwire_consumergroup_lost", &|r| r.lag.lost().map(|l| l.to_string()));
    metric(
        &mut s,
        "kwire_consumergroup_lag_seconds",
        "gauge",
        "Age of the first unconsumed record (0 caught up).",
    );
    per_row(&mut s, "kwire_consumergroup_lag_seconds", &|r| {
        let at = r.committed.max(r.view.log_start.0);
        let ts = stamps.get(&(r.tp.clone(), at)).copied();
        time_lag_of_record(now, r.lag.consumable(), false, ts)
            .ms()
            .map(|ms| format!("{:.3}", ms as f64 / 1000.0))
    });
    metric(&mut s, "kwire_consumergroup_health", "stateset", "Health over the window of refreshes.");
    let mut seen = BTreeSet::new();
    for r in &rows {
        // A group id may be in Kafka and in a store: the store is part of the key.
        let key = (format!("{}\0{}", r.store.as_deref().unwrap_or_default(), r.group), r.tp.clone());
        let track = tracks.entry(key.clone()).or_default();
        track.push_back(Sample { at_ms: now, end: r.view.high_watermark.0, committed: Some(r.committed) });
        while track.len() > window {
            track.pop_front();
        }
        seen.insert(key);
        let samples: Vec<Sample> = track.iter().copied().collect();
        let facts = HealthFacts {
            log_start: r.view.log_start.0,
            anomaly: r.lag.lag().is_some_and(|l| l < 0),
            last_commit_ms: None,
        };
        let Some(health) = evaluate_health(&samples, facts, now, HealthConfig::default()) else { continue };
        for state in Health::ALL {
            let _ = writeln!(
                s,
                "kwire_consumergroup_health{{{},kwire_consumergroup_health=\"{}\"}} {}",
                labels(r),
                state.as_str(),
                u8::from(state == health)
            );
        }
    }
    tracks.retain(|k, _| seen.contains(k));
    Ok(Snapshot {
        series: s,
        refreshed_at: Some(Instant::now()),
        refreshed_at_ms: now,
        duration: started.elapsed(),
        groups: sources.len(),
        group_errors: failed,
        partitions: rows.len(),
        requests: BTreeMap::new(),
    })
}

/// The whole `/metrics` body at a scrape.
fn render(state: &State, requests: &BTreeMap<String, u64>, stale_after: Duration) -> String {
    let snap = &state.snapshot;
    let stale = snap.refreshed_at.is_none_or(|at| at.elapsed() > stale_after);
    let mut s = String::new();
    if !stale {
        s.push_str(&snap.series);
    }
    let _ = write!(
        s,
        "# TYPE kwire_exporter_stale gauge\n# HELP kwire_exporter_stale 1 when the last refresh is older than --stale-after intervals (group series left out).\nkwire_exporter_stale {}\n\
         # TYPE kwire_exporter_last_refresh_timestamp_seconds gauge\n# HELP kwire_exporter_last_refresh_timestamp_seconds When the data was read from the cluster.\nkwire_exporter_last_refresh_timestamp_seconds {:.3}\n\
         # TYPE kwire_exporter_refresh_duration_seconds gauge\n# HELP kwire_exporter_refresh_duration_seconds How long the last refresh took.\nkwire_exporter_refresh_duration_seconds {:.3}\n\
         # TYPE kwire_exporter_groups gauge\n# HELP kwire_exporter_groups Groups in the last refresh.\nkwire_exporter_groups {}\n\
         # TYPE kwire_exporter_group_errors gauge\n# HELP kwire_exporter_group_errors Groups whose offsets could not be read in the last refresh.\nkwire_exporter_group_errors {}\n\
         # TYPE kwire_exporter_partitions gauge\n# HELP kwire_exporter_partitions Group partitions in the last refresh.\nkwire_exporter_partitions {}\n\
         # TYPE kwire_exporter_refreshes counter\n# HELP kwire_exporter_refreshes Successful refreshes.\nkwire_exporter_refreshes_total {}\n\
         # TYPE kwire_exporter_refresh_errors counter\n# HELP kwire_exporter_refresh_errors Failed refreshes.\nkwire_exporter_refresh_errors_total {}\n\
         # TYPE kwire_exporter_scrapes counter\n# HELP kwire_exporter_scrapes Scrapes of /metrics.\nkwire_exporter_scrapes_total {}\n\
         # TYPE kwire_exporter_scrape_duration_seconds gauge\n# HELP kwire_exporter_scrape_duration_seconds How long rendering the previous scrape took.\nkwire_exporter_scrape_duration_seconds {:.6}\n",
        u8::from(stale),
        snap.refreshed_at_ms as f64 / 1000.0,
        snap.duration.as_secs_f64(),
        snap.groups,
        snap.group_errors,
        snap.partitions,
        state.refreshes,
        state.refresh_errors,
        state.scrapes,
        state.scrape_duration.as_secs_f64(),
    );
    s.push_str(
        "# TYPE kwire_exporter_refresh_requests gauge\n# HELP kwire_exporter_refresh_requests Requests the last refresh sent, by API.\n",
    );
    for (api, n) in &snap.requests {
        let _ = writeln!(s, "kwire_exporter_refresh_requests{{api=\"{}\"}} {n}", label(api));
    }
    s.push_str(
        "# TYPE kwire_exporter_requests counter\n# HELP kwire_exporter_requests Requests sent since the exporter started, by API.\n",
    );
    for (api, n) in requests {
        let _ = writeln!(s, "kwire_exporter_requests_total{{api=\"{}\"}} {n}", label(api));
    }
    s.push_str("# EOF\n");
    s
}

/// Answers one HTTP/1.x request and closes the connection.
async fn serve(
    mut stream: TcpStream,
    state: Arc<Mutex<State>>,
    requests: RequestCounts,
    stale_after: Duration,
) {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let read = tokio::time::timeout(Duration::from_secs(5), async {
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await;
    if read.is_err() {
        return;
    }
    let request = String::from_utf8_lossy(&buf);
    let path = request.lines().next().and_then(|l| l.split(' ').nth(1)).unwrap_or("");
    let (status, kind, body) = {
        let mut state = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match path.split('?').next().unwrap_or("") {
            "/metrics" => {
                let started = Instant::now();
                state.scrapes += 1;
                let body = render(&state, &requests.now(), stale_after);
                state.scrape_duration = started.elapsed();
                ("200 OK", "application/openmetrics-text; version=1.0.0; charset=utf-8", body)
            }
            "/healthz" => {
                let fresh = state.snapshot.refreshed_at.is_some_and(|at| at.elapsed() <= stale_after);
                if fresh {
                    ("200 OK", "text/plain; charset=utf-8", "ok\n".to_owned())
                } else {
                    let why = state.last_error.clone().unwrap_or_else(|| "no refresh yet".to_owned());
                    ("503 Service Unavailable", "text/plain; charset=utf-8", format!("stale: {why}\n"))
                }
            }
            _ => (
                "404 Not Found",
                "text/plain; charset=utf-8",
                "not found: try /metrics or /healthz\n".to_owned(),
            ),
        }
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
}

pub async fn run(ctx: &Context, args: &ExporterArgs) -> Result<(), Failure> {
    let filter = match &args.group {
        Some(re) => Some(
            regex::Regex::new(re)
                .map_err(|e| Failure::new(Exit::USAGE, format!("invalid --group regex: {e}")))?,
        ),
        None => None,
    };
    let requests = RequestCounts::default();
    let mut store_sources = Vec::new();
    for spec in &args.stores {
        match spec {
            crate::store::StoreSpec::Kafka => {}
            crate::store::StoreSpec::ZooKeeper(connect) => {
                let connect = connect
                    .clone()
                    .or_else(|| ctx.global.zookeeper.clone())
                    .filter(|c| !c.is_empty())
                    .ok_or_else(|| {
                        Failure::new(
                            Exit::USAGE,
                            "--store zk needs a connect string: zk:HOST:PORT[/chroot], or --zookeeper / KWIRE_ZOOKEEPER",
                        )
                    })?;
                store_sources.push(Source::ZooKeeper(ZkSource {
                    label: spec.to_string(),
                    connect,
                    auth: ctx
                        .global
                        .zookeeper_auth
                        .as_deref()
                        .map(crate::zookeeper_auth::resolve)
                        .transpose()?,
                    acl: ctx.global.zookeeper_acl,
                }));
            }
            crate::store::StoreSpec::File(path) => {
                store_sources.push(Source::File(FileSource { label: spec.to_string(), path: path.clone() }));
            }
            other @ crate::store::StoreSpec::Spark(_) => {
                return Err(Failure::new(
                    Exit::USAGE,
                    format!(
                    "the exporter cannot read groups from --store {other} yet (it reads kafka, zk and file:)"
                ),
                ))
            }
        }
    }
    let client = ctx.client_observed(Some(requests.hook())).await?;
    let listener = TcpListener::bind(&args.listen)
        .await
        .map_err(|e| Failure::new(Exit::USAGE, format!("cannot listen on {}: {e}", args.listen)))?;
    let state = Arc::new(Mutex::new(State::default()));
    let stale_after = args.interval.saturating_mul(args.stale_after);
    eprintln!(
        "kwire exporter: serving http://{}/metrics, refreshing every {:?}",
        listener.local_addr().map_or_else(|_| args.listen.clone(), |a| a.to_string()),
        args.interval
    );
    let refresher = {
        let (state, timeout, interval, window, requests) =
            (state.clone(), ctx.global.timeout, args.interval, args.window as usize, requests.clone());
        tokio::spawn(async move {
            let mut tracks = Tracks::new();
            loop {
                let next = tokio::time::Instant::now() + interval;
                // A refresh may not outlive the data it would replace.
                let bound = interval.max(timeout).saturating_mul(2);
                let before = requests.now();
                let result = tokio::time::timeout(
                    bound,
                    refresh(&client, &store_sources, filter.as_ref(), timeout, &mut tracks, window),
                )
                .await
                .unwrap_or_else(|_| Err(format!("refresh took longer than {bound:?}")));
                {
                    let mut s = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    match result {
                        Ok(mut snapshot) => {
                            snapshot.requests = requests.since(&before);
                            s.snapshot = snapshot;
                            s.refreshes += 1;
                            s.last_error = None;
                        }
                        Err(e) => {
                            eprintln!("kwire exporter: refresh failed: {}", crate::output::escape(&e));
                            s.refresh_errors += 1;
                            s.last_error = Some(e);
                        }
                    }
                }
                tokio::time::sleep_until(next).await;
            }
        })
    };
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(serve(stream, state.clone(), requests.clone(), stale_after));
            }
            Err(e) => {
                refresher.abort();
                return Err(Failure::new(Exit::CLUSTER, format!("accepting on {}: {e}", args.listen)));
            }
        }
    }
}
