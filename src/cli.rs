//! Command-line arguments. Options shared by several commands are global; `option_scope` says
//! which command uses which.

use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use nom::branch::alt;
use nom::bytes::complete::{tag, take_until};
use nom::character::complete::{char, digit1};
use nom::combinator::{all_consuming, eof, rest, value};
use nom::sequence::separated_pair;
use nom::{IResult, Parser as _};

use crate::exit::Exit;
use kafka_vocab::Isolation;

#[derive(Debug, Parser)]
#[command(
    name = "kwire",
    version,
    about = "Kafka offsets, lag and protocol debugging, at the wire level",
    after_help = Exit::help_table()
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct Global {
    /// Bootstrap brokers, comma-separated host:port.
    #[arg(
        short = 'b',
        long = "bootstrap-server",
        env = "KWIRE_BOOTSTRAP",
        hide_env_values = true,
        global = true
    )]
    pub bootstrap: Option<String>,
    /// ZooKeeper connect string host:port[,host:port][/chroot] (for the ZooKeeper offset store).
    #[arg(long, env = "KWIRE_ZOOKEEPER", hide_env_values = true, global = true)]
    pub zookeeper: Option<String>,
    /// ZooKeeper credentials for the ZooKeeper offset store: digest:USER:PASSWORD (digest
    /// auth), sasl:USER:PASSWORD (SASL DIGEST-MD5), or @FILE holding that text.
    #[arg(
        long,
        value_name = "digest|sasl:USER:PASSWORD|@FILE",
        env = "KWIRE_ZOOKEEPER_AUTH",
        hide_env_values = true,
        global = true
    )]
    pub zookeeper_auth: Option<String>,
    /// ZooKeeper over TLS (its secureClientPort): the CA bundle (PEM) that signed the server's
    /// certificate. Turns TLS on for every server of the zk store's connect string.
    #[arg(long, value_name = "FILE", env = "KWIRE_ZOOKEEPER_TLS_CA", global = true)]
    pub zookeeper_tls_ca: Option<std::path::PathBuf>,
    /// Client certificate (PEM) for a ZooKeeper that requires one (ssl.clientAuth=need), with
    /// --zookeeper-tls-key.
    #[arg(long, value_name = "FILE", env = "KWIRE_ZOOKEEPER_TLS_CERT", global = true)]
    pub zookeeper_tls_cert: Option<std::path::PathBuf>,
    /// The unencrypted PEM key of --zookeeper-tls-cert.
    #[arg(long, value_name = "FILE", env = "KWIRE_ZOOKEEPER_TLS_KEY", global = true)]
    pub zookeeper_tls_key: Option<std::path::PathBuf>,
    /// ACL of the znodes the ZooKeeper store creates: inherit (the nearest existing
    /// ancestor's), open (anyone), creator-all (the --zookeeper-auth user only), world-read
    /// (that user writes, anyone reads).
    #[arg(long, value_parser = parse_zookeeper_acl, default_value = "inherit", global = true)]
    pub zookeeper_acl: kwire_stores::AclPolicy,
    /// With a spark:CKPT store: the query's file sink output folder (its `path`). Every batch
    /// kwire writes into the checkpoint also gets its entry in OUTPUT/_spark_metadata/, as
    /// Spark writes it for a batch that wrote no files (compacted at compaction batches).
    #[arg(long, value_name = "OUTPUT", env = "KWIRE_SPARK_SINK", global = true)]
    pub spark_sink: Option<std::path::PathBuf>,
    /// The query's spark.sql.streaming.fileSink.log.compactInterval, for --spark-sink (the
    /// sink log's own .compact files take precedence, as in Spark).
    #[arg(long, value_name = "N", default_value_t = kwire_stores::spark::sink::DEFAULT_COMPACT_INTERVAL,
          value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub spark_sink_compact_interval: u32,
    /// The file sink's `retention` option, for --spark-sink, spelled as the query spells it
    /// (Spark's time string: 7d, 12h, 90s, a bare number is ms): a batch kwire writes that is a
    /// compaction batch leaves out the entries whose files are older than that, as Spark does.
    #[arg(long, value_name = "DURATION", env = "KWIRE_SPARK_SINK_RETENTION", value_parser = parse_spark_sink_retention,
          global = true)]
    pub spark_sink_retention: Option<kwire_stores::spark::sink::Retention>,
    /// Output format: aligned text tables, one JSON document on stdout, or (`plan` only) the
    /// batch as Spark's startingOffsets / endingOffsets JSON.
    #[arg(long, value_enum, default_value_t = FormatArg::Text, global = true)]
    pub format: FormatArg,
    /// Timeout for each request, e.g. 30s, 500ms, 2m (a bare number is seconds); at most 24h.
    #[arg(long, value_parser = parse_timeout, default_value = "30s", global = true)]
    pub timeout: Duration,
    /// Print every request and response frame, decoded and as hex, on stderr (SASL tokens
    /// redacted).
    #[arg(long, global = true)]
    pub trace: bool,
    /// Kafka client properties file (security.protocol, sasl.*, ssl.*), as kafka-consumer-groups'
    /// --command-config takes; see README, "Connecting to a secured cluster".
    #[arg(long = "command-config", value_name = "FILE", env = "KWIRE_COMMAND_CONFIG", global = true)]
    pub command_config: Option<std::path::PathBuf>,
    /// One client property KEY=VALUE, as kcat -X (repeatable; overrides --command-config). A value
    /// may be ${env:NAME} or ${file:PATH}, to keep passwords off the command line.
    #[arg(short = 'X', value_name = "KEY=VALUE", value_parser = crate::properties_file::parse_assignment, global = true)]
    pub property: Vec<(String, String)>,
}

/// `--format` as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "lower")]
pub enum FormatArg {
    Text,
    Json,
    /// `kwire plan` only: `{"startingOffsets": ..., "endingOffsets": ...}` for spark.read.
    Spark,
}

