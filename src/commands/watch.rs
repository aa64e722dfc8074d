//! `kwire group watch GROUP...`: every interval, each group's partitions (any store) with
//! committed, end, lag, consumable, lost, time lag, rates in and out, a trend of the lag and
//! the engine's health over the window. On a terminal the view is redrawn in place and keys
//! change the sort (`s`), the filter (`f`) or quit (`q`, Ctrl-C); otherwise every refresh is
//! written as plain `key=value` lines, one per partition, for logs and scripts.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::io::{IsTerminal as _, Read as _};
use std::process::{Command, Stdio};

use kafka_client::TopicPartition;
use offset_engine::{
    estimate_time_lag, evaluate_health, Health, HealthConfig, HealthFacts, Isolation, Lag, LogState, Sample,
    TimeLag,
};
use tokio::sync::mpsc;

use super::group::{partition_rows, PartitionRow};
use super::time_lag::{first_unconsumed_timestamps, format_ms, sample_of, time_lag_text, time_numbers};
use super::Context;
use crate::cli::{GroupWatchArgs, TimeLagArg};
use crate::exit::Failure;
use crate::output::{out, Table};

/// The order rows are shown in; `s` cycles through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sort {
    Worst,
    Lag,
    TimeLag,
    Name,
}

impl Sort {
    fn next(self) -> Self {
        match self {
            Sort::Worst => Sort::Lag,
            Sort::Lag => Sort::TimeLag,
            Sort::TimeLag => Sort::Name,
            Sort::Name => Sort::Worst,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Sort::Worst => "worst",
            Sort::Lag => "lag",
            Sort::TimeLag => "time lag",
            Sort::Name => "name",
        }
    }
}

/// Which rows are shown; `f` cycles through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Filter {
    All,
    Unhealthy,
    Lagging,
}

impl Filter {
    fn next(self) -> Self {
        match self {
            Filter::All => Filter::Unhealthy,
            Filter::Unhealthy => Filter::Lagging,
            Filter::Lagging => Filter::All,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Filter::All => "all",
            Filter::Unhealthy => "not OK",
            Filter::Lagging => "lag > 0",
        }
    }

    fn keeps(self, line: &Line) -> bool {
        match self {
            Filter::All => true,
            Filter::Unhealthy => line.health != Some(Health::Ok),
            Filter::Lagging => line.lag.is_some_and(|l| l > 0),
        }
    }
}

/// One partition of one group at the latest refresh.
#[derive(Debug, Clone)]
struct Line {
    group: String,
    tp: TopicPartition,
    committed: Option<i64>,
    end: Option<i64>,
    lag: Option<i64>,
    consumable: Option<i64>,
    lost: Option<u64>,
    time_lag: TimeLag,
    rate_in: Option<f64>,
    rate_out: Option<f64>,
    trend: String,
    health: Option<Health>,
}

/// What is kept between refreshes for one partition.
#[derive(Debug, Default)]
struct Track {
    samples: VecDeque<Sample>,
}

