"""The profile store: file modes, atomic writes, refused names and symlinks, cookie summaries."""

from __future__ import annotations

import os
import stat
import time

import pytest

from profiles.store import (
    ProfileExists,
    ProfileStore,
    StateFileError,
    cookie_summary,
    resolve_storage_state_path,
)

STATE = {
    "cookies": [
        {"name": "sid", "value": "v", "domain": ".shop.test", "path": "/", "expires": time.time() + 90 * 86400}
    ],
    "origins": [{"origin": "https://shop.test", "localStorage": [{"name": "token", "value": "t"}]}],
}


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_profile_file_is_0600_from_its_first_byte_under_umask_022(tmp_path):
    old = os.umask(0o022)
    try:
        info = ProfileStore(tmp_path).write("shop", STATE)
    finally:
        os.umask(old)
    assert mode(tmp_path / "profiles") == 0o700
    assert mode(tmp_path / "profiles" / "shop.json") == 0o600
    assert info.name == "shop" and info.size == (tmp_path / "profiles" / "shop.json").stat().st_size
    assert [p.name for p in (tmp_path / "profiles").iterdir()] == ["shop.json"]  # no temp file left


def test_temp_files_are_created_private_before_any_byte_is_written(tmp_path, monkeypatch):
    """mkstemp opens with 0600; check the mode of the temp file at the moment data is written."""
    seen: list[int] = []
    real_write = os.fdopen

    def spying_fdopen(fd, *args, **kwargs):
        seen.append(stat.S_IMODE(os.fstat(fd).st_mode))
        return real_write(fd, *args, **kwargs)

    monkeypatch.setattr(os, "fdopen", spying_fdopen)
    old = os.umask(0o000)
    try:
        ProfileStore(tmp_path).write("shop", STATE)
    finally:
        os.umask(old)
    assert seen and all(m == 0o600 for m in seen)


def test_existing_profile_needs_overwrite(tmp_path):
    store = ProfileStore(tmp_path)
    store.write("shop", STATE)
    with pytest.raises(ProfileExists):
        store.write("shop", {"cookies": [], "origins": []})
    store.write("shop", {"cookies": [], "origins": []}, overwrite=True)
    assert store.read_state("shop") == {"cookies": [], "origins": []}


@pytest.mark.parametrize("name", ["../x", "A", "a/b", "", "a" * 65, "a.b", "x\x00", ".."])
def test_bad_names_are_refused_and_no_file_is_touched(tmp_path, name):
    data = tmp_path / "data"
    data.mkdir()
    with pytest.raises(StateFileError):
        ProfileStore(data).write(name, STATE)
    assert list(data.iterdir()) == []


def test_symlinked_profile_files_are_refused(tmp_path):
    store = ProfileStore(tmp_path)
    store.write("real", STATE)
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    (tmp_path / "profiles" / "linked.json").symlink_to(outside)
    with pytest.raises(StateFileError):
        store.write("linked", STATE, overwrite=True)
    with pytest.raises(StateFileError):
        store.read_state("linked")
    assert outside.read_text() == "{}"
    assert [p.name for p in store.list()] == ["real"]


@pytest.mark.parametrize(
    "state",
    [
        [],
        {"cookies": "x"},
        {"cookies": [{"name": "a", "value": "b"}]},
        {"cookies": [{"name": "a", "value": 1, "domain": "d"}]},
        {"cookies": [{"name": "a", "value": "b", "domain": "d", "expires": "soon"}]},
        {"origins": [{"origin": "https://x", "localStorage": [{"name": "k"}]}]},
        {"cookies": [], "extra": 1},
    ],
)
def test_invalid_states_are_refused(tmp_path, state):
    with pytest.raises(StateFileError):
        ProfileStore(tmp_path).write("shop", state)
    assert not (tmp_path / "profiles" / "shop.json").exists()


def cookie(expires: float, domain: str = "a.test") -> dict:
    return {"name": "n", "value": "secret-value", "domain": domain, "expires": expires}


@pytest.mark.parametrize(
    ("cookies", "status"),
    [
        ([], "empty"),
        ([cookie(-1)], "session-only"),
        ([cookie(1_000 + 90 * 86400)], "fresh"),
        ([cookie(1_000 + 3 * 86400), cookie(1_000 + 90 * 86400)], "expiring"),
        ([cookie(500)], "expired"),
        ([cookie(500), cookie(-1)], "expiring"),
    ],
)
def test_cookie_summary_status(cookies, status):
    summary = cookie_summary({"cookies": cookies, "origins": []}, now=1_000)
    assert summary["status"] == status
    assert "secret-value" not in repr(summary)


def test_cookie_summary_counts_and_domains():
    state = {
        "cookies": [
            cookie(-1, ".a.test"),
            cookie(500, "b.test"),
            cookie(2_000, "b.test"),
            cookie(1_000 + 30 * 86400, "c.test"),
        ],
        "origins": [],
    }
    assert cookie_summary(state, now=1_000) == {
        "cookieCount": 4,
        "domains": ["a.test", "b.test", "c.test"],
        "earliestExpiry": "1970-01-01T00:33:20Z",
        "expired": 1,
        "expiringWithin7Days": 1,
        "sessionOnly": 1,
        "originsWithStorage": 0,
        "status": "expiring",
    }


def private_file(path, text="{}"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, 0o600)
    return path


def test_storage_state_path_table(tmp_path, tmp_path_factory):
    data = tmp_path / "data"
    private_file(data / "states" / "shop.json")
    private_file(data / "profiles" / "p.json")
    private_file(data / "credentials" / "c.json")
    private_file(data / "db.sqlite3")
    private_file(data / "secret_key")
    outside = private_file(tmp_path_factory.mktemp("other") / "state.json")
    (data / "states" / "link.json").symlink_to(outside)
    (data / "states" / "dir").mkdir()
    assert resolve_storage_state_path("states/shop.json", data) == data / "states" / "shop.json"
    assert resolve_storage_state_path(str(data / "states" / "shop.json"), data) == data / "states" / "shop.json"
    refused = {
        "../other/state.json": "inside the service's data directory",
        str(outside): "inside the service's data directory",
        "states/link.json": "inside the service's data directory",
        "states/../../x.json": "inside the service's data directory",
        "profiles/p.json": "profile",
        "credentials/c.json": "credential",
        "db.sqlite3": "service's own files",
        "secret_key": "service's own files",
        "states/missing.json": "does not exist",
        "states/dir": "not a regular file",
    }
    for value, reason in refused.items():
        with pytest.raises(StateFileError) as failure:
            resolve_storage_state_path(value, data)
        assert reason in str(failure.value), value
    os.chmod(data / "states" / "shop.json", 0o640)
    with pytest.raises(StateFileError) as failure:
        resolve_storage_state_path("states/shop.json", data)
    assert "chmod 600" in str(failure.value)
