//! What both membership machines share: the events the driver must act on, the partitions the
//! member owns (and why it no longer owns the others), the identity a commit must carry, the
//! errors that end membership, and how a member is closed.
//!
//! A partition is in one of three places:
//!
//! ```text
//!   not owned ──Assigned──► owned ──Revoking──► owned, revoking ──revocation_done──► revoked
//!       ▲                     │                        │
//!       │                     └────────Lost────────────┴──────────────────────────► lost
//!       └──────────── a later Assigned gives it back (revoked / lost → owned) ◄────────┘
//! ```
//!
//! A commit for a partition is allowed exactly while it is owned, including while it is being
//! revoked (the application commits what it processed before calling `revocation_done`), and
//! refused once it is revoked or lost, or if it never was assigned: the broker would answer a
//! late commit with ILLEGAL_GENERATION / STALE_MEMBER_EPOCH or, worse, accept one that
//! overwrites the new owner's progress (franz-go accepted marks for revoked partitions:
//! redpanda-data/connect#4477).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use kafka_vocab::{TopicPartition, Uuid};
use kafka_wire::protocol::ErrorCode;

/// What the driver (and through it, the application) must act on, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MemberEvent {
    /// These partitions are now owned: start fetching them (the driver first finds their start
    /// positions: committed offsets, else the reset policy).
    Assigned(Vec<TopicPartition>),
    /// Stop fetching these now. The application may commit what it processed of them; then the
    /// driver calls `revocation_done` with them. Until then they are still owned and commits for
    /// them are allowed.
    Revoking(Vec<TopicPartition>),
    /// These are no longer owned, at once: the member was fenced, its session expired, the
    /// coordinator no longer knows it, it failed, or it left after the poll interval. Nothing
    /// may be committed for them; their uncommitted progress is given up.
    Lost(Vec<TopicPartition>),
    /// Classic protocol, leader only: compute an assignment for these members with
    /// `protocol_name`'s assignor over current metadata, then call `leader_assignment`.
    AssignAsLeader {
        /// Every member of the generation, this one included, in the coordinator's order.
        members: Vec<GroupMemberSubscription>,
        /// The assignor the coordinator chose among the ones every member offered.
        protocol_name: String,
    },
    /// KIP-848: the target assignment names these topic ids, which the member cannot name yet;
    /// the driver looks them up in metadata and calls `learn_topic_names`. Asked again after
    /// each heartbeat for as long as they stay unknown.
    NeedTopicNames(Vec<Uuid>),
    /// The application did not ask for records for longer than `max.poll.interval.ms`: the
    /// member leaves the group (a `Lost` follows for what it owned) and rejoins on the next
    /// `application_polled`. Reported as itself, so that the application learns why, not from
    /// a commit failing later (rust-rdkafka#433).
    PollIntervalExceeded {
        /// Time since the application last asked for records.
        elapsed: Duration,
    },
    /// Membership ended for good (a `Lost` precedes it for what was owned). With
    /// [`MemberError::UnsupportedVersion`] from the KIP-848 machine, the driver may start a
    /// classic member instead.
    Fatal(MemberError),
    /// The member closed: nothing more happens.
    Left,
}

/// One member of a classic group as the leader sees it in the JoinGroup answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GroupMemberSubscription {
    /// The coordinator's id for the member.
    pub(crate) member_id: String,
    /// `group.instance.id` of a static member.
    pub(crate) instance_id: Option<String>,
    /// The member's ConsumerProtocol subscription as the driver decoded it, or why it could not
    /// (the leader assigns the others and gives this one nothing).
    pub(crate) subscription: Result<Subscription, String>,
}

/// A classic member's subscription (ConsumerProtocolSubscription, any version: the fields a
/// version lacks are empty).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Subscription {
    /// The topics the member wants.
    pub(crate) topics: Vec<String>,
    /// What it owns now (v1+; KIP-429's cooperative assignors keep these where they are).
    pub(crate) owned_partitions: Vec<TopicPartition>,
    /// The generation those were owned in, -1 for none (v2+, KIP-792).
    pub(crate) generation: i32,
    /// `client.rack` (v3+, KIP-881).
    pub(crate) rack: Option<String>,
}