/// `--format` of the commands other than `plan`: the same values, `spark` accepted (and then
/// refused by name before the command runs) but neither listed in their `--help` nor offered
/// in the error for a value that is none of them.
pub fn format_without_spark() -> impl clap::builder::TypedValueParser<Value = FormatArg> {
    let values = FormatArg::value_variants().iter().filter_map(ValueEnum::to_possible_value).map(|value| {
        let spark = value.get_name() == "spark";
        value.hide(spark)
    });
    let parser = clap::builder::PossibleValuesParser::new(values);
    clap::builder::TypedValueParser::try_map(parser, |name: String| {
        <FormatArg as ValueEnum>::from_str(&name, false)
    })
}

/// How a command prints: every command has both; `--format spark` is refused before any
/// command but `plan` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Per broker: each API's supported range and the version kwire uses.
    ApiVersions,
    /// Cluster id, controller, brokers, and per topic its id and partitions.
    Metadata(MetadataArgs),
    /// Per partition: log start, high watermark, last stable offset, leader, epoch, and the
    /// offset at a point in time.
    Offsets(OffsetsArgs),
    /// Consumer groups: list them, or describe one group's offsets against the log.
    #[command(subcommand)]
    Group(GroupCommand),
    /// The engine's plan for the next batch: [from, until) per partition, anomalies, actions.
    Plan(PlanArgs),
    /// Reset a group's offsets (dry run unless --execute), kafka-consumer-groups style.
    Reset(ResetArgs),
    /// Write exact offsets for a group: TOPIC:PARTITION=OFFSET...
    Commit(CommitArgs),
    /// Copy a group's offsets from one store to another (diff and dry run unless --execute).
    Migrate(MigrateArgs),
    /// Prometheus/OpenMetrics exporter: /metrics for every group (kafka_exporter's names plus
    /// kwire's consumable, lost, lag in seconds and health), /healthz.
    Exporter(ExporterArgs),
    /// Create, delete or grow topics, or delete records (move a partition's log start).
    #[command(subcommand)]
    Topic(TopicCommand),
    /// Print records (like kcat -C): partition, offset, timestamp, key, headers, value.
    Consume(ConsumeArgs),
    /// Send stdin's lines as records (like kcat -P).
    Produce(ProduceArgs),
    /// Print a request or response (body or whole frame) given in hex as JSON, with Kafka's
    /// field names in snake_case. Needs no cluster.
    Decode(DecodeArgs),
    /// A Kafka-aware TCP proxy: forwards any client's traffic to the brokers, keeps all of its
    /// connections on the proxy, and prints every request/response pair decoded.
    Proxy(ProxyArgs),
    /// Runs a command against the cluster through `kwire proxy` with a scenario's fault rules,
    /// and reports what the command did and which faults it met.
    #[command(subcommand)]
    Chaos(ChaosCommand),
    /// Print a shell completion script (generated from these options).
    ///
    /// e.g. `kwire completions bash > ~/.local/share/bash-completion/completions/kwire`,
    /// `kwire completions zsh > ~/.zfunc/_kwire`,
    /// `kwire completions fish > ~/.config/fish/completions/kwire.fish`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff, generated from these options).
    ///
    /// e.g. `kwire man | man -l -`.
    Man {
        /// Write kwire.1 and one page per subcommand (kwire-offsets.1, ...) into this directory
        /// instead.
        #[arg(long)]
        out_dir: Option<std::path::PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum TopicCommand {
    /// Create a topic.
    Create {
        topic: String,
        #[arg(long, default_value_t = 1)]
        partitions: i32,
        #[arg(long, default_value_t = 1)]
        replication_factor: i16,
        /// Topic config NAME=VALUE (repeatable).
        #[arg(long)]
        config: Vec<String>,
    },
    /// Delete topics.
    Delete {
        #[arg(required = true)]
        topics: Vec<String>,
    },
    /// Grow a topic to TOTAL partitions.
    AddPartitions { topic: String, total: i32 },
    /// Delete records before an offset: PARTITION=OFFSET (repeatable); moves the log start.
    DeleteRecords {
        topic: String,
        #[arg(required = true)]
        before: Vec<String>,
    },
}

#[derive(Debug, Args)]
pub struct ConsumeArgs {
    /// The topics to read (one without --group, one or more with it).
    #[arg(required = true, num_args = 1..)]
    pub topics: Vec<String>,
    /// Read as a member of this consumer group (like `kcat -G`): the group assigns the
    /// partitions, each starts at the group's commit as offset-engine checks it, and what is
    /// printed is committed. Follows until Ctrl-C / SIGTERM or --count. `-X group.protocol=consumer`
    /// joins with KIP-848 (Kafka 4.0+); `-X kwire.offset.out.of.range=clamp|earliest|latest`
    /// moves a commit the log cannot honour (default: fail, exit 3).
    #[arg(long, short = 'G', value_name = "GROUP")]
    pub group: Option<String>,
    /// Only this partition.
    #[arg(long)]
    pub partition: Option<i32>,
    /// earliest | latest | OFFSET | @MILLIS (or @RFC3339); default earliest. With --group, only
    /// earliest or latest: where a partition without a commit starts.
    #[arg(long, value_parser = parse_from)]
    pub from: Option<ConsumeFrom>,
    /// Stop after this many records in all.
    #[arg(long)]
    pub count: Option<u64>,
    #[arg(long, value_parser = IsolationParser, default_value_t = Isolation::ReadUncommitted)]
    pub isolation: Isolation,
    /// Keep waiting for new records once the end is reached (like `kcat -C` without `-e`),
    /// until Ctrl-C or SIGTERM (exit 0) or --count records.
    #[arg(long)]
    pub follow: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumeFrom {
    Earliest,
    Latest,
    Offset(i64),
    /// Milliseconds since the epoch.
    Time(i64),
}

fn parse_from(text: &str) -> Result<ConsumeFrom, String> {
    match text {
        "earliest" => Ok(ConsumeFrom::Earliest),
        "latest" => Ok(ConsumeFrom::Latest),
        _ => match text.strip_prefix('@') {
            Some(t) => crate::time::parse_time(t).map(ConsumeFrom::Time),
            None => match whole_i64(text) {
                Some(o) if o >= 0 => Ok(ConsumeFrom::Offset(o)),
                _ => Err(format!("`{text}`: use earliest, latest, an offset, or @TIME")),
            },
        },
    }
}

/// All of `text` as a signed decimal `i64` (an optional `+` or `-`, then digits; what
/// `str::parse::<i64>` accepts), `None` for anything else or an overflow.
fn whole_i64(text: &str) -> Option<i64> {
    all_consuming(nom::character::complete::i64::<_, ()>).parse(text).ok().map(|(_, n)| n)
}

#[derive(Debug, Args)]
pub struct ProduceArgs {
    pub topic: String,
    /// Only this partition (default: by key, as the Java client's partitioner does).
    #[arg(long)]
    pub partition: Option<i32>,
    /// Split each line at the first occurrence into key and value.
    #[arg(long)]
    pub key_separator: Option<String>,
    /// The codec of each batch (default none, or `compression.type` of --command-config / -X).
    #[arg(long, value_enum)]
    pub compression: Option<CompressionArg>,
    /// Write the input in a transaction under this transactional id (Kafka's `transactional.id`;
    /// an older producer with the same id is fenced): committed at the end of the input, so
    /// read_committed readers see all of it or, if kwire fails or is killed, none of it.
    #[arg(long, value_name = "ID")]
    pub transactional_id: Option<String>,
    /// With --transactional-id (or `transactional.id` in --command-config / -X): commit every N
    /// records and begin the next transaction.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub txn_every: Option<u64>,
}

#[derive(Debug, Args)]
#[command(
    group = clap::ArgGroup::new("side").args(["request", "response", "pcap"]).required(true),
    after_help = "\
Examples:
  kwire decode --api ListOffsets --version 1 --request ffffffff0000000100017400000001000000\
00ffffffffffffffff
  kwire decode --request --frame 000000180012000300000001000561646d696e000577697265023100
  kwire decode --api Fetch --version 16 --response --records - < body.hex
  kwire decode --pcap session.pcapng --port 9092 --port 9093 --format json

With --pcap: every Kafka request/response pair in a pcap or pcapng capture (Ethernet, Linux
cooked v1/v2, loopback or raw IP; IPv4 and IPv6; TCP reassembled), one line per pair (or one
JSON document per line), the same as `kwire proxy` prints; a stream that starts mid-frame,
lost bytes, frames above --max-frame and bytes that are not Kafka each get one line.

A field the version lacks is omitted; a null prints as null. Error codes are numbers, UUIDs
Kafka's base64 form, bytes standard base64, unknown tagged fields {\"tag\": \"hex\"}.
Exit 1 for bad arguments or hex, 2 for bytes that do not decode (the error names the field
and its byte offset)."
)]
pub struct DecodeArgs {
    /// The API: its name as ListOffsets, list-offsets, list_offsets or LIST_OFFSETS (any case),
    /// or its numeric key. A request frame's header names it.
    #[arg(long)]
    pub api: Option<String>,
    /// The API version. A request frame's header names it.
    #[arg(long)]
    pub version: Option<i16>,
    /// The bytes are a request.
    #[arg(long)]
    pub request: bool,
    /// The bytes are a response.
    #[arg(long)]
    pub response: bool,
    /// The bytes are a whole frame: i32 size prefix, header, body (the header is printed too).
    #[arg(long)]
    pub frame: bool,
    /// Decode `records` fields (Produce requests, Fetch responses) into batches and records:
    /// keys and values as text when printable UTF-8, else {"base64": ...}.
    #[arg(long)]
    pub records: bool,
    /// The bytes in hex (whitespace ignored, optional 0x prefix); `-` or nothing reads stdin.
    pub hex: Option<String>,
    /// Read a pcap or pcapng capture: every request/response pair in it (`--api` then filters).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["hex", "frame", "version", "records"])]
    pub pcap: Option<std::path::PathBuf>,
    /// With --pcap: a broker port (repeatable; default 9092).
    #[arg(long = "port", value_name = "PORT", requires = "pcap")]
    pub ports: Vec<u16>,
    #[command(flatten)]
    pub pairs: PairFilterArgs,
    /// With --pcap: the largest frame held in memory, in bytes; larger frames are reported and
    /// skipped.
    #[arg(long, value_name = "BYTES", default_value_t = kafka_wire::protocol::frame::DEFAULT_MAX_FRAME)]
    pub max_frame: usize,
}

