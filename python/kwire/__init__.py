"""kwire from Python: Kafka offsets, lag, plans and commits.

Every method runs the same operation as the `kwire` command line and returns the document
`kwire ... --format json` prints, as dicts and lists with the same field names. A failure raises
a subclass of `KwireError` whose `.kind` and `.exit_code` are the CLI's exit code.
`Consumer` is a consumer-group member with confluent-kafka's names.
"""

from kwire._kwire import (
    AnomalyError,
    Client,
    ClusterError,
    Consumer,
    KwireError,
    Message,
    NotAuthorized,
    NotFound,
    PartialWrite,
    Plan,
    Refused,
    SecurityError,
    StoreError,
    Unsupported,
    UsageError,
    decode,
)

__all__ = [
    "AnomalyError",
    "Client",
    "ClusterError",
    "Consumer",
    "KwireError",
    "Message",
    "NotAuthorized",
    "NotFound",
    "PartialWrite",
    "Plan",
    "Refused",
    "SecurityError",
    "StoreError",
    "Unsupported",
    "UsageError",
    "decode",
]
