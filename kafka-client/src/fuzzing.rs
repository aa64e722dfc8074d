//! Entry points for kwire's fuzz targets (`fuzz/`), not an API: what the client does with
//! bytes a broker sends, reached without a socket.

use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::consumer::member_wire::{consumer_heartbeat_answer, join_answer, leave_answer, sync_answer};
use crate::groups::member::broker_assigned::{BrokerAssignedConfig, BrokerAssignedMember, TopicSubscription};
use crate::groups::member::classic::{ClassicConfig, ClassicMember, RebalanceProtocol};
use crate::groups::member::model::{CloseMode, MemberEvent};
use kafka_vocab::Uuid;
use kafka_wire::protocol::messages::{
    ConsumerGroupHeartbeatResponse, HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse,
    SyncGroupResponse,
};
use kafka_wire::protocol::Body;

/// Drives a classic member and a KIP-848 member with answers made of `data`: each step is an
/// opcode, a version, a length byte and that many bytes, decoded as the opcode's response at
/// that version (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat) and
/// handed to the machines as the driver would — or a found coordinator, a failed send, a poll,
/// a finished revocation, time passing, a close. Whatever the bytes, nothing panics.
pub fn member_answers(data: &[u8]) {
    let start = Instant::now();
    let mut now = start;
    let config = ClassicConfig::new(vec!["cooperative-sticky".to_owned()], RebalanceProtocol::Cooperative);
    let mut classic = ClassicMember::new(config, vec!["t".to_owned()], now);
    let config = BrokerAssignedConfig::new("fuzz-member".to_owned());
    let mut kip = BrokerAssignedMember::new(config, TopicSubscription::Topics(vec!["t".to_owned()]), now);
    let mut input = data;
    while let [op, version, len, rest @ ..] = input {
        let len = usize::from(*len).min(rest.len());
        let (body, after) = rest.split_at(len);
        input = after;
        let body = Bytes::copy_from_slice(body);
        let version = i16::from(*version);
        now += Duration::from_millis(u64::from(*op) * 97);
        let _ = classic.poll_request(now);
        let _ = kip.poll_request(now);
        match op % 12 {
            0 => {
                classic.coordinator_found(now);
                kip.coordinator_found(now);
            }
            1 => {
                if let Ok(r) = JoinGroupResponse::decode_body(body, version % 10) {
                    classic.handle_join(now, join_answer(r));
                }
            }
            2 => {
                if let Ok(r) = SyncGroupResponse::decode_body(body, version % 6) {
                    classic.handle_sync(now, sync_answer(r));
                }
            }
            3 => {
                if let Ok(r) = HeartbeatResponse::decode_body(body, version % 5) {
                    classic.handle_heartbeat(now, r.error_code);
                }
            }
            4 => {
                if let Ok(r) = LeaveGroupResponse::decode_body(body, version % 6) {
                    classic.handle_leave(now, leave_answer(&r));
                }
            }
            5 => {
                if let Ok(r) = ConsumerGroupHeartbeatResponse::decode_body(body, version % 2) {
                    kip.handle_heartbeat(now, consumer_heartbeat_answer(r));
                }
            }
            6 => {
                classic.handle_send_failed(now);
                kip.handle_send_failed(now);
            }
            7 => {
                classic.application_polled(now);
                kip.application_polled(now);
            }
            8 => {
                let classic_revoking: Vec<_> = classic.owned().partitions().iter().cloned().collect();
                classic.revocation_done(&classic_revoking);
                let kip_revoking: Vec<_> = kip.owned().partitions().iter().cloned().collect();
                kip.revocation_done(&kip_revoking);
            }
            9 => {
                classic.close(now, CloseMode::Default);
                kip.close(now, CloseMode::Default);
            }
            10 => now += Duration::from_secs(u64::from(version.unsigned_abs())),
            _ => classic.request_rejoin("fuzz"),
        }
        // The driver's own jobs, done at once: an empty assignment, every topic id named "t".
        while let Some(event) = classic.poll_event() {
            if let MemberEvent::AssignAsLeader { members, .. } = event {
                classic.leader_assignment(members.into_iter().map(|m| (m.member_id, Vec::new())).collect());
            }
        }
        while let Some(event) = kip.poll_event() {
            if let MemberEvent::NeedTopicNames(ids) = event {
                kip.learn_topic_names(ids.into_iter().map(|id: Uuid| (id, "t".to_owned())));
            }
        }
        let _ = (classic.poll_timeout(), kip.poll_timeout(), classic.identity(), kip.identity());
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
        /// The fuzz target's promise without nightly: any answers, no panic.
        #[test]
        fn the_members_take_any_answers_without_a_panic(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
            super::member_answers(&data);
        }
    }
}
