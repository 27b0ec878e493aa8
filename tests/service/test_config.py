"""Configuration from the environment: defaults that run, and bad values that stop start-up in one sentence."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from service.config import ConfigError, read_config

ROOT = Path(__file__).resolve().parents[2]


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SERVICE_", "DATABASE_URL", "REDIS_URL"))}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def readme_variables() -> list[str]:
    """The variables of the README's configuration table: the promise a user reads."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| Variable ")]
    return [name.strip() for row in rows for name in row.split("|")[1].split(",")]


# A value a user could plausibly get wrong, for every variable of the README's table. The test below checks that
# this list and the table name the same variables, so a new row needs a bad value here.
BAD_VALUES = {
    "SERVICE_HOST": "my host",
    "SERVICE_PORT": "abc",
    "SERVICE_DATA_DIR": "{tmp}/a-file/data",
    "DATABASE_URL": "mysql://db/app",
    "REDIS_URL": "localhost:6379",
    "SERVICE_API_KEY": "my secret key",
    "BROWSER_EXECUTABLE": "/nonexistent/chrome",
    "BROWSER_ARGS": "--lang='de",
    "BROWSER_SANDBOX": "sometimes",
    "WORKERS": "0",
    "WEB_PROCESSES": "0",
    "ALLOW_PRIVATE_NETWORKS": "maybe",
    "NETWORK_ALLOWLIST": "intranet",
    "NETWORK_DNS_SERVERS": "dns.example.com",
    "RUN_MAX_ATTEMPTS": "0",
    "RUN_TIMEOUT_MAX_MS": "5m",
    "RUN_LEASE_SECONDS": "1",
    "RUN_REAP_INTERVAL_SECONDS": "often",
    "QUEUE_POLL_SECONDS": "0",
    "SCHEDULE_MIN_SECONDS": "0",
    "SCHEDULE_CHECK_SECONDS": "soon",
    "WEBHOOK_TIMEOUT_SECONDS": "10s",
    "API_MAX_BODY_BYTES": "1MB",
    "API_RATE_LIMIT": "-1",
    "QUEUE_MAX_DEPTH": "0",
    "BATCH_MAX_RUNS": "lots",
    "OBSERVATION_MAX_CHARS": "10",
    "SCREENSHOT_MAX_BYTES": "5e6",
    "ARCHIVE_RETENTION_DAYS": "-1",
    "ARCHIVE_MAX_BYTES": "10MB",
    "SECRET_KEY": "changeme",
    "MODEL_PROVIDER": "acme",
    "MODEL_NAME": "gpt 4o",
    "OPENAI_API_KEY": "sk-\u00fcnicode-key",
    "OPENAI_BASE_URL": "localhost:11434/v1",
    "ANTHROPIC_API_KEY": "sk ant key",
    "ANTHROPIC_BASE_URL": "ftp://proxy.example.com",
    "EVENT_RETENTION_HOURS": "a week",
    "EVENTS_MAX_BACKLOG": "5",
    "SEARXNG_URL": "searxng:8080",
    "EVENTS_MAX_SEND_BUFFER_BYTES": "4MiB",
    "SERVICE_PUBLIC_URL": "scrape.example.com",
    "ALLOWED_HOSTS": "https://scrape.example.com",
    "CSRF_TRUSTED_ORIGINS": "scrape.example.com",
    "DEBUG": "sometimes",
    "LOG_LEVEL": "verbose",
    "LOG_FORMAT": "xml",
    "METRICS_TOKEN": "has space",
    "SENTRY_DSN": "ftp://sentry.example.com/1",
}
SECRETS = {"SERVICE_API_KEY", "SECRET_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "METRICS_TOKEN"}


def test_every_variable_of_the_readme_table_has_a_bad_value_case():
    assert sorted(readme_variables()) == sorted(BAD_VALUES)


@pytest.mark.parametrize("name", sorted(BAD_VALUES))
def test_a_bad_value_stops_start_up_with_one_sentence_naming_the_variable(tmp_path, name):
    (tmp_path / "a-file").write_text("not a directory")  # for SERVICE_DATA_DIR
    value = BAD_VALUES[name].format(tmp=tmp_path)
    env = {"SERVICE_DATA_DIR": str(tmp_path / "data"), name: value}
    result = manage("check", env=env)
    assert result.returncode == 1, result.stdout
    assert result.stderr.startswith("configuration error: "), result.stderr
    sentence = result.stderr.removeprefix("configuration error: ")
    assert sentence.endswith(".\n") and sentence.count("\n") == 1, sentence  # one line, ending a sentence
    assert sentence.startswith(f"{name} "), sentence  # names the variable first
    assert not re.search(r"[.!?] [A-Z]", sentence), sentence  # one sentence, not two
    if name in SECRETS:
        assert value not in sentence  # a secret is never echoed, not even a wrong one


def test_defaults(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = read_config({})
    assert (config.host, config.port, config.workers) == ("127.0.0.1", 3470, 2)
    assert config.data_dir == tmp_path / "data"
    assert config.database_url is None and config.redis_url is None
    assert (config.allow_private_networks, config.network_allowlist) == (False, ())
    assert config.network_dns_servers == ()
    assert config.web_processes == max(1, os.cpu_count() or 1)
    assert (config.log_format, config.metrics_token, config.sentry_dsn) == ("text", None, None)
    assert oct((config.data_dir / "profiles").stat().st_mode & 0o777) == "0o700"
    assert config.job_retry_seconds > config.job_timeout_seconds > config.run_timeout_max_ms / 1000


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SERVICE_PORT": "abc"}, "SERVICE_PORT must be a whole number, got 'abc'."),
        ({"SERVICE_PORT": "70000"}, "SERVICE_PORT must be between 1 and 65535, got 70000."),
        ({"WORKERS": "0"}, "WORKERS must be between 1 and 64, got 0."),
        ({"ALLOW_PRIVATE_NETWORKS": "maybe"}, "ALLOW_PRIVATE_NETWORKS must be true or false, got 'maybe'."),
        (
            {"DATABASE_URL": "mysql://x"},
            "DATABASE_URL must be a URL starting with postgres:// or postgresql:// or sqlite://.",
        ),
        ({"MODEL_PROVIDER": "acme"}, "MODEL_PROVIDER must be openai or anthropic, got 'acme'."),
        (
            {"NETWORK_ALLOWLIST": "10.0.0.5:8080, intranet"},
            "NETWORK_ALLOWLIST entries must be addresses or networks with an optional port "
            "(10.0.0.5, 10.0.0.0/8, 127.0.0.1:8080, [::1]:8080), got 'intranet'.",
        ),
    ],
)
def test_bad_values_are_one_clear_sentence(tmp_path, env, message):
    with pytest.raises(ConfigError) as failure:
        read_config({"SERVICE_DATA_DIR": str(tmp_path), **env})
    assert str(failure.value) == message


