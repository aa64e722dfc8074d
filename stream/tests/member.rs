//! The stream as a group member (`DirectStream::join`), on the real cluster, for both group
//! protocols: two member streams share a topic's partitions (each batch only over what its
//! member owns), a leaving member hands its partitions over at its last commit (every record
//! processed exactly once when nobody crashes), and a member whose application passed
//! `max.poll.interval.ms` does not commit the partitions it lost — its batch is read again.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_client::{Client, ConsumerConfig, GroupProtocol, TopicPartition};
use kwire_stores::KafkaGroupStore;
use kwire_stream::{DirectStream, Event, Limits, StreamConfig};

use support::{client, cluster, create_topic, exit_within, produce, unique, values};

const PARTITIONS: i32 = 6;

fn member_config(protocol: GroupProtocol) -> ConsumerConfig {
    ConsumerConfig {
        group_protocol: protocol,
        assignment_strategy: vec!["cooperative-sticky".to_owned()],
        session_timeout: Duration::from_secs(10),
        heartbeat_interval: Duration::from_secs(1),
        ..ConsumerConfig::default()
    }
}

fn join(
    client: &Arc<Client>,
    group: &str,
    topic: &str,
    member: ConsumerConfig,
) -> DirectStream<KafkaGroupStore> {
    let config = StreamConfig::new(group, [topic.to_owned()])
        .limits(Limits { max_per_partition: Some(7), ..Limits::default() })
        .poll_interval(Duration::from_millis(100));
    DirectStream::join(KafkaGroupStore::new(Arc::clone(client), Duration::from_secs(10)), config, member)
        .unwrap()
}

/// Every record a member processed, as (partition, offset) → who.
type Processed = BTreeMap<(i32, i64), Vec<char>>;

/// One batch of `stream`: each partition read must be one the member owns, and the batch is
/// committed after its records are taken. Returns its records as (partition, offset).
async fn batch_of(who: char, stream: &mut DirectStream<KafkaGroupStore>) -> Vec<(i32, i64)> {
    let batch = Box::pin(stream.next_batch()).await.unwrap();
    let owned: BTreeSet<TopicPartition> =
        stream.member_state().map(|s| s.owned.into_iter().collect()).unwrap_or_default();
    for p in batch.partitions() {
        let tp = TopicPartition::new(p.range.topic.as_str(), p.range.partition);
        assert!(owned.contains(&tp), "member {who} read {tp}, which it does not own ({owned:?})");
    }
    let records = batch.records().map(|(_, partition, record)| (partition, record.offset)).collect();
    let report = Box::pin(stream.commit(&batch)).await.unwrap();
    assert!(report.rejected.is_empty() && report.not_owned.is_empty(), "{report:?}");
    records
}

/// One batch of `a`, and of `b` at the same time when there is one.
async fn step(
    a: (char, &mut DirectStream<KafkaGroupStore>),
    b: Option<(char, &mut DirectStream<KafkaGroupStore>)>,
    processed: &mut Processed,
) {
    let (who_a, who_b) = (a.0, b.as_ref().map(|b| b.0));
    let (ra, rb) = tokio::join!(batch_of(a.0, a.1), async move {
        match b {
            Some((who, s)) => batch_of(who, s).await,
            None => Vec::new(),
        }
    });
    let both = ra.into_iter().map(|k| (k, who_a)).chain(rb.into_iter().filter_map(|k| Some((k, who_b?))));
    for (key, who) in both {
        processed.entry(key).or_default().push(who);
    }
}

fn owned_by(stream: &DirectStream<KafkaGroupStore>) -> BTreeSet<i32> {
    stream.member_state().map(|s| s.owned.iter().map(|tp| tp.partition).collect()).unwrap_or_default()
}

async fn produce_round(client: &Client, topic: &str, round: usize) {
    for partition in 0..PARTITIONS {
        produce(client, topic, partition, &values("r", partition, round * 20, 20)).await;
    }
}

