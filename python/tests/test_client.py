"""kwire.Client against the real cluster: every method returns the document the CLI prints with
`--format json`, and every failure raises the exception of the CLI's exit code."""

from __future__ import annotations

import json
import socket
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import kwire
from conftest import cli

# describe fields that move with the clock between two calls; everything else must be equal.
CLOCK_FIELDS = {"commit_age_ms", "time_lag_ms", "time_lag_unknown", "catch_up_ms", "catch_up"}


def without_clock(describe: dict[str, Any]) -> dict[str, Any]:
    out = dict(describe)
    out["partitions"] = [{k: v for k, v in p.items() if k not in CLOCK_FIELDS} for p in describe["partitions"]]
    out["topics"] = [{k: v for k, v in t.items() if k != "time_lag_ms"} for t in describe["topics"]]
    return out


def test_metadata_of_a_topic_is_the_cli_document(client: kwire.Client, topic: str, run_cli: Callable[..., Any]) -> None:
    doc = client.metadata([topic])
    expected = run_cli("metadata", topic)
    # KRaft brokers name a random broker as the controller in each answer.
    node_ids = {b["node_id"] for b in expected["brokers"]}
    assert doc.pop("controller_id") in node_ids and expected.pop("controller_id") in node_ids
    assert doc == expected
    assert [t["name"] for t in doc["topics"]] == [topic]
    assert [p["partition"] for p in doc["topics"][0]["partitions"]] == [0, 1, 2]


def test_metadata_of_the_whole_cluster_names_every_broker(client: kwire.Client, run_cli: Callable[..., Any]) -> None:
    doc = client.metadata()
    assert doc["brokers"] == run_cli("metadata")["brokers"]
    assert len(doc["brokers"]) >= 1


@pytest.mark.parametrize("at", ["earliest", "latest"])
def test_offsets_at_a_point_are_the_cli_document(
    client: kwire.Client, topic: str, run_cli: Callable[..., Any], at: str
) -> None:
    doc = client.offsets([topic], at=at)
    assert doc == run_cli("offsets", topic, "--at", at)
    assert [p["offset"] for p in doc["partitions"]] == ([0, 0, 0] if at == "earliest" else [10, 10, 10])


def test_offsets_of_an_unknown_topic_raise_not_found(client: kwire.Client) -> None:
    with pytest.raises(kwire.NotFound) as raised:
        client.offsets(["kwire-py-no-such-topic-7f3a"])
    assert raised.value.kind == "not_found" and raised.value.exit_code == 4
    assert "kwire-py-no-such-topic-7f3a" in str(raised.value)


def test_offsets_at_a_malformed_time_raise_usage_error(client: kwire.Client, topic: str) -> None:
    with pytest.raises(kwire.UsageError) as raised:
        client.offsets([topic], at="yesterday-ish")
    assert raised.value.kind == "usage" and raised.value.exit_code == 1
    assert "yesterday-ish" in str(raised.value)


def test_a_topic_name_kafka_refuses_raises_usage_error_before_connecting(client: kwire.Client) -> None:
    with pytest.raises(kwire.UsageError):
        client.metadata(["no spaces allowed"])


def test_describe_of_an_unknown_group_raises_not_found(client: kwire.Client, group: str) -> None:
    with pytest.raises(kwire.NotFound) as raised:
        client.describe_group(group)
    assert isinstance(raised.value, kwire.KwireError)
    assert raised.value.kind == "not_found" and raised.value.exit_code == 4
    assert f"unknown group `{group}`" in str(raised.value)


def test_describe_with_a_malformed_store_spec_raises_usage_error(client: kwire.Client, group: str) -> None:
    with pytest.raises(kwire.UsageError) as raised:
        client.describe_group(group, store="postgres:somewhere")
    assert "postgres:somewhere" in str(raised.value) or "store" in str(raised.value)


