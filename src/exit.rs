//! Exit codes: documented constants, the same for every command (see docs/src/exit-codes.md).

use std::fmt::{self, Write as _};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit(u8);

/// Declares each exit code once: its constant, its kind (the name the Python package's
/// exceptions carry as `.kind`), and its line in [`Exit::ALL`], which `--help` prints and the
/// book's table (docs/src/exit-codes.md) must equal (a test compares them).
macro_rules! exit_codes {
    ($($name:ident = $value:literal, $kind:literal, $meaning:literal;)*) => {
        impl Exit {
            $(
                #[doc = $meaning]
                pub const $name: Exit = Exit($value);
            )*

            /// Every exit code with its meaning, in order.
            pub const ALL: &[(Exit, &str)] = &[$((Exit::$name, $meaning)),*];

            /// The code's kind in one word: `usage`, `cluster`, `not_found`, ...
            pub fn kind(self) -> &'static str {
                match self.0 {
                    $($value => $kind,)*
                    _ => "unknown",
                }
            }
        }
    };
}

exit_codes! {
    OK = 0, "ok", "success";
    USAGE = 1, "usage", "usage: a wrong flag, a malformed value (`host:port`, duration, offset, time), a missing argument";
    CLUSTER = 2, "cluster", "the cluster could not be reached, or answered with an error or malformed bytes";
    ANOMALY = 3, "anomaly", "an offset anomaly met a `fail` policy (`kwire plan`)";
    NOT_FOUND = 4, "not_found", "a named topic, partition or group does not exist";
    REFUSED = 5, "refused", "a write was refused: the group has active members or the Spark query looks alive (`--force` overrides), an offset is outside the log, or the group is a share group (KIP-932; `--force` does not override); nothing was written";
    STORE = 6, "store", "the offset store is unreadable or corrupt, did not read back what was written, or (file store) is a link or special file, too large, or locked or too slow to load within `--timeout`";
    PARTIAL = 7, "partial", "partly written: the store took some partitions and refused others (each listed as written or refused; what was written stays written and was read back)";
    UNSUPPORTED = 8, "unsupported", "the broker is too old for what was asked: `... not supported by this broker (needs Kafka X.Y)` names the first release that has it (see \"Kafka versions\")";
    SECURITY = 9, "security", "the connection's security failed: an untrusted, expired or wrong-host certificate, TLS against a plaintext listener or the reverse, a client certificate the listener wants, wrong credentials, a SASL mechanism the broker does not enable (the message lists its mechanisms); nothing was written";
    NOT_AUTHORIZED = 10, "not_authorized", "an ACL refused the request (TOPIC/GROUP/CLUSTER/TRANSACTIONAL_ID_AUTHORIZATION_FAILED): the message names the resource and the principal used; `offsets`, `group describe` and `plan` first print every authorized row and a `not authorized` row for each refused topic or partition, a write writes nothing";
    COMMAND = 11, "command", "`kwire chaos run`: the command run under faults failed, was killed by a signal, or outlived the scenario's `timeout_s` (the report says which)";
}

impl Exit {
    pub fn value(self) -> u8 {
        self.0
    }

    /// The exit-code table as `--help` prints it (and `kwire man`, in its own section): one
    /// code a line, long meanings wrapped under themselves.
    pub fn help_table() -> String {
        const WIDTH: usize = 96;
        let mut out = String::from("Exit codes (the same for every command):");
        for (exit, meaning) in Exit::ALL {
            // "  1 meaning...", continued lines indented under the meaning.
            let _ = write!(out, "\n  {}", exit.0);
            let mut column = 3;
            for word in meaning.replace('`', "").split(' ') {
                if column > 4 && column + 1 + word.len() > WIDTH {
                    out.push_str("\n   ");
                    column = 3;
                }
                let _ = write!(out, " {word}");
                column += 1 + word.len();
            }
        }
        out.push_str(
            "\n  (kwire group check follows the monitoring-plugin convention instead: 0 OK, 1 WARNING,\n   2 CRITICAL, 3 UNKNOWN; see kwire group check --help)",
        );
        out
    }

    /// The exit-code table as docs/src/exit-codes.md writes it (Markdown).
    #[cfg(test)]
    fn markdown_table() -> String {
        let mut out = String::from("| code | meaning |\n|---|---|\n");
        for (exit, meaning) in Exit::ALL {
            let _ = writeln!(out, "| {} | {meaning} |", exit.0);
        }
        out
    }
}

