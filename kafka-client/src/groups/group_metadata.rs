//! Who commits offsets for a group: a member (its id, generation or member epoch, and static
//! instance id), or nobody in particular (a tool, a stream storing its own offsets). A commit
//! that carries a member's identity is fenced by the coordinator: after a rebalance the old
//! generation's commits are refused, so a zombie cannot overwrite its successor's progress
//! (KIP-447 for transactional commits).

/// The group identity a commit carries (Java's `ConsumerGroupMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupMetadata {
    /// The group.
    pub group_id: String,
    /// The classic group's generation, or the KIP-848 member epoch; −1 for a non-member.
    pub generation_id: i32,
    /// The member id the coordinator knows the member by; empty for a non-member.
    pub member_id: String,
    /// `group.instance.id` of a static member (KIP-345).
    pub group_instance_id: Option<String>,
}

impl ConsumerGroupMetadata {
    /// Commits as no member (generation −1, empty member id): accepted while the group has no
    /// active members, never fenced.
    pub fn non_member(group_id: &str) -> Self {
        Self {
            group_id: group_id.to_owned(),
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
        }
    }

    /// Whether this is a member's identity (fenced by the coordinator) rather than a non-member's.
    pub fn is_member(&self) -> bool {
        !self.member_id.is_empty()
    }
}
