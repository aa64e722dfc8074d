//! [`AclPolicy`]: which ZooKeeper ACL the nodes kwire creates get. Existing nodes keep theirs.

use std::fmt;
use std::str::FromStr;

use zookeeper_client::{Acl, Permission};

/// The ACL of every node a write creates (offset, metadata and missing parent nodes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum AclPolicy {
    /// The ACL of the nearest existing ancestor, as `zkCli create` users expect from a tree
    /// someone locked down; on a fresh ZooKeeper that is `world:anyone:cdrwa`, kwire's ACL
    /// before this policy existed.
    #[default]
    Inherit,
    /// `world:anyone:cdrwa`: anyone may read and change the offsets.
    Open,
    /// `auth::cdrwa`: only sessions with the writer's credentials (needs `--zookeeper-auth`).
    CreatorAll,
    /// `auth::cdrwa` plus `world:anyone:r`: the writer owns them, anyone reads them (Kafka's
    /// `zookeeper.set.acl=true` layout for consumer nodes).
    WorldRead,
}

/// The `--zookeeper-acl` spellings, in the order of [`AclPolicy`]'s variants.
pub const ACL_POLICY_NAMES: [&str; 4] = ["inherit", "open", "creator-all", "world-read"];

impl AclPolicy {
    /// Whether the policy names the session's own identity, which ZooKeeper refuses
    /// (`InvalidACL`) for a session without credentials.
    pub fn needs_auth(self) -> bool {
        matches!(self, AclPolicy::CreatorAll | AclPolicy::WorldRead)
    }

    /// The ACL entries to create nodes with; `None` for [`AclPolicy::Inherit`] (the parent's).
    pub(crate) fn fixed(self) -> Option<Vec<Acl>> {
        let creator = Acl::new_const(Permission::ALL, "auth", "");
        match self {
            AclPolicy::Inherit => None,
            AclPolicy::Open => Some(vec![Acl::new_const(Permission::ALL, "world", "anyone")]),
            AclPolicy::CreatorAll => Some(vec![creator]),
            AclPolicy::WorldRead => Some(vec![creator, Acl::new_const(Permission::READ, "world", "anyone")]),
        }
    }
}

impl fmt::Display for AclPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = match self {
            AclPolicy::Inherit => 0,
            AclPolicy::Open => 1,
            AclPolicy::CreatorAll => 2,
            AclPolicy::WorldRead => 3,
        };
        f.write_str(ACL_POLICY_NAMES[i])
    }
}

/// A name that is not one of [`ACL_POLICY_NAMES`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownAclPolicy(pub String);

impl fmt::Display for UnknownAclPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown ZooKeeper ACL policy {:?} (expected one of: {})",
            self.0,
            ACL_POLICY_NAMES.join(", ")
        )
    }
}

impl std::error::Error for UnknownAclPolicy {}

impl FromStr for AclPolicy {
    type Err = UnknownAclPolicy;

    fn from_str(s: &str) -> Result<AclPolicy, UnknownAclPolicy> {
        match s {
            "inherit" => Ok(AclPolicy::Inherit),
            "open" => Ok(AclPolicy::Open),
            "creator-all" => Ok(AclPolicy::CreatorAll),
            "world-read" => Ok(AclPolicy::WorldRead),
            _ => Err(UnknownAclPolicy(s.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_to_its_policy() {
        for name in ACL_POLICY_NAMES {
            assert_eq!(name.parse::<AclPolicy>().unwrap().to_string(), name);
        }
        assert!("world".parse::<AclPolicy>().unwrap_err().to_string().contains("creator-all"));
    }

    #[test]
    fn only_the_creator_policies_need_credentials() {
        assert!(AclPolicy::CreatorAll.needs_auth() && AclPolicy::WorldRead.needs_auth());
        assert!(!AclPolicy::Open.needs_auth() && !AclPolicy::Inherit.needs_auth());
    }
}
