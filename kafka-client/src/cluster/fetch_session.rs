//! The client side of an incremental fetch session (KIP-227, Fetch v7+), one per broker: no
//! socket, no clock, only what was sent and what the broker answered.
//!
//! ```text
//!             no session (id 0, next epoch 0)
//!                 │ full request: every wanted partition, epoch 0
//!                 ▼
//!   answer with id ≠ 0 ──► session (id, next epoch 1) ──► incremental request: only the
//!   answer with id 0 ────► no session (the broker had  │    partitions that are new or whose
//!                           no slot; full again)       │    fetch data changed; the ones no
//!                                                      │    longer wanted are forgotten;
//!                                                      ▼    epoch +1 (wrapping to 1)
//!   any error (a session error code, a lost connection: the broker may or may not have
//!   applied the epoch) ──► the session is dropped (the caller does not keep it): no session
//! ```
//!
//! An incremental response leaves out the partitions that have no records and no change in
//! their log bounds; the caller treats them as "nothing new".

use std::collections::{BTreeMap, HashMap, HashSet};

use kafka_vocab::Uuid;

use kafka_vocab::TopicPartition;

/// What a request says about one partition; a partition whose data is unchanged since the
/// last request of the session is not sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PartitionFetch {
    /// Where to read from.
    pub(crate) fetch_offset: i64,
    /// `partition_max_bytes`.
    pub(crate) max_bytes: i32,
    /// The leader epoch metadata gave (v9+ `current_leader_epoch`).
    pub(crate) leader_epoch: Option<i32>,
}

/// The session fields and partition lists of one Fetch request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionRequest {
    /// 0 to ask for a new session (with epoch 0) or for none.
    pub(crate) session_id: i32,
    /// 0: a full request creating a session; above 0: incremental.
    pub(crate) session_epoch: i32,
    /// The partitions to send, in the order wanted.
    pub(crate) send: Vec<(TopicPartition, PartitionFetch)>,
    /// Partitions of the session no longer wanted.
    pub(crate) forget: Vec<TopicPartition>,
}

impl SessionRequest {
    /// Whether this is a full request (every wanted partition listed).
    pub(crate) fn is_full(&self) -> bool {
        self.session_epoch == 0
    }
}

/// One broker's session as the client knows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FetchSession {
    /// 0 while there is none.
    id: i32,
    /// The epoch of the next request: 0 while there is no session.
    next_epoch: i32,
    /// What the broker's session holds for each partition: the data last sent.
    sent: BTreeMap<TopicPartition, PartitionFetch>,
    /// The topic ids the session's partitions were sent with (Fetch v13+ names topics by id).
    topic_ids: BTreeMap<String, Uuid>,
}