/// Filters on request/response pairs (`kwire proxy`, `kwire decode --pcap`); each repeatable,
/// a pair passes when it matches one value of every filter given.
#[derive(Debug, Args, Default)]
pub struct PairFilterArgs {
    /// Only pairs whose request carries this client id.
    #[arg(long = "client-id", value_name = "ID")]
    pub client_ids: Vec<String>,
    /// Only pairs whose request or response names this topic.
    #[arg(long = "topic", value_name = "TOPIC")]
    pub topics: Vec<String>,
    /// Only pairs whose request or response names this group.
    #[arg(long = "group", value_name = "GROUP")]
    pub groups: Vec<String>,
}

#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  kwire proxy --upstream 127.0.0.1:9092 --listen 127.0.0.1:19092
  kafka-console-consumer.sh --bootstrap-server 127.0.0.1:19092 --topic t --group g
  kwire proxy --upstream b1:9092,b2:9092 --format json --api Fetch --pcap session.pcapng

One listener per broker: the upstreams get the --listen port and the ones after it (port 0:
any free port each); brokers learned from Metadata, FindCoordinator and DescribeCluster
responses get the next ones, opened on demand, and those responses are rewritten to name the
listeners, so every connection of the client stays on the proxy. All other bytes pass
unchanged. One line per request/response pair on stdout (time, connection, client id, broker,
API and version, correlation id, latency, sizes, error codes), or with --format json one
document per pair with the full decoded request and response. The listeners and, at Ctrl-C,
a summary go to stderr.

