//! `kwire consume TOPIC... --group G`: kwire as a member of consumer group `G`, like `kcat -G`.
//! The group assigns the partitions (`-X group.protocol=classic|consumer`); each starts where
//! offset-engine puts the group's commit (an anomaly is printed to stderr with its numbers,
//! never a silent reset). It follows until Ctrl-C / SIGTERM or `--count`.
//!
//! Offsets are committed for what was printed, never ahead of it: every
//! `auto.commit.interval.ms`, before a partition is revoked, and when it stops — after which it
//! leaves the group and exits 0.

use std::time::{Duration, Instant};

use kafka_client::{
    apply_consumer_properties, Consumer, ConsumerConfig, ConsumerError, RebalanceListener, RevokeCommits,
    StartPosition, Subscription, TopicPartition,
};
use offset_engine::StartPolicy;

use super::consume::print_records;
use super::stop_signal::wait_for_stop;
use super::Context;
use crate::cli::{ConsumeArgs, ConsumeFrom};
use crate::command_config;
use crate::exit::{Exit, Failure};
use crate::handed_out::HandedOut;
use crate::output::escape;

/// Tells stderr about partition changes, and commits what was printed of revoked partitions.
struct Reporter {
    printed: HandedOut,
}

impl RebalanceListener for Reporter {
    fn on_assigned(&mut self, started: &[StartPosition]) {
        self.printed.started(started.iter().map(|s| s.partition.clone()));
        for s in started {
            match &s.anomaly {
                Some(anomaly) => eprintln!(
                    "kwire: assigned {} from offset {}: {}",
                    s.partition,
                    s.offset,
                    escape(&anomaly.to_string())
                ),
                None => eprintln!("kwire: assigned {} from offset {}", s.partition, s.offset),
            }
        }
    }

    fn on_revoked(&mut self, partitions: &[TopicPartition], commits: &mut RevokeCommits) {
        self.printed.commit_revoked(partitions, commits);
        for tp in partitions {
            eprintln!("kwire: revoked {tp}");
        }
    }

    fn on_lost(&mut self, partitions: &[TopicPartition]) {
        self.printed.forget(partitions);
        for tp in partitions {
            eprintln!("kwire: lost {tp} (fenced or the session expired): nothing more is committed for it");
        }
    }
}

/// The consumer settings: `-X` / `--command-config` consumer keys, then the flags (`--group`
/// and `--from` win); auto-commit is the command's own (of printed positions).
fn consumer_config(ctx: &Context, args: &ConsumeArgs, group: &str) -> Result<ConsumerConfig, Failure> {
    let mut config = ConsumerConfig {
        start: StartPolicy::Earliest,
        isolation: args.isolation,
        request_timeout: ctx.global.timeout,
        ..ConsumerConfig::default()
    };
    let pairs = command_config::pairs(ctx.global.command_config.as_deref(), &ctx.global.property)?;
    let reset_given = pairs.iter().any(|(k, _)| k.trim() == "auto.offset.reset");
    let warnings = apply_consumer_properties(&mut config, pairs)
        .map_err(|e| Failure::new(Exit::USAGE, e.to_string()))?;
    for w in warnings {
        eprintln!("kwire: warning: {}", escape(&w.to_string()));
    }
    config.group_id = Some(group.to_owned());
    match args.from {
        None if reset_given => {}
        None | Some(ConsumeFrom::Earliest) => config.start = StartPolicy::Earliest,
        Some(ConsumeFrom::Latest) => config.start = StartPolicy::Latest,
        Some(ConsumeFrom::Offset(_) | ConsumeFrom::Time(_)) => {
            return Err(Failure::new(
                Exit::USAGE,
                "--from OFFSET or @TIME cannot be used with --group: the group's commits say where each \
                 partition starts (--from earliest|latest only picks the start of partitions without one)",
            ));
        }
    }
    let auto_commit_interval = config.auto_commit_interval;
    config.enable_auto_commit = false;
    config.auto_commit_interval = auto_commit_interval;
    Ok(config)
}

pub async fn run(ctx: &Context, args: &ConsumeArgs, group: &str) -> Result<(), Failure> {
    if args.partition.is_some() {
        return Err(Failure::new(
            Exit::USAGE,
            "--partition cannot be used with --group: the group assigns partitions",
        ));
    }
    let config = consumer_config(ctx, args, group)?;
    let commit_every = config.auto_commit_interval;
    let client = ctx.client().await?;
    let printed = HandedOut::default();
    let mut consumer = Consumer::new(client, config);
    consumer.set_listener(Reporter { printed: printed.clone() });
    consumer.subscribe(Subscription::Topics(args.topics.clone())).map_err(Failure::from)?;

    let stop = wait_for_stop();
    tokio::pin!(stop);
    let mut remaining = args.count.unwrap_or(u64::MAX);
    let mut text = String::new();
    let mut last_commit = Instant::now();
    let mut outcome = Ok(());
    while remaining > 0 {
        let polled = tokio::select! {
            () = &mut stop => break,
            polled = consumer.poll(Duration::from_millis(500)) => polled,
        };
        match polled {
            Ok(Some(chunk)) => {
                let before = remaining;
                remaining =
                    print_records(&mut text, &chunk.partition, &chunk.records, remaining, ctx.format());
                // `--count` may stop inside the chunk: what was printed is what is committed.
                let shown = usize::try_from(before - remaining).unwrap_or(usize::MAX);
                if let Some(last) = chunk.records.get(..shown).and_then(<[_]>::last) {
                    printed.handed(&chunk.partition, last.offset);
                }
            }
            Ok(None) => {}
            // Reported and gone on with: the member rejoins, the partition is read again.
            Err(e @ (ConsumerError::Partition { .. } | ConsumerError::PollIntervalExceeded { .. })) => {
                eprintln!("kwire: {}", escape(&e.to_string()));
            }
            Err(e @ ConsumerError::StartRefused { .. }) => {
                eprintln!("kwire: {}", escape(&e.to_string()));
                outcome = Err(Failure::new(Exit::ANOMALY, e.to_string()));
                break;
            }
            Err(e) => {
                outcome = Err(Failure::from(e));
                break;
            }
        }
        if last_commit.elapsed() >= commit_every {
            last_commit = Instant::now();
            commit_printed(&mut consumer, &printed).await;
        }
    }
    commit_printed(&mut consumer, &printed).await;
    consumer.close().await.map_err(Failure::from)?;
    outcome
}

/// Commits the printed positions of the partitions still owned; a refusal is reported.
async fn commit_printed(consumer: &mut Consumer, printed: &HandedOut) {
    for line in printed.commit(consumer).await {
        eprintln!("kwire: {}", escape(&line));
    }
}
