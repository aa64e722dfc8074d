//! [`Client`]: connections to every broker of one cluster, negotiated per broker, with a
//! metadata cache to route by.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use crate::cluster::client_config::ClientConfig;
use crate::cluster::metadata::{AuthorizedOperations, ClusterMetadata};
use crate::cluster::sasl::{exchange, renewal_time};
use crate::error::{BrokerRef, ClientError};
use crate::net::connection::{Connection, Lane, PendingResponse};
use crate::net::negotiate::BrokerVersions;
use crate::net::trace::{Direction, TraceEvent};
use crate::net::transport::Transport;
use crate::sync::lock;
use kafka_wire::protocol::frame::{decode_response, encode_request_frame};
use kafka_wire::protocol::messages::{
    api_versions, sasl_authenticate, sasl_handshake, ApiVersionsRequest, MetadataRequest,
    SaslHandshakeRequest,
};
use kafka_wire::protocol::names::validate_topics;
use kafka_wire::protocol::request_frame::RequestFrame;
use kafka_wire::protocol::{Body, ErrorCode, Request, Throttled as _};

/// A negotiated connection: the socket plus what the broker said it supports.
#[derive(Debug)]
pub(crate) struct BrokerConnection {
    /// The socket and its in-flight requests.
    pub connection: Connection,
    /// What the broker answered to ApiVersions (or the legacy table).
    pub versions: BrokerVersions,
    /// When the SASL session must be renewed (KIP-368 session lifetime): the first request
    /// from then on re-authenticates this connection in place (see [`renewal`]).
    pub renew_at: StdMutex<Option<std::time::Instant>>,
}

/// Closes a connection whose re-authentication was dropped before it settled: its parked
/// requests must not wait for a renewal nobody finishes.
struct AbandonedRenewal<'a> {
    connection: &'a Connection,
    settled: bool,
}

impl Drop for AbandonedRenewal<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.connection.fail(ClientError::ConnectionClosed {
                broker: self.connection.broker().clone(),
                reason: "its SASL re-authentication was interrupted".to_owned(),
            });
        }
    }
}

/// What to do with a slot's connection before a request uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Renewal {
    /// Use it as it is.
    Use,
    /// Its SASL session is due for renewal: re-authenticate it in place first (KIP-368), on
    /// the same socket, keeping its fetch session and the requests in flight.
    Reauthenticate,
    /// It no longer takes requests (it died or was retired): open a new one.
    Reopen,
}

/// The connection map's key of member `member`'s connection to `addr`.
fn member_socket_key(addr: &str, member: u64) -> String {
    format!("{addr} (group member {member})")
}

/// Which connection to a broker a request goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Socket {
    /// The one every request shares.
    Shared,
    /// The one a group member's offset commits go on: a broker answers a connection's
    /// requests one at a time in order, so on the shared one a commit would wait behind a
    /// Fetch the broker holds for `fetch.max.wait.ms` (a consumer at the end of its partitions:
    /// every commit, and the one at close, took up to that much longer). Not the member's own
    /// connection either, where a JoinGroup the coordinator holds would hold it up.
    Commits,
    /// A group member's own, to its coordinator, as the Java consumer keeps one: a broker
    /// answers a connection's requests one at a time in order, so a JoinGroup the coordinator
    /// holds until the rebalance completes would otherwise hold up fetches and commits to that
    /// broker — or another member's heartbeats, when several members share the client (hence
    /// one per member, by the number [`Client::new_member_socket`] gave it).
    GroupMember(u64),
}

/// The decision for a connection that is `closed` or not, whose session is to be renewed at
/// `renew_at` (`None`: never), at `now`. A session the broker already let expire is still
/// renewed in place: Kafka brokers take a SaslHandshake on an expired session and close the
/// connection only on any other request.
pub(crate) fn renewal(
    closed: bool,
    renew_at: Option<std::time::Instant>,
    now: std::time::Instant,
) -> Renewal {
    if closed {
        Renewal::Reopen
    } else if renew_at.is_some_and(|at| now >= at) {
        Renewal::Reauthenticate
    } else {
        Renewal::Use
    }
}

type ConnectionSlot = Arc<Mutex<Option<Arc<BrokerConnection>>>>;

