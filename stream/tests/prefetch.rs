//! `run` reads the next batch while the application processes one: the Fetch for batch N+1
//! goes out before N's processing ends, and a crash in the middle of a batch loses nothing
//! and redelivers only that batch — the batch read ahead of it is never committed.

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_client::{Client, ClientConfig, Direction};
use kafka_wire::protocol::ApiKey;
use kwire_stores::FileStore;
use kwire_stream::{Control, DirectStream, Limits, StreamConfig};

use support::{cluster, create_topic, produce, unique, values};

/// Per batch handed out: its first offset, and when its processing ended.
type Windows = Arc<Mutex<Vec<(i64, Option<Instant>)>>>;

/// When each Fetch request went out, and the fetch offsets it asked for.
type Fetches = Arc<Mutex<Vec<(Instant, Vec<i64>)>>>;

async fn traced_client(bootstrap: &str) -> (Arc<Client>, Fetches) {
    let fetches: Fetches = Arc::default();
    let sink = Arc::clone(&fetches);
    let mut config = ClientConfig::new(bootstrap).unwrap();
    config.trace = Some(Arc::new(move |event| {
        if event.api == ApiKey::FETCH && event.direction == Direction::Request {
            let text = format!("{:?}", event.decoded);
            let offsets = text
                .split("fetch_offset: ")
                .skip(1)
                .filter_map(|rest| rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
                .collect();
            sink.lock().unwrap().push((Instant::now(), offsets));
        }
    }));
    (Arc::new(Client::connect(config).await.unwrap()), fetches)
}

/// The first Fetch asking for `offset`, if any.
fn fetched_at(fetches: &Fetches, offset: i64) -> Option<Instant> {
    fetches.lock().unwrap().iter().find(|(_, offsets)| offsets.contains(&offset)).map(|(at, _)| *at)
}

fn config(group: &str, topic: &str) -> StreamConfig {
    StreamConfig::new(group, [topic.to_owned()])
        .limits(Limits { max_per_partition: Some(10), ..Limits::default() })
        .poll_interval(Duration::from_millis(50))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_batch_is_fetched_during_processing_and_a_crash_mid_batch_redelivers_only_that_batch() {
    let Some(cluster) = cluster() else { return };
    let (client, fetches) = traced_client(&cluster.bootstrap).await;
    let topic = unique("stream-prefetch");
    create_topic(&client, &topic, 1).await;
    let written = values("v", 0, 0, 30);
    produce(&client, &topic, 0, &written).await;
    let dir = std::env::temp_dir().join(unique("kwire-stream-prefetch"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("offsets.json");

    let mut stream =
        DirectStream::new(Arc::clone(&client), FileStore::new(&path), config("p", &topic)).unwrap();
    let windows: Windows = Arc::default();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (w, s) = (Arc::clone(&windows), Arc::clone(&seen));
    // Batch 1 ([0, 10)) takes a second; batch 2 ([10, 20)) never finishes: the process dies
    // in the middle of it (the run is dropped, as a SIGKILL would drop it).
    let mut running = Box::pin(stream.run(move |batch| {
        let (w, s) = (Arc::clone(&w), Arc::clone(&s));
        async move {
            let first = batch.offset_ranges()[0].from;
            w.lock().unwrap().push((first, None));
            let vals = batch.records().map(|(_, _, r)| {
                String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned()
            });
            s.lock().unwrap().extend(vals);
            tokio::time::sleep(if first == 0 { Duration::from_secs(1) } else { Duration::from_secs(3600) })
                .await;
            w.lock().unwrap().last_mut().unwrap().1 = Some(Instant::now());
            Ok::<_, std::convert::Infallible>(Control::Continue)
        }
    }));
    let crashed = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            tokio::select! {
                _ = &mut running => panic!("the run ended"),
                () = tokio::time::sleep(Duration::from_millis(20)) => {
                    // Crash once batch 2 is being processed and batch 3 was read ahead.
                    let second = windows.lock().unwrap().iter().any(|(first, _)| *first == 10);
                    if second && fetched_at(&fetches, 20).is_some() {
                        break;
                    }
                }
            }
        }
    })
    .await;
    assert!(
        crashed.is_ok(),
        "batch 3 was not read ahead while batch 2 was processed: {:?}",
        fetches.lock().unwrap()
    );
    // The crash: the run is dropped in the middle of batch 2.
    drop(running);
    drop(stream);

    let windows = windows.lock().unwrap().clone();
    let (_, ended) = windows[0];
    let ended = ended.expect("batch 1 finished");
    let ahead = fetched_at(&fetches, 10).expect("batch 2 was fetched");
    let first = fetched_at(&fetches, 0).expect("batch 1 was fetched");
    // Read ahead from the moment batch 1 is handed out, a moment before the closure starts: on
    // another worker thread the Fetch may go out before the closure's first line.
    assert!(
        first < ahead && ahead < ended,
        "the Fetch for batch 2 went out {:?} after batch 1's, and batch 1's processing ended {:?} after batch 1's Fetch",
        ahead.saturating_duration_since(first),
        ended.saturating_duration_since(first)
    );
    assert_eq!(*seen.lock().unwrap(), written[..20], "batches 1 and 2 handed out, in order");

    // Batch 1 is committed; batch 2 was not finished and batch 3 was only read ahead.
    let stored = FileStore::new(&path).load("p").unwrap();
    assert_eq!(stored.iter().map(|o| o.offset).collect::<Vec<_>>(), [10], "{stored:?}");

    // The restart reads batch 2 again, then batch 3: nothing lost, only batch 2 twice.
    let (client, _) = traced_client(&cluster.bootstrap).await;
    let mut restarted = DirectStream::new(client, FileStore::new(&path), config("p", &topic)).unwrap();
    let mut after: Vec<String> = Vec::new();
    restarted
        .run(|batch| {
            after.extend(batch.records().map(|(_, _, r)| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned()));
            let done = after.len() >= 20;
            async move { Ok::<_, std::convert::Infallible>(if done { Control::Stop } else { Control::Continue }) }
        })
        .await
        .unwrap();
    assert_eq!(after, written[10..], "redelivered from batch 2 on, each record once");
    let stored = FileStore::new(&path).load("p").unwrap();
    assert_eq!(stored.iter().map(|o| o.offset).collect::<Vec<_>>(), [30]);
}

fn value_strings(batch: &kwire_stream::Batch) -> Vec<String> {
    batch
        .records()
        .map(|(_, _, r)| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
        .collect()
}

/// How many Fetch requests asked for `offset`.
fn fetches_for(fetches: &Fetches, offset: i64) -> usize {
    fetches.lock().unwrap().iter().filter(|(_, offsets)| offsets.contains(&offset)).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_hand_the_next_batch_is_fetched_before_the_application_asks_for_it() {
    let Some(cluster) = cluster() else { return };
    let (client, fetches) = traced_client(&cluster.bootstrap).await;
    let topic = unique("stream-prefetch-hand");
    create_topic(&client, &topic, 1).await;
    let written = values("v", 0, 0, 30);
    produce(&client, &topic, 0, &written).await;
    let dir = std::env::temp_dir().join(unique("kwire-stream-prefetch-hand"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("offsets.json");
    let mut stream =
        DirectStream::new(Arc::clone(&client), FileStore::new(&path), config("h", &topic)).unwrap();

    let first = stream.next_batch().await.unwrap();
    let handed_out = Instant::now();
    assert_eq!(value_strings(&first), written[..10]);
    // The application processes batch 1 without calling the stream: batch 2's Fetch goes out
    // meanwhile.
    let deadline = handed_out + Duration::from_secs(10);
    while fetched_at(&fetches, 10).is_none() {
        assert!(Instant::now() < deadline, "batch 2 was not read ahead: {:?}", fetches.lock().unwrap());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stream.commit(&first).await.unwrap();
    let asked = Instant::now();
    assert!(fetched_at(&fetches, 10).unwrap() < asked, "fetched before the next next_batch call");
    let second = stream.next_batch().await.unwrap();
    assert_eq!(value_strings(&second), written[10..20]);
    assert_eq!(second.id(), 2);
    assert_eq!(fetches_for(&fetches, 10), 1, "batch 2 handed out as read ahead, not fetched again");
    stream.commit(&second).await.unwrap();
    let third = stream.next_batch().await.unwrap();
    assert_eq!(value_strings(&third), written[20..]);
    stream.commit(&third).await.unwrap();
    let stored = FileStore::new(&path).load("h").unwrap();
    assert_eq!(stored.iter().map(|o| o.offset).collect::<Vec<_>>(), [30]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_of_other_positions_than_planned_drops_the_batch_read_ahead() {
    let Some(cluster) = cluster() else { return };
    let (client, fetches) = traced_client(&cluster.bootstrap).await;
    let topic = unique("stream-prefetch-other");
    create_topic(&client, &topic, 2).await;
    for p in 0..2 {
        produce(&client, &topic, p, &values("v", p, 0, 30)).await;
    }
    let dir = std::env::temp_dir().join(unique("kwire-stream-prefetch-other"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("offsets.json");
    let mut stream =
        DirectStream::new(Arc::clone(&client), FileStore::new(&path), config("o", &topic)).unwrap();

    let first = stream.next_batch().await.unwrap();
    assert_eq!(
        first.offset_ranges().iter().map(|r| (r.from, r.until)).collect::<Vec<_>>(),
        [(0, 10), (0, 10)]
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while fetches_for(&fetches, 10) == 0 {
        assert!(Instant::now() < deadline, "batch 2 was not read ahead: {:?}", fetches.lock().unwrap());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Meanwhile another writer (an operator's reset tool) moved partition 1 forward to 15;
    // the application loads it, so its commit of batch 1 stores 10 for partition 0 and keeps
    // 15 for partition 1 (10 would move it back): not the positions batch 2 was planned from.
    let other = FileStore::new(&path);
    other.save("o", &[kwire_stream::StoredOffset::new(topic.clone(), 1, 15)]).unwrap();
    stream.reload().await.unwrap();
    let report = stream.commit(&first).await.unwrap();
    assert_eq!(report.rejected.len(), 1, "{report:?}");

    let second = stream.next_batch().await.unwrap();
    let ranges: Vec<(i32, i64, i64)> =
        second.offset_ranges().iter().map(|r| (r.partition, r.from, r.until)).collect();
    assert_eq!(ranges, [(0, 10, 20), (1, 15, 25)], "planned again from the stored positions");
    let mut by_partition = [Vec::new(), Vec::new()];
    for (_, partition, record) in second.records() {
        by_partition[partition as usize]
            .push(String::from_utf8_lossy(record.value.as_deref().unwrap_or_default()).into_owned());
    }
    assert_eq!(by_partition[0], values("v", 0, 10, 10), "partition 0: once, from 10");
    assert_eq!(by_partition[1], values("v", 1, 15, 10), "partition 1: from 15, nothing before it");
    assert_eq!(fetches_for(&fetches, 15), 1, "partition 1 read from 15 after the commit");
    stream.commit(&second).await.unwrap();
    let mut stored: Vec<(i32, i64)> =
        FileStore::new(&path).load("o").unwrap().iter().map(|o| (o.partition, o.offset)).collect();
    stored.sort_unstable();
    assert_eq!(stored, [(0, 20), (1, 25)]);
}
