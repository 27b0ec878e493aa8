"""Secret files on disk: under the usual umask 022, profiles/ and credentials/ are 0700 and every file in them 0600,
whichever way they were written; a writer killed mid-write never leaves a half-written profile."""

from __future__ import annotations

import io
import json
import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.management import call_command

from profiles.store import STALE_TEMP_SECONDS, ProfileStore
from runs.jobs import execute_run
from tests.fake_models import FakeOpenAI
from tests.site import LOGIN_PASSWORD, LOGIN_USER

ROOT = Path(__file__).resolve().parents[2]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def state(cookies: int) -> dict:
    return {
        "cookies": [
            {"name": f"c{n}", "value": "v" * 64, "domain": "shop.test", "path": "/", "expires": -1}
            for n in range(cookies)
        ],
        "origins": [],
    }


@pytest.mark.django_db(transaction=True)
def test_every_way_in_writes_private_files_under_umask_022(api, site, settings, data_dir, browser):
    previous = os.umask(0o022)
    try:
        for sub in ("profiles", "credentials"):  # the service makes them itself, as on a fresh install
            (data_dir / sub).rmdir()
        imported = api.post("/api/profiles/import", {"name": "imported", "state": state(1)}, format="json")
        assert imported.status_code == 201, imported.content
        real_stdin, sys.stdin = sys.stdin, io.StringIO(LOGIN_PASSWORD + "\n")
        try:
            call_command("cred", "set", "site", "--domain", "127.0.0.1", "--username", LOGIN_USER, stdout=io.StringIO())
        finally:
            sys.stdin = real_stdin
        log_in = [
            {"tool": "type", "args": {"ref": 1, "text": "{{cred.username}}"}},
            {"tool": "type", "args": {"ref": 2, "text": "{{cred.password}}"}},
            {"tool": "click", "args": {"ref": 3}},
            {"tool": "done", "args": {"output": "in"}},
        ]
        with FakeOpenAI(log_in) as model:
            settings.MODEL_PROVIDER, settings.MODEL_NAME = "openai", "scripted"
            settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = model.base_url + "/v1", "sk-test"
            spec = {
                "kind": "agent",
                "url": site.url("/login"),
                "goal": "Log in",
                "cred": "site",
                "saveProfile": "saved",
            }
            submitted = api.post("/api/runs", spec, format="json")
            assert submitted.status_code == 201, submitted.content
            assert execute_run(submitted.json()["id"]) == "succeeded"
    finally:
        os.umask(previous)
    files = {sub: sorted(p.name for p in (data_dir / sub).iterdir()) for sub in ("profiles", "credentials")}
    assert files == {"profiles": ["imported.json", "saved.json"], "credentials": ["site.json"]}
    for sub in ("profiles", "credentials"):
        assert mode(data_dir / sub) == 0o700
        for path in (data_dir / sub).iterdir():
            assert mode(path) == 0o600, path


WRITER = """
import json, sys
from profiles.store import ProfileStore
store = ProfileStore(sys.argv[1])
small, large = json.loads(open(sys.argv[2]).read())
print("ready", flush=True)
while True:
    store.write("shop", small, overwrite=True)
    store.write("shop", large, overwrite=True)
"""


def test_a_writer_killed_mid_write_never_leaves_a_half_written_profile(tmp_path):
    store = ProfileStore(tmp_path)
    store.write("shop", state(1))
    versions = [json.dumps(state(1), separators=(",", ":")), json.dumps(state(3000), separators=(",", ":"))]
    script = tmp_path / "versions.json"
    script.write_text(json.dumps([state(1), state(3000)]))
    rng = random.Random(7)
    seen = set()
    for _ in range(20):
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), str(script)], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        assert writer.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.01, 0.25))
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
        text = (tmp_path / "profiles" / "shop.json").read_text()
        assert text in versions, f"a half-written profile of {len(text)} bytes"
        seen.add(versions.index(text))
        assert store.read_state("shop") == json.loads(text)
        assert mode(tmp_path / "profiles" / "shop.json") == 0o600
    assert seen == {0, 1}, "the kills landed at different points of the write loop"
    # Any leftover temp file (a kill between create and rename) is private.
    assert all(mode(path) == 0o600 for path in (tmp_path / "profiles").glob(".*.tmp"))


# A writer held just before its rename (os.replace blocks there), so the kill lands between the temp file's creation
# and the rename every time, not only when the random timing above happens to hit that window.
HELD_WRITER = """
import json, os, sys, time
from profiles.store import ProfileStore
def held(*args):
    print("held", flush=True)
    time.sleep(60)
os.replace = held
ProfileStore(sys.argv[1]).write("shop", json.loads(open(sys.argv[2]).read()), overwrite=True)
"""


def test_a_writer_killed_before_its_rename_leaves_a_private_temp_file_that_is_swept_once_stale(tmp_path):
    store = ProfileStore(tmp_path)
    store.write("shop", state(1))
    new_state = tmp_path / "new.json"
    new_state.write_text(json.dumps(state(3000)))
    writer = subprocess.Popen(
        [sys.executable, "-c", HELD_WRITER, str(tmp_path), str(new_state)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout.readline().strip() == "held"
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
    assert store.read_state("shop") == state(1), "the profile is the old one, whole"
    leftovers = list((tmp_path / "profiles").glob(".*.tmp"))
    assert len(leftovers) == 1
    assert mode(leftovers[0]) == 0o600
    assert json.loads(leftovers[0].read_text()) == state(3000)
    store.write("other", state(1))  # a fresh leftover may be another writer's file in flight: it stays
    assert leftovers[0].exists()
    old = time.time() - STALE_TEMP_SECONDS - 1
    os.utime(leftovers[0], (old, old))
    store.write("other", state(2), overwrite=True)
    assert sorted(p.name for p in (tmp_path / "profiles").iterdir()) == ["other.json", "shop.json"]
