//! kwire-zk against a real ZooKeeper (`KWIRE_ZOOKEEPER`, see `scripts/cluster env`), with
//! ZooKeeper's own Java client as the old writer and reader.

mod secured;
mod support;

use std::time::{Duration, Instant};

use kwire_zk::layout::OffsetTextError;
use kwire_zk::{Error, StoredOffset, ZkOffsetStore};
use support::{old_zk, plant, raw_client, unique_group, zookeeper, Proxy};

const SESSION: Duration = Duration::from_secs(10);

fn names(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn offsets_round_trip_with_leader_epoch_and_topic_id() {
    let Some(zk) = zookeeper("round trip").await else { return };
    let store = ZkOffsetStore::connect(&zk, SESSION).await.unwrap();
    let group = unique_group("roundtrip");
    let id = [7u8; 16];
    let written = vec![
        StoredOffset::new("orders", 0, 42).with_leader_epoch(3).with_topic_id(id),
        StoredOffset::new("orders", 1, 0),
        StoredOffset::new("payments", 10, i64::MAX).with_leader_epoch(0),
    ];
    store.write(&group, &written).await.unwrap();

    assert_eq!(store.read(&group, None).await.unwrap(), written);
    assert_eq!(store.read(&group, Some(&names(&["payments"]))).await.unwrap(), written[2..]);
    assert_eq!(store.read(&group, Some(&names(&["never-written"]))).await.unwrap(), []);

    // A second write moves the offsets on; a fresh store (a restarted process) sees them.
    let next = vec![StoredOffset::new("orders", 0, 50).with_leader_epoch(4).with_topic_id(id)];
    store.write(&group, &next).await.unwrap();
    let restarted = ZkOffsetStore::connect(&zk, SESSION).await.unwrap();
    assert_eq!(
        restarted.read(&group, Some(&names(&["orders"]))).await.unwrap(),
        [next[0].clone(), written[1].clone()]
    );
    // An empty batch writes nothing and succeeds.
    restarted.write(&group, &[]).await.unwrap();
}

#[tokio::test]
async fn old_java_client_and_kwire_read_each_others_offsets() {
    let Some(zk) = zookeeper("old layout compatibility").await else { return };
    let store = ZkOffsetStore::connect(&zk, SESSION).await.unwrap();
    let group = unique_group("compat");
    let g = format!("/consumers/{group}");
    let t = format!("{g}/offsets/kafka_direct");

    // The seeds' Curator job: creatingParentsIfNeeded, then the offset as decimal text.
    old_zk(&zk, &[format!("mkdirs:{t}"), format!("create:{t}/0=42"), format!("create:{t}/1=7")]).await;
    assert_eq!(
        store.read(&group, None).await.unwrap(),
        [StoredOffset::new("kafka_direct", 0, 42), StoredOffset::new("kafka_direct", 1, 7)]
    );

    // kwire takes over, with metadata; the old reader sees plain decimal text and only
    // partition numbers under the topic (it does Integer.valueOf on every child).
    store
        .write(
            &group,
            &[
                StoredOffset::new("kafka_direct", 0, 100).with_leader_epoch(5).with_topic_id([1; 16]),
                StoredOffset::new("kafka_direct", 2, 3),
            ],
        )
        .await
        .unwrap();
    let seen = old_zk(
        &zk,
        &[
            format!("get:{t}/0"),
            format!("get:{t}/1"),
            format!("get:{t}/2"),
            format!("ls:{t}"),
            format!("ls:{g}/offsets"),
            // The old writer hands back: it moves partition 0 on by itself.
            format!("set:{t}/0=150"),
        ],
    )
    .await;
    assert_eq!(
        seen,
        [
            format!("get {t}/0 100"),
            format!("get {t}/1 7"),
            format!("get {t}/2 3"),
            format!("ls {t} 0,1,2"),
            format!("ls {g}/offsets kafka_direct"),
        ]
    );

    // kwire still remembers partition 0 at its own write: the old writer's change is detected,
    // and nothing of the batch is written.
    let err = store
        .write(&group, &[StoredOffset::new("kafka_direct", 1, 9), StoredOffset::new("kafka_direct", 0, 160)])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::ConcurrentModification { topic, partition: 0, path, .. }
            if topic == "kafka_direct" && *path == format!("{t}/0")),
        "{err}"
    );

    // Reading takes the old writer's value; kwire's metadata described 100, so it is dropped.
    let now = store.read(&group, None).await.unwrap();
    assert_eq!(
        now,
        [
            StoredOffset::new("kafka_direct", 0, 150),
            StoredOffset::new("kafka_direct", 1, 7),
            StoredOffset::new("kafka_direct", 2, 3),
        ]
    );
    // After that read, writing over it is deliberate and succeeds.
    store.write(&group, &[StoredOffset::new("kafka_direct", 0, 160)]).await.unwrap();
    assert_eq!(old_zk(&zk, &[format!("get:{t}/0")]).await, [format!("get {t}/0 160")]);
}

