//! kwire-zk with ZooKeeper digest credentials (`KWIRE_ZOOKEEPER_AUTH`) and ACL policies, against
//! the real server: what kwire writes, ZooKeeper itself refuses to sessions the ACL does not name.

use std::time::Duration;

use crate::support::{raw_client, unique_group, zookeeper, zookeeper_auth};
use kwire_zk::{AclPolicy, Error, StoredOffset, ZkAuth, ZkOffsetStore, ZooKeeperError};
use zookeeper_client::{Acls, Client, CreateMode, Permission};

const SESSION: Duration = Duration::from_secs(10);

async fn authed_raw_client(zk: &str, auth: &ZkAuth, password: &str) -> Client {
    Client::connector()
        .with_auth("digest", format!("{}:{password}", auth.user()).as_bytes())
        .connect(zk)
        .await
        .expect("authenticated raw ZooKeeper client")
}

fn password_of(text: &str) -> String {
    text.trim().splitn(3, ':').nth(2).expect("digest:USER:PASSWORD").to_owned()
}

fn is_no_auth(e: &Error) -> bool {
    matches!(e, Error::ZooKeeper { source: ZooKeeperError::NoAuth, .. })
}

#[tokio::test]
async fn creator_all_offsets_are_refused_to_an_unauthenticated_client() {
    let Some(zk) = zookeeper("creator-all").await else { return };
    let Some(auth) = zookeeper_auth("creator-all") else { return };
    let group = unique_group("creator-all");
    let store = ZkOffsetStore::connect_secured(&zk, SESSION, Some(auth.clone()), AclPolicy::CreatorAll)
        .await
        .unwrap();
    let written = [StoredOffset::new("t", 0, 42).with_leader_epoch(2), StoredOffset::new("t", 1, 7)];
    store.write(&group, &written).await.unwrap();
    assert_eq!(store.read(&group, None).await.unwrap(), written);

    // ZooKeeper itself: the node's ACL names the writer's digest identity only.
    let path = format!("/consumers/{group}/offsets/t/0");
    let raw = raw_client(&zk).await;
    assert_eq!(raw.get_data(&path).await.unwrap_err(), ZooKeeperError::NoAuth);
    // (Reading an ACL needs READ or ADMIN on the node: only the writer may.)
    assert_eq!(raw.get_acl(&format!("/consumers/{group}")).await.unwrap_err(), ZooKeeperError::NoAuth);
    let password = password_of(&std::env::var("KWIRE_ZOOKEEPER_AUTH").unwrap_or_default());
    let owner = authed_raw_client(&zk, &auth, &password).await;
    let (acls, _) = owner.get_acl(&format!("/consumers/{group}")).await.unwrap();
    assert_eq!(acls.len(), 1, "{acls:?}");
    assert_eq!(acls[0].scheme(), "digest");
    assert!(acls[0].id().starts_with(&format!("{}:", auth.user())), "{acls:?}");
    assert_eq!(acls[0].permission(), Permission::ALL);

    // kwire without credentials, and with the right user but a wrong password: refused, at
    // once (not retried until the budget is spent), and the message says why.
    let anonymous = ZkOffsetStore::connect(&zk, SESSION).await.unwrap();
    let started = std::time::Instant::now();
    let err = anonymous.read(&group, None).await.unwrap_err();
    assert!(is_no_auth(&err) && err.to_string().contains("ACL does not grant"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "refusal took {:?}", started.elapsed());
    let wrong = ZkAuth::digest(auth.user(), "not-the-password").unwrap();
    let impostor =
        ZkOffsetStore::connect_secured(&zk, SESSION, Some(wrong), AclPolicy::Inherit).await.unwrap();
    let err = impostor.write(&group, &[StoredOffset::new("t", 0, 0)]).await.unwrap_err();
    assert!(is_no_auth(&err), "{err}");
    assert!(!err.to_string().contains("not-the-password"), "{err}");
    assert_eq!(store.read(&group, None).await.unwrap(), written, "the refused write changed nothing");
}

#[tokio::test]
async fn world_read_offsets_are_readable_by_anyone_and_writable_by_the_owner_only() {
    let Some(zk) = zookeeper("world-read").await else { return };
    let Some(auth) = zookeeper_auth("world-read") else { return };
    let group = unique_group("world-read");
    let owner = ZkOffsetStore::connect_secured(&zk, SESSION, Some(auth), AclPolicy::WorldRead).await.unwrap();
    let written = [StoredOffset::new("t", 0, 100)];
    owner.write(&group, &written).await.unwrap();

    let anonymous = ZkOffsetStore::connect(&zk, SESSION).await.unwrap();
    assert_eq!(anonymous.read(&group, None).await.unwrap(), written);
    let err = anonymous.write(&group, &[StoredOffset::new("t", 0, 0)]).await.unwrap_err();
    assert!(is_no_auth(&err), "{err}");
    // A new partition under the owner's topic folder: creating it is refused too.
    let err = anonymous.write(&group, &[StoredOffset::new("t", 5, 0)]).await.unwrap_err();
    assert!(is_no_auth(&err), "{err}");
    assert_eq!(owner.read(&group, None).await.unwrap(), written);
}

#[tokio::test]
async fn inherited_acls_follow_a_locked_down_chroot() {
    let Some(zk) = zookeeper("inherit").await else { return };
    let Some(auth) = zookeeper_auth("inherit") else { return };
    let password = password_of(&std::env::var("KWIRE_ZOOKEEPER_AUTH").unwrap_or_default());
    let servers = zk.split('/').next().unwrap_or(&zk).to_owned();
    let chroot = format!("/{}", unique_group("locked"));
    // An operator locked the chroot down to the digest user.
    let admin = authed_raw_client(&servers, &auth, &password).await;
    admin.create(&chroot, b"", &CreateMode::Persistent.with_acls(Acls::creator_all())).await.unwrap();

    let store = ZkOffsetStore::connect_secured(
        &format!("{servers}{chroot}"),
        SESSION,
        Some(auth),
        AclPolicy::Inherit,
    )
    .await
    .unwrap();
    assert_eq!(store.acl_policy(), AclPolicy::Inherit);
    store.write("g", &[StoredOffset::new("t", 0, 3)]).await.unwrap();

    let (parent_acl, _) = admin.get_acl(&chroot).await.unwrap();
    for node in ["/consumers", "/consumers/g/offsets/t/0", "/consumers/g/kwire/t/0"] {
        let (acl, _) = admin.get_acl(&format!("{chroot}{node}")).await.unwrap();
        assert_eq!(acl, parent_acl, "{node}");
    }
    let raw = raw_client(&servers).await;
    assert_eq!(
        raw.get_data(&format!("{chroot}/consumers/g/offsets/t/0")).await.unwrap_err(),
        ZooKeeperError::NoAuth
    );
}

#[tokio::test]
async fn on_an_open_tree_inherited_acls_stay_open() {
    let Some(zk) = zookeeper("inherit open").await else { return };
    let group = unique_group("inherit-open");
    let store = ZkOffsetStore::connect(&zk, SESSION).await.unwrap();
    store.write(&group, &[StoredOffset::new("t", 0, 1)]).await.unwrap();
    let raw = raw_client(&zk).await;
    let (acl, _) = raw.get_acl(&format!("/consumers/{group}/offsets/t/0")).await.unwrap();
    assert_eq!((acl[0].scheme(), acl[0].id(), acl[0].permission()), ("world", "anyone", Permission::ALL));
}

#[tokio::test]
async fn a_creator_policy_without_credentials_is_refused_before_connecting() {
    // No server needed: the check comes first (port 9 is discard, never ZooKeeper).
    let err = ZkOffsetStore::connect_secured("127.0.0.1:9", SESSION, None, AclPolicy::CreatorAll)
        .await
        .unwrap_err();
    assert_eq!(err, Error::AclNeedsAuth { policy: AclPolicy::CreatorAll });
    assert!(err.to_string().contains("creator-all"), "{err}");
}