Faults (--faults FILE of [[rule]] tables, or --fault KEY=VALUE,...): each request is matched
against the rules in order (api, version, broker, client_id, topic, partition; first, every,
probability, after, until) and the first that fires acts on it: delay (delay_ms, direction;
jitter_ms, distribution = uniform|normal), hold (hold_ms: its response held), drop-response,
cut-before, cut-after, error (error = NOT_LEADER_OR_FOLLOWER, ...: answered by the proxy with
that error in every partition), corrupt (a Fetch batch's CRC broken), rewrite (field, value:
every field of that name in the response set) or bandwidth (bytes_per_second, direction: passed
on at that rate). Each
applied fault is named in its pair's line (\"fault\": rule and action); the counts per rule come
with the summary. SIGHUP reads the rules file again; --control HOST:PORT serves /metrics and
switches rules on and off.
The rules' reference is in the book, \"The proxy and decoding\".")]
pub struct ProxyArgs {
    /// The brokers to proxy, comma-separated host:port.
    #[arg(long, value_name = "HOST:PORT[,...]")]
    pub upstream: String,
    /// Where the first listener binds; the next ones take the following ports.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:19092")]
    pub listen: String,
    /// Only pairs of this API (repeatable): a Kafka API name in any case, or its numeric key.
    #[arg(long = "api", value_name = "API")]
    pub apis: Vec<String>,
    #[command(flatten)]
    pub pairs: PairFilterArgs,
    /// Also write the conversation (as the clients saw it) to this file as pcapng.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<std::path::PathBuf>,
    /// The largest frame the proxy pairs and decodes, in bytes; a connection that sends a
    /// larger one is passed through unpaired from there on.
    #[arg(long, value_name = "BYTES", default_value_t = kafka_wire::protocol::frame::DEFAULT_MAX_FRAME)]
    pub max_frame: usize,
    /// Fault rules to apply: a TOML file of `[[rule]]` tables.
    #[arg(long, value_name = "FILE")]
    pub faults: Option<std::path::PathBuf>,
    /// A fault rule as KEY=VALUE,... (repeatable; after the file's rules): e.g.
    /// api=Produce,first=3,action=error,error=NOT_LEADER_OR_FOLLOWER.
    #[arg(long = "fault", value_name = "RULE")]
    pub fault: Vec<String>,
    /// Seeds the draws of rules with `probability` (the same seed and requests give the same
    /// faults); by default the clock.
    #[arg(long, value_name = "N")]
    pub fault_seed: Option<u64>,
    /// Serve the fault rules' control endpoint here (localhost): GET /metrics, GET /rules,
    /// POST /rules/N/on|off, POST /reload (as SIGHUP does).
    #[arg(long, value_name = "HOST:PORT")]
    pub control: Option<String>,
    /// Apply fault rules (and serve --control) on a listener other than loopback: anyone who
    /// reaches it meets the faults.
    #[arg(long)]
    pub allow_remote_faults: bool,
}

#[derive(Debug, Subcommand)]
pub enum ChaosCommand {
    /// `kwire chaos run SCENARIO.toml -- COMMAND [ARG...]`: starts a proxy in front of the
    /// brokers with the scenario's rules (their `after` / `until` count from the command's
    /// start), runs the command with `KWIRE_BOOTSTRAP` set to the proxy (and `{bootstrap}` in its
    /// arguments replaced by it), stops the proxy when the command ends, and prints the report:
    /// the command's exit status and time, and each rule's matched and applied counts. Exits 0
    /// when the command did, 11 otherwise.
    Run(ChaosRunArgs),
}

#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  kwire -b 127.0.0.1:9092 chaos run storm.toml -- kwire produce orders --count 1000
  kwire -b 127.0.0.1:9092 chaos run storm.toml -- java -jar app.jar --bootstrap {bootstrap}

