//! `kwire`: Kafka offsets, lag and protocol debugging from the command line.

mod anomaly_json;
mod checkpoint;
mod cli;
mod command_config;
mod commands;
mod exchange_output;
mod exit;
mod line_reader;
mod output;
mod properties_file;
mod store;
mod time;
mod zookeeper_auth;

use std::process::ExitCode;

fn main() -> ExitCode {
    let code = match cli::parse() {
        Ok(args) => commands::run(args),
        Err(code) => code,
    };
    ExitCode::from(code.value())
}