/// `▁▂▃▄▅▆▇█` scaled from 0 to the window's largest lag.
fn sparkline(lags: &[i64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = lags.iter().copied().max().unwrap_or(0).max(1);
    lags.iter().map(|&l| BARS[(i128::from(l.clamp(0, max)) * 7 / i128::from(max)) as usize]).collect()
}

/// Records per second between the oldest and newest of `values` taken at `times`.
fn rate(first: (i64, i64), last: (i64, i64)) -> Option<f64> {
    let dt = last.0.checked_sub(first.0).filter(|d| *d > 0)?;
    Some((last.1 as f64 - first.1 as f64) * 1000.0 / dt as f64)
}

fn line_of(
    group: &str,
    row: &PartitionRow,
    track: &Track,
    mode: TimeLagArg,
    isolation: Isolation,
    now: i64,
    timestamps: &BTreeMap<TopicPartition, i64>,
) -> Line {
    let samples: Vec<Sample> = track.samples.iter().copied().collect();
    let earlier = &samples[..samples.len().saturating_sub(1)];
    let time_lag = match mode {
        TimeLagArg::Estimate => estimate_time_lag(&samples, row.committed(), now),
        _ => time_numbers(mode, row, isolation, now, timestamps, earlier).time_lag,
    };
    let (first, last) = (samples.first(), samples.last());
    let rate_in = first.zip(last).and_then(|(a, b)| rate((a.at_ms, a.end), (b.at_ms, b.end)));
    let rate_out = first.zip(last).and_then(|(a, b)| match (a.committed, b.committed) {
        (Some(x), Some(y)) => rate((a.at_ms, x), (b.at_ms, y)),
        _ => None,
    });
    let lags: Vec<i64> = samples.iter().filter_map(|s| s.committed.map(|c| s.end - c)).collect();
    let log_start = match &row.log {
        LogState::Found(v) => v.log_start.0,
        _ => 0,
    };
    let anomaly = row.stored.is_some()
        && match row.lag {
            Lag::Committed { lag, .. } => lag < 0,
            Lag::NothingCommitted { .. } | Lag::Unknown => true,
        };
    let facts = HealthFacts { log_start, anomaly, last_commit_ms: row.commit_timestamp_ms() };
    Line {
        group: group.to_owned(),
        tp: row.tp.clone(),
        committed: row.committed(),
        end: last.map(|s| s.end),
        lag: row.lag.lag(),
        consumable: row.lag.consumable(),
        lost: row.lag.lost(),
        time_lag,
        rate_in,
        rate_out,
        trend: sparkline(&lags),
        health: evaluate_health(&samples, facts, now, HealthConfig::default()),
    }
}

fn sort_lines(lines: &mut [Line], sort: Sort) {
    let name = |l: &Line| (l.group.clone(), l.tp.clone());
    match sort {
        Sort::Worst => lines.sort_by(|a, b| {
            (b.health, b.time_lag.ms(), b.lag)
                .cmp(&(a.health, a.time_lag.ms(), a.lag))
                .then(name(a).cmp(&name(b)))
        }),
        Sort::Lag => lines.sort_by(|a, b| b.lag.cmp(&a.lag).then(name(a).cmp(&name(b)))),
        Sort::TimeLag => {
            lines.sort_by(|a, b| b.time_lag.ms().cmp(&a.time_lag.ms()).then(name(a).cmp(&name(b))));
        }
        Sort::Name => lines.sort_by_key(name),
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

fn per_second(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |r| format!("{r:.1}"))
}

fn health_text(h: Option<Health>) -> &'static str {
    h.map_or("-", |h| h.as_str())
}

/// Per group and topic: lag, consumable and lost summed, the largest time lag.
type Totals = (i64, i64, u64, Option<u64>);

/// The terminal frame: a status line, the partitions, totals per group and topic.
fn frame(args: &GroupWatchArgs, lines: &[Line], sort: Sort, filter: Filter, status: &str) -> String {
    let mut t = Table::new([
        "GROUP",
        "TOPIC",
        "PARTITION",
        "COMMITTED",
        "END",
        "LAG",
        "CONSUMABLE",
        "LOST",
        "TIME_LAG",
        "IN/S",
        "OUT/S",
        "TREND",
        "HEALTH",
    ]);
    let mut totals: BTreeMap<(&str, &str), Totals> = BTreeMap::new();
    for l in lines {
        let total = totals.entry((l.group.as_str(), &*l.tp.topic)).or_default();
        total.0 += l.lag.unwrap_or(0);
        total.1 += l.consumable.unwrap_or(0);
        total.2 += l.lost.unwrap_or(0);
        total.3 = total.3.max(l.time_lag.ms());
    }
    let shown: Vec<&Line> = lines.iter().filter(|l| filter.keeps(l)).collect();
    for l in &shown {
        t.row([
            l.group.clone(),
            l.tp.topic.to_string(),
            l.tp.partition.to_string(),
            opt(l.committed),
            opt(l.end),
            opt(l.lag),
            opt(l.consumable),
            opt(l.lost),
            time_lag_text(l.time_lag),
            per_second(l.rate_in),
            per_second(l.rate_out),
            l.trend.clone(),
            health_text(l.health).to_owned(),
        ]);
    }
    let mut tt = Table::new(["GROUP", "TOPIC", "LAG", "CONSUMABLE", "LOST", "MAX_TIME_LAG"]);
    for ((group, topic), (lag, consumable, lost, time_lag)) in &totals {
        tt.row([
            (*group).to_owned(),
            (*topic).to_owned(),
            lag.to_string(),
            consumable.to_string(),
            lost.to_string(),
            time_lag.map_or_else(|| "-".to_owned(), format_ms),
        ]);
    }
    format!(
        "kwire group watch  every {}  sort: {} (s)  filter: {} (f)  quit (q)  {}  {status}\n\n{}\ntotals\n{}",
        format_ms(u64::try_from(args.interval.as_millis()).unwrap_or(u64::MAX)),
        sort.as_str(),
        filter.as_str(),
        crate::time::format_rfc3339_ms(crate::time::now_ms()),
        t.render(),
        tt.render()
    )
}

/// The plain form of one refresh: one `key=value` line per partition.
fn plain(lines: &[Line], at: i64) -> String {
    let at = crate::time::format_rfc3339_ms(at);
    let mut out = String::new();
    for l in lines {
        let _ = writeln!(
            out,
            "at={at} group={} topic={} partition={} committed={} end={} lag={} consumable={} lost={} time_lag_ms={} in_per_s={} out_per_s={} health={}",
            l.group,
            l.tp.topic,
            l.tp.partition,
            opt(l.committed),
            opt(l.end),
            opt(l.lag),
            opt(l.consumable),
            opt(l.lost),
            opt(l.time_lag.ms()),
            per_second(l.rate_in),
            per_second(l.rate_out),
            health_text(l.health),
        );
    }
    out
}

/// The terminal in character-at-a-time mode without echo or signals (so Ctrl-C arrives as a
/// key and the terminal is always restored), set back when dropped. `stty` on the inherited
/// stdin: no unsafe code.
#[derive(Debug)]
struct RawTerminal {
    saved: Option<String>,
}

impl RawTerminal {
    fn enter() -> Self {
        // `output()` would give stty a null stdin; it must see the terminal.
        let saved = Command::new("stty")
            .arg("-g")
            .stdin(Stdio::inherit())
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
        if saved.is_some() {
            let _ = Command::new("stty").args(["-icanon", "-echo", "-isig", "min", "1"]).status();
        }
        crate::output::emit("\x1b[?25l"); // hide the cursor
        Self { saved }
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        crate::output::emit("\x1b[?25h\n");
        if let Some(saved) = &self.saved {
            let _ = Command::new("stty").arg(saved).status();
        }
    }
}

/// Clears the terminal and draws `frame` from the top left (the frame's own text escaped).
fn redraw(frame: &str) {
    crate::output::emit("\x1b[H\x1b[2J");
    out!("{frame}");
}

/// Keys typed on the terminal, from a thread blocked on stdin.
fn keys() -> mpsc::UnboundedReceiver<u8> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut byte = [0u8; 1];
        while let Ok(1) = stdin.read(&mut byte) {
            if tx.send(byte[0]).is_err() {
                break;
            }
        }
    });
    rx
}

