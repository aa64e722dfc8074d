//! `kwire-stream-sink`: reads topics with a direct stream and appends every record it processed
//! to a log file, fsyncing the file before each commit — at-least-once from Kafka to a file.
//! The crash test kills it with SIGKILL at random moments and checks the log.
//!
//! ```text
//! kwire-stream-sink --bootstrap HOST:PORT[,..] --group G --topic T [--topic T2..]
//!                   --store kafka|zk:HOST:PORT[/chroot]|file:PATH --log PATH
//!                   [--member] [--max-per-partition N] [--memory-budget BYTES] [--out-of-range fail|earliest|latest|clamp]
//!                   [--exit-when-idle] [--no-prefetch] [--trace] [-X KEY=VALUE ...]
//! ```
//!
//! `-X` takes Kafka client properties (`security.protocol`, `sasl.*`, `ssl.*`), as `kwire -X`
//! does, for a secured cluster, and with `--member` the group's (`group.protocol`,
//! `partition.assignment.strategy`, `session.timeout.ms`, `max.poll.interval.ms`, ...).
//!
//! `--member`: the stream joins the group (`DirectStream::join`) and reads only the partitions
//! the group gives it, so several sinks share the topics; offsets are the group's own
//! (`--store kafka`, the default with `--member`). SIGTERM or Ctrl-C stops it after the batch
//! in hand is logged and committed, and it leaves the group before exiting 0.
//!
//! Log lines (space separated; a value is printed lossily as UTF-8 with spaces and newlines
//! escaped):
//! - `S <pid>`: a start (written first, before connecting);
//! - `L <topic> <partition> <offset>`: the stored position found at start-up;
//! - `R <topic> <partition> <offset> <value>`: a processed record;
//! - `C <topic> <partition> <offset>`: a position written to the store (after the write).

#[path = "common/flags.rs"]
mod flags;

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use kwire_stream::{
    Client, ClientConfig, ConsumerConfig, DirectStream, KafkaGroupStore, OffsetStore, OutOfRangePolicy,
    StoreSpec, StreamConfig,
};

