"""kwire.decode on a real request: a Metadata frame the client sent to the cluster, captured with
`kwire --trace`, decodes to the document `kwire decode --frame` prints."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import kwire
from conftest import cli


def captured_metadata_request(kwire_bin: Path, bootstrap: str, topic: str) -> tuple[int, bytes]:
    """The version and bytes of the first Metadata request frame `kwire --trace metadata` sent."""
    done = cli(kwire_bin, bootstrap, "--trace", "metadata", topic)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"-> \S+ Metadata v(\d+) request ", line)
        if m:
            hex_line = next(l for l in lines[i + 1:] if l.startswith("hex: "))
            return int(m.group(1)), bytes.fromhex(hex_line[len("hex: "):])
    raise AssertionError(f"no Metadata request in the trace:\n{done.stderr}")


def test_a_captured_metadata_request_decodes_as_the_cli_decodes_it(
    kwire_bin: Path, bootstrap: str, topic: str
) -> None:
    version, frame = captured_metadata_request(kwire_bin, bootstrap, topic)
    doc = kwire.decode("Metadata", version, frame, frame=True)
    done = cli(kwire_bin, bootstrap, "decode", "--request", "--api", "Metadata", "--version", str(version), "--frame", frame.hex())
    assert done.returncode == 0, done.stderr
    assert doc == json.loads(done.stdout)
    assert doc["api"] == "Metadata" and doc["version"] == version
    assert [t["name"] for t in doc["body"]["topics"]] == [topic]


def test_a_request_body_without_its_header_decodes_too(kwire_bin: Path, bootstrap: str, topic: str) -> None:
    version, frame = captured_metadata_request(kwire_bin, bootstrap, topic)
    whole = kwire.decode("Metadata", version, frame, frame=True)
    # The body follows the 4-byte size and the header: decode the frame's tail at each offset
    # until the body the frame decoding found comes out.
    bodies = []
    for start in range(8, len(frame)):
        try:
            bodies.append(kwire.decode("Metadata", version, frame[start:]))
        except kwire.KwireError:
            continue
    assert whole["body"] in bodies


def test_truncated_bytes_raise_cluster_error_and_an_unknown_api_usage_error(
    kwire_bin: Path, bootstrap: str, topic: str
) -> None:
    version, frame = captured_metadata_request(kwire_bin, bootstrap, topic)
    with pytest.raises(kwire.ClusterError) as raised:
        kwire.decode("Metadata", version, frame[:-3], frame=True)
    assert "malformed" in str(raised.value)
    with pytest.raises(kwire.UsageError):
        kwire.decode("NoSuchApi", 0, b"")
