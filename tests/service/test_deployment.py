"""The container files: what CI can check without a Docker engine (lint, schema, and the image's own start
command and environment run directly on this machine)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
import yaml

from service.config import read_config
from tests.live import ROOT, free_port
from tests.service.test_config import readme_variables

BIN = Path(sys.executable).parent


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(instruction, arguments) of the final stage, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text()
    joined = re.sub(r"\\\n\s*", " ", text)
    stages = re.split(r"^FROM ", joined, flags=re.MULTILINE)
    lines = [line.strip() for line in ("FROM " + stages[-1]).splitlines()]
    return [tuple(line.split(" ", 1)) for line in lines if line and not line.startswith("#")]


def image_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for instruction, arguments in dockerfile_instructions():
        if instruction == "ENV":
            env.update(dict(pair.split("=", 1) for pair in shlex.split(arguments)))
    return env


def image_json_instruction(name: str) -> list[str]:
    (arguments,) = [args for instruction, args in dockerfile_instructions() if instruction == name]
    return json.loads(arguments.removeprefix("CMD "))


def test_hadolint_passes():
    done = subprocess.run([BIN / "hadolint", "Dockerfile"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_compose_file_follows_the_compose_specification():
    done = subprocess.run(
        [BIN / "check-jsonschema", "--builtin-schema", "vendor.compose-spec", "compose.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_image_runs_unprivileged_with_data_in_a_volume_and_no_secrets():
    instructions = dockerfile_instructions()
    names = [instruction for instruction, _ in instructions]
    assert ("USER", "10001:10001") in instructions
    assert ("VOLUME", '["/data"]') in instructions
    assert ("EXPOSE", "3470") in instructions
    assert names.index("USER") > names.index("RUN")  # installs as root, runs as the app user
    env = image_env()
    assert {k: env[k] for k in ("SERVICE_HOST", "SERVICE_PORT", "SERVICE_DATA_DIR")} == {
        "SERVICE_HOST": "0.0.0.0",
        "SERVICE_PORT": "3470",
        "SERVICE_DATA_DIR": "/data",
    }
    assert not [k for k in env if re.search(r"KEY|SECRET|PASSWORD|TOKEN", k)]
    healthcheck = next(args for instruction, args in instructions if instruction == "HEALTHCHECK")
    assert "/api/health" in healthcheck
    assert image_json_instruction("CMD")[:3] == ["python", "manage.py", "serve"]
    # An init as PID 1 forwards signals and reaps orphans (Chromium's, when a worker dies).
    assert image_json_instruction("ENTRYPOINT") == ["/usr/bin/tini", "--"]
    assert any(instruction == "RUN" and " tini " in f"{args} " for instruction, args in instructions)
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {"data", ".env", "frontend/node_modules", ".venv"} <= set(ignored)


def test_compose_runs_the_service_with_a_volume_and_an_optional_search_sidecar():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    service = compose["services"]["service"]
    assert service["ports"] == ["127.0.0.1:3470:3470"]
    assert service["volumes"] == ["data:/data"] and "data" in compose["volumes"]
    assert service["env_file"] == [{"path": ".env", "required": False}]
    assert service["restart"] == "unless-stopped"
    grace = int(service["stop_grace_period"].rstrip("s"))
    assert grace >= read_config({"SERVICE_DATA_DIR": "/tmp/compose-check"}).run_timeout_max_ms / 1000
    assert service["environment"]["SEARXNG_URL"].endswith("http://searxng:8080}")
    searxng = compose["services"]["searxng"]
    assert searxng["profiles"] == ["search"]
    mounted = searxng["volumes"][0].split(":")
    settings_yml = yaml.safe_load((ROOT / mounted[0]).read_text())
    assert "json" in settings_yml["search"]["formats"]


def test_the_images_code_is_roots_and_read_only():
    instructions = dockerfile_instructions()
    copies = [args for instruction, args in instructions if instruction == "COPY"]
    assert copies and not [args for args in copies if "--chown" in args]  # root's, as COPY leaves it
    assert ("RUN", "chmod -R a-w,a+rX /app") in instructions
    names = [instruction for instruction, _ in instructions]
    assert max(i for i, name in enumerate(names) if name == "COPY") < names.index("USER")


def test_compose_runs_with_least_privilege_and_no_default_secret():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    service, searxng = compose["services"]["service"], compose["services"]["searxng"]
    for container in (service, searxng):
        assert container["cap_drop"] == ["ALL"]
        assert "no-new-privileges:true" in container["security_opt"]
        assert container["mem_limit"]
    assert service["read_only"] is True and any(mount.startswith("/tmp") for mount in service["tmpfs"])
    assert set(searxng.get("cap_add", [])) <= {"CHOWN", "SETGID", "SETUID"}
    assert not searxng["image"].endswith(":latest") and re.search(r":\d{4}\.\d+\.\d+-\w+$", searxng["image"])
    # No secret ships: compose passes .env's (empty by default), and SearXNG starts through deploy/searxng/start.sh
    assert searxng["environment"]["SEARXNG_SECRET"] == "${SEARXNG_SECRET:-}"
    assert searxng["entrypoint"][2:4] == ["/bin/sh", "/usr/local/bin/wds-start.sh"]
    assert "./deploy/searxng/start.sh:/usr/local/bin/wds-start.sh:ro" in searxng["volumes"]
    settings_yml = yaml.safe_load((ROOT / "deploy/searxng/settings.yml").read_text())
    assert settings_yml["server"]["secret_key"] == "ultrasecretkey"  # the placeholder SearXNG refuses to run with


def secret_given_to_searxng(environment: dict[str, str]) -> str:
    """What deploy/searxng/start.sh hands SearXNG's entrypoint (here `env`, in its place) as SEARXNG_SECRET."""
    shown = subprocess.run(
        ["sh", str(ROOT / "deploy/searxng/start.sh"), "env"],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return re.search(r"^SEARXNG_SECRET=(.*)$", shown, flags=re.MULTILINE)[1]


def test_searxng_gets_a_new_random_secret_at_every_start_unless_one_is_given():
    path = {"PATH": os.environ["PATH"]}
    first, second = secret_given_to_searxng(path), secret_given_to_searxng({**path, "SEARXNG_SECRET": ""})
    assert re.fullmatch(r"[0-9a-f]{64}", first) and re.fullmatch(r"[0-9a-f]{64}", second)
    assert first != second
    assert secret_given_to_searxng({**path, "SEARXNG_SECRET": "given-in-env"}) == "given-in-env"


def test_env_example_names_every_variable_of_the_readme_and_works_as_is(tmp_path):
    example = (ROOT / ".env.example").read_text()
    listed = set(re.findall(r"^([A-Z_]+)=", example, flags=re.MULTILINE))
    assert set(readme_variables()) - listed == set()
    for name in listed:  # each has a comment right above it (or shares the one above its group)
        assert re.search(rf"#.*\n(?:[A-Z_]+=.*\n)*{name}=", example), name
    config = read_config({**dict.fromkeys(listed, ""), "SERVICE_DATA_DIR": str(tmp_path)})
    assert (config.port, config.workers, config.allow_private_networks) == (3470, 2, False)


@pytest.mark.live
def test_the_images_command_and_environment_work_here(tmp_path, site):
    """CMD and ENV of the Dockerfile, run on this machine: only the data directory (a temp dir for /data) and the
    port (a free one for 3470) differ; `python` is this venv's."""
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")},
        **image_env(),
        "SERVICE_DATA_DIR": str(tmp_path / "data"),
        "SERVICE_PORT": str(port),
        "SERVICE_API_KEY": "deploy-test-key-0123456789",
        "NETWORK_ALLOWLIST": f"127.0.0.1:{site.server.server_address[1]}",
        "BROWSER_ARGS": "'--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'",
    }
    command = [sys.executable if part == "python" else part for part in image_json_instruction("CMD")]
    command[command.index("300")] = "10"  # a shorter grace so the test stops quickly
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        health = [sys.executable if part == "python" else part for part in healthcheck_command()]
        health = [part.replace(":3470/", f":{port}/") for part in health]
        deadline = time.monotonic() + 60
        while subprocess.run(health, capture_output=True).returncode != 0:
            assert time.monotonic() < deadline and process.poll() is None, "never healthy"
            time.sleep(0.5)
        assert (tmp_path / "data" / "db.sqlite3").is_file()  # migrations were applied at start
        session = requests.Session()
        session.headers["Authorization"] = "Bearer deploy-test-key-0123456789"
        base = f"http://127.0.0.1:{port}"
        run = session.post(f"{base}/api/runs", json={"kind": "fetch", "url": site.url("/static")}, timeout=10).json()
        while run["status"] in ("queued", "running"):
            time.sleep(0.2)
            run = session.get(f"{base}/api/runs/{run['id']}", timeout=10).json()
        assert run["status"] == "succeeded", run["error"]
    finally:
        process.terminate()
        process.wait(timeout=30)


def healthcheck_command() -> list[str]:
    healthcheck = next(args for instruction, args in dockerfile_instructions() if instruction == "HEALTHCHECK")
    return json.loads(healthcheck[healthcheck.index("CMD") + 3 :].strip())


def test_the_grafana_dashboard_reads_only_metrics_the_service_exports():
    from prometheus_client.metrics import MetricWrapperBase

    from service.kernel import metrics

    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    exported = {
        family.name + suffix
        for metric in vars(metrics).values()
        if isinstance(metric, MetricWrapperBase)
        for family in metric.describe()
        for suffix in suffixes[family.type]
    }
    exported |= {"service_queue_depth", "service_runs_running"}  # read at scrape time (runs/metrics.py)
    dashboard = json.loads((ROOT / "deploy" / "grafana-dashboard.json").read_text())
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    named = {name for expression in expressions for name in re.findall(r"\bservice_[a-z_]+", expression)}
    assert named and named <= exported, named - exported
    assert {"service_runs_finished_total", "service_queue_depth", "service_http_requests_total"} <= named
