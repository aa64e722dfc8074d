//! `kwire proxy`'s fault rules at run time: the rules in force ([`LiveRules`], replaced whole
//! when the file is read again on SIGHUP or `POST /reload`), and the control endpoint
//! (`--control HOST:PORT`, plain HTTP/1.1, one request per connection):
//!
//! | request | answer |
//! |---|---|
//! | `GET /metrics` | OpenMetrics: per rule `kwire_proxy_fault_applied_total`, `..._matched_total`, `kwire_proxy_fault_rule_enabled`; `kwire_proxy_fault_reloads_total` |
//! | `GET /rules` | JSON: each rule's number (from 1), origin, action, enabled, matched, applied |
//! | `POST /rules/N/on`, `POST /rules/N/off` | switches rule N; `/rules/all/off` (or `on`) every rule |
//! | `POST /reload` | reads `--faults FILE` again (then the `--fault` flags); a bad file keeps the rules in force |
//!
//! Counts start again at a reload (Prometheus takes a counter reset in its stride).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use kwire_faults::{rules, FaultSet, RuleStatus};
use serde_json::json;
use tokio::io::AsyncWriteExt as _;
use tokio::net::{TcpListener, TcpStream};

use super::http_request::read_request_line;

/// Where the rules come from, and the set in force.
pub struct LiveRules {
    /// `--faults FILE` and the `--fault` flags, read again at a reload; `None` for rules given
    /// whole (a chaos scenario), which a reload keeps.
    source: Option<(Option<PathBuf>, Vec<String>)>,
    seed: u64,
    current: RwLock<Arc<FaultSet>>,
    reloads: AtomicU64,
}

impl LiveRules {
    /// Reads `file` (if any), then `flags`. The error names the rule and key at fault.
    pub fn load(file: Option<PathBuf>, flags: Vec<String>, seed: u64) -> Result<Self, String> {
        let set = read_rules(file.as_ref(), &flags, seed)?;
        Ok(Self {
            source: Some((file, flags)),
            seed,
            current: RwLock::new(Arc::new(set)),
            reloads: AtomicU64::new(0),
        })
    }

    /// Rules given whole, with nothing to read again.
    pub fn fixed(set: FaultSet) -> Self {
        Self { source: None, seed: 0, current: RwLock::new(Arc::new(set)), reloads: AtomicU64::new(0) }
    }

    /// The rules in force.
    pub fn current(&self) -> Arc<FaultSet> {
        Arc::clone(&self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Reads the rules again; on an error the rules in force stay. Returns what to tell the user.
    pub fn reload(&self) -> Result<String, String> {
        let Some((file, flags)) = &self.source else {
            return Err(
                "these rules were given whole (a scenario): there is nothing to read again".to_owned()
            );
        };
        let set = read_rules(file.as_ref(), flags, self.seed)?;
        let count = set.rules().len();
        *self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(set);
        self.reloads.fetch_add(1, Ordering::Relaxed);
        Ok(format!("fault rules read again: {count} in force"))
    }
}

fn read_rules(file: Option<&PathBuf>, flags: &[String], seed: u64) -> Result<FaultSet, String> {
    let mut loaded = Vec::new();
    if let Some(path) = file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--faults: cannot read {}: {e}", path.display()))?;
        loaded.extend(rules::parse_file(&text, &path.display().to_string())?);
    }
    for (i, text) in flags.iter().enumerate() {
        loaded.push(rules::parse_flag(text, i + 1)?);
    }
    Ok(FaultSet::new(loaded, Instant::now(), seed))
}

/// Re-reads the rules at every SIGHUP, telling stderr how it went.
pub async fn reload_on_hangup(live: Arc<LiveRules>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let Ok(mut hangups) = signal(SignalKind::hangup()) else { return };
        while hangups.recv().await.is_some() {
            match live.reload() {
                Ok(told) => eprintln!("kwire proxy: SIGHUP: {told}"),
                Err(e) => eprintln!("kwire proxy: SIGHUP: the rules in force stay: {e}"),
            }
        }
    }
    #[cfg(not(unix))]
    std::future::pending::<()>().await;
}

