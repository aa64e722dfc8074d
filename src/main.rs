//! `kwire`: Kafka offsets, lag and protocol debugging from the command line.

use std::process::ExitCode;

fn main() -> ExitCode {
    let code = match kwire::cli::parse() {
        Ok(args) => kwire::commands::run(args),
        Err(code) => code,
    };
    ExitCode::from(code.value())
}
