//! What a [`Consumer`](crate::Consumer) is configured with, under the Java consumer's names
//! (see [`apply_consumer_properties`](crate::apply_consumer_properties) for the property keys).

use std::time::Duration;

use crate::fetch::ranges::FetchOptions;
use kafka_vocab::Isolation;
use offset_engine::{OutOfRangePolicy, StartPolicy};

/// Which group protocol a member speaks (`group.protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GroupProtocol {
    /// JoinGroup / SyncGroup / Heartbeat / LeaveGroup, the client-side assignors (every broker).
    #[default]
    Classic,
    /// KIP-848: ConsumerGroupHeartbeat, the broker assigns (Kafka 4.0+).
    Consumer,
}

impl GroupProtocol {
    /// `classic` or `consumer`, as `group.protocol` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Classic => "classic",
            Self::Consumer => "consumer",
        }
    }
}

/// What to read: topics by name, topics matching a pattern, or nothing until
/// [`Consumer::subscribe`](crate::Consumer::subscribe) or [`Consumer::assign`](crate::Consumer::assign).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subscription {
    /// These topics (a group member is assigned some of their partitions).
    Topics(Vec<String>),
    /// Every topic whose whole name matches this regular expression: sent to the broker as a
    /// KIP-848 regex with `group.protocol=consumer` (the broker's RE2/J syntax), matched by the
    /// member against the cluster's topics with `classic`.
    Pattern(String),
}

impl Subscription {
    /// Refuses a topic name Kafka would refuse, or a pattern that is not a regular expression,
    /// naming it.
    pub(crate) fn validate(&self) -> Result<(), crate::consumer::error::ConsumerError> {
        use crate::consumer::error::ConsumerError;
        match self {
            Subscription::Topics(topics) => {
                kafka_wire::protocol::names::validate_topics(topics.iter().map(String::as_str))
                    .map_err(|e| ConsumerError::InvalidArgument(e.to_string()))
            }
            Subscription::Pattern(pattern) => regex::Regex::new(pattern).map(drop).map_err(|e| {
                ConsumerError::InvalidArgument(format!("`{pattern}` is not a regular expression: {e}"))
            }),
        }
    }
}

/// A consumer's settings. The defaults are the Java consumer's, except that offsets are not
/// committed automatically unless `enable_auto_commit` is set, and a committed offset that is
/// out of range fails the partition instead of silently resetting (`out_of_range`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerConfig {
    /// `group.id`: the group to join and commit in; `None` for a consumer that only reads
    /// assigned partitions and commits nothing.
    pub group_id: Option<String>,
    /// `group.protocol`.
    pub group_protocol: GroupProtocol,
    /// `group.instance.id`: a static member (KIP-345); a restart within the session timeout
    /// keeps its partitions without a rebalance.
    pub group_instance_id: Option<String>,
    /// `session.timeout.ms` (classic only: the broker's `group.consumer.session.timeout.ms`
    /// applies with KIP-848): no heartbeat for this long and the coordinator drops the member.
    pub session_timeout: Duration,
    /// `heartbeat.interval.ms` (classic only: KIP-848's interval comes from the broker).
    pub heartbeat_interval: Duration,
    /// `max.poll.interval.ms`: the member leaves the group when the application has not asked
    /// for records ([`Consumer::poll`](crate::Consumer::poll)) for this long, and the next poll
    /// says so. Also the classic rebalance timeout.
    pub max_poll_interval: Duration,
    /// `partition.assignment.strategy` (classic): the assignors offered in JoinGroup, in order
    /// of preference; the group uses the first every member supports.
    pub assignment_strategy: Vec<String>,
    /// `group.remote.assignor` (KIP-848): `uniform` or `range`; `None` lets the broker choose.
    pub remote_assignor: Option<String>,
    /// `client.rack` is the client's ([`ClientConfig`](crate::ClientConfig)); this is the
    /// rack id sent in JoinGroup / ConsumerGroupHeartbeat for rack-aware assignment.
    pub rack_id: Option<String>,
    /// `isolation.level`.
    pub isolation: Isolation,
    /// `auto.offset.reset`: where a partition with no committed offset starts (`earliest`,
    /// `latest`, `none` = [`StartPolicy::Fail`]).
    pub start: StartPolicy,
    /// `kwire.offset.out.of.range` (the policy names of `kwire plan`: `fail`, `earliest`,
    /// `latest`, `clamp`): what a committed offset the log cannot honour (a recreated topic,
    /// retention, truncation) turns into. Either way the anomaly is reported with its numbers.
    pub out_of_range: OutOfRangePolicy,
    /// `enable.auto.commit`: commit the positions of what [`poll`](crate::Consumer::poll)
    /// returned, every `auto_commit_interval`, before a revocation and on close.
    pub enable_auto_commit: bool,
    /// `auto.commit.interval.ms`.
    pub auto_commit_interval: Duration,
    /// `fetch.max.wait.ms`, `fetch.min.bytes`, `fetch.max.bytes`, `max.partition.fetch.bytes`
    /// (and `isolation`, copied from above when the consumer starts).
    pub fetch: FetchOptions,
    /// `request.timeout.ms`-like bound on each group and offset request (and its retries).
    pub request_timeout: Duration,
    /// `metadata.max.age.ms`: how often a classic member looks at its topics' partitions (a
    /// topic that gained partitions, or a new topic matching a pattern, makes it rejoin).
    pub metadata_max_age: Duration,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        Self {
            group_id: None,
            group_protocol: GroupProtocol::Classic,
            group_instance_id: None,
            session_timeout: Duration::from_secs(45),
            heartbeat_interval: Duration::from_secs(3),
            max_poll_interval: Duration::from_secs(300),
            assignment_strategy: vec!["range".to_owned(), "cooperative-sticky".to_owned()],
            remote_assignor: None,
            rack_id: None,
            isolation: Isolation::ReadUncommitted,
            start: StartPolicy::Latest,
            out_of_range: OutOfRangePolicy::Fail,
            enable_auto_commit: false,
            auto_commit_interval: Duration::from_secs(5),
            fetch: FetchOptions::default(),
            request_timeout: Duration::from_secs(30),
            metadata_max_age: Duration::from_secs(300),
        }
    }
}
