//! `kwire metadata [TOPIC...]`: cluster id, controller, brokers, and per topic its id and per
//! partition the leader, leader epoch, replicas and ISR.

use kafka_client::{ClientError, TopicInfo};
use kafka_wire::protocol::ErrorCode;
use serde_json::json;

use super::Context;
use crate::cli::{Format, MetadataArgs};
use crate::exit::{Exit, Failure};
use crate::output::{ids, out, outln, Table};

pub async fn run(ctx: &Context, args: &MetadataArgs) -> Result<(), Failure> {
    let client = ctx.client().await?;
    let metadata = client.refresh_metadata(&args.topics).await?;
    for topic in &metadata.topics {
        if topic.error == ErrorCode::UNKNOWN_TOPIC_OR_PARTITION {
            return Err(ClientError::UnknownTopic { topic: topic.name.clone() }.into());
        }
        if !topic.error.is_ok() && topic.error != ErrorCode::LEADER_NOT_AVAILABLE {
            let exit = if topic.error.is_authorization() { Exit::NOT_AUTHORIZED } else { Exit::CLUSTER };
            return Err(Failure::new(exit, format!("topic `{}`: {}", topic.name, topic.error)));
        }
    }
    let mut topics: Vec<&TopicInfo> = metadata.topics.iter().collect();
    if args.topics.is_empty() {
        topics.sort_by(|a, b| a.name.cmp(&b.name));
    }
    match ctx.format() {
        Format::Json => ctx.emit_json(json!({
            "cluster_id": metadata.cluster_id,
            "controller_id": metadata.controller_id,
            "brokers": metadata.brokers.iter().map(|b| json!({
                "node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack,
            })).collect::<Vec<_>>(),
            "topics": topics.iter().map(|t| json!({
                "name": t.name,
                "topic_id": t.topic_id.map(|id| id.to_string()),
                "is_internal": t.is_internal,
                "partitions": t.partitions.iter().map(|p| json!({
                    "partition": p.partition,
                    "leader": p.leader,
                    "leader_epoch": p.leader_epoch,
                    "replicas": p.replicas,
                    "isr": p.isr,
                    "offline": p.offline,
                    "error": (!p.error.is_ok()).then(|| p.error.name().unwrap_or("UNKNOWN")),
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })),
        Format::Text => {
            outln!(
                "cluster {}  controller {}",
                metadata.cluster_id.as_deref().unwrap_or("(unknown)"),
                metadata.controller_id.map_or_else(|| "(unknown)".to_owned(), |c| c.to_string())
            );
            let mut brokers = Table::new(["NODE", "HOST", "PORT", "RACK"]);
            for b in &metadata.brokers {
                brokers.row([
                    b.node_id.to_string(),
                    b.host.clone(),
                    b.port.to_string(),
                    b.rack.clone().unwrap_or_default(),
                ]);
            }
            out!("\n{}", brokers.render());
            let mut parts = Table::new([
                "TOPIC",
                "TOPIC_ID",
                "PARTITION",
                "LEADER",
                "EPOCH",
                "REPLICAS",
                "ISR",
                "OFFLINE",
            ]);
            for t in &topics {
                for p in &t.partitions {
                    parts.row([
                        t.name.clone(),
                        t.topic_id.map_or_else(|| "-".to_owned(), |id| id.to_string()),
                        p.partition.to_string(),
                        p.leader.map_or_else(|| "none".to_owned(), |l| l.to_string()),
                        p.leader_epoch.map_or_else(|| "-".to_owned(), |e| e.to_string()),
                        ids(&p.replicas),
                        ids(&p.isr),
                        ids(&p.offline),
                    ]);
                }
            }
            out!("\n{}", parts.render());
        }
    }
    Ok(())
}