A scenario file holds [[rule]] tables, as `kwire proxy --faults` reads them, and an optional
[scenario] table: upstream = \"HOST:PORT,...\" (default: --bootstrap-server), timeout_s = N (the
command is killed past it).")]
pub struct ChaosRunArgs {
    /// The scenario file.
    #[arg(value_name = "SCENARIO")]
    pub scenario: std::path::PathBuf,
    /// Also write every request/response pair to this file (JSON lines, as `kwire proxy
    /// --format json` prints them).
    #[arg(long, value_name = "FILE")]
    pub pairs: Option<std::path::PathBuf>,
    /// Seeds the draws of rules with `probability`.
    #[arg(long, value_name = "N")]
    pub fault_seed: Option<u64>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompressionArg {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl From<CompressionArg> for kafka_wire::protocol::records::Compression {
    fn from(c: CompressionArg) -> Self {
        use kafka_wire::protocol::records::Compression;
        match c {
            CompressionArg::None => Compression::None,
            CompressionArg::Gzip => Compression::Gzip,
            CompressionArg::Snappy => Compression::Snappy,
            CompressionArg::Lz4 => Compression::Lz4,
            CompressionArg::Zstd => Compression::Zstd,
        }
    }
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[arg(long)]
    pub group: String,
    /// The store to copy from: kafka, zk, file:PATH, or spark:PATH (a Spark checkpoint folder).
    #[arg(long)]
    pub from: crate::store::StoreSpec,
    /// The store to copy to: kafka, zk, file:PATH, or spark:PATH (a Spark checkpoint folder).
    #[arg(long)]
    pub to: crate::store::StoreSpec,
    /// Only these topics (all stored topics by default).
    #[arg(long = "topic")]
    pub topics: Vec<String>,
    /// Write (and read back). Without it nothing is written.
    #[arg(long)]
    pub execute: bool,
    /// Write to a Kafka group even if it has active members, or to a Spark checkpoint whose
    /// query wrote a batch in the last 10 s.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct ResetArgs {
    #[arg(long)]
    pub group: String,
    /// Where the group's offsets are kept: kafka, zk, file:PATH, or spark:PATH (a Spark checkpoint folder).
    #[arg(long, default_value = "kafka")]
    pub store: crate::store::StoreSpec,
    #[arg(long = "topic", required = true)]
    pub topics: Vec<String>,
    /// earliest | latest | current | offset:N | shift:N | datetime:TIME | duration:D (e.g. 2h, 30m, 1d) | file:CSV
    #[arg(long, value_parser = parse_reset_to)]
    pub to: ResetTo,
    /// Write the new offsets (and read them back). Without it nothing is written.
    #[arg(long)]
    pub execute: bool,
    /// Print the plan as kafka-consumer-groups CSV (topic,partition,offset).
    #[arg(long)]
    pub export: bool,
    /// Write even if the group has active members (or a Spark query wrote a batch in the last 10 s).
    #[arg(long)]
    pub force: bool,
    /// With --to file:CSV: list rows for topics not named in --topic, or for partitions that
    /// do not exist, as skipped instead of refusing the file.
    #[arg(long)]
    pub skip_unknown: bool,
    #[arg(long, value_parser = IsolationParser, default_value_t = Isolation::ReadUncommitted)]
    pub isolation: Isolation,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResetTo {
    Earliest,
    Latest,
    Current,
    Offset(i64),
    Shift(i64),
    /// Milliseconds since the epoch.
    Datetime(i64),
    /// Milliseconds before now.
    Duration(u64),
    File(std::path::PathBuf),
}

fn parse_reset_to(text: &str) -> Result<ResetTo, String> {
    let number = |s: &str, what: &str| whole_i64(s).ok_or_else(|| format!("`{s}` is not a number ({what})"));
    // `KIND:VALUE`, split at the first colon: a file path may hold more.
    let kind_value = separated_pair(take_until::<_, _, ()>(":"), char(':'), rest).parse(text);
    match kind_value.map(|(_, kv)| kv) {
        Err(_) => match text {
            "earliest" => Ok(ResetTo::Earliest),
            "latest" => Ok(ResetTo::Latest),
            "current" => Ok(ResetTo::Current),
            _ => Err(format!("unknown target `{text}`: use earliest, latest, current, offset:N, shift:N, datetime:T, duration:D or file:CSV")),
        },
        Ok(("offset", n)) => {
            let n = number(n, "offset")?;
            if n < 0 {
                return Err(format!("offset {n} is negative"));
            }
            Ok(ResetTo::Offset(n))
        }
        Ok(("shift", n)) => number(n, "shift").map(ResetTo::Shift),
        Ok(("datetime", t)) => crate::time::parse_time(t).map(ResetTo::Datetime),
        Ok(("duration", d)) => parse_duration(d).map(|d| ResetTo::Duration(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))),
        Ok(("file", p)) if !p.is_empty() => Ok(ResetTo::File(p.into())),
        Ok((kind, _)) => Err(format!("unknown target `{kind}:`")),
    }
}

#[derive(Debug, Args)]
pub struct CommitArgs {
    #[arg(long)]
    pub group: String,
    /// Where the group's offsets are kept: kafka, zk, file:PATH, or spark:PATH (a Spark checkpoint folder).
    #[arg(long, default_value = "kafka")]
    pub store: crate::store::StoreSpec,
    /// Write even if the group has active members, a Spark query wrote a batch in the last
    /// 10 s, or an offset is outside the log.
    #[arg(long)]
    pub force: bool,
    /// TOPIC:PARTITION=OFFSET (the next offset to read).
    #[arg(required = true, value_parser = parse_assignment)]
    pub offsets: Vec<(kafka_client::TopicPartition, i64)>,
}

fn parse_assignment(text: &str) -> Result<(kafka_client::TopicPartition, i64), String> {
    let bad = || format!("`{text}` is not TOPIC:PARTITION=OFFSET");
    let (tp, offset) = text.rsplit_once('=').ok_or_else(bad)?;
    let (topic, partition) = tp.rsplit_once(':').ok_or_else(bad)?;
    let partition: i32 =
        partition.parse().map_err(|_| format!("`{partition}` is not a partition number in `{text}`"))?;
    let offset: i64 = offset.parse().map_err(|_| format!("`{offset}` is not an offset in `{text}`"))?;
    if topic.is_empty() || partition < 0 || offset < 0 {
        return Err(format!("`{text}`: topic must be non-empty, partition and offset non-negative"));
    }
    Ok((kafka_client::TopicPartition::new(topic, partition), offset))
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[arg(long)]
    pub group: String,
    /// Where the group's offsets are kept: kafka, zk, file:PATH, or spark:PATH (a Spark checkpoint folder).
    #[arg(long, default_value = "kafka")]
    pub store: crate::store::StoreSpec,
    /// Topics to plan (all their partitions).
    #[arg(long = "topic", required = true)]
    pub topics: Vec<String>,
    /// Where a partition with nothing stored starts.
    #[arg(long, value_enum, default_value_t = StartArg::Earliest)]
    pub start: StartArg,
    /// What to do when a stored offset is outside the log.
    #[arg(long, value_enum, default_value_t = OutOfRangeArg::Fail)]
    pub on_out_of_range: OutOfRangeArg,
    /// At most this many records from one partition.
    #[arg(long)]
    pub max_per_partition: Option<u64>,
    /// At most this many records in the whole batch, shared in proportion to backlog.
    #[arg(long)]
    pub max_total: Option<u64>,
    #[arg(long, value_parser = IsolationParser, default_value_t = Isolation::ReadUncommitted)]
    pub isolation: Isolation,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StartArg {
    Earliest,
    Latest,
    Fail,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutOfRangeArg {
    Fail,
    Earliest,
    Latest,
    Clamp,
}

#[derive(Debug, Subcommand)]
pub enum GroupCommand {
    /// Every group on every broker, with its state.
    List,
    /// State, members, and per partition: committed, log start, end, lag, consumable, lost.
    Describe(GroupDescribeArgs),
    /// Sample the group over a short window and print one line: its health (monitoring
    /// plugin: exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN — not the general exit codes).
    #[command(after_help = crate::exit::CHECK_EXIT_HELP)]
    Check(GroupCheckArgs),
    /// A live view of groups' lag, refreshed in place (plain lines when stdout is not a
    /// terminal). Keys: s cycles the sort, f the filter, q quits.
    Watch(GroupWatchArgs),
}

#[derive(Debug, Args)]
pub struct ExporterArgs {
    /// Address to serve /metrics and /healthz on.
    #[arg(long, default_value = "127.0.0.1:9308")]
    pub listen: String,
    /// Only groups whose id matches this regular expression.
    #[arg(long = "group")]
    pub group: Option<String>,
    /// Time between refreshes from the cluster (scrapes never wait on the cluster).
    #[arg(long, value_parser = parse_timeout, default_value = "30s")]
    pub interval: Duration,
    /// Data older than this many intervals is stale: not served as current.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub stale_after: u32,
    /// Samples kept per partition for health.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(2..=1000))]
    pub window: u32,
    /// Also export the groups of this store (repeatable): `zk` or `zk:HOST:PORT[/chroot]` (every
    /// group under /consumers), `file:PATH` (the group of a kwire offset file); their series carry
    /// a `store` label. The cluster's groups are always exported.
    #[arg(long = "store")]
    pub stores: Vec<crate::store::StoreSpec>,
}

#[derive(Debug, Args)]
pub struct GroupWatchArgs {
    /// The groups to watch.
    #[arg(required = true)]
    pub groups: Vec<String>,
    /// Where the groups' offsets are kept: kafka, zk, or file:PATH.
    #[arg(long, default_value = "kafka")]
    pub store: crate::store::StoreSpec,
    /// Only these topics.
    #[arg(long = "topic")]
    pub topics: Vec<String>,
    /// Time between refreshes.
    #[arg(long, value_parser = parse_timeout, default_value = "5s")]
    pub interval: Duration,
    /// Samples kept per partition for rates, the trend and health.
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u32).range(2..=1000))]
    pub window: u32,
    /// Stop after this many refreshes (default: until q or Ctrl-C).
    #[arg(long)]
    pub count: Option<u64>,
    /// Lag in time: fetch the first unconsumed record's timestamp, estimate it from the window,
    /// or off.
    #[arg(long, value_enum, default_value_t = TimeLagArg::Fetch)]
    pub time_lag: TimeLagArg,
    /// Which end counts: the high watermark or the last stable offset.
    #[arg(long, value_parser = IsolationParser, default_value_t = Isolation::ReadUncommitted)]
    pub isolation: Isolation,
}

#[derive(Debug, Args)]
pub struct GroupCheckArgs {
    pub group: String,
    /// Where the group's offsets are kept: kafka, zk, or file:PATH.
    #[arg(long, default_value = "kafka")]
    pub store: crate::store::StoreSpec,
    /// Only these topics.
    #[arg(long = "topic")]
    pub topics: Vec<String>,
    /// CRITICAL when the group's total lag (records) is above this.
    #[arg(long)]
    pub max_lag: Option<u64>,
    /// CRITICAL when a partition's time lag is above this (e.g. 5m).
    #[arg(long, value_parser = parse_timeout)]
    pub max_time_lag: Option<Duration>,
    /// How many samples make the window (at least 2).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(2..=100))]
    pub samples: u32,
    /// Time between samples.
    #[arg(long, value_parser = parse_timeout, default_value = "2s")]
    pub interval: Duration,
    /// A partition whose last commit is known (file and ZooKeeper stores) to be older than this,
    /// with records to read, is STOP.
    #[arg(long, value_parser = parse_timeout, default_value = "5m")]
    pub stop_after: Duration,
    /// Which end counts: the high watermark or the last stable offset.
    #[arg(long, value_parser = IsolationParser, default_value_t = Isolation::ReadUncommitted)]
    pub isolation: Isolation,
}

#[derive(Debug, Args)]
pub struct GroupDescribeArgs {
    pub group: String,
    /// Where the group's offsets are kept: kafka, zk, file:PATH, or spark:PATH (a Spark checkpoint folder).
    #[arg(long, default_value = "kafka")]
    pub store: crate::store::StoreSpec,
    /// Also show these topics' partitions that have nothing stored.
    #[arg(long = "topic")]
    pub topics: Vec<String>,
    /// Which end counts: the high watermark or the last stable offset.
    #[arg(long, value_parser = IsolationParser, default_value_t = Isolation::ReadUncommitted)]
    pub isolation: Isolation,
    /// Lag in time: fetch the first unconsumed record's timestamp (one small Fetch per
    /// leader), estimate it from the produce rate between two samples (--sample), or off.
    #[arg(long, value_enum, default_value_t = TimeLagArg::Fetch)]
    pub time_lag: TimeLagArg,
    /// Take a second sample this long after the first, for rates, catch_up_ms and the
    /// estimate (--time-lag estimate takes 2s when not given).
    #[arg(long, value_parser = parse_timeout)]
    pub sample: Option<Duration>,
}

/// How `group describe` measures lag in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum TimeLagArg {
    /// The timestamp of the first unconsumed record, fetched.
    #[default]
    Fetch,
    /// kafka-lag-exporter's interpolation over end-offset samples.
    Estimate,
    /// Not measured.
    Off,
}

