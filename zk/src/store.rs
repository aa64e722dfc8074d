//! [`ZkOffsetStore`]: reads and writes a group's offsets in the old ZooKeeper layout.
//!
//! # Concurrent writers
//!
//! The store remembers the version of every offset node it has seen (by [`ZkOffsetStore::read`]
//! or by its own writes). [`ZkOffsetStore::write`] sends one ZooKeeper multi-op in which every
//! offset node is either created (it was absent) or set *at the remembered version*, so if anyone
//! else — an old Spark job, a second kwire, an operator with `zkCli` — changed, created or
//! deleted one of the batch's offset nodes since, ZooKeeper rejects the whole batch and the call
//! returns [`Error::ConcurrentModification`] naming the partition. Nothing is overwritten.
//! Reading again takes the other writer's values as the new baseline. A partition the store has
//! never seen is checked at write time (its version is read just before the multi-op).
//!
//! # Connection loss and session expiry
//!
//! Each call retries through connection loss, throttling and session expiry (it opens a new
//! session) until its time budget ([`ZkOffsetStore::with_retry_budget`]) is spent, then returns
//! [`Error::DeadlineExceeded`]. A write whose reply was lost may or may not have been applied;
//! the store records both possibilities and the next attempt (or the next read or write) tells
//! them apart by reading the nodes back — the multi-op is atomic, so either every offset node is
//! at "before" or every one holds exactly the written value at "before + 1".

use std::collections::{BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::{sleep_until, timeout_at, Instant};
use zookeeper_client::{Acl, Acls, Client, Connector, CreateMode, MultiWriteError, SessionState};

use crate::acl::AclPolicy;
use crate::auth::ZkAuth;
use crate::error::{Error, Result, ZooKeeperError};
use crate::layout::{self, ConnectString, Layout};
use crate::meta::Meta;
use crate::probe::probe_servers;
use crate::stored::StoredOffset;
use crate::tls::ZkTls;

/// How long a read or write keeps retrying unless told otherwise.
pub const DEFAULT_RETRY_BUDGET: Duration = Duration::from_secs(30);

/// The longest session timeout asked of ZooKeeper. Servers cap it anyway (`maxSessionTimeout`,
/// 40 s by default); the cap keeps `zookeeper-client`'s own `Instant + timeout` arithmetic far
/// from overflowing whatever timeout the caller passes.
pub const MAX_SESSION_TIMEOUT: Duration = Duration::from_secs(60);

const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// A ZooKeeper-backed offset store. Cheap to share: every method takes `&self`.
#[derive(Debug)]
pub struct ZkOffsetStore {
    servers: String,
    layout: Layout,
    session_timeout: Duration,
    retry_budget: Duration,
    auth: Option<ZkAuth>,
    tls: Option<ZkTls>,
    acl: AclPolicy,
    client: Mutex<Client>,
    seen: Mutex<HashMap<(String, String), TopicSeen>>,
}

/// What the store knows about one topic's offset nodes of one group.
#[derive(Debug, Default)]
struct TopicSeen {
    /// Set by a read of the whole topic: a partition missing from `partitions` is known absent.
    complete: bool,
    partitions: HashMap<i32, Seen>,
}

/// The version of one offset node (`None`: absent), or the two it may have after a write whose
/// reply was lost.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Known(Option<i32>),
    Unsure { before: Option<i32>, written: Vec<u8> },
}

/// The version an offset node has after a successful create (0) or conditional set.
fn version_after(before: Option<i32>) -> i32 {
    before.map_or(0, |v| v.wrapping_add(1))
}

/// What became of an offset node after a multi-op whose reply was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unsure {
    /// Still at its version before: the multi-op was not applied.
    NotApplied,
    /// Holds exactly the written value one version later: the multi-op was applied.
    Applied(i32),
    /// Anything else: another writer changed it.
    Conflict,
}

/// `before` is the version the write expected (`None`: absent), `written` the value it sent,
/// `now` the node's current value and version (`None`: absent).
fn resolve_unsure(before: Option<i32>, written: &[u8], now: Option<&(Vec<u8>, i32)>) -> Unsure {
    let now_version = now.map(|(_, v)| *v);
    if now_version == before {
        Unsure::NotApplied
    } else if now.is_some_and(|(data, v)| *v == version_after(before) && data.as_slice() == written) {
        Unsure::Applied(version_after(before))
    } else {
        Unsure::Conflict
    }
}

/// What one failed ZooKeeper request means for the call that made it. Decided here only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recovery {
    /// Transient: try again on the same session.
    Retry,
    /// The session is gone: open a new one, then try again.
    Reconnect,
    /// Retrying will not help.
    Fatal,
}

