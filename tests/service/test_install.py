"""Installs that are the same every time: the lock files pin every package the human-edited lists pull in, each
with its hashes, and pip installs from them with hash checking."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.live import ROOT

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)", re.MULTILINE)


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(text: str) -> dict[str, str]:
    return {normalized(name): version for name, version in PIN.findall(text)}


def locked(path) -> dict[str, tuple[str, int]]:
    """name -> (version, number of hashes) of a pip-compile lock file."""
    entries = re.split(r"\n(?=[A-Za-z0-9])", path.read_text())
    found = {}
    for entry in entries:
        match = PIN.match(entry)
        if match:
            found[normalized(match[1])] = (match[2], entry.count("--hash=sha256:"))
    return found


@pytest.mark.parametrize(("listed", "lock"), [("requirements.txt", "requirements.lock"),
                                              ("requirements-dev.txt", "requirements-dev.lock")])  # fmt: skip
def test_the_lock_pins_what_the_list_asks_for_each_with_hashes(listed, lock):
    asked = pins((ROOT / listed).read_text())
    if listed == "requirements-dev.txt":
        asked |= pins((ROOT / "requirements.txt").read_text())
    entries = locked(ROOT / lock)
    stale = {name: (version, entries.get(name, ("missing",))[0]) for name, version in asked.items()
             if entries.get(name, ("missing",))[0] != version}  # fmt: skip
    assert stale == {}, f"run make lock: {stale}"
    assert all(hashes >= 1 for _, hashes in entries.values())
    assert len(entries) > len(asked)  # the indirect dependencies are pinned too


def test_pip_installs_the_runtime_lock_with_hash_checking_into_an_empty_environment(tmp_path):
    """pip resolves requirements.lock as for a new environment (--ignore-installed), checks every file's hash, and
    needs nothing the lock does not name (with --require-hashes an unpinned dependency is an error)."""
    report = tmp_path / "report.json"
    command = [
        sys.executable, "-m", "pip", "install", "--quiet", "--dry-run", "--ignore-installed", "--require-hashes",
        "--report", str(report), "-r", str(ROOT / "requirements.lock"),
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    installed = {
        normalized(item["metadata"]["name"]): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }
    assert installed == {name: version for name, (version, _) in locked(ROOT / "requirements.lock").items()}
