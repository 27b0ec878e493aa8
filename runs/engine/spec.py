"""Plain data in and out of the engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


class EngineError(Exception):
    """A run failed for a reason the user should see; `code` is stable, `message` is one sentence."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class RunAborted(Exception):
    """Raised by a Recorder when the run must stop now (cancelled, or its lease was taken over)."""


class Recorder(Protocol):
    def step(self, *, action: str, url: str, observation: str, screenshot: bytes | None, duration_ms: int) -> None: ...

    def checkpoint(self) -> None:
        """Called often during long waits; raises RunAborted when the run must stop."""
        ...


@dataclass(frozen=True)
class FetchOptions:
    main_content: bool = True
    timeout_ms: int = 60_000
    screenshots: bool = True
    wait_for: str | None = None


@dataclass(frozen=True)
class FetchSpec:
    url: str
    options: FetchOptions = field(default_factory=FetchOptions)
    storage_state_path: str | None = None
    allow_private_networks: bool = False


@dataclass(frozen=True)
class FetchResult:
    url: str
    final_url: str
    status: int
    title: str
    markdown: str
    links: list[str]

    def to_dict(self) -> dict:
        return {
            "url": self.url,
            "finalUrl": self.final_url,
            "status": self.status,
            "title": self.title,
            "markdown": self.markdown,
            "links": self.links,
        }


@dataclass(frozen=True, repr=False)
class Credential:
    name: str
    username: str
    password: str
    domains: tuple[str, ...]
    totp_secret: str | None = None

    def __repr__(self) -> str:  # never the values, even in a traceback
        return f"Credential(name={self.name!r}, domains={self.domains!r})"

    def allows(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        return any(host == d or host.endswith("." + d) for d in self.domains)

    def to_metadata(self) -> dict:
        return {"name": self.name, "domains": list(self.domains), "hasTotp": bool(self.totp_secret)}
