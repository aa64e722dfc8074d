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
//! The snapshot keeps numbers, not text, and a scrape renders it in chunks straight onto the
//! connection (`exporter_snapshot`); the health window keeps one committed offset per group
//! partition per refresh (`exporter_tracks`).
//!
//! `--store zk[:CONNECT]` adds the groups of a ZooKeeper offset store (read at each refresh, one
//! read per group), `--store file:PATH` the group of a kwire offset file: the same series with a `store` label naming it, measured against the same
//! log bounds; the cluster's own groups carry no `store` label, as in kafka_exporter.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_wire::client::{Client, FetchOptions, FetchRange, TopicPartition};
use offset_engine::{lag, time_lag_of_record, Isolation, LogView, Offset};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use super::exporter_requests::RequestCounts;
use super::exporter_snapshot::{push_label, GroupSnap, PartitionSnap, RowSnap, Series, Snapshot};
use super::exporter_stores::{FileSource, Source, ZkSource};
use super::exporter_tracks::Tracks;
use super::Context;
use crate::cli::ExporterArgs;
use crate::exit::{Exit, Failure};

/// Shared between the refresh loop and the HTTP side.
#[derive(Debug, Default)]
struct State {
    snapshot: Arc<Snapshot>,
    refreshes: u64,
    refresh_errors: u64,
    last_error: Option<String>,
    scrapes: u64,
    /// How long rendering and sending the previous scrape took.
    scrape_duration: Duration,
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

/// One group's committed offsets (next offset to read, by partition), or why they could not be read.
pub(super) type StoredResult = Result<BTreeMap<TopicPartition, i64>, String>;

/// One refresh: reads the cluster and renders the series.
async fn refresh(
    client: &Client,
    stores: &[Source],
    filter: Option<&regex::Regex>,
    timeout: Duration,
    tracks: &mut Tracks,
) -> Result<Snapshot, String> {
    let started = Instant::now();
    let listed = client.list_groups().await.map_err(|e| e.to_string())?;
    // Share groups (KIP-932) are left out on purpose: their positions are share-partition start
    // offsets, not committed offsets, and OffsetFetch has none for them (README, "exporter").
    let listed: Vec<_> = listed
        .into_iter()
        .filter(|g| g.group_type.as_deref() != Some("share"))
        .filter(|g| filter.is_none_or(|re| re.is_match(&g.group_id)))
        .collect();
    let groups: Vec<String> = listed.iter().map(|g| g.group_id.clone()).collect();
    let (committed, members) = tokio::join!(
        client.committed_offsets_of_groups(&groups, timeout),
        client.member_counts(&listed, timeout)
    );
    // Every group of every source: (store label, group, offsets or why not).
    let mut sources: Vec<(Option<String>, String, StoredResult)> = committed
        .into_iter()
        .map(|(g, r)| {
            let r = r
                .and_then(kafka_wire::client::CommittedOffsets::complete)
                .map(|m| m.into_iter().map(|(tp, c)| (tp, c.offset)).collect())
                .map_err(|e| e.to_string());
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
    // Every row's partition shares the one `TopicPartition` (and topic string) of `partitions`.
    let index: BTreeMap<&TopicPartition, u32> =
        partitions.iter().enumerate().map(|(i, tp)| (tp, u32::try_from(i).unwrap_or(u32::MAX))).collect();
    let mut rows = Vec::new();
    let mut groups = Vec::with_capacity(sources.len());
    for (store, group, offsets) in &sources {
        let g = u32::try_from(groups.len()).map_err(|_| "more than 4 billion groups".to_owned())?;
        groups.push(GroupSnap {
            store: store.clone(),
            group: group.clone(),
            up: offsets.is_ok(),
            members: if store.is_none() {
                members.get(group).and_then(|m| m.as_ref().ok().copied())
            } else {
                None
            },
        });
        let Ok(offsets) = offsets else { continue };
        for (tp, &committed) in offsets {
            let Some(&p) = index.get(tp) else { continue };
            if views.contains_key(tp) {
                rows.push(RowSnap { group: g, partition: p, committed, lag_ms: None, health: None });
            }
        }
    }
    let mut wanted: BTreeMap<TopicPartition, BTreeSet<i64>> = BTreeMap::new();
    for r in &rows {
        let tp = &partitions[r.partition as usize];
        let view = &views[tp];
        if lag(Some(Offset(r.committed)), view, Isolation::ReadUncommitted)
            .consumable()
            .is_some_and(|c| c > 0)
        {
            wanted.entry(tp.clone()).or_default().insert(r.committed.max(view.log_start.0));
        }
    }
    let stamps = timestamps_at(client, &wanted, timeout).await;
    let now = crate::time::now_ms();
    tracks.begin(now, &views);
    let mut key: Option<(u32, Arc<str>)> = None;
    for r in &mut rows {
        let tp = &partitions[r.partition as usize];
        let view = &views[tp];
        let l = lag(Some(Offset(r.committed)), view, Isolation::ReadUncommitted);
        let at = r.committed.max(view.log_start.0);
        let ts = stamps.get(&(tp.clone(), at)).copied();
        r.lag_ms = time_lag_of_record(now, l.consumable(), false, ts).ms();
        // A group id may be in Kafka and in a store: the store is part of the key.
        let group_key = match &key {
            Some((g, k)) if *g == r.group => k.clone(),
            _ => {
                let g = &groups[r.group as usize];
                let k: Arc<str> = format!("{}\0{}", g.store.as_deref().unwrap_or_default(), g.group).into();
                key = Some((r.group, k.clone()));
                k
            }
        };
        r.health = tracks.health(&group_key, tp, r.committed, view, l.lag().is_some_and(|x| x < 0));
    }
    tracks.finish();
    let partitions =
        partitions.into_iter().map(|tp| PartitionSnap { view: views.get(&tp).copied(), tp }).collect();
    Ok(Snapshot {
        partitions,
        groups,
        rows,
        refreshed_at: Some(Instant::now()),
        refreshed_at_ms: now,
        duration: started.elapsed(),
        requests: BTreeMap::new(),
    })
}

/// The exporter's own series and `# EOF`, which end the `/metrics` body after the group series.
fn trailer(state: &State, requests: &BTreeMap<String, u64>, stale: bool) -> String {
    let snap = &state.snapshot;
    let mut s = String::new();
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
        snap.groups.len(),
        snap.group_errors(),
        snap.rows.len(),
        state.refreshes,
        state.refresh_errors,
        state.scrapes,
        state.scrape_duration.as_secs_f64(),
    );
    s.push_str(
        "# TYPE kwire_exporter_refresh_requests gauge\n# HELP kwire_exporter_refresh_requests Requests the last refresh sent, by API.\n",
    );
    for (api, n) in &snap.requests {
        s.push_str("kwire_exporter_refresh_requests{api=\"");
        push_label(&mut s, api);
        let _ = writeln!(s, "\"}} {n}");
    }
    s.push_str(
        "# TYPE kwire_exporter_requests counter\n# HELP kwire_exporter_requests Requests sent since the exporter started, by API.\n",
    );
    for (api, n) in requests {
        s.push_str("kwire_exporter_requests_total{api=\"");
        push_label(&mut s, api);
        let _ = writeln!(s, "\"}} {n}");
    }
    s.push_str("# EOF\n");
    s
}

/// Bytes of series rendered before they are written to the connection.
const CHUNK: usize = 64 * 1024;
/// How long a scrape's body may take to send.
const SEND_TIMEOUT: Duration = Duration::from_secs(60);

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
    let route = path.split('?').next().unwrap_or("");
    if route == "/metrics" {
        let started = Instant::now();
        let (mut series, trailer) = {
            let mut state = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            state.scrapes += 1;
            let stale = state.snapshot.refreshed_at.is_none_or(|at| at.elapsed() > stale_after);
            (Series::new(state.snapshot.clone(), stale), trailer(&state, &requests.now(), stale))
        };
        // No Content-Length: the body is rendered while it is sent and ends when the
        // connection closes (a response may be delimited so, RFC 9112 6.3).
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\nConnection: close\r\n\r\n";
        let sent = async {
            stream.write_all(head.as_bytes()).await?;
            let mut chunk = String::with_capacity(CHUNK + 4096);
            while series.fill(&mut chunk, CHUNK) {
                stream.write_all(chunk.as_bytes()).await?;
                chunk.clear();
            }
            stream.write_all(trailer.as_bytes()).await?;
            stream.shutdown().await
        };
        // A client that stops reading does not keep the snapshot (or the task) forever.
        let _ = tokio::time::timeout(SEND_TIMEOUT, sent).await;
        state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).scrape_duration = started.elapsed();
        return;
    }
    let (status, body) = if route == "/healthz" {
        let state = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let fresh = state.snapshot.refreshed_at.is_some_and(|at| at.elapsed() <= stale_after);
        if fresh {
            ("200 OK", "ok\n".to_owned())
        } else {
            let why = state.last_error.clone().unwrap_or_else(|| "no refresh yet".to_owned());
            ("503 Service Unavailable", format!("stale: {why}\n"))
        }
    } else {
        ("404 Not Found", "not found: try /metrics or /healthz\n".to_owned())
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
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
            let mut tracks = Tracks::new(window);
            loop {
                let next = tokio::time::Instant::now() + interval;
                // A refresh may not outlive the data it would replace.
                let bound = interval.max(timeout).saturating_mul(2);
                let before = requests.now();
                let result = tokio::time::timeout(
                    bound,
                    refresh(&client, &store_sources, filter.as_ref(), timeout, &mut tracks),
                )
                .await
                .unwrap_or_else(|_| Err(format!("refresh took longer than {bound:?}")));
                {
                    let mut s = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    match result {
                        Ok(mut snapshot) => {
                            snapshot.requests = requests.since(&before);
                            s.snapshot = Arc::new(snapshot);
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