/// The status of `kwire group check`, whose exit code follows the monitoring-plugin convention
/// (Nagios, Icinga, Sensu) and NOT the table above: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CheckStatus {
    Ok,
    Warning,
    Critical,
    Unknown,
}

impl CheckStatus {
    /// The plugin exit code.
    pub fn exit(self) -> Exit {
        Exit(self as u8)
    }

    /// `OK`, `WARNING`, `CRITICAL`, `UNKNOWN`.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Ok => "OK",
            CheckStatus::Warning => "WARNING",
            CheckStatus::Critical => "CRITICAL",
            CheckStatus::Unknown => "UNKNOWN",
        }
    }
}

/// The exit codes of `kwire group check`, for `--help` and the man page.
pub const CHECK_EXIT_HELP: &str =
    "Exit codes of `group check` (the monitoring-plugin convention, not the general table): \
0 OK, 1 WARNING (a partition WARN or REWIND), 2 CRITICAL (a partition STOP, STALL, LOST or ANOMALY, or a \
threshold passed), 3 UNKNOWN (the group could not be checked: the line says why)";

/// A command's failure: the one line printed to stderr and the exit code.
#[derive(Debug)]
pub struct Failure {
    pub exit: Exit,
    pub message: String,
    /// The JSON document the command emitted before it failed, for an embedding
    /// ([`crate::api`]): a partial answer (exit 10) keeps every authorized row. `None` on the
    /// command line, where the document was printed.
    pub document: Option<serde_json::Value>,
}

impl Failure {
    pub fn new(exit: Exit, message: impl Into<String>) -> Self {
        Self { exit, message: message.into(), document: None }
    }

    /// Only an exit code: the command already said everything on stdout (`group check`).
    pub fn exit_only(exit: Exit) -> Self {
        Self { exit, message: String::new(), document: None }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Failure {
    /// A client error about `context` (a partition, a topic): exit 8 when the broker is too
    /// old for the call, else 2.
    pub fn client(context: impl fmt::Display, e: &kafka_client::ClientError) -> Self {
        Self::new(exit_for(e), format!("{context}: {e}"))
    }
}

impl From<kafka_client::ClientError> for Failure {
    fn from(e: kafka_client::ClientError) -> Self {
        use kafka_client::ClientError;
        let exit = match &e {
            ClientError::UnknownTopic { .. } => Exit::NOT_FOUND,
            ClientError::InvalidAddress { .. } | ClientError::InvalidName(_) => Exit::USAGE,
            e => exit_for(e),
        };
        Self::new(exit, e.to_string())
    }
}

/// A consumer's error: a client error as above, a start the out-of-range policy refused as
/// [`Exit::ANOMALY`], a call the consumer refused (a bad argument, no group, a partition not
/// owned) as [`Exit::USAGE`], anything else from the group as [`Exit::CLUSTER`].
impl From<kafka_client::ConsumerError> for Failure {
    fn from(e: kafka_client::ConsumerError) -> Self {
        use kafka_client::ConsumerError;
        match e {
            ConsumerError::Client(e) => Failure::from(*e),
            e @ ConsumerError::StartRefused { .. } => Failure::new(Exit::ANOMALY, e.to_string()),
            e @ (ConsumerError::InvalidArgument(_)
            | ConsumerError::NoGroup
            | ConsumerError::NotOwned { .. }) => Failure::new(Exit::USAGE, e.to_string()),
            e => Failure::new(Exit::CLUSTER, e.to_string()),
        }
    }
}

/// The exit code of a client error met while talking to the cluster.
pub fn exit_for(e: &kafka_client::ClientError) -> Exit {
    if e.is_unsupported() {
        Exit::UNSUPPORTED
    } else if e.is_security() {
        Exit::SECURITY
    } else if e.is_authorization() {
        Exit::NOT_AUTHORIZED
    } else {
        Exit::CLUSTER
    }
}

#[cfg(test)]
mod tests {
    use super::Exit;

    #[test]
    fn the_book_lists_every_exit_code_as_the_code_defines_it() {
        let readme = include_str!("../docs/src/exit-codes.md");
        let table = Exit::markdown_table();
        assert!(
            readme.contains(&table),
            "docs/src/exit-codes.md's table differs from src/exit.rs; it should read:\n{table}"
        );
    }

    #[test]
    fn help_lists_every_exit_code() {
        let help = Exit::help_table();
        for (exit, _) in Exit::ALL {
            assert!(help.contains(&format!("\n  {} ", exit.value())), "{help}");
        }
        assert!(!help.contains('`'));
    }
}
