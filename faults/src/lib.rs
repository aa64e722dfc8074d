//! `kwire proxy`'s fault injection, sans-IO: the rules as the user writes them ([`rules`]: a
//! TOML file of `[[rule]]` tables or `--fault` flags; [`scenario`]: a `kwire chaos run`
//! scenario), which request a rule picks ([`FaultSet::decide`]), and what the byte-level actions
//! make of a frame: the error answer a rule sends instead of the broker's ([`error_answer`]), a
//! response with fields rewritten ([`rewrite`]) or a record batch corrupted ([`corrupt`]), the
//! topics a request names ([`request_topics`]) and the order owed responses go back in
//! ([`owed`]).
//!
//! The proxy in the root `kwire` crate (`src/commands/proxy.rs`, a tokio shell) applies it: it
//! does the waiting, dropping and cutting the decisions ask for. Nothing here opens a socket,
//! starts a task or reads a clock (time enters as an `Instant`), so the fuzz targets
//! (`fuzz/`: `fault_rules`, `fault_answers`) and the benchmark run it alone. Any text is a rule
//! set or an error naming where; any bytes are an answer or an error saying why not; neither
//! panics.
//!
//! A rule is looked at for every request a client sends, in the order the rules were given;
//! the first whose selector matches and whose trigger fires decides what happens to the
//! request (and to its response).

#![warn(missing_docs)]

mod api_name;
pub mod corrupt;
pub mod error_answer;
pub mod owed;
pub mod request_topics;
pub mod rewrite;
pub mod rules;
pub mod scenario;

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kafka_wire::protocol::ApiKey;
use kwire_capture::RequestSummary;

pub use api_name::parse_api_filter;
pub use rules::{Action, DelaySpread, Distribution, Rule};

/// What a rule may look at in one request.
pub struct RequestFacts<'a> {
    /// Its API, version and client id, as the proxy peeked them.
    pub summary: &'a RequestSummary,
    /// The request without its size prefix (its header and body).
    pub frame: &'a bytes::Bytes,
    /// The upstream broker the connection goes to (`host:port`).
    pub broker: &'a str,
    /// The name of the topic with this id (base64url text), where known: a `topic` rule
    /// matches a request that names its topic by id alone (Fetch v13+) through it.
    pub topic_name_of: &'a dyn Fn(&str) -> Option<String>,
}

impl fmt::Debug for RequestFacts<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestFacts")
            .field("summary", self.summary)
            .field("frame", self.frame)
            .field("broker", &self.broker)
            .finish_non_exhaustive()
    }
}

/// A rule's decision about one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The rule's index in the set, and its origin (`faults.toml:12`).
    pub rule: usize,
    /// Where the rule was written.
    pub origin: String,
    /// What the request suffers.
    pub action: Action,
    /// For `action = delay`: this request's delay, drawn from the rule's spread; zero otherwise.
    pub delay: Duration,
}

impl Decision {
    /// The action as the proxy's output names it; a delay drawn from a spread says what it drew
    /// (`delay 100 ms ± 20 ms normal (request): 113 ms`).
    pub fn applied(&self) -> String {
        match &self.action {
            Action::Delay { delay, .. } if !delay.jitter.is_zero() => {
                format!("{}: {} ms", self.action, self.delay.as_millis())
            }
            other => other.to_string(),
        }
    }
}

/// One rule as the control endpoint shows it.
#[derive(Debug)]
pub struct RuleStatus<'a> {
    /// The rule as it was read.
    pub rule: &'a Rule,
    /// Whether it is looked at (the control endpoint switches rules off and on).
    pub enabled: bool,
    /// Requests its selector took inside its time window.
    pub matched: u64,
    /// Faults it applied.
    pub applied: u64,
}

