"""The config dict is the Kafka client properties the CLI's --command-config takes: the secured
listeners of the local cluster (scripts/cluster env) answer with the right ones, and each
security failure raises SecurityError (exit 9) or NotAuthorized (exit 10)."""

from __future__ import annotations

import os
import re

import pytest

import kwire


def listener(name: str, listener: str | None = None) -> tuple[str, dict[str, str]]:
    """The bootstrap (of `listener`, default `name`) and the properties file's pairs of one
    secured set-up (scripts/cluster env)."""
    bootstrap = os.environ.get(f"KWIRE_BOOTSTRAP_{listener or name}")
    config = os.environ.get(f"KWIRE_CONFIG_{name}")
    assert bootstrap and config, f"KWIRE_BOOTSTRAP_{listener or name} / KWIRE_CONFIG_{name} unset: eval \"$(scripts/cluster env --export)\""
    pairs = {}
    with open(config) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                key, value = line.split("=", 1)
                pairs[key.strip()] = value.strip()
    return bootstrap, pairs


def test_sasl_ssl_with_the_properties_file_pairs_answers_as_plaintext_does(client: kwire.Client) -> None:
    bootstrap, config = listener("SASL_SSL")
    secured = kwire.Client(bootstrap, config, timeout=20)
    assert secured.metadata()["cluster_id"] == client.metadata()["cluster_id"]


def test_a_wrong_scram_password_raises_security_error() -> None:
    bootstrap, config = listener("SASL_SSL")
    config["sasl.jaas.config"] = re.sub(r'password="[^"]*"', 'password="not-the-password"', config["sasl.jaas.config"])
    with pytest.raises(kwire.SecurityError) as raised:
        kwire.Client(bootstrap, config, timeout=20).metadata()
    assert raised.value.kind == "security" and raised.value.exit_code == 9
    assert "not-the-password" not in str(raised.value)


def test_tls_without_the_test_ca_raises_security_error() -> None:
    bootstrap, config = listener("SSL")
    for key in [k for k in config if k.startswith("ssl.truststore") or k.startswith("ssl.ca")]:
        del config[key]
    with pytest.raises(kwire.SecurityError) as raised:
        kwire.Client(bootstrap, config, timeout=20).metadata()
    assert "certificate" in str(raised.value).lower()


def test_a_restricted_user_refused_by_an_acl_raises_not_authorized(topic: str) -> None:
    bootstrap, config = listener("RESTRICTED", "SASL_PLAINTEXT")
    with pytest.raises(kwire.NotAuthorized) as raised:
        kwire.Client(bootstrap, config, timeout=20).offsets([topic])
    assert raised.value.kind == "not_authorized" and raised.value.exit_code == 10
    assert "restricted" in str(raised.value)


def test_a_partial_answer_raises_not_authorized_with_every_authorized_row_in_its_document(topic: str) -> None:
    bootstrap, config = listener("RESTRICTED", "SASL_PLAINTEXT")
    restricted = kwire.Client(bootstrap, config, timeout=20)
    with pytest.raises(kwire.NotAuthorized) as raised:
        restricted.offsets(["kwire-restricted-topic", topic])
    assert raised.value.plan is None
    document = raised.value.document
    assert document is not None
    rows = document["partitions"]
    refused = [p for p in rows if p["error"] is not None]
    assert [(p["topic"], p["partition"], p["error"]) for p in refused] == [(topic, None, "TOPIC_AUTHORIZATION_FAILED")]
    authorized = sorted(p["partition"] for p in rows if p["topic"] == "kwire-restricted-topic")
    assert authorized == [0, 1, 2]
    assert all(p["error"] is None and isinstance(p["high_watermark"], int) for p in rows if p["topic"] != topic)