#[derive(Debug, Args)]
pub struct OffsetsArgs {
    /// Topics (all their partitions).
    #[arg(required = true)]
    pub topics: Vec<String>,
    /// earliest | latest | max-timestamp | milliseconds since the epoch | RFC 3339 time.
    #[arg(long, value_parser = parse_at, default_value = "latest")]
    pub at: At,
    /// Which end counts as latest: the high watermark or the last stable offset.
    #[arg(long, value_parser = IsolationParser, default_value_t = Isolation::ReadUncommitted)]
    pub isolation: Isolation,
}

/// A point in a partition's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    Earliest,
    Latest,
    MaxTimestamp,
    /// Milliseconds since the epoch.
    Time(i64),
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            At::Earliest => f.write_str("earliest"),
            At::Latest => f.write_str("latest"),
            At::MaxTimestamp => f.write_str("max-timestamp"),
            At::Time(ms) => write!(f, "{ms}"),
        }
    }
}

fn parse_at(text: &str) -> Result<At, String> {
    match text {
        "earliest" => Ok(At::Earliest),
        "latest" => Ok(At::Latest),
        "max-timestamp" => Ok(At::MaxTimestamp),
        _ => crate::time::parse_time(text).map(At::Time),
    }
}

/// `--isolation`: the shared [`Isolation`] read in Kafka's spelling
/// (`isolation.level=read_committed`), with the kebab-case form as an alias; `--help` and the
/// completions list the two values.
#[derive(Debug, Clone, Copy)]
pub struct IsolationParser;

