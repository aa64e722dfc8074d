//! A `kwire exporter` child process for the tests, and reading what it serves.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::Cluster;

/// The exporter, killed when dropped.
pub struct Exporter {
    child: Child,
    pub addr: String,
}

impl Exporter {
    /// Refreshing every second, for the groups `group_regex` matches, with `extra` arguments.
    pub fn start_with(cluster: &Cluster, group_regex: &str, extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kwire"))
            .args(["exporter", "--listen", "127.0.0.1:0", "--interval", "1s", "--group", group_regex])
            .args(extra)
            .env("KWIRE_BOOTSTRAP", &cluster.bootstrap)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_owned();
        // Keep draining stderr (refresh errors) so the child never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while stderr.read_line(&mut sink).is_ok_and(|n| n > 0) {
                sink.clear();
            }
        });
        Self { child, addr }
    }

    /// `(status line, body)` of a GET.
    pub fn get(&self, path: &str) -> (String, String) {
        self.try_get(path, Duration::from_secs(10)).unwrap_or_else(|e| panic!("GET {path}: {e}"))
    }

    /// `(status line, body)` of a GET, or what went wrong when there is no whole answer
    /// within `within` (connect, write and each read each get that long).
    pub fn try_get(&self, path: &str, within: Duration) -> Result<(String, String), String> {
        let addr: SocketAddr = self.addr.parse().map_err(|e| format!("{}: {e}", self.addr))?;
        let mut stream = TcpStream::connect_timeout(&addr, within).map_err(|e| format!("connect: {e}"))?;
        stream.set_read_timeout(Some(within)).map_err(|e| e.to_string())?;
        stream.set_write_timeout(Some(within)).map_err(|e| e.to_string())?;
        write!(stream, "GET {path} HTTP/1.1\r\nHost: {}\r\n\r\n", self.addr)
            .map_err(|e| format!("write: {e}"))?;
        let mut response = String::new();
        stream.read_to_string(&mut response).map_err(|e| format!("read: {e}"))?;
        let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
        Ok((head.lines().next().unwrap_or_default().to_owned(), body.to_owned()))
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The group ids the tests make are `[a-z0-9-]`; escape anything else for the regex.
pub fn regex_escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| if c.is_ascii_alphanumeric() || c == '-' { vec![c] } else { vec!['\\', c] })
        .collect()
}

/// One sample: `(name, labels, value)`.
pub type Sample = (String, BTreeMap<String, String>, f64);

/// `name{labels} value` lines of an OpenMetrics body as `(name, labels, value)`; the label
/// values the tests make hold no `,` `"` or `}`.
pub fn samples_of(body: &str) -> Vec<Sample> {
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => (name, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            let labels = labels
                .split(',')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.trim_matches('"').to_owned()))
                .collect();
            Some((name.to_owned(), labels, value.parse().ok()?))
        })
        .collect()
}