def test_network_dns_servers_are_addresses_with_an_optional_port(tmp_path):
    env = {"SERVICE_DATA_DIR": str(tmp_path), "NETWORK_DNS_SERVERS": " 10.0.0.2, 127.0.0.1:5353,[::1]:53,, fd00::53 "}
    assert read_config(env).network_dns_servers == ("10.0.0.2", "127.0.0.1:5353", "[::1]:53", "fd00::53")


@pytest.mark.parametrize(
    "bad",
    ["dns.example.com", "10.0.0.0/8", "10.0.0.2/32", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:", "127.0.0.1:dns"],
)
def test_a_nameserver_that_is_no_single_address_stops_start_up(tmp_path, bad):
    with pytest.raises(ConfigError) as failure:
        read_config({"SERVICE_DATA_DIR": str(tmp_path), "NETWORK_DNS_SERVERS": f"10.0.0.2, {bad}"})
    assert str(failure.value) == (
        "NETWORK_DNS_SERVERS entries must be addresses with an optional port (10.0.0.2, 127.0.0.1:5353, [::1]:53), "
        f"got {bad!r}."
    )


def test_bad_port_stops_start_up_with_one_line_on_stderr(tmp_path):
    result = manage("check", env={"SERVICE_PORT": "abc", "SERVICE_DATA_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert result.stderr == "configuration error: SERVICE_PORT must be a whole number, got 'abc'.\n"


def test_unwritable_data_dir_stops_start_up(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result = manage("check", env={"SERVICE_DATA_DIR": str(blocker / "data")})
    assert result.returncode != 0
    assert result.stderr.startswith(f"configuration error: SERVICE_DATA_DIR '{blocker / 'data'}' is not a writable")
    assert result.stderr.count("\n") == 1


def test_embedded_sqlite_runs_in_wal_mode_with_normal_sync(tmp_path):
    code = (
        "from django.db import connection\n"
        "c = connection.cursor()\n"
        "print(c.execute('PRAGMA journal_mode').fetchone()[0], c.execute('PRAGMA synchronous').fetchone()[0],"
        " connection.settings_dict['OPTIONS']['transaction_mode'])"
    )
    result = manage("shell", "--no-imports", "-c", code, env={"SERVICE_DATA_DIR": str(tmp_path)})
    assert result.stdout.split() == ["wal", "1", "IMMEDIATE"], result.stderr
    assert (tmp_path / "db.sqlite3").exists()


def test_database_url_switches_to_postgres(tmp_path):
    code = "from django.db import connection; print(connection.vendor)"
    result = manage(
        "shell",
        "--no-imports",
        "-c",
        code,
        env={"SERVICE_DATA_DIR": str(tmp_path), "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/test"},
    )
    assert result.stdout.strip() == "postgresql", result.stderr


def test_allowed_hosts_are_never_everything_by_default(tmp_path):
    # Bound to every interface (the image): the loopback names and this machine's name, not "*".
    config = read_config({"SERVICE_DATA_DIR": str(tmp_path), "SERVICE_HOST": "0.0.0.0"})
    assert "*" not in config.allowed_hosts
    assert {"localhost", "127.0.0.1", "[::1]", socket.gethostname()} == set(config.allowed_hosts)
    config = read_config({"SERVICE_DATA_DIR": str(tmp_path), "SERVICE_HOST": "10.1.2.3"})
    assert config.allowed_hosts == ["localhost", "127.0.0.1", "[::1]", "10.1.2.3"]


def test_the_public_url_is_an_allowed_host_and_a_trusted_origin(tmp_path):
    env = {
        "SERVICE_DATA_DIR": str(tmp_path),
        "SERVICE_HOST": "0.0.0.0",
        "SERVICE_PUBLIC_URL": "https://scrape.example.com/",
    }
    config = read_config(env)
    assert "scrape.example.com" in config.allowed_hosts and "*" not in config.allowed_hosts
    assert config.csrf_trusted_origins == ["https://scrape.example.com"]
    assert config.public_url == "https://scrape.example.com"


@pytest.mark.parametrize("key", ["abc", "fifteen-chars-x"])
def test_a_short_api_key_is_refused_without_repeating_it(tmp_path, key):
    with pytest.raises(ConfigError) as refused:
        read_config({"SERVICE_DATA_DIR": str(tmp_path), "SERVICE_API_KEY": key})
    assert "at least 16 characters" in str(refused.value)
    assert key not in str(refused.value)
    assert read_config({"SERVICE_DATA_DIR": str(tmp_path), "SERVICE_API_KEY": key + "-and-long-enough"}).api_key


@pytest.mark.parametrize("value", ["auto", "on", "off", "ON"])
def test_browser_sandbox_modes(tmp_path, value):
    assert read_config({"SERVICE_DATA_DIR": str(tmp_path), "BROWSER_SANDBOX": value}).browser_sandbox == value.lower()
