//! One pipelined connection (TCP, or TLS over TCP: see `transport.rs`) to one broker: many requests in flight, responses matched to
//! requests by correlation id.
//!
//! Two tasks own the socket's halves. The writer task takes whole frames from a queue and
//! writes each one completely, so a caller whose future is dropped (a timeout, a `select!`)
//! can never leave half a frame on a live socket: either its frame was queued whole, or
//! nothing of it was. The reader task routes each response frame to its waiter. Whichever task
//! sees the socket die moves the connection to `Closed` and fails every request in
//! flight with the cause; the caller opens a new connection on next use.
//!
//! ```text
//!            retire()                    socket error, EOF, garbage
//!   Open ─────────────▶ Retired ───────────────────────────────────▶ Closed(cause)
//!     └──────────────────────────────────────────────────────────────▶
//! ```
//!
//! Correlation ids are the connection's: it hands one to the caller's frame encoder, and no
//! two requests in flight on one connection share one.
//!
//! Re-authentication (KIP-368) happens in place: between
//! [`begin_reauthentication`](Connection::begin_reauthentication) and
//! [`end_reauthentication`](Connection::end_reauthentication) the frames other callers submit
//! are parked, in order, and only the SASL frames ([`Lane::Authentication`]) reach the socket:
//! a broker that is re-authenticating a connection refuses any other request on it. Requests
//! queued before stay ahead of the handshake; the broker answers them first.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::sync::{mpsc, oneshot};

use crate::error::{BrokerRef, ClientError};
use crate::net::transport::{Stream, Transport};
use crate::sync::lock;
use kafka_wire::protocol::frame::{peek_correlation_id, split_frame};
use kafka_wire::protocol::request_frame::RequestFrame;
use kafka_wire::protocol::ApiKey;

/// Where a connection is in its life.
#[derive(Debug)]
enum State {
    /// Takes new requests.
    Open,
    /// Takes no new requests (see [`Connection::retire`]); those in flight still get their
    /// responses.
    Retired,
    /// The socket is gone; new requests fail at once with this cause.
    Closed(ClientError),
}

/// Which frames a request's frame may overtake while the connection re-authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lane {
    /// An ordinary request: parked while the connection re-authenticates.
    Normal,
    /// A SaslHandshake or SaslAuthenticate frame of the connection's (re-)authentication: written
    /// at once.
    Authentication,
}

/// What both tasks and the callers share, behind one lock.
#[derive(Debug)]
struct Shared {
    state: State,
    waiters: HashMap<i32, oneshot::Sender<Result<Bytes, ClientError>>>,
    /// `Some` while the connection re-authenticates: the ordinary frames submitted meanwhile,
    /// in submission order, written when it ends.
    parked: Option<Vec<Outgoing>>,
}

impl Shared {
    /// Moves to `Closed(cause)` (keeping the first cause) and fails every waiter with it.
    fn close(&mut self, cause: ClientError) {
        let cause = match &self.state {
            State::Closed(first) => first.clone(),
            State::Open | State::Retired => cause,
        };
        for (_, waiter) in self.waiters.drain() {
            let _ = waiter.send(Err(cause.clone()));
        }
        // Parked frames are never written; their waiters just got the cause.
        self.parked = None;
        self.state = State::Closed(cause);
    }

    /// The error a new request gets, or `None` while the connection takes requests.
    fn refusal(&self, broker: &BrokerRef) -> Option<ClientError> {
        match &self.state {
            State::Open => None,
            State::Retired => Some(ClientError::ConnectionClosed {
                broker: broker.clone(),
                reason: "retired after an undecodable response".to_owned(),
            }),
            State::Closed(cause) => Some(cause.clone()),
        }
    }
}

/// A whole frame for the writer task.
#[derive(Debug)]
struct Outgoing {
    api: ApiKey,
    frame: RequestFrame,
    /// Told once the frame is on the socket (for requests nobody answers).
    written: Option<oneshot::Sender<()>>,
}

/// Why the reader stopped.
enum Stop {
    /// EOF or a read error: the connection is gone, trying again on a new one can help.
    Closed(String),
    /// The broker's bytes are not Kafka response frames (a size prefix that is negative or
    /// above the limit, a frame too short for a header).
    Invalid(String),
    /// TLS went wrong: a TLS record on a plaintext connection, or an alert from the broker
    /// after the handshake (TLS 1.3 refuses a missing client certificate only then).
    Tls(String),
}

