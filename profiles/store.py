"""Files that hold browser state: profiles (<dataDir>/profiles/<name>.json) and storage-state files.

The state itself never leaves these files: not into the DB, logs, prompts, traces, events or API responses.
Only metadata and a cookie summary (counts, domains, expiry) are read out of it.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from service.kernel.names import NAME_PATTERN, NAME_RULE

EXPIRING_WITHIN_SECONDS = 7 * 24 * 3600
# The last second datetime can show (9999-12-31T23:59:59Z): a later expiry would break every cookie summary.
MAX_COOKIE_EXPIRES = 253_402_300_799


class StateFileError(ValueError):
    """A state file or profile the service refuses; the message says how to fix it and never echoes contents."""


class ProfileNotFound(LookupError):
    pass


class ProfileExists(Exception):
    pass


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise StateFileError(f"A profile name is {NAME_RULE}.")
    return name


def profiles_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "profiles"


def profile_path(data_dir: Path, name: str) -> Path:
    return profiles_dir(data_dir) / f"{check_name(name)}.json"


def validate_state(state: object, *, label: str = "state", name_unknown_keys: bool = True) -> dict:
    """A Playwright storage state: {"cookies": [{name, value, domain, …}], "origins": [{origin, localStorage}]}.

    Messages name the problem by its place (`label`.cookies[0].name), never by a value; name_unknown_keys=False
    leaves out unknown top-level keys too (a file's contents are never echoed, DESIGN.md section 6).
    """
    if not isinstance(state, dict):
        raise StateFileError(f"{label} must be a JSON object with cookies and origins.")
    unknown = set(state) - {"cookies", "origins"}
    if unknown:
        if name_unknown_keys:
            raise StateFileError(f"{label} has unknown keys: {', '.join(sorted(unknown))}.")
        raise StateFileError(f"{label} has keys other than cookies and origins; it is not a Playwright storage state.")
    cookies = state.get("cookies", [])
    origins = state.get("origins", [])
    if not isinstance(cookies, list) or not isinstance(origins, list):
        raise StateFileError(f"{label}.cookies and {label}.origins must be lists.")
    for index, cookie in enumerate(cookies):
        if not isinstance(cookie, dict):
            raise StateFileError(f"{label}.cookies[{index}] must be an object.")
        for key in ("name", "value", "domain"):
            if not isinstance(cookie.get(key), str):
                raise StateFileError(f"{label}.cookies[{index}].{key} must be a string.")
        if not cookie["name"] or not cookie["domain"]:
            raise StateFileError(f"{label}.cookies[{index}] needs a non-empty name and domain.")
        expires = cookie.get("expires", -1)
        if not isinstance(expires, (int, float)) or isinstance(expires, bool) or expires > MAX_COOKIE_EXPIRES:
            raise StateFileError(
                f"{label}.cookies[{index}].expires must be a Unix time before the year 10000 (-1 for a session cookie)."
            )
    for index, origin in enumerate(origins):
        if not isinstance(origin, dict) or not isinstance(origin.get("origin"), str):
            raise StateFileError(f"{label}.origins[{index}] must be an object with an origin.")
        storage = origin.get("localStorage", [])
        if not isinstance(storage, list) or not all(
            isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("value"), str)
            for item in storage
        ):
            raise StateFileError(f"{label}.origins[{index}].localStorage must be a list of {{name, value}} strings.")
    return {"cookies": cookies, "origins": origins}


def cookie_summary(state: dict, *, now: float | None = None) -> dict:
    """Counts, domains and expiry of a state's cookies, and a staleness status; never names or values."""
    now = time.time() if now is None else now
    cookies = state.get("cookies", [])
    expiries = [c.get("expires", -1) for c in cookies]
    persistent = [e for e in expiries if e is not None and e >= 0]
    expired = sum(1 for e in persistent if e <= now)
    expiring = sum(1 for e in persistent if now < e <= now + EXPIRING_WITHIN_SECONDS)
    session_only = len(expiries) - len(persistent)
    live = [e for e in persistent if e > now]
    if not cookies:
        status = "empty"
    elif persistent and expired == len(persistent) and not session_only:
        status = "expired"
    elif not persistent:
        status = "session-only"
    elif expiring or (expired and not live):
        status = "expiring"
    else:
        status = "fresh"
    return {
        "cookieCount": len(cookies),
        "domains": sorted({c["domain"].lstrip(".") for c in cookies}),
        "earliestExpiry": _iso(min(live)) if live else None,
        "expired": expired,
        "expiringWithin7Days": expiring,
        "sessionOnly": session_only,
        "originsWithStorage": sum(1 for o in state.get("origins", []) if o.get("localStorage")),
        "status": status,
    }


def _iso(timestamp: float) -> str:
    timestamp = min(timestamp, MAX_COOKIE_EXPIRES)  # a file imported before that limit, or edited by hand
    return datetime.fromtimestamp(timestamp, tz=UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class ProfileInfo:
    name: str
    updated_at: str
    size: int
    summary: dict

    def to_dict(self) -> dict:
        return {"name": self.name, "updatedAt": self.updated_at, "size": self.size, "cookies": self.summary}


def ensure_private_dir(folder: Path) -> None:
    if folder.is_symlink():
        raise StateFileError(f"The {folder.name} directory is a symlink; the service refuses to follow it.")
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)


# A writer killed between creating its temp file and the rename leaves the temp file behind (the real file is
# untouched). The next write in that folder removes such leftovers once they are this old.
STALE_TEMP_SECONDS = 60


def remove_stale_temp_files(folder: Path) -> None:
    cutoff = time.time() - STALE_TEMP_SECONDS
    for leftover in folder.glob(".*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            if leftover.lstat().st_mtime < cutoff:
                leftover.unlink()


def write_private_file(path: Path, data: bytes) -> None:
    """Write atomically and privately: a temp file (0600 from creation) in the same dir, fsync, rename, fsync dir."""
    remove_stale_temp_files(path.parent)
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


class ProfileStore:
    """Profiles as files: dir 0700, files 0600 from their first byte, written atomically, symlinks refused."""

    def __init__(self, data_dir: Path):
        self.folder = profiles_dir(data_dir)

    def _path(self, name: str) -> Path:
        path = profile_path(self.folder.parent, name)
        if path.is_symlink():
            raise StateFileError(f"The profile file for {name!r} is a symlink; the service refuses to follow it.")
        return path

    def exists(self, name: str) -> bool:
        return self._path(name).is_file()

    def read_state(self, name: str) -> dict:
        path = self._path(name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            raise ProfileNotFound(name) from None
        with os.fdopen(fd, "rb") as handle:
            try:
                return json.loads(handle.read())
            except ValueError:
                raise StateFileError(f"The profile {name!r} is not valid JSON; import it again.") from None

    def info(self, name: str) -> ProfileInfo:
        path = self._path(name)
        try:
            stats = path.stat()
        except FileNotFoundError:
            raise ProfileNotFound(name) from None
        try:
            summary = cookie_summary(self.read_state(name))
        except StateFileError:
            summary = cookie_summary({})
        return ProfileInfo(name=name, updated_at=_iso(stats.st_mtime), size=stats.st_size, summary=summary)

    def list(self) -> list[ProfileInfo]:
        if not self.folder.is_dir():
            return []
        names = sorted(p.stem for p in self.folder.glob("*.json") if NAME_PATTERN.match(p.stem) and not p.is_symlink())
        return [self.info(name) for name in names]

    def write(self, name: str, state: dict, *, overwrite: bool = False) -> ProfileInfo:
        """Validate and store a state atomically: temp file (0600 at creation) in the same dir, fsync, rename."""
        path = self._path(name)
        state = validate_state(state)
        ensure_private_dir(self.folder)
        if path.exists() and not overwrite:
            raise ProfileExists(name)
        write_private_file(path, json.dumps(state, separators=(",", ":")).encode())
        return self.info(name)

    def delete(self, name: str) -> None:
        path = self._path(name)
        try:
            path.unlink()
        except FileNotFoundError:
            raise ProfileNotFound(name) from None


def resolve_storage_state_path(value: str, data_dir: Path) -> Path:
    """DESIGN.md section 6: a regular 0600 file inside the data dir, not a profile, credential or database file."""
    if "\x00" in value:
        raise StateFileError("storageStatePath cannot contain a NUL character.")
    root = Path(os.path.realpath(data_dir))
    resolved = Path(os.path.realpath(root / value))
    if not resolved.is_relative_to(root):
        raise StateFileError("storageStatePath must point inside the service's data directory.")
    private_dirs = (root / "profiles", root / "credentials")
    service_files = resolved.parent == root and (
        resolved.name.startswith("db.sqlite3") or resolved.name == "secret_key"
    )
    if any(resolved.is_relative_to(folder) for folder in private_dirs) or service_files:
        raise StateFileError(
            "storageStatePath may not point at a profile, a credential or the service's own files; "
            "use `profile` for profiles."
        )
    try:
        info = resolved.stat()
    except FileNotFoundError:
        raise StateFileError("storageStatePath does not exist.") from None
    except OSError as error:  # a name too long, a component that is a file, …
        raise StateFileError(f"storageStatePath cannot be used: {error.strerror}.") from None
    if not stat.S_ISREG(info.st_mode):
        raise StateFileError("storageStatePath is not a regular file.")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise StateFileError(
            f"storageStatePath is readable by other users; run `chmod 600 {resolved}` and submit again."
        )
    return resolved


# A storage state is a few kilobytes; past this a file is not one (and is not read whole into memory).
STATE_FILE_MAX_BYTES = 16 * 1024 * 1024


def check_storage_state_file(value: str, data_dir: Path) -> Path:
    """The resolved path of a storageStatePath whose file is usable: where and how it lies (resolve_storage_state_path)
    and what it holds, checked like `profile import` checks a state (validate_state). StateFileError otherwise,
    with a message that never quotes the file's contents.

    Called at submit by the API (and should be by the CLI) and again when the run starts, since files change.
    """
    path = resolve_storage_state_path(value, data_dir)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(STATE_FILE_MAX_BYTES + 1)
    except OSError as error:
        raise StateFileError(f"storageStatePath cannot be read: {error.strerror}.") from None
    if len(raw) > STATE_FILE_MAX_BYTES:
        raise StateFileError(
            f"storageStatePath is larger than {STATE_FILE_MAX_BYTES} bytes; it is not a storage state."
        )
    try:
        state = json.loads(raw)
    except ValueError:  # not UTF-8 either
        raise StateFileError(
            "storageStatePath is not JSON; it must hold a Playwright storage state (cookies and origins), "
            "as `profile import` takes."
        ) from None
    validate_state(state, label="storageStatePath", name_unknown_keys=False)
    return path
