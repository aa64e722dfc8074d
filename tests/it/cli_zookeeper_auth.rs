//! The ZooKeeper store with digest credentials through the CLI (`--zookeeper-auth`,
//! `KWIRE_ZOOKEEPER_AUTH`, `@FILE`) and the ACL it writes with (`--zookeeper-acl`), checked by
//! ZooKeeper's own Java client: what kwire protects, ZooKeeper refuses to anyone else.

use crate::support::{
    self, create_topic, json, kwire, produce_with_kafka, stderr, stdout, unique, zookeeper_auth, Cluster,
};

/// ZooKeeper's own CLI (`ZooKeeperMain`), unauthenticated or with `addauth` first. Its exit
/// status says nothing (it is 0 after a refused command), so callers read the output.
pub(crate) fn zk_cli(cluster: &Cluster, auth: Option<&str>, command: &str) -> String {
    let zk = cluster.zookeeper.clone().expect("KWIRE_ZOOKEEPER is set with the cluster");
    let script = match auth.and_then(|a| a.strip_prefix("digest:")) {
        Some(credentials) => format!("addauth digest {credentials}\n{command}\n"),
        None => format!("{command}\n"),
    };
    let dir = std::env::temp_dir().join(unique("zk-cli"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("commands");
    std::fs::write(&file, script).unwrap();
    // ZooKeeperMain reads commands from stdin when none is given on the command line.
    let out = std::process::Command::new(support::repo_root().join("scripts/cluster"))
        .args(["tool", "org.apache.zookeeper.ZooKeeperMain", "-server", &zk])
        .stdin(std::fs::File::open(&file).unwrap())
        .output()
        .expect("scripts/cluster runs");
    std::fs::remove_dir_all(&dir).ok();
    format!("{}{}", stdout(&out), stderr(&out))
}

#[test]
fn offsets_committed_with_creator_all_are_refused_to_zookeepers_own_unauthenticated_client() {
    let Some(cluster) = support::cluster() else { return };
    let Some(auth) = zookeeper_auth() else { return };
    let topic = unique("zk-auth");
    let group = unique("zk-auth-group");
    create_topic(&cluster, &topic, 2, 3);
    produce_with_kafka(&cluster, &topic, 100, 10);

    let commit = kwire(
        &cluster,
        &[
            "commit",
            "--group",
            &group,
            "--store",
            "zk",
            "--zookeeper-auth",
            &auth,
            "--zookeeper-acl",
            "creator-all",
            &format!("{topic}:0=5"),
            &format!("{topic}:1=9"),
        ],
    );
    assert!(commit.status.success(), "{}", stderr(&commit));
    assert!(
        !stderr(&commit).contains(auth.rsplit(':').next().unwrap()),
        "password echoed: {}",
        stderr(&commit)
    );

    // The owner reads them back (credentials from the environment this time).
    let mut describe = std::process::Command::new(env!("CARGO_BIN_EXE_kwire"));
    describe
        .args(["group", "describe", &group, "--store", "zk", "--format", "json"])
        .env("KWIRE_BOOTSTRAP", &cluster.bootstrap)
        .env("KWIRE_ZOOKEEPER", cluster.zookeeper.as_deref().unwrap_or(""))
        .env("KWIRE_ZOOKEEPER_AUTH", &auth);
    let doc = json(&describe.output().unwrap());
    let committed: Vec<_> =
        doc["partitions"].as_array().unwrap().iter().map(|p| p["committed"].clone()).collect();
    assert_eq!(committed, [5, 9]);

    // ZooKeeper itself and kwire refuse the node to a session without the credentials...
    let path = refused_without_credentials(&cluster, &group, &topic);
    // ...and ZooKeeper shows it to one with them, in the old layout.
    let granted = zk_cli(&cluster, Some(&auth), &format!("get {path}"));
    assert!(granted.lines().any(|l| l.trim() == "5"), "{granted}");
}

/// Checks that partition 0's offset node of `group` and `topic` is refused to a session
/// without credentials — ZooKeeper's own CLI gets "Insufficient permission", kwire a one-line
/// store error (exit 6) saying the ACL refused it — and returns the node's path.
pub(crate) fn refused_without_credentials(cluster: &Cluster, group: &str, topic: &str) -> String {
    let path = format!("/consumers/{group}/offsets/{topic}/0");
    let refused = zk_cli(cluster, None, &format!("get {path}"));
    assert!(refused.contains("Insufficient permission"), "{refused}");
    let anonymous = kwire(cluster, &["group", "describe", group, "--store", "zk"]);
    assert_eq!(anonymous.status.code(), Some(6), "{}", stderr(&anonymous));
    assert!(stderr(&anonymous).contains("ACL does not grant this session"), "{}", stderr(&anonymous));
    path
}

#[test]
fn zookeeper_credentials_from_a_file_write_world_readable_offsets() {
    let Some(cluster) = support::cluster() else { return };
    let Some(auth) = zookeeper_auth() else { return };
    let topic = unique("zk-auth-file");
    let group = unique("zk-auth-file-group");
    create_topic(&cluster, &topic, 1, 3);
    produce_with_kafka(&cluster, &topic, 10, 10);
    let dir = std::env::temp_dir().join(unique("zk-auth-file"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("zk-auth");
    std::fs::write(&file, format!("{auth}\n")).unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let at_file = format!("@{}", file.display());

    let commit = kwire(
        &cluster,
        &[
            "commit",
            "--group",
            &group,
            "--store",
            "zk",
            "--zookeeper-auth",
            &at_file,
            "--zookeeper-acl",
            "world-read",
            &format!("{topic}:0=3"),
        ],
    );
    assert!(commit.status.success(), "{}", stderr(&commit));
    assert!(stderr(&commit).contains("readable by every user"), "no warning: {}", stderr(&commit));

    // Anyone reads world-read offsets; only the owner changes them.
    let read = json(&kwire(&cluster, &["group", "describe", &group, "--store", "zk", "--format", "json"]));
    assert_eq!(read["partitions"][0]["committed"], 3);
    let overwrite = kwire(&cluster, &["commit", "--group", &group, "--store", "zk", &format!("{topic}:0=0")]);
    assert_eq!(overwrite.status.code(), Some(6), "{}", stderr(&overwrite));
    let acl = zk_cli(&cluster, None, &format!("getAcl /consumers/{group}/offsets/{topic}/0"));
    assert!(acl.contains("'world,'anyone\n: r") && acl.contains("'digest,'"), "{acl}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_creator_acl_without_credentials_or_a_malformed_credential_is_a_usage_error() {
    let Some(cluster) = support::cluster() else { return };
    let group = unique("zk-auth-usage");
    let no_auth = kwire(
        &cluster,
        &["commit", "--group", &group, "--store", "zk", "--zookeeper-acl", "creator-all", "t:0=1"],
    );
    assert_eq!(no_auth.status.code(), Some(1), "{}", stderr(&no_auth));
    assert!(stderr(&no_auth).contains("creator-all"), "{}", stderr(&no_auth));
    let bad = kwire(
        &cluster,
        &["commit", "--group", &group, "--store", "zk", "--zookeeper-auth", "kerberos:me:HUNTER2", "t:0=1"],
    );
    assert_eq!(bad.status.code(), Some(1), "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("digest:USER:PASSWORD and sasl:USER:PASSWORD")
            && !stderr(&bad).contains("HUNTER2"),
        "{}",
        stderr(&bad)
    );
    let unknown = kwire(
        &cluster,
        &["commit", "--group", &group, "--store", "zk", "--zookeeper-acl", "everyone", "t:0=1"],
    );
    assert!(!unknown.status.success() && stderr(&unknown).contains("world-read"), "{}", stderr(&unknown));
}