#[tokio::test]
async fn a_concurrent_writer_between_read_and_write_fails_the_whole_batch() {
    let Some(zk) = zookeeper("concurrent writer").await else { return };
    let group = unique_group("race");
    let ours = ZkOffsetStore::connect(&zk, SESSION).await.unwrap();
    let theirs = ZkOffsetStore::connect(&zk, SESSION).await.unwrap();
    ours.write(&group, &[StoredOffset::new("t", 0, 10), StoredOffset::new("t", 1, 10)]).await.unwrap();

    assert_eq!(ours.read(&group, None).await.unwrap().len(), 2);
    theirs.write(&group, &[StoredOffset::new("t", 1, 20)]).await.unwrap();
    let err = ours
        .write(
            &group,
            &[StoredOffset::new("t", 0, 30), StoredOffset::new("t", 1, 30), StoredOffset::new("u", 0, 30)],
        )
        .await
        .unwrap_err();
    assert!(matches!(&err, Error::ConcurrentModification { partition: 1, .. }), "{err}");
    assert!(err.to_string().contains("t-1"), "{err}");

    // Nothing of the batch landed: not partition 0, not the new topic.
    assert_eq!(
        theirs.read(&group, None).await.unwrap(),
        [StoredOffset::new("t", 0, 10), StoredOffset::new("t", 1, 20)]
    );
    assert!(!ours.read(&group, Some(&names(&["u"]))).await.unwrap().iter().any(|o| o.topic == "u"));

    // A partition created by someone else after we saw the topic without it is a conflict too.
    theirs.write(&group, &[StoredOffset::new("t", 2, 5)]).await.unwrap();
    let err = ours.write(&group, &[StoredOffset::new("t", 2, 6)]).await.unwrap_err();
    assert!(matches!(&err, Error::ConcurrentModification { partition: 2, .. }), "{err}");
}

#[tokio::test]
async fn damaged_nodes_are_errors_naming_the_path() {
    let Some(zk) = zookeeper("damaged nodes").await else { return };
    let raw = raw_client(&zk).await;
    let store = ZkOffsetStore::connect(&zk, SESSION).await.unwrap();

    let group = unique_group("corrupt");
    let path = format!("/consumers/{group}/offsets/t/0");
    plant(&raw, &path, b"12abc").await;
    let err = store.read(&group, None).await.unwrap_err();
    assert_eq!(
        err,
        Error::CorruptOffset {
            path: path.clone(),
            value: b"12abc".to_vec(),
            reason: OffsetTextError::NotDecimal
        }
    );
    assert!(err.to_string().contains(&path) && err.to_string().contains("12abc"), "{err}");

    let group = unique_group("negative");
    let path = format!("/consumers/{group}/offsets/t/3");
    plant(&raw, &path, b"-5").await;
    let err = store.read(&group, Some(&names(&["t"]))).await.unwrap_err();
    assert!(
        matches!(&err, Error::CorruptOffset { path: p, reason: OffsetTextError::Negative, .. } if *p == path),
        "{err}"
    );

    // Curator's create() without data stores the local IP address.
    let group = unique_group("ipaddress");
    plant(&raw, &format!("/consumers/{group}/offsets/t/0"), b"127.0.1.1").await;
    assert!(matches!(store.read(&group, None).await, Err(Error::CorruptOffset { .. })));

    let group = unique_group("foreignchild");
    plant(&raw, &format!("/consumers/{group}/offsets/t/0"), b"1").await;
    plant(&raw, &format!("/consumers/{group}/offsets/t/lock"), b"").await;
    let err = store.read(&group, None).await.unwrap_err();
    assert!(matches!(&err, Error::UnexpectedChild { child, .. } if child == "lock"), "{err}");

    let group = unique_group("badmeta");
    plant(&raw, &format!("/consumers/{group}/offsets/t/0"), b"1").await;
    let meta = format!("/consumers/{group}/kwire/t/0");
    plant(&raw, &meta, b"{\"version\":1,\"offset\":\"one\"}").await;
    let err = store.read(&group, None).await.unwrap_err();
    assert!(matches!(&err, Error::CorruptMetadata { path, .. } if *path == meta), "{err}");
}

