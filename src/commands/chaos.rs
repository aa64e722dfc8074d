//! `kwire chaos run SCENARIO -- COMMAND...`: a command against the cluster through an
//! in-process `kwire proxy` applying a scenario's fault rules (`kwire_faults::scenario`), and a
//! report of what happened: the command's exit status and time, each rule's matched and applied
//! counts, the proxy's pair summary. The command's own output passes through; the report comes
//! after it on stdout.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kwire_faults::scenario::parse_scenario;
use kwire_faults::FaultSet;
use serde_json::json;

use super::proxy::RunningProxy;
use super::proxy_control::LiveRules;
use super::Context;
use crate::cli::{ChaosRunArgs, Format, PairFilterArgs, ProxyArgs};
use crate::exit::{Exit, Failure};
use crate::time::now_ns;

/// How the command ended.
enum Ending {
    Exited(i32),
    Signalled,
    TimedOut(Duration),
}

pub async fn run(ctx: &Context, args: &ChaosRunArgs) -> Result<(), Failure> {
    let usage = |m: String| Failure::new(Exit::USAGE, m);
    let path = args.scenario.display().to_string();
    let text =
        std::fs::read_to_string(&args.scenario).map_err(|e| usage(format!("cannot read {path}: {e}")))?;
    let scenario = parse_scenario(&text, &path).map_err(usage)?;
    let upstream = scenario.upstream.clone().or_else(|| ctx.global.bootstrap.clone()).ok_or_else(|| {
        usage(format!(
            "no brokers to put the proxy in front of: give upstream in {path}'s [scenario], \
             --bootstrap-server HOST:PORT, or KWIRE_BOOTSTRAP"
        ))
    })?;
    let pairs: Box<dyn std::io::Write + Send> = match &args.pairs {
        Some(file) => Box::new(
            std::fs::File::create(file)
                .map_err(|e| usage(format!("cannot create {}: {e}", file.display())))?,
        ),
        None => Box::new(std::io::sink()),
    };
    let proxy_args = ProxyArgs {
        upstream,
        listen: "127.0.0.1:0".to_owned(),
        apis: Vec::new(),
        pairs: PairFilterArgs::default(),
        pcap: None,
        max_frame: kafka_wire::protocol::frame::DEFAULT_MAX_FRAME,
        faults: None,
        fault: Vec::new(),
        fault_seed: None,
        control: None,
        allow_remote_faults: false,
    };
    let seed = args.fault_seed.unwrap_or_else(|| now_ns().unsigned_abs());
    // The rules' clock starts here, just before the command.
    let live = Arc::new(LiveRules::fixed(FaultSet::new(scenario.rules, Instant::now(), seed)));
    let mut proxy = RunningProxy::start(Format::Json, &proxy_args, Some(live), pairs)?;
    let bootstrap = proxy.bootstrap.join(",");
    let (program, rest) =
        args.command.split_first().ok_or_else(|| usage("no command after --".to_owned()))?;
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(rest.iter().map(|a| a.replace("{bootstrap}", &bootstrap)))
        .env("KWIRE_BOOTSTRAP", &bootstrap)
        .env("KWIRE_CHAOS_BOOTSTRAP", &bootstrap)
        .stdin(Stdio::inherit())
        .spawn()
        .map_err(|e| usage(format!("cannot run `{program}`: {e}")))?;
    let ending = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status.code().map_or(Ending::Signalled, Ending::Exited),
            Ok(None) => {}
            Err(e) => return Err(Failure::new(Exit::COMMAND, format!("cannot wait for `{program}`: {e}"))),
        }
        if let Some(limit) = scenario.timeout.filter(|t| started.elapsed() > *t) {
            let _ = child.kill();
            let _ = child.wait();
            break Ending::TimedOut(limit);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let took = started.elapsed();
    let summary = proxy.stop().await;
    let set = proxy.faults();
    let rules: Vec<_> = set
        .iter()
        .flat_map(|s| s.status())
        .map(|s| (s.rule.origin.clone(), s.rule.action.to_string(), s.matched, s.applied))
        .collect();
    let outcome = match &ending {
        Ending::Exited(0) => "exited 0".to_owned(),
        Ending::Exited(code) => format!("exited {code}"),
        Ending::Signalled => "was killed by a signal".to_owned(),
        Ending::TimedOut(limit) => {
            format!("was stopped after the scenario's timeout_s ({} s)", limit.as_secs_f64())
        }
    };
    let command_line = args.command.join(" ");
    match ctx.format() {
        Format::Json => {
            let doc = json!({
                "scenario": path,
                "command": args.command,
                "bootstrap": bootstrap,
                "exit_code": match ending { Ending::Exited(code) => Some(code), _ => None },
                "timed_out": matches!(ending, Ending::TimedOut(_)),
                "outcome": outcome,
                "duration_ms": took.as_millis(),
                "rules": rules.iter().map(|(origin, action, matched, applied)| json!({
                    "origin": origin, "action": action, "matched": matched, "applied": applied,
                })).collect::<Vec<_>>(),
                "proxy": summary,
            });
            println!("{}", crate::output::json_safe(&doc.to_string()));
        }
        Format::Text => {
            println!(
                "kwire chaos: `{}` {outcome} after {:.1} s, through {bootstrap}",
                crate::output::escape(&command_line),
                took.as_secs_f64()
            );
            for (origin, action, matched, applied) in &rules {
                println!("  rule {origin} ({action}): matched {matched}, applied {applied}");
            }
            println!("  proxy: {summary}");
        }
    }
    match ending {
        Ending::Exited(0) => Ok(()),
        _ => Err(Failure::exit_only(Exit::COMMAND)),
    }
}
