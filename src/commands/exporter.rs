//! `kwire exporter --listen HOST:PORT`: OpenMetrics `/metrics` for every group of the cluster
//! (or those `--group REGEX` matches) and `/healthz`.
//!
//! A refresh loop, independent of scrapes, reads the cluster every `--interval`: ListGroups
//! (one per broker), the member counts with one DescribeGroups (classic groups) and one
//! ConsumerGroupDescribe (consumer-protocol groups) per coordinator, the coordinators not yet
//! known with one FindCoordinator for all of them (v4+), the committed offsets with one
//! OffsetFetch per coordinator per 250 groups (v8+ multi-group; `exporter_committed`), one
//! Metadata for the topics, the log
//! start and high watermark with two ListOffsets per leader (earliest and latest: a leader
//! refuses a partition twice in one request; lag is read_uncommitted, as kafka_exporter and
//! kafka-consumer-groups report it, so no third read_committed request), and the first
//! unconsumed record of each lagging partition with one Fetch per leader per round (a round
//! per distinct committed offset of a partition). Only the OffsetFetch count grows with the
//! number of groups, by one per coordinator per 250; nothing grows with the number of
//! partitions. `kwire_exporter_refresh_requests{api}` shows what the last refresh sent. A scrape
//! only renders the last snapshot, so it never waits on the cluster; a snapshot older than
//! `--stale-after` intervals is not served as current: the group series are left out and
//! `kwire_exporter_stale` is 1. Within a fresh snapshot, what one refresh could not read is left
//! out too, never carried over from an earlier refresh: the series of a group whose offsets
//! could not be read (`kwire_consumergroup_up` 0) and of a partition whose log bounds could not
//! be read, its leader being down (`kwire_topic_partition_up` 0). Prometheus marks a series
//! that disappears from a scrape stale.
//!
//! Memory stays bounded by the group partitions, not by what the cluster answers: each batch of
//! groups' offsets becomes 16-byte rows as it arrives (`exporter_committed`), the snapshot keeps
//! numbers, not text (24 bytes per group partition), and a scrape renders it in chunks straight
//! onto the connection, the exporter's own series first (`exporter_snapshot`); the health window
//! keeps one committed offset per group partition per refresh (`exporter_tracks`).
//!
//! `--store zk[:CONNECT]` adds the groups of a ZooKeeper offset store (read at each refresh, one
//! read per group), `--store file:PATH` the group of a kwire offset file: the same series with a `store` label naming it, measured against the same
//! log bounds; the cluster's own groups carry no `store` label, as in kafka_exporter.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_client::{Client, FetchOptions, FetchRange, TopicPartition};
use offset_engine::{lag, time_lag_of_record, Isolation, LogView, Offset};
use tokio::io::AsyncWriteExt as _;
use tokio::net::{TcpListener, TcpStream};

use super::exporter_committed::{read_cluster_groups, Committed};
use super::exporter_requests::RequestCounts;
use super::exporter_snapshot::{push_label, GroupSnap, PartitionSnap, RowSnap, Series, Snapshot};
use super::exporter_stores::{FileSource, Source, ZkSource};
use super::exporter_tracks::Tracks;
use super::http_request::read_request_line;
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