impl clap::builder::TypedValueParser for IsolationParser {
    type Value = Isolation;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Isolation, clap::Error> {
        // clap checks the text against the listed values (and their aliases) and words the
        // error as for any other enum; what it lets through always parses.
        let values = self.possible_values().into_iter().flatten();
        let text = clap::builder::PossibleValuesParser::new(values).parse_ref(cmd, arg, value)?;
        text.parse::<Isolation>().map_err(|e| {
            clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("{e}\n")).with_cmd(cmd)
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(Isolation::ALL.into_iter().map(|level| {
            let alias = match level {
                Isolation::ReadUncommitted => "read-uncommitted",
                Isolation::ReadCommitted => "read-committed",
            };
            clap::builder::PossibleValue::new(level.as_str()).alias(alias)
        })))
    }
}

#[derive(Debug, Args)]
pub struct MetadataArgs {
    /// Topics to describe (all topics when none are given).
    pub topics: Vec<String>,
}

/// The largest `--timeout`: a day. Every deadline is computed without overflow whatever the
/// value, but a timeout beyond a day is a typo, not a wish (README, "The command line").
pub const MAX_TIMEOUT: Duration = Duration::from_secs(86_400);

/// Parses `--timeout`: a duration above zero and at most [`MAX_TIMEOUT`].
fn parse_spark_sink_retention(text: &str) -> Result<kwire_stores::spark::sink::Retention, String> {
    text.parse().map_err(|e: kwire_stores::spark::sink::retention::BadRetention| e.to_string())
}

fn parse_zookeeper_acl(text: &str) -> Result<kwire_stores::AclPolicy, String> {
    text.parse().map_err(|e: kwire_stores::UnknownAclPolicy| e.to_string())
}

pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text)?;
    if d > MAX_TIMEOUT {
        return Err("longer than the maximum timeout of 24h".to_owned());
    }
    Ok(d)
}

/// A duration's unit: how many milliseconds one of it is.
#[derive(Debug, Clone, Copy)]
enum Unit {
    Millis,
    Seconds,
    Minutes,
    Hours,
    Days,
}

/// The unit after a duration's digits; none means seconds. `ms` is tried before `m`.
fn duration_unit(input: &str) -> IResult<&str, Unit, ()> {
    all_consuming(alt((
        value(Unit::Millis, tag("ms")),
        value(Unit::Seconds, tag("s")),
        value(Unit::Minutes, tag("m")),
        value(Unit::Hours, tag("h")),
        value(Unit::Days, tag("d")),
        value(Unit::Seconds, eof),
    )))
    .parse(input)
}

/// Parses `30s`, `500ms`, `2m`, `3h`, `1d` or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (unit, digits) =
        digit1::<_, ()>(text).map_err(|_| format!("`{text}` is not a duration like 30s, 500ms or 2m"))?;
    let n: u64 = digits.parse().map_err(|_| format!("`{text}` is too large a duration"))?;
    let d = match duration_unit(unit)
        .map_err(|_| format!("`{text}`: unknown unit `{unit}` (use ms, s, m, h or d)"))?
        .1
    {
        Unit::Millis => Duration::from_millis(n),
        Unit::Seconds => Duration::from_secs(n),
        Unit::Minutes => Duration::from_secs(n.saturating_mul(60)),
        Unit::Hours => Duration::from_secs(n.saturating_mul(3600)),
        Unit::Days => Duration::from_secs(n.saturating_mul(86_400)),
    };
    if d.is_zero() {
        return Err("the timeout must be above zero".to_owned());
    }
    Ok(d)
}

/// The command-line interface as clap sees it, each command's help listing only the global
/// options it uses (`option_scope`). `--help`, completions and man pages come from it.
pub fn command() -> clap::Command {
    crate::option_scope::scoped(<Cli as clap::CommandFactory>::command())
}

/// Parses `argv` (its first item is the program name), refusing a global option typed for a
/// command that does not use it.
pub fn parse_args<I, T>(argv: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let argv: Vec<std::ffi::OsString> = argv.into_iter().map(Into::into).collect();
    let mut command = command();
    let before = crate::option_scope::typed_before_subcommand(&command, &argv);
    let matches = command.try_get_matches_from_mut(argv)?;
    crate::option_scope::check(&mut command, &matches, &before)?;
    <Cli as clap::FromArgMatches>::from_arg_matches(&matches).map_err(|e| e.format(&mut command))
}