fn recovery(e: &ZooKeeperError) -> Recovery {
    match e {
        ZooKeeperError::ConnectionLoss | ZooKeeperError::Timeout | ZooKeeperError::Throttled => {
            Recovery::Retry
        }
        ZooKeeperError::SessionExpired
        | ZooKeeperError::SessionMoved
        | ZooKeeperError::ClientClosed
        | ZooKeeperError::NoHosts
        | ZooKeeperError::Custom(_) => Recovery::Reconnect,
        _ => Recovery::Fatal,
    }
}

/// A failed attempt: a ZooKeeper error at a path (to classify), a definite failure that a
/// fresh look fixes (a parent node appeared under us: nothing was written), or a final answer.
enum Fail {
    Zk { path: String, error: ZooKeeperError },
    Again,
    Final(Error),
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::Final(e)
    }
}

fn zk_at(path: &str) -> impl FnOnce(ZooKeeperError) -> Fail + '_ {
    move |error| Fail::Zk { path: path.to_owned(), error }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The guarded maps stay consistent even if a holder panicked: every update is one insert.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The retry loop's bookkeeping for one call.
struct Attempts<'a> {
    store: &'a ZkOffsetStore,
    operation: &'static str,
    target: String,
    deadline: Instant,
    backoff: Duration,
    last_error: Option<ZooKeeperError>,
    reconnect: bool,
}

impl<'a> Attempts<'a> {
    fn new(store: &'a ZkOffsetStore, operation: &'static str, group: &str) -> Attempts<'a> {
        Attempts {
            store,
            operation,
            target: format!("group {group:?}"),
            deadline: deadline_after(store.retry_budget),
            backoff: FIRST_BACKOFF,
            last_error: None,
            reconnect: false,
        }
    }

    fn deadline_exceeded(&self, outcome_unknown: bool) -> Error {
        Error::DeadlineExceeded {
            operation: self.operation,
            target: self.target.clone(),
            budget: self.store.retry_budget,
            last_error: self.last_error.clone(),
            outcome_unknown,
        }
    }

    /// A live client, opening a new session when the last one is gone.
    async fn client(&mut self, outcome_unknown: bool) -> Result<Client> {
        loop {
            if Instant::now() >= self.deadline {
                return Err(self.deadline_exceeded(outcome_unknown));
            }
            let current = lock(&self.store.client).clone();
            let dead = matches!(
                current.state(),
                SessionState::Expired | SessionState::Closed | SessionState::AuthFailed
            );
            if !self.reconnect && !dead {
                return Ok(current);
            }
            match timeout_at(self.deadline, self.store.open_session()).await {
                Ok(Ok(fresh)) => {
                    *lock(&self.store.client) = fresh.clone();
                    self.reconnect = false;
                    return Ok(fresh);
                }
                Ok(Err(e)) => {
                    self.last_error = Some(e);
                    self.pause().await;
                }
                Err(_) => return Err(self.deadline_exceeded(outcome_unknown)),
            }
        }
    }

    /// Classifies a failure: `Ok` to try again (after a pause), `Err` to give up.
    async fn failed(&mut self, fail: Fail, outcome_unknown: bool) -> Result<()> {
        match fail {
            Fail::Final(e) => Err(e),
            Fail::Again => {
                self.pause().await;
                if Instant::now() >= self.deadline {
                    return Err(self.deadline_exceeded(outcome_unknown));
                }
                Ok(())
            }
            Fail::Zk { path, error } => match recovery(&error) {
                Recovery::Fatal => Err(Error::ZooKeeper { operation: self.operation, path, source: error }),
                r => {
                    self.reconnect |= r == Recovery::Reconnect;
                    self.last_error = Some(error);
                    self.pause().await;
                    if Instant::now() >= self.deadline {
                        return Err(self.deadline_exceeded(outcome_unknown));
                    }
                    Ok(())
                }
            },
        }
    }

    async fn pause(&mut self) {
        sleep_until((Instant::now() + self.backoff).min(self.deadline)).await;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    /// Runs one attempt, cut short at the deadline.
    async fn run<T>(&self, attempt: impl Future<Output = Result<T, Fail>>) -> Option<Result<T, Fail>> {
        timeout_at(self.deadline, attempt).await.ok()
    }
}

/// `now + budget`, or about 30 years from now for a budget too large to add (`Duration::MAX`).
fn deadline_after(budget: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(budget).unwrap_or_else(|| now + Duration::from_secs(30 * 365 * 86_400))
}

