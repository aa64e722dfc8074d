//! `kwire-stream-sink`: reads topics with a direct stream and appends every record it processed
//! to a log file, fsyncing the file before each commit — at-least-once from Kafka to a file.
//! The crash test kills it with SIGKILL at random moments and checks the log.
//!
//! ```text
//! kwire-stream-sink --bootstrap HOST:PORT[,..] --group G --topic T [--topic T2..]
//!                   --store kafka|zk:HOST:PORT[/chroot]|file:PATH --log PATH
//!                   [--max-per-partition N] [--out-of-range fail|earliest|latest|clamp]
//!                   [--exit-when-idle] [--no-prefetch] [--trace] [-X KEY=VALUE ...]
//! ```
//!
//! `-X` takes Kafka client properties (`security.protocol`, `sasl.*`, `ssl.*`), as `kwire -X`
//! does, for a secured cluster.
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
    Client, ClientConfig, DirectStream, Limits, OffsetStore, OutOfRangePolicy, StoreSpec, StreamConfig,
};

struct Args {
    bootstrap: String,
    group: String,
    topics: Vec<String>,
    store: StoreSpec,
    log: PathBuf,
    max_per_partition: Option<u64>,
    out_of_range: OutOfRangePolicy,
    exit_when_idle: bool,
    prefetch: bool,
    trace: bool,
    /// `-X KEY=VALUE` client properties, in order.
    properties: Vec<(String, String)>,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut store, mut log) = (None, None);
    let mut out_of_range = OutOfRangePolicy::Fail;
    let mut properties = Vec::new();
    let mut flags = flags::parse(args, |flag, value| {
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
        store: store.ok_or("--store is required")?,
        log: log.ok_or("--log is required")?,
        max_per_partition: flags.max_per_partition,
        out_of_range,
        exit_when_idle: flags.exit_when_idle,
        prefetch: flags.prefetch,
        trace: flags.trace,
        properties,
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
    let options = kwire_stream::OpenOptions {
        zookeeper_retry_budget: Duration::from_secs(60),
        ..kwire_stream::OpenOptions::new(Arc::clone(&client), Duration::from_secs(10))
    };
    let store: Box<dyn OffsetStore> =
        kwire_stream::open_store(&args.store, &options).await.map_err(|e| e.to_string())?;
    let stream_config = StreamConfig::new(args.group.clone(), args.topics.clone())
        .out_of_range(args.out_of_range)
        .limits(Limits { max_per_partition: args.max_per_partition, ..Limits::default() })
        .poll_interval(Duration::from_millis(100))
        .prefetch(args.prefetch);
    let mut stream = DirectStream::new(client, store, stream_config).map_err(|e| e.to_string())?;

    stream.reload().await.map_err(|e| e.to_string())?;
    let mut text = String::new();
    let mut stored: Vec<_> = stream.stored().into_iter().flatten().collect();
    stored.sort_by(|a, b| a.0.cmp(b.0));
    for (tp, s) in stored {
        let _ = writeln!(text, "L {} {} {}", tp.topic, tp.partition, s.offset);
    }
    append(&mut log, &text)?;

    loop {
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
        append(&mut log, &text)?;
        let report = stream.commit(&batch).await.map_err(|e| e.to_string())?;
        let mut text = String::new();
        for (tp, s) in &report.written {
            let _ = writeln!(text, "C {} {} {}", tp.topic, tp.partition, s.offset);
        }
        for (tp, rejection) in &report.rejected {
            eprintln!("commit of {tp} refused: {rejection}");
        }
        append(&mut log, &text)?;
        if batch.record_count() == 0 {
            if args.exit_when_idle && batch.is_idle() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
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
