//! The CLI's operations for an embedding (the Python package, `python/`): each call runs the same
//! command as `kwire ... --format json` and returns the document that command prints, or its
//! [`Failure`] with the exit code the command would have ended with (a partial answer's
//! document, exit 10, is the failure's [`Failure::document`]). Arguments are read by the
//! command line's own parsers (a store spec, `--at`, a policy name mean here what they mean
//! there), and names are checked by Kafka's rules before anything connects.

use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;

use crate::cli::{Command, FormatArg, Global, GroupCommand};
use crate::commands::{self, Context};
use crate::exit::{Exit, Failure};

mod consumer;
pub use consumer::{ConsumedRecord, GroupConsumer};

/// A file sink's `retention` option ([`Settings::spark_sink_retention`]), parsed from Spark's
/// time string with `str::parse`.
pub use kwire_stores::spark::sink::Retention as SparkSinkRetention;

/// How an embedding connects: the global options of the command line it can set.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `--bootstrap-server`: comma-separated host:port.
    pub bootstrap: String,
    /// Kafka client properties, as `-X KEY=VALUE` (later pairs win).
    pub properties: Vec<(String, String)>,
    /// `--timeout`: for each request; at most 24h.
    pub timeout: Duration,
    /// `--zookeeper`: for the ZooKeeper offset store.
    pub zookeeper: Option<String>,
    /// `--spark-sink`: the file sink whose log a `spark:` store's writes keep in step.
    pub spark_sink: Option<std::path::PathBuf>,
    /// `--spark-sink-compact-interval`.
    pub spark_sink_compact_interval: u32,
    /// `--spark-sink-retention`: the file sink's `retention` option (`"7d".parse()`, Spark's
    /// time string), applied when a batch written is a compaction batch.
    pub spark_sink_retention: Option<SparkSinkRetention>,
}

/// One connection to a cluster and the runtime its calls run on. Every call blocks its thread
/// until the command is done; calls from several threads run one at a time (each command's
/// document passes through the one context), so parallel work takes one session per thread.
#[derive(Debug)]
pub struct Session {
    ctx: Context,
    runtime: tokio::runtime::Runtime,
    /// Held from a command's start until its document is taken.
    one_at_a_time: std::sync::Mutex<()>,
}

/// What `plan` found: the `--format json` document, and either the `--format spark` document
/// and the offsets a commit stores, or (an anomaly met a `fail` policy) the failure.
#[derive(Debug)]
pub struct Planned {
    /// `kwire plan --format json`'s document.
    pub document: Value,
    /// `kwire plan --format spark`'s document, `None` when [`Planned::failure`] is set.
    pub spark: Option<Value>,
    /// `until` of every planned range: what committing the batch stores.
    pub ending: Vec<(String, i32, i64)>,
    /// Exit 10: an ACL refused some topics or partitions (the document has a row with an `error`
    /// for each, and plans the others); else exit 3: an anomaly met a `fail` policy (the document
    /// says which).
    pub failure: Option<Failure>,
}

/// The options of `kwire plan` an embedding passes, as the command line spells them.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    pub group: String,
    pub topics: Vec<String>,
    pub store: String,
    pub start: String,
    pub on_out_of_range: String,
    pub max_per_partition: Option<u64>,
    pub max_total: Option<u64>,
}