/// One write attempt's operation, to map a failed multi-op index back to what it was.
enum Target<'a> {
    Ancestor,
    Offset(&'a StoredOffset, String),
    Meta,
}

impl ZkOffsetStore {
    /// Opens a session to `connect_string` (`host:port[,host:port...][/chroot]`, as for Kafka
    /// 0.8's `zookeeper.connect`). The chroot need not exist: writes create it. Waits at most
    /// `session_timeout` (at least 1 s) for the first session. The session timeout asked of the
    /// server is `session_timeout` capped at [`MAX_SESSION_TIMEOUT`]; the wait is not capped.
    pub async fn connect(connect_string: &str, session_timeout: Duration) -> Result<ZkOffsetStore> {
        ZkOffsetStore::connect_secured(connect_string, session_timeout, None, AclPolicy::default()).await
    }

    /// [`ZkOffsetStore::connect`] with credentials (every session, also after an expiry,
    /// presents them) and the ACL of the nodes writes create. A policy that names the writer
    /// ([`AclPolicy::needs_auth`]) without credentials is [`Error::AclNeedsAuth`], before any
    /// connection.
    pub async fn connect_secured(
        connect_string: &str,
        session_timeout: Duration,
        auth: Option<ZkAuth>,
        acl: AclPolicy,
    ) -> Result<ZkOffsetStore> {
        ZkOffsetStore::connect_with_tls(connect_string, session_timeout, auth, acl, None).await
    }

    /// [`ZkOffsetStore::connect_secured`], over TLS to every server of the connect string when
    /// `tls` is given (ZooKeeper's `secureClientPort`). A security mismatch the probe finds
    /// (TLS on one side only, a certificate refused) is [`Error::Security`]; SASL credentials
    /// ZooKeeper refuses are [`Error::AuthFailed`].
    pub async fn connect_with_tls(
        connect_string: &str,
        session_timeout: Duration,
        auth: Option<ZkAuth>,
        acl: AclPolicy,
        tls: Option<ZkTls>,
    ) -> Result<ZkOffsetStore> {
        let ConnectString { servers, layout } = ConnectString::parse(connect_string).map_err(|reason| {
            Error::InvalidConnectString { connect_string: connect_string.to_owned(), reason }
        })?;
        if acl.needs_auth() && auth.is_none() {
            return Err(Error::AclNeedsAuth { policy: acl });
        }
        let wait = session_timeout.max(Duration::from_secs(1));
        let session_timeout = session_timeout.min(MAX_SESSION_TIMEOUT);
        let connecting = connect(session_timeout, auth.as_ref(), tls.as_ref(), &servers);
        // The probe runs beside the connect, so naming the cause of a failure costs no time;
        // it is dropped unread when the session opens.
        let probing =
            tokio::spawn(probe_servers(servers.clone(), wait, tls.as_ref().map(ZkTls::probe_config)));
        let last_error = match tokio::time::timeout(wait, connecting).await {
            Ok(Ok(client)) => {
                probing.abort();
                return Ok(ZkOffsetStore {
                    servers,
                    layout,
                    session_timeout,
                    retry_budget: DEFAULT_RETRY_BUDGET,
                    auth,
                    tls,
                    acl,
                    client: Mutex::new(client),
                    seen: Mutex::new(HashMap::new()),
                });
            }
            Ok(Err(ZooKeeperError::AuthFailed)) => {
                probing.abort();
                let credentials = auth.as_ref().map_or_else(|| "(none)".to_owned(), ZkAuth::to_string);
                return Err(Error::AuthFailed { servers, credentials });
            }
            Ok(Err(e)) => Some(e),
            Err(_) => None,
        };
        let probes = probing.await.unwrap_or_default();
        if probes.iter().any(|(_, p)| p.is_security()) {
            let probes = probes.into_iter().filter(|(_, p)| p.is_security()).collect();
            return Err(Error::Security { servers, probes });
        }
        Err(Error::Unreachable { servers, budget: wait, last_error, probes })
    }

    /// How long each later call keeps retrying through connection loss and session expiry
    /// before it returns [`Error::DeadlineExceeded`]. Default [`DEFAULT_RETRY_BUDGET`].
    #[must_use]
    pub fn with_retry_budget(mut self, budget: Duration) -> ZkOffsetStore {
        self.retry_budget = budget;
        self
    }

    /// The paths this store uses (chroot included).
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The ACL policy of the nodes writes create.
    pub fn acl_policy(&self) -> AclPolicy {
        self.acl
    }

    async fn open_session(&self) -> Result<Client, ZooKeeperError> {
        connect(self.session_timeout, self.auth.as_ref(), self.tls.as_ref(), &self.servers).await
    }

