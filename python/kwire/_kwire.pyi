"""Type stubs of kwire's extension module (re-exported by `kwire`)."""

from typing import Any, ClassVar, Dict, List, Mapping, Optional, Sequence, Tuple, Union, final

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

# A JSON document as `json.loads` makes it: the CLI's `--format json` output.
_Json = Dict[str, Any]
_PropertyValue = Union[str, int, float, bool]

class KwireError(Exception):
    """A kwire operation failed; `kind` and `exit_code` are the CLI's exit code."""

    kind: ClassVar[str]
    exit_code: ClassVar[int]

class UsageError(KwireError): ...
class ClusterError(KwireError): ...

class AnomalyError(KwireError):
    """An anomaly met a `fail` policy; `plan` says which partitions."""

    plan: "Plan"

class NotFound(KwireError): ...
class Refused(KwireError): ...
class StoreError(KwireError): ...
class PartialWrite(KwireError): ...
class Unsupported(KwireError): ...
class SecurityError(KwireError): ...
class NotAuthorized(KwireError):
    """An ACL refused some or all of the request. `document` is a partial answer's document
    (offsets, describe_group): every authorized row, and a row whose `error` names the code for
    each refused topic or partition; `None` when nothing was shown. From `Client.plan`, `plan`
    holds the plan of the authorized partitions (its `document` has the refused rows)."""

    document: Optional[_Json]
    plan: "Plan"

@final
class Plan:
    """One plan: `document` is `kwire plan --format json`'s document."""

    @property
    def document(self) -> _Json: ...
    @property
    def group(self) -> str: ...
    @property
    def store(self) -> str: ...
    @property
    def records(self) -> int: ...
    @property
    def ranges(self) -> List[_Json]:
        """The document's partitions with a range: topic, partition, from, until, records, ..."""
    @property
    def anomalies(self) -> List[_Json]:
        """The document's partitions with an anomaly."""
    @property
    def failed(self) -> bool: ...
    def spark_assign(self) -> Dict[str, List[int]]: ...
    def spark_starting_offsets(self) -> Dict[str, Dict[str, int]]: ...
    def spark_ending_offsets(self) -> Dict[str, Dict[str, int]]: ...
    def commit(self, force: bool = False) -> _Json:
        """Stores `until` of every planned partition in one write; `kwire commit`'s document."""

@final
class Client:
    def __new__(
        cls,
        bootstrap: str,
        config: Optional[Mapping[str, _PropertyValue]] = None,
        *,
        timeout: float = 30.0,
        zookeeper: Optional[str] = None,
        spark_sink: Optional[str] = None,
        spark_sink_compact_interval: int = 10,
        spark_sink_retention: Optional[str] = None,
    ) -> "Client": ...
    def metadata(self, topics: Optional[Sequence[str]] = None) -> _Json: ...
    def offsets(self, topics: Sequence[str], at: str = "latest") -> _Json: ...
    def describe_group(
        self, group: str, store: str = "kafka", topics: Optional[Sequence[str]] = None
    ) -> _Json: ...
    def plan(
        self,
        group: str,
        topics: Sequence[str],
        store: str = "kafka",
        start: str = "earliest",
        on_out_of_range: str = "fail",
        max_per_partition: Optional[int] = None,
        max_total: Optional[int] = None,
    ) -> Plan: ...
    def commit(
        self,
        group: str,
        offsets: Mapping[Tuple[str, int], int],
        store: str = "kafka",
        force: bool = False,
    ) -> _Json: ...

def decode(api: str, version: int, data: bytes, request: bool = True, frame: bool = False) -> _Json: ...

@final
class Message:
    """One record a `Consumer` returned (confluent-kafka's `Message` methods)."""

    def topic(self) -> str: ...
    def partition(self) -> int: ...
    def offset(self) -> int: ...
    def key(self) -> Optional[bytes]: ...
    def value(self) -> Optional[bytes]: ...
    def timestamp(self) -> Tuple[int, int]:
        """(type, ms): type 1 create time, 2 log append time, 0 not available."""
    def headers(self) -> Optional[List[Tuple[str, Optional[bytes]]]]: ...
    def error(self) -> None: ...

@final
class Consumer:
    """A consumer-group member (classic or KIP-848 `group.protocol`), with confluent-kafka's
    names. Starts are checked by offset-engine: an anomaly is a `UserWarning` with its numbers,
    and a start the `kwire.offset.out.of.range` policy refuses raises `AnomalyError`. Commits
    are of what was returned, never of what is still buffered."""

    def __new__(cls, config: Mapping[str, _PropertyValue], *, timeout: float = 30.0) -> "Consumer": ...
    def subscribe(self, topics: Sequence[str]) -> None: ...
    def poll(self, timeout: Optional[float] = None) -> Optional[Message]: ...
    def consume(self, num_messages: int = 1, timeout: Optional[float] = None) -> List[Message]: ...
    def commit(self, offsets: Optional[Sequence[Tuple[str, int, int]]] = None) -> None: ...
    def assignment(self) -> List[Tuple[str, int]]: ...
    def close(self) -> None: ...
