//! The command line as a Kafka user types it: Kafka's spellings (`--isolation read_committed`,
//! API names as in the protocol docs, the Java enum, or kebab/snake case), shell completions and
//! a man page generated from the same definitions, and the exit codes in `--help` as the book
//! (docs/src/exit-codes.md) lists them. Only the last test needs the cluster.

use std::process::Output;

use crate::support::{self, json, kwire, kwire_bare, stderr, stdout, unique};

/// Every command that takes `--isolation`, with the other arguments it requires.
const ISOLATION_COMMANDS: &[&[&str]] = &[
    &["offsets", "t"],
    &["consume", "t"],
    &["plan", "--group", "g", "--topic", "t"],
    &["reset", "--group", "g", "--topic", "t", "--to", "earliest"],
    &["group", "describe", "g"],
];

fn with_isolation(command: &[&str], isolation: &str) -> Output {
    let mut args = command.to_vec();
    args.extend(["--isolation", isolation]);
    kwire_bare(&args)
}

#[test]
fn isolation_takes_kafkas_spelling_and_the_kebab_alias_on_every_command() {
    for command in ISOLATION_COMMANDS {
        for isolation in ["read_committed", "read_uncommitted", "read-committed", "read-uncommitted"] {
            let out = with_isolation(command, isolation);
            // Parsed: the command itself ran and stopped at the missing cluster (a kwire
            // failure, not clap's usage error).
            let err = stderr(&out);
            assert!(
                err.starts_with("kwire: ") && !err.contains("invalid value"),
                "{command:?} --isolation {isolation}: {err}"
            );
        }
        let out = with_isolation(command, "committed");
        assert_eq!(out.status.code(), Some(1), "{command:?}");
        let err = stderr(&out);
        assert!(err.contains("invalid value 'committed' for '--isolation"), "{err}");
        assert!(err.contains("[possible values: read_uncommitted, read_committed]"), "{err}");
    }
}

const LIST_OFFSETS_V1: &str = "ffffffff000000010001740000000100000000ffffffffffffffff";

fn decode_list_offsets(api: &str) -> Output {
    kwire_bare(&["decode", "--api", api, "--version", "1", "--request", LIST_OFFSETS_V1])
}

#[test]
fn decode_takes_an_api_by_any_spelling_of_its_name_or_by_key() {
    let reference = decode_list_offsets("ListOffsets");
    assert!(reference.status.success(), "{}", stderr(&reference));
    assert!(stdout(&reference).contains("\"partition_index\": 0"), "{}", stdout(&reference));
    for api in
        ["list-offsets", "list_offsets", "LIST_OFFSETS", "listoffsets", "LISTOFFSETS", "List-Offsets", "2"]
    {
        let out = decode_list_offsets(api);
        assert!(out.status.success(), "--api {api}: {}", stderr(&out));
        assert_eq!(stdout(&out), stdout(&reference), "--api {api}");
    }
    // Two-word and four-word names, each form.
    for api in ["api-versions", "API_VERSIONS", "api_versions", "18"] {
        let out = kwire_bare(&["decode", "--api", api, "--version", "3", "--request", "010100"]);
        assert!(out.status.success(), "--api {api}: {}", stderr(&out));
    }
    for api in ["offset-for-leader-epoch", "OFFSET_FOR_LEADER_EPOCH", "offset_for_leader_epoch", "23"] {
        let out = kwire_bare(&["decode", "--api", api, "--version", "0", "--response", "00000000"]);
        assert!(out.status.success(), "--api {api}: {}", stderr(&out));
    }
}

