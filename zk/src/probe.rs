//! Why no ZooKeeper session could be opened. `zookeeper-client` retries a server that refuses
//! the connection, says nothing, or answers garbage until its time is up and then reports only
//! "timeout"; a probe of each server, run beside the connect, names what it saw instead.
//!
//! The probe opens one TCP connection and sends `srvr`, a four-letter word every ZooKeeper
//! answers in text (its status, or "not in the whitelist" when four-letter words are off). It
//! opens no session and writes nothing. With TLS settings it first makes the TLS handshake with
//! them, so an untrusted server certificate, a refused client certificate or a plaintext port
//! is named; without, a server that stays silent is asked whether it speaks TLS (ZooKeeper's
//! `secureClientPort` waits for a handshake and ignores `srvr`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rustls::crypto::ring;
use rustls::pki_types::ServerName;
use rustls::{AlertDescription, CertificateError, ClientConfig, RootCertStore};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::{timeout_at, Instant};
use tokio_rustls::TlsConnector;

/// The longest a probe waits for a server, whatever the connect's budget.
pub const PROBE_BUDGET: Duration = Duration::from_secs(3);

/// How many bytes of a foreign answer are kept for the message.
const SHOWN: usize = 32;

/// What one server did when probed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// The host name does not resolve.
    Unresolved(String),
    /// Nothing listens there.
    Refused,
    /// No TCP connection within the budget (a wrong host, a firewall dropping packets).
    NoConnection,
    /// Connected, but nothing came back within the budget.
    Silent,
    /// Connected, and the server closed the connection without a byte.
    Closed,
    /// Answered with bytes that are not ZooKeeper's (the first few are kept).
    Foreign(Vec<u8>),
    /// Answered like ZooKeeper: the server is there, so the session failed for another reason.
    ZooKeeper,
    /// Any other socket error.
    Io(String),
    /// Without TLS settings: the server answers a TLS handshake (a `secureClientPort`).
    SpeaksTls,
    /// With TLS settings: the server closed the connection or answered something else than a
    /// TLS handshake (a plaintext `clientPort`).
    NotTls,
    /// With TLS settings: the handshake failed; what failed, said for a user.
    TlsRejected(String),
}

impl Probe {
    /// Whether the outcome is a security mismatch (TLS on one side only, a certificate refused)
    /// that no retry fixes.
    pub fn is_security(&self) -> bool {
        matches!(self, Probe::SpeaksTls | Probe::NotTls | Probe::TlsRejected(_))
    }
}

impl fmt::Display for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Probe::Unresolved(e) => write!(f, "does not resolve ({e})"),
            Probe::Refused => f.write_str("refused the connection (nothing listens there)"),
            Probe::NoConnection => f.write_str("no TCP connection could be made"),
            Probe::Silent => f.write_str("accepted the connection but answered nothing"),
            Probe::Closed => f.write_str("accepted the connection and closed it without answering"),
            Probe::Foreign(bytes) => {
                write!(f, "answered with bytes that are not ZooKeeper's (\"{}\"", bytes.escape_ascii())?;
                if bytes.len() >= SHOWN {
                    f.write_str("...")?;
                }
                f.write_str(")")
            }
            Probe::ZooKeeper => f.write_str("answers as ZooKeeper"),
            Probe::Io(e) => f.write_str(e),
            Probe::SpeaksTls => f.write_str(
                "expects TLS (a secureClientPort): connect with --zookeeper-tls-ca (and a client certificate if it asks for one)",
            ),
            Probe::NotTls => f.write_str(
                "answered the TLS handshake without TLS: is this a plaintext clientPort? (drop --zookeeper-tls-ca)",
            ),
            Probe::TlsRejected(why) => write!(f, "TLS handshake failed: {why}"),
        }
    }
}

