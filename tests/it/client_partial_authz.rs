//! The restricted user asking the library for a topic it may describe and one it may not, at
//! once, of the brokers themselves: the leaders (ListOffsets) and the group coordinator
//! (OffsetFetch) answer per partition, so the authorized partitions' numbers come back next to a
//! TOPIC_AUTHORIZATION_FAILED refusal for each forbidden partition. The partitions and their
//! leaders come from the admin's metadata: the restricted user's own Metadata refuses the
//! forbidden topic before any broker is asked (that path is checked too).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kafka_client::{
    BrokerRef, Client, ClientConfig, ClientError, Isolation, OffsetQuery, OffsetToCommit, TopicPartition,
};
use kafka_wire::protocol::{ApiKey, ErrorCode};

use crate::support::secured::{self, Setup};
use crate::support::{self, create_topic, kafka_tool, produce_with_kafka, unique, Cluster};

const TIMEOUT: Duration = Duration::from_secs(30);

/// The prefix of the topics these tests let the restricted user read: other tests that list
/// what that user sees leave them out (the ACLs stay, as the topics do).
pub(crate) const GRANTED_TOPIC_PREFIX: &str = "kwire-partial-authorized";

/// Two new topics of two partitions with records, and a new group name: the restricted user
/// may Describe and Read `authorized` and the group, and nothing of `forbidden`.
struct Resources {
    authorized: String,
    forbidden: String,
    group: String,
}

impl Resources {
    fn new(cluster: &Cluster) -> Self {
        let authorized = unique(GRANTED_TOPIC_PREFIX);
        let forbidden = unique("kwire-partial-forbidden");
        let group = unique("kwire-partial-group");
        for topic in [&authorized, &forbidden] {
            create_topic(cluster, topic, 2, 3);
            produce_with_kafka(cluster, topic, 20, 8);
        }
        kafka_tool(
            "org.apache.kafka.tools.AclCommand",
            &[
                "--bootstrap-server",
                &cluster.bootstrap,
                "--add",
                "--allow-principal",
                "User:restricted",
                "--operation",
                "Describe",
                "--operation",
                "Read",
                "--topic",
                &authorized,
                "--group",
                &group,
            ],
        );
        Self { authorized, forbidden, group }
    }

    fn both(&self) -> [String; 2] {
        [self.authorized.clone(), self.forbidden.clone()]
    }
}

/// The two partitions of `topic`.
fn partitions_of(topic: &str) -> Vec<TopicPartition> {
    (0..2).map(|p| TopicPartition::new(topic, p)).collect()
}

/// The admin's client (PLAINTEXT) and the restricted user's, once the restricted user's
/// Metadata shows the authorized topic (the new ACL has reached the broker it asks).
async fn clients(cluster: &Cluster, restricted: &Setup, authorized: &str) -> (Client, Client) {
    let admin = Client::connect(ClientConfig::new(&cluster.bootstrap).unwrap()).await.unwrap();
    let user = secured::client(restricted).await;
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let metadata = user.refresh_metadata(&[authorized.to_owned()]).await.unwrap();
        if metadata.topic(authorized).is_some_and(|t| t.error.is_ok() && t.partitions.len() == 2) {
            return (admin, user);
        }
        assert!(Instant::now() < deadline, "the ACL on {authorized} never reached the brokers");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Each leader, as the restricted user's listener names it, with the partitions of `topics` it
/// leads as the admin's metadata says.
async fn leaders(admin: &Client, user: &Client, topics: &[String]) -> Vec<(BrokerRef, Vec<TopicPartition>)> {
    let admin_view = admin.refresh_metadata(topics).await.unwrap();
    // Any Metadata answer lists every broker at the address of the listener it came in on.
    let user_view = user.refresh_metadata(&[]).await.unwrap();
    let mut by_leader: BTreeMap<i32, Vec<TopicPartition>> = BTreeMap::new();
    for topic in topics {
        let info = admin_view.topic(topic).unwrap_or_else(|| panic!("admin metadata lacks {topic}"));
        for p in &info.partitions {
            let leader = p.leader.unwrap_or_else(|| panic!("{topic}-{} has no leader", p.partition));
            by_leader.entry(leader).or_default().push(TopicPartition::new(topic.clone(), p.partition));
        }
    }
    by_leader
        .into_iter()
        .map(|(id, tps)| {
            let broker = user_view.broker(id).unwrap_or_else(|| panic!("broker {id} not listed"));
            (BrokerRef { node_id: Some(id), addr: broker.addr() }, tps)
        })
        .collect()
}

/// Asserts `e` is Kafka's TOPIC_AUTHORIZATION_FAILED for `api`.
fn assert_topic_refusal(e: &ClientError, api: ApiKey) {
    assert_eq!(e.authorization_code(), Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED), "{e}");
    assert!(matches!(e, ClientError::Kafka { api: a, .. } if *a == api), "{api} refusal expected: {e}");
}

