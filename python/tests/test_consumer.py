"""kwire.Consumer against the real cluster: a consumer-group member with confluent-kafka's
names, on both group protocols. Commits are of what poll returned, never of what is still
buffered; a second member goes on from them; a start the log cannot honour is refused with the
anomaly's numbers or clamped with a warning, never silently reset."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Callable, List

import pytest

import kwire
from conftest import cli


def member(bootstrap: str, group: str, protocol: str, **extra: Any) -> kwire.Consumer:
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": protocol,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    config.update(extra)
    return kwire.Consumer(config, timeout=20)


def read(consumer: kwire.Consumer, count: int) -> List[kwire.Message]:
    got: List[kwire.Message] = []
    for _ in range(200):
        got.extend(consumer.consume(num_messages=count - len(got), timeout=0.5))
        if len(got) >= count:
            return got
    raise AssertionError(f"read {len(got)} of {count} messages")


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_member_commits_what_poll_returned_and_the_next_member_goes_on_from_there(
    bootstrap: str, topic: str, group: str, run_cli: Callable[..., Any], protocol: str
) -> None:
    first = member(bootstrap, group, protocol)
    first.subscribe([topic])
    messages = read(first, 12)
    assert len(messages) == 12
    assert all(m.error() is None and m.topic() == topic for m in messages)
    value = messages[0].value()
    assert value is not None and value.decode().startswith(f"p{messages[0].partition()}-")
    assert messages[0].timestamp()[0] == 1  # create time, as kwire produce writes it
    assert sorted(first.assignment()) == [(topic, 0), (topic, 1), (topic, 2)]
    first.commit()
    first.close()
    first.close()  # closing again does nothing
    with pytest.raises(kwire.UsageError):
        first.poll(0)

    committed = {
        p["partition"]: p["committed"] for p in run_cli("group", "describe", group)["partitions"] if p["topic"] == topic
    }
    returned = {}
    for m in messages:
        returned[m.partition()] = max(returned.get(m.partition(), 0), m.offset() + 1)
    assert {p: c for p, c in committed.items() if c is not None} == returned, "commits are what poll returned"

    second = member(bootstrap, group, protocol)
    second.subscribe([topic])
    rest = read(second, 18)
    second.close()
    seen = sorted((m.partition(), m.offset()) for m in messages + rest)
    assert seen == [(p, o) for p in range(3) for o in range(10)], "every record once over the two members"


def test_a_commit_for_a_partition_not_owned_is_refused_before_anything_is_sent(
    bootstrap: str, topic: str, group: str
) -> None:
    consumer = member(bootstrap, group, "classic")
    consumer.subscribe([topic])
    read(consumer, 1)
    with pytest.raises(kwire.UsageError) as raised:
        consumer.commit([("kwire-py-not-this-one", 0, 1)])
    assert "kwire-py-not-this-one" in str(raised.value)
    consumer.close()


def test_a_start_below_the_log_start_is_refused_with_its_numbers_or_clamped_with_a_warning(
    kwire_bin: Path, bootstrap: str, topic: str, group: str, run_cli: Callable[..., Any]
) -> None:
    run_cli("commit", "--group", group, f"{topic}:0=2", f"{topic}:1=10", f"{topic}:2=10")
    done = cli(kwire_bin, bootstrap, "topic", "delete-records", topic, "0=6")
    assert done.returncode == 0, done.stderr

    refusing = member(bootstrap, group, "consumer")
    refusing.subscribe([topic])
    with pytest.raises(kwire.AnomalyError) as raised:
        for _ in range(60):
            refusing.poll(0.5)
    assert f"{topic}-0 cannot start" in str(raised.value), str(raised.value)
    assert "log start 6 passed stored offset 2: 4 records were never read" in str(raised.value), str(raised.value)
    refusing.close()

    clamped = member(bootstrap, group, "consumer", **{"kwire.offset.out.of.range": "clamp"})
    clamped.subscribe([topic])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = read(clamped, 4)
    clamped.close()
    assert [(m.partition(), m.offset()) for m in first] == [(0, 6), (0, 7), (0, 8), (0, 9)]
    notices = [str(w.message) for w in caught]
    assert any(n.startswith(f"{topic}-0 starts at offset 6: log start 6 passed stored offset 2") for n in notices), notices


def test_a_config_without_bootstrap_or_group_is_a_usage_error(bootstrap: str) -> None:
    with pytest.raises(kwire.UsageError, match="bootstrap.servers"):
        kwire.Consumer({"group.id": "g"})
    with pytest.raises(kwire.UsageError, match="group.id"):
        kwire.Consumer({"bootstrap.servers": bootstrap})
    with pytest.raises(kwire.UsageError, match="group.protocol"):
        kwire.Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "group.protocol": "eager"})
