//! `kwire proxy` run as a child process for a test: listeners on free ports (`--listen
//! 127.0.0.1:0`), JSON pairs on stdout (into a file), the listener lines read from stderr,
//! stopped with SIGTERM so it flushes its output and pcapng file and prints its summary.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Cluster;

#[derive(Debug)]
pub struct KwireProxy {
    child: Child,
    stdout: PathBuf,
    stderr_lines: Arc<Mutex<Vec<String>>>,
    /// The listeners for the `--upstream` brokers, comma-separated: the clients' bootstrap.
    pub bootstrap: String,
    pub pcap: Option<PathBuf>,
}

/// What the proxy printed.
#[derive(Debug)]
pub struct ProxyRun {
    /// One JSON document per pair (those with `api_key`) or notice (those with `notice`).
    pub documents: Vec<Value>,
    pub stderr: String,
}

impl ProxyRun {
    pub fn pairs(&self) -> Vec<&Value> {
        self.documents.iter().filter(|d| d.get("api_key").is_some()).collect()
    }

    pub fn notices(&self) -> Vec<&str> {
        self.documents.iter().filter_map(|d| d.get("notice").and_then(Value::as_str)).collect()
    }

    /// API keys of the pairs seen.
    pub fn api_keys(&self) -> std::collections::BTreeSet<i64> {
        self.pairs().iter().filter_map(|d| d["api_key"].as_i64()).collect()
    }

    /// Pairs whose request or response did not decode, as `api_key` values.
    pub fn undecodable(&self) -> Vec<i64> {
        self.pairs()
            .iter()
            .filter(|d| {
                d["request"].get("undecodable").is_some() || d["response"].get("undecodable").is_some()
            })
            .filter_map(|d| d["api_key"].as_i64())
            .collect()
    }

    /// The ports brokers were announced at in every decoded Metadata response.
    pub fn announced_ports(&self) -> Vec<i64> {
        self.pairs()
            .iter()
            .filter(|d| d["api_key"] == 3)
            .flat_map(|d| d["response"]["body"]["brokers"].as_array().cloned().unwrap_or_default())
            .filter_map(|b| b["port"].as_i64())
            .collect()
    }
}

impl KwireProxy {
    /// Starts `kwire proxy --upstream <every broker of the cluster> --listen 127.0.0.1:0
    /// --format json` plus `extra`, and waits for its listeners.
    pub fn start(cluster: &Cluster, extra: &[&str]) -> Self {
        let name = super::unique("kwire-proxy");
        let dir = std::env::temp_dir();
        let stdout = dir.join(format!("{name}.jsonl"));
        let mut command = Command::new(env!("CARGO_BIN_EXE_kwire"));
        command
            .args(["proxy", "--upstream", &cluster.bootstrap, "--listen", "127.0.0.1:0", "--format", "json"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).expect("stdout file"))
            .stderr(Stdio::piped());
        let pcap = extra.iter().position(|a| *a == "--pcap").map(|i| PathBuf::from(extra[i + 1]));
        let mut child = command.spawn().expect("kwire proxy starts");
        let stderr = child.stderr.take().expect("stderr piped");
        let stderr_lines = Arc::new(Mutex::new(Vec::new()));
        let lines = Arc::clone(&stderr_lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line);
            }
        });
        let brokers = cluster.brokers().len();
        let deadline = Instant::now() + Duration::from_secs(20);
        let bootstrap = loop {
            let listeners: Vec<String> = stderr_lines
                .lock()
                .unwrap()
                .iter()
                .filter_map(|l| l.strip_prefix("kwire proxy: listening on "))
                .filter_map(|l| l.split(' ').next().map(str::to_owned))
                .collect();
            if listeners.len() >= brokers {
                break listeners[..brokers].join(",");
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("kwire proxy exited ({status}): {:?}", stderr_lines.lock().unwrap());
            }
            assert!(
                Instant::now() < deadline,
                "kwire proxy did not listen: {:?}",
                stderr_lines.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        Self { child, stdout, stderr_lines, bootstrap, pcap }
    }

    /// The ports of every listener opened so far (upstreams and brokers learned later).
    pub fn listener_ports(&self) -> Vec<u16> {
        self.stderr_lines
            .lock()
            .unwrap()
            .iter()
            .filter_map(|l| l.strip_prefix("kwire proxy: listening on "))
            .filter_map(|l| l.split(' ').next()?.rsplit_once(':')?.1.parse().ok())
            .collect()
    }

    /// Waits until the proxy's output (one JSON document per line, flushed whenever its queue
    /// runs empty) contains `needle`; panics after `timeout`.
    pub fn wait_for_output(&self, needle: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !std::fs::read_to_string(&self.stdout).is_ok_and(|t| t.contains(needle)) {
            assert!(Instant::now() < deadline, "no `{needle}` in the proxy's output within {timeout:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Every listener opened so far: its port and the upstream broker it stands for.
    pub fn listeners(&self) -> Vec<(u16, String)> {
        self.stderr_lines
            .lock()
            .unwrap()
            .iter()
            .filter_map(|l| l.strip_prefix("kwire proxy: listening on "))
            .filter_map(|l| {
                let (local, upstream) = l.split_once(" for ")?;
                Some((local.rsplit_once(':')?.1.parse().ok()?, upstream.to_owned()))
            })
            .collect()
    }

    /// Waits for a stderr line starting with `prefix`; returns the rest of it.
    pub fn wait_for_stderr(&self, prefix: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(rest) =
                self.stderr_lines.lock().unwrap().iter().rev().find_map(|l| l.strip_prefix(prefix))
            {
                return rest.to_owned();
            }
            assert!(
                Instant::now() < deadline,
                "no stderr line `{prefix}...` within {timeout:?}: {:?}",
                self.stderr_lines.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends the process `signal` (`HUP`, ...).
    pub fn signal(&self, signal: &str) {
        let status =
            Command::new("kill").args([&format!("-{signal}"), &self.child.id().to_string()]).status();
        assert!(status.is_ok_and(|s| s.success()), "kill -{signal}");
    }

    /// SIGTERM, wait for the exit, and read what it printed.
    pub fn stop(mut self) -> ProxyRun {
        let status = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        assert!(status.is_ok_and(|s| s.success()), "kill -TERM");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                assert!(status.success(), "kwire proxy exited with {status}");
                break;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("kwire proxy did not stop on SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // The stderr reader ends with the process; give it a moment to take the last lines.
        std::thread::sleep(Duration::from_millis(100));
        let text = std::fs::read_to_string(&self.stdout).expect("proxy stdout");
        let _ = std::fs::remove_file(&self.stdout);
        let documents = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect();
        let stderr = self.stderr_lines.lock().unwrap().join("\n");
        ProxyRun { documents, stderr }
    }
}

impl Drop for KwireProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