    /// The ACL for each node of `created` under [`AclPolicy::Inherit`]: that of its nearest
    /// ancestor among `existing` (else `/`), read once per ancestor.
    async fn inherited_acls(
        &self,
        client: &Client,
        created: &[&str],
        existing: &[&str],
    ) -> Result<Vec<Vec<Acl>>, Fail> {
        let nearest: Vec<String> = created
            .iter()
            .map(|path| {
                existing
                    .iter()
                    .filter(|a| path.starts_with(**a) && path.as_bytes().get(a.len()) == Some(&b'/'))
                    .max_by_key(|a| a.len())
                    .map_or_else(|| "/".to_owned(), |a| (*a).to_owned())
            })
            .collect();
        let mut read: HashMap<String, Vec<Acl>> = HashMap::new();
        for parent in &nearest {
            if !read.contains_key(parent) {
                let (acls, _) = client.get_acl(parent).await.map_err(zk_at(parent))?;
                read.insert(parent.clone(), acls);
            }
        }
        Ok(nearest.iter().map(|p| read[p].clone()).collect())
    }

    /// Every group with a node under `/consumers`, sorted.
    pub async fn groups(&self) -> Result<Vec<String>> {
        let path = self.layout.consumers();
        let mut attempts = Attempts::new(self, "list groups", "*");
        loop {
            let client = attempts.client(false).await?;
            let outcome = attempts
                .run(async {
                    match client.list_children(&path).await {
                        Ok(mut groups) => {
                            groups.sort();
                            Ok(groups)
                        }
                        Err(ZooKeeperError::NoNode) => Ok(Vec::new()),
                        Err(e) => Err(zk_at(&path)(e)),
                    }
                })
                .await;
            match outcome {
                Some(Ok(groups)) => return Ok(groups),
                Some(Err(fail)) => attempts.failed(fail, false).await?,
                None => return Err(attempts.deadline_exceeded(false)),
            }
        }
    }

    /// Whether `/consumers/<group>` exists: tells a group that never stored anything from one
    /// whose offsets were all removed (both read as empty).
    pub async fn group_exists(&self, group: &str) -> Result<bool> {
        validate_group(group)?;
        let path = self.layout.group(group);
        let mut attempts = Attempts::new(self, "check group", group);
        loop {
            let client = attempts.client(false).await?;
            let outcome = attempts.run(async { client.check_stat(&path).await.map_err(zk_at(&path)) }).await;
            match outcome {
                Some(Ok(stat)) => return Ok(stat.is_some()),
                Some(Err(fail)) => attempts.failed(fail, false).await?,
                None => return Err(attempts.deadline_exceeded(false)),
            }
        }
    }

    /// The group's stored offsets for `topics` (every topic under
    /// `/consumers/<group>/offsets` when `None`), sorted by topic and partition. Partitions are
    /// the children of each topic's node, as the old readers enumerate them. A group or topic
    /// without offsets gives no entries, not an error; a damaged node is an error naming it.
    pub async fn read(&self, group: &str, topics: Option<&[String]>) -> Result<Vec<StoredOffset>> {
        validate_group(group)?;
        if let Some(topics) = topics {
            for topic in topics {
                validate_topic(topic)?;
            }
        }
        let mut attempts = Attempts::new(self, "read", group);
        loop {
            let client = attempts.client(false).await?;
            match attempts.run(self.read_once(&client, group, topics)).await {
                Some(Ok((offsets, seen))) => {
                    let mut known = lock(&self.seen);
                    for (topic, partitions) in seen {
                        known.insert((group.to_owned(), topic), TopicSeen { complete: true, partitions });
                    }
                    return Ok(offsets);
                }
                Some(Err(fail)) => attempts.failed(fail, false).await?,
                None => return Err(attempts.deadline_exceeded(false)),
            }
        }
    }