/// What an OffsetCommit (or TxnOffsetCommit, KIP-447) for an owned partition must carry so
/// that the coordinator takes it as this member's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommitIdentity {
    /// The member id.
    pub(crate) member_id: String,
    /// Classic: the generation. KIP-848: the member epoch (OffsetCommit v9+'s
    /// `GenerationIdOrMemberEpoch`).
    pub(crate) generation_or_epoch: i32,
    /// `group.instance.id` of a static member.
    pub(crate) instance_id: Option<String>,
}

/// Why a commit for a partition is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotOwned {
    /// The partition the commit was for.
    pub(crate) partition: TopicPartition,
    /// Why the member does not own it.
    pub(crate) reason: NotOwnedReason,
}

/// What became of a partition the member does not own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotOwnedReason {
    /// It was revoked (the application called `revocation_done` for it).
    Revoked,
    /// It was lost, for this cause.
    Lost(LostCause),
    /// This member was never assigned it (or not since it was created).
    NeverAssigned,
}

/// Why a member lost its partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LostCause {
    /// KIP-848 FENCED_MEMBER_EPOCH: the coordinator moved on without this member.
    Fenced,
    /// UNKNOWN_MEMBER_ID: the coordinator no longer knows the member id.
    UnknownMember,
    /// Classic ILLEGAL_GENERATION: the group is in a newer generation.
    IllegalGeneration,
    /// The member left after `max.poll.interval.ms` without a poll.
    PollIntervalExceeded,
    /// A fatal error ended membership.
    Fatal,
}

impl fmt::Display for NotOwned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot commit for {}: ", self.partition)?;
        match self.reason {
            NotOwnedReason::Revoked => f.write_str("it was revoked from this member"),
            NotOwnedReason::NeverAssigned => f.write_str("it is not assigned to this member"),
            NotOwnedReason::Lost(cause) => {
                f.write_str("this member lost it: ")?;
                f.write_str(match cause {
                    LostCause::Fenced => "the coordinator fenced its member epoch",
                    LostCause::UnknownMember => "the coordinator no longer knows the member",
                    LostCause::IllegalGeneration => "the group moved to a newer generation",
                    LostCause::PollIntervalExceeded => {
                        "it left the group after max.poll.interval.ms without a poll"
                    }
                    LostCause::Fatal => "a fatal error ended its membership",
                })
            }
        }
    }
}

impl std::error::Error for NotOwned {}

/// An error that ends membership. Retriable errors (coordinator moved or loading, a rebalance
/// under way, a lost connection) are handled inside the machines and never reach the driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MemberError {
    /// FENCED_INSTANCE_ID: another member joined with this `group.instance.id` (KIP-345).
    FencedInstanceId,
    /// UNRELEASED_INSTANCE_ID: the previous member with this `group.instance.id` has not left
    /// yet (KIP-848).
    UnreleasedInstanceId,
    /// GROUP_AUTHORIZATION_FAILED.
    GroupAuthorizationFailed,
    /// INVALID_SESSION_TIMEOUT: `session.timeout.ms` is outside the broker's bounds.
    InvalidSessionTimeout,
    /// UNSUPPORTED_ASSIGNOR: the broker has no server assignor of that name (KIP-848).
    UnsupportedAssignor,
    /// GROUP_MAX_SIZE_REACHED.
    GroupMaxSizeReached,
    /// INCONSISTENT_GROUP_PROTOCOL, or an answer naming an assignor this member did not offer.
    InconsistentGroupProtocol,
    /// UNSUPPORTED_VERSION: the broker does not take this request. From the KIP-848 machine the
    /// driver may fall back to the classic protocol ([`MemberError::allows_classic_fallback`]).
    UnsupportedVersion,
    /// INVALID_REGULAR_EXPRESSION: the broker cannot compile the subscribed regex (KIP-848).
    InvalidRegularExpression,
    /// INVALID_GROUP_ID.
    InvalidGroupId,
    /// INVALID_REQUEST (KIP-848: a field the broker requires is missing or malformed).
    InvalidRequest,
    /// An answer no broker should give (an assignment that did not decode, a negative
    /// generation on success, …).
    BadAnswer(String),
    /// Another error code where no rule here applies; `call` names the request.
    Unexpected {
        /// The code.
        code: ErrorCode,
        /// JoinGroup, SyncGroup, ConsumerGroupHeartbeat, …
        call: &'static str,
    },
}

