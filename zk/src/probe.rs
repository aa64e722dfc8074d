//! Why no ZooKeeper session could be opened. `zookeeper-client` retries a server that refuses
//! the connection, says nothing, or answers garbage until its time is up and then reports only
//! "timeout"; a probe of each server, run beside the connect, names what it saw instead.
//!
//! The probe opens one TCP connection and sends `srvr`, a four-letter word every ZooKeeper
//! answers in text (its status, or "not in the whitelist" when four-letter words are off). It
//! opens no session and writes nothing.

use std::fmt;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::timeout_at;

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
        }
    }
}

/// Probes every server of `servers` (`host:port[,host:port...]`) at once, each for at most
/// `budget`; one outcome per server, in order.
pub async fn probe_servers(servers: String, budget: Duration) -> Vec<(String, Probe)> {
    let list: Vec<String> =
        servers.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect();
    // One task per server: they run at once, so the whole probe takes at most `budget`.
    let tasks: Vec<_> = list
        .iter()
        .map(|server| {
            let server = server.clone();
            tokio::spawn(async move { probe(&server, budget).await })
        })
        .collect();
    let mut out = Vec::with_capacity(list.len());
    for (server, task) in list.into_iter().zip(tasks) {
        let outcome = task.await.unwrap_or_else(|e| Probe::Io(format!("probe failed: {e}")));
        out.push((server, outcome));
    }
    out
}

/// Probes one `host:port`, for at most `budget`.
pub async fn probe(server: &str, budget: Duration) -> Probe {
    let deadline = tokio::time::Instant::now() + budget.min(PROBE_BUDGET);
    let address = server.strip_prefix("tcp://").unwrap_or(server);
    let addrs = match tokio::net::lookup_host(address).await {
        Ok(addrs) => addrs.collect::<Vec<_>>(),
        Err(e) => return Probe::Unresolved(e.to_string()),
    };
    let Some(addr) = addrs.first() else { return Probe::Unresolved("no address".to_owned()) };
    let mut stream = match timeout_at(deadline, TcpStream::connect(addr)).await {
        Err(_) => return Probe::NoConnection,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Probe::Refused,
        Ok(Err(e)) => return Probe::Io(e.to_string()),
        Ok(Ok(stream)) => stream,
    };
    if let Err(e) = stream.write_all(b"srvr").await {
        return Probe::Io(e.to_string());
    }
    let mut answer = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        match timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) if answer.is_empty() => return Probe::Silent,
            Ok(Ok(0)) if answer.is_empty() => return Probe::Closed,
            Ok(Err(e)) if answer.is_empty() => return Probe::Io(e.to_string()),
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
        let probes = probe_servers(servers, budget).await;
        let outcomes: Vec<&Probe> = probes.iter().map(|(_, p)| p).collect();
        assert!(matches!(outcomes[0], Probe::Foreign(b) if b.starts_with(b"HTTP/1.1 400")), "{outcomes:?}");
        assert_eq!(outcomes[1..], [&Probe::Silent, &Probe::Closed, &Probe::Refused, &Probe::ZooKeeper]);
        assert_eq!(probe(&whitelisted, budget).await, Probe::ZooKeeper);
        assert!(probe("no-such-host.invalid:2181", budget).await.to_string().contains("does not resolve"));
        let text = outcomes[0].to_string();
        assert!(
            text.contains("not ZooKeeper's") && text.contains("HTTP/1.1 400 Bad Request\\r\\n"),
            "{text}"
        );
    }
}