/// A client for one cluster. Cheap to share (`Arc`), safe to use from many tasks.
///
/// Each call goes where Kafka wants it: partition calls to each partition's leader (from the
/// metadata cache, refreshed when a leader moved), group calls to the group's coordinator, admin
/// calls to the controller. Connections are opened on first use, one per broker, and shared by
/// all calls; each broker's API versions are negotiated once per connection.
///
/// ```no_run
/// use std::time::Duration;
/// use kafka_client::{Client, ClientConfig, Isolation, OffsetQuery, TopicPartition};
///
/// # async fn run() -> Result<(), kafka_client::ClientError> {
/// let client = Client::connect(ClientConfig::new("127.0.0.1:9092,127.0.0.1:9093")?).await?;
/// let partitions = [TopicPartition::new("orders", 0), TopicPartition::new("orders", 1)];
/// let latest = client
///     .list_offsets(&partitions, OffsetQuery::Latest, Isolation::ReadCommitted, Duration::from_secs(10))
///     .await;
/// for (tp, answer) in &latest {
///     match answer {
///         // `offset` is the next offset to be written: one past the last stable record.
///         Ok(listed) => println!("{tp}: {:?}", listed.offset),
///         Err(e) => eprintln!("{tp}: {e}"),
///     }
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Client {
    config: ClientConfig,
    /// TCP or TLS, with the TLS settings loaded once.
    transport: Transport,
    /// One slot per address holding its live connection. The map lock is held only to find
    /// the slot; opening a connection locks just that address's slot, so a broker that is slow
    /// to connect or answer ApiVersions does not hold up requests to the others.
    connections: StdMutex<HashMap<String, ConnectionSlot>>,
    /// Numbers the group members' own connections ([`Socket::GroupMember`]).
    member_sockets: std::sync::atomic::AtomicU64,
    metadata: StdMutex<Option<Arc<ClusterMetadata>>>,
    generation: AtomicU64,
    /// Requests sent per address, over all connections ever opened to it.
    requests: StdMutex<HashMap<String, u64>>,
    /// Group coordinators found so far, by group id.
    coordinators: StdMutex<HashMap<String, BrokerRef>>,
    /// Per address: until when the broker asked us to hold back (KIP-219 throttling).
    throttled_until: StdMutex<HashMap<String, std::time::Instant>>,
    /// Milliseconds spent waiting out broker throttles, over all brokers.
    throttle_waited_ms: AtomicU64,
    /// Incremental fetch sessions (KIP-227) by broker address; taken out while a Fetch to that
    /// broker is in flight, so two concurrent fetches never share an epoch.
    fetch_sessions: StdMutex<HashMap<String, crate::cluster::fetch_session::FetchSession>>,
    /// The preferred read replicas leaders named (KIP-392), kept across fetch calls as the Java
    /// consumer keeps them across polls.
    read_replicas: StdMutex<crate::cluster::read_replica::ReadReplicas>,
    /// Broker connections opened (TCP, and TLS), over all brokers.
    connections_opened: AtomicU64,
    /// In-place SASL re-authentications that succeeded, over all connections.
    reauthentications: AtomicU64,
    /// Re-authentications the broker left unanswered, whose connection was replaced.
    reauthentications_abandoned: AtomicU64,
}

impl Client {
    /// Connects to the first reachable bootstrap address (skipping dead ones) and negotiates.
    ///
    /// With TLS, the CA bundle and client certificate are read now: a bad file fails here with
    /// [`ClientError::SecurityConfig`]. Security failures (TLS, SASL) are returned at once,
    /// never retried on the next bootstrap address.
    pub async fn connect(config: ClientConfig) -> Result<Self, ClientError> {
        let transport = Transport::new(config.security_protocol, &config.tls)?;
        let client = Self {
            config,
            transport,
            connections: StdMutex::default(),
            member_sockets: std::sync::atomic::AtomicU64::new(0),
            metadata: StdMutex::default(),
            generation: AtomicU64::new(0),
            requests: StdMutex::default(),
            coordinators: StdMutex::default(),
            throttled_until: StdMutex::default(),
            throttle_waited_ms: AtomicU64::new(0),
            fetch_sessions: StdMutex::default(),
            read_replicas: StdMutex::default(),
            connections_opened: AtomicU64::new(0),
            reauthentications: AtomicU64::new(0),
            reauthentications_abandoned: AtomicU64::new(0),
        };
        client.any_bootstrap_connection().await?;
        Ok(client)
    }

