"""schemathesis against a live service's own OpenAPI document, with a valid key: no server errors and no response
that breaks the document (statuses, content types, bodies). Each operation on its own with a bounded number of
examples, then whole workflows chained by the document's links (service/openapi.py LINKS), a bounded number of
scenarios."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fake_dns import FakeDns
from tests.fake_searxng import FakeSearxng
from tests.live import KEY, LiveService, free_port

ST = str(Path(sys.executable).parent / "st")
CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"
GATEWAYS = r"^/api/(fetch|search)$"  # their 502/503/504 are documented upstream failures, not server errors

# The stateful phase takes its per-operation check sets from a config file (the CLI's --checks would apply to all).
STATEFUL_CONFIG = f"""
[checks]
enabled = false
not_a_server_error.enabled = true
status_code_conformance.enabled = true
content_type_conformance.enabled = true
response_schema_conformance.enabled = true

[[operations]]
include-path-regex = "{GATEWAYS}"
checks.not_a_server_error.enabled = false

# Only the links the document declares: schemathesis's guessed ones copy unrelated fields into each other.
[phases.stateful.inference]
algorithms = []

# Error feedback learns from our 400s and then adds their "error" member to request bodies, which every body refuses.
[phases.fuzzing.error-feedback]
enabled = false
"""
# Scenarios of the stateful phase: a number, not a time budget, so a slower machine runs the same workflows.
STATEFUL_EXAMPLES = 100


def schemathesis(service: LiveService, *args: str, config: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            ST, *(["--config-file", str(config)] if config else []),
            "run", f"{service.base_url}/api/schema",
            "--header", f"Authorization: Bearer {KEY}",
            "--suppress-health-check", "all",
            "--seed", "1",
            "--workers", "1",  # hypothesis describes strategies with ast.parse, which is not thread-safe on 3.11
            # Correctness, not speed (benchmarks measure that): a batch of BATCH_MAX_RUNS (5,000) specs, which the
            # coverage phase sends, took past schemathesis's 10 s default on a loaded machine ("Network Error").
            "--request-timeout", "120",
            "--no-color",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip


@contextlib.contextmanager
def fuzz_service(data_dir: Path):
    # Generated URLs name hosts like eo4.example: the guard asks a DNS server on loopback, which answers NXDOMAIN
    # at once, and never the machine's.
    dns = FakeDns()
    with FakeSearxng() as searxng:
        live = LiveService(
            data_dir,
            API_RATE_LIMIT="0",
            WORKERS="1",
            SEARXNG_URL=searxng.base_url,
            NETWORK_DNS_SERVERS=dns.nameserver,
            ALLOW_PRIVATE_NETWORKS="false",  # generated URLs must not reach this machine's services
            # A model is configured, so agent and extract specs get past validation and into workflows; nothing
            # listens there, so their runs fail fast in the worker.
            MODEL_PROVIDER="openai",
            OPENAI_API_KEY="fuzz",
            OPENAI_BASE_URL=f"http://127.0.0.1:{free_port()}/v1",
        ).start()
        try:
            yield live
        finally:
            live.stop()
            dns.close()


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    with fuzz_service(tmp_path_factory.mktemp("fuzz")) as live:
        yield live


def test_schema_is_valid_openapi_and_its_links_name_real_operations():
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.validation import validate_schema

    schema = SchemaGenerator().get_schema(request=None, public=True)
    validate_schema(schema)
    operations = {
        operation["operationId"]: operation for item in schema["paths"].values() for operation in item.values()
    }
    links = [
        link
        for item in schema["paths"].values()
        for operation in item.values()
        for response in operation["responses"].values()
        for link in response.get("links", {}).values()
    ]
    assert len(links) >= 20
    for link in links:
        target = operations[link["operationId"]]
        assert set(link["parameters"]) <= {parameter["name"] for parameter in target.get("parameters", [])}, link


@pytest.mark.live
def test_no_operation_errors_or_breaks_its_schema(service):
    done = schemathesis(
        service,
        "--phases", "examples,coverage,fuzzing",
        "--max-examples", "8",
        "--checks", CHECKS,
        "--exclude-path-regex", GATEWAYS,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-6000:]


@pytest.mark.live
def test_gateway_operations_answer_only_documented_statuses_and_shapes(service):
    done = schemathesis(
        service,
        "--phases", "examples,coverage,fuzzing",
        "--max-examples", "8",
        "--checks", "status_code_conformance,content_type_conformance,response_schema_conformance",
        "--include-path-regex", GATEWAYS,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-6000:]


@pytest.fixture
def unloaded_service(tmp_path):
    """A service of its own: the operation fuzzing leaves thousands of runs queued on the shared one, and a workflow
    that fetches with persist: true waits for its run behind all of them (longer than the client's 10 s)."""
    (tmp_path / "data").mkdir()
    with fuzz_service(tmp_path / "data") as live:
        yield live


@pytest.mark.live
def test_workflows_along_the_links_neither_error_nor_break_the_schema(unloaded_service, tmp_path):
    config = tmp_path / "schemathesis.toml"
    config.write_text(STATEFUL_CONFIG)
    done = schemathesis(
        unloaded_service,
        "--phases", "stateful",
        # Scenarios start from valid requests (invalid ones are the other tests' business); a scenario is at most
        # six calls.
        "--mode", "positive",
        "--max-examples", str(STATEFUL_EXAMPLES),
        config=config,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-6000:]
    covered = re.search(r"API Links:\s+(\d+) covered", done.stdout)
    assert covered and int(covered[1]) >= 3, done.stdout[-3000:]  # the chains did get past their first call