/// Probes every server of `servers` (`host:port[,host:port...]`) at once, each for at most
/// `budget`, over TLS with `tls` if given; one outcome per server, in order.
pub async fn probe_servers(
    servers: String,
    budget: Duration,
    tls: Option<Arc<ClientConfig>>,
) -> Vec<(String, Probe)> {
    let list: Vec<String> =
        servers.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect();
    // One task per server: they run at once, so the whole probe takes at most `budget`.
    let tasks: Vec<_> = list
        .iter()
        .map(|server| {
            let server = server.clone();
            let tls = tls.clone();
            tokio::spawn(async move { probe(&server, budget, tls).await })
        })
        .collect();
    let mut out = Vec::with_capacity(list.len());
    for (server, task) in list.into_iter().zip(tasks) {
        let outcome = task.await.unwrap_or_else(|e| Probe::Io(format!("probe failed: {e}")));
        out.push((server, outcome));
    }
    out
}

/// Probes one `host:port`, for at most `budget` (twice that for a silent plaintext server,
/// which is then asked for a TLS handshake).
pub async fn probe(server: &str, budget: Duration, tls: Option<Arc<ClientConfig>>) -> Probe {
    let deadline = Instant::now() + budget.min(PROBE_BUDGET);
    let address = server.strip_prefix("tcp://").unwrap_or(server);
    let addrs = match tokio::net::lookup_host(address).await {
        Ok(addrs) => addrs.collect::<Vec<_>>(),
        Err(e) => return Probe::Unresolved(e.to_string()),
    };
    let Some(addr) = addrs.first() else { return Probe::Unresolved("no address".to_owned()) };
    let stream = match timeout_at(deadline, TcpStream::connect(addr)).await {
        Err(_) => return Probe::NoConnection,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Probe::Refused,
        Ok(Err(e)) => return Probe::Io(e.to_string()),
        Ok(Ok(stream)) => stream,
    };
    let host = address.rsplit_once(':').map_or(address, |(host, _)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match tls {
        Some(config) => match handshake(stream, config, host, deadline).await {
            Ok(stream) => srvr(stream, deadline).await,
            Err(outcome) => outcome,
        },
        None => match srvr(stream, deadline).await {
            outcome @ (Probe::Silent | Probe::Closed) => {
                let again = Instant::now() + budget.min(PROBE_BUDGET);
                if speaks_tls(addr, host, again).await {
                    Probe::SpeaksTls
                } else {
                    outcome
                }
            }
            outcome => outcome,
        },
    }
}

/// The TLS handshake with `config`, or the probe outcome naming why it failed.
async fn handshake(
    stream: TcpStream,
    config: Arc<ClientConfig>,
    host: &str,
    deadline: Instant,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, Probe> {
    let name = ServerName::try_from(host.to_owned())
        .map_err(|e| Probe::TlsRejected(format!("{host} is not a valid TLS server name ({e})")))?;
    match timeout_at(deadline, TlsConnector::from(config).connect(name, stream)).await {
        Err(_) => Err(Probe::Silent),
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(e)) => Err(handshake_failure(&e)),
    }
}

/// The TLS error inside a socket error of a TLS stream, if it is one.
fn tls_error(e: &std::io::Error) -> Option<&rustls::Error> {
    e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>())
}

/// A socket error after the handshake: with TLS 1.3 a server that refuses the client's
/// certificate says so only then, in an alert.
fn io_failure(e: &std::io::Error) -> Probe {
    match tls_error(e) {
        Some(_) => handshake_failure(e),
        None => Probe::Io(e.to_string()),
    }
}

/// What a failed handshake means, in the words of `--zookeeper-tls-*`.
fn handshake_failure(e: &std::io::Error) -> Probe {
    let Some(tls) = tls_error(e) else {
        // The peer closed or reset the connection instead of answering the ClientHello.
        return Probe::NotTls;
    };
    let why = match tls {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
            "the server's certificate is not signed by a CA in --zookeeper-tls-ca".to_owned()
        }
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => "the server's certificate does not name the host of the connect string".to_owned(),
        rustls::Error::InvalidCertificate(other) => format!("the server's certificate is refused: {other:?}"),
        rustls::Error::AlertReceived(
            alert @ (AlertDescription::BadCertificate
            | AlertDescription::CertificateRequired
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateUnknown
            | AlertDescription::HandshakeFailure),
        ) => format!(
            "the server refused the client certificate (alert {alert:?}): it wants one signed by a CA it trusts (--zookeeper-tls-cert, --zookeeper-tls-key)"
        ),
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
            return Probe::NotTls
        }
        other => other.to_string(),
    };
    Probe::TlsRejected(why)
}

