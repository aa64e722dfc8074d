//! `kwire api-versions`: per broker, each API's range and the version kwire will use.

use std::fmt::Write as _;

use kafka_wire::protocol::registry::supported_apis;
use serde_json::json;

use super::Context;
use crate::cli::Format;
use crate::exit::Failure;
use crate::output::{out, print_json, Table};

pub async fn run(ctx: &Context) -> Result<(), Failure> {
    let client = ctx.client().await?;
    let brokers = client.broker_versions().await?;
    let ours = supported_apis();
    let mut json_brokers = Vec::new();
    let mut text = String::new();
    for (broker, versions) in &brokers {
        let versions = match versions {
            Ok(v) => v,
            Err(e) => {
                json_brokers
                    .push(json!({"node_id": broker.node_id, "addr": broker.addr, "error": e.to_string()}));
                let _ = writeln!(text, "{broker}: unreachable: {e}\n");
                continue;
            }
        };
        let mut table = Table::new(["API", "KEY", "BROKER", "KWIRE", "USES"]);
        let mut apis = Vec::new();
        for (key, range) in versions.iter() {
            let spec = ours.iter().find(|s| s.key == key);
            let uses = spec.and_then(|s| s.versions.highest_common(range));
            table.row([
                key.name().unwrap_or("?").to_owned(),
                key.0.to_string(),
                range.to_string(),
                spec.map_or_else(|| "-".to_owned(), |s| s.versions.to_string()),
                uses.map_or_else(|| "-".to_owned(), |v| v.to_string()),
            ]);
            apis.push(json!({
                "api_key": key.0,
                "name": key.name(),
                "min_version": range.min,
                "max_version": range.max,
                "kwire_min_version": spec.map(|s| s.versions.min),
                "kwire_max_version": spec.map(|s| s.versions.max),
                "kwire_uses": uses,
            }));
        }
        let _ = writeln!(text, "{broker}{}", if versions.legacy { " (pre-0.10, fixed table)" } else { "" });
        text.push_str(&table.render());
        text.push('\n');
        json_brokers.push(json!({
            "node_id": broker.node_id,
            "addr": broker.addr,
            "legacy": versions.legacy,
            "apis": apis,
        }));
    }
    match ctx.format() {
        Format::Json => print_json(&json!({ "brokers": json_brokers })),
        Format::Text => out!("{}\n", text.trim_end_matches('\n')),
    }
    Ok(())
}