    #[allow(clippy::type_complexity)]
    async fn read_once(
        &self,
        client: &Client,
        group: &str,
        topics: Option<&[String]>,
    ) -> Result<(Vec<StoredOffset>, Vec<(String, HashMap<i32, Seen>)>), Fail> {
        let topics: Vec<String> = match topics {
            Some(topics) => topics.iter().collect::<BTreeSet<_>>().into_iter().cloned().collect(),
            None => {
                let root = self.layout.offsets_root(group);
                let mut names = match client.list_children(&root).await {
                    Ok(names) => names,
                    Err(ZooKeeperError::NoNode) => Vec::new(),
                    Err(e) => return Err(zk_at(&root)(e)),
                };
                names.sort();
                for name in &names {
                    if layout::validate_topic(name).is_err() {
                        return Err(Error::UnexpectedChild { parent: root, child: name.clone() }.into());
                    }
                }
                names
            }
        };

        // Every request is sent when its future is made, so these go out back to back.
        let folders: Vec<String> = topics.iter().map(|t| self.layout.offsets_topic(group, t)).collect();
        let listings: Vec<_> = folders.iter().map(|f| client.list_children(f)).collect();
        let mut partitions: Vec<(usize, i32)> = Vec::new();
        for (i, listing) in listings.into_iter().enumerate() {
            let children = match listing.await {
                Ok(children) => children,
                Err(ZooKeeperError::NoNode) => Vec::new(),
                Err(e) => return Err(zk_at(&folders[i])(e)),
            };
            for child in children {
                let Some(p) = layout::parse_partition(&child) else {
                    return Err(Error::UnexpectedChild { parent: folders[i].clone(), child }.into());
                };
                partitions.push((i, p));
            }
        }
        partitions.sort_unstable();

        let paths: Vec<(String, String)> = partitions
            .iter()
            .map(|&(i, p)| (self.layout.offset(group, &topics[i], p), self.layout.meta(group, &topics[i], p)))
            .collect();
        let reads: Vec<_> =
            paths.iter().map(|(offset, meta)| (client.get_data(offset), client.get_data(meta))).collect();

        let mut out = Vec::with_capacity(paths.len());
        let mut seen: Vec<(String, HashMap<i32, Seen>)> =
            topics.iter().map(|t| (t.clone(), HashMap::new())).collect();
        for ((&(i, partition), (offset_path, meta_path)), (offset_read, meta_read)) in
            partitions.iter().zip(&paths).zip(reads)
        {
            let (value, stat) = match offset_read.await {
                Ok(found) => found,
                // Deleted between the listing and the read: absent, as if listed a moment later.
                Err(ZooKeeperError::NoNode) => continue,
                Err(e) => return Err(zk_at(offset_path)(e)),
            };
            let meta_bytes = match meta_read.await {
                Ok((bytes, _)) => Some(bytes),
                Err(ZooKeeperError::NoNode) => None,
                Err(e) => return Err(zk_at(meta_path)(e)),
            };
            let offset = layout::parse_offset(&value).map_err(|reason| Error::CorruptOffset {
                path: offset_path.clone(),
                value: value.clone(),
                reason,
            })?;
            let meta = match meta_bytes {
                None => None,
                Some(bytes) => Meta::decode(&bytes).map_err(|reason| Error::CorruptMetadata {
                    path: meta_path.clone(),
                    value: bytes.clone(),
                    reason,
                })?,
            }
            .filter(|m| m.applies_to(offset));
            seen[i].1.insert(partition, Seen::Known(Some(stat.version)));
            out.push(StoredOffset {
                topic: topics[i].clone(),
                partition,
                offset,
                leader_epoch: meta.and_then(|m| m.leader_epoch),
                topic_id: meta.and_then(|m| m.topic_id),
                commit_timestamp_ms: None,
            });
        }
        Ok((out, seen))
    }

    /// Stores `offsets` for `group` in one atomic ZooKeeper multi-op: every offset node (old
    /// layout, decimal text) and its kwire metadata node, creating missing parents. Either all
    /// of it is written or none. See the module docs for how a concurrent writer is detected.
    pub async fn write(&self, group: &str, offsets: &[StoredOffset]) -> Result<()> {
        validate_group(group)?;
        let mut keys = HashSet::new();
        for o in offsets {
            validate_topic(&o.topic)?;
            if o.partition < 0 {
                return Err(Error::InvalidPartition { topic: o.topic.clone(), partition: o.partition });
            }
            if o.offset < 0 {
                return Err(Error::InvalidOffset {
                    topic: o.topic.clone(),
                    partition: o.partition,
                    offset: o.offset,
                });
            }
            if !keys.insert((o.topic.as_str(), o.partition)) {
                return Err(Error::DuplicatePartition { topic: o.topic.clone(), partition: o.partition });
            }
        }
        if offsets.is_empty() {
            return Ok(());
        }
        let texts: Vec<Vec<u8>> = offsets.iter().map(|o| layout::format_offset(o.offset)).collect();
        let mut attempts = Attempts::new(self, "write", group);
        // Whether an attempt of this call may have been applied without our hearing back.
        let mut sent_unsure = false;
        loop {
            let client = attempts.client(sent_unsure).await?;
            let mut dispatched = false;
            let outcome = attempts
                .run(self.write_once(&client, group, offsets, &texts, sent_unsure, &mut dispatched))
                .await;
            match outcome {
                Some(Ok(())) => return Ok(()),
                Some(Err(fail)) => {
                    let lost_reply =
                        matches!(&fail, Fail::Zk { error, .. } if recovery(error) != Recovery::Fatal);
                    if dispatched && lost_reply {
                        self.mark_unsure(group, offsets, &texts);
                        sent_unsure = true;
                    }
                    attempts.failed(fail, sent_unsure).await?;
                }
                None => {
                    if dispatched {
                        self.mark_unsure(group, offsets, &texts);
                        sent_unsure = true;
                    }
                    return Err(attempts.deadline_exceeded(sent_unsure));
                }
            }
        }
    }