/// Whether `addr` answers a TLS ClientHello with TLS. The handshake trusts no CA, so any
/// server that speaks TLS fails it with a certificate error, and nothing is sent after it.
async fn speaks_tls(addr: &std::net::SocketAddr, host: &str, deadline: Instant) -> bool {
    let Ok(Ok(stream)) = timeout_at(deadline, TcpStream::connect(addr)).await else { return false };
    let Ok(builder) = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
    else {
        return false;
    };
    let config = Arc::new(builder.with_root_certificates(RootCertStore::empty()).with_no_client_auth());
    match handshake(stream, config, host, deadline).await {
        // Cannot complete without a trusted CA; if it did, the server spoke TLS all the same.
        Ok(_) => true,
        Err(outcome) => matches!(outcome, Probe::TlsRejected(_)),
    }
}

/// Sends `srvr` on `stream` and classifies the answer.
async fn srvr<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, deadline: Instant) -> Probe {
    if let Err(e) = stream.write_all(b"srvr").await {
        return io_failure(&e);
    }
    let mut answer = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        match timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) if answer.is_empty() => return Probe::Silent,
            Ok(Ok(0)) if answer.is_empty() => return Probe::Closed,
            Ok(Err(e)) if answer.is_empty() => return io_failure(&e),
            Ok(Ok(n)) if n > 0 && answer.len() < 512 => answer.extend_from_slice(&buf[..n]),
            _ => break,
        }
    }
    classify(&answer)
}

/// A ZooKeeper answers `srvr` with its status ("Zookeeper version: ...") or, with four-letter
/// words disabled, "srvr is not executed because it is not in the whitelist.".
fn classify(answer: &[u8]) -> Probe {
    let text = String::from_utf8_lossy(answer);
    if text.starts_with("Zookeeper version:") || text.contains("not in the whitelist") {
        Probe::ZooKeeper
    } else {
        Probe::Foreign(answer[..answer.len().min(SHOWN)].to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// A server on a free port that answers each connection with `answer` (`None`: says
    /// nothing and keeps the connection open; empty: closes at once).
    async fn server(answer: Option<&'static [u8]>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut buf = [0u8; 4];
                let _ = stream.read(&mut buf).await;
                match answer {
                    Some(bytes) => {
                        let _ = stream.write_all(bytes).await;
                    }
                    None => held.push(stream),
                }
            }
        });
        addr
    }

    #[tokio::test]
    async fn each_way_of_failing_is_named() {
        let budget = Duration::from_millis(500);
        let http = server(Some(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")).await;
        let silent = server(None).await;
        let closing = server(Some(b"")).await;
        let zookeeper = server(Some(b"Zookeeper version: 3.9.4, built on ...\nMode: standalone\n")).await;
        let whitelisted = server(Some(b"srvr is not executed because it is not in the whitelist.")).await;
        let refused = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().to_string()
        };
        let servers =
            [http.as_str(), silent.as_str(), closing.as_str(), refused.as_str(), zookeeper.as_str()]
                .join(",");
        let probes = probe_servers(servers, budget, None).await;
        let outcomes: Vec<&Probe> = probes.iter().map(|(_, p)| p).collect();
        assert!(matches!(outcomes[0], Probe::Foreign(b) if b.starts_with(b"HTTP/1.1 400")), "{outcomes:?}");
        assert_eq!(outcomes[1..], [&Probe::Silent, &Probe::Closed, &Probe::Refused, &Probe::ZooKeeper]);
        assert_eq!(probe(&whitelisted, budget, None).await, Probe::ZooKeeper);
        assert!(probe("no-such-host.invalid:2181", budget, None)
            .await
            .to_string()
            .contains("does not resolve"));
        let text = outcomes[0].to_string();
        assert!(
            text.contains("not ZooKeeper's") && text.contains("HTTP/1.1 400 Bad Request\\r\\n"),
            "{text}"
        );
    }
}