async fn share_and_hand_over(protocol: GroupProtocol) {
    let Some(cluster) = cluster() else { return };
    let client = client(&cluster).await;
    let topic = unique("stream-member");
    let group = unique("stream-member-group");
    create_topic(&client, &topic, PARTITIONS).await;
    produce_round(&client, &topic, 0).await;
    let mut processed = Processed::new();

    // One member alone reads every partition.
    let mut a = join(&client, &group, &topic, member_config(protocol));
    let deadline = Instant::now() + Duration::from_secs(60);
    while processed.len() < 120 {
        assert!(Instant::now() < deadline, "member a alone read {} of 120", processed.len());
        step(('a', &mut a), None, &mut processed).await;
    }
    assert_eq!(owned_by(&a).len(), PARTITIONS as usize);

    // A second member joins: the partitions are split, disjoint and complete, and the records
    // written next are read by their partition's owner only.
    let mut b = join(&client, &group, &topic, member_config(protocol));
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        assert!(Instant::now() < deadline, "no split: a {:?}, b {:?}", owned_by(&a), owned_by(&b));
        step(('a', &mut a), Some(('b', &mut b)), &mut processed).await;
        let (oa, ob) = (owned_by(&a), owned_by(&b));
        if !oa.is_empty()
            && !ob.is_empty()
            && oa.is_disjoint(&ob)
            && oa.len() + ob.len() == PARTITIONS as usize
        {
            break;
        }
    }
    let (oa, ob) = (owned_by(&a), owned_by(&b));
    produce_round(&client, &topic, 1).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while processed.len() < 240 {
        assert!(Instant::now() < deadline, "a and b read {} of 240", processed.len());
        step(('a', &mut a), Some(('b', &mut b)), &mut processed).await;
    }
    for ((partition, offset), who) in processed.iter().filter(|((_, offset), _)| (20..40).contains(offset)) {
        let owner = if oa.contains(partition) { 'a' } else { 'b' };
        assert_eq!(who, &[owner], "{partition}@{offset} read by {who:?}, owned by {owner} ({oa:?} / {ob:?})");
    }

    // `a` leaves after its last commit: `b` takes every partition from `a`'s commits.
    a.leave().await.unwrap();
    produce_round(&client, &topic, 2).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while processed.len() < 360 || owned_by(&b).len() < PARTITIONS as usize {
        assert!(Instant::now() < deadline, "b read {} of 360, owns {:?}", processed.len(), owned_by(&b));
        step(('b', &mut b), None, &mut processed).await;
    }
    let twice: Vec<_> = processed.iter().filter(|(_, who)| who.len() > 1).collect();
    assert!(twice.is_empty(), "read twice without any crash: {twice:?}");
    assert_eq!(processed.len(), 360);

    // The group's commits are at every log's end.
    let committed = client.committed_offsets(&group, None, Duration::from_secs(10)).await.unwrap();
    for partition in 0..PARTITIONS {
        let c = committed.offsets.get(&TopicPartition::new(topic.as_str(), partition)).map(|c| c.offset);
        assert_eq!(c, Some(60), "partition {partition}");
    }
    b.leave().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classic_members_share_the_partitions_and_a_leaving_one_hands_over_at_its_commits() {
    share_and_hand_over(GroupProtocol::Classic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kip848_members_share_the_partitions_and_a_leaving_one_hands_over_at_its_commits() {
    share_and_hand_over(GroupProtocol::Consumer).await;
}

/// Seed 003's failure as the member stream has it: the application holds a batch past
/// `max.poll.interval.ms`. The member leaves (it says so), the batch's partitions are not
/// committed (the report names them), and the next batch — after joining again — reads the
/// same records from the group's last commit: at-least-once, no commit by a member that had
/// lost its partitions.
async fn poll_interval_passed(protocol: GroupProtocol) {
    let Some(cluster) = cluster() else { return };
    let client = client(&cluster).await;
    let topic = unique("stream-member-poll");
    let group = unique("stream-member-poll-group");
    create_topic(&client, &topic, 2).await;
    for partition in 0..2 {
        produce(&client, &topic, partition, &values("p", partition, 0, 20)).await;
    }
    let member = ConsumerConfig { max_poll_interval: Duration::from_secs(3), ..member_config(protocol) };
    let mut stream = join(&client, &group, &topic, member);
    let deadline = Instant::now() + Duration::from_secs(60);
    let first = loop {
        assert!(Instant::now() < deadline, "nothing read");
        let batch = stream.next_batch().await.unwrap();
        if batch.record_count() > 0 {
            break batch;
        }
    };
    let first_ranges = first.offset_ranges();
    assert!(first_ranges.iter().all(|r| r.from == 0));

    // The application takes longer than max.poll.interval.ms.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let report = stream.commit(&first).await.unwrap();
    assert!(report.written.is_empty(), "a member that left committed: {report:?}");
    let not_owned: BTreeSet<i32> = report.not_owned.iter().map(|(tp, _)| tp.partition).collect();
    let read: BTreeSet<i32> = first_ranges.iter().map(|r| r.partition).collect();
    assert_eq!(not_owned, read);
    let committed = client.committed_offsets(&group, None, Duration::from_secs(10)).await.unwrap();
    assert!(committed.offsets.is_empty(), "{:?}", committed.offsets);

    // The next batch says why, joins again and reads the same records.
    let mut events = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let again = loop {
        assert!(Instant::now() < deadline, "not read again; events {events:?}");
        let batch = stream.next_batch().await.unwrap();
        events.extend(batch.events().iter().cloned());
        if batch.record_count() > 0 {
            break batch;
        }
    };
    assert!(matches!(events.first(), Some(Event::PollIntervalExceeded { limit_ms: 3000, .. })), "{events:?}");
    assert!(events.iter().any(|e| matches!(e, Event::Lost { .. })), "{events:?}");
    assert!(events.iter().any(|e| matches!(e, Event::Assigned { .. })), "{events:?}");
    assert!(again.offset_ranges().iter().all(|r| r.from == 0), "{:?}", again.offset_ranges());
    let report = stream.commit(&again).await.unwrap();
    assert!(report.not_owned.is_empty() && !report.written.is_empty(), "{report:?}");
    stream.leave().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_classic_member_past_the_poll_interval_commits_nothing_and_reads_the_batch_again() {
    poll_interval_passed(GroupProtocol::Classic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kip848_member_past_the_poll_interval_commits_nothing_and_reads_the_batch_again() {
    poll_interval_passed(GroupProtocol::Consumer).await;
}

/// A member stream keeps its offsets in its group: a `group.id` naming another group is refused.
#[tokio::test]
async fn a_member_config_for_another_group_is_refused() {
    let Some(cluster) = cluster() else { return };
    let client = client(&cluster).await;
    let config = StreamConfig::new("mine", ["t".to_owned()]);
    let member = ConsumerConfig { group_id: Some("theirs".to_owned()), ..ConsumerConfig::default() };
    let store = KafkaGroupStore::new(Arc::clone(&client), Duration::from_secs(10));
    let refused = DirectStream::join(store, config, member).unwrap_err();
    assert!(refused.to_string().contains("`theirs` is not the stream's group `mine`"), "{refused}");
}

/// The (partition, offset) of every record line (`R topic partition offset value`) in a sink's
/// log.
fn logged(log: &std::path::Path) -> Vec<(i32, i64)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            (fields.next()? == "R").then_some(())?;
            let (_topic, partition, offset) = (fields.next()?, fields.next()?, fields.next()?);
            Some((partition.parse().ok()?, offset.parse().ok()?))
        })
        .collect()
}

/// `kwire-stream-sink --member`: two processes share a topic's partitions; SIGTERM makes one
/// finish its batch, leave and exit 0, and the other goes on from its commits — every record in
/// the two logs exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sink_processes_share_a_topic_and_one_stopped_by_sigterm_hands_over() {
    let Some(cluster) = cluster() else { return };
    let client = client(&cluster).await;
    let topic = unique("stream-member-sink");
    let group = unique("stream-member-sink-group");
    create_topic(&client, &topic, PARTITIONS).await;
    produce_round(&client, &topic, 0).await;
    let dir = std::env::temp_dir().join(unique("kwire-stream-member-sink"));
    std::fs::create_dir_all(&dir).unwrap();
    let spawn = |name: &str| {
        let stderr = std::fs::File::create(dir.join(format!("{name}.err"))).unwrap();
        std::process::Command::new(env!("CARGO_BIN_EXE_kwire-stream-sink"))
            .args(["--bootstrap", &cluster.bootstrap, "--group", &group, "--topic", &topic, "--member"])
            .arg("--log")
            .arg(dir.join(format!("{name}.log")))
            .args([
                "-X",
                "partition.assignment.strategy=cooperative-sticky",
                "-X",
                "session.timeout.ms=10000",
            ])
            .args(["-X", "heartbeat.interval.ms=1000", "--max-per-partition", "7"])
            .stdout(std::process::Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("the sink starts")
    };
    let total = || logged(&dir.join("one.log")).len() + logged(&dir.join("two.log")).len();
    let wait_for = |what: &'static str, done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done() {
            assert!(Instant::now() < deadline, "waited a minute for {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };

    let mut one = spawn("one");
    wait_for("the first sink to log round 0", &|| total() == 120);
    let mut two = spawn("two");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "the two sinks never shared the partitions");
        let d = client.describe_group(&group, Duration::from_secs(10)).await.unwrap();
        let owned: Vec<usize> = d.members.iter().map(|m| m.assignment().map_or(0, <[_]>::len)).collect();
        if d.state == "Stable"
            && owned.len() == 2
            && owned.iter().all(|n| *n > 0)
            && owned.iter().sum::<usize>() == 6
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    produce_round(&client, &topic, 1).await;
    wait_for("both sinks to log round 1", &|| total() == 240);
    assert!(!logged(&dir.join("two.log")).is_empty(), "the second sink read nothing of round 1");

    let term = |child: &std::process::Child| {
        let status = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        assert!(status.expect("kill runs").success());
    };
    term(&one);
    let status =
        exit_within(&mut one, Duration::from_secs(30)).await.expect("the first sink exits on SIGTERM");
    assert!(
        status.success(),
        "{status}: {}",
        std::fs::read_to_string(dir.join("one.err")).unwrap_or_default()
    );
    produce_round(&client, &topic, 2).await;
    wait_for("the second sink to log round 2", &|| total() == 360);
    term(&two);
    let status =
        exit_within(&mut two, Duration::from_secs(30)).await.expect("the second sink exits on SIGTERM");
    assert!(
        status.success(),
        "{status}: {}",
        std::fs::read_to_string(dir.join("two.err")).unwrap_or_default()
    );

    let mut all = logged(&dir.join("one.log"));
    all.extend(logged(&dir.join("two.log")));
    all.sort_unstable();
    let expected: Vec<(i32, i64)> = (0..PARTITIONS).flat_map(|p| (0..60).map(move |o| (p, o))).collect();
    assert_eq!(all, expected, "every record logged exactly once");
}