/// The loaded rules, and what each has counted.
#[derive(Debug)]
pub struct FaultSet {
    rules: Vec<Rule>,
    /// Matches so far, per rule (the count `first` and `every` read).
    matched: Vec<AtomicU64>,
    /// Faults applied so far, per rule.
    applied: Vec<AtomicU64>,
    /// Rules switched off at run time (the control endpoint) are passed over.
    enabled: Vec<AtomicBool>,
    loaded: Instant,
    random: Mutex<u64>,
    /// The rules naming each API, and those naming none, by index in rule order: a request
    /// looks only at rules that can match its API, whatever the number of other rules.
    by_api: HashMap<ApiKey, Vec<usize>>,
    any_api: Vec<usize>,
}

impl FaultSet {
    /// `rules`, loaded at `now`; `seed` starts the probability draws (the same seed and the same
    /// requests in the same order draw the same faults).
    pub fn new(rules: Vec<Rule>, now: Instant, seed: u64) -> Self {
        let counters = || rules.iter().map(|_| AtomicU64::new(0)).collect();
        let mut by_api: HashMap<ApiKey, Vec<usize>> = HashMap::new();
        let mut any_api = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            if rule.selector.apis.is_empty() {
                any_api.push(i);
            }
            for api in &rule.selector.apis {
                let list = by_api.entry(*api).or_default();
                if list.last() != Some(&i) {
                    list.push(i);
                }
            }
        }
        Self {
            by_api,
            any_api,
            matched: counters(),
            applied: counters(),
            enabled: rules.iter().map(|_| AtomicBool::new(true)).collect(),
            rules,
            loaded: now,
            // xorshift must not start at 0.
            random: Mutex::new(seed | 1),
        }
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// How many times each rule was applied, in rule order.
    pub fn applied(&self) -> Vec<u64> {
        self.applied.iter().map(|c| c.load(Ordering::Relaxed)).collect()
    }

    /// Switches rule `index` (from 0) on or off; false when there is no such rule.
    pub fn set_enabled(&self, index: usize, on: bool) -> bool {
        self.enabled.get(index).map(|e| e.store(on, Ordering::Relaxed)).is_some()
    }

    /// Each rule with its state and counts, in rule order.
    pub fn status(&self) -> Vec<RuleStatus<'_>> {
        self.rules
            .iter()
            .enumerate()
            .map(|(i, rule)| RuleStatus {
                rule,
                enabled: self.enabled[i].load(Ordering::Relaxed),
                matched: self.matched[i].load(Ordering::Relaxed),
                applied: self.applied[i].load(Ordering::Relaxed),
            })
            .collect()
    }

    /// What happens to `request` at `now`: the first rule that matches and fires, or `None`
    /// (forward it as it is).
    pub fn decide(&self, request: &RequestFacts<'_>, now: Instant) -> Option<Decision> {
        let since = now.saturating_duration_since(self.loaded);
        let mut topics = None;
        let named = self.by_api.get(&request.summary.api).map_or(&[][..], Vec::as_slice);
        for i in merged(named, &self.any_api) {
            let rule = &self.rules[i];
            if !self.enabled[i].load(Ordering::Relaxed)
                || !selects(rule, request, &mut topics)
                || !in_window(rule, since)
            {
                continue;
            }
            let n = self.matched[i].fetch_add(1, Ordering::Relaxed) + 1;
            let t = &rule.trigger;
            let fires = t.first.is_none_or(|first| n <= first)
                && t.every.is_none_or(|every| n.is_multiple_of(every))
                && t.probability.is_none_or(|p| self.draw() < p);
            if fires {
                self.applied[i].fetch_add(1, Ordering::Relaxed);
                let delay = match &rule.action {
                    Action::Delay { delay, .. } => delay.draw(|| self.draw()),
                    _ => Duration::ZERO,
                };
                return Some(Decision {
                    rule: i,
                    origin: rule.origin.clone(),
                    action: rule.action.clone(),
                    delay,
                });
            }
        }
        None
    }

    /// A draw in `[0, 1)` (xorshift64*: statistically fine for fault odds, not for secrets).
    fn draw(&self) -> f64 {
        let mut state = self.random.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut x = *state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        *state = x;
        let bits = x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11;
        bits as f64 / (1u64 << 53) as f64
    }
}

