//! `kwire produce TOPIC`: lines from stdin as records — like `kcat -P`. With
//! `--key-separator`, the text before the first separator is the key; without `--partition`,
//! records go where the Java client's partitioner would put their key.

use std::io::BufRead as _;

use bytes::Bytes;
use kafka_wire::client::{ProduceOptions, ProduceRecord};
use serde_json::json;

use super::Context;
use crate::cli::{Format, ProduceArgs};
use crate::exit::{Exit, Failure};
use crate::output::{outln, print_json};

/// Records sent per request.
const BATCH: usize = 1000;

pub async fn run(ctx: &Context, args: &ProduceArgs) -> Result<(), Failure> {
    let client = ctx.client().await?;
    let options = ProduceOptions {
        compression: args.compression.into(),
        timeout: ctx.global.timeout,
        ..Default::default()
    };
    if !options.compression.is_available() {
        return Err(Failure::new(
            Exit::USAGE,
            format!("{} is not compiled into this kwire", options.compression.name()),
        ));
    }
    ctx.partitions_of(&client, std::slice::from_ref(&args.topic)).await?;
    let stdin = std::io::stdin();
    let mut batch = Vec::with_capacity(BATCH);
    let mut sent = 0u64;
    for (n, line) in stdin.lock().lines().enumerate() {
        let line = line.map_err(|e| Failure::new(Exit::USAGE, format!("stdin line {}: {e}", n + 1)))?;
        let (key, value) = match &args.key_separator {
            Some(sep) => match line.split_once(sep.as_str()) {
                Some((k, v)) => (Some(Bytes::from(k.to_owned())), v.to_owned()),
                None => (None, line),
            },
            None => (None, line),
        };
        batch.push(ProduceRecord::new(key, Some(Bytes::from(value))));
        if batch.len() == BATCH {
            sent += send(&client, args, std::mem::take(&mut batch), &options).await?;
        }
    }
    if !batch.is_empty() {
        sent += send(&client, args, batch, &options).await?;
    }
    match ctx.format() {
        Format::Json => print_json(&json!({"topic": args.topic, "records": sent})),
        Format::Text => outln!("produced {sent} record(s) to {}", args.topic),
    }
    Ok(())
}

async fn send(
    client: &kafka_wire::client::Client,
    args: &ProduceArgs,
    records: Vec<ProduceRecord>,
    options: &ProduceOptions,
) -> Result<u64, Failure> {
    let count = records.len() as u64;
    match args.partition {
        Some(p) => {
            client
                .produce(&args.topic, p, records, options)
                .await
                .map_err(|e| Failure::client(format!("{}-{p}", args.topic), &e))?;
        }
        None => {
            let produced = client.produce_by_key(&args.topic, records, options).await?;
            for (tp, result) in produced.results {
                result.map_err(|e| Failure::client(&tp, &e))?;
            }
        }
    }
    Ok(count)
}
