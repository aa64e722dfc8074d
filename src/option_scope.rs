//! Which of the global options (`cli::Global`) each command uses: its `--help`, completions and
//! man page list only those, and one typed after a command that does not use it is refused,
//! naming the commands that do. Before the command (`kwire -b HOST decode`, as an alias puts
//! it) or from its environment variable it is a setting for every command, and the commands
//! that do not use it ignore it.

use std::collections::BTreeSet;
use std::ffi::OsString;

use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, Command};

/// Reaching the cluster: every command that talks to brokers.
const CONNECTION: &[&str] = &["bootstrap", "timeout", "trace", "command_config", "property"];
/// `--format`: every command that prints a table or a JSON document.
const FORMAT: &[&str] = &["format"];
/// The ZooKeeper offset store's connection, credentials and ACL.
const ZOOKEEPER: &[&str] = &[
    "zookeeper",
    "zookeeper_auth",
    "zookeeper_tls_ca",
    "zookeeper_tls_cert",
    "zookeeper_tls_key",
    "zookeeper_acl",
];
/// What a write into a Spark checkpoint also writes into the query's file sink.
const SPARK_SINK: &[&str] = &["spark_sink", "spark_sink_compact_interval", "spark_sink_retention"];

/// The global options of the command at `path` (its subcommand names, `["group", "describe"]`).
fn scope(path: &[&str]) -> Vec<&'static str> {
    let groups: &[&[&str]] = match path {
        ["completions" | "man"] => &[],
        ["decode" | "proxy"] => &[FORMAT],
        // The brokers behind its proxy.
        ["chaos", "run"] => &[&["bootstrap"], FORMAT],
        // Reads stores; its ZooKeeper sources take the connect string, credentials and ACL.
        ["exporter"] => &[CONNECTION, &["zookeeper", "zookeeper_auth", "zookeeper_acl"]],
        // A live view in the terminal, not a document.
        ["group", "watch"] => &[CONNECTION, ZOOKEEPER],
        ["group", "describe" | "check"] | ["plan"] => &[CONNECTION, FORMAT, ZOOKEEPER],
        // The commands that write offsets into a store.
        ["reset" | "commit" | "migrate"] => &[CONNECTION, FORMAT, ZOOKEEPER, SPARK_SINK],
        _ => &[CONNECTION, FORMAT],
    };
    groups.concat()
}

/// Every global option's id.
fn all_global() -> Vec<&'static str> {
    [CONNECTION, FORMAT, ZOOKEEPER, SPARK_SINK].concat()
}

/// `command` with each subcommand's unused global options hidden from its help (a command
/// with subcommands shows those any of them uses). Such a command gets its own hidden copy of
/// the option: clap does not pass a global option on to a command that has one of that id, so
/// the copy is what its help shows (nothing). Where an option was typed, [`check`] reads from
/// argv ([`typed_before_subcommand`]).
pub fn scoped(mut command: Command) -> Command {
    let globals: Vec<Arg> = command.get_arguments().filter(|a| a.is_global_set()).cloned().collect();
    let names: Vec<String> = command.get_subcommands().map(|c| c.get_name().to_owned()).collect();
    for name in names {
        command = command.mut_subcommand(&name, |sub| hide_unused(sub, &[name.as_str()], &globals));
    }
    command
}

/// Gives `command` (at `path`) a hidden copy of each of `globals` that neither it nor any of
/// its subcommands uses.
fn hide_unused(mut command: Command, path: &[&str], globals: &[Arg]) -> Command {
    let children: Vec<String> = command.get_subcommands().map(|c| c.get_name().to_owned()).collect();
    let mut used = if children.is_empty() { scope(path) } else { Vec::new() };
    for child in &children {
        let child_path: Vec<&str> = path.iter().copied().chain([child.as_str()]).collect();
        used.extend(scope(&child_path));
        command = command.mut_subcommand(child, |c| hide_unused(c, &child_path, globals));
    }
    for arg in globals.iter().filter(|a| !used.iter().any(|id| a.get_id() == *id)) {
        command = command.arg(arg.clone().global(false).hide(true));
    }
    // `--format spark` is `plan`'s alone: the others' copy of --format neither lists it nor
    // describes it. The value typed still reaches `cli::Global` (clap passes a value up by id).
    if path != ["plan"] && used.contains(&"format") {
        if let Some(format) = globals.iter().find(|a| a.get_id() == "format") {
            command = command.arg(
                format
                    .clone()
                    .global(false)
                    .value_parser(crate::cli::format_without_spark())
                    .help("Output format: aligned text tables, or one JSON document on stdout"),
            );
        }
    }
    command
}

