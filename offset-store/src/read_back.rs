//! Reading a batch back after a save: what every store does before `save` returns `Ok`.

use std::collections::HashMap;

use crate::{StoreError, StoredOffset};

/// The topics of `offsets`, sorted, each once: what a store loads to read a batch back.
pub fn topics_of<'a>(offsets: impl IntoIterator<Item = &'a StoredOffset>) -> Vec<String> {
    let mut topics: Vec<String> = offsets.into_iter().map(|o| o.topic.clone()).collect();
    topics.sort_unstable();
    topics.dedup();
    topics
}

/// Checks that `now` (what `store` loaded after the save) holds each offset of `wrote`;
/// the first that differs or is missing is [`StoreError::ReadBackMismatch`]. Partitions in
/// `now` that were not written are not compared (another writer may own them).
pub fn check_read_back<'a>(
    store: &'static str,
    wrote: impl IntoIterator<Item = &'a StoredOffset>,
    now: &[StoredOffset],
) -> Result<(), StoreError> {
    let read: HashMap<(&str, i32), i64> =
        now.iter().map(|o| ((o.topic.as_str(), o.partition), o.offset)).collect();
    for o in wrote {
        let read = read.get(&(o.topic.as_str(), o.partition)).copied();
        if read != Some(o.offset) {
            return Err(StoreError::ReadBackMismatch {
                store,
                topic: o.topic.clone(),
                partition: o.partition,
                wrote: o.offset,
                read,
            });
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
    fn a_batch_reads_back_when_each_written_offset_is_there_whatever_else_is() {
        let wrote = [offset("b", 0, 5), offset("a", 1, 7), offset("b", 1, 9)];
        assert_eq!(topics_of(&wrote), ["a", "b"]);
        let now = [offset("a", 1, 7), offset("b", 0, 5), offset("b", 1, 9), offset("c", 0, 1)];
        assert!(check_read_back("test", &wrote, &now).is_ok());
    }

    #[test]
    fn a_changed_or_missing_offset_is_a_mismatch_naming_what_was_read() {
        let wrote = [offset("a", 0, 5), offset("a", 1, 7)];
        let err = check_read_back("test", &wrote, &[offset("a", 0, 5), offset("a", 1, 6)]).unwrap_err();
        assert!(
            matches!(err, StoreError::ReadBackMismatch { partition: 1, wrote: 7, read: Some(6), .. }),
            "{err}"
        );
        let err = check_read_back("test", &wrote, &[offset("a", 1, 7)]).unwrap_err();
        assert!(
            matches!(err, StoreError::ReadBackMismatch { partition: 0, wrote: 5, read: None, .. }),
            "{err}"
        );
    }
}