#[tokio::test]
async fn a_chroot_prefixes_every_node_and_is_created_on_first_write() {
    let Some(zk) = zookeeper("chroot").await else { return };
    let servers = zk.split('/').next().unwrap_or(&zk).to_owned();
    let chroot = format!("/{}", unique_group("chroot"));
    let store = ZkOffsetStore::connect(&format!("{servers}{chroot}/kafka"), SESSION).await.unwrap();
    let group = "spark-group";
    store.write(group, &[StoredOffset::new("t", 0, 5).with_leader_epoch(1)]).await.unwrap();
    assert_eq!(store.read(group, None).await.unwrap(), [StoredOffset::new("t", 0, 5).with_leader_epoch(1)]);

    let raw = raw_client(&servers).await;
    let (value, _) = raw.get_data(&format!("{chroot}/kafka/consumers/{group}/offsets/t/0")).await.unwrap();
    assert_eq!(value, b"5");
    let (meta, _) = raw.get_data(&format!("{chroot}/kafka/consumers/{group}/kwire/t/0")).await.unwrap();
    assert_eq!(meta, br#"{"version":1,"offset":5,"leader_epoch":1}"#);
}

#[tokio::test]
async fn a_group_without_offsets_reads_as_empty() {
    let Some(zk) = zookeeper("empty group").await else { return };
    let store = ZkOffsetStore::connect(&zk, SESSION).await.unwrap();
    let missing = unique_group("missing");
    assert_eq!(store.read(&missing, None).await.unwrap(), []);
    assert!(!store.group_exists(&missing).await.unwrap());

    // An old consumer registered (ids/owners) but never committed.
    let registered = unique_group("registered");
    plant(&raw_client(&zk).await, &format!("/consumers/{registered}/ids"), b"").await;
    assert_eq!(store.read(&registered, None).await.unwrap(), []);
    assert!(store.group_exists(&registered).await.unwrap());
    assert!(store.groups().await.unwrap().contains(&registered));
}

#[tokio::test]
async fn bad_input_is_refused_before_anything_is_written() {
    let Some(zk) = zookeeper("bad input").await else { return };
    let store = ZkOffsetStore::connect(&zk, SESSION).await.unwrap();
    let group = unique_group("badinput");
    let refused = [
        (vec![StoredOffset::new("t", 0, -1)], "negative offset"),
        (vec![StoredOffset::new("t", -1, 0)], "negative partition"),
        (vec![StoredOffset::new("a/b", 0, 0)], "slash in topic"),
        (vec![StoredOffset::new("t", 0, 1), StoredOffset::new("t", 0, 2)], "duplicate"),
    ];
    for (batch, why) in refused {
        let err = store.write(&group, &batch).await.unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidOffset { .. }
                    | Error::InvalidPartition { .. }
                    | Error::InvalidTopic { .. }
                    | Error::DuplicatePartition { .. }
            ),
            "{why}: {err}"
        );
    }
    assert!(matches!(store.write("a/b", &[]).await, Err(Error::InvalidGroup { .. })));
    assert!(matches!(store.read("", None).await, Err(Error::InvalidGroup { .. })));
    assert!(!store.group_exists(&group).await.unwrap());
    assert!(matches!(
        ZkOffsetStore::connect("127.0.0.1:1/chroot/", SESSION).await,
        Err(Error::InvalidConnectString { .. })
    ));
}

#[tokio::test]
async fn an_absurd_session_timeout_opens_a_session_instead_of_overflowing_the_clock() {
    let Some(zk) = zookeeper("absurd timeout").await else { return };
    // 7,000,000,000,000,000,000 s panicked inside zookeeper-client's `Instant + timeout`.
    let store = ZkOffsetStore::connect(&zk, Duration::from_secs(7_000_000_000_000_000_000))
        .await
        .unwrap()
        .with_retry_budget(Duration::MAX);
    let group = unique_group("absurd-timeout");
    store.write(&group, &[StoredOffset::new("t", 0, 5)]).await.unwrap();
    assert_eq!(store.read(&group, None).await.unwrap()[0].offset, 5);
}