impl MemberError {
    /// The named fatal error for `code`, if it is one.
    pub(crate) fn from_code(code: ErrorCode) -> Option<MemberError> {
        Some(match code {
            ErrorCode::FENCED_INSTANCE_ID => MemberError::FencedInstanceId,
            ErrorCode::UNRELEASED_INSTANCE_ID => MemberError::UnreleasedInstanceId,
            ErrorCode::GROUP_AUTHORIZATION_FAILED => MemberError::GroupAuthorizationFailed,
            ErrorCode::INVALID_SESSION_TIMEOUT => MemberError::InvalidSessionTimeout,
            ErrorCode::UNSUPPORTED_ASSIGNOR => MemberError::UnsupportedAssignor,
            ErrorCode::GROUP_MAX_SIZE_REACHED => MemberError::GroupMaxSizeReached,
            ErrorCode::INCONSISTENT_GROUP_PROTOCOL => MemberError::InconsistentGroupProtocol,
            ErrorCode::UNSUPPORTED_VERSION => MemberError::UnsupportedVersion,
            ErrorCode::INVALID_REGULAR_EXPRESSION => MemberError::InvalidRegularExpression,
            ErrorCode::INVALID_GROUP_ID => MemberError::InvalidGroupId,
            ErrorCode::INVALID_REQUEST => MemberError::InvalidRequest,
            _ => return None,
        })
    }

    /// The broker's code behind the error, if one.
    pub(crate) fn code(&self) -> Option<ErrorCode> {
        Some(match self {
            MemberError::FencedInstanceId => ErrorCode::FENCED_INSTANCE_ID,
            MemberError::UnreleasedInstanceId => ErrorCode::UNRELEASED_INSTANCE_ID,
            MemberError::GroupAuthorizationFailed => ErrorCode::GROUP_AUTHORIZATION_FAILED,
            MemberError::InvalidSessionTimeout => ErrorCode::INVALID_SESSION_TIMEOUT,
            MemberError::UnsupportedAssignor => ErrorCode::UNSUPPORTED_ASSIGNOR,
            MemberError::GroupMaxSizeReached => ErrorCode::GROUP_MAX_SIZE_REACHED,
            MemberError::InconsistentGroupProtocol => ErrorCode::INCONSISTENT_GROUP_PROTOCOL,
            MemberError::UnsupportedVersion => ErrorCode::UNSUPPORTED_VERSION,
            MemberError::InvalidRegularExpression => ErrorCode::INVALID_REGULAR_EXPRESSION,
            MemberError::InvalidGroupId => ErrorCode::INVALID_GROUP_ID,
            MemberError::InvalidRequest => ErrorCode::INVALID_REQUEST,
            MemberError::Unexpected { code, .. } => *code,
            MemberError::BadAnswer(_) => return None,
        })
    }

    /// Whether a KIP-848 member failing with this may be replaced by a classic one: the broker
    /// does not take ConsumerGroupHeartbeat (franz-go and Java's `group.protocol` advice).
    pub(crate) fn allows_classic_fallback(&self) -> bool {
        matches!(self, MemberError::UnsupportedVersion)
    }
}

impl fmt::Display for MemberError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemberError::BadAnswer(what) => write!(f, "the group coordinator gave a bad answer: {what}"),
            MemberError::Unexpected { code, call } => write!(f, "{call} failed: {code}"),
            other => match other.code() {
                Some(code) => write!(f, "group membership failed: {code}"),
                None => f.write_str("group membership failed"),
            },
        }
    }
}

impl std::error::Error for MemberError {}

/// What `close` does about the group (KIP-1092's `CloseOptions.GroupMembershipOperation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CloseMode {
    /// A dynamic member leaves; a static member stays until its session times out, so that a
    /// restart within `session.timeout.ms` moves no partition (KIP-345).
    #[default]
    Default,
    /// Leave, static or not: the group rebalances at once.
    LeaveGroup,
    /// Send nothing: the coordinator removes the member when its session times out.
    RemainInGroup,
}

/// Where a group member is ([`GroupMemberState::phase`](crate::GroupMemberState)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberPhase {
    /// Not in a generation (classic) or without a member epoch (KIP-848) yet: joining.
    Joining,
    /// In the group, with a rebalance or reconciliation step under way: a JoinGroup, SyncGroup
    /// or leader assignment, revocations the application has not finished, a rejoin wanted.
    Rebalancing,
    /// In the group with nothing pending: heartbeating.
    Stable,
    /// Sending its leave.
    Leaving,
    /// Left after the poll interval ran out; `application_polled` rejoins.
    WaitingForPoll,
    /// Closed.
    Left,
    /// Ended by a fatal error.
    Failed,
}