/// Whether `bytes` start like a TLS record (alert or handshake, version 3.x): what a TLS
/// listener sends back to a client that spoke plaintext to it.
fn looks_like_tls(bytes: &[u8]) -> bool {
    matches!(bytes, [0x15 | 0x16, 0x03, 0x00..=0x04, ..])
}

/// A response frame (without its size prefix) and the correlation id its request carried.
#[derive(Debug)]
pub struct Response {
    /// The correlation id the broker echoed.
    pub correlation_id: i32,
    /// The response frame after the size prefix: header, then body.
    pub frame: Bytes,
}

/// A live connection. Cheap to share behind an `Arc`; requests may be sent concurrently.
#[derive(Debug)]
pub struct Connection {
    broker: BrokerRef,
    shared: Arc<Mutex<Shared>>,
    outgoing: mpsc::UnboundedSender<Outgoing>,
    next_correlation_id: AtomicI32,
    /// Bytes read from the broker so far: a broker that predates ApiVersions closes the
    /// connection without a byte, while one that answered something did not.
    bytes_received: Arc<AtomicU64>,
    reader: tokio::task::JoinHandle<()>,
    writer: tokio::task::JoinHandle<()>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.reader.abort();
        self.writer.abort();
    }
}

impl Connection {
    /// Opens a connection over `transport` (TCP with `TCP_NODELAY`, then the TLS handshake if
    /// any) within `timeout`.
    pub(crate) async fn open(
        broker: BrokerRef,
        transport: &Transport,
        timeout: Duration,
        max_frame: usize,
    ) -> Result<Self, ClientError> {
        let stream = transport.connect(&broker, timeout).await?;
        let (read_half, write_half) = tokio::io::split(stream);
        let shared =
            Arc::new(Mutex::new(Shared { state: State::Open, waiters: HashMap::new(), parked: None }));
        let bytes_received = Arc::new(AtomicU64::new(0));
        let (outgoing, queue) = mpsc::unbounded_channel();
        let reader = tokio::spawn(read_task(
            read_half,
            Arc::clone(&shared),
            broker.clone(),
            max_frame,
            Arc::clone(&bytes_received),
        ));
        let writer = tokio::spawn(write_task(write_half, queue, Arc::clone(&shared), broker.clone()));
        Ok(Self {
            broker,
            shared,
            outgoing,
            next_correlation_id: AtomicI32::new(1),
            bytes_received,
            reader,
            writer,
        })
    }

    /// The broker this connection is to.
    pub fn broker(&self) -> &BrokerRef {
        &self.broker
    }

    /// Whether the connection takes no new requests (it died, or was retired); such a
    /// connection is replaced on next use.
    pub fn is_closed(&self) -> bool {
        !matches!(lock(&self.shared).state, State::Open)
    }

    /// Takes the connection out of use: the client opens a new one for the next request,
    /// while requests already in flight here still get their responses. For a connection whose
    /// broker sent a response kwire could not decode: what else it sends cannot be trusted.
    pub fn retire(&self) {
        let mut shared = lock(&self.shared);
        if matches!(shared.state, State::Open) {
            shared.state = State::Retired;
        }
    }

    /// Starts an in-place re-authentication: from now until
    /// [`end_reauthentication`](Self::end_reauthentication), only [`Lane::Authentication`]
    /// frames are written; the others wait, in order. Fails with the connection's refusal if
    /// it no longer takes requests.
    pub(crate) fn begin_reauthentication(&self) -> Result<(), ClientError> {
        let mut shared = lock(&self.shared);
        if let Some(refusal) = shared.refusal(&self.broker) {
            return Err(refusal);
        }
        shared.parked.get_or_insert_with(Vec::new);
        Ok(())
    }

    /// Ends a re-authentication that succeeded: the frames parked meanwhile are written, in
    /// the order they were submitted. (One that failed closes the connection instead, see
    /// [`fail`](Self::fail).)
    pub(crate) fn end_reauthentication(&self) {
        let mut shared = lock(&self.shared);
        for outgoing in shared.parked.take().unwrap_or_default() {
            // A writer that stopped has closed the connection, failing the parked waiters.
            if self.outgoing.send(outgoing).is_err() {
                break;
            }
        }
    }

