//! The topic id kwire keeps with a committed offset. Kafka stores the leader epoch with a
//! commit (OffsetCommit v6+) but not the topic id, so kwire writes the id into the commit's
//! free-form metadata string as `kwire:topic_id=<22 characters>`. A commit another tool made
//! (any other metadata) reads back without a topic id.

use kafka_vocab::Uuid;

/// The metadata prefix under which the topic id is kept.
pub const TOPIC_ID_METADATA_PREFIX: &str = "kwire:topic_id=";

/// The metadata string that carries `topic_id`; `None` without one.
pub fn topic_id_metadata(topic_id: Option<Uuid>) -> Option<String> {
    topic_id.map(|id| format!("{TOPIC_ID_METADATA_PREFIX}{id}"))
}

/// The topic id in a commit's metadata string, if kwire wrote it (the all-zero id is none).
pub fn topic_id_from_metadata(metadata: Option<&str>) -> Option<Uuid> {
    metadata
        .and_then(|m| m.strip_prefix(TOPIC_ID_METADATA_PREFIX))
        .and_then(|text| Uuid::parse(text).ok())
        .and_then(Uuid::known)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_id_round_trips_through_the_metadata_string() {
        let id = Uuid([9; 16]);
        let text = topic_id_metadata(Some(id)).unwrap();
        assert!(
            text.starts_with(TOPIC_ID_METADATA_PREFIX) && text.len() == TOPIC_ID_METADATA_PREFIX.len() + 22
        );
        assert_eq!(topic_id_from_metadata(Some(&text)), Some(id));
        assert_eq!(topic_id_metadata(None), None);
    }

    #[test]
    fn foreign_or_damaged_metadata_means_no_topic_id() {
        for m in
            ["", "spark", "kwire:topic_id=", "kwire:topic_id=short", "kwire:topic_id=AAAAAAAAAAAAAAAAAAAAAA"]
        {
            assert_eq!(topic_id_from_metadata(Some(m)), None, "{m}");
        }
        assert_eq!(topic_id_from_metadata(None), None);
    }
}
