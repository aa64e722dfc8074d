//! A `kwire chaos run` scenario: the `[[rule]]` tables of a fault file, whose `after` / `until`
//! make the timeline (seconds from the command's start), and a `[scenario]` table:
//!
//! ```toml
//! [scenario]
//! upstream = "127.0.0.1:9092"  # the brokers behind the proxy (default: --bootstrap)
//! timeout_s = 120              # the command is stopped past this (default: none)
//! ```

use std::time::Duration;

use super::rules::{parse_toml, rules_in, Rule};

/// A scenario's settings besides its rules.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scenario {
    /// `upstream`: the brokers behind the proxy (`HOST:PORT[,...]`); `None`: `--bootstrap`.
    pub upstream: Option<String>,
    /// `timeout_s`: the command is stopped past this; `None`: never.
    pub timeout: Option<Duration>,
    /// The `[[rule]]` tables, in order.
    pub rules: Vec<Rule>,
}

const KEYS: &[&str] = &["upstream", "timeout_s"];

/// Reads a scenario file; `path` names it in errors.
pub fn parse_scenario(text: &str, path: &str) -> Result<Scenario, String> {
    let doc = parse_toml(text, path)?;
    if let Some(key) = doc.keys().find(|k| *k != "rule" && *k != "scenario") {
        return Err(format!(
            "{path}: unknown top-level key `{key}` (a scenario holds [scenario] and [[rule]] tables)"
        ));
    }
    let mut scenario = Scenario { rules: rules_in(&doc, text, path)?, ..Scenario::default() };
    let Some(settings) = doc.get("scenario") else { return Ok(scenario) };
    let toml::Value::Table(settings) = settings else {
        return Err(format!("{path}: `scenario` must be a table"));
    };
    for (key, value) in settings {
        match (key.as_str(), value) {
            ("upstream", toml::Value::String(s)) => scenario.upstream = Some(s.clone()),
            ("timeout_s", toml::Value::Integer(n)) if *n > 0 => {
                scenario.timeout = Some(Duration::from_secs(n.unsigned_abs()));
            }
            ("timeout_s", toml::Value::Float(x)) if *x > 0.0 => {
                scenario.timeout = Duration::try_from_secs_f64(*x).ok();
            }
            ("upstream", _) => {
                return Err(format!("{path}: [scenario] `upstream`: give a HOST:PORT[,...] string"))
            }
            ("timeout_s", _) => {
                return Err(format!("{path}: [scenario] `timeout_s`: give a positive number of seconds"))
            }
            _ => {
                return Err(format!("{path}: [scenario]: unknown key `{key}` (it takes {})", KEYS.join(", ")))
            }
        }
    }
    Ok(scenario)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_and_a_timeline_of_rules() {
        let text = "[scenario]\nupstream = \"b:9092\"\ntimeout_s = 90\n\n[[rule]]\napi = \"Produce\"\n\
                    after = 5\nuntil = 15\naction = \"error\"\nerror = \"NOT_LEADER_OR_FOLLOWER\"\n";
        let s = parse_scenario(text, "s.toml").unwrap();
        assert_eq!(s.upstream.as_deref(), Some("b:9092"));
        assert_eq!(s.timeout, Some(Duration::from_secs(90)));
        assert_eq!(s.rules.len(), 1);
        assert_eq!(s.rules[0].origin, "s.toml:5");
        assert_eq!(s.rules[0].trigger.after, Some(Duration::from_secs(5)));
    }

    #[test]
    fn a_wrong_setting_is_named() {
        let e = parse_scenario("[scenario]\ntimeout = 3\n", "s.toml").unwrap_err();
        assert!(e.contains("unknown key `timeout`"), "{e}");
        let e = parse_scenario("[scenario]\ntimeout_s = -3\n", "s.toml").unwrap_err();
        assert!(e.contains("positive number of seconds"), "{e}");
        let e = parse_scenario("[faults]\n", "s.toml").unwrap_err();
        assert!(e.contains("unknown top-level key `faults`"), "{e}");
        let e = parse_scenario("[[rule]]\napi = \"Produce\"\n", "s.toml").unwrap_err();
        assert!(e.contains("s.toml:1: no `action`"), "{e}");
    }

    proptest::proptest! {
        /// No text panics the scenario parser; its errors name the file; and a rules file is a
        /// scenario without settings (what `parse_file` reads, it reads to the same rules).
        #[test]
        fn no_text_panics_it_and_a_rules_file_reads_as_a_scenario(
            text in proptest::prop_oneof![
                "\\PC{0,200}",
                "(\\[scenario\\]\n|\\[\\[rule\\]\\]\n|(upstream|timeout_s|api|action|first) = (\"[a-z:0-9-]{0,8}\"|-?[0-9]{1,3}(\\.5)?)\n){0,8}",
            ],
        ) {
            let scenario = parse_scenario(&text, "s.toml");
            if let Err(e) = &scenario {
                proptest::prop_assert!(e.starts_with("s.toml"), "{}", e);
            }
            if let Ok(rules) = crate::rules::parse_file(&text, "s.toml") {
                proptest::prop_assert_eq!(scenario, Ok(Scenario { rules, ..Scenario::default() }));
            }
        }
    }
}