#[tokio::test]
async fn a_server_that_refuses_or_answers_garbage_is_named_when_no_session_opens() {
    let garbage = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let garbage_addr = garbage.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = garbage.accept().await {
            use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
            let mut buf = [0u8; 64];
            let _ = stream.read(&mut buf).await;
            let _ = stream.write_all(b"SSH-2.0-OpenSSH_9.6\r\n").await;
        }
    });
    let started = Instant::now();
    let err = ZkOffsetStore::connect(&garbage_addr, Duration::from_secs(2)).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(4), "the probe adds no time: {:?}", started.elapsed());
    let Error::Unreachable { probes, .. } = &err else { panic!("{err}") };
    assert_eq!(probes.len(), 1, "{err}");
    let text = err.to_string();
    assert!(text.contains("not ZooKeeper's") && text.contains("SSH-2.0-OpenSSH"), "{text}");
}

#[tokio::test]
async fn writes_survive_connection_loss_and_session_expiry() {
    let Some(zk) = zookeeper("connection loss").await else { return };
    let proxy = Proxy::start(&zk).await;
    // 4 s is ZooKeeper's minimum session timeout at its default tickTime of 2 s.
    let store = ZkOffsetStore::connect(&proxy.addr.to_string(), Duration::from_secs(4))
        .await
        .unwrap()
        .with_retry_budget(Duration::from_secs(40));
    let group = unique_group("outage");
    store.write(&group, &[StoredOffset::new("t", 0, 1)]).await.unwrap();

    // A short outage: the same session reconnects.
    proxy.cut();
    let restore = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        proxy.restore();
    };
    let batch = [StoredOffset::new("t", 0, 2)];
    let (written, ()) = tokio::join!(store.write(&group, &batch), restore);
    written.unwrap();
    assert_eq!(store.read(&group, None).await.unwrap(), [StoredOffset::new("t", 0, 2)]);

    // Longer than the session timeout: the session expires and a new one is opened.
    proxy.cut();
    let restore = async {
        tokio::time::sleep(Duration::from_secs(9)).await;
        proxy.restore();
    };
    let started = Instant::now();
    let batch = [StoredOffset::new("t", 0, 3)];
    let (written, ()) = tokio::join!(store.write(&group, &batch), restore);
    written.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(9), "the write cannot have succeeded during the outage");
    assert_eq!(store.read(&group, None).await.unwrap(), [StoredOffset::new("t", 0, 3)]);
    assert_eq!(
        ZkOffsetStore::connect(&zk, SESSION).await.unwrap().read(&group, None).await.unwrap(),
        [StoredOffset::new("t", 0, 3)]
    );
}

#[tokio::test]
async fn an_unreachable_server_is_reported_when_the_budget_is_spent() {
    let Some(zk) = zookeeper("deadline").await else { return };
    let proxy = Proxy::start(&zk).await;
    let store = ZkOffsetStore::connect(&proxy.addr.to_string(), Duration::from_secs(4))
        .await
        .unwrap()
        .with_retry_budget(Duration::from_secs(2));
    let group = unique_group("deadline");
    store.write(&group, &[StoredOffset::new("t", 0, 1)]).await.unwrap();

    proxy.cut();
    let started = Instant::now();
    let err = store.write(&group, &[StoredOffset::new("t", 0, 2)]).await.unwrap_err();
    assert!(matches!(err, Error::DeadlineExceeded { operation: "write", .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    let err = store.read(&group, None).await.unwrap_err();
    assert!(matches!(err, Error::DeadlineExceeded { operation: "read", .. }), "{err}");

    // Back online: whatever happened to the lost write, the store resolves it and goes on.
    proxy.restore();
    let store = store.with_retry_budget(Duration::from_secs(30));
    store.write(&group, &[StoredOffset::new("t", 0, 4)]).await.unwrap();
    assert_eq!(store.read(&group, None).await.unwrap(), [StoredOffset::new("t", 0, 4)]);
}