    /// After a multi-op whose reply was lost: each offset node of the batch is either at its
    /// version before, or holds `texts[i]` one version later.
    fn mark_unsure(&self, group: &str, offsets: &[StoredOffset], texts: &[Vec<u8>]) {
        let mut seen = lock(&self.seen);
        for (o, text) in offsets.iter().zip(texts) {
            let Some(topic) = seen.get_mut(&(group.to_owned(), o.topic.clone())) else { continue };
            if let Some(entry) = topic.partitions.get_mut(&o.partition) {
                if let Seen::Known(before) = *entry {
                    *entry = Seen::Unsure { before, written: text.clone() };
                }
            }
        }
    }

    /// The version each offset node is expected at, from what the store has seen; nodes never
    /// seen, or left unsure by a lost reply, are read now. The flag is true when every node of
    /// the batch turned out to hold this call's value already (the lost reply was a success).
    async fn expected_versions(
        &self,
        client: &Client,
        group: &str,
        offsets: &[StoredOffset],
        sent_unsure: bool,
    ) -> Result<(Vec<Option<i32>>, bool), Fail> {
        enum Step<F> {
            Known(Option<i32>),
            Look { unsure: Option<(Option<i32>, Vec<u8>)>, read: F },
        }
        let paths: Vec<String> =
            offsets.iter().map(|o| self.layout.offset(group, &o.topic, o.partition)).collect();
        let plan: Vec<Option<Seen>> = {
            let seen = lock(&self.seen);
            offsets
                .iter()
                .map(|o| {
                    let topic = seen.get(&(group.to_owned(), o.topic.clone()))?;
                    match topic.partitions.get(&o.partition) {
                        Some(s) => Some(s.clone()),
                        None if topic.complete => Some(Seen::Known(None)),
                        None => None,
                    }
                })
                .collect()
        };
        // Every request is sent when its future is made, so the reads go out back to back.
        let steps: Vec<_> = plan
            .into_iter()
            .zip(&paths)
            .map(|(s, path)| match s {
                Some(Seen::Known(v)) => Step::Known(v),
                Some(Seen::Unsure { before, written }) => {
                    Step::Look { unsure: Some((before, written)), read: client.get_data(path) }
                }
                None => Step::Look { unsure: None, read: client.get_data(path) },
            })
            .collect();

        let mut expected = Vec::with_capacity(offsets.len());
        let mut written_count = 0;
        let mut first_before = None;
        for (i, step) in steps.into_iter().enumerate() {
            let version = match step {
                Step::Known(v) => v,
                Step::Look { unsure, read } => {
                    let now = match read.await {
                        Ok((data, stat)) => Some((data, stat.version)),
                        Err(ZooKeeperError::NoNode) => None,
                        Err(e) => return Err(zk_at(&paths[i])(e)),
                    };
                    match unsure {
                        None => now.map(|(_, v)| v),
                        Some((before, written)) => match resolve_unsure(before, &written, now.as_ref()) {
                            Unsure::NotApplied => {
                                first_before.get_or_insert(i);
                                before
                            }
                            Unsure::Applied(v) => {
                                written_count += 1;
                                Some(v)
                            }
                            Unsure::Conflict => return Err(self.conflict(group, &offsets[i]).into()),
                        },
                    }
                }
            };
            expected.push(version);
        }
        let mut seen = lock(&self.seen);
        for (o, v) in offsets.iter().zip(&expected) {
            seen.entry((group.to_owned(), o.topic.clone()))
                .or_default()
                .partitions
                .insert(o.partition, Seen::Known(*v));
        }
        drop(seen);
        if sent_unsure && written_count > 0 {
            if written_count == offsets.len() {
                return Ok((expected, true));
            }
            // The multi-op is atomic: some nodes written and others not means another writer
            // changed the others in between.
            if let Some(i) = first_before {
                return Err(self.conflict(group, &offsets[i]).into());
            }
        }
        Ok((expected, false))
    }

