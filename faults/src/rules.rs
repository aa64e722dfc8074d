//! Fault rules as the user writes them: `[[rule]]` tables of a TOML file (`kwire proxy
//! --faults FILE`) or `key=value,key=value` text (`--fault`), both read by one key parser so the
//! two spellings cannot drift. An unknown key, a bad value or a rule without an action is an
//! error naming the rule (file and line, or the flag's position) and the key.

use std::fmt;
use std::time::Duration;

use kafka_wire::protocol::{ApiKey, ErrorCode};

use crate::api_name::parse_api_filter;

/// What a matching request suffers.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Forward it late (`direction = "request"`, the default), or forward its response late
    /// (`direction = "response"`; later responses on the connection wait behind it, as they
    /// would behind a slow broker); each request draws its own delay from `delay`.
    Delay {
        /// `delay_ms`, `jitter_ms` and `distribution`.
        delay: DelaySpread,
        /// `direction = "response"`.
        on_response: bool,
    },
    /// Forward it, and hold its response `hold` before passing it on: long enough and the
    /// client times the request out after the broker carried it out.
    Hold {
        /// `hold_ms`.
        hold: Duration,
    },
    /// Forward it and never pass its response on.
    DropResponse,
    /// Close the client's connection instead of forwarding it.
    CutBefore,
    /// Forward it, then close the client's connection before its response comes.
    CutAfter,
    /// Answer it with `code` instead of forwarding it: the response's top-level error and the
    /// error of every topic and partition the request named.
    Error {
        /// `error`, by name or number.
        code: ErrorCode,
    },
    /// Forward it, and flip a byte inside the first record batch of its response (Fetch
    /// only), which the client's CRC check must catch.
    Corrupt,
    /// Pass its response (`direction = "response"`, the default) or the request itself
    /// (`direction = "request"`) on at no more than `bytes_per_second`, a slice every 10 ms.
    /// A connection's frames go one after another, so a rule that takes every request of a
    /// connection limits that connection's bandwidth in that direction.
    Bandwidth {
        /// `bytes_per_second`, at least 1.
        bytes_per_second: u64,
        /// `direction = "response"` (the default).
        on_response: bool,
    },
    /// Forward it, and pass its response on with every field named `field` set to `value`
    /// (re-encoded by the schema interpreter).
    Rewrite {
        /// `field`: a field name of Kafka's schemas in snake case (not empty).
        field: String,
        /// `value`: a whole number, `true` / `false`, `null`, or else the text itself.
        value: serde_json::Value,
    },
}

/// How a delay is drawn, in whole milliseconds: `delay_ms`, give or take `jitter_ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DelaySpread {
    /// The delay, or the middle of the spread.
    pub delay: Duration,
    /// Zero: every delay is `delay`.
    pub jitter: Duration,
    /// How the jitter is spread.
    pub distribution: Distribution,
}

/// The shape of a delay's jitter (tc-netem's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// Any delay in `[delay − jitter, delay + jitter]` equally likely (Toxiproxy's latency).
    Uniform,
    /// A normal distribution of mean `delay` and standard deviation `jitter`.
    Normal,
}

impl DelaySpread {
    /// Always `delay`.
    pub fn fixed(delay: Duration) -> Self {
        Self { delay, jitter: Duration::ZERO, distribution: Distribution::Uniform }
    }