/// Parses the command line; on error prints clap's message and returns the usage exit code
/// (help and version requests return OK).
/// The message echoes what was typed, so it is escaped like every other error.
pub fn parse() -> Result<Cli, Exit> {
    parse_args(std::env::args_os()).map_err(|e| {
        if e.use_stderr() {
            let mut text = e.render().to_string();
            // A refused value is said in one line; the "try --help" tip adds nothing to it.
            if e.kind() == clap::error::ErrorKind::ValueValidation {
                text = text.lines().next().unwrap_or_default().to_owned() + "\n";
            }
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                crate::output::escape_text(&text).as_bytes(),
            );
            Exit::USAGE
        } else {
            let _ = e.print();
            Exit::OK
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_accept_units_and_reject_nonsense() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("7").unwrap(), Duration::from_secs(7));
        assert!(parse_duration("5w").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("abc").is_err());
        assert!(parse_duration("0s").is_err());
    }

    #[test]
    fn absurd_timeouts_are_refused_with_the_maximum_named() {
        assert_eq!(parse_timeout("24h").unwrap(), MAX_TIMEOUT);
        for absurd in
            ["18446744073709551615", "200000000000000d", "9300000000000000000", "7000000000000000000", "25h"]
        {
            let err = parse_timeout(absurd).unwrap_err();
            assert!(err.contains("maximum timeout of 24h"), "{absurd}: {err}");
        }
        assert!(parse_timeout("99999999999999999999999").unwrap_err().contains("too large"));
    }

    #[test]
    fn reset_targets_keep_their_one_line_errors() {
        assert_eq!(parse_reset_to("offset:42"), Ok(ResetTo::Offset(42)));
        assert_eq!(parse_reset_to("shift:-3"), Ok(ResetTo::Shift(-3)));
        assert_eq!(parse_reset_to("shift:+3"), Ok(ResetTo::Shift(3)));
        assert_eq!(parse_reset_to("file:a:b.csv"), Ok(ResetTo::File("a:b.csv".into())));
        assert_eq!(parse_reset_to("duration:2h"), Ok(ResetTo::Duration(7_200_000)));
        assert_eq!(parse_reset_to("current"), Ok(ResetTo::Current));
        assert_eq!(parse_reset_to("offset:-1").unwrap_err(), "offset -1 is negative");
        assert_eq!(parse_reset_to("offset:x").unwrap_err(), "`x` is not a number (offset)");
        assert_eq!(parse_reset_to("shift:").unwrap_err(), "`` is not a number (shift)");
        assert_eq!(parse_reset_to("file:").unwrap_err(), "unknown target `file:`");
        assert_eq!(parse_reset_to("bogus:1").unwrap_err(), "unknown target `bogus:`");
        assert!(parse_reset_to("newest").unwrap_err().starts_with("unknown target `newest`: use earliest"));
    }

    #[test]
    fn consume_starts_keep_their_one_line_errors() {
        assert_eq!(parse_from("earliest"), Ok(ConsumeFrom::Earliest));
        assert_eq!(parse_from("17"), Ok(ConsumeFrom::Offset(17)));
        assert_eq!(parse_from("@1732874400000"), Ok(ConsumeFrom::Time(1_732_874_400_000)));
        for bad in ["-1", "", "1.5", " 1", "9223372036854775808"] {
            assert_eq!(
                parse_from(bad).unwrap_err(),
                format!("`{bad}`: use earliest, latest, an offset, or @TIME")
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn specs_never_panic_on_any_text(text in ".{0,40}") {
            let _ = parse_duration(&text);
            let _ = parse_timeout(&text);
            let _ = parse_from(&text);
            let _ = parse_at(&text);
            let _ = parse_reset_to(&text);
        }

        #[test]
        fn specs_never_panic_on_near_miss_text(
            text in "(offset|shift|datetime|duration|file|@|earliest)?:?[-+0-9a-z.:@T]{0,24}",
        ) {
            let _ = parse_from(&text);
            let _ = parse_at(&text);
            let _ = parse_reset_to(&text);
        }

        #[test]
        fn durations_mean_their_number_times_their_unit(n in 1u64..=u64::from(u32::MAX), unit in 0usize..6) {
            let (suffix, ms_each) = [("ms", 1), ("s", 1000), ("", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000)][unit];
            let d = parse_duration(&format!(" {n}{suffix} ")).expect("a valid duration");
            proptest::prop_assert_eq!(d.as_millis(), u128::from(n) * ms_each);
        }

        #[test]
        fn offsets_and_shifts_round_trip_through_their_text(n in proptest::num::i64::ANY) {
            proptest::prop_assert_eq!(parse_reset_to(&format!("shift:{n}")), Ok(ResetTo::Shift(n)));
            if n >= 0 {
                proptest::prop_assert_eq!(parse_reset_to(&format!("offset:{n}")), Ok(ResetTo::Offset(n)));
                proptest::prop_assert_eq!(parse_from(&n.to_string()), Ok(ConsumeFrom::Offset(n)));
            } else {
                let text = format!("offset:{n}");
                proptest::prop_assert!(parse_reset_to(&text).is_err());
                proptest::prop_assert!(parse_from(&n.to_string()).is_err());
            }
        }

        /// `At` has a printer (`Display`, used in output): what it prints parses back.
        #[test]
        fn points_in_the_log_round_trip_through_their_display(
            ms in offset_engine::policy::MIN_PLAUSIBLE_TIMESTAMP_MS..crate::time::now_ms(), which in 0usize..4,
        ) {
            let at = [At::Earliest, At::Latest, At::MaxTimestamp, At::Time(ms)][which];
            proptest::prop_assert_eq!(parse_at(&at.to_string()), Ok(at));
        }
    }
}
