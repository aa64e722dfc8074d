//! One file per command. [`run`] builds the runtime and the shared [`Context`], dispatches, and
//! turns a failure into its one-line message and exit code.

mod api_versions;
mod consume;
mod decode;
mod docs;
mod group;
mod metadata;
mod migrate;
mod offsets;
mod plan;
mod produce;
mod reset;
mod topic;

use std::io::Write as _;
use std::sync::Arc;

use kafka_wire::client::{Client, ClientConfig, Direction, TopicPartition, TraceEvent};
use kafka_wire::protocol::ErrorCode;

use crate::cli::{Cli, Command, Format, Global};
use crate::exit::{Exit, Failure};
use crate::output::hex;

/// What every command gets: the global options and a way to reach the cluster.
pub struct Context {
    pub global: Global,
}

impl Context {
    pub fn format(&self) -> Format {
        self.global.format
    }

    /// What the offset stores need: the client, `--zookeeper`, `--timeout`.
    pub fn store_access<'a>(&'a self, client: &'a Arc<Client>) -> crate::store::StoreAccess<'a> {
        crate::store::StoreAccess {
            client,
            zookeeper: self.global.zookeeper.as_deref(),
            timeout: self.global.timeout,
        }
    }

    /// Connects to the cluster named by `--bootstrap-server` / `KWIRE_BOOTSTRAP`.
    pub async fn client(&self) -> Result<Arc<Client>, Failure> {
        let bootstrap = self.global.bootstrap.as_deref().ok_or_else(|| {
            Failure::new(
                Exit::USAGE,
                "no brokers given: pass --bootstrap-server HOST:PORT or set KWIRE_BOOTSTRAP",
            )
        })?;
        let mut config = ClientConfig::new(bootstrap)?;
        config.request_timeout = self.global.timeout;
        config.connect_timeout = self.global.timeout.min(std::time::Duration::from_secs(10));
        if self.global.trace {
            config.trace = Some(Arc::new(print_trace));
        }
        Ok(Arc::new(Client::connect(config).await?))
    }

    /// Every partition of `topics`, or a NOT_FOUND failure naming the first unknown topic.
    pub async fn partitions_of(
        &self,
        client: &Client,
        topics: &[String],
    ) -> Result<Vec<TopicPartition>, Failure> {
        let metadata = client.refresh_metadata(topics).await?;
        let mut out = Vec::new();
        for name in topics {
            let topic = metadata
                .topic(name)
                .filter(|t| t.error != ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
                .ok_or_else(|| Failure::new(Exit::NOT_FOUND, format!("unknown topic `{name}`")))?;
            out.extend(topic.partitions.iter().map(|p| TopicPartition::new(name.clone(), p.partition)));
        }
        Ok(out)
    }
}

fn print_trace(event: &TraceEvent<'_>) {
    let (arrow, side) = match event.direction {
        Direction::Request => ("->", "request"),
        Direction::Response => ("<-", "response"),
    };
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "{arrow} {} {} v{} {side} correlation_id={} ({} bytes)\n{}\nhex: {}",
        event.broker,
        event.api,
        event.version,
        event.correlation_id,
        event.frame.len(),
        decode::trace_json(event),
        hex(event.frame)
    );
}

pub fn run(cli: Cli) -> Exit {
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("kwire: cannot start the async runtime: {e}");
            return Exit::CLUSTER;
        }
    };
    let ctx = Context { global: cli.global };
    let result = runtime.block_on(async {
        match cli.command {
            Command::ApiVersions => api_versions::run(&ctx).await,
            Command::Metadata(args) => metadata::run(&ctx, &args).await,
            Command::Offsets(args) => offsets::run(&ctx, &args).await,
            Command::Group(command) => group::run(&ctx, &command).await,
            Command::Plan(args) => plan::run(&ctx, &args).await,
            Command::Reset(args) => reset::reset(&ctx, &args).await,
            Command::Commit(args) => reset::commit(&ctx, &args).await,
            Command::Migrate(args) => migrate::run(&ctx, &args).await,
            Command::Topic(command) => topic::run(&ctx, &command).await,
            Command::Consume(args) => consume::run(&ctx, &args).await,
            Command::Produce(args) => produce::run(&ctx, &args).await,
            Command::Decode(args) => decode::run(&args),
            Command::Completions { shell } => {
                docs::completions(shell);
                Ok(())
            }
            Command::Man { out_dir } => docs::man(out_dir.as_deref()),
        }
    });
    match result {
        Ok(()) => Exit::OK,
        Err(failure) => {
            eprintln!("kwire: {failure}");
            failure.exit
        }
    }
}