    /// One delay, from draws in `[0, 1)`; never below zero.
    pub fn draw(&self, mut uniform: impl FnMut() -> f64) -> Duration {
        if self.jitter.is_zero() {
            return self.delay;
        }
        let (mean, spread) = (self.delay.as_secs_f64(), self.jitter.as_secs_f64());
        let offset = match self.distribution {
            Distribution::Uniform => (2.0 * uniform() - 1.0) * spread,
            // Box–Muller; 1 − u keeps the logarithm's argument in (0, 1].
            Distribution::Normal => {
                let (u1, u2) = (1.0 - uniform(), uniform());
                (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos() * spread
            }
        };
        Duration::try_from_secs_f64(mean + offset).unwrap_or(Duration::ZERO)
    }
}

impl Action {
    /// The action's name as rules spell it.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Delay { .. } => "delay",
            Action::Hold { .. } => "hold",
            Action::DropResponse => "drop-response",
            Action::CutBefore => "cut-before",
            Action::CutAfter => "cut-after",
            Action::Error { .. } => "error",
            Action::Corrupt => "corrupt",
            Action::Bandwidth { .. } => "bandwidth",
            Action::Rewrite { .. } => "rewrite",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Delay { delay, on_response } => {
                write!(f, "delay {} ms", delay.delay.as_millis())?;
                if !delay.jitter.is_zero() {
                    let shape = match delay.distribution {
                        Distribution::Uniform => "uniform",
                        Distribution::Normal => "normal",
                    };
                    write!(f, " ± {} ms {shape}", delay.jitter.as_millis())?;
                }
                write!(f, " ({})", if *on_response { "response" } else { "request" })
            }
            Action::Rewrite { field, value } => write!(f, "rewrite {field} = {value}"),
            Action::Bandwidth { bytes_per_second, on_response } => write!(
                f,
                "bandwidth {bytes_per_second} B/s ({})",
                if *on_response { "response" } else { "request" }
            ),
            Action::Hold { hold } => write!(f, "hold the response {} ms", hold.as_millis()),
            Action::Error { code } => match code.name() {
                Some(name) => write!(f, "error {name}"),
                None => write!(f, "error {}", code.0),
            },
            other => f.write_str(other.name()),
        }
    }
}

/// When a matching request is acted on. Counts are of the rule's matches (over every
/// connection), from 1; times are since the rules were loaded.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trigger {
    /// Only the first `first` matches.
    pub first: Option<u64>,
    /// Only every `every`-th match (the `every`-th, the 2×`every`-th, ...).
    pub every: Option<u64>,
    /// Each match with this probability (0 to 1).
    pub probability: Option<f64>,
    /// Not before this time.
    pub after: Option<Duration>,
    /// Not from this time on.
    pub until: Option<Duration>,
}

/// Which requests a rule applies to. Every key given must hold; none given matches every request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Selector {
    /// Any of these APIs (empty: any).
    pub apis: Vec<ApiKey>,
    /// The request's version in `min..=max`.
    pub versions: Option<(i16, i16)>,
    /// The upstream broker (`host:port` as given to `--upstream` or named by Metadata).
    pub broker: Option<String>,
    /// The request header's client id.
    pub client_id: Option<String>,
    /// The request names this topic.
    pub topic: Option<String>,
    /// The request names this partition (of `topic` when given, of any topic otherwise).
    pub partition: Option<i32>,
}

impl Selector {
    /// Whether matching needs the request's body (its topics and partitions).
    pub fn reads_body(&self) -> bool {
        self.topic.is_some() || self.partition.is_some()
    }
}

/// One fault rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Where it was written (`faults.toml:12`, `--fault #2`), named in the proxy's output.
    pub origin: String,
    /// Which requests it applies to.
    pub selector: Selector,
    /// Which of those it acts on.
    pub trigger: Trigger,
    /// What they suffer.
    pub action: Action,
}

/// The keys any rule may have (selector, trigger, `action`).
const RULE_KEYS: &[&str] = &[
    "api",
    "version",
    "broker",
    "client_id",
    "topic",
    "partition",
    "first",
    "every",
    "probability",
    "after",
    "until",
    "action",
];

/// The keys only some actions take; each action names its own where it is read, and any other
/// of these given is named as not applying.
const ACTION_KEYS: &[&str] = &[
    "delay_ms",
    "jitter_ms",
    "distribution",
    "hold_ms",
    "error",
    "bytes_per_second",
    "field",
    "value",
    "direction",
];

/// Every key a rule may have, in the order the error for an unknown one lists them.
fn keys() -> impl Iterator<Item = &'static str> {
    RULE_KEYS.iter().chain(ACTION_KEYS).copied()
}

