//! The checks every store runs on a batch before writing any of it.

use kafka_wire::protocol::names::validate_topic;

use crate::{StoreError, StoredOffset};

/// Checks a batch before any store writes it: offsets and partitions `>= 0`, topic names
/// Kafka can take, each partition once. Stores call it so a bad batch is the same error
/// everywhere.
pub fn validate_batch(store: &'static str, offsets: &[StoredOffset]) -> Result<(), StoreError> {
    let mut seen = std::collections::HashSet::new();
    for o in offsets {
        let invalid = |message: String| StoreError::Invalid { store, message };
        if o.topic.is_empty() {
            return Err(invalid(format!("empty topic name for partition {}", o.partition)));
        }
        if let Err(e) = validate_topic(&o.topic) {
            return Err(invalid(e.to_string()));
        }
        if o.partition < 0 {
            return Err(invalid(format!("{}:{} has a negative partition", o.topic, o.partition)));
        }
        if o.offset < 0 {
            return Err(invalid(format!("{}:{} offset {} is negative", o.topic, o.partition, o.offset)));
        }
        if !seen.insert((o.topic.as_str(), o.partition)) {
            return Err(invalid(format!("{}:{} is given twice", o.topic, o.partition)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offset(topic: &str, partition: i32, offset: i64) -> StoredOffset {
        StoredOffset::new(topic, partition, offset)
    }

    #[test]
    fn a_batch_no_store_could_read_back_is_invalid_naming_the_partition() {
        for (batch, says) in [
            (vec![offset("a", 0, -1)], "a:0 offset -1 is negative"),
            (vec![offset("a", -1, 0)], "a:-1 has a negative partition"),
            (vec![offset("a", 0, 1), offset("a", 0, 2)], "a:0 is given twice"),
            (vec![offset("", 3, 1)], "empty topic name for partition 3"),
            (vec![offset(&"t".repeat(250), 0, 1)], "249"),
            (vec![offset("bad\u{1b}[2Jname", 0, 1)], "topic"),
        ] {
            let err = validate_batch("test", &batch).unwrap_err();
            assert!(matches!(err, StoreError::Invalid { store: "test", .. }), "{err}");
            assert!(err.to_string().contains(says), "{err} should say {says}");
        }
        assert!(validate_batch("test", &[offset("a", 0, 0), offset("a", 1, 0), offset("b", 0, 7)]).is_ok());
    }
}
