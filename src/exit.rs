//! Exit codes: documented constants, the same for every command (see README, "Exit codes").

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit(u8);

impl Exit {
    /// Success.
    pub const OK: Exit = Exit(0);
    /// A wrong flag, a malformed value, or a missing argument.
    pub const USAGE: Exit = Exit(1);
    /// The cluster could not be reached, or answered with an error or malformed bytes.
    pub const CLUSTER: Exit = Exit(2);
    /// An offset anomaly met a `fail` policy.
    pub const ANOMALY: Exit = Exit(3);
    /// A named topic, partition or group does not exist.
    pub const NOT_FOUND: Exit = Exit(4);
    /// A write was refused: the group has active members (pass `--force`), or a value was
    /// outside what the log allows.
    pub const REFUSED: Exit = Exit(5);
    /// The offset store is unreadable, corrupt, or did not read back what was written.
    pub const STORE: Exit = Exit(6);
    /// Partly written: the store took some partitions of the batch and refused others. What
    /// was written stays written; the output lists each partition as written or refused.
    pub const PARTIAL: Exit = Exit(7);
    /// The broker is too old for what was asked (an API or API version it lacks); the message
    /// names the Kafka release that has it: "not supported by this broker (needs Kafka X.Y)".
    pub const UNSUPPORTED: Exit = Exit(8);

    pub fn value(self) -> u8 {
        self.0
    }
}

/// A command's failure: the one line printed to stderr and the exit code.
#[derive(Debug)]
pub struct Failure {
    pub exit: Exit,
    pub message: String,
}

impl Failure {
    pub fn new(exit: Exit, message: impl Into<String>) -> Self {
        Self { exit, message: message.into() }
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
    pub fn client(context: impl fmt::Display, e: &kafka_wire::client::ClientError) -> Self {
        let exit = if e.is_unsupported() { Exit::UNSUPPORTED } else { Exit::CLUSTER };
        Self::new(exit, format!("{context}: {e}"))
    }
}

impl From<kafka_wire::client::ClientError> for Failure {
    fn from(e: kafka_wire::client::ClientError) -> Self {
        use kafka_wire::client::ClientError;
        let exit = match &e {
            ClientError::UnknownTopic { .. } => Exit::NOT_FOUND,
            ClientError::InvalidAddress { .. } | ClientError::InvalidName(_) => Exit::USAGE,
            e if e.is_unsupported() => Exit::UNSUPPORTED,
            _ => Exit::CLUSTER,
        };
        Self::new(exit, e.to_string())
    }
}
