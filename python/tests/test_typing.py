"""The stubs make a typed user script check clean under `mypy --strict`, and catch a wrong call;
the script itself runs against the cluster."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import REPO

TYPED_USER = REPO / "python" / "examples" / "typed_user.py"


def mypy(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", *map(str, paths)],
                          capture_output=True, text=True, check=False, timeout=300)


def test_the_typed_user_script_is_clean_under_mypy_strict() -> None:
    done = mypy(TYPED_USER)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict_catches_a_wrong_call_through_the_stubs(tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.py"
    wrong.write_text(
        "import kwire\n"
        "client = kwire.Client('127.0.0.1:9092')\n"
        "client.offsets('events', at=3)\n"
        "count: str = client.plan('g', ['events']).records\n"
    )
    done = mypy(wrong)
    assert done.returncode == 1, done.stdout
    assert 'Argument "at" to "offsets" of "Client" has incompatible type "int"' in done.stdout, done.stdout
    assert 'Incompatible types in assignment (expression has type "int", variable has type "str")' in done.stdout


def test_the_typed_user_script_runs_a_batch(bootstrap: str, topic: str, group: str) -> None:
    done = subprocess.run([sys.executable, str(TYPED_USER), bootstrap, group, topic, "--commit"],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "lag: None" in done.stdout  # the group did not exist yet
    assert f'endingOffsets: {{"{topic}": {{"0": 10, "1": 10, "2": 10}}}}' in done.stdout
    assert "committed: [(0, 10), (1, 10), (2, 10)]" in done.stdout


def test_the_stubs_match_the_extension_module() -> None:
    """mypy's stubtest imports kwire._kwire and compares every class, method, parameter and
    default with kwire/_kwire.pyi: the stubs cannot drift from the Rust signatures."""
    done = subprocess.run([sys.executable, "-m", "mypy.stubtest", "kwire._kwire"],
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