/// Whether `rule`'s selector takes `request` (`topics`: what its body names, read once, when
/// a rule first needs it).
fn selects(rule: &Rule, request: &RequestFacts<'_>, topics: &mut Option<Vec<request_topics::Named>>) -> bool {
    let s = &rule.selector;
    let summary = request.summary;
    if !s.apis.is_empty() && !s.apis.contains(&summary.api) {
        return false;
    }
    if s.versions.is_some_and(|(min, max)| !(min..=max).contains(&summary.version)) {
        return false;
    }
    if s.broker.as_deref().is_some_and(|b| b != request.broker) {
        return false;
    }
    if s.client_id.as_ref().is_some_and(|c| summary.client_id.as_ref() != Some(c)) {
        return false;
    }
    if !s.reads_body() {
        return true;
    }
    let named = topics.get_or_insert_with(|| request_topics::named_in(request.frame));
    named.iter().any(|n| {
        s.topic.as_ref().is_none_or(|t| match (&n.topic, &n.topic_id) {
            (Some(name), _) => name == t,
            (None, Some(id)) => (request.topic_name_of)(id).as_ref() == Some(t),
            (None, None) => false,
        }) && s.partition.is_none_or(|p| n.partition == Some(p))
    })
}

/// The indices of two ascending lists, ascending: rule order across both.
fn merged<'a>(a: &'a [usize], b: &'a [usize]) -> impl Iterator<Item = usize> + 'a {
    let (mut a, mut b) = (a.iter().copied().peekable(), b.iter().copied().peekable());
    std::iter::from_fn(move || match (a.peek(), b.peek()) {
        (Some(x), Some(y)) if x <= y => a.next(),
        (Some(_) | None, Some(_)) => b.next(),
        (Some(_), None) => a.next(),
        (None, None) => None,
    })
}

