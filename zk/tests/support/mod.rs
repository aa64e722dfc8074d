//! What the ZooKeeper integration tests share: finding the server, unique names, ZooKeeper's own
//! Java client as the "old writer", and a TCP proxy that can cut the connection.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;
use zookeeper_client::{Acls, Client, CreateMode};

/// The server under test, from `KWIRE_ZOOKEEPER`. Unset: the test is skipped (`None`) unless
/// `CI` is set, where it fails. Set but unreachable: the test fails.
pub async fn zookeeper(test: &str) -> Option<String> {
    let zk = match std::env::var("KWIRE_ZOOKEEPER") {
        Ok(zk) if !zk.trim().is_empty() => zk,
        _ => {
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty());
            assert!(!ci, "{test}: KWIRE_ZOOKEEPER is not set but CI is; run `scripts/cluster up` and export `scripts/cluster env`");
            eprintln!("skipping {test}: KWIRE_ZOOKEEPER is not set (see `scripts/cluster env`)");
            return None;
        }
    };
    let reachable = tokio::time::timeout(Duration::from_secs(10), Client::connect(&zk))
        .await
        .unwrap_or_else(|_| panic!("{test}: ZooKeeper at KWIRE_ZOOKEEPER={zk} did not answer within 10 s"));
    if let Err(e) = reachable {
        panic!("{test}: ZooKeeper at KWIRE_ZOOKEEPER={zk} is unreachable: {e}");
    }
    Some(zk)
}

/// A group name no other test or earlier run uses.
pub fn unique_group(name: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let millis = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    format!("kwire-zk-test-{}-{millis}-{n}-{name}", std::process::id())
}

/// A raw ZooKeeper client on the same server (no chroot), to plant or inspect nodes.
pub async fn raw_client(zk: &str) -> Client {
    Client::connect(zk).await.expect("raw ZooKeeper client")
}

/// Creates `path` with `data`, parents included (empty data), like Curator's
/// `creatingParentsIfNeeded`.
pub async fn plant(client: &Client, path: &str, data: &[u8]) {
    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let parent = &path[..path.rfind('/').expect("absolute path")];
    if !parent.is_empty() {
        client.mkdir(parent, &options).await.expect("create parents");
    }
    client.create(path, data, &options).await.expect("create node");
}

/// Runs ZooKeeper's own Java client (`tests/support/OldZk.java`, on the jars `scripts/cluster`
/// caches) with `commands`; returns its `OLDZK ...` output lines without the prefix.
pub async fn old_zk(zk: &str, commands: &[String]) -> Vec<String> {
    let zk = zk.to_owned();
    let commands = commands.to_vec();
    tokio::task::spawn_blocking(move || old_zk_blocking(&zk, &commands)).await.expect("java runner")
}

fn old_zk_blocking(zk: &str, commands: &[String]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let fetch =
        Command::new(root.join("scripts/cluster")).arg("fetch").output().expect("run scripts/cluster fetch");
    assert!(fetch.status.success(), "scripts/cluster fetch: {}", String::from_utf8_lossy(&fetch.stderr));
    let jars = String::from_utf8_lossy(&fetch.stdout).trim().to_owned();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/OldZk.java");
    let out = Command::new("java")
        .arg("-cp")
        .arg(format!("{jars}/*"))
        .arg(source)
        .arg(zk)
        .args(commands)
        .output()
        .expect("run java");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "OldZk {commands:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout.lines().filter_map(|l| l.strip_prefix("OLDZK ")).map(str::to_owned).collect()
}

/// A TCP proxy in front of ZooKeeper whose connections can be cut (and new ones refused) to
/// simulate a network partition without touching the shared server.
pub struct Proxy {
    pub addr: SocketAddr,
    down: Arc<AtomicBool>,
    connections: Arc<Mutex<Vec<AbortHandle>>>,
    accept: AbortHandle,
}

impl Proxy {
    pub async fn start(zk: &str) -> Proxy {
        let target = zk.split(['/', ',']).next().expect("a host:port").to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let down = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(Mutex::new(Vec::new()));
        let accept = {
            let down = Arc::clone(&down);
            let connections = Arc::clone(&connections);
            tokio::spawn(async move {
                while let Ok((mut client, _)) = listener.accept().await {
                    if down.load(Ordering::SeqCst) {
                        drop(client);
                        continue;
                    }
                    let target = target.clone();
                    let pipe = tokio::spawn(async move {
                        if let Ok(mut server) = TcpStream::connect(&target).await {
                            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                        }
                    });
                    connections.lock().expect("proxy lock").push(pipe.abort_handle());
                }
            })
            .abort_handle()
        };
        Proxy { addr, down, connections, accept }
    }

    /// Drops every connection and refuses new ones until [`Proxy::restore`].
    pub fn cut(&self) {
        self.down.store(true, Ordering::SeqCst);
        for c in self.connections.lock().expect("proxy lock").drain(..) {
            c.abort();
        }
    }

    pub fn restore(&self) {
        self.down.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
        self.accept.abort();
    }
}

/// The digest credentials of the test cluster's ZooKeeper, from `KWIRE_ZOOKEEPER_AUTH`
/// (`digest:USER:PASSWORD`). Unset: `None` (the test is skipped) unless `CI` or
/// `KWIRE_REQUIRE_CLUSTER` is set, where it fails.
pub fn zookeeper_auth(test: &str) -> Option<kwire_zk::ZkAuth> {
    match std::env::var("KWIRE_ZOOKEEPER_AUTH") {
        Ok(text) if !text.trim().is_empty() => Some(
            kwire_zk::ZkAuth::parse(&text)
                .unwrap_or_else(|e| panic!("{test}: KWIRE_ZOOKEEPER_AUTH is not digest:USER:PASSWORD: {e}")),
        ),
        _ => {
            let required =
                ["CI", "KWIRE_REQUIRE_CLUSTER"].iter().any(|v| std::env::var(v).is_ok_and(|v| !v.is_empty()));
            assert!(!required, "{test}: KWIRE_ZOOKEEPER_AUTH is not set; export `scripts/cluster env`");
            eprintln!("skipping {test}: KWIRE_ZOOKEEPER_AUTH is not set (see `scripts/cluster env`)");
            None
        }
    }
}
