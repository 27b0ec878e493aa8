"""SECRET_KEY: generated once into the data directory (0600) when unset and reused on the next start; every process
of one installation (web and workers start together on a shared data dir) gets the same key."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

from tests.service.test_config import ROOT, manage

PRINT_KEY = "from django.conf import settings; print(settings.SECRET_KEY)"


def started_key(data_dir, **env: str) -> str:
    """The SECRET_KEY a freshly started process of the service uses."""
    result = manage("shell", "--no-imports", "-c", PRINT_KEY, env={"SERVICE_DATA_DIR": str(data_dir), **env})
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_an_unset_secret_key_is_generated_once_0600_and_reused_on_the_next_start(tmp_path):
    first = started_key(tmp_path)
    key_file = tmp_path / "secret_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key_file.read_text() == first and len(first) >= 50
    assert started_key(tmp_path) == first  # the next start reuses it: sessions survive a restart
    assert started_key(tmp_path / "other") != first  # another installation gets its own
    assert sorted(p.name for p in tmp_path.iterdir() if "secret" in p.name) == ["secret_key"]  # no leftovers


def test_a_configured_secret_key_is_used_and_nothing_is_written(tmp_path):
    configured = "k" * 40 + "0123456789"
    assert started_key(tmp_path, SECRET_KEY=configured) == configured
    assert not (tmp_path / "secret_key").exists()


def test_processes_starting_together_on_a_fresh_data_dir_share_one_key(tmp_path):
    code = f"import django, os; django.setup(); {PRINT_KEY}"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SERVICE_", "DATABASE_URL", "SECRET_KEY"))}
    env = {**clean, "SERVICE_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "service.settings"}
    processes = [
        subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    keys = {process.communicate(timeout=60)[0].strip() for process in processes}
    assert keys == {(tmp_path / "secret_key").read_text()}
