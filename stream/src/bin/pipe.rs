//! `kwire-stream-pipe`: exactly-once from one topic to another. Each batch's records are
//! copied (key, value, headers) to the output topic, each input partition to the same output
//! partition, and the batch's input ranges are committed as the group's offsets in the same
//! transaction (see `kwire_stream::exactly_once`). The exactly-once crash test kills it with
//! SIGKILL at random moments and checks the output read read_committed.
//!
//! ```text
//! kwire-stream-pipe --bootstrap HOST:PORT[,..] --group G --topic IN --output OUT
//!                   --transactional-id ID [--max-per-partition N] [--memory-budget BYTES] [--exit-when-idle]
//!                   [--no-prefetch] [--trace]
//! ```
//!
//! The next batch is read while one is copied (`StreamConfig::prefetch`): a kill in the
//! middle of a batch aborts its transaction, and the restart copies it again from the group's
//! offsets — the batch read ahead was never output nor committed.

#[path = "common/flags.rs"]
mod flags;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use kafka_client::TopicPartition;
use kwire_stream::{
    Client, ClientConfig, DirectStream, KafkaGroupStore, ProduceRecord, Producer, ProducerConfig,
    StreamConfig,
};

struct Args {
    bootstrap: String,
    group: String,
    input: String,
    output: String,
    transactional_id: String,
    max_per_partition: Option<u64>,
    memory_budget: Option<u64>,
    exit_when_idle: bool,
    prefetch: bool,
    trace: bool,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut output, mut transactional_id) = (None, None);
    let mut flags = flags::parse(args, |flag, value| {
        match flag {
            "--output" => output = Some(value),
            "--transactional-id" => transactional_id = Some(value),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let input = match flags.topics.as_slice() {
        [topic] => topic.clone(),
        [] => return Err("--topic is required".to_owned()),
        _ => return Err("one --topic: the pipe copies one input topic".to_owned()),
    };
    Ok(Args {
        bootstrap: flags.bootstrap()?,
        group: flags.group()?,
        input,
        output: output.ok_or("--output is required")?,
        transactional_id: transactional_id.ok_or("--transactional-id is required")?,
        max_per_partition: flags.max_per_partition,
        memory_budget: flags.memory_budget,
        exit_when_idle: flags.exit_when_idle,
        prefetch: flags.prefetch,
        trace: flags.trace,
    })
}

async fn pipe(args: &Args) -> Result<(), String> {
    let mut client_config = ClientConfig::new(&args.bootstrap).map_err(|e| e.to_string())?;
    if args.trace {
        flags::print_requests(&mut client_config);
    }
    let client = Arc::new(Client::connect(client_config).await.map_err(|e| e.to_string())?);
    let producer_config =
        ProducerConfig { transactional_id: Some(args.transactional_id.clone()), ..ProducerConfig::default() };
    let producer = Producer::new(Arc::clone(&client), producer_config).map_err(|e| e.to_string())?;
    // Before the offsets are loaded: aborts what a killed predecessor left open.
    producer.init_transactions().await.map_err(|e| e.to_string())?;
    let store = KafkaGroupStore::new(Arc::clone(&client), Duration::from_secs(30));
    let config = StreamConfig::new(args.group.clone(), vec![args.input.clone()])
        .isolation(kwire_stream::Isolation::ReadCommitted);
    let config = flags::with_caps(config, args.max_per_partition, args.memory_budget)
        .poll_interval(Duration::from_millis(100))
        .prefetch(args.prefetch);
    let mut stream = DirectStream::new(client, store, config).map_err(|e| e.to_string())?;
    loop {
        let batch = stream.next_batch().await.map_err(|e| e.to_string())?;
        if batch.record_count() == 0 {
            stream.commit(&batch).await.map_err(|e| e.to_string())?;
            if args.exit_when_idle && batch.is_idle() {
                producer.close().await;
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        producer.begin_transaction().await.map_err(|e| e.to_string())?;
        for (_, partition, record) in batch.records() {
            let mut out = ProduceRecord::new(record.key.clone(), record.value.clone());
            out.headers.clone_from(&record.headers);
            producer
                .send_to(TopicPartition::new(args.output.as_str(), partition), out)
                .await
                .map_err(|e| e.to_string())?;
        }
        stream.commit_in_transaction(&batch, &producer).await.map_err(|e| e.to_string())?;
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("kwire-stream-pipe: {e}");
            return ExitCode::from(2);
        }
    };
    match pipe(&args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kwire-stream-pipe: {e}");
            ExitCode::FAILURE
        }
    }
}
