//! `kwire topic create|delete|add-partitions|delete-records`: enough admin to reproduce every
//! offset situation (recreate a topic, grow it, move its log start) without Java tools.

use kafka_client::{NewTopic, TopicPartition};
use serde_json::json;

use super::Context;
use crate::cli::{Format, TopicCommand};
use crate::exit::{Exit, Failure};
use crate::output::{outln, print_json};

pub async fn run(ctx: &Context, command: &TopicCommand) -> Result<(), Failure> {
    let client = ctx.client().await?;
    let timeout = ctx.global.timeout;
    let report = |what: &str, doc: serde_json::Value| match ctx.format() {
        Format::Json => print_json(&doc),
        Format::Text => outln!("{what}"),
    };
    match command {
        TopicCommand::Create { topic, partitions, replication_factor, config } => {
            let mut new = NewTopic::new(topic.clone(), *partitions, *replication_factor);
            for c in config {
                let (k, v) = c
                    .split_once('=')
                    .ok_or_else(|| Failure::new(Exit::USAGE, format!("`{c}` is not a config NAME=VALUE")))?;
                new.configs.push((k.to_owned(), v.to_owned()));
            }
            let created = client.create_topics(&[new], timeout).await;
            let result =
                created.into_values().next().ok_or_else(|| Failure::new(Exit::CLUSTER, "no answer"))?;
            let created = result.map_err(Failure::from)?;
            report(
                &format!(
                    "created {topic}: {} partitions, replication {}, id {}",
                    created.partitions,
                    created.replication_factor,
                    created.topic_id.map_or_else(|| "-".to_owned(), |id| id.to_string())
                ),
                json!({"topic": topic, "topic_id": created.topic_id.map(|id| id.to_string()),
                       "partitions": created.partitions, "replication_factor": created.replication_factor}),
            );
        }
        TopicCommand::Delete { topics } => {
            let results = client.delete_topics(topics, timeout).await;
            for (topic, result) in &results {
                result.as_ref().map_err(|e| not_found_or_cluster(topic, e))?;
            }
            report(&format!("deleted {}", topics.join(", ")), json!({"deleted": topics}));
        }
        TopicCommand::AddPartitions { topic, total } => {
            let results = client.create_partitions(&[(topic.clone(), *total)], timeout).await;
            for (name, result) in &results {
                result.as_ref().map_err(|e| not_found_or_cluster(name, e))?;
            }
            report(
                &format!("{topic} now has {total} partitions"),
                json!({"topic": topic, "partitions": total}),
            );
        }
        TopicCommand::DeleteRecords { topic, before } => {
            let mut wanted = Vec::new();
            for spec in before {
                let (p, o) = spec
                    .split_once('=')
                    .ok_or_else(|| Failure::new(Exit::USAGE, format!("`{spec}` is not PARTITION=OFFSET")))?;
                let p: i32 =
                    p.parse().map_err(|_| Failure::new(Exit::USAGE, format!("`{p}` is not a partition")))?;
                let o: i64 =
                    o.parse().map_err(|_| Failure::new(Exit::USAGE, format!("`{o}` is not an offset")))?;
                wanted.push((TopicPartition::new(topic.clone(), p), o));
            }
            let results = client.delete_records(&wanted, timeout).await;
            let mut rows = Vec::new();
            for (tp, result) in &results {
                let low = result.as_ref().map_err(|e| Failure::client(tp, e))?;
                rows.push(json!({"topic": tp.topic, "partition": tp.partition, "log_start": low}));
            }
            let text = results
                .iter()
                .filter_map(|(tp, r)| r.as_ref().ok().map(|low| format!("{tp}: log start now {low}")))
                .collect::<Vec<_>>()
                .join("\n");
            report(&text, json!({"partitions": rows}));
        }
    }
    Ok(())
}

fn not_found_or_cluster(topic: &str, e: &kafka_client::ClientError) -> Failure {
    let text = e.to_string();
    if text.contains("UNKNOWN_TOPIC_OR_PARTITION")
        || matches!(e, kafka_client::ClientError::UnknownTopic { .. })
    {
        Failure::new(Exit::NOT_FOUND, format!("unknown topic `{topic}`"))
    } else {
        Failure::client(topic, e)
    }
}