impl Session {
    /// Checks the settings (the bootstrap list, every property) without connecting; the
    /// connection is made by the first call. Returns the warnings the CLI prints on stderr
    /// (unknown property keys, host name checks turned off).
    pub fn open(settings: Settings) -> Result<(Session, Vec<String>), Failure> {
        let (ctx, warnings) = context_of(settings)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| Failure::new(Exit::CLUSTER, format!("cannot start the async runtime: {e}")))?;
        Ok((Session { ctx, runtime, one_at_a_time: std::sync::Mutex::new(()) }, warnings))
    }

    /// `kwire metadata [TOPIC...] --format json`.
    pub fn metadata(&self, topics: &[String]) -> Result<Value, Failure> {
        let mut argv = vec!["metadata".to_owned(), "--".to_owned()];
        argv.extend(topics.iter().cloned());
        let Command::Metadata(args) = parse(argv)? else { return Err(wrong_command()) };
        self.document(commands::metadata::run(&self.ctx, &args))
    }

    /// `kwire offsets TOPIC... --at AT --format json`.
    pub fn offsets(&self, topics: &[String], at: &str) -> Result<Value, Failure> {
        let mut argv = vec!["offsets".to_owned(), format!("--at={at}"), "--".to_owned()];
        argv.extend(topics.iter().cloned());
        let Command::Offsets(args) = parse(argv)? else { return Err(wrong_command()) };
        self.document(commands::offsets::run(&self.ctx, &args))
    }

    /// `kwire group describe GROUP --store STORE [--topic T...] --format json`.
    pub fn describe_group(&self, group: &str, store: &str, topics: &[String]) -> Result<Value, Failure> {
        let mut argv = vec!["group".to_owned(), "describe".to_owned(), format!("--store={store}")];
        argv.extend(topics.iter().map(|t| format!("--topic={t}")));
        argv.extend(["--".to_owned(), group.to_owned()]);
        let Command::Group(GroupCommand::Describe(args)) = parse(argv)? else { return Err(wrong_command()) };
        self.document(commands::group::describe(&self.ctx, &args))
    }

    /// `kwire plan`: both its documents from one plan (`--format json` and `--format spark`).
    pub fn plan(&self, options: &PlanOptions) -> Result<Planned, Failure> {
        let mut argv = vec![
            "plan".to_owned(),
            format!("--group={}", options.group),
            format!("--store={}", options.store),
            format!("--start={}", options.start),
            format!("--on-out-of-range={}", options.on_out_of_range),
        ];
        argv.extend(options.max_per_partition.map(|n| format!("--max-per-partition={n}")));
        argv.extend(options.max_total.map(|n| format!("--max-total={n}")));
        argv.extend(options.topics.iter().map(|t| format!("--topic={t}")));
        let Command::Plan(args) = parse(argv)? else { return Err(wrong_command()) };
        let _turn = self.one_at_a_time.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let commands::plan::Computed { plan: planned, refused } = self
            .runtime
            .block_on(commands::plan::compute(&self.ctx, &args))
            .map_err(|f| self.ctx.explain(f))?;
        let failed = planned.failures().next().is_some();
        let failure = if refused.is_empty() {
            failed.then(commands::plan::anomaly_failure)
        } else {
            Some(self.ctx.explain(commands::plan::not_authorized(&planned, &refused)))
        };
        Ok(Planned {
            document: commands::plan::json(&args, &planned, &refused, self.ctx.principal()),
            spark: failure.is_none().then(|| commands::plan::spark_json(&planned)),
            ending: planned
                .ending_offsets()
                .into_iter()
                .map(|(tp, until)| (tp.topic.to_string(), tp.partition, until.0))
                .collect(),
            failure,
        })
    }

    /// `kwire commit --group GROUP --store STORE [--force] TOPIC:PARTITION=OFFSET... --format json`.
    pub fn commit(
        &self,
        group: &str,
        store: &str,
        offsets: &[(String, i32, i64)],
        force: bool,
    ) -> Result<Value, Failure> {
        if offsets.is_empty() {
            return Err(Failure::new(Exit::USAGE, "nothing to commit: no partition has an offset"));
        }
        let mut argv = vec!["commit".to_owned(), format!("--group={group}"), format!("--store={store}")];
        if force {
            argv.push("--force".to_owned());
        }
        argv.push("--".to_owned());
        argv.extend(offsets.iter().map(|(topic, partition, offset)| format!("{topic}:{partition}={offset}")));
        let Command::Commit(args) = parse(argv)? else { return Err(wrong_command()) };
        self.document(commands::reset::commit(&self.ctx, &args))
    }

    /// Runs a command to its end and takes the document it emitted.
    fn document(
        &self,
        run: impl std::future::Future<Output = Result<(), Failure>>,
    ) -> Result<Value, Failure> {
        let _turn = self.one_at_a_time.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let result = self.runtime.block_on(run);
        // Taken either way: a failed command's document (a partial answer) goes with its
        // failure, and none is left for the next command.
        let document = self.ctx.take_json();
        match result {
            Ok(()) => document
                .ok_or_else(|| Failure::new(Exit::CLUSTER, "the command finished without a JSON document")),
            Err(f) => Err(Failure { document, ..self.ctx.explain(f) }),
        }
    }
}