#[test]
fn decode_refuses_an_unknown_api_listing_what_it_takes() {
    for api in ["list-offset", "lis-toffsets", "JoinGroops"] {
        let out = decode_list_offsets(api);
        assert_eq!(out.status.code(), Some(1), "--api {api}");
        let err = stderr(&out);
        assert!(err.starts_with(&format!("kwire: unknown API `{api}`")), "{err}");
        for listed in ["Produce (0)", "ListOffsets (2)", "OffsetDelete (47)"] {
            assert!(err.contains(listed), "{err}");
        }
        assert!(
            err.contains(
                "ListOffsets, list-offsets, list_offsets or LIST_OFFSETS (any case), or the numeric key"
            ),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
    // A key no Kafka release defines (every defined one decodes, typed or from the schemas).
    let out = decode_list_offsets("9999");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("kwire: kwire cannot decode") && stderr(&out).contains("(API key 9999)"),
        "{}",
        stderr(&out)
    );
}

/// Every subcommand name, as the completions and the man page must know them.
const SUBCOMMANDS: &[&str] = &[
    "api-versions",
    "metadata",
    "offsets",
    "group",
    "plan",
    "reset",
    "commit",
    "migrate",
    "topic",
    "consume",
    "produce",
    "decode",
    "completions",
    "man",
];

#[test]
fn completions_for_bash_zsh_and_fish_know_the_commands_flags_and_values() {
    for shell in ["bash", "zsh", "fish"] {
        let out = kwire_bare(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        assert!(script.len() > 2_000, "{shell}: only {} bytes", script.len());
        for word in SUBCOMMANDS.iter().chain(&["bootstrap-server", "isolation", "read_committed", "out-dir"])
        {
            assert!(script.contains(word), "{shell} completions do not mention `{word}`");
        }
    }
    // bash can check its own script's syntax.
    let bash = stdout(&kwire_bare(&["completions", "bash"]));
    assert!(bash.contains("complete -F _kwire"), "bash registers the function");
    let dir = std::env::temp_dir().join(unique("kwire-completions"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("kwire.bash");
    std::fs::write(&path, &bash).unwrap();
    let check = std::process::Command::new("bash").arg("-n").arg(&path).output().expect("bash runs");
    assert!(check.status.success(), "bash -n: {}", stderr(&check));
    // Sourced, the completion function proposes the subcommands for `kwire o<TAB>`.
    let script = format!(
        "source {}; COMP_WORDS=(kwire o); COMP_CWORD=1; _kwire kwire o kwire; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path.display()
    );
    let run = std::process::Command::new("bash").args(["-c", &script]).output().expect("bash runs");
    let proposed = stdout(&run);
    assert!(proposed.lines().any(|l| l == "offsets"), "kwire o<TAB>: {proposed}{}", stderr(&run));
    let _ = std::fs::remove_dir_all(&dir);

    let out = kwire_bare(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("possible values: bash"), "{}", stderr(&out));
}

#[test]
fn the_man_page_documents_every_subcommand_the_options_and_the_exit_codes() {
    let out = kwire_bare(&["man"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = stdout(&out);
    assert!(page.contains(".TH kwire 1"), "a section-1 page");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS"] {
        assert!(page.contains(section), "no {section}");
    }
    for sub in SUBCOMMANDS {
        // roff escapes the hyphens: kwire\-api\-versions(1).
        let entry = format!("kwire\\-{}(1)", sub.replace('-', "\\-"));
        assert!(page.contains(&entry), "no {entry}");
    }
    assert!(page.contains("\\-\\-bootstrap\\-server"));
    assert!(page.contains("Exit codes"));
    for code in 0..=6 {
        assert!(page.contains(&format!("\n  {code} ")), "exit code {code} missing");
    }

    // --out-dir: one page per subcommand, with its own options.
    let dir = std::env::temp_dir().join(unique("kwire-man"));
    let out = kwire_bare(&["man", "--out-dir", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let offsets = std::fs::read_to_string(dir.join("kwire-offsets.1")).expect("kwire-offsets.1 written");
    assert!(offsets.contains("\\-\\-isolation") && offsets.contains("read_committed"), "{offsets}");
    for page in ["kwire.1", "kwire-decode.1", "kwire-group-describe.1", "kwire-topic-create.1"] {
        assert!(dir.join(page).is_file(), "{page} not written");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn help_lists_every_exit_code_as_the_book_does() {
    let readme = std::fs::read_to_string(support::repo_root().join("docs/src/exit-codes.md")).unwrap();
    let table: Vec<(String, String)> = readme
        .split("# Exit codes")
        .nth(1)
        .expect("docs/src/exit-codes.md has an Exit codes heading")
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            match cells[..] {
                ["", code, meaning, ""] if code.parse::<u8>().is_ok() => {
                    Some((code.to_owned(), meaning.to_owned()))
                }
                _ => None,
            }
        })
        .collect();
    assert_eq!(table.len(), 12, "codes 0-11 in docs/src/exit-codes.md");
    let out = kwire_bare(&["--help"]);
    assert!(out.status.success());
    // --help wraps long meanings and drops the Markdown backticks: compare word for word.
    let help = stdout(&out);
    let words = |s: &str| s.replace('`', "").split_whitespace().collect::<Vec<_>>().join(" ");
    let help_words = words(help.split("Exit codes").nth(1).expect("--help lists the exit codes"));
    for (code, meaning) in &table {
        assert!(
            help_words.contains(&format!("{code} {}", words(meaning))),
            "exit {code} ({meaning}) in --help:\n{help}"
        );
    }
}

#[test]
fn offsets_reports_kafkas_isolation_spelling_whichever_was_typed() {
    let Some(cluster) = support::cluster() else { return };
    let topic = unique("isolation");
    let created =
        kwire(&cluster, &["topic", "create", &topic, "--partitions", "1", "--replication-factor", "1"]);
    assert!(created.status.success(), "{}", stderr(&created));
    for (typed, reported) in [
        ("read_committed", "read_committed"),
        ("read-committed", "read_committed"),
        ("read_uncommitted", "read_uncommitted"),
        ("read-uncommitted", "read_uncommitted"),
    ] {
        let out = kwire(&cluster, &["offsets", &topic, "--isolation", typed, "--format", "json"]);
        assert!(out.status.success(), "--isolation {typed}: {}", stderr(&out));
        assert_eq!(json(&out)["isolation"], reported, "--isolation {typed}");
    }
}
