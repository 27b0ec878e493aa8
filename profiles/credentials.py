"""Credentials for agent runs: <dataDir>/credentials/<name>.json, dir 0700, files 0600, written atomically.

A credential holds a username, a password, an optional TOTP secret and the domains it may be typed into.
Its values never leave this file except when the agent types them into an allowed page.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from profiles.store import StateFileError, check_name, ensure_private_dir, write_private_file
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
        ensure_private_dir(self.folder)
        data = {
            "username": credential.username,
            "password": credential.password,
            "totpSecret": credential.totp_secret,
            "domains": list(credential.domains),
        }
        write_private_file(path, json.dumps(data).encode())

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