/// The timestamp of the record at each offset in `wanted[i]` of `partitions[i]` (sorted and
/// unique), as `(offset, timestamp)` sorted by offset: one `fetch_range` per round, each round
/// holding at most one offset per partition (so one Fetch per leader per round).
async fn timestamps_at(
    client: &Client,
    partitions: &[PartitionSnap],
    wanted: &[BTreeSet<i64>],
    timeout: Duration,
) -> Vec<Vec<(i64, i64)>> {
    let mut out = vec![Vec::new(); partitions.len()];
    let rounds = wanted.iter().map(BTreeSet::len).max().unwrap_or(0);
    let options = FetchOptions {
        max_wait: Duration::from_millis(100),
        partition_max_bytes: 1024,
        timeout,
        ..FetchOptions::default()
    };
    let mut cursors: Vec<_> = wanted.iter().map(BTreeSet::iter).collect();
    for _ in 0..rounds {
        let ranges: Vec<FetchRange> = cursors
            .iter_mut()
            .zip(partitions)
            .filter_map(|(offsets, p)| offsets.next().map(|&o| FetchRange::new(p.tp.clone(), o, o + 1)))
            .collect();
        for (tp, result) in client.fetch_range(&ranges, &options).await {
            let Ok(i) = partitions.binary_search_by(|p| p.tp.cmp(&tp)) else { continue };
            let Some(from) = ranges.iter().find(|r| r.partition == tp).map(|r| r.from) else { continue };
            if let Some(r) = result.ok().and_then(|f| f.records.into_iter().next()) {
                out[i].push((from, r.timestamp.unwrap_or(-1)));
            }
        }
    }
    // Each round asked a higher offset of each partition: already sorted.
    out
}

/// One group's committed offsets (next offset to read, by partition), or why they could not be read.
pub(super) type StoredResult = Result<BTreeMap<TopicPartition, i64>, String>;