/// The ids of the global options typed before the subcommand in `argv` (its first item is the
/// program): the root's own options, their values skipped as `command` defines them.
pub fn typed_before_subcommand(command: &Command, argv: &[OsString]) -> BTreeSet<String> {
    let mut before = BTreeSet::new();
    let mut tokens = argv.iter().skip(1);
    while let Some(token) = tokens.next() {
        let Some(token) = token.to_str() else { break };
        let found = if let Some(long) = token.strip_prefix("--") {
            let (name, inline) = long.split_once('=').map_or((long, false), |(name, _)| (name, true));
            if name.is_empty() {
                break; // `--`: nothing after it is an option
            }
            command.get_arguments().find(|a| a.get_long() == Some(name)).map(|a| (a, inline))
        } else if let Some(short) = token.strip_prefix('-').filter(|s| !s.is_empty()) {
            let mut letters = short.chars();
            let letter = letters.next();
            command.get_arguments().find(|a| a.get_short() == letter).map(|a| (a, letters.next().is_some()))
        } else {
            break; // the subcommand
        };
        if let Some((arg, inline)) = found {
            before.insert(arg.get_id().to_string());
            if arg.get_action().takes_values() && !inline {
                tokens.next();
            }
        }
    }
    before
}

/// Refuses a global option typed after a command that does not use it; `before` are those
/// typed before the subcommand ([`typed_before_subcommand`]), settings for every command.
pub fn check(
    command: &mut Command,
    matches: &ArgMatches,
    before: &BTreeSet<String>,
) -> Result<(), clap::Error> {
    let mut path = Vec::new();
    let mut levels = vec![matches];
    while let Some((name, sub)) = levels[levels.len() - 1].subcommand() {
        path.push(name);
        levels.push(sub);
    }
    if path.is_empty() {
        return Ok(());
    }
    let used = scope(&path);
    // Clap shares a global option's value between the levels, so where it was typed comes
    // from argv: before the subcommand it is a setting for every command (an alias `kwire -b
    // HOST`), ignored where it does not apply; after it, it was meant for that command.
    let typed_here = |id: &str| {
        !before.contains(id) && levels.iter().any(|m| m.value_source(id) == Some(ValueSource::CommandLine))
    };
    let Some(id) = all_global().into_iter().find(|id| !used.contains(id) && typed_here(id)) else {
        return Ok(());
    };
    let flag = command.get_arguments().find(|a| a.get_id() == id).map_or_else(
        || id.to_owned(),
        |a| a.get_long().map_or_else(|| format!("-{}", a.get_short().unwrap_or('?')), |l| format!("--{l}")),
    );
    let users: Vec<String> = users_of(command, id, &mut Vec::new());
    let message = format!(
        "{flag} does not apply to `kwire {}`; it is for: {}",
        path.join(" "),
        if users.is_empty() { "no command".to_owned() } else { users.join(", ") }
    );
    Err(error_at(command, &path, message))
}

/// `message` as an error of the subcommand at `path`, with its usage line (as clap's own).
fn error_at(command: &mut Command, path: &[&str], message: String) -> clap::Error {
    if let Some((name, rest)) = path.split_first() {
        if let Some(sub) = command.find_subcommand_mut(name) {
            return error_at(sub, rest, message);
        }
    }
    command.error(ErrorKind::ArgumentConflict, message)
}