/// The command-line context `settings` describe, checked without connecting, and the warnings
/// the CLI prints for them (unknown property keys, host name checks turned off).
fn context_of(settings: Settings) -> Result<(Context, Vec<String>), Failure> {
    if settings.timeout > crate::cli::MAX_TIMEOUT || settings.timeout.is_zero() {
        return Err(Failure::new(Exit::USAGE, "timeout: between 1 ms and the maximum of 24h"));
    }
    let global = Global {
        bootstrap: Some(settings.bootstrap),
        zookeeper: settings.zookeeper,
        zookeeper_auth: None,
        zookeeper_tls_ca: None,
        zookeeper_tls_cert: None,
        zookeeper_tls_key: None,
        spark_sink: settings.spark_sink,
        spark_sink_compact_interval: settings.spark_sink_compact_interval,
        spark_sink_retention: settings.spark_sink_retention,
        zookeeper_acl: "inherit"
            .parse()
            .map_err(|e: kwire_stores::UnknownAclPolicy| Failure::new(Exit::USAGE, e.to_string()))?,
        format: FormatArg::Json,
        timeout: settings.timeout,
        trace: false,
        command_config: None,
        property: settings.properties,
    };
    let ctx = Context::capturing(global);
    let (_, warnings) = ctx.client_config()?;
    Ok((ctx, warnings))
}

/// `kwire decode --api API --version V [--response] [--frame] HEX`: one request or response,
/// body or whole size-prefixed frame, as JSON with Kafka's field names.
pub fn decode(api: &str, version: i16, data: &[u8], request: bool, frame: bool) -> Result<Value, Failure> {
    let mut argv = vec!["decode".to_owned(), format!("--api={api}"), format!("--version={version}")];
    argv.push(if request { "--request" } else { "--response" }.to_owned());
    if frame {
        argv.push("--frame".to_owned());
    }
    let Command::Decode(args) = parse(argv)? else { return Err(wrong_command()) };
    commands::decode::document(&args, Bytes::copy_from_slice(data))
}

/// A command line after `kwire`, read by the CLI's parser; a refusal is a usage failure in one
/// line, as the CLI says it.
fn parse(argv: Vec<String>) -> Result<Command, Failure> {
    let cli = crate::cli::parse_args(std::iter::once("kwire".to_owned()).chain(argv)).map_err(|e| {
        // clap's message up to its usage line, one line: "... not provided: --topic <TOPICS>".
        let text = e.render().to_string();
        let said: Vec<&str> = text
            .lines()
            .map(str::trim)
            .take_while(|l| {
                !l.starts_with("Usage:") && !l.starts_with("tip:") && !l.starts_with("For more information")
            })
            .filter(|l| !l.is_empty())
            .collect();
        let line = said.join(" ");
        Failure::new(Exit::USAGE, line.strip_prefix("error: ").unwrap_or(&line).to_owned())
    })?;
    commands::check_names(&cli.command)?;
    Ok(cli.command)
}

fn wrong_command() -> Failure {
    Failure::new(Exit::USAGE, "the arguments named another command")
}