/// Serves the control endpoint on `listener` until the process ends.
pub async fn serve_control(listener: TcpListener, live: Arc<LiveRules>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(answer(stream, Arc::clone(&live)));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

async fn answer(mut stream: TcpStream, live: Arc<LiveRules>) {
    let Some((method, path)) = read_request_line(&mut stream).await else { return };
    let (status, kind, body) = route(&method, &path, &live);
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
}

const TEXT: &str = "text/plain; charset=utf-8";
const JSON: &str = "application/json";

/// The answer to one request: status line, content type, body.
fn route(method: &str, path: &str, live: &LiveRules) -> (&'static str, &'static str, String) {
    let set = live.current();
    match (method, path.trim_end_matches('/')) {
        ("GET", "/metrics") => (
            "200 OK",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics(&set, live.reloads.load(Ordering::Relaxed)),
        ),
        ("GET", "/rules") => ("200 OK", JSON, rules_json(&set)),
        ("POST", "/reload") => match live.reload() {
            Ok(told) => ("200 OK", TEXT, format!("{told}\n")),
            Err(e) => ("400 Bad Request", TEXT, format!("the rules in force stay: {e}\n")),
        },
        ("POST", rule_path) if rule_path.starts_with("/rules/") => {
            let mut parts = rule_path["/rules/".len()..].split('/');
            let (which, switch) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            let on = match switch {
                "on" => true,
                "off" => false,
                _ => return ("404 Not Found", TEXT, "POST /rules/N/on or /rules/N/off\n".to_owned()),
            };
            if which == "all" {
                (0..set.rules().len()).for_each(|i| {
                    set.set_enabled(i, on);
                });
                return ("200 OK", TEXT, format!("every rule {switch}\n"));
            }
            match which.parse::<usize>().ok().filter(|n| *n >= 1 && set.set_enabled(n - 1, on)) {
                Some(n) => ("200 OK", TEXT, format!("rule {n} {switch}\n")),
                None => (
                    "404 Not Found",
                    TEXT,
                    format!("no rule `{which}`: rules are numbered 1 to {}\n", set.rules().len()),
                ),
            }
        }
        _ => (
            "404 Not Found",
            TEXT,
            "try GET /metrics, GET /rules, POST /rules/N/on|off, POST /reload\n".to_owned(),
        ),
    }
}

fn rules_json(set: &FaultSet) -> String {
    let rules: Vec<_> = set
        .status()
        .iter()
        .enumerate()
        .map(|(i, s)| {
            json!({
                "number": i + 1,
                "origin": s.rule.origin,
                "action": s.rule.action.to_string(),
                "enabled": s.enabled,
                "matched": s.matched,
                "applied": s.applied,
            })
        })
        .collect();
    let mut text = serde_json::Value::Array(rules).to_string();
    text.push('\n');
    text
}

/// One number of a rule's status.
type Reading = fn(&RuleStatus<'_>) -> u64;

fn metrics(set: &FaultSet, reloads: u64) -> String {
    let status = set.status();
    let mut out = String::new();
    let label = |s: &RuleStatus<'_>, n: usize| {
        format!(
            "rule=\"{n}\",origin=\"{}\",action=\"{}\"",
            escape_label(&s.rule.origin),
            escape_label(&s.rule.action.to_string())
        )
    };
    let families: [(&str, &str, &str, Reading); 3] = [
        ("kwire_proxy_fault_applied", "counter", "Faults the rule applied.", |s| s.applied),
        (
            "kwire_proxy_fault_matched",
            "counter",
            "Requests the rule's selector took inside its time window.",
            |s| s.matched,
        ),
        ("kwire_proxy_fault_rule_enabled", "gauge", "1 when the rule is on.", |s| u64::from(s.enabled)),
    ];
    for (name, kind, help, value) in families {
        let _ = writeln!(out, "# TYPE {name} {kind}\n# HELP {name} {help}");
        let suffix = if kind == "counter" { "_total" } else { "" };
        for (i, s) in status.iter().enumerate() {
            let _ = writeln!(out, "{name}{suffix}{{{}}} {}", label(s, i + 1), value(s));
        }
    }
    let _ = writeln!(
        out,
        "# TYPE kwire_proxy_fault_reloads counter\n# HELP kwire_proxy_fault_reloads Times the rules were read again.\nkwire_proxy_fault_reloads_total {reloads}\n# EOF"
    );
    out
}

/// An OpenMetrics label value: backslash, quote and newline escaped.
fn escape_label(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(flags: &[&str]) -> LiveRules {
        LiveRules::load(None, flags.iter().map(|f| (*f).to_owned()).collect(), 1).unwrap()
    }

    #[test]
    fn rules_are_switched_and_shown_by_number() {
        let live = live(&["api=Produce,action=drop-response", "action=error,error=NOT_COORDINATOR"]);
        assert_eq!(route("POST", "/rules/2/off", &live).0, "200 OK");
        assert!(!live.current().status()[1].enabled);
        let (status, _, body) = route("POST", "/rules/3/off", &live);
        assert_eq!(status, "404 Not Found");
        assert!(body.contains("numbered 1 to 2"), "{body}");
        assert_eq!(route("POST", "/rules/all/on", &live).0, "200 OK");
        let (_, kind, body) = route("GET", "/rules", &live);
        assert_eq!(kind, JSON);
        let rules: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(rules[1]["action"], "error NOT_COORDINATOR");
        assert_eq!(rules[1]["enabled"], true);
        assert_eq!(rules[0]["origin"], "--fault #1");
        assert_eq!(route("GET", "/nowhere", &live).0, "404 Not Found");
    }

    #[test]
    fn metrics_name_each_rule_and_end_with_eof() {
        let live = live(&["api=Produce,action=drop-response"]);
        live.reload().unwrap();
        let (_, _, text) = route("GET", "/metrics", &live);
        assert!(
            text.contains(
                "kwire_proxy_fault_applied_total{rule=\"1\",origin=\"--fault #1\",action=\"drop-response\"} 0"
            ),
            "{text}"
        );
        assert!(text.contains("kwire_proxy_fault_rule_enabled{rule=\"1\""), "{text}");
        assert!(text.contains("kwire_proxy_fault_reloads_total 1"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn a_bad_file_at_reload_keeps_the_rules_in_force() {
        let path = std::env::temp_dir().join(format!("kwire-faults-{}.toml", std::process::id()));
        std::fs::write(&path, "[[rule]]\naction = \"cut-before\"\n").unwrap();
        let live = LiveRules::load(Some(path.clone()), Vec::new(), 1).unwrap();
        std::fs::write(&path, "[[rule]]\naction = \"cut-before\"\nspeed = 3\n").unwrap();
        let (status, _, body) = route("POST", "/reload", &live);
        assert_eq!(status, "400 Bad Request");
        assert!(body.contains("unknown key `speed`"), "{body}");
        assert_eq!(live.current().rules().len(), 1);
        std::fs::write(&path, "[[rule]]\naction = \"cut-before\"\n[[rule]]\naction = \"cut-after\"\n")
            .unwrap();
        assert_eq!(route("POST", "/reload", &live).0, "200 OK");
        assert_eq!(live.current().rules().len(), 2);
        let _ = std::fs::remove_file(path);
    }
}