#[test]
fn the_restricted_user_listing_offsets_of_its_topic_and_a_forbidden_one_on_their_leaders_gets_its_offsets_and_a_refusal_per_forbidden_partition(
) {
    let Some(cluster) = support::cluster() else { return };
    let Some(restricted) = secured::restricted() else { return };
    let r = Resources::new(&cluster);
    support::multi_thread_runtime().block_on(async {
        let (admin, user) = clients(&cluster, &restricted, &r.authorized).await;
        let all: Vec<TopicPartition> = [partitions_of(&r.authorized), partitions_of(&r.forbidden)].concat();
        let truth = admin.list_offsets(&all, OffsetQuery::Latest, Isolation::ReadUncommitted, TIMEOUT).await;

        // One ListOffsets per leader, both topics' partitions in each: the leader answers each.
        let mut answers = BTreeMap::new();
        for (leader, tps) in leaders(&admin, &user, &r.both()).await {
            let answered = user
                .list_offsets_on(&leader, &tps, OffsetQuery::Latest, Isolation::ReadUncommitted)
                .await
                .unwrap_or_else(|e| panic!("the request to {leader} failed as a whole: {e}"));
            for (tp, result) in answered {
                if let Err(ClientError::Kafka { broker, .. }) = &result {
                    assert_eq!(broker, &leader, "{tp}: the refusal names the leader that answered");
                }
                answers.insert(tp, result);
            }
        }
        assert_eq!(answers.len(), 4, "{answers:?}");
        for tp in partitions_of(&r.authorized) {
            let listed = answers[&tp].as_ref().unwrap_or_else(|e| panic!("{tp}: {e}"));
            let expected = truth[&tp].as_ref().unwrap();
            assert_eq!(listed.offset, expected.offset, "{tp}: the admin's high watermark");
            assert!(listed.offset.is_some_and(|o| o > 0), "{tp}: {listed:?}");
        }
        for tp in partitions_of(&r.forbidden) {
            let e = answers[&tp].as_ref().expect_err("a forbidden partition is refused");
            assert_topic_refusal(e, ApiKey::LIST_OFFSETS);
        }

        // The routed call (`kwire offsets`' own): Metadata refuses the forbidden topic, each of
        // its partitions with that code, and the authorized ones are answered all the same.
        let routed = user.list_offsets(&all, OffsetQuery::Latest, Isolation::ReadUncommitted, TIMEOUT).await;
        for tp in partitions_of(&r.authorized) {
            let listed = routed[&tp].as_ref().unwrap_or_else(|e| panic!("{tp}: {e}"));
            assert_eq!(listed.offset, truth[&tp].as_ref().unwrap().offset, "{tp}");
        }
        for tp in partitions_of(&r.forbidden) {
            let e = routed[&tp].as_ref().expect_err("a forbidden partition is refused");
            assert_topic_refusal(e, ApiKey::METADATA);
        }
    });
}