fn in_window(rule: &Rule, since: Duration) -> bool {
    rule.trigger.after.is_none_or(|a| since >= a) && rule.trigger.until.is_none_or(|u| since < u)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_wire::protocol::frame::encode_request;
    use kafka_wire::protocol::messages::MetadataRequest;
    use kwire_capture::peek_request;

    fn metadata(client: &str) -> (RequestSummary, bytes::Bytes) {
        let frame = encode_request(&MetadataRequest::for_topics(&["orders".to_owned()]), 12, 7, Some(client))
            .unwrap();
        let frame = bytes::Bytes::from(frame).slice(4..);
        (peek_request(&frame).unwrap(), frame)
    }

    fn set(flags: &[&str]) -> FaultSet {
        let rules = flags.iter().enumerate().map(|(i, f)| rules::parse_flag(f, i + 1).unwrap()).collect();
        FaultSet::new(rules, Instant::now(), 42)
    }

    fn decide(set: &FaultSet, client: &str, at: Duration) -> Option<usize> {
        let (summary, frame) = metadata(client);
        let facts =
            RequestFacts { summary: &summary, frame: &frame, broker: "b:9092", topic_name_of: &|_| None };
        set.decide(&facts, set.loaded + at).map(|d| d.rule)
    }

    #[test]
    fn the_first_rule_that_matches_and_fires_decides() {
        let set = set(&[
            "api=Produce,action=cut-before",
            "api=Metadata,client_id=other,action=cut-before",
            "api=Metadata,topic=orders,first=2,action=drop-response",
            "api=3,action=cut-after",
        ]);
        assert_eq!(decide(&set, "app", Duration::ZERO), Some(2));
        assert_eq!(decide(&set, "app", Duration::ZERO), Some(2));
        // The third rule's first two matches are spent: the fourth (Metadata by key) takes over.
        assert_eq!(decide(&set, "app", Duration::ZERO), Some(3));
        assert_eq!(decide(&set, "other", Duration::ZERO), Some(1));
        assert_eq!(set.applied(), [0, 1, 2, 1]);
    }

    #[test]
    fn rules_of_other_apis_are_not_looked_at_and_order_holds_across_the_index() {
        assert_eq!(merged(&[1, 4, 6], &[0, 5]).collect::<Vec<_>>(), [0, 1, 4, 5, 6]);
        let set = set(&[
            "api=Produce,action=cut-before",
            "action=cut-after",
            "api=Metadata|Fetch,action=cut-before",
        ]);
        assert_eq!(decide(&set, "a", Duration::ZERO), Some(1), "the rule for any API comes first");
        assert_eq!(set.status().iter().map(|s| s.matched).collect::<Vec<_>>(), [0, 1, 0]);
    }

    #[test]
    fn a_rule_switched_off_is_passed_over_until_switched_on() {
        let set = set(&["action=drop-response", "action=cut-before"]);
        assert!(set.set_enabled(0, false));
        assert_eq!(decide(&set, "a", Duration::ZERO), Some(1));
        assert!(set.set_enabled(0, true));
        assert_eq!(decide(&set, "a", Duration::ZERO), Some(0));
        assert!(!set.set_enabled(2, false), "no third rule");
        let status = set.status();
        assert_eq!(
            status.iter().map(|s| (s.enabled, s.matched, s.applied)).collect::<Vec<_>>(),
            [(true, 1, 1), (true, 1, 1)],
            "a switched-off rule counts nothing"
        );
    }

    #[test]
    fn a_topic_rule_matches_a_fetch_naming_the_topic_by_id_once_the_id_is_known() {
        use kafka_wire::protocol::schema::encode::json_to_frame;
        let fetch = serde_json::json!({
            "header": {"request_api_key": 1, "request_api_version": 13, "correlation_id": 1, "client_id": "c"},
            "body": {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1000,
                "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                "topics": [{"topic_id": "x6PVMq1pS4W3wfd3cT6Ncg", "partitions": [{"partition": 3,
                    "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
                    "log_start_offset": -1, "partition_max_bytes": 1000}]}],
                "forgotten_topics_data": [], "rack_id": ""}
        });
        let frame = bytes::Bytes::from(json_to_frame(&fetch, None).unwrap());
        let summary = peek_request(&frame).unwrap();
        let set = set(&["topic=orders,partition=3,action=cut-before"]);
        let ask = |lookup: &dyn Fn(&str) -> Option<String>| {
            let facts =
                RequestFacts { summary: &summary, frame: &frame, broker: "b:9092", topic_name_of: lookup };
            set.decide(&facts, set.loaded).is_some()
        };
        assert!(!ask(&|_| None), "an unknown id names no topic");
        assert!(!ask(&|_| Some("payments".to_owned())));
        assert!(ask(&|id| (id == "x6PVMq1pS4W3wfd3cT6Ncg").then(|| "orders".to_owned())));
    }

    #[test]
    fn every_nth_match_inside_the_time_window() {
        let set = set(&["every=3,after=10,until=20,action=cut-before"]);
        assert_eq!(decide(&set, "a", Duration::from_secs(5)), None, "before the window: not counted");
        let fired: Vec<bool> = (0..6).map(|_| decide(&set, "a", Duration::from_secs(12)).is_some()).collect();
        assert_eq!(fired, [false, false, true, false, false, true]);
        assert_eq!(decide(&set, "a", Duration::from_secs(20)), None, "`until` is exclusive");
    }

    #[test]
    fn probability_fires_about_that_often_and_a_topic_not_named_never_matches() {
        let odds = set(&["probability=0.25,action=cut-before"]);
        let fired = (0..4000).filter(|_| decide(&odds, "a", Duration::ZERO).is_some()).count();
        assert!((800..1200).contains(&fired), "{fired} of 4000 at p = 0.25");
        let other_topic = set(&["topic=payments,action=cut-before", "partition=3,action=cut-before"]);
        assert_eq!(decide(&other_topic, "a", Duration::ZERO), None);
    }
}