    async fn write_once(
        &self,
        client: &Client,
        group: &str,
        offsets: &[StoredOffset],
        texts: &[Vec<u8>],
        sent_unsure: bool,
        dispatched: &mut bool,
    ) -> Result<(), Fail> {
        let (expected, already_written) = self.expected_versions(client, group, offsets, sent_unsure).await?;
        if already_written {
            return Ok(());
        }

        let mut ancestors: Vec<String> = Vec::new();
        for topic in offsets.iter().map(|o| o.topic.as_str()).collect::<BTreeSet<_>>() {
            for path in self.layout.ancestors(group, topic) {
                if !ancestors.contains(&path) {
                    ancestors.push(path);
                }
            }
        }
        let meta_paths: Vec<String> =
            offsets.iter().map(|o| self.layout.meta(group, &o.topic, o.partition)).collect();
        let ancestor_checks: Vec<_> = ancestors.iter().map(|p| client.check_stat(p)).collect();
        let meta_checks: Vec<_> = meta_paths.iter().map(|p| client.check_stat(p)).collect();
        let mut missing = Vec::new();
        for (path, check) in ancestors.iter().zip(ancestor_checks) {
            if check.await.map_err(zk_at(path))?.is_none() {
                missing.push(path.as_str());
            }
        }
        let mut meta_exists = Vec::with_capacity(meta_paths.len());
        for (path, check) in meta_paths.iter().zip(meta_checks) {
            meta_exists.push(check.await.map_err(zk_at(path))?.is_some());
        }

        let offset_paths: Vec<String> =
            offsets.iter().map(|o| self.layout.offset(group, &o.topic, o.partition)).collect();
        // Every node this batch creates, in batch order: missing parents first, then the
        // offset and metadata nodes that are absent.
        let mut created: Vec<&str> = missing.clone();
        for i in 0..offsets.len() {
            if expected[i].is_none() {
                created.push(&offset_paths[i]);
            }
            if !meta_exists[i] {
                created.push(&meta_paths[i]);
            }
        }
        let acls: Vec<Vec<Acl>> = match self.acl.fixed() {
            Some(fixed) => vec![fixed; created.len()],
            None => {
                let existing: Vec<&str> =
                    ancestors.iter().map(String::as_str).filter(|a| !missing.contains(a)).collect();
                self.inherited_acls(client, &created, &existing).await?
            }
        };
        let modes: Vec<_> = acls.iter().map(|a| CreateMode::Persistent.with_acls(Acls::new(a))).collect();
        let mut next_mode = modes.iter();
        let mut create_mode =
            |path: &str| next_mode.next().ok_or_else(|| zk_at(path)(ZooKeeperError::InvalidAcl));

        let mut multi = client.new_multi_writer();
        let mut targets = Vec::new();
        for path in &missing {
            multi.add_create(path, &[], create_mode(path)?).map_err(zk_at(path))?;
            targets.push(Target::Ancestor);
        }
        for (i, o) in offsets.iter().enumerate() {
            let path = &offset_paths[i];
            match expected[i] {
                None => multi.add_create(path, &texts[i], create_mode(path)?),
                Some(v) => multi.add_set_data(path, &texts[i], Some(v)),
            }
            .map_err(zk_at(path))?;
            targets.push(Target::Offset(o, path.clone()));
            let meta = Meta { offset: o.offset, leader_epoch: o.leader_epoch, topic_id: o.topic_id }.encode();
            if meta_exists[i] {
                // Unconditional: only kwire writes these, and any kwire writer also moves the
                // offset node, whose version check comes first in the batch.
                multi.add_set_data(&meta_paths[i], &meta, None)
            } else {
                multi.add_create(&meta_paths[i], &meta, create_mode(&meta_paths[i])?)
            }
            .map_err(zk_at(&meta_paths[i]))?;
            targets.push(Target::Meta);
        }

        let commit = multi.commit();
        *dispatched = true;
        match commit.await {
            Ok(_) => {
                let mut seen = lock(&self.seen);
                for (o, v) in offsets.iter().zip(&expected) {
                    seen.entry((group.to_owned(), o.topic.clone()))
                        .or_default()
                        .partitions
                        .insert(o.partition, Seen::Known(Some(version_after(*v))));
                }
                Ok(())
            }
            Err(MultiWriteError::RequestFailed { source }) => {
                Err(Fail::Zk { path: self.layout.group(group), error: source })
            }
            Err(MultiWriteError::OperationFailed { index, source }) => match (targets.get(index), source) {
                (
                    Some(Target::Offset(o, _)),
                    ZooKeeperError::BadVersion | ZooKeeperError::NodeExists | ZooKeeperError::NoNode,
                ) => Err(self.conflict(group, o).into()),
                // A parent or metadata node appeared or vanished under us: nothing was written,
                // look again. Counted as a transient failure so the deadline still bounds it.
                (
                    Some(Target::Ancestor | Target::Meta),
                    ZooKeeperError::NodeExists | ZooKeeperError::NoNode,
                ) => Err(Fail::Again),
                (Some(Target::Offset(_, path)), source) => {
                    Err(Fail::Zk { path: path.clone(), error: source })
                }
                (_, source) => Err(Fail::Zk { path: self.layout.group(group), error: source }),
            },
        }
    }