#[test]
fn the_restricted_user_fetching_its_groups_commits_on_its_topic_and_a_forbidden_one_gets_its_offsets_and_a_refusal_per_forbidden_partition(
) {
    let Some(cluster) = support::cluster() else { return };
    let Some(restricted) = secured::restricted() else { return };
    let r = Resources::new(&cluster);
    support::multi_thread_runtime().block_on(async {
        let (admin, user) = clients(&cluster, &restricted, &r.authorized).await;
        // As the admin: commits on both topics.
        let all: Vec<TopicPartition> = [partitions_of(&r.authorized), partitions_of(&r.forbidden)].concat();
        let to_commit: Vec<OffsetToCommit> = all
            .iter()
            .zip(3..)
            .map(|(tp, offset)| OffsetToCommit { tp: tp.clone(), offset, leader_epoch: None, metadata: None })
            .collect();
        let committed = admin.commit_offsets(&r.group, &to_commit, TIMEOUT).await.unwrap();
        assert!(committed.values().all(Result::is_ok), "{committed:?}");
        let everything = admin.committed_offsets(&r.group, None, TIMEOUT).await.unwrap().complete().unwrap();
        assert_eq!(everything.len(), 4, "the admin sees every commit: {everything:?}");
        let expected: BTreeMap<TopicPartition, i64> = everything
            .iter()
            .filter(|(tp, _)| *tp.topic == *r.authorized)
            .map(|(tp, c)| (tp.clone(), c.offset))
            .collect();
        assert_eq!(expected.values().copied().collect::<Vec<_>>(), [3, 4]);
        let offsets_of = |answer: &kafka_client::CommittedOffsets| -> BTreeMap<TopicPartition, i64> {
            answer.offsets.iter().map(|(tp, c)| (tp.clone(), c.offset)).collect()
        };

        // The partitions the admin knows, asked of the coordinator as the restricted user: it
        // answers the authorized ones and refuses each forbidden one.
        let partitions: Vec<TopicPartition> =
            leaders(&admin, &user, &r.both()).await.into_iter().flat_map(|(_, tps)| tps).collect();
        let answer = user.committed_offsets_of_partitions(&r.group, &partitions, TIMEOUT).await.unwrap();
        assert_eq!(offsets_of(&answer), expected, "{answer:?}");
        assert_eq!(
            answer.refused.keys().cloned().collect::<Vec<_>>(),
            partitions_of(&r.forbidden),
            "{answer:?}"
        );
        for e in answer.refused.values() {
            assert_topic_refusal(e, ApiKey::OFFSET_FETCH);
            assert!(e.to_string().contains(&r.group), "the refusal names the group: {e}");
        }
        assert!(answer.refused_topics.is_empty(), "{answer:?}");
        let e = answer.complete().expect_err("a caller needing every partition gets the refusal");
        assert_topic_refusal(&e, ApiKey::OFFSET_FETCH);

        // By topic name: Metadata refuses the forbidden topic as a whole.
        let answer = user.committed_offsets(&r.group, Some(&r.both()), TIMEOUT).await.unwrap();
        assert_eq!(offsets_of(&answer), expected, "{answer:?}");
        assert!(answer.refused.is_empty(), "{answer:?}");
        assert_eq!(answer.refused_topics.keys().collect::<Vec<_>>(), [&r.forbidden], "{answer:?}");
        assert_topic_refusal(&answer.refused_topics[&r.forbidden], ApiKey::METADATA);

        // Every topic of the group: the coordinator leaves out what the user may not describe.
        let answer = user.committed_offsets(&r.group, None, TIMEOUT).await.unwrap();
        assert!(answer.is_complete(), "{answer:?}");
        assert_eq!(offsets_of(&answer), expected);
        let batched = user.committed_offsets_of_groups(std::slice::from_ref(&r.group), TIMEOUT).await;
        let answer = batched[&r.group].as_ref().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(offsets_of(answer), expected);
    });
}