    /// Closes the connection with `cause`: every request in flight or parked fails with it.
    pub(crate) fn fail(&self, cause: ClientError) {
        lock(&self.shared).close(cause);
    }

    /// Bytes received from the broker so far.
    pub fn bytes_received(&self) -> u64 {
        self.bytes_received.load(Ordering::Relaxed)
    }

    /// A correlation id no request in flight here carries (ids wrap at `i32::MAX`, long after
    /// any request that used the same id has been answered or timed out).
    fn next_correlation_id(&self) -> i32 {
        self.next_correlation_id.fetch_add(1, Ordering::Relaxed) & i32::MAX
    }

    /// Sends one request and waits up to `timeout` for its response. `encode` gets the
    /// correlation id this connection chose and returns the whole frame (size prefix included)
    /// whose header carries it. Cancel-safe: dropping the returned future at any point leaves
    /// the connection usable. (The producer submits and waits in two steps to keep several
    /// batches in order; see [`submit`](Self::submit).)
    #[cfg(test)]
    pub async fn round_trip(
        &self,
        api: ApiKey,
        encode: impl FnOnce(i32) -> Result<RequestFrame, ClientError>,
        timeout: Duration,
    ) -> Result<Response, ClientError> {
        self.submit(api, encode)?.wait(timeout).await
    }

    /// [`round_trip`](Self::round_trip) in `lane` (see [`submit_in`](Self::submit_in)).
    pub(crate) async fn round_trip_in(
        &self,
        lane: Lane,
        api: ApiKey,
        encode: impl FnOnce(i32) -> Result<RequestFrame, ClientError>,
        timeout: Duration,
    ) -> Result<Response, ClientError> {
        self.submit_in(lane, api, encode)?.wait(timeout).await
    }

    /// Queues one request now, before returning, and hands back the wait for its response:
    /// requests submitted one after another from one task are written in that order, which is
    /// what keeps an idempotent producer's batches in sequence order with several in flight.
    /// Dropping the [`PendingResponse`] forgets the waiter; the frame is still written whole.
    pub fn submit(
        &self,
        api: ApiKey,
        encode: impl FnOnce(i32) -> Result<RequestFrame, ClientError>,
    ) -> Result<PendingResponse, ClientError> {
        self.submit_in(Lane::Normal, api, encode)
    }

    /// [`submit`](Self::submit) in `lane`: an [`Lane::Authentication`] frame is written even
    /// while the connection re-authenticates.
    pub(crate) fn submit_in(
        &self,
        lane: Lane,
        api: ApiKey,
        encode: impl FnOnce(i32) -> Result<RequestFrame, ClientError>,
    ) -> Result<PendingResponse, ClientError> {
        let correlation_id = self.next_correlation_id();
        let frame = encode(correlation_id)?;
        let (tx, rx) = oneshot::channel();
        {
            let mut shared = lock(&self.shared);
            if let Some(refusal) = shared.refusal(&self.broker) {
                return Err(refusal);
            }
            shared.waiters.insert(correlation_id, tx);
        }
        // Forgets the waiter if the response is never waited for to the end.
        let waiter = WaiterGuard { shared: Arc::clone(&self.shared), correlation_id };
        self.queue(lane, Outgoing { api, frame, written: None })?;
        Ok(PendingResponse { api, broker: self.broker.clone(), correlation_id, rx, _waiter: waiter })
    }

    /// Sends one request the broker never answers (Produce with acks=0): no waiter is
    /// registered, so nothing waits for — or leaks on — a response that will not come. Done
    /// once the whole frame is on the socket; returns the correlation id it carried.
    pub async fn send_only(
        &self,
        api: ApiKey,
        encode: impl FnOnce(i32) -> Result<RequestFrame, ClientError>,
    ) -> Result<i32, ClientError> {
        let correlation_id = self.next_correlation_id();
        let frame = encode(correlation_id)?;
        if let Some(refusal) = lock(&self.shared).refusal(&self.broker) {
            return Err(refusal);
        }
        let (tx, rx) = oneshot::channel();
        self.queue(Lane::Normal, Outgoing { api, frame, written: Some(tx) })?;
        if rx.await.is_ok() {
            return Ok(correlation_id);
        }
        Err(lock(&self.shared).refusal(&self.broker).unwrap_or_else(|| ClientError::ConnectionClosed {
            broker: self.broker.clone(),
            reason: "the connection's writer stopped".to_owned(),
        }))
    }