/// The partitions a member owns, which of them are being revoked, and what became of the ones
/// it owned before. Every change goes through here, so the state diagram above holds by
/// construction: each method returns exactly the partitions whose state it changed, which is
/// what the event reports.
#[derive(Debug, Clone, Default)]
pub(crate) struct Owned {
    held: BTreeSet<TopicPartition>,
    revoking: BTreeSet<TopicPartition>,
    released: BTreeMap<TopicPartition, NotOwnedReason>,
}

impl Owned {
    /// Every owned partition, those being revoked included.
    pub(crate) fn partitions(&self) -> &BTreeSet<TopicPartition> {
        &self.held
    }

    /// The owned partitions being revoked (awaiting `revocation_done`).
    #[cfg_attr(not(test), allow(dead_code))] // the property tests' ownership checks
    pub(crate) fn revoking(&self) -> &BTreeSet<TopicPartition> {
        &self.revoking
    }

    /// Whether a revocation is unfinished.
    pub(crate) fn revocation_pending(&self) -> bool {
        !self.revoking.is_empty()
    }

    /// Whether `tp` is owned (being revoked or not).
    #[cfg_attr(not(test), allow(dead_code))] // the property tests' ownership checks
    pub(crate) fn contains(&self, tp: &TopicPartition) -> bool {
        self.held.contains(tp)
    }

    /// Why `tp` is not owned, or `None` if it is.
    pub(crate) fn why_not(&self, tp: &TopicPartition) -> Option<NotOwnedReason> {
        if self.held.contains(tp) {
            return None;
        }
        Some(self.released.get(tp).copied().unwrap_or(NotOwnedReason::NeverAssigned))
    }

    /// Takes ownership of `tps`; returns the ones not owned before (sorted, once each).
    pub(crate) fn assign(&mut self, tps: impl IntoIterator<Item = TopicPartition>) -> Vec<TopicPartition> {
        let mut added = BTreeSet::new();
        for tp in tps {
            if !self.held.contains(&tp) {
                self.released.remove(&tp);
                self.held.insert(tp.clone());
                added.insert(tp);
            }
        }
        added.into_iter().collect()
    }