/// Reads the `[[rule]]` tables of a fault file; `path` names it in errors.
pub fn parse_file(text: &str, path: &str) -> Result<Vec<Rule>, String> {
    let doc = parse_toml(text, path)?;
    if let Some(key) = doc.keys().find(|k| *k != "rule") {
        return Err(format!("{path}: unknown top-level key `{key}` (the file holds [[rule]] tables)"));
    }
    rules_in(&doc, text, path)
}

/// `text` as a TOML document; an error names the line.
pub(crate) fn parse_toml(text: &str, path: &str) -> Result<toml::Table, String> {
    text.parse().map_err(|e: toml::de::Error| {
        let line = e.span().map(|s| format!(":{}", line_of(text, s.start))).unwrap_or_default();
        format!("{path}{line}: not TOML: {}", e.message())
    })
}

/// The rules of `doc`'s `[[rule]]` tables (`text` is its source, for line numbers).
pub(crate) fn rules_in(doc: &toml::Table, text: &str, path: &str) -> Result<Vec<Rule>, String> {
    let Some(rules) = doc.get("rule") else { return Ok(Vec::new()) };
    let toml::Value::Array(rules) = rules else {
        return Err(format!("{path}: `rule` must be [[rule]] tables"));
    };
    let lines = rule_lines(text);
    rules
        .iter()
        .enumerate()
        .map(|(i, rule)| {
            let origin = match lines.get(i) {
                Some(line) => format!("{path}:{line}"),
                None => format!("{path} rule {}", i + 1),
            };
            let toml::Value::Table(table) = rule else {
                return Err(format!("{origin}: a rule must be a table"));
            };
            let pairs = table
                .iter()
                .map(|(k, v)| Ok((k.clone(), toml_text(v).map_err(|why| format!("{origin}: `{k}`: {why}"))?)))
                .collect::<Result<Vec<_>, String>>()?;
            rule_of(origin, &pairs)
        })
        .collect()
}

/// Reads one `--fault` value (`key=value,key=value,...`); `position` counts the flags from 1.
/// An API list is written with `|` here (`api=Produce|Fetch`), since `,` separates keys.
pub fn parse_flag(text: &str, position: usize) -> Result<Rule, String> {
    let origin = format!("--fault #{position}");
    let pairs = text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|pair| {
            let (k, v) =
                pair.split_once('=').ok_or_else(|| format!("{origin}: `{pair}` is not key=value"))?;
            Ok((k.trim().to_owned(), v.trim().replace('|', ",")))
        })
        .collect::<Result<Vec<_>, String>>()?;
    rule_of(origin, &pairs)
}