    /// Hands `outgoing` to the writer, or parks it while the connection re-authenticates. The
    /// lock is held while sending, so parked frames released by `end_reauthentication` keep
    /// their place ahead of later ones.
    fn queue(&self, lane: Lane, outgoing: Outgoing) -> Result<(), ClientError> {
        let mut shared = lock(&self.shared);
        if let (Lane::Normal, Some(parked)) = (lane, shared.parked.as_mut()) {
            parked.push(outgoing);
            return Ok(());
        }
        let sent = self.outgoing.send(outgoing);
        sent.map_err(|_| {
            shared.refusal(&self.broker).unwrap_or_else(|| ClientError::ConnectionClosed {
                broker: self.broker.clone(),
                reason: "the connection's writer stopped".to_owned(),
            })
        })
    }
}

/// Removes a request's waiter when its caller stops waiting, whatever the reason.
#[derive(Debug)]
struct WaiterGuard {
    shared: Arc<Mutex<Shared>>,
    correlation_id: i32,
}

impl Drop for WaiterGuard {
    fn drop(&mut self) {
        lock(&self.shared).waiters.remove(&self.correlation_id);
    }
}

/// A request already queued on its connection (see [`Connection::submit`]); `wait` for its
/// response. Owns what it needs, so it can be awaited on another task.
#[derive(Debug)]
pub struct PendingResponse {
    api: ApiKey,
    broker: BrokerRef,
    correlation_id: i32,
    rx: oneshot::Receiver<Result<Bytes, ClientError>>,
    _waiter: WaiterGuard,
}

impl PendingResponse {
    /// The response frame, or the connection's failure, or a timeout after `timeout`.
    pub async fn wait(self, timeout: Duration) -> Result<Response, ClientError> {
        let Self { api, broker, correlation_id, rx, _waiter } = self;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(result)) => result.map(|frame| Response { correlation_id, frame }),
            Ok(Err(_)) => Err(ClientError::ConnectionClosed {
                broker,
                reason: "the connection's tasks stopped".to_owned(),
            }),
            Err(_) => Err(ClientError::Timeout {
                broker,
                api,
                after_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            }),
        }
    }
}

/// Writes whole frames in queue order; frames queued while one is being written go out in one
/// flush. On a write error the connection closes with the failed request's API in the cause.
async fn write_task(
    write_half: WriteHalf<Box<dyn Stream>>,
    mut queue: mpsc::UnboundedReceiver<Outgoing>,
    shared: Arc<Mutex<Shared>>,
    broker: BrokerRef,
) {
    let mut socket = tokio::io::BufWriter::with_capacity(64 * 1024, write_half);
    let mut written = Vec::new();
    while let Some(first) = queue.recv().await {
        let mut last_api = first.api;
        let mut next = Some(first);
        let mut failed = None;
        while let Some(outgoing) = next.take() {
            last_api = outgoing.api;
            if let Err(e) = write_frame(&mut socket, &outgoing.frame).await {
                failed = Some((outgoing.api, e));
                break;
            }
            written.extend(outgoing.written);
            next = queue.try_recv().ok();
        }
        if failed.is_none() {
            if let Err(e) = socket.flush().await {
                failed = Some((last_api, e));
            }
        }
        if let Some((api, e)) = failed {
            let cause = ClientError::Io { broker: broker.clone(), api, source: Arc::new(e) };
            lock(&shared).close(cause);
            return;
        }
        for done in written.drain(..) {
            let _ = done.send(());
        }
    }
}

/// Writes a frame's segments in order: a spliced batch at least as large as the buffer goes
/// from its own memory to the socket (tokio's `BufWriter` writes it through), no copy.
async fn write_frame<W: AsyncWrite + Unpin>(socket: &mut W, frame: &RequestFrame) -> std::io::Result<()> {
    for segment in frame.segments() {
        socket.write_all(segment).await?;
    }
    Ok(())
}

/// Routes response frames to their waiters until the socket fails or the broker sends
/// garbage, then closes the connection with the cause.
async fn read_task(
    mut read_half: ReadHalf<Box<dyn Stream>>,
    shared: Arc<Mutex<Shared>>,
    broker: BrokerRef,
    max_frame: usize,
    bytes_received: Arc<AtomicU64>,
) {
    let stop = read_loop(&mut read_half, &shared, max_frame, &bytes_received).await;
    let cause = match stop {
        Stop::Closed(reason) => ClientError::ConnectionClosed { broker, reason },
        Stop::Invalid(reason) => ClientError::InvalidFrame { broker, reason },
        Stop::Tls(message) => ClientError::Tls { broker, message },
    };
    lock(&shared).close(cause);
}

