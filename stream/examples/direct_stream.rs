//! A direct stream with its offsets in ZooKeeper (the Kafka 0.8 layout Spark jobs use), printing
//! each batch's offset ranges. Delete and recreate the topic while it runs: the stream reports
//! `topic_recreated` and goes on at the new topic's log start.
//!
//! ```text
//! scripts/cluster up && eval "$(scripts/cluster env --export)"
//! cargo run -p kwire-stream --example direct_stream -- TOPIC [GROUP] [--batches N]
//! ```
//!
//! Copy it as a starting point: replace the body of the closure with your output, and keep the
//! rule that it returns `Ok` only once the output is durable.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use kwire_stream::{
    Client, ClientConfig, Control, DirectStream, Limits, OutOfRangePolicy, StreamConfig, StreamError, ZkStore,
};

struct Args {
    topic: String,
    group: String,
    batches: Option<u64>,
}

fn args() -> Result<Args, String> {
    let mut positional = Vec::new();
    let mut batches = None;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        if arg == "--batches" {
            let n = it.next().ok_or("--batches needs a number")?;
            batches = Some(n.parse::<u64>().map_err(|e| format!("--batches {n}: {e}"))?);
        } else {
            positional.push(arg);
        }
    }
    let mut positional = positional.into_iter();
    let topic = positional.next().ok_or("usage: direct_stream TOPIC [GROUP] [--batches N]")?;
    let group = positional.next().unwrap_or_else(|| format!("{topic}-direct-stream"));
    Ok(Args { topic, group, batches })
}

async fn stream(args: Args) -> Result<(), String> {
    let bootstrap =
        std::env::var("KWIRE_BOOTSTRAP").map_err(|_| "set KWIRE_BOOTSTRAP (scripts/cluster env)")?;
    let zookeeper =
        std::env::var("KWIRE_ZOOKEEPER").map_err(|_| "set KWIRE_ZOOKEEPER (scripts/cluster env)")?;
    let client = Client::connect(ClientConfig::new(&bootstrap).map_err(|e| e.to_string())?)
        .await
        .map_err(|e| format!("Kafka at {bootstrap}: {e}"))?;
    // Connection loss and session expiry are retried for up to a minute per call.
    let store = ZkStore::connect(&zookeeper, Duration::from_secs(10), Duration::from_secs(60))
        .await
        .map_err(|e| format!("ZooKeeper at {zookeeper}: {e}"))?;
    let config = StreamConfig::new(args.group.clone(), [args.topic.clone()])
        // A recreated topic, a truncated log or deleted records: resume at the nearest valid
        // offset (the new log start for a recreated topic) and report it. The default is to fail.
        .out_of_range(OutOfRangePolicy::Clamp)
        .limits(Limits { max_per_partition: Some(1_000), ..Limits::default() })
        .poll_interval(Duration::from_millis(500));
    let mut stream = DirectStream::new(Arc::new(client), store, config).map_err(|e| e.to_string())?;
    println!("reading {} as group {} (offsets in ZooKeeper {zookeeper})", args.topic, args.group);

    let mut done = 0u64;
    loop {
        let result = stream
            .run(|batch| {
                done += 1;
                for event in batch.events() {
                    println!("batch {}: {event}", batch.id());
                }
                for p in batch.partitions().iter().filter(|p| !p.range.is_empty()) {
                    println!("batch {}: {} ({} records)", batch.id(), p.range, p.records.len());
                }
                // Your output goes here; return Ok only once it is durable.
                let control =
                    if args.batches.is_some_and(|n| done >= n) { Control::Stop } else { Control::Continue };
                async move { Ok::<_, std::convert::Infallible>(control) }
            })
            .await;
        match result {
            Ok(()) => return Ok(()),
            // Brokers restarting, ZooKeeper away longer than the retry budget: wait and go on
            // from the stored offsets (nothing is committed for the batch that failed).
            Err(StreamError::Cluster(e)) if e.is_retriable() => eprintln!("cluster: {e}; retrying"),
            Err(StreamError::Store(e)) if e.is_retriable() || e.needs_reload() => {
                eprintln!("{e}; retrying");
            }
            Err(StreamError::Fetch { tp, source }) if source.is_retriable() => {
                eprintln!("fetch of {tp}: {source}; retrying");
            }
            Err(e) => return Err(e.to_string()),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let result = match args() {
        Ok(args) => stream(args).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("direct_stream: {e}");
            ExitCode::FAILURE
        }
    }
}
