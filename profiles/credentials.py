"""Credentials for agent runs: <dataDir>/credentials/<name>.json, dir 0700, files 0600, written atomically.

A credential holds a username, a password, an optional TOTP secret and the domains it may be typed into.
Its values never leave this file except when the agent types them into an allowed page.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

from profiles.store import StateFileError, check_name
from runs.engine.spec import Credential


class CredentialNotFound(LookupError):
    pass


class CredentialStore:
    def __init__(self, data_dir: Path):
        self.folder = Path(data_dir) / "credentials"

    def _path(self, name: str) -> Path:
        path = self.folder / f"{check_name(name)}.json"
        if path.is_symlink():
            raise StateFileError(f"The credential file for {name!r} is a symlink; the service refuses to follow it.")
        return path

    def exists(self, name: str) -> bool:
        return self._path(name).is_file()

    def write(self, credential: Credential) -> None:
        if not credential.domains:
            raise StateFileError("A credential needs at least one domain it may be typed into.")
        path = self._path(credential.name)
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.folder, 0o700)
        data = json.dumps(
            {
                "username": credential.username,
                "password": credential.password,
                "totpSecret": credential.totp_secret,
                "domains": list(credential.domains),
            }
        ).encode()
        fd, temp_name = tempfile.mkstemp(prefix=f".{credential.name}.", suffix=".tmp", dir=self.folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp_name, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp_name)
            raise

    def read(self, name: str) -> Credential:
        try:
            fd = os.open(self._path(name), os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            raise CredentialNotFound(name) from None
        with os.fdopen(fd, "rb") as handle:
            data = json.loads(handle.read())
        return Credential(
            name=name,
            username=data["username"],
            password=data["password"],
            domains=tuple(data["domains"]),
            totp_secret=data.get("totpSecret"),
        )

    def list(self) -> list[dict]:
        if not self.folder.is_dir():
            return []
        names = sorted(p.stem for p in self.folder.glob("*.json") if not p.is_symlink())
        return [self.read(name).to_metadata() for name in names]

    def delete(self, name: str) -> None:
        try:
            self._path(name).unlink()
        except FileNotFoundError:
            raise CredentialNotFound(name) from None
