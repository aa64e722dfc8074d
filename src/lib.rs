//! `kwire`'s command-line tool as a library: the binary (`src/main.rs`) parses the command line
//! and calls [`commands::run`]; the Python package (`python/`) calls [`api`], which runs the same
//! commands and returns the JSON documents they print with `--format json`.

mod anomaly_json;
pub mod api;
mod checkpoint;
pub mod cli;
mod command_config;
pub mod commands;
mod exchange_output;
pub mod exit;
mod handed_out;
mod line_reader;
mod option_scope;
mod output;
mod properties_file;
mod store;
mod time;
mod zookeeper_auth;