/// The commands (as `group describe`) that use option `id`, in the order `--help` lists them.
fn users_of(command: &Command, id: &str, path: &mut Vec<String>) -> Vec<String> {
    let mut users = Vec::new();
    // clap's own `help` subcommand is nobody's user.
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        path.push(sub.get_name().to_owned());
        if sub.get_subcommands().next().is_some() {
            users.extend(users_of(sub, id, path));
        } else {
            let p: Vec<&str> = path.iter().map(String::as_str).collect();
            if scope(&p).contains(&id) {
                users.push(p.join(" "));
            }
        }
        path.pop();
    }
    users
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{command, parse_args as parse_from};

    fn help(path: &[&str]) -> String {
        let mut c = command();
        c.build();
        for name in path {
            c = c.find_subcommand(name).expect("a subcommand").clone();
        }
        c.render_long_help().to_string()
    }

    #[test]
    fn each_help_lists_only_the_options_its_command_uses() {
        let consume = help(&["consume"]);
        assert!(consume.contains("--bootstrap-server") && consume.contains("--format"), "{consume}");
        for absent in ["--zookeeper", "--spark-sink", "spark", "Spark"] {
            assert!(!consume.contains(absent), "consume --help lists {absent}:\n{consume}");
        }
        let plan = help(&["plan"]);
        assert!(plan.contains("--zookeeper-tls-ca") && !plan.contains("--spark-sink"), "{plan}");
        assert!(plan.contains("- spark"), "plan --help lists --format spark:\n{plan}");
        let reset = help(&["reset"]);
        assert!(reset.contains("--zookeeper-acl") && reset.contains("--spark-sink-retention"), "{reset}");
        let decode = help(&["decode"]);
        assert!(!decode.contains("--bootstrap-server") && !decode.contains("--timeout"), "{decode}");
        let watch = help(&["group", "watch"]);
        assert!(watch.contains("--zookeeper") && !watch.contains("--format"), "{watch}");
        // The parent shows what any of its subcommands uses; `topic` uses no store.
        assert!(help(&["group"]).contains("--zookeeper") && !help(&["topic"]).contains("--zookeeper"));
        assert!(!help(&["completions"]).contains("--bootstrap-server"));
    }

    #[test]
    fn an_option_the_command_does_not_use_is_refused_naming_those_that_do() {
        let err = parse_from(["kwire", "consume", "t", "--zookeeper", "zk:2181"]).expect_err("refused");
        let text = err.to_string();
        assert!(text.contains("--zookeeper does not apply to `kwire consume`"), "{text}");
        assert!(
            text.contains("group describe") && text.contains("plan") && text.contains("migrate"),
            "{text}"
        );
        let err = parse_from(["kwire", "decode", "-b", "h:9092", "--api", "metadata", "--request", "00"])
            .unwrap_err();
        assert!(err.to_string().contains("--bootstrap-server does not apply to `kwire decode`"), "{err}");
        let err =
            parse_from(["kwire", "plan", "--group", "g", "--topic", "t", "--spark-sink", "out"]).unwrap_err();
        assert!(err.to_string().contains("it is for: reset, commit, migrate"), "{err}");
        // Before the subcommand it is a setting for every command (an alias `kwire -b HOST`).
        assert!(parse_from(["kwire", "--zookeeper", "zk:2181", "metadata"]).is_ok());
        assert!(
            parse_from(["kwire", "-b", "h:9092", "decode", "--api", "metadata", "--request", "00"]).is_ok()
        );
        // The scan of what comes before the subcommand skips values as the options define them:
        // `--trace` takes none (else `decode` would be skipped and --zookeeper counted before it).
        let err = parse_from([
            "kwire",
            "--trace",
            "decode",
            "--zookeeper",
            "x",
            "--api",
            "metadata",
            "--request",
            "00",
        ])
        .unwrap_err();
        assert!(err.to_string().contains("does not apply to `kwire decode`"), "{err}");
        let spelled = ["kwire", "--format=json", "-X", "a=b", "-bh:1", "--zookeeper", "consume", "metadata"];
        assert!(parse_from(spelled).is_ok(), "a value that looks like a command is still a value");
        // Between a command and its subcommand it is typed for that command: refused.
        let err = parse_from(["kwire", "topic", "--zookeeper", "zk:2181", "delete", "t"]).unwrap_err();
        assert!(err.to_string().contains("--zookeeper does not apply to `kwire topic delete`"), "{err}");
        // Where it applies, it is taken, before or after the subcommand.
        assert!(
            parse_from(["kwire", "--zookeeper", "zk:2181", "plan", "--group", "g", "--topic", "t"]).is_ok()
        );
        assert!(
            parse_from(["kwire", "plan", "--group", "g", "--topic", "t", "--zookeeper", "zk:2181"]).is_ok()
        );
        assert!(parse_from(["kwire", "-b", "h:9092", "consume", "t"]).is_ok());
    }

    #[test]
    fn format_reaches_every_command_from_either_side_of_it_and_spark_only_plans_help() {
        use crate::cli::FormatArg;
        let format = |argv: &[&str]| parse_from(argv.iter().copied()).expect("parses").global.format;
        assert_eq!(format(&["kwire", "--format", "json", "consume", "t"]), FormatArg::Json);
        assert_eq!(format(&["kwire", "consume", "t", "--format", "json"]), FormatArg::Json);
        assert_eq!(format(&["kwire", "consume", "t"]), FormatArg::Text);
        assert_eq!(format(&["kwire", "--format=json", "group", "describe", "g"]), FormatArg::Json);
        // Accepted where it is not listed: `commands` refuses it by name for any command but plan.
        assert_eq!(format(&["kwire", "consume", "t", "--format", "spark"]), FormatArg::Spark);
        assert_eq!(
            format(&["kwire", "plan", "--group", "g", "--topic", "t", "--format", "spark"]),
            FormatArg::Spark
        );
        let err = parse_from(["kwire", "consume", "t", "--format", "xml"]).unwrap_err().to_string();
        assert!(err.contains("[possible values: text, json]"), "{err}");
    }

    #[test]
    fn every_scoped_option_is_a_global_option_and_every_global_option_is_scoped() {
        let root = command();
        let globals: Vec<String> =
            root.get_arguments().filter(|a| a.is_global_set()).map(|a| a.get_id().to_string()).collect();
        let mut scoped: Vec<String> = all_global().iter().map(|s| (*s).to_owned()).collect();
        let mut globals_sorted = globals.clone();
        globals_sorted.sort();
        scoped.sort();
        assert_eq!(globals_sorted, scoped, "cli::Global and option_scope disagree");
    }
}
