//! One file per command. [`run`] builds the runtime and the shared [`Context`], dispatches, and
//! turns a failure into its one-line message and exit code.

mod api_versions;
mod check;
mod consume;
mod decode;
mod docs;
mod exporter;
mod group;
mod metadata;
mod migrate;
mod offsets;
mod plan;
mod produce;
mod reset;
mod time_lag;
mod topic;
mod watch;
mod written;

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
        crate::output::escape(event.broker),
        event.api,
        event.version,
        event.correlation_id,
        event.frame.len(),
        crate::output::json_safe(&decode::trace_json(event)),
        hex(event.frame)
    );
}

/// Every topic name and group id on the command line, checked against Kafka's rules before
/// anything connects: a bad name is a usage error naming the rule, not a broker hanging up.
fn check_names(command: &Command) -> Result<(), Failure> {
    use crate::cli::{GroupCommand, TopicCommand};
    use kafka_wire::protocol::names::{validate_group, validate_topic};
    let mut topics: Vec<&str> = Vec::new();
    let mut groups: Vec<&str> = Vec::new();
    match command {
        Command::ApiVersions
        | Command::Decode(_)
        | Command::Group(GroupCommand::List)
        | Command::Completions { .. }
        | Command::Exporter(_)
        | Command::Man { .. } => {}
        Command::Metadata(a) => topics.extend(a.topics.iter().map(String::as_str)),
        Command::Offsets(a) => topics.extend(a.topics.iter().map(String::as_str)),
        Command::Group(GroupCommand::Describe(a)) => {
            groups.push(&a.group);
            topics.extend(a.topics.iter().map(String::as_str));
        }
        Command::Group(GroupCommand::Check(a)) => {
            groups.push(&a.group);
            topics.extend(a.topics.iter().map(String::as_str));
        }
        Command::Group(GroupCommand::Watch(a)) => {
            groups.extend(a.groups.iter().map(String::as_str));
            topics.extend(a.topics.iter().map(String::as_str));
        }
        Command::Plan(a) => {
            groups.push(&a.group);
            topics.extend(a.topics.iter().map(String::as_str));
        }
        Command::Reset(a) => {
            groups.push(&a.group);
            topics.extend(a.topics.iter().map(String::as_str));
        }
        Command::Commit(a) => {
            groups.push(&a.group);
            topics.extend(a.offsets.iter().map(|(tp, _)| tp.topic.as_str()));
        }
        Command::Migrate(a) => {
            groups.push(&a.group);
            topics.extend(a.topics.iter().map(String::as_str));
        }
        Command::Topic(
            TopicCommand::Create { topic, .. }
            | TopicCommand::AddPartitions { topic, .. }
            | TopicCommand::DeleteRecords { topic, .. },
        ) => topics.push(topic),
        Command::Topic(TopicCommand::Delete { topics: names }) => {
            topics.extend(names.iter().map(String::as_str));
        }
        Command::Consume(a) => topics.push(&a.topic),
        Command::Produce(a) => topics.push(&a.topic),
    }
    let invalid = |e: kafka_wire::protocol::names::InvalidName| Failure::new(Exit::USAGE, e.to_string());
    groups.into_iter().try_for_each(|g| validate_group(g).map_err(invalid))?;
    topics.into_iter().try_for_each(|t| validate_topic(t).map_err(invalid))
}

pub fn run(cli: Cli) -> Exit {
    if let Err(failure) = check_names(&cli.command) {
        print_failure(&failure);
        // A monitoring plugin cannot tell a bad name from a WARNING by exit 1.
        if matches!(cli.command, Command::Group(crate::cli::GroupCommand::Check(_))) {
            return crate::exit::CheckStatus::Unknown.exit();
        }
        return failure.exit;
    }
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
            Command::Exporter(args) => exporter::run(&ctx, &args).await,
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
            print_failure(&failure);
            failure.exit
        }
    }
}

/// The one line on stderr for a failure: control characters escaped, so a name read from a
/// broker, a file or an argument cannot move the cursor or recolour the terminal, and the
/// message stays one line.
fn print_failure(failure: &Failure) {
    if failure.message.is_empty() {
        return; // Failure::exit_only: the command printed its own report
    }
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "kwire: {}", crate::output::escape(&failure.message));
}