def test_a_corrupt_file_store_raises_store_error(client: kwire.Client, group: str, topic: str, tmp_path: Path) -> None:
    store = tmp_path / "offsets.json"
    store.write_text("{ this is not json")
    with pytest.raises(kwire.StoreError) as raised:
        client.describe_group(group, store=f"file:{store}")
    assert raised.value.kind == "store" and raised.value.exit_code == 6
    assert str(store) in str(raised.value)


def test_a_config_value_kafka_refuses_raises_usage_error(bootstrap: str) -> None:
    with pytest.raises(kwire.UsageError) as raised:
        kwire.Client(bootstrap, {"security.protocol": "CARRIER_PIGEON"})
    assert "security.protocol" in str(raised.value)


def test_an_unknown_config_key_is_a_warning_as_in_the_cli(bootstrap: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kwire.Client(bootstrap, {"no.such.property": "1", "request.timeout.ms": 5000, "enable.auto.commit": False})
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert any("no.such.property" in m for m in messages), messages


def test_a_malformed_bootstrap_raises_usage_error() -> None:
    with pytest.raises(kwire.UsageError):
        kwire.Client("not a host and port")


@pytest.fixture
def silent_broker() -> Iterator[int]:
    """A port that accepts connections and never answers: each request runs into the timeout."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    yield server.getsockname()[1]
    server.close()


def test_an_unreachable_broker_raises_cluster_error_within_the_timeout(silent_broker: int) -> None:
    client = kwire.Client(f"127.0.0.1:{silent_broker}", timeout=1.5)
    started = time.monotonic()
    with pytest.raises(kwire.ClusterError) as raised:
        client.metadata()
    assert raised.value.kind == "cluster" and raised.value.exit_code == 2
    assert time.monotonic() - started < 15


def test_a_refused_connection_raises_cluster_error() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(kwire.ClusterError):
        kwire.Client(f"127.0.0.1:{port}", timeout=2).offsets(["any-topic"])


def test_a_network_call_releases_the_gil(silent_broker: int) -> None:
    """While one thread waits on a broker that never answers, Python code runs in another."""
    client = kwire.Client(f"127.0.0.1:{silent_broker}", timeout=1.5)
    errors: list[BaseException] = []

    def waiting() -> None:
        try:
            client.metadata()
        except kwire.ClusterError as e:
            errors.append(e)

    thread = threading.Thread(target=waiting)
    thread.start()
    time.sleep(0.2)
    ticks = 0
    while thread.is_alive():
        ticks += 1
    thread.join()
    assert len(errors) == 1
    # With the GIL held for the whole call, the loop above could not run until it returned.
    assert ticks > 10_000, ticks


def test_plan_and_commit_round_trip_matches_the_cli(
    client: kwire.Client, topic: str, group: str, run_cli: Callable[..., Any]
) -> None:
    plan = client.plan(group, [topic], max_per_partition=4)
    cli_plan = run_cli("plan", "--group", group, "--topic", topic, "--max-per-partition", "4")
    assert plan.document == cli_plan
    assert plan.records == 12 and not plan.failed
    assert [(r["partition"], r["from"], r["until"]) for r in plan.ranges] == [(0, 0, 4), (1, 0, 4), (2, 0, 4)]
    # Nothing stored yet: each partition says so (new_partition), and the start policy read it.
    assert {a["anomaly"]["kind"] for a in plan.anomalies} == {"new_partition"}
    spark = run_cli("plan", "--group", group, "--topic", topic, "--max-per-partition", "4", "--format", "spark")
    assert plan.spark_assign() == spark["assign"]
    assert plan.spark_starting_offsets() == spark["startingOffsets"] == {topic: {"0": 0, "1": 0, "2": 0}}
    assert plan.spark_ending_offsets() == spark["endingOffsets"] == {topic: {"0": 4, "1": 4, "2": 4}}

    committed = plan.commit()
    assert committed["group"] == group and committed["store"] == "kafka"
    assert [(c["partition"], c["committed"], c["status"]) for c in committed["committed"]] == [
        (0, 4, "written"), (1, 4, "written"), (2, 4, "written"),
    ]
    described = client.describe_group(group)
    cli_described = run_cli("group", "describe", group)
    assert described.keys() == cli_described.keys()
    assert [p.keys() for p in described["partitions"]] == [p.keys() for p in cli_described["partitions"]]
    assert without_clock(described) == without_clock(cli_described)
    assert [(p["partition"], p["committed"], p["lag"]) for p in cli_described["partitions"]] == [
        (0, 4, 6), (1, 4, 6), (2, 4, 6),
    ]
    # The next plan starts where the commit left off.
    after = client.plan(group, [topic])
    assert [(r["from"], r["until"]) for r in after.ranges] == [(4, 10)] * 3


def test_plan_and_commit_in_a_file_store(client: kwire.Client, topic: str, group: str, tmp_path: Path,
                                         run_cli: Callable[..., Any]) -> None:
    store = f"file:{tmp_path / 'offsets.json'}"
    plan = client.plan(group, [topic], store=store, max_total=15)
    assert plan.store == store and plan.records == 15
    plan.commit()
    described = run_cli("group", "describe", group, "--store", store)
    assert sum(p["committed"] for p in described["partitions"]) == 15


def test_commit_of_explicit_offsets_and_one_outside_the_log_is_refused(
    client: kwire.Client, topic: str, group: str, run_cli: Callable[..., Any]
) -> None:
    doc = client.commit(group, {(topic, 0): 3, (topic, 2): 7})
    assert [(c["partition"], c["committed"]) for c in doc["committed"]] == [(0, 3), (2, 7)]
    with pytest.raises(kwire.Refused) as raised:
        client.commit(group, {(topic, 1): 999})
    assert raised.value.kind == "refused" and "999" in str(raised.value)
    stored = {p["partition"]: p["committed"] for p in run_cli("group", "describe", group)["partitions"]}
    assert stored == {0: 3, 1: None, 2: 7}


def test_plan_of_offsets_ahead_of_the_log_raises_anomaly_error_with_the_plan(
    client: kwire.Client, topic: str, group: str, kwire_bin: Path, bootstrap: str
) -> None:
    client.commit(group, {(topic, 0): 500, (topic, 1): 5, (topic, 2): 5}, force=True)
    with pytest.raises(kwire.AnomalyError) as raised:
        client.plan(group, [topic])
    assert raised.value.kind == "anomaly" and raised.value.exit_code == 3
    plan = raised.value.plan
    assert plan.failed
    [anomaly] = plan.anomalies
    assert anomaly["partition"] == 0 and anomaly["anomaly"]["kind"] == "offset_ahead_of_log"
    # The same document the CLI prints before it exits 3.
    done = cli(kwire_bin, bootstrap, "--format", "json", "plan", "--group", group, "--topic", topic)
    assert done.returncode == 3
    assert plan.document == json.loads(done.stdout)
    # Nothing of a failed plan can be read or committed.
    with pytest.raises(kwire.AnomalyError):
        plan.spark_starting_offsets()
    with pytest.raises(kwire.AnomalyError):
        plan.commit()
    # With a policy for it, the plan goes on from the log's start.
    clamped = client.plan(group, [topic], on_out_of_range="earliest")
    assert [(r["partition"], r["from"]) for r in clamped.ranges] == [(0, 0), (1, 5), (2, 5)]


def test_plan_with_an_unknown_policy_raises_usage_error(client: kwire.Client, topic: str, group: str) -> None:
    with pytest.raises(kwire.UsageError) as raised:
        client.plan(group, [topic], on_out_of_range="shrug")
    assert "shrug" in str(raised.value)


def test_threads_sharing_one_client_each_get_their_own_document(client: kwire.Client, topic: str) -> None:
    """Calls from several threads on one Client run one at a time: no thread gets the document
    of another thread's command."""
    results: dict[str, list[Any]] = {"metadata": [], "offsets": []}

    def metadata() -> None:
        for _ in range(100):
            results["metadata"].append(client.metadata([topic]))

    def offsets() -> None:
        for _ in range(100):
            results["offsets"].append(client.offsets([topic], at="latest"))

    threads = [threading.Thread(target=f) for f in (metadata, offsets) * 3]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results["metadata"]) == 300 and len(results["offsets"]) == 300
    assert all("brokers" in d and "at" not in d for d in results["metadata"])
    assert all(d["at"] == "latest" and [p["offset"] for p in d["partitions"]] == [10, 10, 10]
               for d in results["offsets"])


