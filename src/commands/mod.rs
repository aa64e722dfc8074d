//! One file per command. [`run`] builds the runtime and the shared [`Context`], dispatches, and
//! turns a failure into its one-line message and exit code.

mod api_versions;
mod chaos;
mod check;
mod consume;
mod consume_group;
pub(crate) mod decode;
mod decode_pcap;
mod docs;
mod exporter;
mod exporter_committed;
mod exporter_requests;
mod exporter_snapshot;
mod exporter_stores;
mod exporter_tracks;
pub(crate) mod group;
mod http_request;
pub(crate) mod metadata;
mod migrate;
pub(crate) mod not_authorized;
pub(crate) mod offsets;
pub(crate) mod plan;
mod produce;
mod proxy;
mod proxy_control;
pub(crate) mod reset;
mod stop_signal;
mod time_lag;
mod topic;
mod watch;
mod written;

use std::io::Write as _;
use std::sync::Arc;

use kafka_client::{
    Client, ClientConfig, Direction, SecurityProtocol, TopicPartition, TraceEvent, TraceHook,
};
use kafka_wire::protocol::ErrorCode;

use crate::cli::{Cli, Command, Format, FormatArg, Global};
use crate::exit::{Exit, Failure};
use crate::output::hex;

/// What every command gets: the global options and a way to reach the cluster.
#[derive(Debug)]
pub struct Context {
    pub global: Global,
    /// The principal the brokers check ACLs for, once the client settings are read (for the
    /// NOT_AUTHORIZED message).
    principal: std::sync::OnceLock<String>,
    /// Set by [`crate::api`]: each command's JSON document is kept here instead of printed.
    captured: Option<std::sync::Mutex<Option<serde_json::Value>>>,
    /// Set by [`crate::api`]: the first connection is kept and every later command reuses it.
    shared_client: Option<tokio::sync::OnceCell<Arc<Client>>>,
}

impl Context {
    /// The command line's context: documents go to stdout, each command connects once.
    pub fn new(global: Global) -> Self {
        Self { global, principal: std::sync::OnceLock::new(), captured: None, shared_client: None }
    }

    /// An embedding's context ([`crate::api`]): the JSON documents are kept for
    /// [`Context::take_json`], and one connection serves every command.
    pub fn capturing(global: Global) -> Self {
        Self {
            global,
            principal: std::sync::OnceLock::new(),
            captured: Some(std::sync::Mutex::new(None)),
            shared_client: Some(tokio::sync::OnceCell::new()),
        }
    }

    /// Prints a command's `--format json` document, or keeps it when capturing.
    pub fn emit_json(&self, value: serde_json::Value) {
        match &self.captured {
            Some(slot) => *slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(value),
            None => crate::output::print_json(&value),
        }
    }

    /// The document the last command emitted (capturing contexts only).
    pub fn take_json(&self) -> Option<serde_json::Value> {
        self.captured.as_ref()?.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }

    /// A failure as the user sees it: NOT_AUTHORIZED names the principal the brokers checked.
    pub fn explain(&self, mut failure: Failure) -> Failure {
        if failure.exit == Exit::NOT_AUTHORIZED {
            if let Some(principal) = self.principal.get() {
                failure.message = format!("{} (as {principal})", failure.message);
            }
        }
        failure
    }

    pub fn format(&self) -> Format {
        match self.global.format {
            FormatArg::Text => Format::Text,
            // `spark` reaches only `plan`, which asks for it itself (`run` refuses it elsewhere).
            FormatArg::Json | FormatArg::Spark => Format::Json,
        }
    }

    /// What the offset stores need: the client, `--zookeeper`, `--timeout`.
    pub fn store_access<'a>(&'a self, client: &'a Arc<Client>) -> crate::store::StoreAccess<'a> {
        crate::store::StoreAccess {
            client,
            zookeeper: self.global.zookeeper.as_deref(),
            zookeeper_auth: self.global.zookeeper_auth.as_deref(),
            zookeeper_tls: crate::store::ZkTlsFiles {
                ca: self.global.zookeeper_tls_ca.as_deref(),
                cert: self.global.zookeeper_tls_cert.as_deref(),
                key: self.global.zookeeper_tls_key.as_deref(),
            },
            zookeeper_acl: self.global.zookeeper_acl,
            spark_sink: self.global.spark_sink.as_deref(),
            spark_sink_compact_interval: self.global.spark_sink_compact_interval,
            spark_sink_retention: self.global.spark_sink_retention,
            timeout: self.global.timeout,
        }
    }