    /// Starts revoking those of `tps` that are owned and not yet being revoked; returns them.
    pub(crate) fn revoke<'a>(
        &mut self,
        tps: impl IntoIterator<Item = &'a TopicPartition>,
    ) -> Vec<TopicPartition> {
        let mut started = BTreeSet::new();
        for tp in tps {
            if self.held.contains(tp) && !self.revoking.contains(tp) {
                self.revoking.insert(tp.clone());
                started.insert(tp.clone());
            }
        }
        started.into_iter().collect()
    }

    /// Starts revoking every owned partition not yet being revoked; returns them.
    pub(crate) fn revoke_all(&mut self) -> Vec<TopicPartition> {
        let all: Vec<TopicPartition> = self.held.iter().cloned().collect();
        self.revoke(all.iter())
    }

    /// The application finished revoking `tps`: those that were being revoked are no longer
    /// owned; returns them. Partitions not being revoked are left alone.
    pub(crate) fn revocation_done<'a>(
        &mut self,
        tps: impl IntoIterator<Item = &'a TopicPartition>,
    ) -> Vec<TopicPartition> {
        let mut done = BTreeSet::new();
        for tp in tps {
            if self.revoking.remove(tp) {
                self.held.remove(tp);
                self.released.insert(tp.clone(), NotOwnedReason::Revoked);
                done.insert(tp.clone());
            }
        }
        done.into_iter().collect()
    }

    /// Every owned partition, being revoked or not, is lost for `cause`; returns them.
    pub(crate) fn lose_all(&mut self, cause: LostCause) -> Vec<TopicPartition> {
        self.revoking.clear();
        let lost = std::mem::take(&mut self.held);
        for tp in &lost {
            self.released.insert(tp.clone(), NotOwnedReason::Lost(cause));
        }
        lost.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    #[test]
    fn ownership_follows_assign_revoke_done_and_lose() {
        let mut o = Owned::default();
        assert_eq!(o.why_not(&tp(0)), Some(NotOwnedReason::NeverAssigned));
        assert_eq!(o.assign([tp(1), tp(0), tp(1)]), [tp(0), tp(1)]);
        // Assigning what is owned reports nothing new.
        assert_eq!(o.assign([tp(0)]), []);
        assert_eq!(o.revoke([tp(0), tp(7)].iter()), [tp(0)]);
        assert_eq!(o.revoke([tp(0)].iter()), [], "a revocation starts once");
        assert!(o.contains(&tp(0)) && o.revocation_pending());
        assert_eq!(o.why_not(&tp(0)), None, "still owned until revocation_done");
        // revocation_done for a partition not being revoked changes nothing.
        assert_eq!(o.revocation_done([tp(1)].iter()), []);
        assert_eq!(o.revocation_done([tp(0)].iter()), [tp(0)]);
        assert_eq!(o.why_not(&tp(0)), Some(NotOwnedReason::Revoked));
        assert!(!o.revocation_pending());
        assert_eq!(o.lose_all(LostCause::UnknownMember), [tp(1)]);
        assert_eq!(o.why_not(&tp(1)), Some(NotOwnedReason::Lost(LostCause::UnknownMember)));
        // A later assignment gives a revoked partition back.
        assert_eq!(o.assign([tp(0)]), [tp(0)]);
        assert_eq!(o.why_not(&tp(0)), None);
    }

    #[test]
    fn losing_drops_partitions_being_revoked_too() {
        let mut o = Owned::default();
        o.assign([tp(0), tp(1)]);
        assert_eq!(o.revoke_all(), [tp(0), tp(1)]);
        assert_eq!(o.lose_all(LostCause::Fenced), [tp(0), tp(1)]);
        assert!(!o.revocation_pending());
        // The application's late revocation_done is a no-op, not an error.
        assert_eq!(o.revocation_done([tp(0)].iter()), []);
        assert_eq!(o.why_not(&tp(0)), Some(NotOwnedReason::Lost(LostCause::Fenced)));
    }

    #[test]
    fn refusals_name_the_partition_and_the_reason() {
        let e = NotOwned { partition: tp(3), reason: NotOwnedReason::Lost(LostCause::PollIntervalExceeded) };
        assert_eq!(
            e.to_string(),
            "cannot commit for t-3: this member lost it: it left the group after max.poll.interval.ms without a poll"
        );
        let e = NotOwned { partition: tp(4), reason: NotOwnedReason::Revoked };
        assert_eq!(e.to_string(), "cannot commit for t-4: it was revoked from this member");
    }

    #[test]
    fn fatal_errors_map_to_and_from_their_codes() {
        for code in [
            ErrorCode::FENCED_INSTANCE_ID,
            ErrorCode::UNRELEASED_INSTANCE_ID,
            ErrorCode::GROUP_AUTHORIZATION_FAILED,
            ErrorCode::INVALID_SESSION_TIMEOUT,
            ErrorCode::UNSUPPORTED_ASSIGNOR,
            ErrorCode::GROUP_MAX_SIZE_REACHED,
            ErrorCode::INCONSISTENT_GROUP_PROTOCOL,
            ErrorCode::UNSUPPORTED_VERSION,
            ErrorCode::INVALID_REGULAR_EXPRESSION,
            ErrorCode::INVALID_GROUP_ID,
            ErrorCode::INVALID_REQUEST,
        ] {
            let e = MemberError::from_code(code).expect("a fatal code");
            assert_eq!(e.code(), Some(code));
            assert!(e.to_string().contains(code.name().unwrap_or("?")), "{e}");
        }
        for code in [ErrorCode::NONE, ErrorCode::NOT_COORDINATOR, ErrorCode::REBALANCE_IN_PROGRESS] {
            assert_eq!(MemberError::from_code(code), None, "{code:?} is handled inside the machines");
        }
        assert!(MemberError::UnsupportedVersion.allows_classic_fallback());
        assert!(!MemberError::FencedInstanceId.allows_classic_fallback());
        let e = MemberError::Unexpected { code: ErrorCode(-77), call: "SyncGroup" };
        assert_eq!(e.to_string(), "SyncGroup failed: error code -77 (unknown to kwire)");
    }
}