def test_a_plan_without_topics_raises_usage_error_naming_the_missing_argument(
    client: kwire.Client, group: str
) -> None:
    with pytest.raises(kwire.UsageError) as raised:
        client.plan(group, [])
    assert "--topic" in str(raised.value), str(raised.value)
    with pytest.raises(kwire.UsageError) as raised:
        client.offsets([])
    assert "TOPICS" in str(raised.value), str(raised.value)


def spark_checkpoint(tmp_path: Path, topic: str, sink_batch_0: str = "v1") -> tuple[Path, Path]:
    """A checkpoint with batch 0 committed, and its file sink's log holding `sink_batch_0`."""
    ckpt, out = tmp_path / "ckpt", tmp_path / "out"
    (ckpt / "offsets").mkdir(parents=True)
    (ckpt / "commits").mkdir()
    (ckpt / "metadata").write_text('{"id":"5b1a3c4e-0000-4000-8000-000000000002"}')
    (ckpt / "offsets" / "0").write_text(f'v1\n{{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{{}}}}\n{{"{topic}":{{"0":0,"1":0,"2":0}}}}')
    (ckpt / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}')
    (out / "_spark_metadata").mkdir(parents=True)
    (out / "_spark_metadata" / "0").write_text(sink_batch_0)
    return ckpt, out