/// A TOML value as the text the key parser reads (a list of strings joined by commas).
fn toml_text(value: &toml::Value) -> Result<String, String> {
    match value {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(n) => Ok(n.to_string()),
        toml::Value::Float(x) => Ok(x.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        toml::Value::Array(items) => {
            Ok(items.iter().map(toml_text).collect::<Result<Vec<_>, _>>()?.join(","))
        }
        _ => Err("expected a string, a number or a list".to_owned()),
    }
}

/// The line of each element of the document's `rule` array (its `[[rule]]` header, or its
/// inline table), as toml's parser places it: `toml::Table` keeps no positions, and a text
/// search for `[[rule]]` lines would miss `[[ rule ]]` and count one inside a multi-line string.
fn rule_lines(text: &str) -> Vec<usize> {
    let Ok(doc) = toml::de::DeTable::parse(text) else { return Vec::new() };
    let Some(rules) = doc.get_ref().get("rule").and_then(|r| r.get_ref().as_array()) else {
        return Vec::new();
    };
    rules.iter().map(|rule| line_of(text, rule.span().start)).collect()
}

fn line_of(text: &str, byte: usize) -> usize {
    text.get(..byte).map_or(1, |before| before.matches('\n').count() + 1)
}

/// One rule from its keys, each given once.
fn rule_of(origin: String, pairs: &[(String, String)]) -> Result<Rule, String> {
    let fail = |key: &str, why: String| format!("{origin}: `{key}`: {why}");
    let mut selector = Selector::default();
    let mut trigger = Trigger::default();
    let (mut action, mut direction, mut delay_ms, mut hold_ms, mut error) = (None, None, None, None, None);
    let (mut jitter_ms, mut distribution, mut bytes_per_second) = (None, None, None);
    let (mut field, mut new_value) = (None, None);
    let mut seen: Vec<&str> = Vec::new();
    for (key, value) in pairs {
        let key = key.as_str();
        if !keys().any(|k| k == key) {
            let all: Vec<&str> = keys().collect();
            return Err(format!("{origin}: unknown key `{key}` (a rule takes {})", all.join(", ")));
        }
        if seen.contains(&key) {
            return Err(fail(key, "given twice".to_owned()));
        }
        seen.push(key);
        let value = value.as_str();
        match key {
            "api" => {
                selector.apis = value
                    .split(',')
                    .map(|a| parse_api_filter(a.trim()))
                    .collect::<Result<_, _>>()
                    .map_err(|e| fail(key, e))?;
            }
            "version" => selector.versions = Some(version_range(value).map_err(|e| fail(key, e))?),
            "broker" => selector.broker = Some(value.to_owned()),
            "client_id" => selector.client_id = Some(value.to_owned()),
            "topic" => selector.topic = Some(value.to_owned()),
            "partition" => selector.partition = Some(number(value).map_err(|e| fail(key, e))?),
            "first" => trigger.first = Some(positive(value).map_err(|e| fail(key, e))?),
            "every" => trigger.every = Some(positive(value).map_err(|e| fail(key, e))?),
            "probability" => {
                let p: f64 = value.parse().map_err(|_| fail(key, format!("`{value}` is not a number")))?;
                if !(0.0..=1.0).contains(&p) {
                    return Err(fail(key, format!("{p} is not between 0 and 1")));
                }
                trigger.probability = Some(p);
            }
            "after" => trigger.after = Some(seconds(value).map_err(|e| fail(key, e))?),
            "until" => trigger.until = Some(seconds(value).map_err(|e| fail(key, e))?),
            "action" => action = Some(value.to_owned()),
            "direction" => {
                direction = Some(match value {
                    "request" => false,
                    "response" => true,
                    _ => return Err(fail(key, format!("`{value}`: give request or response"))),
                });
            }
            "delay_ms" => delay_ms = Some(millis(value).map_err(|e| fail(key, e))?),
            "jitter_ms" => jitter_ms = Some(millis(value).map_err(|e| fail(key, e))?),
            "distribution" => {
                distribution = Some(match value {
                    "uniform" => Distribution::Uniform,
                    "normal" => Distribution::Normal,
                    _ => return Err(fail(key, format!("`{value}`: give uniform or normal"))),
                });
            }
            "bytes_per_second" => bytes_per_second = Some(positive(value).map_err(|e| fail(key, e))?),
            "field" => {
                if value.is_empty() {
                    return Err(fail(key, "names no field".to_owned()));
                }
                field = Some(value.to_owned());
            }
            "value" => new_value = Some(json_scalar(value)),
            "hold_ms" => hold_ms = Some(millis(value).map_err(|e| fail(key, e))?),
            "error" => error = Some(error_code(value).map_err(|e| fail(key, e))?),
            _ => unreachable!("every key of RULE_KEYS and ACTION_KEYS is handled"),
        }
    }
    if let (Some(after), Some(until)) = (trigger.after, trigger.until) {
        if until <= after {
            return Err(format!("{origin}: `until` ({until:?}) must come after `after` ({after:?})"));
        }
    }
    let action_name =
        action.ok_or_else(|| format!("{origin}: no `action` (one of {})", ACTIONS.join(", ")))?;
    // The keys an action takes; any other action key given is a mistake worth naming.
    let (action, own): (Action, &[&str]) = match action_name.as_str() {
        "delay" => {
            let delay = delay_ms.ok_or_else(|| fail("delay_ms", "`action = delay` needs it".to_owned()))?;
            if distribution.is_some() && jitter_ms.is_none() {
                return Err(fail("distribution", "shapes `jitter_ms`: give it too".to_owned()));
            }
            let spread = DelaySpread {
                delay,
                jitter: jitter_ms.unwrap_or(Duration::ZERO),
                distribution: distribution.unwrap_or(Distribution::Uniform),
            };
            (
                Action::Delay { delay: spread, on_response: direction.unwrap_or(false) },
                &["delay_ms", "jitter_ms", "distribution", "direction"],
            )
        }
        "bandwidth" => (
            Action::Bandwidth {
                bytes_per_second: bytes_per_second
                    .ok_or_else(|| fail("bytes_per_second", "`action = bandwidth` needs it".to_owned()))?,
                on_response: direction.unwrap_or(true),
            },
            &["bytes_per_second", "direction"],
        ),
        "hold" => (
            Action::Hold {
                hold: hold_ms.ok_or_else(|| fail("hold_ms", "`action = hold` needs it".to_owned()))?,
            },
            &["hold_ms"],
        ),
        "drop-response" => (Action::DropResponse, &[]),
        "corrupt" => {
            if selector.apis != [ApiKey::FETCH] {
                return Err(fail(
                    "api",
                    "`action = corrupt` flips a byte of a Fetch response: give api = Fetch".to_owned(),
                ));
            }
            (Action::Corrupt, &[])
        }
        "cut-before" => (Action::CutBefore, &[]),
        "cut-after" => (Action::CutAfter, &[]),
        "error" => (
            Action::Error {
                code: error.ok_or_else(|| fail("error", "`action = error` needs it".to_owned()))?,
            },
            &["error"],
        ),
        "rewrite" => (
            Action::Rewrite {
                field: field.ok_or_else(|| fail("field", "`action = rewrite` needs it".to_owned()))?,
                value: new_value.ok_or_else(|| fail("value", "`action = rewrite` needs it".to_owned()))?,
            },
            &["field", "value"],
        ),
        other => {
            return Err(fail("action", format!("unknown action `{other}` (one of {})", ACTIONS.join(", "))))
        }
    };
    if let Some(stray) = ACTION_KEYS.iter().copied().find(|k| seen.contains(k) && !own.contains(k)) {
        return Err(fail(stray, format!("does not apply to `action = {action_name}`")));
    }
    Ok(Rule { origin, selector, trigger, action })
}

const ACTIONS: &[&str] = &[
    "delay",
    "hold",
    "drop-response",
    "cut-before",
    "cut-after",
    "error",
    "corrupt",
    "bandwidth",
    "rewrite",
];

/// A `value` as the JSON scalar a field takes: a whole number, `true` / `false`, `null`, or
/// else the text itself.
fn json_scalar(text: &str) -> serde_json::Value {
    match text {
        "true" => serde_json::Value::Bool(true),
        "false" => serde_json::Value::Bool(false),
        "null" => serde_json::Value::Null,
        _ => text.parse::<i64>().map_or_else(|_| serde_json::Value::from(text), serde_json::Value::from),
    }
}

fn number<T: std::str::FromStr>(value: &str) -> Result<T, String> {
    value.parse().map_err(|_| format!("`{value}` is not a whole number in range"))
}

fn positive(value: &str) -> Result<u64, String> {
    match number::<u64>(value)? {
        0 => Err("must be at least 1".to_owned()),
        n => Ok(n),
    }
}

fn millis(value: &str) -> Result<Duration, String> {
    number::<u64>(value).map(Duration::from_millis)
}

fn seconds(value: &str) -> Result<Duration, String> {
    let s: f64 = value.parse().map_err(|_| format!("`{value}` is not a number of seconds"))?;
    Duration::try_from_secs_f64(s).map_err(|_| format!("`{value}` is not a number of seconds from 0"))
}

/// `3`, `3-7` or `3+`, inclusive.
fn version_range(value: &str) -> Result<(i16, i16), String> {
    let range = if let Some(min) = value.strip_suffix('+') {
        (number(min.trim())?, i16::MAX)
    } else if let Some((min, max)) = value.split_once('-') {
        (number(min.trim())?, number(max.trim())?)
    } else {
        let v = number(value)?;
        (v, v)
    };
    if range.0 < 0 || range.1 < range.0 {
        return Err(format!("`{value}` is not a version range (give 3, 3-7 or 3+)"));
    }
    Ok(range)
}

/// An error code by Kafka's name (any case) or number.
fn error_code(value: &str) -> Result<ErrorCode, String> {
    if let Ok(n) = value.parse::<i16>() {
        return Ok(ErrorCode(n));
    }
    let wanted = value.trim().to_ascii_uppercase().replace('-', "_");
    (-1..=i16::from(u8::MAX))
        .map(ErrorCode)
        .find(|c| c.name() == Some(wanted.as_str()))
        .filter(|c| *c != ErrorCode::NONE)
        .ok_or_else(|| {
            format!("unknown error `{value}` (give a Kafka error name, e.g. NOT_COORDINATOR, or a code)")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_and_a_flag_read_the_same_rule() {
        let text =
            "# storms\n\n[[rule]]\napi = [\"Produce\", \"fetch\"]\nversion = \"3+\"\ntopic = \"orders\"\n\
                    first = 3\naction = \"error\"\nerror = \"not_leader_or_follower\"\n";
        let from_file = parse_file(text, "f.toml").unwrap();
        let from_flag = parse_flag(
            "api=Produce|fetch, version=3+, topic=orders, first=3, action=error, error=NOT_LEADER_OR_FOLLOWER",
            1,
        )
        .unwrap();
        assert_eq!(from_file.len(), 1);
        assert_eq!(from_file[0].origin, "f.toml:3");
        assert_eq!(from_flag.origin, "--fault #1");
        assert_eq!(from_file[0].selector, from_flag.selector);
        assert_eq!(from_file[0].trigger, from_flag.trigger);
        assert_eq!(from_file[0].action, Action::Error { code: ErrorCode::NOT_LEADER_OR_FOLLOWER });
        assert_eq!(from_file[0].selector.apis, [ApiKey::PRODUCE, ApiKey::FETCH]);
        assert_eq!(from_file[0].selector.versions, Some((3, i16::MAX)));
        assert_eq!(from_file[0].trigger.first, Some(3));
    }

    #[test]
    fn every_action_reads_with_its_own_keys() {
        let rule = |text| parse_flag(text, 1).map(|r| r.action);
        assert_eq!(
            rule("action=delay,delay_ms=250,direction=response"),
            Ok(Action::Delay { delay: DelaySpread::fixed(Duration::from_millis(250)), on_response: true })
        );
        assert_eq!(
            rule("action=delay,delay_ms=5"),
            Ok(Action::Delay { delay: DelaySpread::fixed(Duration::from_millis(5)), on_response: false })
        );
        assert_eq!(
            rule("action=delay,delay_ms=100,jitter_ms=20,distribution=normal"),
            Ok(Action::Delay {
                delay: DelaySpread {
                    delay: Duration::from_millis(100),
                    jitter: Duration::from_millis(20),
                    distribution: Distribution::Normal
                },
                on_response: false
            })
        );
        assert_eq!(
            rule("action=bandwidth,bytes_per_second=65536"),
            Ok(Action::Bandwidth { bytes_per_second: 65536, on_response: true })
        );
        assert_eq!(
            rule("api=Metadata,action=rewrite,field=leader_id,value=99"),
            Ok(Action::Rewrite { field: "leader_id".to_owned(), value: serde_json::Value::from(99) })
        );
        assert_eq!(
            rule("action=rewrite,field=host,value=elsewhere"),
            Ok(Action::Rewrite { field: "host".to_owned(), value: serde_json::Value::from("elsewhere") })
        );
        assert_eq!(
            rule("action=bandwidth,bytes_per_second=10,direction=request"),
            Ok(Action::Bandwidth { bytes_per_second: 10, on_response: false })
        );
        assert_eq!(rule("action=hold,hold_ms=31000"), Ok(Action::Hold { hold: Duration::from_secs(31) }));
        assert_eq!(rule("action=drop-response"), Ok(Action::DropResponse));
        assert_eq!(rule("action=cut-before"), Ok(Action::CutBefore));
        assert_eq!(rule("action=cut-after"), Ok(Action::CutAfter));
        assert_eq!(rule("action=error,error=16"), Ok(Action::Error { code: ErrorCode::NOT_COORDINATOR }));
        assert_eq!(rule("api=Fetch,action=corrupt"), Ok(Action::Corrupt));
        assert!(rule("api=Produce,action=corrupt").unwrap_err().contains("give api = Fetch"));
    }

    /// A deterministic stream of draws in `[0, 1)`.
    fn draws(seed: u64) -> impl FnMut() -> f64 {
        let mut x = seed | 1;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// Mean and standard deviation of `n` delays, in milliseconds, and the least and most.
    fn moments(spread: DelaySpread, n: usize) -> (f64, f64, f64, f64) {
        let mut uniform = draws(7);
        let ms: Vec<f64> = (0..n).map(|_| spread.draw(&mut uniform).as_secs_f64() * 1e3).collect();
        let mean = ms.iter().sum::<f64>() / n as f64;
        let sd = (ms.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        let (lo, hi) = ms.iter().fold((f64::MAX, f64::MIN), |(lo, hi), m| (lo.min(*m), hi.max(*m)));
        (mean, sd, lo, hi)
    }

    #[test]
    fn delays_are_drawn_around_delay_ms_with_the_jitter_and_shape_asked_for() {
        let ms = Duration::from_millis;
        let fixed = DelaySpread::fixed(ms(40));
        assert_eq!(fixed.draw(|| unreachable!("a fixed delay draws nothing")), ms(40));

        let uniform = DelaySpread { delay: ms(100), jitter: ms(20), distribution: Distribution::Uniform };
        let (mean, sd, lo, hi) = moments(uniform, 20_000);
        assert!((mean - 100.0).abs() < 1.0, "uniform mean {mean}");
        // A uniform spread over ±20 ms has a standard deviation of 20/√3 ≈ 11.5 ms.
        assert!((sd - 11.55).abs() < 0.5, "uniform sd {sd}");
        assert!(lo >= 80.0 && hi <= 120.0, "uniform range {lo}..{hi}");

        let normal = DelaySpread { delay: ms(100), jitter: ms(20), distribution: Distribution::Normal };
        let (mean, sd, lo, hi) = moments(normal, 20_000);
        assert!((mean - 100.0).abs() < 1.0, "normal mean {mean}");
        assert!((sd - 20.0).abs() < 1.0, "normal sd {sd}");
        assert!(lo < 40.0 && hi > 160.0, "a normal spread has tails past 3 sd: {lo}..{hi}");

        // Never below zero, however wide the jitter.
        let wide = DelaySpread { delay: ms(5), jitter: ms(50), distribution: Distribution::Normal };
        let (_, _, lo, _) = moments(wide, 5_000);
        assert!(lo >= 0.0, "{lo}");
    }

    #[test]
    fn mistakes_are_named_with_the_rule_and_the_key() {
        let text =
            "[[rule]]\naction = \"cut-before\"\n\n[[rule]]\naction = \"delay\"\ndelay_ms = 5\nretries = 2\n";
        let e = parse_file(text, "f.toml").unwrap_err();
        assert!(e.starts_with("f.toml:4: unknown key `retries`"), "{e}");
        let e = parse_file("[[rule]]\naction = \"delay\"\ndelay_ms = = 5\n", "f.toml").unwrap_err();
        assert!(e.starts_with("f.toml:3: not TOML"), "{e}");
        let e = parse_file("[rules]\n", "f.toml").unwrap_err();
        assert!(e.contains("unknown top-level key `rules`"), "{e}");
        for (text, wanted) in [
            ("api=Produce", "no `action`"),
            ("action=explode", "unknown action `explode`"),
            ("action=delay", "`delay_ms`: `action = delay` needs it"),
            ("action=error,error=NOT_A_THING", "unknown error `NOT_A_THING`"),
            ("action=error,error=NONE", "unknown error `NONE`"),
            ("action=cut-before,delay_ms=5", "`delay_ms`: does not apply to `action = cut-before`"),
            ("action=delay,delay_ms=5,distribution=normal", "`distribution`: shapes `jitter_ms`"),
            ("action=delay,delay_ms=5,jitter_ms=1,distribution=pareto", "give uniform or normal"),
            ("action=bandwidth", "`bytes_per_second`: `action = bandwidth` needs it"),
            ("action=bandwidth,bytes_per_second=0", "at least 1"),
            ("action=rewrite,value=1", "`field`: `action = rewrite` needs it"),
            ("action=rewrite,field=offset", "`value`: `action = rewrite` needs it"),
            ("action=cut-after,field=offset", "`field`: does not apply to `action = cut-after`"),
            ("action=hold,hold_ms=5,jitter_ms=1", "`jitter_ms`: does not apply to `action = hold`"),
            ("action=cut-before,api=Nope", "unknown API `Nope`"),
            ("action=cut-before,version=7-3", "not a version range"),
            ("action=cut-before,probability=1.5", "not between 0 and 1"),
            ("action=cut-before,every=0", "at least 1"),
            ("action=cut-before,after=5,until=2", "`until`"),
            ("action=cut-before,first=2,first=3", "`first`: given twice"),
            ("action=cut-before,nonsense", "`nonsense` is not key=value"),
        ] {
            let e = parse_flag(text, 2).unwrap_err();
            assert!(e.starts_with("--fault #2: "), "{text}: {e}");
            assert!(e.contains(wanted), "{text}: {e}");
        }
    }

    #[test]
    fn each_rule_is_named_by_its_own_line_however_its_table_is_written() {
        let origins = |text: &str| {
            parse_file(text, "f.toml").map(|r| r.into_iter().map(|r| r.origin).collect::<Vec<_>>())
        };
        // A header with spaces inside its brackets is a `[[rule]]` header too.
        let spaced = "[[ rule ]]\naction = \"cut-before\"\n\n[[rule]]\naction = \"cut-after\"\n";
        assert_eq!(origins(spaced), Ok(vec!["f.toml:1".to_owned(), "f.toml:4".to_owned()]));
        // `[[rule]]` inside a multi-line string is text, not the next rule.
        let quoted = "[[rule]]\naction = \"rewrite\"\nfield = \"host\"\nvalue = \"\"\"\n[[rule]]\n\"\"\"\n\
                      [[rule]]\naction = \"explode\"\n";
        let e = parse_file(quoted, "f.toml").unwrap_err();
        assert!(e.starts_with("f.toml:7: `action`: unknown action `explode`"), "{e}");
        // Inline tables are named by the line each starts on.
        let inline =
            "rule = [\n  { action = \"cut-before\" },\n  { api = \"Fetch\", action = \"corrupt\" },\n]\n";
        assert_eq!(origins(inline), Ok(vec!["f.toml:2".to_owned(), "f.toml:3".to_owned()]));
    }

    proptest::proptest! {
        /// No text panics the parsers: it is a rule or an error naming where.
        #[test]
        fn no_text_panics_the_parsers(text in "\\PC{0,200}") {
            let _ = parse_flag(&text, 1);
            let _ = parse_file(&text, "f.toml");
        }

        /// Rules' own keys with any values: a rule or an error naming the rule, never a panic.
        #[test]
        fn any_values_of_the_rule_keys_are_read_or_refused_by_name(
            pairs in proptest::collection::vec((0..RULE_KEYS.len() + ACTION_KEYS.len(), "[ -~]{0,12}"), 0..8),
        ) {
            let text: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{} = \"{}\"", keys().nth(*k).unwrap_or("api"), v.replace(['\\', '"'], "")))
                .collect();
            let file = format!("[[rule]]\n{}\n", text.join("\n"));
            if let Err(e) = parse_file(&file, "f.toml") {
                proptest::prop_assert!(e.starts_with("f.toml"), "{}", e);
            }
        }
    }
}