async fn read_loop(
    read_half: &mut ReadHalf<Box<dyn Stream>>,
    shared: &Mutex<Shared>,
    max_frame: usize,
    bytes_received: &AtomicU64,
) -> Stop {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut frames = 0u64;
    loop {
        loop {
            match split_frame(&mut buf, max_frame) {
                Ok(Some(frame)) => {
                    frames += 1;
                    let Some(correlation_id) = peek_correlation_id(&frame) else {
                        return Stop::Invalid("response frame shorter than its header".to_owned());
                    };
                    let waiter = lock(shared).waiters.remove(&correlation_id);
                    // A response nobody waits for (its request timed out) is dropped.
                    if let Some(waiter) = waiter {
                        let _ = waiter.send(Ok(frame));
                    }
                }
                Ok(None) => break,
                Err(_) if looks_like_tls(&buf) => {
                    return Stop::Tls(
                        "the broker answered with TLS — is this an SSL listener? (security.protocol=SSL or SASL_SSL)"
                            .to_owned(),
                    )
                }
                Err(e) => return Stop::Invalid(e.to_string()),
            }
        }
        match read_half.read_buf(&mut buf).await {
            // A SASL listener answers ApiVersions, then hangs up on the first other request of
            // a client that did not authenticate.
            Ok(0) if buf.is_empty() && frames == 1 => {
                return Stop::Closed(
                    "closed by the broker after ApiVersions: does this listener need SASL? \
                     (security.protocol=SASL_PLAINTEXT or SASL_SSL)"
                        .to_owned(),
                )
            }
            Ok(0) if buf.is_empty() => return Stop::Closed("closed by the broker".to_owned()),
            Ok(0) => {
                return Stop::Closed(format!(
                    "closed by the broker in the middle of a response ({} bytes of it received)",
                    buf.len()
                ))
            }
            Ok(n) => {
                bytes_received.fetch_add(n as u64, Ordering::Relaxed);
            }
            #[cfg(feature = "tls")]
            Err(e) if crate::security::tls::is_tls_error(&e) => {
                return Stop::Tls(crate::security::tls::explain(&e, "the broker"))
            }
            Err(e) => return Stop::Closed(format!("read failed: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::{Connection, Lane, State, Transport};
    use crate::error::{BrokerRef, ClientError};
    use crate::sync::lock;
    use kafka_wire::protocol::ApiKey;

    const METADATA: ApiKey = ApiKey(3);

    /// A request frame: size, api key 3, version 0, the correlation id, then `payload_len`
    /// bytes counting up (so a frame cut short or spliced into another is visible).
    fn frame(correlation_id: i32, payload_len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(12 + payload_len);
        out.extend_from_slice(&(8 + payload_len as i32).to_be_bytes());
        out.extend_from_slice(&3i16.to_be_bytes());
        out.extend_from_slice(&0i16.to_be_bytes());
        out.extend_from_slice(&correlation_id.to_be_bytes());
        out.extend((0..payload_len).map(|i| i as u8));
        out
    }

    /// Reads one request frame as a broker would: returns its correlation id and payload.
    async fn read_request(socket: &mut TcpStream) -> (i32, Vec<u8>) {
        let size = socket.read_i32().await.expect("size prefix") as usize;
        let mut body = vec![0; size];
        socket.read_exact(&mut body).await.expect("whole frame");
        let correlation_id = i32::from_be_bytes([body[4], body[5], body[6], body[7]]);
        (correlation_id, body.split_off(8))
    }

    async fn answer(socket: &mut TcpStream, correlation_id: i32, body: &[u8]) {
        let mut out = Vec::new();
        out.extend_from_slice(&(4 + body.len() as i32).to_be_bytes());
        out.extend_from_slice(&correlation_id.to_be_bytes());
        out.extend_from_slice(body);
        socket.write_all(&out).await.expect("answer");
    }

    /// A connection to a loopback listener standing in for a broker, and the broker's end of it.
    async fn connected() -> (Connection, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let broker = BrokerRef { node_id: Some(1), addr };
        let connection =
            Connection::open(broker, &Transport::Plain, Duration::from_secs(5), 1 << 20).await.expect("open");
        let (socket, _) = listener.accept().await.expect("accept");
        (connection, socket)
    }

    #[tokio::test]
    async fn a_caller_dropped_in_the_middle_of_a_large_write_leaves_no_half_frame_on_the_socket() {
        let (connection, mut socket) = connected().await;
        // 32 MiB cannot fit in the socket buffers of a peer that is not reading yet, so the
        // caller is dropped while its frame is only partly written.
        let big = 32 << 20;
        let mut big_id = None;
        let dropped = tokio::time::timeout(
            Duration::from_millis(200),
            connection.round_trip(
                METADATA,
                |id| {
                    big_id = Some(id);
                    Ok(frame(id, big).into())
                },
                Duration::from_secs(30),
            ),
        )
        .await;
        assert!(dropped.is_err(), "the large request cannot have been answered");
        let big_id = big_id.expect("the encoder ran");

        let broker_side = tokio::spawn(async move {
            let (first, payload) = read_request(&mut socket).await;
            assert_eq!(first, big_id);
            assert_eq!(payload.len(), big);
            assert!(payload.iter().enumerate().all(|(i, b)| *b == i as u8), "the large frame arrived intact");
            let (second, payload) = read_request(&mut socket).await;
            assert_eq!(payload, (0..10u8).collect::<Vec<_>>());
            answer(&mut socket, second, b"ok").await;
            (second, socket)
        });
        let response = connection
            .round_trip(METADATA, |id| Ok(frame(id, 10).into()), Duration::from_secs(30))
            .await
            .expect("the next request is answered on the same connection");
        let (answered_id, _socket_kept_open) = broker_side.await.expect("broker side");
        assert_eq!(response.correlation_id, answered_id);
        assert_eq!(&response.frame[4..], b"ok");
        assert!(!connection.is_closed());
    }

    #[tokio::test]
    async fn correlation_ids_are_the_connections_and_responses_find_their_callers_out_of_order() {
        let (connection, mut socket) = connected().await;
        let broker_side = tokio::spawn(async move {
            let (a, _) = read_request(&mut socket).await;
            let (b, _) = read_request(&mut socket).await;
            assert_ne!(a, b, "two requests in flight never share a correlation id");
            // Answered in the reverse order.
            answer(&mut socket, b, &b.to_be_bytes()).await;
            answer(&mut socket, a, &a.to_be_bytes()).await;
        });
        let timeout = Duration::from_secs(10);
        let (first, second) = tokio::join!(
            connection.round_trip(METADATA, |id| Ok(frame(id, 1).into()), timeout),
            connection.round_trip(METADATA, |id| Ok(frame(id, 2).into()), timeout),
        );
        broker_side.await.expect("broker side");
        for response in [first.expect("first"), second.expect("second")] {
            assert_eq!(response.frame[4..], response.correlation_id.to_be_bytes());
        }
    }

    #[tokio::test]
    async fn a_broker_that_hangs_up_fails_the_request_in_flight_and_every_later_one() {
        let (connection, mut socket) = connected().await;
        let broker_side = tokio::spawn(async move {
            read_request(&mut socket).await;
            drop(socket);
        });
        let error = connection
            .round_trip(METADATA, |id| Ok(frame(id, 4).into()), Duration::from_secs(10))
            .await
            .expect_err("no answer comes");
        broker_side.await.expect("broker side");
        assert!(matches!(error, ClientError::ConnectionClosed { .. }), "{error}");
        assert!(connection.is_closed());
        let later = connection
            .round_trip(METADATA, |id| Ok(frame(id, 4).into()), Duration::from_secs(10))
            .await
            .expect_err("a closed connection takes no request");
        assert_eq!(later.to_string(), error.to_string(), "the first cause is kept");
        assert!(lock(&connection.shared).waiters.is_empty(), "no waiter leaks");
    }

    #[tokio::test]
    async fn a_retired_connection_still_delivers_what_is_in_flight_but_takes_nothing_new() {
        let (connection, mut socket) = connected().await;
        let (asked_tx, asked_rx) = tokio::sync::oneshot::channel();
        let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
        let broker_side = tokio::spawn(async move {
            let (id, _) = read_request(&mut socket).await;
            asked_tx.send(()).expect("test waits");
            go_rx.await.expect("test says go");
            answer(&mut socket, id, b"late").await;
            socket
        });
        let in_flight =
            connection.round_trip(METADATA, |id| Ok(frame(id, 4).into()), Duration::from_secs(10));
        let retire = async {
            asked_rx.await.expect("request arrived");
            connection.retire();
            assert!(connection.is_closed());
            let refused = connection
                .round_trip(METADATA, |id| Ok(frame(id, 4).into()), Duration::from_secs(10))
                .await
                .expect_err("retired");
            assert!(refused.to_string().contains("retired"), "{refused}");
            go_tx.send(()).expect("broker waits");
        };
        let (answered, ()) = tokio::join!(in_flight, retire);
        assert_eq!(&answered.expect("answered after retirement").frame[4..], b"late");
        let _socket_kept_open = broker_side.await.expect("broker side");
        assert!(matches!(lock(&connection.shared).state, State::Retired));
    }

    #[tokio::test]
    async fn a_request_nobody_answers_is_done_once_written() {
        let (connection, mut socket) = connected().await;
        let id = connection.send_only(METADATA, |id| Ok(frame(id, 3).into())).await.expect("written");
        assert_eq!(read_request(&mut socket).await, (id, vec![0, 1, 2]));
        assert!(lock(&connection.shared).waiters.is_empty());
    }

    #[tokio::test]
    async fn requests_submitted_during_a_reauthentication_wait_for_it_and_keep_their_order() {
        let (connection, mut socket) = connected().await;
        connection.begin_reauthentication().expect("an open connection re-authenticates");
        let timeout = Duration::from_secs(10);
        let first = connection.submit(METADATA, |id| Ok(frame(id, 1).into())).expect("parked");
        let second = connection.submit(METADATA, |id| Ok(frame(id, 2).into())).expect("parked");
        let handshake = connection
            .submit_in(Lane::Authentication, METADATA, |id| Ok(frame(id, 3).into()))
            .expect("the authentication frame goes out");
        // Only the authentication frame is on the socket while the session is renewed.
        let (id, payload) = read_request(&mut socket).await;
        assert_eq!(payload.len(), 3, "the first frame the broker sees is the handshake");
        answer(&mut socket, id, b"hs").await;
        assert_eq!(&handshake.wait(timeout).await.expect("answered").frame[4..], b"hs");
        connection.end_reauthentication();
        let (a, payload_a) = read_request(&mut socket).await;
        let (b, payload_b) = read_request(&mut socket).await;
        assert_eq!((payload_a.len(), payload_b.len()), (1, 2), "parked frames keep their order");
        answer(&mut socket, a, b"a").await;
        answer(&mut socket, b, b"b").await;
        assert_eq!(&first.wait(timeout).await.expect("first").frame[4..], b"a");
        assert_eq!(&second.wait(timeout).await.expect("second").frame[4..], b"b");
        assert!(!connection.is_closed(), "the same connection serves on");
    }

    #[tokio::test]
    async fn a_failed_reauthentication_fails_the_parked_requests_with_its_cause_and_writes_none() {
        let (connection, mut socket) = connected().await;
        connection.begin_reauthentication().expect("begins");
        let parked = connection.submit(METADATA, |id| Ok(frame(id, 1).into())).expect("parked");
        let cause = ClientError::Authentication {
            broker: connection.broker().clone(),
            mechanism: "SCRAM-SHA-512",
            user: "alice".to_owned(),
            message: "re-authentication refused".to_owned(),
        };
        connection.fail(cause.clone());
        let error = parked.wait(Duration::from_secs(10)).await.expect_err("never sent");
        assert_eq!(error.to_string(), cause.to_string());
        assert!(connection.is_closed());
        drop(connection);
        let mut rest = Vec::new();
        socket.read_to_end(&mut rest).await.expect("the socket closes");
        assert!(rest.is_empty(), "the parked frame was never written: {rest:?}");
    }

    #[tokio::test]
    async fn a_closed_connection_cannot_begin_a_reauthentication() {
        let (connection, socket) = connected().await;
        drop(socket);
        let _ = connection.round_trip(METADATA, |id| Ok(frame(id, 1).into()), Duration::from_secs(10)).await;
        assert!(connection.is_closed());
        assert!(connection.begin_reauthentication().is_err());
    }
}