impl FetchSession {
    /// Whether any of `topics` now has another id than the one this session was given: a
    /// topic deleted and recreated under the same name, which the broker's session does not
    /// know as the same partitions, so a new session (a full request) must start.
    pub(crate) fn ids_changed<'a>(
        &self,
        mut topics: impl Iterator<Item = &'a str>,
        ids: &HashMap<String, Uuid>,
    ) -> bool {
        topics.any(|t| self.topic_ids.get(t).is_some_and(|old| ids.get(t).is_some_and(|now| now != old)))
    }

    /// Records the ids `ids` gives the topics of `request`.
    pub(crate) fn remember_ids(&mut self, request: &SessionRequest, ids: &HashMap<String, Uuid>) {
        for (tp, _) in &request.send {
            if let Some(id) = ids.get(&*tp.topic) {
                self.topic_ids.insert(tp.topic.to_string(), *id);
            }
        }
    }

    /// Adds to `ids` the id this session was given for each topic `request` forgets that
    /// `ids` lacks: a topic no longer read is named by the id the broker's session knows it by
    /// (Fetch v13+), which no lookup of the wanted topics gives.
    pub(crate) fn add_forgotten_ids(&self, request: &SessionRequest, ids: &mut HashMap<String, Uuid>) {
        for tp in &request.forget {
            if !ids.contains_key(&*tp.topic) {
                if let Some(id) = self.topic_ids.get(&*tp.topic) {
                    ids.insert(tp.topic.to_string(), *id);
                }
            }
        }
    }

    /// The next request for `wanted` (each partition once): full without a session,
    /// otherwise only what changed, and the session's other partitions forgotten.
    pub(crate) fn next_request(&self, wanted: &[(TopicPartition, PartitionFetch)]) -> SessionRequest {
        if self.id == 0 {
            return SessionRequest {
                session_id: 0,
                session_epoch: 0,
                send: wanted.to_vec(),
                forget: Vec::new(),
            };
        }
        let send = wanted.iter().filter(|(tp, data)| self.sent.get(tp) != Some(data)).cloned().collect();
        let still: HashSet<&TopicPartition> = wanted.iter().map(|(tp, _)| tp).collect();
        let forget = self.sent.keys().filter(|tp| !still.contains(tp)).cloned().collect();
        SessionRequest { session_id: self.id, session_epoch: self.next_epoch, send, forget }
    }

    /// Takes in the broker's answer to `request` (no top-level error): the session id it
    /// returned (0: none).
    pub(crate) fn answered(&mut self, request: &SessionRequest, session_id: i32) {
        if session_id == 0 {
            *self = Self::default();
            return;
        }
        if request.is_full() || session_id != self.id {
            self.sent.clear();
        }
        self.id = session_id;
        for tp in &request.forget {
            self.sent.remove(tp);
        }
        for (tp, data) in &request.send {
            self.sent.insert(tp.clone(), *data);
        }
        self.next_epoch = match request.session_epoch.checked_add(1) {
            Some(e) if e > 0 => e,
            _ => 1,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(p: i32, offset: i64) -> (TopicPartition, PartitionFetch) {
        (
            TopicPartition::new("t", p),
            PartitionFetch { fetch_offset: offset, max_bytes: 1024, leader_epoch: Some(3) },
        )
    }

    #[test]
    fn the_first_request_is_full_and_asks_for_a_session() {
        let s = FetchSession::default();
        let r = s.next_request(&[at(0, 5), at(1, 7)]);
        assert_eq!((r.session_id, r.session_epoch, r.send.len(), r.forget.len()), (0, 0, 2, 0));
        assert!(r.is_full());
    }

    #[test]
    fn after_the_broker_opens_a_session_only_partitions_that_moved_are_sent() {
        let mut s = FetchSession::default();
        let first = s.next_request(&[at(0, 5), at(1, 7), at(2, 9)]);
        s.answered(&first, 42);
        let second = s.next_request(&[at(0, 5), at(1, 8), at(2, 9)]);
        assert_eq!((second.session_id, second.session_epoch), (42, 1));
        assert_eq!(second.send, [at(1, 8)]);
        assert!(second.forget.is_empty());
        s.answered(&second, 42);
        // Nothing moved: an incremental request with no partitions at all, epoch 2.
        let third = s.next_request(&[at(0, 5), at(1, 8), at(2, 9)]);
        assert_eq!((third.session_epoch, third.send.len()), (2, 0));
    }

    #[test]
    fn partitions_no_longer_wanted_are_forgotten_once() {
        let mut s = FetchSession::default();
        let first = s.next_request(&[at(0, 5), at(1, 7)]);
        s.answered(&first, 9);
        let second = s.next_request(&[at(1, 7), at(3, 0)]);
        assert_eq!(second.send, [at(3, 0)]);
        assert_eq!(second.forget, [TopicPartition::new("t", 0)]);
        s.answered(&second, 9);
        let third = s.next_request(&[at(1, 7), at(3, 0)]);
        assert!(third.forget.is_empty() && third.send.is_empty());
    }

    #[test]
    fn a_broker_without_a_free_session_slot_gets_full_requests() {
        let mut s = FetchSession::default();
        let first = s.next_request(&[at(0, 5)]);
        s.answered(&first, 0);
        assert!(s.next_request(&[at(0, 5)]).is_full());
    }

    #[test]
    fn the_epoch_wraps_to_1_not_to_0_or_below() {
        let mut s = FetchSession::default();
        let first = s.next_request(&[at(0, 5)]);
        s.answered(&first, 11);
        s.next_epoch = i32::MAX;
        let last = s.next_request(&[at(0, 5)]);
        assert_eq!(last.session_epoch, i32::MAX);
        s.answered(&last, 11);
        assert_eq!(s.next_request(&[at(0, 5)]).session_epoch, 1);
    }

    #[test]
    fn a_forgotten_topic_is_named_by_the_id_the_session_was_given() {
        let other = |p: i32| {
            (
                TopicPartition::new("u", p),
                PartitionFetch { fetch_offset: 0, max_bytes: 1024, leader_epoch: None },
            )
        };
        let (t_id, u_id) = (Uuid([1; 16]), Uuid([2; 16]));
        let mut s = FetchSession::default();
        let first = s.next_request(&[at(0, 5), other(0)]);
        s.answered(&first, 7);
        s.remember_ids(&first, &HashMap::from([("t".to_owned(), t_id), ("u".to_owned(), u_id)]));
        // The next round reads only `t`: the lookup of the wanted topics knows only `t`.
        let second = s.next_request(&[at(0, 6)]);
        assert_eq!(second.forget, [TopicPartition::new("u", 0)]);
        let mut ids = HashMap::from([("t".to_owned(), t_id)]);
        s.add_forgotten_ids(&second, &mut ids);
        assert_eq!(ids, HashMap::from([("t".to_owned(), t_id), ("u".to_owned(), u_id)]));
    }
}
