//! A consumer-group member: the state machines that join a group, keep the membership alive,
//! take and give up partitions, and leave — sans-IO, like `cluster/fetch_session.rs`. No
//! socket, no clock, no wire structs: each machine takes the `now` the driver reads, gives the
//! requests to send as small version-free types, takes the answers the driver decoded, and says
//! what the application must do as [`MemberEvent`](model::MemberEvent)s.
//!
//! Two machines over one model ([`model`]: the events, the owned partitions, the identity a
//! commit carries, the fatal errors):
//! - [`classic`]: JoinGroup / SyncGroup / Heartbeat / LeaveGroup, the leader assigning with a
//!   client-side assignor; eager or cooperative (KIP-429), static membership (KIP-345).
//! - [`broker_assigned`]: KIP-848's ConsumerGroupHeartbeat (`group.protocol=consumer`), the
//!   coordinator assigning; reconciliation by topic id.
//!
//! The driver holds a [`Member`]: an enum, not a trait, because what differs between the two
//! is exactly the requests and answers, which the driver maps to the wire per protocol anyway
//! (a `match` on the variant), while everything the application sees — events, ownership,
//! commit checks, the poll clock, close — is the same and is a method on `Member`. It also
//! makes the fallback a plain replacement: when the KIP-848 member fails with
//! `MemberError::UnsupportedVersion` (`allows_classic_fallback`) on its first heartbeat, the
//! driver puts a classic member in its place (franz-go's automatic opt-out).
//!
//! The contract with the async driver, which owns the socket and the clock:
//!
//! ```text
//!   on every wake-up (an answer, a timer, the application), with now = the clock:
//!       feed what happened: handle_* / coordinator_found for an answer, handle_send_failed
//!           for a broken connection or a request timeout, application_polled,
//!           revocation_done, leader_assignment, learn_topic_names, subscribe, close
//!       while let Some(r) = member.poll_request(now) { send r }   // fires the timers too
//!       while let Some(e) = member.poll_event() { act on e }       // Assigned, Revoking, …
//!       sleep until member.poll_timeout() (None: nothing happens until the application
//!           polls, or ever: Left / Failed), an answer, or the application
//! ```
//!
//! - One request is awaited at a time. `poll_request` gives another while one is in flight
//!   only when the machine gave up on the first (a close or the poll interval abandoning a
//!   JoinGroup or heartbeat for a LeaveGroup, the first's deadline passing): the driver may
//!   drop the first, and its answer, if still passed in, is ignored.
//! - The application asking for records, or waiting for some, is `application_polled`; the
//!   rebalance timeout is `max.poll.interval.ms`, as in Java.
//! - `Revoking` partitions are still owned until `revocation_done`: the application commits
//!   what it processed, with the identity `commit_allowed` gives, then says it is done.
//! - `commit_allowed(&tp)` before each OffsetCommit / TxnOffsetCommit: the member id,
//!   generation or member epoch and instance id to send, or a `NotOwned` naming the partition
//!   and why (revoked, lost and for what cause, never assigned).
//!
//! Every input is total: an answer that does not match the request in flight, a call in the
//! wrong state, or an error code no rule names is ignored or handled, never a panic. A request
//! the driver never answers is counted failed at its deadline, so the machine never waits
//! forever.

pub(crate) mod broker_assigned;
pub(crate) mod classic;
pub(crate) mod model;
pub(crate) mod timing;

#[cfg(test)]
mod properties;

use std::time::Instant;

use kafka_vocab::TopicPartition;

use self::broker_assigned::BrokerAssignedMember;
use self::classic::ClassicMember;
use self::model::{CloseMode, CommitIdentity, MemberEvent, MemberPhase, NotOwned, Owned};

/// The member the driver holds, whichever protocol it speaks.
#[derive(Debug)]
pub(crate) enum Member {
    /// The classic protocol.
    Classic(ClassicMember),
    /// KIP-848.
    BrokerAssigned(BrokerAssignedMember),
}

impl Member {
    /// The next event to act on.
    pub(crate) fn poll_event(&mut self) -> Option<MemberEvent> {
        match self {
            Member::Classic(m) => m.poll_event(),
            Member::BrokerAssigned(m) => m.poll_event(),
        }
    }

    /// Whether an event waits for `poll_event`.
    pub(crate) fn has_events(&self) -> bool {
        match self {
            Member::Classic(m) => m.has_events(),
            Member::BrokerAssigned(m) => m.has_events(),
        }
    }

    /// When to call `poll_request` next at the latest.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Member::Classic(m) => m.poll_timeout(),
            Member::BrokerAssigned(m) => m.poll_timeout(),
        }
    }

    /// Where the member is.
    pub(crate) fn phase(&self) -> MemberPhase {
        match self {
            Member::Classic(m) => m.phase(),
            Member::BrokerAssigned(m) => m.phase(),
        }
    }

    /// The owned partitions (and those being revoked).
    pub(crate) fn owned(&self) -> &Owned {
        match self {
            Member::Classic(m) => m.owned(),
            Member::BrokerAssigned(m) => m.owned(),
        }
    }

    /// What a commit carries now.
    pub(crate) fn identity(&self) -> CommitIdentity {
        match self {
            Member::Classic(m) => m.identity(),
            Member::BrokerAssigned(m) => m.identity(),
        }
    }

    /// The identity to commit `tp`'s offset with, or why this member may not.
    pub(crate) fn commit_allowed(&self, tp: &TopicPartition) -> Result<CommitIdentity, NotOwned> {
        match self {
            Member::Classic(m) => m.commit_allowed(tp),
            Member::BrokerAssigned(m) => m.commit_allowed(tp),
        }
    }

    /// The application asked for records at `now` (or is waiting for some).
    pub(crate) fn application_polled(&mut self, now: Instant) {
        match self {
            Member::Classic(m) => m.application_polled(now),
            Member::BrokerAssigned(m) => m.application_polled(now),
        }
    }

    /// The application is done with these revoked partitions.
    pub(crate) fn revocation_done(&mut self, partitions: &[TopicPartition]) {
        match self {
            Member::Classic(m) => m.revocation_done(partitions),
            Member::BrokerAssigned(m) => m.revocation_done(partitions),
        }
    }

    /// Close as `mode` says; `Left` follows.
    pub(crate) fn close(&mut self, now: Instant, mode: CloseMode) {
        match self {
            Member::Classic(m) => m.close(now, mode),
            Member::BrokerAssigned(m) => m.close(now, mode),
        }
    }

    /// The coordinator was found (the answer to either machine's `FindCoordinator`).
    pub(crate) fn coordinator_found(&mut self, now: Instant) {
        match self {
            Member::Classic(m) => m.coordinator_found(now),
            Member::BrokerAssigned(m) => m.coordinator_found(now),
        }
    }

    /// The in-flight request got no answer.
    pub(crate) fn handle_send_failed(&mut self, now: Instant) {
        match self {
            Member::Classic(m) => m.handle_send_failed(now),
            Member::BrokerAssigned(m) => m.handle_send_failed(now),
        }
    }
}