    /// The configuration this client was connected with.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    pub(crate) fn cached_coordinator(&self, group: &str) -> Option<BrokerRef> {
        lock(&self.coordinators).get(group).cloned()
    }

    pub(crate) fn remember_coordinator(&self, group: &str, broker: BrokerRef) {
        lock(&self.coordinators).insert(group.to_owned(), broker);
    }

    /// Drops the cached coordinator of `group`, so the next call finds it again.
    pub fn forget_coordinator(&self, group: &str) {
        lock(&self.coordinators).remove(group);
    }

    /// Milliseconds this client has spent holding back because brokers throttled it.
    pub fn throttle_waited_ms(&self) -> u64 {
        self.throttle_waited_ms.load(Ordering::Relaxed)
    }

    /// Records a broker's request to hold back for `throttle_ms` before the next request.
    fn note_throttle(&self, addr: &str, throttle_ms: i32) {
        if throttle_ms <= 0 {
            return;
        }
        let until =
            std::time::Instant::now() + Duration::from_millis(u64::try_from(throttle_ms).unwrap_or(0));
        let mut map = lock(&self.throttled_until);
        let entry = map.entry(addr.to_owned()).or_insert(until);
        *entry = (*entry).max(until);
    }

    /// Waits until the broker at `addr` no longer asks us to hold back, as Kafka's clients do
    /// (KIP-219: from the throttled response on, the broker mutes the connection anyway).
    pub(crate) async fn wait_out_throttle(&self, addr: &str) {
        let until = lock(&self.throttled_until).get(addr).copied();
        if let Some(until) = until {
            let now = std::time::Instant::now();
            if until > now {
                let wait = until - now;
                self.throttle_waited_ms
                    .fetch_add(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX), Ordering::Relaxed);
                tokio::time::sleep(wait).await;
            }
        }
    }

    /// Broker connections this client opened so far (TCP, with its TLS handshake and SASL
    /// authentication), over all brokers: for tests and diagnostics.
    pub fn connections_opened(&self) -> u64 {
        self.connections_opened.load(Ordering::Relaxed)
    }

    /// SASL sessions this client renewed in place on a live connection (KIP-368) so far.
    pub fn reauthentications(&self) -> u64 {
        self.reauthentications.load(Ordering::Relaxed)
    }

    /// Re-authentications a broker left unanswered within the connect timeout, whose connection
    /// was replaced by a freshly authenticated one (each is one more in
    /// [`connections_opened`](Self::connections_opened)).
    pub fn reauthentications_abandoned(&self) -> u64 {
        self.reauthentications_abandoned.load(Ordering::Relaxed)
    }

    /// Requests sent to `addr` so far (for tests and diagnostics).
    pub fn requests_sent_to(&self, addr: &str) -> u64 {
        lock(&self.requests).get(addr).copied().unwrap_or(0)
    }

    async fn any_bootstrap_connection(&self) -> Result<Arc<BrokerConnection>, ClientError> {
        let mut attempts = Vec::new();
        for addr in &self.config.bootstrap {
            let broker = BrokerRef { node_id: None, addr: addr.clone() };
            match self.connection(&broker).await {
                Ok(conn) => return Ok(conn),
                // The next address would refuse the same settings the same way.
                Err(e) if e.is_security() => return Err(e),
                Err(e) => attempts.push((addr.clone(), e.to_string())),
            }
        }
        Err(ClientError::NoBrokerReachable { attempts })
    }

    /// The live connection to `broker`, opening and negotiating a new one if there is none or
    /// the old one died.
    pub(crate) async fn connection(&self, broker: &BrokerRef) -> Result<Arc<BrokerConnection>, ClientError> {
        self.connection_on(broker, Socket::Shared).await
    }

    /// The live connection of kind `socket` to `broker` (see [`Socket`]).
    pub(crate) async fn connection_on(
        &self,
        broker: &BrokerRef,
        socket: Socket,
    ) -> Result<Arc<BrokerConnection>, ClientError> {
        let key = match socket {
            Socket::Shared => broker.addr.clone(),
            Socket::Commits => format!("{} (commits)", broker.addr),
            Socket::GroupMember(member) => member_socket_key(&broker.addr, member),
        };
        let slot = Arc::clone(lock(&self.connections).entry(key).or_default());
        let mut slot = slot.lock().await;
        if let Some(conn) = slot.as_ref() {
            let renew_at = *lock(&conn.renew_at);
            match renewal(conn.connection.is_closed(), renew_at, std::time::Instant::now()) {
                Renewal::Use => return Ok(Arc::clone(conn)),
                // The slot stays locked meanwhile: no one opens a second connection.
                Renewal::Reauthenticate => {
                    if self.reauthenticate(conn).await? {
                        return Ok(Arc::clone(conn));
                    }
                }
                Renewal::Reopen => {}
            }
        }
        *slot = None;
        let conn = Arc::new(self.open(broker).await?);
        *slot = Some(Arc::clone(&conn));
        Ok(conn)
    }

    /// Opens, negotiates and (with SASL) authenticates a connection to `broker`.
    async fn open(&self, broker: &BrokerRef) -> Result<BrokerConnection, ClientError> {
        let (connection, versions) = self.open_negotiated(broker).await?;
        self.connections_opened.fetch_add(1, Ordering::Relaxed);
        let renew_at = if self.config.security_protocol.uses_sasl() {
            self.authenticate(&connection, &versions).await?
        } else {
            None
        };
        Ok(BrokerConnection { connection, versions, renew_at: StdMutex::new(renew_at) })
    }

    /// Renews `conn`'s SASL session on the same socket (KIP-368), as Kafka's Java client does:
    /// SaslHandshake and SaslAuthenticate again, while other callers' requests wait their turn
    /// (see [`Connection::begin_reauthentication`]). A refusal closes the connection and is
    /// returned as the authentication error it is; kwire does not reconnect around it.
    ///
    /// A broker that does not answer the renewal within the connect timeout (seen now and then
    /// on Kafka 4.1: the last SaslAuthenticate of a renewal left unanswered) gets `Ok(false)`:
    /// the connection is closed, the requests parked on it fail with a retriable error, and the
    /// caller opens a freshly authenticated one. Cancel-safe: dropped half-way, the connection
    /// is closed rather than left holding requests back.
    async fn reauthenticate(&self, conn: &BrokerConnection) -> Result<bool, ClientError> {
        conn.connection.begin_reauthentication()?;
        let mut guard = AbandonedRenewal { connection: &conn.connection, settled: false };
        let timeout = self.config.connect_timeout;
        let outcome =
            tokio::time::timeout(timeout, self.authenticate(&conn.connection, &conn.versions)).await;
        guard.settled = true;
        match outcome {
            Ok(Ok(renew_at)) => {
                *lock(&conn.renew_at) = renew_at;
                conn.connection.end_reauthentication();
                self.reauthentications.fetch_add(1, Ordering::Relaxed);
                Ok(true)
            }
            Ok(Err(e)) => {
                conn.connection.fail(e.clone());
                Err(e)
            }
            Err(_) => {
                self.reauthentications_abandoned.fetch_add(1, Ordering::Relaxed);
                conn.connection.fail(ClientError::ConnectionClosed {
                    broker: conn.connection.broker().clone(),
                    reason: format!("no answer to the SASL re-authentication within {timeout:?}"),
                });
                Ok(false)
            }
        }
    }

    async fn open_negotiated(&self, broker: &BrokerRef) -> Result<(Connection, BrokerVersions), ClientError> {
        let mapped = self
            .config
            .address_map
            .get(&broker.addr)
            .map(|addr| BrokerRef { node_id: broker.node_id, addr: addr.clone() });
        let broker = mapped.as_ref().unwrap_or(broker);
        let (timeout, max_frame) = (self.config.connect_timeout, self.config.max_frame);
        let connection = Connection::open(broker.clone(), &self.transport, timeout, max_frame).await?;
        match self.negotiate(&connection).await {
            Ok(versions) => Ok((connection, versions)),
            // Brokers before 0.10.0 close the socket on ApiVersions without a byte: reconnect
            // with the fixed table. A peer that sent something and then closed (or sent garbage)
            // is not such a broker, and its error is returned. Over TLS the broker is new enough.
            Err(ClientError::ConnectionClosed { .. })
                if connection.bytes_received() == 0 && !self.config.security_protocol.uses_tls() =>
            {
                let connection =
                    Connection::open(broker.clone(), &self.transport, timeout, max_frame).await?;
                Ok((connection, BrokerVersions::legacy_0_9()))
            }
            Err(ClientError::InvalidFrame { broker, reason })
                if !self.config.security_protocol.uses_tls() =>
            {
                Err(ClientError::InvalidFrame {
                    broker,
                    reason: format!(
                        "{reason}, in reply to ApiVersions: is this a TLS listener (security.protocol=SSL \
                         or SASL_SSL), or not Kafka at all?"
                    ),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// ApiVersions at kwire's highest version; a broker that does not know it answers
    /// UNSUPPORTED_VERSION in the v0 layout with its own range, and kwire retries at that.
    async fn negotiate(&self, connection: &Connection) -> Result<BrokerVersions, ClientError> {
        let request = ApiVersionsRequest {
            client_software_name: Some("kwire".to_owned()),
            client_software_version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            ..Default::default()
        };
        let mut version = api_versions::SPEC.versions.max;
        for _ in 0..2 {
            let response = match self.round_trip(connection, &request, version).await {
                Ok(response) => response,
                // The UNSUPPORTED_VERSION answer is a v0 body, whatever version was asked.
                Err(ClientError::Decode { .. }) if version > 0 => {
                    self.round_trip(connection, &request, 0).await?
                }
                Err(e) => return Err(e),
            };
            if response.error_code == ErrorCode::UNSUPPORTED_VERSION {
                let theirs = response.range_of(api_versions::SPEC.key);
                match theirs.and_then(|t| api_versions::SPEC.versions.highest_common(t)) {
                    Some(v) if v != version => {
                        version = v;
                        continue;
                    }
                    _ => version = 0,
                }
                continue;
            }
            if !response.error_code.is_ok() {
                return Err(ClientError::Kafka {
                    broker: connection.broker().clone(),
                    api: api_versions::SPEC.key,
                    code: response.error_code,
                    context: String::new(),
                });
            }
            return Ok(BrokerVersions::from_response(&response));
        }
        Err(ClientError::Protocol {
            broker: connection.broker().clone(),
            message: "ApiVersions negotiation did not converge".to_owned(),
        })
    }

    /// Encodes a request frame, shows it to the trace hook and counts it against `broker`:
    /// what every request goes through before it is written, with or without a response.
    fn outgoing_frame<R: Request + std::fmt::Debug>(
        &self,
        broker: &BrokerRef,
        request: &R,
        version: i16,
        correlation_id: i32,
    ) -> Result<RequestFrame, ClientError> {
        let api = R::SPEC.key;
        let frame = encode_request_frame(request, version, correlation_id, Some(&self.config.client_id))
            .map_err(|source| ClientError::Encode { api, version, source })?;
        if let Some(trace) = &self.config.trace {
            trace(&TraceEvent {
                direction: Direction::Request,
                broker: &broker.addr,
                api,
                version,
                correlation_id,
                frame: &frame.to_vec(),
                decoded: request,
            });
        }
        *lock(&self.requests).entry(broker.addr.clone()).or_default() += 1;
        Ok(frame)
    }

    /// Sends one request on one connection at an explicit version and decodes the response.
    pub(crate) async fn round_trip<R: Request + std::fmt::Debug>(
        &self,
        connection: &Connection,
        request: &R,
        version: i16,
    ) -> Result<R::Response, ClientError>
    where
        R::Response: std::fmt::Debug,
    {
        self.wait_out_throttle(&connection.broker().addr).await;
        let pending = self.submit_on(connection, request, version)?;
        self.finish::<R>(connection.broker(), version, pending).await
    }

    /// A SaslHandshake round trip of a connection's (re-)authentication: written even while
    /// the connection holds other requests back for it.
    pub(crate) async fn authentication_round_trip<R: Request + std::fmt::Debug>(
        &self,
        connection: &Connection,
        request: &R,
        version: i16,
    ) -> Result<R::Response, ClientError>
    where
        R::Response: std::fmt::Debug,
    {
        let broker = connection.broker();
        let pending = connection.submit_in(Lane::Authentication, R::SPEC.key, |correlation_id| {
            self.outgoing_frame(broker, request, version, correlation_id)
        })?;
        self.finish::<R>(broker, version, pending).await
    }

    /// Queues `request` on `connection` before returning (see [`Connection::submit`]): the
    /// producer's way of keeping several requests to one broker in the order it built them.
    /// Does not wait out a throttle; callers do that first.
    pub(crate) fn submit_on<R: Request + std::fmt::Debug>(
        &self,
        connection: &Connection,
        request: &R,
        version: i16,
    ) -> Result<PendingResponse, ClientError> {
        let broker = connection.broker();
        connection.submit(R::SPEC.key, |correlation_id| {
            self.outgoing_frame(broker, request, version, correlation_id)
        })
    }

    /// Waits for a submitted request's response and decodes it at `version`, tracing it and
    /// noting any throttle the broker asked for.
    pub(crate) async fn finish<R: Request>(
        &self,
        broker: &BrokerRef,
        version: i16,
        pending: PendingResponse,
    ) -> Result<R::Response, ClientError>
    where
        R::Response: std::fmt::Debug,
    {
        self.finish_within::<R>(broker, version, pending, self.config.request_timeout).await
    }

    /// [`finish`](Self::finish), waiting up to `wait` for the response instead of the request
    /// timeout (a JoinGroup the coordinator holds until the rebalance completes).
    pub(crate) async fn finish_within<R: Request>(
        &self,
        broker: &BrokerRef,
        version: i16,
        pending: PendingResponse,
        wait: Duration,
    ) -> Result<R::Response, ClientError>
    where
        R::Response: std::fmt::Debug,
    {
        let api = R::SPEC.key;
        let response = pending.wait(wait).await?;
        let (correlation_id, response_frame) = (response.correlation_id, response.frame);
        let decoded = decode_response::<R>(response_frame.clone(), version);
        if let Some(trace) = &self.config.trace {
            let shown: &dyn std::fmt::Debug = match &decoded {
                Ok((_, body)) => body,
                Err(e) => e,
            };
            trace(&TraceEvent {
                direction: Direction::Response,
                broker: &broker.addr,
                api,
                version,
                correlation_id,
                frame: &response_frame,
                decoded: shown,
            });
        }
        if let Ok((_, body)) = &decoded {
            self.note_throttle(&broker.addr, body.throttle_time_ms());
        }
        decoded.map(|(_, body)| body).map_err(|source| ClientError::Decode {
            broker: broker.clone(),
            api,
            version,
            source,
        })
    }

    /// Sends `request` to `broker` at the highest version both sides know. Returns the version
    /// used with the response, since response fields depend on it.
    pub async fn send<R: Request + std::fmt::Debug>(
        &self,
        broker: &BrokerRef,
        request: &R,
    ) -> Result<(i16, R::Response), ClientError>
    where
        R::Response: std::fmt::Debug,
    {
        let conn = self.connection(broker).await?;
        let version = conn.versions.choose(&R::SPEC, broker)?;
        let response = self.round_trip(&conn.connection, request, version).await;
        Ok((version, retire_on_decode_error(&conn, response)?))
    }

    /// Takes `addr`'s fetch session out (a new, empty one when there is none or another
    /// fetch to that broker holds it); give it back with [`Client::put_fetch_session`].
    pub(crate) fn take_fetch_session(&self, addr: &str) -> crate::cluster::fetch_session::FetchSession {
        lock(&self.fetch_sessions).remove(addr).unwrap_or_default()
    }

    /// The preferred read replicas (KIP-392), locked for a short look-up or update.
    pub(crate) fn read_replicas(
        &self,
    ) -> std::sync::MutexGuard<'_, crate::cluster::read_replica::ReadReplicas> {
        lock(&self.read_replicas)
    }

    /// Keeps `session` for the next fetch to `addr`.
    pub(crate) fn put_fetch_session(&self, addr: &str, session: crate::cluster::fetch_session::FetchSession) {
        lock(&self.fetch_sessions).insert(addr.to_owned(), session);
    }

    /// Like [`send`](Self::send), for requests whose shape depends on the version (batched
    /// forms, fields that moved): `build` gets the negotiated version.
    pub async fn send_built<R: Request + std::fmt::Debug>(
        &self,
        broker: &BrokerRef,
        build: impl FnOnce(i16) -> R,
    ) -> Result<(i16, R::Response), ClientError>
    where
        R::Response: std::fmt::Debug,
    {
        self.send_built_on(broker, Socket::Shared, build).await
    }

    /// [`send_built`](Self::send_built) on the connection of kind `socket` (see [`Socket`]).
    pub(crate) async fn send_built_on<R: Request + std::fmt::Debug>(
        &self,
        broker: &BrokerRef,
        socket: Socket,
        build: impl FnOnce(i16) -> R,
    ) -> Result<(i16, R::Response), ClientError>
    where
        R::Response: std::fmt::Debug,
    {
        let conn = self.connection_on(broker, socket).await?;
        let version = conn.versions.choose(&R::SPEC, broker)?;
        let request = build(version);
        let response = self.round_trip(&conn.connection, &request, version).await;
        Ok((version, retire_on_decode_error(&conn, response)?))
    }

    /// Like [`send_built`](Self::send_built), for a request the broker does not answer
    /// (Produce with acks=0): returns the version used once the frame is written. Counted and
    /// traced like any request.
    pub async fn send_built_without_response<R: Request + std::fmt::Debug>(
        &self,
        broker: &BrokerRef,
        build: impl FnOnce(i16) -> R,
    ) -> Result<i16, ClientError> {
        let conn = self.connection(broker).await?;
        let version = conn.versions.choose(&R::SPEC, broker)?;
        let request = build(version);
        conn.connection
            .send_only(R::SPEC.key, |correlation_id| {
                self.outgoing_frame(broker, &request, version, correlation_id)
            })
            .await?;
        Ok(version)
    }

    /// Like [`send_built`](Self::send_built), on the group member's own connection to the
    /// coordinator ([`Socket::GroupMember`]), waiting up to `wait` for the answer.
    pub(crate) async fn send_as_member<R: Request + std::fmt::Debug>(
        &self,
        member: u64,
        broker: &BrokerRef,
        wait: Duration,
        build: impl FnOnce(i16) -> R,
    ) -> Result<(i16, R::Response), ClientError>
    where
        R::Response: std::fmt::Debug,
    {
        let conn = self.connection_on(broker, Socket::GroupMember(member)).await?;
        let version = conn.versions.choose(&R::SPEC, broker)?;
        let request = build(version);
        self.wait_out_throttle(&broker.addr).await;
        let pending = self.submit_on(&conn.connection, &request, version);
        let response = match pending {
            Ok(pending) => self.finish_within::<R>(broker, version, pending, wait).await,
            Err(e) => Err(e),
        };
        Ok((version, retire_on_decode_error(&conn, response)?))
    }

    /// A number for a new group member's own connections ([`Socket::GroupMember`]).
    pub(crate) fn new_member_socket(&self) -> u64 {
        self.member_sockets.fetch_add(1, Ordering::Relaxed)
    }

    /// Closes member `member`'s connections (it left its group).
    pub(crate) fn drop_member_sockets(&self, member: u64) {
        let suffix = member_socket_key("", member);
        lock(&self.connections).retain(|key, _| !key.ends_with(&suffix));
    }

    /// Sends `request` to any reachable broker (known brokers first, then bootstrap).
    pub async fn send_any<R: Request + std::fmt::Debug + Clone>(
        &self,
        request: &R,
    ) -> Result<(i16, R::Response), ClientError>
    where
        R::Response: std::fmt::Debug,
    {
        self.send_any_built(|_| request.clone()).await
    }

    /// Like [`send_any`](Self::send_any) for requests built from the negotiated version.
    pub async fn send_any_built<R: Request + std::fmt::Debug>(
        &self,
        build: impl Fn(i16) -> R,
    ) -> Result<(i16, R::Response), ClientError>
    where
        R::Response: std::fmt::Debug,
    {
        let mut candidates: Vec<BrokerRef> = self
            .cached_metadata()
            .map(|m| {
                m.brokers.iter().map(|b| BrokerRef { node_id: Some(b.node_id), addr: b.addr() }).collect()
            })
            .unwrap_or_default();
        candidates.extend(self.config.bootstrap.iter().map(|a| BrokerRef { node_id: None, addr: a.clone() }));
        let mut attempts = Vec::new();
        for broker in candidates {
            match self.send_built(&broker, &build).await {
                Ok(out) => return Ok(out),
                // A broker that is down, slow, or not speaking Kafka: ask the next one.
                Err(e) if e.is_retriable() || matches!(e, ClientError::InvalidFrame { .. }) => {
                    attempts.push((broker.addr.clone(), e.to_string()));
                }
                Err(e) => return Err(e),
            }
        }
        Err(ClientError::NoBrokerReachable { attempts })
    }

    /// The last metadata snapshot, if any was fetched.
    pub fn cached_metadata(&self) -> Option<Arc<ClusterMetadata>> {
        lock(&self.metadata).clone()
    }

    /// Fetches metadata for `topics` (all topics when empty) and returns it. The cached snapshot
    /// becomes the answer plus, when only some topics were asked, the cached topics it does not
    /// mention (a producer's answers name topics by the ids cached for them, while other tasks
    /// refresh other topics on the same client). A name breaking Kafka's rules is refused
    /// before anything is sent. Asked of any reachable broker, as [`send_any`](Self::send_any)
    /// picks; a named topic that does not exist is in the answer with
    /// `UNKNOWN_TOPIC_OR_PARTITION` as its [`error`](crate::TopicInfo::error), not an `Err`.
    pub async fn refresh_metadata(&self, topics: &[String]) -> Result<Arc<ClusterMetadata>, ClientError> {
        validate_topics(topics.iter().map(String::as_str))?;
        let request = MetadataRequest::for_topics(topics);
        let (_, response) = self.send_any(&request).await?;
        if let Some(code) = response.error_code.filter(|c| !c.is_ok()) {
            return Err(ClientError::Kafka {
                broker: BrokerRef { node_id: None, addr: "cluster".to_owned() },
                api: MetadataRequest::SPEC.key,
                code,
                context: String::new(),
            });
        }
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let snapshot = Arc::new(ClusterMetadata::from_response(response, generation));
        let mut cached = lock(&self.metadata);
        // Every topic asked (an empty list): the answer is the whole cluster.
        let kept = cached
            .as_ref()
            .filter(|_| !topics.is_empty())
            .map(|older| Arc::new(snapshot.keeping_topics_of(older)));
        *cached = Some(kept.unwrap_or_else(|| Arc::clone(&snapshot)));
        drop(cached);
        Ok(snapshot)
    }

    /// [`refresh_metadata`](Self::refresh_metadata), asked again (with backoff) while one of
    /// `topics` [may still be propagating](ClusterMetadata::topic_maybe_propagating), until
    /// `propagation` has passed; then the last answer, whatever it says. For a writer of a topic
    /// that may have just been created: librdkafka waits the same way
    /// (`topic.metadata.propagation.max.ms`), Java's producer up to `max.block.ms`. Errors of
    /// the refresh itself return at once.
    pub async fn refresh_metadata_awaiting_topics(
        &self,
        topics: &[String],
        propagation: Duration,
    ) -> Result<Arc<ClusterMetadata>, ClientError> {
        let deadline = crate::deadline::deadline_after(propagation);
        let mut backoff =
            crate::cluster::retry::Backoff::new(Duration::from_millis(50), Duration::from_secs(1), deadline);
        loop {
            let metadata = self.refresh_metadata(topics).await?;
            if !topics.iter().any(|t| metadata.topic_maybe_propagating(t)) {
                return Ok(metadata);
            }
            match backoff.next_wait() {
                Some(wait) => tokio::time::sleep(wait).await,
                None => return Ok(metadata),
            }
        }
    }

    /// What the ACLs let this principal do on each of `topics` (KIP-430: Metadata v8+ with
    /// `include_topic_authorized_operations`); `None` for a topic the broker says nothing about
    /// (a broker before Kafka 2.3, a topic it refused or does not have). The cached snapshot is
    /// not replaced.
    pub async fn topic_authorized_operations(
        &self,
        topics: &[String],
    ) -> Result<std::collections::BTreeMap<String, Option<AuthorizedOperations>>, ClientError> {
        validate_topics(topics.iter().map(String::as_str))?;
        let mut request = MetadataRequest::for_topics(topics);
        request.include_topic_authorized_operations = Some(true);
        let (_, response) = self.send_any(&request).await?;
        let mut out: std::collections::BTreeMap<String, Option<AuthorizedOperations>> =
            topics.iter().map(|t| (t.clone(), None)).collect();
        for t in response.topics {
            let Some(name) = t.name else { continue };
            // i32::MIN: the broker was not asked, or does not say.
            let operations = t.topic_authorized_operations.filter(|o| *o != i32::MIN && t.error_code.is_ok());
            if let Some(slot) = out.get_mut(&name) {
                *slot = operations.map(AuthorizedOperations);
            }
        }
        Ok(out)
    }

    /// What each broker of the cluster supports, by asking each one (brokers can differ in a
    /// cluster being upgraded). A broker that cannot be reached gets its error.
    pub async fn broker_versions(
        &self,
    ) -> Result<Vec<(BrokerRef, Result<BrokerVersions, ClientError>)>, ClientError> {
        let metadata = self.refresh_metadata(&[]).await?;
        let mut out = Vec::with_capacity(metadata.brokers.len());
        for b in &metadata.brokers {
            let broker = BrokerRef { node_id: Some(b.node_id), addr: b.addr() };
            let versions = self.connection(&broker).await.map(|c| c.versions.clone());
            out.push((broker, versions));
        }
        Ok(out)
    }
}

/// A response that did not decode means kwire and the broker no longer agree on what the
/// bytes on this connection are; the connection is retired so the next request opens a new
/// one (requests already in flight on it still complete).
pub(crate) fn retire_on_decode_error<T>(
    conn: &BrokerConnection,
    response: Result<T, ClientError>,
) -> Result<T, ClientError> {
    if let Err(ClientError::Decode { .. }) = &response {
        conn.connection.retire();
    }
    response
}

// The SASL handshake of a connection the pool opens (the token exchange is `sasl.rs`'s).
impl Client {
    /// Authenticates `connection` with the configured SASL settings. Returns when the session
    /// must be renewed (`None`: never). A refusal is [`ClientError::Authentication`] or
    /// [`ClientError::SaslMechanismNotEnabled`], never retried.
    pub(crate) async fn authenticate(
        &self,
        connection: &Connection,
        versions: &BrokerVersions,
    ) -> Result<Option<Instant>, ClientError> {
        let sasl = self.config().sasl.as_ref().ok_or_else(|| ClientError::SecurityConfig {
            message: format!(
                "security.protocol={} needs sasl.mechanism and credentials (sasl.jaas.config, or \
                 sasl.username and sasl.password)",
                self.config().security_protocol
            ),
        })?;
        let broker = connection.broker();
        let handshake_version = versions.choose(&sasl_handshake::SPEC, broker)?;
        if handshake_version < 1 {
            return Err(ClientError::NotSupported {
                broker: broker.clone(),
                feature: "SASL with framed SaslAuthenticate".to_owned(),
                needs: "1.0",
            });
        }
        let authenticate_version = versions.choose(&sasl_authenticate::SPEC, broker)?;
        let started = Instant::now();
        let handshake = SaslHandshakeRequest { mechanism: sasl.mechanism.name().to_owned() };
        let response = self.authentication_round_trip(connection, &handshake, handshake_version).await?;
        if response.error_code == ErrorCode::UNSUPPORTED_SASL_MECHANISM {
            return Err(ClientError::SaslMechanismNotEnabled {
                broker: broker.clone(),
                mechanism: sasl.mechanism.name(),
                enabled: response.mechanisms,
            });
        }
        if response.error_code == ErrorCode::ILLEGAL_SASL_STATE {
            return Err(ClientError::Authentication {
                broker: broker.clone(),
                mechanism: sasl.mechanism.name(),
                user: sasl.username.clone(),
                message: "this listener does not take SASL (ILLEGAL_SASL_STATE): is it a PLAINTEXT or SSL \
                          listener? (security.protocol)"
                    .to_owned(),
            });
        }
        if !response.error_code.is_ok() {
            return Err(ClientError::Kafka {
                broker: broker.clone(),
                api: sasl_handshake::SPEC.key,
                code: response.error_code,
                context: String::new(),
            });
        }
        let last = exchange(self.config(), connection, sasl, authenticate_version).await?;
        Ok(last.session_lifetime_ms.and_then(|ms| renewal_time(started, ms)))
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{renewal, Renewal};

    #[test]
    fn a_live_connection_is_reauthenticated_in_place_once_its_renewal_time_has_come() {
        let now = Instant::now();
        let later = now + Duration::from_secs(1);
        assert_eq!(renewal(false, None, now), Renewal::Use, "no session lifetime: never renewed");
        assert_eq!(renewal(false, Some(later), now), Renewal::Use);
        assert_eq!(renewal(false, Some(now), now), Renewal::Reauthenticate);
        assert_eq!(renewal(false, Some(now), later), Renewal::Reauthenticate, "even past expiry");
    }

    #[test]
    fn a_closed_connection_is_replaced_whatever_its_session() {
        let now = Instant::now();
        assert_eq!(renewal(true, None, now), Renewal::Reopen);
        assert_eq!(renewal(true, Some(now), now), Renewal::Reopen);
    }
}
