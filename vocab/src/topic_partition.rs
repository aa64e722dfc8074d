//! A topic and one of its partitions.

use std::fmt;
use std::sync::Arc;

/// A topic name and a partition number, displayed `topic-partition` as Kafka's tools do.
///
/// The name is shared (`Arc<str>`): planning a million partitions of a few topics, or keying
/// a million per-partition results, clones a reference count, not a string. Ordered by topic,
/// then partition.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    /// The topic's name (not validated here; see `kafka_wire::protocol::names`).
    pub topic: Arc<str>,
    /// The partition index, from 0.
    pub partition: i32,
}

impl TopicPartition {
    /// `partition` of `topic` (a `&str`, `&String`, `String`, `Arc<str>` or `&Arc<str>`; an
    /// `Arc` is shared, not copied). Neither is validated.
    pub fn new(topic: impl IntoTopicName, partition: i32) -> Self {
        TopicPartition { topic: topic.into_topic_name(), partition }
    }
}

/// The text types a topic name is given as; an `Arc<str>` is shared, anything else copied once.
pub trait IntoTopicName {
    /// The name as the shared string [`TopicPartition`] keeps.
    fn into_topic_name(self) -> Arc<str>;
}

impl IntoTopicName for Arc<str> {
    fn into_topic_name(self) -> Arc<str> {
        self
    }
}

impl IntoTopicName for &Arc<str> {
    fn into_topic_name(self) -> Arc<str> {
        Arc::clone(self)
    }
}

impl IntoTopicName for &str {
    fn into_topic_name(self) -> Arc<str> {
        Arc::from(self)
    }
}

impl IntoTopicName for String {
    fn into_topic_name(self) -> Arc<str> {
        Arc::from(self)
    }
}

impl IntoTopicName for &String {
    fn into_topic_name(self) -> Arc<str> {
        Arc::from(self.as_str())
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_as_kafka_tools_do_and_orders_by_topic_then_partition() {
        let a = TopicPartition::new("b", 0);
        let b = TopicPartition::new(String::from("a"), 10);
        let shared: Arc<str> = Arc::from("a");
        let c = TopicPartition::new(&shared, 2);
        assert!(Arc::ptr_eq(&c.topic, &shared));
        assert_eq!(a.to_string(), "b-0");
        let mut all = vec![a.clone(), b.clone(), c.clone()];
        all.sort();
        assert_eq!(all, vec![c, b, a]);
    }
}
