"""Plain data in and out of the engine."""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from runs.engine.netpolicy import NetworkPolicy, Refused

if TYPE_CHECKING:
    from runs.engine.markdown import Converted


class EngineError(Exception):
    """A run failed for a reason the user should see; `code` is stable, `message` is one sentence; details: facts a
    program may act on, kept in the run's error next to code and message (http_error: httpStatus, retryAfter)."""

    def __init__(self, code: str, message: str, details: dict | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}


def first_line(error: BaseException | str, empty: str = "no message") -> str:
    """The first line of an error's message: a Playwright error carries its call log after it. empty when there is
    no message."""
    text = str(error).strip()
    return text.splitlines()[0] if text else empty


@dataclass(frozen=True, repr=False)
class PageCopy:
    """The page a load read, as it read it (the HTML after the settle wait: what the snapshot saw), for the run's
    archive: re-extraction reads it instead of the network."""

    url: str  # where the page ended up
    status: int
    content_type: str
    html: str

    def __repr__(self) -> str:
        return f"PageCopy({self.url!r}, {self.status}, {len(self.html)} characters)"


class NullRecorder:
    """For work that is not persisted (synchronous fetch): steps go nowhere and nothing cancels it."""

    def step(
        self,
        *,
        action: str,
        url: str,
        observation: str,
        screenshot: bytes | None,
        duration_ms: int,
        page: PageCopy | None = None,
    ) -> None:
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
    def step(
        self,
        *,
        action: str,
        url: str,
        observation: str,
        screenshot: bytes | None,
        duration_ms: int,
        page: PageCopy | None = None,
    ) -> None:
        """One step of the trace; `page`: the page this step loaded, to archive."""
        ...

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
    truncated: bool = False  # the page was longer than the engine reads (its beginning is here)
    # The Markdown being converted while the browser finishes (screenshot, closing): (Markdown and page type,
    # milliseconds).
    markdown: Future[tuple[Converted, int]] | None = field(default=None, compare=False, repr=False)


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
    truncated: bool = False
    page_type: str = "article"
    canonical: str | None = None  # the page's <link rel=canonical>, absolute

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
            "truncated": self.truncated,
            "pageType": self.page_type,
            "canonical": self.canonical,
        }


DEFAULT_PORTS = {"https": 443, "http": 80}


@dataclass(frozen=True)
class CredentialSite:
    """Where a credential may be typed, from one of its `domains` entries:
    - `example.com` or `example.com:8443`: https only, that host and its subdomains, the port given or 443;
    - `http://intranet.local:8080`: plain http allowed, but only for exactly that host (and the port given or 80);
      `https://...` is the same as no scheme."""

    scheme: str
    host: str
    port: int
    subdomains: bool

    @classmethod
    def parse(cls, entry: str) -> CredentialSite:
        """ValueError, with the rule, for anything that is not [scheme://]host[:port]."""
        text = entry.strip().lower()
        scheme, _, rest = text.rpartition("://")
        if scheme not in ("", "http", "https"):
            raise ValueError(
                f"{entry!r}: a credential's site is host, host:port, https://host[:port] or http://host[:port]."
            )
        host, _, port = rest.partition(":") if not rest.startswith("[") else (rest, "", "")
        host = host.lstrip(".").rstrip(".")
        if not host or not re.fullmatch(r"[a-z0-9_.-]+", host) or ".." in host or (port and not port.isdigit()):
            raise ValueError(
                f"{entry!r}: a credential's site is host, host:port, https://host[:port] or http://host[:port] "
                "(no path, no user, no wildcard)."
            )
        scheme = scheme or "https"
        number = int(port) if port else DEFAULT_PORTS[scheme]
        if not 0 < number < 65536:
            raise ValueError(f"{entry!r}: the port must be between 1 and 65535.")
        return cls(scheme, host, number, subdomains=scheme == "https")

    def matches(self, scheme: str, host: str, port: int) -> bool:
        if (scheme, port) != (self.scheme, self.port):
            return False
        return host == self.host or (self.subdomains and host.endswith("." + self.host))


def origin_of(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an http(s) URL, the port filled in; None for anything else (about:blank, data:)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname.rstrip("."), port or DEFAULT_PORTS[scheme]


@dataclass(frozen=True, repr=False)
class Credential:
    name: str
    username: str
    password: str
    domains: tuple[str, ...]
    totp_secret: str | None = None

    def __repr__(self) -> str:  # never the values, even in a traceback
        return f"Credential(name={self.name!r}, domains={self.domains!r})"

    def allows(self, url: str) -> bool:
        """Whether the credential may be typed into a document at `url`: its scheme, host and port match one of
        the credential's sites (CredentialSite); an entry that does not parse allows nothing."""
        origin = origin_of(url)
        if origin is None:
            return False
        for entry in self.domains:
            try:
                site = CredentialSite.parse(entry)
            except ValueError:
                continue
            if site.matches(*origin):
                return True
        return False

    def to_metadata(self) -> dict:
        return {"name": self.name, "domains": list(self.domains), "hasTotp": bool(self.totp_secret)}


# How a caller whose thread does not own the browser has a page loaded there: it is given the load to run and returns
# its result (BrowserThread.call; a crawl's pages hand their browser work to the crawl's thread).
BrowserHandOff = Callable[[Callable[[], LoadedPage]], LoadedPage]
