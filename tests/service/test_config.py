"""Configuration from the environment: defaults that run, and bad values that stop start-up in one sentence."""

from __future__ import annotations

import os
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


def test_defaults(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = read_config({})
    assert (config.host, config.port, config.workers) == ("127.0.0.1", 3470, 2)
    assert config.data_dir == tmp_path / "data"
    assert config.database_url is None and config.redis_url is None
    assert (config.allow_private_networks, config.network_allowlist) == (False, ())
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
