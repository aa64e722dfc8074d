//! The command line both example binaries share: `--flag value` pairs, the switches
//! `--exit-when-idle`, `--no-prefetch` (fetch, process, fetch: no batch read ahead) and
//! `--trace` (every request sent, decoded, one line each on stderr), and the flags every direct
//! stream needs (`--bootstrap` or `KWIRE_BOOTSTRAP`, `--group`, `--topic`,
//! `--max-per-partition`, `--memory-budget`). A binary's own flags go to
//! the closure it passes; an unknown flag or a flag without its value is an error naming it.

/// What the shared flags said; the binary checks which of them it requires.
pub struct StreamFlags {
    pub bootstrap: Option<String>,
    pub group: Option<String>,
    /// Every `--topic`, in order.
    pub topics: Vec<String>,
    pub max_per_partition: Option<u64>,
    /// `StreamConfig::memory_budget`'s bytes per batch.
    pub memory_budget: Option<u64>,
    pub exit_when_idle: bool,
    /// `StreamConfig::prefetch`: on unless `--no-prefetch`.
    pub prefetch: bool,
    pub trace: bool,
}

impl StreamFlags {
    /// `--bootstrap`, else `KWIRE_BOOTSTRAP`, else the error a user needs.
    pub fn bootstrap(&mut self) -> Result<String, String> {
        self.bootstrap.take().ok_or_else(|| "--bootstrap (or KWIRE_BOOTSTRAP) is required".to_owned())
    }

    pub fn group(&mut self) -> Result<String, String> {
        self.group.take().ok_or_else(|| "--group is required".to_owned())
    }
}

/// Reads `args` (without the program name). `own(flag, value)` gets every flag this module
/// does not know, with its value; it returns `Ok(false)` for a flag it does not know either.
pub fn parse(
    mut args: impl Iterator<Item = String>,
    mut own: impl FnMut(&str, String) -> Result<bool, String>,
) -> Result<StreamFlags, String> {
    let mut flags = StreamFlags {
        bootstrap: std::env::var("KWIRE_BOOTSTRAP").ok(),
        group: None,
        topics: Vec::new(),
        max_per_partition: None,
        memory_budget: None,
        exit_when_idle: false,
        prefetch: true,
        trace: false,
    };
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--exit-when-idle" => flags.exit_when_idle = true,
            "--no-prefetch" => flags.prefetch = false,
            "--trace" => flags.trace = true,
            _ => {}
        }
        if ["--exit-when-idle", "--no-prefetch", "--trace"].contains(&flag.as_str()) {
            continue;
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--bootstrap" => flags.bootstrap = Some(value),
            "--group" => flags.group = Some(value),
            "--topic" => flags.topics.push(value),
            "--max-per-partition" => {
                let n = value.parse::<u64>().map_err(|e| format!("--max-per-partition {value}: {e}"))?;
                flags.max_per_partition = Some(n);
            }
            "--memory-budget" => {
                let n = value.parse::<u64>().map_err(|e| format!("--memory-budget {value}: {e}"))?;
                flags.memory_budget = Some(n);
            }
            other => {
                if !own(other, value)? {
                    return Err(format!("unknown argument `{other}`"));
                }
            }
        }
    }
    Ok(flags)
}

/// `--trace`: each request as it is sent, `-> API vVERSION BROKER DECODED` on one line.
pub fn print_requests(config: &mut kwire_stream::ClientConfig) {
    config.trace = Some(std::sync::Arc::new(|event| {
        if event.direction == kafka_client::Direction::Request {
            eprintln!("-> {} v{} {} {:?}", event.api, event.version, event.broker, event.decoded);
        }
    }));
}

/// `config` with the batch caps the shared flags set: `--max-per-partition`, and
/// `--memory-budget BYTES` (batches sized by the mean record size measured, 1 KiB assumed
/// before the first batch).
pub fn with_caps(
    config: kwire_stream::StreamConfig,
    max_per_partition: Option<u64>,
    memory_budget: Option<u64>,
) -> kwire_stream::StreamConfig {
    let config = config.limits(kwire_stream::Limits { max_per_partition, ..kwire_stream::Limits::default() });
    match memory_budget {
        Some(bytes) => config.memory_budget(kwire_stream::MemoryBudget { bytes, initial_record_bytes: 1024 }),
        None => config,
    }
}