struct Args {
    bootstrap: String,
    group: String,
    topics: Vec<String>,
    store: StoreSpec,
    log: PathBuf,
    max_per_partition: Option<u64>,
    memory_budget: Option<u64>,
    out_of_range: OutOfRangePolicy,
    exit_when_idle: bool,
    prefetch: bool,
    trace: bool,
    /// `-X KEY=VALUE` client properties, in order.
    properties: Vec<(String, String)>,
    /// `--member`: join the group.
    member: bool,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut store, mut log) = (None, None);
    let mut out_of_range = OutOfRangePolicy::Fail;
    let mut properties = Vec::new();
    let mut member = false;
    // `--member` takes no value; the shared parser reads every other flag as a pair.
    let args: Vec<String> = args
        .filter(|a| {
            if a == "--member" {
                member = true;
                false
            } else {
                true
            }
        })
        .collect();
    let mut flags = flags::parse(args.into_iter(), |flag, value| {
        match flag {
            "--store" => store = Some(value.parse::<StoreSpec>()?),
            "--log" => log = Some(PathBuf::from(value)),
            "-X" => {
                let (key, value) =
                    value.split_once('=').ok_or_else(|| format!("-X {value}: expected KEY=VALUE"))?;
                properties.push((key.to_owned(), value.to_owned()));
            }
            "--out-of-range" => {
                out_of_range = match value.as_str() {
                    "fail" => OutOfRangePolicy::Fail,
                    "earliest" => OutOfRangePolicy::Earliest,
                    "latest" => OutOfRangePolicy::Latest,
                    "clamp" => OutOfRangePolicy::Clamp,
                    other => {
                        return Err(format!("--out-of-range {other}: use fail, earliest, latest or clamp"))
                    }
                };
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(Args {
        bootstrap: flags.bootstrap()?,
        group: flags.group()?,
        topics: flags.topics,
        store: match (store, member) {
            (Some(spec @ StoreSpec::Kafka), _) | (Some(spec), false) => spec,
            (None, true) => StoreSpec::Kafka,
            (None, false) => return Err("--store is required".to_owned()),
            (Some(_), true) => {
                return Err("--member keeps its offsets in the group: --store kafka".to_owned())
            }
        },
        log: log.ok_or("--log is required")?,
        max_per_partition: flags.max_per_partition,
        memory_budget: flags.memory_budget,
        out_of_range,
        exit_when_idle: flags.exit_when_idle,
        prefetch: flags.prefetch,
        trace: flags.trace,
        properties,
        member,
    })
}

/// A value on one log line: no spaces or newlines.
fn escape(value: Option<&[u8]>) -> String {
    match value {
        None => "-".to_owned(),
        Some(bytes) => {
            String::from_utf8_lossy(bytes).replace('\\', "\\\\").replace(' ', "\\s").replace('\n', "\\n")
        }
    }
}

fn append(log: &mut File, text: &str) -> Result<(), String> {
    log.write_all(text.as_bytes()).map_err(|e| format!("cannot append to the log: {e}"))?;
    log.sync_data().map_err(|e| format!("cannot fsync the log: {e}"))
}

async fn sink(args: Args) -> Result<(), String> {
    let mut log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.log)
        .map_err(|e| format!("cannot open {}: {e}", args.log.display()))?;
    append(&mut log, &format!("S {}\n", std::process::id()))?;
    let mut config = ClientConfig::new(&args.bootstrap).map_err(|e| e.to_string())?;
    for warning in kafka_client::apply_properties(&mut config, args.properties.iter().map(|(k, v)| (k, v)))
        .map_err(|e| e.to_string())?
    {
        eprintln!("kwire-stream-sink: warning: {warning}");
    }
    if args.trace {
        flags::print_requests(&mut config);
    }
    let client = Arc::new(Client::connect(config).await.map_err(|e| e.to_string())?);
    let stream_config =
        StreamConfig::new(args.group.clone(), args.topics.clone()).out_of_range(args.out_of_range);
    let stream_config = flags::with_caps(stream_config, args.max_per_partition, args.memory_budget)
        .poll_interval(Duration::from_millis(100))
        .prefetch(args.prefetch);
    if args.member {
        let mut member = ConsumerConfig::default();
        kafka_client::apply_consumer_properties(&mut member, args.properties.iter().map(|(k, v)| (k, v)))
            .map_err(|e| e.to_string())?;
        let store = KafkaGroupStore::new(client, Duration::from_secs(10));
        let stream = DirectStream::join(store, stream_config, member).map_err(|e| e.to_string())?;
        return process(stream, &mut log, &args).await;
    }
    let options = kwire_stream::OpenOptions {
        zookeeper_retry_budget: Duration::from_secs(60),
        ..kwire_stream::OpenOptions::new(Arc::clone(&client), Duration::from_secs(10))
    };
    let store: Box<dyn OffsetStore> =
        kwire_stream::open_store(&args.store, &options).await.map_err(|e| e.to_string())?;
    let stream = DirectStream::new(client, store, stream_config).map_err(|e| e.to_string())?;
    process(stream, &mut log, &args).await
}

/// The loop: every batch's records appended to the log (fsynced), then committed. A member
/// stops on SIGTERM or Ctrl-C between two batches and leaves its group.
async fn process<S: OffsetStore>(
    mut stream: DirectStream<S>,
    log: &mut File,
    args: &Args,
) -> Result<(), String> {
    let stop = stop_requested(args.member);
    if !args.member {
        // A member's positions are known once the group assigns it partitions.
        stream.reload().await.map_err(|e| e.to_string())?;
        let mut text = String::new();
        let mut stored: Vec<_> = stream.stored().into_iter().flatten().collect();
        stored.sort_by(|a, b| a.0.cmp(b.0));
        for (tp, s) in stored {
            let _ = writeln!(text, "L {} {} {}", tp.topic, tp.partition, s.offset);
        }
        append(log, &text)?;
    }

    loop {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            stream.leave().await.map_err(|e| e.to_string())?;
            return Ok(());
        }
        let batch = stream.next_batch().await.map_err(|e| e.to_string())?;
        for event in batch.events() {
            eprintln!("batch {}: {event}", batch.id());
        }
        let mut text = String::new();
        for (topic, partition, record) in batch.records() {
            let _ =
                writeln!(text, "R {topic} {partition} {} {}", record.offset, escape(record.value.as_deref()));
        }
        // Processed means durable in the log, before the offsets move.
        append(log, &text)?;
        let report = stream.commit(&batch).await.map_err(|e| e.to_string())?;
        let mut text = String::new();
        for (tp, s) in &report.written {
            let _ = writeln!(text, "C {} {} {}", tp.topic, tp.partition, s.offset);
        }
        for (tp, rejection) in &report.rejected {
            eprintln!("commit of {tp} refused: {rejection}");
        }
        for (tp, reason) in &report.not_owned {
            eprintln!("commit of {tp} left out: {reason}");
        }
        append(log, &text)?;
        if batch.record_count() == 0 {
            if args.exit_when_idle && batch.is_idle() {
                stream.leave().await.map_err(|e| e.to_string())?;
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Set once SIGTERM or Ctrl-C arrives (a member only: the others are stopped by being killed).
fn stop_requested(member: bool) -> Arc<std::sync::atomic::AtomicBool> {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    if member {
        let flag = Arc::clone(&stop);
        tokio::spawn(async move {
            let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            else {
                return;
            };
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
        });
    }
    stop
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("kwire-stream-sink: {e}");
            return ExitCode::from(2);
        }
    };
    match sink(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kwire-stream-sink: {e}");
            ExitCode::FAILURE
        }
    }
}