/// The partitions of `topics` (sorted by topic, then partition, the order [`Tracks`] needs)
/// that `metadata` lists, and for each topic number the index of each of its partitions.
fn partitions_of(
    topics: &[Arc<str>],
    metadata: &kafka_client::ClusterMetadata,
) -> (Vec<TopicPartition>, Vec<Vec<Option<u32>>>) {
    let mut order: Vec<usize> = (0..topics.len()).collect();
    order.sort_by(|&a, &b| topics[a].cmp(&topics[b]));
    let mut partitions = Vec::new();
    let mut index = vec![Vec::new(); topics.len()];
    for t in order {
        let Some(info) = metadata.topic(&topics[t]) else { continue };
        let mut numbers: Vec<i32> = info.partitions.iter().map(|p| p.partition).filter(|&p| p >= 0).collect();
        numbers.sort_unstable();
        numbers.dedup();
        let slots = &mut index[t];
        for p in numbers {
            let p_usize = usize::try_from(p).unwrap_or(usize::MAX);
            if slots.len() <= p_usize {
                slots.resize(p_usize + 1, None);
            }
            slots[p_usize] = u32::try_from(partitions.len()).ok();
            partitions.push(TopicPartition::new(&topics[t], p));
        }
    }
    (partitions, index)
}

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
    let names: Vec<String> = listed.iter().map(|g| g.group_id.clone()).collect();
    let mut committed = Committed::default();
    let ((), members) = tokio::join!(
        read_cluster_groups(client, &names, timeout, &mut committed),
        client.member_counts(&listed, timeout)
    );
    drop((listed, names));
    for store in stores {
        for (g, r) in store.read(filter, timeout).await? {
            committed.push_group(Some(store.label().to_owned()), g, r);
        }
    }
    let topics: Vec<String> = committed.topics.iter().map(ToString::to_string).collect();
    let metadata = client.refresh_metadata(&topics).await.map_err(|e| e.to_string())?;
    let (partitions, index) = partitions_of(&committed.topics, &metadata);
    let mut bounds = client.log_bounds(&partitions, timeout).await;
    let partitions: Vec<PartitionSnap> = partitions
        .into_iter()
        .map(|tp| {
            let view =
                bounds.remove(&tp).and_then(Result::ok).map(|r| LogView::new(r.log_start, r.high_watermark));
            PartitionSnap { tp, view }
        })
        .collect();
    let mut rows = Vec::with_capacity(committed.rows.len());
    let mut groups = Vec::with_capacity(committed.groups.len());
    for g in std::mem::take(&mut committed.groups) {
        let start =
            u32::try_from(rows.len()).map_err(|_| "more than 4 billion group partitions".to_owned())?;
        if let Some(range) = &g.rows {
            for &(topic, partition, offset) in &committed.rows[range.clone()] {
                let slot = index.get(topic as usize).and_then(|s| s.get(usize::try_from(partition).ok()?));
                let Some(&Some(p)) = slot else { continue };
                if partitions[p as usize].view.is_some() {
                    rows.push(RowSnap::new(p, offset));
                }
            }
        }
        let end = u32::try_from(rows.len()).map_err(|_| "more than 4 billion group partitions".to_owned())?;
        rows[start as usize..].sort_unstable_by_key(|r: &RowSnap| r.partition);
        let members = if g.store.is_none() {
            members.get(&g.group).and_then(|m| m.as_ref().ok().copied())
        } else {
            None
        };
        groups.push(GroupSnap {
            store: g.store,
            group: g.group,
            up: g.rows.is_some(),
            members,
            rows: start..end,
        });
    }
    drop(committed);
    drop(members);
    let view_of = |r: &RowSnap| partitions[r.partition as usize].view.unwrap_or(LogView::new(0, 0));
    let mut wanted = vec![BTreeSet::new(); partitions.len()];
    for r in &rows {
        let view = view_of(r);
        if lag(Some(Offset(r.committed)), &view, Isolation::ReadUncommitted)
            .consumable()
            .is_some_and(|c| c > 0)
        {
            wanted[r.partition as usize].insert(r.committed.max(view.log_start.0));
        }
    }
    let stamps = timestamps_at(client, &partitions, &wanted, timeout).await;
    drop(wanted);
    let now = crate::time::now_ms();
    for r in &mut rows {
        let view = view_of(&*r);
        let l = lag(Some(Offset(r.committed)), &view, Isolation::ReadUncommitted);
        let at = r.committed.max(view.log_start.0);
        let at_partition = &stamps[r.partition as usize];
        let ts = at_partition.binary_search_by_key(&at, |s| s.0).ok().map(|i| at_partition[i].1);
        r.set_lag_ms(time_lag_of_record(now, l.consumable(), false, ts).ms());
    }
    tracks.begin(now, &partitions);
    let negative_lag = |r: &RowSnap, view: &LogView| {
        lag(Some(Offset(r.committed)), view, Isolation::ReadUncommitted).lag().is_some_and(|x| x < 0)
    };
    let mut key = String::new();
    for g in &groups {
        // A group id may be in Kafka and in a store: the store is part of the key.
        key.clear();
        key.push_str(g.store.as_deref().unwrap_or_default());
        key.push('\0');
        key.push_str(&g.group);
        let rows = &mut rows[g.rows.start as usize..g.rows.end as usize];
        tracks.record_group(&key, rows, &partitions, negative_lag);
    }
    tracks.finish();
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

/// The exporter's own series, which open the `/metrics` body (a client that wants only them,
/// such as scripts/bench-exporter waiting for refreshes, may close the connection after them;
/// the group series are rendered only as they are sent).
fn own_series(state: &State, requests: &BTreeMap<String, u64>, stale: bool) -> String {
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
    let Some((_, route)) = read_request_line(&mut stream).await else { return };
    if route == "/metrics" {
        let started = Instant::now();
        let (mut series, own) = {
            let mut state = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            state.scrapes += 1;
            let stale = state.snapshot.refreshed_at.is_none_or(|at| at.elapsed() > stale_after);
            (Series::new(state.snapshot.clone(), stale), own_series(&state, &requests.now(), stale))
        };
        // No Content-Length: the body is rendered while it is sent and ends when the
        // connection closes (a response may be delimited so, RFC 9112 6.3).
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\nConnection: close\r\n\r\n";
        let sent = async {
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(own.as_bytes()).await?;
            let mut chunk = String::with_capacity(CHUNK + 4096);
            while series.fill(&mut chunk, CHUNK) {
                stream.write_all(chunk.as_bytes()).await?;
                chunk.clear();
            }
            stream.write_all(b"# EOF\n").await?;
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