pub async fn run(ctx: &Context, args: &GroupWatchArgs) -> Result<(), Failure> {
    let client = ctx.client().await?;
    let isolation = args.isolation;
    let topics = (!args.topics.is_empty()).then_some(args.topics.as_slice());
    let terminal = std::io::stdout().is_terminal();
    let _raw = terminal.then(RawTerminal::enter);
    let mut keys = if terminal && std::io::stdin().is_terminal() { Some(keys()) } else { None };
    let (mut sort, mut filter) = (Sort::Worst, Filter::All);
    let mut tracks: BTreeMap<(String, TopicPartition), Track> = BTreeMap::new();
    let mut lines: Vec<Line> = Vec::new();
    let mut refreshes = 0u64;
    let window = args.window as usize;
    loop {
        let mut status = String::new();
        let mut fresh = Vec::new();
        for group in &args.groups {
            let rows = match partition_rows(ctx, &client, &args.store, group, topics, isolation).await {
                Ok(rows) => rows,
                Err(e) if terminal => {
                    status = format!("refresh failed: {}", e.message);
                    continue;
                }
                Err(e) if args.count.is_some() => return Err(e),
                Err(e) => {
                    eprintln!("kwire: {}: refresh failed: {}", group, crate::output::escape(&e.message));
                    continue;
                }
            };
            let timestamps = if args.time_lag == TimeLagArg::Fetch {
                first_unconsumed_timestamps(&client, &rows, isolation, ctx.global.timeout).await
            } else {
                BTreeMap::new()
            };
            let now = crate::time::now_ms();
            for row in rows.iter().filter(|r| r.stored.is_some()) {
                let track = tracks.entry((group.clone(), row.tp.clone())).or_default();
                if let Some(s) = sample_of(row, isolation, now) {
                    track.samples.push_back(s);
                    while track.samples.len() > window {
                        track.samples.pop_front();
                    }
                }
                fresh.push(line_of(group, row, track, args.time_lag, isolation, now, &timestamps));
            }
        }
        if !(terminal && fresh.is_empty() && !status.is_empty()) {
            lines = fresh;
        }
        refreshes += 1;
        sort_lines(&mut lines, sort);
        if terminal {
            redraw(&frame(args, &lines, sort, filter, &status));
        } else {
            out!("{}", plain(&lines, crate::time::now_ms()));
        }
        if args.count.is_some_and(|c| refreshes >= c) {
            return Ok(());
        }
        // Wait for the next refresh; a key redraws at once (and `q` quits).
        let deadline = tokio::time::Instant::now() + args.interval;
        loop {
            let key = match keys.as_mut() {
                Some(rx) => tokio::select! {
                    k = rx.recv() => k,
                    () = tokio::time::sleep_until(deadline) => None,
                },
                None => {
                    tokio::time::sleep_until(deadline).await;
                    None
                }
            };
            match key {
                None => break,
                Some(b'q' | b'Q' | 3 | 4) => return Ok(()),
                Some(b's') => sort = sort.next(),
                Some(b'f') => filter = filter.next(),
                Some(_) => continue,
            }
            sort_lines(&mut lines, sort);
            redraw(&frame(args, &lines, sort, filter, &status));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trend_scales_to_the_largest_lag_in_the_window() {
        assert_eq!(sparkline(&[0, 50, 100]), "▁▄█");
        assert_eq!(sparkline(&[0, 0]), "▁▁");
        assert_eq!(sparkline(&[-5, i64::MAX]), "▁█");
    }

    #[test]
    fn rates_need_time_to_pass() {
        assert_eq!(rate((0, 0), (1000, 100)), Some(100.0));
        assert_eq!(rate((1000, 0), (1000, 100)), None);
    }
}