    /// Connects to the cluster named by `--bootstrap-server` / `KWIRE_BOOTSTRAP` (once, in an
    /// embedding's context).
    pub async fn client(&self) -> Result<Arc<Client>, Failure> {
        self.client_observed(None).await
    }

    /// [`client`](Self::client) with `observe` also seeing every frame (after `--trace`'s
    /// printing, when that is on). An embedding's context connects once; its first call's
    /// `observe` is the one kept.
    pub async fn client_observed(&self, observe: Option<TraceHook>) -> Result<Arc<Client>, Failure> {
        match &self.shared_client {
            Some(cell) => cell.get_or_try_init(|| self.connect(observe)).await.cloned(),
            None => self.connect(observe).await,
        }
    }

    async fn connect(&self, observe: Option<TraceHook>) -> Result<Arc<Client>, Failure> {
        let (mut config, warnings) = self.client_config()?;
        // An embedding read the warnings when it checked the settings (`crate::api`).
        for warning in warnings.iter().filter(|_| self.captured.is_none()) {
            eprintln!("kwire: warning: {}", crate::output::escape(warning));
        }
        config.trace = match (config.trace.take(), observe) {
            (None, observe) => observe,
            (Some(print), None) => Some(print),
            (Some(print), Some(observe)) => Some(Arc::new(move |event: &TraceEvent<'_>| {
                print(event);
                observe(event);
            })),
        };
        Ok(Arc::new(Client::connect(config).await?))
    }

    /// The client settings of the global options, and the warnings about them (unknown keys,
    /// host name checks turned off, a password file others can read). Nothing connects.
    pub fn client_config(&self) -> Result<(ClientConfig, Vec<String>), Failure> {
        let bootstrap = self.global.bootstrap.as_deref().ok_or_else(|| {
            Failure::new(
                Exit::USAGE,
                "no brokers given: pass --bootstrap-server HOST:PORT or set KWIRE_BOOTSTRAP",
            )
        })?;
        let mut config = ClientConfig::new(bootstrap)?;
        config.request_timeout = self.global.timeout;
        config.connect_timeout = self.global.timeout.min(std::time::Duration::from_secs(10));
        let warnings = crate::command_config::apply(
            &mut config,
            self.global.command_config.as_deref(),
            &self.global.property,
        )?;
        // -b / KWIRE_BOOTSTRAP wins over a bootstrap.servers in the properties.
        config.bootstrap = ClientConfig::new(bootstrap)?.bootstrap;
        let _ = self.principal.set(principal(&config));
        if self.global.trace {
            config.trace = Some(Arc::new(print_trace));
        }
        Ok((config, warnings))
    }

    /// The principal the brokers check ACLs for (`User:ANONYMOUS` before the settings are read).
    pub fn principal(&self) -> &str {
        self.principal.get().map_or("User:ANONYMOUS", String::as_str)
    }

    /// Every partition of `topics`, or a NOT_FOUND failure naming the first unknown topic, or a
    /// NOT_AUTHORIZED one naming every topic an ACL hides.
    pub async fn partitions_of(
        &self,
        client: &Client,
        topics: &[String],
    ) -> Result<Vec<TopicPartition>, Failure> {
        let (partitions, refused) = self.partitions_or_refused(client, topics).await?;
        if !refused.is_empty() {
            return Err(not_authorized::refused(&refused));
        }
        Ok(partitions)
    }

    /// Every partition of the `topics` the ACLs let this principal describe, and each topic they
    /// hide as a [`Refusal`](not_authorized::Refusal) (Metadata gives no partitions for it, so
    /// the whole topic is one); a NOT_FOUND failure names the first unknown topic.
    pub async fn partitions_or_refused(
        &self,
        client: &Client,
        topics: &[String],
    ) -> Result<(Vec<TopicPartition>, Vec<not_authorized::Refusal>), Failure> {
        let metadata = client.refresh_metadata(topics).await?;
        partitions_in(&metadata, topics)
    }

    /// [`partitions_of`](Self::partitions_of) for a command that writes: a topic the brokers do
    /// not know yet is waited for up to `propagation` (it may have been created a moment ago),
    /// saying so on stderr, before it is a NOT_FOUND failure.
    pub async fn partitions_awaiting(
        &self,
        client: &Client,
        topics: &[String],
        propagation: std::time::Duration,
    ) -> Result<Vec<TopicPartition>, Failure> {
        let mut metadata = client.refresh_metadata(topics).await?;
        if let Some(missing) = topics.iter().find(|t| metadata.topic_maybe_propagating(t)) {
            if !propagation.is_zero() {
                eprintln!(
                    "kwire: topic `{}` is not in the brokers' metadata yet; waiting up to {} ms for it \
                     (topic.metadata.propagation.max.ms)",
                    crate::output::escape(missing),
                    propagation.as_millis()
                );
                metadata = client.refresh_metadata_awaiting_topics(topics, propagation).await?;
            }
        }
        let (partitions, refused) = partitions_in(&metadata, topics)?;
        if !refused.is_empty() {
            return Err(not_authorized::refused(&refused));
        }
        Ok(partitions)
    }
}

