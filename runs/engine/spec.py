"""Plain data in and out of the engine."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Protocol

from runs.engine.netpolicy import NetworkPolicy, Refused


class EngineError(Exception):
    """A run failed for a reason the user should see; `code` is stable, `message` is one sentence."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class NullRecorder:
    """For work that is not persisted (synchronous fetch): steps go nowhere and nothing cancels it."""

    def step(self, *, action: str, url: str, observation: str, screenshot: bytes | None, duration_ms: int) -> None:
        pass

    def checkpoint(self) -> None:
        pass


def checked_url(network: NetworkPolicy, url: str) -> str:
    """The URL, if the network policy lets the service visit it; EngineError otherwise."""
    try:
        network.check_url(url)
    except Refused as refused:
        raise EngineError(refused.code, str(refused)) from None
    return url


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
    # "browser": Chromium; "http": plain HTTP only; "auto": plain HTTP, then Chromium if the page is a JS shell.
    render: str = "browser"


@dataclass(frozen=True)
class FetchSpec:
    url: str
    options: FetchOptions = field(default_factory=FetchOptions)
    storage_state_path: str | None = None
    network: NetworkPolicy = field(default_factory=NetworkPolicy)


@dataclass(frozen=True)
class LoadedPage:
    """A page as loaded, before conversion; render says how: "browser" (Chromium) or "http" (plain HTTP);
    load_state how far the browser got: "load", or "domcontentloaded" when the load event did not come in time
    (always "load" for plain HTTP: the whole response was read)."""

    url: str
    final_url: str
    status: int
    title: str
    html: str
    links: list[str]
    render: str = "browser"
    load_state: str = "load"
    # The Markdown being converted while the browser finishes (screenshot, closing): (markdown, milliseconds).
    markdown: Future[tuple[str, int]] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class FetchResult:
    url: str
    final_url: str
    status: int
    title: str
    markdown: str
    links: list[str]
    render: str = "browser"
    load_state: str = "load"

    def to_dict(self) -> dict:
        return {
            "url": self.url,
            "finalUrl": self.final_url,
            "status": self.status,
            "title": self.title,
            "markdown": self.markdown,
            "links": self.links,
            "render": self.render,
            "loadState": self.load_state,
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
