//! One pipelined TCP connection to one broker: many requests in flight, responses matched to
//! requests by correlation id. A reader task owns the read half; when the connection dies it
//! fails every in-flight request with the cause, and the connection reports itself closed so
//! the caller opens a new one on next use.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use super::error::{BrokerRef, ClientError};
use crate::protocol::frame::{peek_correlation_id, split_frame};
use crate::protocol::ApiKey;

type Pending = Arc<Mutex<PendingState>>;

#[derive(Debug, Default)]
struct PendingState {
    waiters: HashMap<i32, oneshot::Sender<Result<Bytes, ClientError>>>,
    /// Set once the reader stops; later requests fail at once with this error.
    closed: Option<ClientError>,
}

/// Why the reader stopped.
enum Stop {
    /// EOF or a read error: the connection is gone, trying again on a new one can help.
    Closed(String),
    /// The broker's bytes are not Kafka response frames (a size prefix that is negative or
    /// above the limit, a frame too short for a header).
    Invalid(String),
}

/// A live connection. Cheap to share behind an `Arc`; requests may be sent concurrently.
#[derive(Debug)]
pub struct Connection {
    broker: BrokerRef,
    writer: tokio::sync::Mutex<OwnedWriteHalf>,
    pending: Pending,
    next_correlation_id: AtomicI32,
    closed: Arc<AtomicBool>,
    /// Bytes read from the broker so far: a broker that predates ApiVersions closes the
    /// connection without a byte, while one that answered something did not.
    bytes_received: Arc<AtomicU64>,
    requests_sent: AtomicU64,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Connection {
    /// Opens a TCP connection (with `TCP_NODELAY`) within `timeout`.
    pub async fn open(broker: BrokerRef, timeout: Duration, max_frame: usize) -> Result<Self, ClientError> {
        let connect = TcpStream::connect(broker.addr.as_str());
        let stream = match tokio::time::timeout(timeout, connect).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return Err(ClientError::Connect { broker, source: Arc::new(e) }),
            Err(_) => {
                let e = std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no answer within {timeout:?}"),
                );
                return Err(ClientError::Connect { broker, source: Arc::new(e) });
            }
        };
        stream
            .set_nodelay(true)
            .map_err(|e| ClientError::Connect { broker: broker.clone(), source: Arc::new(e) })?;
        let (mut read_half, write_half) = stream.into_split();
        let pending: Pending = Arc::default();
        let closed = Arc::new(AtomicBool::new(false));
        let bytes_received = Arc::new(AtomicU64::new(0));
        let reader = {
            let pending = Arc::clone(&pending);
            let closed = Arc::clone(&closed);
            let bytes_received = Arc::clone(&bytes_received);
            let broker = broker.clone();
            tokio::spawn(async move {
                let stop = read_loop(&mut read_half, &pending, max_frame, &bytes_received).await;
                closed.store(true, Ordering::SeqCst);
                let error = match stop {
                    Stop::Closed(reason) => ClientError::ConnectionClosed { broker, reason },
                    Stop::Invalid(reason) => ClientError::InvalidFrame { broker, reason },
                };
                let mut state = pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                for (_, waiter) in state.waiters.drain() {
                    let _ = waiter.send(Err(error.clone()));
                }
                state.closed = Some(error);
            })
        };
        Ok(Self {
            broker,
            writer: tokio::sync::Mutex::new(write_half),
            pending,
            next_correlation_id: AtomicI32::new(1),
            closed,
            bytes_received,
            requests_sent: AtomicU64::new(0),
            reader,
        })
    }

    pub fn broker(&self) -> &BrokerRef {
        &self.broker
    }

    /// Whether the connection has died; a closed connection is replaced on next use.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Takes the connection out of use: the client opens a new one for the next request,
    /// while requests already in flight here still get their responses. For a connection whose
    /// broker sent a response kwire could not decode: what else it sends cannot be trusted.
    pub fn retire(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    /// Bytes received from the broker so far.
    pub fn bytes_received(&self) -> u64 {
        self.bytes_received.load(Ordering::Relaxed)
    }

    /// Requests written on this connection so far.
    pub fn requests_sent(&self) -> u64 {
        self.requests_sent.load(Ordering::Relaxed)
    }

    /// A fresh correlation id for the next request.
    pub fn next_correlation_id(&self) -> i32 {
        self.next_correlation_id.fetch_add(1, Ordering::Relaxed) & i32::MAX
    }

    /// Writes a complete frame whose header carries `correlation_id` and waits up to
    /// `timeout` for the response frame (without its size prefix).
    pub async fn round_trip(
        &self,
        api: ApiKey,
        correlation_id: i32,
        frame: &[u8],
        timeout: Duration,
    ) -> Result<Bytes, ClientError> {
        let (tx, rx) = oneshot::channel();
        {
            let mut state = self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(error) = &state.closed {
                return Err(error.clone());
            }
            state.waiters.insert(correlation_id, tx);
        }
        let write = async {
            let mut writer = self.writer.lock().await;
            writer.write_all(frame).await
        };
        if let Err(e) = write.await {
            self.forget(correlation_id);
            self.closed.store(true, Ordering::SeqCst);
            return Err(ClientError::Io { broker: self.broker.clone(), api, source: Arc::new(e) });
        }
        self.requests_sent.fetch_add(1, Ordering::Relaxed);
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(ClientError::ConnectionClosed {
                broker: self.broker.clone(),
                reason: "reader stopped".to_owned(),
            }),
            Err(_) => {
                self.forget(correlation_id);
                Err(ClientError::Timeout {
                    broker: self.broker.clone(),
                    api,
                    after_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                })
            }
        }
    }

    /// Writes a complete frame for a request the broker never answers (Produce with acks=0):
    /// no waiter is registered, so nothing waits for — or leaks on — a response that will not
    /// come. Done once the bytes are written; a dead connection is reported as for
    /// [`round_trip`](Self::round_trip).
    pub async fn send_only(&self, api: ApiKey, frame: &[u8]) -> Result<(), ClientError> {
        if let Some(error) = &self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner).closed {
            return Err(error.clone());
        }
        let mut writer = self.writer.lock().await;
        if let Err(e) = writer.write_all(frame).await {
            self.closed.store(true, Ordering::SeqCst);
            return Err(ClientError::Io { broker: self.broker.clone(), api, source: Arc::new(e) });
        }
        self.requests_sent.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn forget(&self, correlation_id: i32) {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .waiters
            .remove(&correlation_id);
    }
}

/// Reads frames until the socket fails or the broker sends garbage; returns why it stopped.
async fn read_loop(
    read_half: &mut tokio::net::tcp::OwnedReadHalf,
    pending: &Pending,
    max_frame: usize,
    bytes_received: &AtomicU64,
) -> Stop {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    loop {
        loop {
            match split_frame(&mut buf, max_frame) {
                Ok(Some(frame)) => {
                    let Some(correlation_id) = peek_correlation_id(&frame) else {
                        return Stop::Invalid("response frame shorter than its header".to_owned());
                    };
                    let waiter = pending
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .waiters
                        .remove(&correlation_id);
                    // A response nobody waits for (its request timed out) is dropped.
                    if let Some(waiter) = waiter {
                        let _ = waiter.send(Ok(frame));
                    }
                }
                Ok(None) => break,
                Err(e) => return Stop::Invalid(e.to_string()),
            }
        }
        match read_half.read_buf(&mut buf).await {
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
            Err(e) => return Stop::Closed(format!("read failed: {e}")),
        }
    }
}