/// Every partition of the named `topics` in `metadata`, and each topic an ACL hides; a
/// NOT_FOUND failure names the first topic `metadata` does not know.
fn partitions_in(
    metadata: &kafka_client::ClusterMetadata,
    topics: &[String],
) -> Result<(Vec<TopicPartition>, Vec<not_authorized::Refusal>), Failure> {
    let mut out = Vec::new();
    let mut refused = Vec::new();
    for name in topics {
        let topic = metadata
            .topic(name)
            .filter(|t| t.error != ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
            .ok_or_else(|| Failure::new(Exit::NOT_FOUND, format!("unknown topic `{name}`")))?;
        if topic.error.is_authorization() {
            refused.push(not_authorized::Refusal { topic: name.clone(), partition: None, code: topic.error });
            continue;
        }
        out.extend(topic.partitions.iter().map(|p| TopicPartition::new(name.clone(), p.partition)));
    }
    Ok((out, refused))
}

/// Who the brokers see: the SASL user, the client certificate's subject, or ANONYMOUS.
fn principal(config: &ClientConfig) -> String {
    match (&config.sasl, config.security_protocol) {
        (Some(sasl), p) if p.uses_sasl() => sasl.principal(),
        (_, SecurityProtocol::Ssl) if config.tls.client_cert_file.is_some() => {
            "the client certificate's subject".to_owned()
        }
        _ => "User:ANONYMOUS".to_owned(),
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
pub(crate) fn check_names(command: &Command) -> Result<(), Failure> {
    use crate::cli::{GroupCommand, TopicCommand};
    use kafka_wire::protocol::names::{validate_group, validate_topic};
    let mut topics: Vec<&str> = Vec::new();
    let mut groups: Vec<&str> = Vec::new();
    match command {
        Command::ApiVersions
        | Command::Decode(_)
        | Command::Proxy(_)
        | Command::Chaos(_)
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
            topics.extend(a.offsets.iter().map(|(tp, _)| &*tp.topic));
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
        Command::Consume(a) => {
            topics.extend(a.topics.iter().map(String::as_str));
            groups.extend(a.group.as_deref());
        }
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
    if cli.global.format == FormatArg::Spark && !matches!(cli.command, Command::Plan(_)) {
        let failure = Failure::new(Exit::USAGE, "--format spark is for `kwire plan` only: use text or json");
        print_failure(&failure);
        return failure.exit;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("kwire: cannot start the async runtime: {e}");
            return Exit::CLUSTER;
        }
    };
    let ctx = Context::new(cli.global);
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
            Command::Decode(args) if args.pcap.is_some() => decode_pcap::run(&ctx, &args),
            Command::Decode(args) => decode::run(&args),
            Command::Proxy(args) => proxy::run(&ctx, &args).await,
            Command::Chaos(crate::cli::ChaosCommand::Run(args)) => chaos::run(&ctx, &args).await,
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
            let failure = ctx.explain(failure);
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