def test_a_commit_into_a_spark_checkpoint_with_spark_sink_writes_the_file_sinks_entry(
    bootstrap: str, topic: str, group: str, tmp_path: Path
) -> None:
    ckpt, out = spark_checkpoint(tmp_path, topic)
    store = f"spark:{ckpt}"
    # The sink folder has no log: refused, naming it, and nothing written.
    elsewhere = kwire.Client(bootstrap, spark_sink=str(tmp_path / "nowhere"))
    with pytest.raises(kwire.StoreError) as raised:
        elsewhere.commit(group, {(topic, 0): 3}, store=store, force=True)
    assert "nowhere/_spark_metadata" in str(raised.value)
    assert not (ckpt / "offsets" / "1").exists()
    client = kwire.Client(bootstrap, spark_sink=str(out), spark_sink_compact_interval=2)
    client.commit(group, {(topic, 0): 3}, store=store, force=True)
    assert (ckpt / "commits" / "1").exists()
    # Batch 1 is a compaction batch at interval 2: `1.compact`, holding batch 0's (no) entries.
    assert (out / "_spark_metadata" / "1.compact").read_text() == "v1"


def test_spark_sink_retention_drops_expired_entries_at_a_compaction_and_a_bad_one_is_a_usage_error(
    bootstrap: str, topic: str, group: str, tmp_path: Path
) -> None:
    with pytest.raises(kwire.UsageError) as raised:
        kwire.Client(bootstrap, spark_sink=str(tmp_path), spark_sink_retention="7 days")
    assert "spark_sink_retention" in str(raised.value) and "`7 days`" in str(raised.value)
    entry = '{{"path":"file:///o/{0}.json","size":1,"isDir":false,"modificationTime":{1},"blockReplication":1,"blockSize":1,"action":"add"}}'
    old, recent = entry.format("old", 1), entry.format("recent", int(time.time() * 1000))
    ckpt, out = spark_checkpoint(tmp_path, topic, f"v1\n{old}\n{recent}")
    client = kwire.Client(bootstrap, spark_sink=str(out), spark_sink_compact_interval=2, spark_sink_retention="1d")
    client.commit(group, {(topic, 0): 3}, store=f"spark:{ckpt}", force=True)
    # Batch 1 is a compaction batch at interval 2: the entry older than a day is left out.
    assert (out / "_spark_metadata" / "1.compact").read_text() == f"v1\n{recent}"