    fn conflict(&self, group: &str, o: &StoredOffset) -> Error {
        Error::ConcurrentModification {
            group: group.to_owned(),
            topic: o.topic.clone(),
            partition: o.partition,
            path: self.layout.offset(group, &o.topic, o.partition),
        }
    }
}

/// Opens one session to `servers`: the session timeout, the credentials if any (a digest auth
/// packet, or SASL), and TLS to every server if `tls` is given.
async fn connect(
    session_timeout: Duration,
    auth: Option<&ZkAuth>,
    tls: Option<&ZkTls>,
    servers: &str,
) -> Result<Client, ZooKeeperError> {
    let connector = Client::connector().with_session_timeout(session_timeout);
    let connector: Connector = match auth {
        Some(auth) => auth.apply(connector),
        None => connector,
    };
    match tls {
        Some(tls) => connector.with_tls(tls.options()?).secure_connect(servers).await,
        None => connector.connect(servers).await,
    }
}

fn validate_group(group: &str) -> Result<()> {
    layout::validate_group(group).map_err(|reason| Error::InvalidGroup { group: group.to_owned(), reason })
}

fn validate_topic(topic: &str) -> Result<()> {
    layout::validate_topic(topic).map_err(|reason| Error::InvalidTopic { topic: topic.to_owned(), reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_reply_to_a_create_is_resolved_by_the_node() {
        assert_eq!(resolve_unsure(None, b"42", None), Unsure::NotApplied);
        assert_eq!(resolve_unsure(None, b"42", Some(&(b"42".to_vec(), 0))), Unsure::Applied(0));
        // Someone else created it, with another value or already updated it.
        assert_eq!(resolve_unsure(None, b"42", Some(&(b"41".to_vec(), 0))), Unsure::Conflict);
        assert_eq!(resolve_unsure(None, b"42", Some(&(b"42".to_vec(), 1))), Unsure::Conflict);
    }

    #[test]
    fn a_lost_reply_to_a_set_is_resolved_by_version_and_value() {
        assert_eq!(resolve_unsure(Some(4), b"42", Some(&(b"40".to_vec(), 4))), Unsure::NotApplied);
        assert_eq!(resolve_unsure(Some(4), b"42", Some(&(b"42".to_vec(), 5))), Unsure::Applied(5));
        assert_eq!(resolve_unsure(Some(4), b"42", Some(&(b"43".to_vec(), 5))), Unsure::Conflict);
        assert_eq!(resolve_unsure(Some(4), b"42", Some(&(b"42".to_vec(), 6))), Unsure::Conflict);
        // Deleted by someone.
        assert_eq!(resolve_unsure(Some(4), b"42", None), Unsure::Conflict);
    }

    #[test]
    fn retriability_is_decided_by_the_error_kind() {
        assert_eq!(recovery(&ZooKeeperError::ConnectionLoss), Recovery::Retry);
        assert_eq!(recovery(&ZooKeeperError::Throttled), Recovery::Retry);
        assert_eq!(recovery(&ZooKeeperError::SessionExpired), Recovery::Reconnect);
        assert_eq!(recovery(&ZooKeeperError::ClientClosed), Recovery::Reconnect);
        assert_eq!(recovery(&ZooKeeperError::NoAuth), Recovery::Fatal);
        assert_eq!(recovery(&ZooKeeperError::BadVersion), Recovery::Fatal);
    }

    #[test]
    fn an_unbounded_budget_does_not_overflow() {
        assert!(deadline_after(Duration::MAX) > Instant::now() + Duration::from_secs(86_400));
    }

    #[test]
    fn versions_after_a_write() {
        assert_eq!(version_after(None), 0);
        assert_eq!(version_after(Some(0)), 1);
        assert_eq!(version_after(Some(i32::MAX)), i32::MIN);
    }
}
