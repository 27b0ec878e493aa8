"""Files that hold browser state: profiles (<dataDir>/profiles/<name>.json) and storage-state files.

The state itself never leaves these files: no DB, logs, prompts, traces, events or API responses.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class StateFileError(ValueError):
    """A storage-state path the service refuses; the message says how to fix it and never echoes contents."""


def profile_path(data_dir: Path, name: str) -> Path:
    return Path(data_dir) / "profiles" / f"{name}.json"


def resolve_storage_state_path(value: str, data_dir: Path) -> Path:
    """DESIGN.md section 6: a regular 0600 file inside the data dir, not a profile, credential or database file."""
    root = Path(os.path.realpath(data_dir))
    resolved = Path(os.path.realpath(root / value))
    if not resolved.is_relative_to(root):
        raise StateFileError("storageStatePath must point inside the service's data directory.")
    private_dirs = (root / "profiles", root / "credentials")
    if any(resolved.is_relative_to(folder) for folder in private_dirs) or resolved.name.startswith("db.sqlite3"):
        raise StateFileError(
            "storageStatePath may not point at a profile, a credential or the database; use `profile` for profiles."
        )
    try:
        info = resolved.stat()
    except FileNotFoundError:
        raise StateFileError("storageStatePath does not exist.") from None
    if not stat.S_ISREG(info.st_mode):
        raise StateFileError("storageStatePath is not a regular file.")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise StateFileError(
            f"storageStatePath is readable by other users; run `chmod 600 {resolved}` and submit again."
        )
    return resolved
