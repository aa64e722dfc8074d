"""Fixtures of the package's tests: the cluster of KWIRE_BOOTSTRAP (required: a missing cluster
is a failure, not a skip) and the `kwire` binary the results are compared with (KWIRE_BIN,
default target/debug/kwire of this checkout)."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import kwire

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def bootstrap() -> str:
    value = os.environ.get("KWIRE_BOOTSTRAP")
    assert value, "KWIRE_BOOTSTRAP is not set: these tests need the local cluster (scripts/cluster up)"
    return value


@pytest.fixture(scope="session")
def kwire_bin() -> Path:
    path = Path(os.environ.get("KWIRE_BIN", REPO / "target" / "debug" / "kwire"))
    assert path.is_file(), f"{path} is missing: cargo build first"
    return path


@pytest.fixture(scope="session")
def client(bootstrap: str) -> kwire.Client:
    return kwire.Client(bootstrap, timeout=20)


def cli(kwire_bin: Path, bootstrap: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Runs the CLI against the cluster; the caller checks the exit code."""
    return subprocess.run(
        [str(kwire_bin), "--bootstrap-server", bootstrap, *args],
        input=stdin, capture_output=True, text=True, check=False, timeout=120,
    )


def cli_json(kwire_bin: Path, bootstrap: str, *args: str) -> Any:
    done = cli(kwire_bin, bootstrap, "--format", "json", *args)
    assert done.returncode == 0, f"kwire {' '.join(args)}: exit {done.returncode}: {done.stderr}"
    return json.loads(done.stdout)


@pytest.fixture
def run_cli(kwire_bin: Path, bootstrap: str) -> Callable[..., Any]:
    """`run_cli(args...)`: the CLI's --format json document."""
    return lambda *args: cli_json(kwire_bin, bootstrap, *args)


@pytest.fixture
def topic(kwire_bin: Path, bootstrap: str) -> Iterator[str]:
    """A new 3-partition topic holding 30 records (10 a partition), deleted afterwards."""
    name = f"kwire-py-{uuid.uuid4().hex[:12]}"
    done = cli(kwire_bin, bootstrap, "topic", "create", name, "--partitions", "3")
    assert done.returncode == 0, done.stderr
    for partition in range(3):
        lines = "".join(f"p{partition}-{i}\n" for i in range(10))
        done = cli(kwire_bin, bootstrap, "produce", name, "--partition", str(partition), stdin=lines)
        assert done.returncode == 0, done.stderr
    yield name
    cli(kwire_bin, bootstrap, "topic", "delete", name)


@pytest.fixture
def group() -> str:
    return f"kwire-py-group-{uuid.uuid4().hex[:12]}"
