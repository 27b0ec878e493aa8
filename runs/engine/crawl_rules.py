"""The decisions of a site crawl, without I/O: which URL is the same page, which is in scope, which comes next.

The crawl orchestrator fetches (robots.txt, sitemaps, pages as child runs) and persists; everything it decides is
here, so it can be tested without a browser or a database.

URL normalisation (normalize_url), so that one page is fetched once:
  - only http and https; relative URLs resolved against the page's final URL (or its <base href>);
  - scheme and host lower-cased, the host in IDNA (punycode), default ports (80, 443) dropped, the fragment dropped;
  - dot segments removed; an empty path becomes "/"; a trailing slash is kept, for the URL is fetched as it was
    found (a page served only at "/docs/" is not asked for at "/docs"), but page_key drops it (except for the
    root): "/docs/" and "/docs" are one page, deduplicated by that key. Servers that tell them apart nearly always
    redirect one to the other; links are resolved against the response's final URL, never against the normalised
    one;
  - percent-encoding: unsafe characters (spaces, non-ASCII) encoded as UTF-8, escapes upper-cased, escapes of
    unreserved characters (letters, digits, "-._~") decoded (RFC 3986 6.2.2); reserved escapes such as %2F stay;
  - query: tracking parameters (TRACKING_PARAMETERS, any utm_*) dropped, the rest sorted by key, stably (repeated
    keys keep their order, which may matter to the server), empty pieces ("a=1&&b=2") dropped.

Scope (CrawlScope): "host" is the start URL's host; "domain" is that host's last two labels and their subdomains
(a simple rule without a public suffix list: for example.co.uk it would span all of co.uk, so start such crawls
with scope "host" or "path"); "path" is the start URL's host under its path ("/docs" covers "/docs" and
"/docs/**"; a start path ending in a file name such as "/docs/index.html" covers its directory). Include/exclude
are globs over the path, or the path and "?query": "**" crosses slashes, "*" stays within a segment, anything else
is literal (so "?" in a pattern is a query's "?"); a trailing "/**" also covers the directory itself
("/docs/**" includes "/docs"); a pattern not starting with "/" or "**" is anchored at "/" ("*.pdf" is
"/*.pdf", a top-level file; "**/*.pdf" is any).

Traps (Frontier): calendars and other infinite link spaces end at maxDepth and maxPages. The same page template
with ever new query strings is capped: URLs with a query are grouped by host, path template (digit runs and long
hex or UUID-like segments replaced by placeholders) and the set of query keys, and at most template_cap distinct
URLs of a group are queued. URLs without a query are not capped this way, so /products/1 ... /products/900 of a
real shop all count (maxPages bounds them); "/list?page=N" beyond the cap is the price of this rule.

Politeness (Frontier.next_ready): per host, at most per_host_concurrency fetches in flight and at least
max(delayMs, robots Crawl-delay) between two starts. A 429 or 503 pushes that host's next start to now + its
Retry-After (seconds or an HTTP date, at most MAX_BACKOFF_SECONDS) or, without one, an exponential back-off from
BACKOFF_BASE_SECONDS to the same cap; the URL is queued again first, up to max_retries times, then done with that
status. Times are epoch seconds (time.time()) so a restored frontier's waits survive a restart.

Links (links_of): a[href] and area[href]. rel=nofollow is followed: it is a ranking hint for search engines, not
a crawl permission; robots.txt is the permission, and it is honoured.
"""

from __future__ import annotations

import functools
import re
import zlib
from collections import Counter, deque
from dataclasses import asdict, dataclass, field
from email.utils import parsedate_to_datetime
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

from lxml import etree
from lxml import html as lxml_html
from protego import Protego

from runs.engine.html_tree import base_url

SCOPES = ("host", "domain", "path")
SKIP_REASONS = (
    "out_of_scope",
    "excluded",
    "not_included",
    "depth",
    "duplicate",
    "robots",
    "limit",
    "trap",
    "too_long",
)
# The longest URL a crawl fetches (normalised): a page of a crawl is a run, and this is the API's limit for a run's
# URL (runs.serializers.URL_MAX_LENGTH).
MAX_URL_CHARS = 2048
TRACKING_PARAMETERS = frozenset(
    {"gclid", "gclsrc", "dclid", "fbclid", "msclkid", "mc_cid", "mc_eid", "_ga", "_gl", "yclid", "ref_src"}
    | {"igshid", "twclid", "ttclid", "li_fat_id", "wbraid", "gbraid", "_hsenc", "_hsmi", "mkt_tok", "oly_enc_id"}
)
TRACKING_PREFIXES = ("utm_",)
DEFAULT_TEMPLATE_CAP = 50
DEFAULT_MAX_RETRIES = 3
BACKOFF_BASE_SECONDS = 2.0
MAX_BACKOFF_SECONDS = 600.0
RETRY_STATUSES = (429, 503)
# The sitemap protocol's limits per file: 50,000 URLs and 50 MB uncompressed.
MAX_SITEMAP_URLS = 50_000
MAX_SITEMAP_BYTES = 50 * 1024 * 1024

_DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_BARE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_PATH_SAFE = "/:@!$&'()*+,;=-._~%"
_QUERY_PART_SAFE = "/?:@!$'()*+,;-._~%"
_DIGITS = re.compile(r"\d+")
_ID_SEGMENT = re.compile(r"^(?=[^/]*\d)[0-9a-fA-F-]{8,}$")


# --- URLs ---------------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=65_536)
def normalize_url(url: str, base: str | None = None) -> str | None:
    """The one spelling of a page's URL (see the module docstring), or None for what is not an http(s) URL. Cached:
    a site's pages repeat the same navigation links, and a crawl normalises each link it offers twice."""
    try:
        parts = urlsplit(urljoin(base, url.strip()) if base else url.strip())
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS or not parts.hostname:
            return None
        host = _idna_host(parts.hostname)
        port = parts.port
    except ValueError:  # a bad port, a bad IPv6 literal, a label IDNA refuses
        return None
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, _normal_path(parts.path), _normal_query(parts.query), ""))


def page_key(normal: str) -> str:
    """What makes two normalised URLs one page: the same URL but for a trailing slash of the path (not the root's)."""
    path_end = normal.find("?")
    path, query = (normal, "") if path_end < 0 else (normal[:path_end], normal[path_end:])
    if path.endswith("/") and path.count("/") > 3:  # "scheme://host/" is the root
        path = path.rstrip("/")
    return path + query


def _idna_host(hostname: str) -> str:
    if ":" in hostname:  # an IPv6 literal
        return f"[{hostname}]"
    try:
        return hostname.rstrip(".").encode("idna").decode("ascii").lower()
    except UnicodeError as error:
        raise ValueError(str(error)) from error


def _normal_escapes(text: str, safe: str) -> str:
    text = _BARE_PERCENT.sub("%25", quote(text, safe=safe))

    def one(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else "%" + match.group(1).upper()

    return _ESCAPE.sub(one, text)


def _normal_path(path: str) -> str:
    segments: list[str] = []
    for segment in path.split("/")[1:]:
        if segment == "..":
            if segments:
                segments.pop()
        elif segment != ".":
            segments.append(segment)
    return _normal_escapes("/" + "/".join(segments), _PATH_SAFE)


def _normal_query(query: str) -> str:
    pairs = []
    for piece in query.split("&"):
        if not piece:
            continue
        key, separator, value = piece.partition("=")
        key = _normal_escapes(key, _QUERY_PART_SAFE)
        if not _is_tracking(key):
            pairs.append((key, separator + _normal_escapes(value, _QUERY_PART_SAFE + "=")))
    pairs.sort(key=lambda pair: pair[0])
    return "&".join(key + rest for key, rest in pairs)


def _is_tracking(key: str) -> bool:
    lowered = key.lower()
    return lowered in TRACKING_PARAMETERS or lowered.startswith(TRACKING_PREFIXES)


@functools.lru_cache(maxsize=65536)
def host_of(url: str) -> str:
    """The host (with a non-default port) of a normalised URL: the unit of politeness."""
    return urlsplit(url).netloc


def robots_url_of(url: str) -> str:
    """Where the robots.txt that governs a normalised URL lives."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/robots.txt"


def path_template(url: str) -> str:
    """The group a URL is capped in against traps: host, path with numbers and ids as placeholders, query keys."""
    parts = urlsplit(url)
    segments = [
        "{id}" if _ID_SEGMENT.match(segment) else _DIGITS.sub("{n}", segment) for segment in parts.path.split("/")
    ]
    keys = sorted({piece.partition("=")[0] for piece in parts.query.split("&") if piece})
    return f"{parts.netloc}{'/'.join(segments)}?{'&'.join(keys)}"


# --- Scope --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """What the crawl does with a discovered URL: queue it (reason None) or skip it for one of SKIP_REASONS."""

    url: str | None
    reason: str | None = None

    @property
    def queued(self) -> bool:
        return self.reason is None


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """A URL path glob as a regular expression: "**" crosses slashes, "*" stays within a segment."""
    if not pattern.startswith(("/", "**")):
        pattern = "/" + pattern
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("(?:/.*)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def _matches_any(patterns: tuple[re.Pattern[str], ...], url: str) -> bool:
    parts = urlsplit(url)
    candidates = (parts.path, f"{parts.path}?{parts.query}") if parts.query else (parts.path,)
    return any(pattern.fullmatch(candidate) for pattern in patterns for candidate in candidates)


@dataclass(frozen=True)
class CrawlScope:
    """Which URLs belong to a crawl, from its start URL and options; build it with CrawlScope.of()."""

    start_url: str
    scope: str
    max_depth: int
    netloc: str
    path_prefix: str
    include: tuple[re.Pattern[str], ...] = ()
    exclude: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def of(
        cls,
        start_url: str,
        *,
        scope: str = "host",
        max_depth: int = 3,
        include: tuple[str, ...] | list[str] = (),
        exclude: tuple[str, ...] | list[str] = (),
    ) -> CrawlScope:
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}.")
        normal = normalize_url(start_url)
        if normal is None:
            raise ValueError(f"The start URL must be an http(s) URL, not {start_url!r}.")
        return cls(
            start_url=normal,
            scope=scope,
            max_depth=max_depth,
            netloc=urlsplit(normal).netloc,
            path_prefix=_path_prefix(urlsplit(normal).path),
            include=tuple(glob_to_regex(pattern) for pattern in include),
            exclude=tuple(glob_to_regex(pattern) for pattern in exclude),
        )

    @functools.cached_property
    def _host_needle(self) -> str:
        host = urlsplit(self.start_url).hostname or ""
        return _registrable_domain(host) if self.scope == "domain" else host

    def could_contain(self, url: str) -> bool:
        """False for a raw URL that cannot be in scope whatever its normalisation: an ASCII URL in which the scope's
        host (or domain) does not appear, case aside. A page's links are mostly off the site, and this spares them
        normalize_url; True does not mean in scope (contains() decides, on the normalised URL). Non-ASCII URLs
        are always True: IDNA maps some characters (full-width letters) to ASCII ones."""
        return not url.isascii() or self._host_needle in url.lower()

    def contains(self, url: str) -> bool:
        """Whether a normalised URL is inside the scope (host, domain or path), before include/exclude."""
        parts = urlsplit(url)
        if self.scope == "domain":
            domain = _registrable_domain(urlsplit(self.start_url).hostname or "")
            host = parts.hostname or ""
            return host == domain or host.endswith("." + domain)
        if parts.netloc != self.netloc:
            return False
        return self.scope == "host" or _under(parts.path, self.path_prefix)

    def decide(self, url: str, depth: int) -> Decision:
        """Queue or skip a normalised URL found at this depth (0 is the start URL), before the frontier's checks."""
        if not self.contains(url):
            return Decision(url, "out_of_scope")
        if _matches_any(self.exclude, url):
            return Decision(url, "excluded")
        if self.include and not _matches_any(self.include, url) and url != self.start_url:
            return Decision(url, "not_included")
        if depth > self.max_depth:
            return Decision(url, "depth")
        return Decision(url)


def _path_prefix(path: str) -> str:
    last = path.rsplit("/", 1)[-1]
    return (path.rsplit("/", 1)[0] or "/") if "." in last else (path.rstrip("/") or "/")


def _under(path: str, prefix: str) -> bool:
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


def _registrable_domain(host: str) -> str:
    # The last two labels: right for example.com, too wide for example.co.uk (see the module docstring).
    if host.startswith("[") or host.replace(".", "").isdigit():
        return host
    return ".".join(host.split(".")[-2:])


# --- Robots -------------------------------------------------------------------------------------------------------


class RobotsRules:
    """A site's robots.txt (RFC 9309), read by protego."""

    def __init__(self, text: str, *, allow_all: bool = False, disallow_all: bool = False) -> None:
        self.text = text
        self.allow_all = allow_all
        self.disallow_all = disallow_all
        self._parser = Protego.parse(text)

    @classmethod
    def parse(cls, text: str) -> RobotsRules:
        return cls(text)

    @classmethod
    def from_response(cls, status: int | None, text: str = "") -> RobotsRules:
        """RFC 9309 2.3.1: a 2xx body is the rules; 4xx means no rules; 5xx or no answer (None) means keep out."""
        if status is not None and 200 <= status < 300:
            return cls(text)
        if status is not None and 400 <= status < 500:
            return cls("", allow_all=True)
        return cls("", disallow_all=True)

    def allowed(self, url: str, user_agent: str) -> bool:
        if self.disallow_all:
            return url.endswith("/robots.txt")
        return self.allow_all or self._parser.can_fetch(url, user_agent)

    def crawl_delay(self, user_agent: str) -> float | None:
        delay = self._parser.crawl_delay(user_agent)
        return float(delay) if delay is not None else None

    def sitemaps(self) -> list[str]:
        return [url for url in (normalize_url(raw) for raw in self._parser.sitemaps) if url]

    def snapshot(self) -> dict:
        return {"text": self.text, "allow_all": self.allow_all, "disallow_all": self.disallow_all}


# --- The frontier -------------------------------------------------------------------------------------------------


@dataclass
class CrawlEntry:
    url: str
    depth: int
    found_from: str | None
    attempts: int = 0


@dataclass
class HostPoliteness:
    in_flight: int = 0
    next_start: float = 0.0
    backoff_level: int = 0


@dataclass
class Frontier:
    """The crawl's memory: seen URLs, the queue, what is in flight, what is done; snapshot() persists it.

    An entry is queued (offer), in flight (next_ready), then done (report or mark_done); queued + in flight + done
    never exceeds max_pages. With respect_robots, the robots.txt of a URL's origin must be learnt (learn_robots)
    before a URL of it is offered: robots_needed(url) says which one to fetch.
    """

    scope: CrawlScope
    max_pages: int = 100
    per_host_concurrency: int = 1
    delay_ms: int = 0
    respect_robots: bool = True
    user_agent: str = "*"
    template_cap: int = DEFAULT_TEMPLATE_CAP
    max_retries: int = DEFAULT_MAX_RETRIES
    seen: set[str] = field(init=False, default_factory=set)
    queue: deque[CrawlEntry] = field(init=False, default_factory=deque)
    queued_per_host: Counter[str] = field(init=False, default_factory=Counter)  # the queue's entries by host
    in_flight: dict[str, CrawlEntry] = field(init=False, default_factory=dict)
    # In flight, and done with their host (release): no longer counted in its concurrency.
    released: set[str] = field(init=False, default_factory=set)
    done: dict[str, int | str] = field(init=False, default_factory=dict)
    template_counts: Counter[str] = field(init=False, default_factory=Counter)
    hosts: dict[str, HostPoliteness] = field(init=False, default_factory=dict)
    robots: dict[str, RobotsRules] = field(init=False, default_factory=dict)

    # Discovery

    def robots_needed(self, url: str) -> str | None:
        """The robots.txt URL to fetch and learn before offering this URL, or None."""
        normal = normalize_url(url)
        if not self.respect_robots or normal is None:
            return None
        robots_url = robots_url_of(normal)
        return None if robots_url in self.robots else robots_url

    def learn_robots(self, robots_url: str, rules: RobotsRules) -> None:
        self.robots[robots_url] = rules

    def offer(self, url: str, depth: int, found_from: str | None = None) -> Decision:
        """Queue a discovered absolute URL (links_of gives them), or say why not (one of SKIP_REASONS). Relative
        URLs are not resolved here: found_from is a normalised URL, not the base its page's links were written for."""
        normal = normalize_url(url) if self.scope.could_contain(url) else None
        if normal is None:
            return Decision(None, "out_of_scope")
        if page_key(normal) in self.seen:
            return Decision(normal, "duplicate")
        decision = self.scope.decide(normal, depth)
        if not decision.queued:
            return decision
        if len(normal) > MAX_URL_CHARS:
            return Decision(normal, "too_long")
        if not self._robots_allow(normal):
            return Decision(normal, "robots")
        template = path_template(normal) if urlsplit(normal).query else None
        if template and self.template_counts[template] >= self.template_cap:
            return Decision(normal, "trap")
        if self.page_count() >= self.max_pages:
            return Decision(normal, "limit")
        if template:
            self.template_counts[template] += 1
        self.seen.add(page_key(normal))
        self._enqueue(CrawlEntry(normal, depth, found_from))
        return Decision(normal)

    def _enqueue(self, entry: CrawlEntry, *, first: bool = False) -> None:
        if first:
            self.queue.appendleft(entry)
        else:
            self.queue.append(entry)
        self.queued_per_host[host_of(entry.url)] += 1

    def _unqueue(self, entry: CrawlEntry) -> None:
        self.queue.remove(entry)
        host = host_of(entry.url)
        self.queued_per_host[host] -= 1
        if not self.queued_per_host[host]:
            del self.queued_per_host[host]

    def _robots_allow(self, url: str) -> bool:
        if not self.respect_robots:
            return True
        robots_url = robots_url_of(url)
        if robots_url not in self.robots:
            raise LookupError(f"Learn {robots_url} before offering {url}.")
        return self.robots[robots_url].allowed(url, self.user_agent)

    def note_canonical(self, url: str, canonical: str | None) -> Decision:
        """After fetching url: a page whose canonical URL was already seen is a duplicate of it (reason
        "duplicate"); otherwise the canonical URL counts as seen, so it is not fetched again when found later."""
        canonical = normalize_url(canonical) if canonical else None
        if canonical is None or page_key(canonical) == page_key(url):
            return Decision(url)
        if page_key(canonical) in self.seen:
            return Decision(url, "duplicate")
        self.seen.add(page_key(canonical))
        return Decision(url)

    def seen_before(self, url: str) -> bool:
        normal = normalize_url(url)
        return normal is not None and page_key(normal) in self.seen

    def page_count(self) -> int:
        return len(self.queue) + len(self.in_flight) + len(self.done)

    # Politeness

    def _may_start(self, host: str, now: float) -> bool:
        politeness = self.hosts.get(host)
        return politeness is None or (politeness.in_flight < self.per_host_concurrency and now >= politeness.next_start)

    def next_ready(self, now: float) -> CrawlEntry | None:
        """The first queued entry whose host may start a fetch now; it moves to in flight. Asked after every page
        of a crawl: the queue is read only when a host with queued entries may start one."""
        ready = {host for host in self.queued_per_host if self._may_start(host, now)}
        for entry in self.queue if ready else ():
            host = host_of(entry.url)
            if host not in ready:
                continue
            politeness = self.hosts.setdefault(host, HostPoliteness())
            self._unqueue(entry)
            politeness.in_flight += 1
            politeness.next_start = now + self.delay_seconds(entry.url)
            self.in_flight[entry.url] = entry
            return entry
        return None

    def next_start_time(self) -> float | None:
        """The earliest time a queued entry's host allows a start (ignoring concurrency), or None with no queue."""
        starts = [self.hosts[host].next_start if host in self.hosts else 0.0 for host in self.queued_per_host]
        return min(starts, default=None)

    def release(self, url: str) -> None:
        """An in-flight URL's page is loaded: its host may start another while this one is still being converted
        and recorded (it stays in flight until report). Politeness is about requests to the host, as in Scrapy's
        per-domain concurrency."""
        if url in self.in_flight and url not in self.released:
            self.released.add(url)
            self._leave_host(url)

    def _leave_host(self, url: str) -> None:
        politeness = self.hosts.setdefault(host_of(url), HostPoliteness())
        politeness.in_flight = max(0, politeness.in_flight - 1)

    def _land(self, url: str) -> None:
        """An in-flight URL is no longer in flight: its place in its host's concurrency is free (if not already)."""
        del self.in_flight[url]
        if url in self.released:
            self.released.discard(url)
        else:
            self._leave_host(url)

    def delay_seconds(self, url: str) -> float:
        """The pause between two starts on this URL's host: delayMs or the robots Crawl-delay, the longer."""
        rules = self.robots.get(robots_url_of(url))
        crawl_delay = rules.crawl_delay(self.user_agent) if rules and self.respect_robots else None
        return max(self.delay_ms / 1000, crawl_delay or 0.0)

    def report(self, url: str, status: int | str, *, now: float, retry_after: str | None = None) -> bool:
        """The outcome of an in-flight fetch. A 429 or 503 backs its host off and queues the URL again first
        (True) until max_retries; anything else, or retries exhausted, marks it done with the status (False)."""
        politeness = self.hosts.setdefault(host_of(url), HostPoliteness())
        entry = self.in_flight.get(url)
        if status not in RETRY_STATUSES or entry is None:
            politeness.backoff_level = 0
            self.mark_done(url, status)
            return False
        wait = retry_after_seconds(retry_after, now)
        if wait is None:
            wait = min(BACKOFF_BASE_SECONDS * 2**politeness.backoff_level, MAX_BACKOFF_SECONDS)
        politeness.backoff_level += 1
        politeness.next_start = max(politeness.next_start, now + wait)
        if entry.attempts >= self.max_retries:
            self.mark_done(url, status)
            return False
        self._land(url)
        entry.attempts += 1
        self._enqueue(entry, first=True)
        return True

    def mark_done(self, url: str, status: int | str = "done") -> None:
        """Record a URL as done (in flight or still queued, e.g. its child run finished before a restart)."""
        if url in self.in_flight:
            self._land(url)
        else:
            for entry in self.queue:
                if entry.url == url:
                    self._unqueue(entry)
                    break
        self.seen.add(page_key(url))
        self.done[url] = status

    def counts_by_status(self) -> dict[str, int]:
        counts = Counter(str(status) for status in self.done.values())
        return {"queued": len(self.queue), "in_flight": len(self.in_flight), **counts}

    def is_finished(self) -> bool:
        return not self.queue and not self.in_flight

    # Persistence

    def snapshot(self) -> dict:
        """Plain JSON-able state. What is in flight is saved as queued first: after a crash it is fetched again
        unless the orchestrator, which knows its child run, marks it done."""
        return {
            "seen": sorted(self.seen),
            "queue": [asdict(entry) for entry in [*self.in_flight.values(), *self.queue]],
            "done": dict(self.done),
            "template_counts": dict(self.template_counts),
            "hosts": {
                host: {"next_start": state.next_start, "backoff_level": state.backoff_level}
                for host, state in self.hosts.items()
            },
            "robots": {url: rules.snapshot() for url, rules in self.robots.items()},
        }

    def restore(self, state: dict) -> None:
        """Load a snapshot() into this frontier (built with the same scope and options)."""
        self.seen = set(state["seen"])
        self.queue = deque()
        self.queued_per_host = Counter()
        for entry in state["queue"]:
            self._enqueue(CrawlEntry(**entry))
        self.in_flight = {}
        self.released = set()
        self.done = dict(state["done"])
        self.template_counts = Counter(state["template_counts"])
        self.hosts = {host: HostPoliteness(**saved) for host, saved in state["hosts"].items()}
        self.robots = {url: RobotsRules(**saved) for url, saved in state["robots"].items()}


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """A Retry-After header (seconds or an HTTP date) as seconds from now, at most MAX_BACKOFF_SECONDS."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        seconds = float(value)
    else:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - now
        except (TypeError, ValueError, IndexError):
            return None
    return min(max(seconds, 0.0), MAX_BACKOFF_SECONDS)


# --- Pages --------------------------------------------------------------------------------------------------------


def _document(html: str | bytes) -> lxml_html.HtmlElement | None:
    try:
        return lxml_html.document_fromstring(html)
    except (etree.ParserError, ValueError):  # empty, or nothing lxml can read
        return None


def links_of(html: str | bytes, url: str) -> list[str]:
    """The page's links (a[href], area[href]), normalised, once each, in page order; url is the final URL."""
    document = _document(html)
    return [] if document is None else _links(document, url)


def links_and_canonical(html: str | bytes, url: str) -> tuple[list[str], str | None]:
    """links_of and canonical_of from one parse of the page."""
    document = _document(html)
    return ([], None) if document is None else (_links(document, url), _canonical(document, url))


def _links(document: lxml_html.HtmlElement, url: str) -> list[str]:
    base = base_url(document, url)
    links: dict[str, None] = {}
    for element in document.iter("a", "area"):
        href = element.get("href")
        normal = normalize_url(href, base) if href else None
        if normal:
            links[normal] = None
    return list(links)


_HEAD_END = re.compile(r"</head\s*>", re.I)
_HEAD_END_BYTES = re.compile(rb"</head\s*>", re.I)


def canonical_link(html: str | bytes, url: str) -> str | None:
    """The page's <link rel=canonical>, absolute (resolved against its <base> and url, the final URL) as the page
    wrote it, or None (none, or not an http(s) URL). Read from the page's head alone: that is where a canonical link
    counts (in the body, search engines ignore it)."""
    end = (_HEAD_END_BYTES if isinstance(html, bytes) else _HEAD_END).search(html)
    document = _document(html[: end.end()] if end else html)
    return None if document is None else _canonical_href(document, url)


def canonical_of(html: str | bytes, url: str) -> str | None:
    """canonical_link, normalised (normalize_url)."""
    href = canonical_link(html, url)
    return normalize_url(href) if href else None


def _canonical_href(document: lxml_html.HtmlElement, url: str) -> str | None:
    head = document.find("head")
    for link in head.iter("link") if head is not None else ():
        if "canonical" in (link.get("rel") or "").lower().split() and link.get("href"):
            try:
                href = urljoin(base_url(document, url), link.get("href").strip())
                parts = urlsplit(href)
                return href if parts.scheme.lower() in _DEFAULT_PORTS and parts.hostname else None
            except ValueError:  # a bad IPv6 literal
                return None
    return None


def _canonical(document: lxml_html.HtmlElement, url: str) -> str | None:
    href = _canonical_href(document, url)
    return normalize_url(href) if href else None


# --- Sitemaps -----------------------------------------------------------------------------------------------------

_SITEMAP_PARSER = etree.XMLParser(
    resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False, recover=True
)


def parse_sitemap(body: bytes) -> tuple[list[str], list[str]]:
    """A sitemap's page URLs and, for a sitemap index, its sitemap URLs, normalised, at most MAX_SITEMAP_URLS.
    Reads urlset and sitemapindex in any namespace, gzip bodies and plain-text sitemaps; malformed XML gives
    what could be read; entities and DTDs are never loaded."""
    body = _gunzipped(body)
    if not body.lstrip().startswith(b"<"):
        return _text_sitemap(body), []
    try:
        root = etree.fromstring(body, _SITEMAP_PARSER)
    except etree.XMLSyntaxError:
        root = None
    pages: list[str] = []
    sitemaps: list[str] = []
    for loc in root.iter("{*}loc") if root is not None else ():
        if len(pages) + len(sitemaps) >= MAX_SITEMAP_URLS:
            break
        url = normalize_url(loc.text) if loc.text else None
        parent = etree.QName(loc.getparent()).localname
        if url and parent == "url":
            pages.append(url)
        elif url and parent == "sitemap":
            sitemaps.append(url)
    return pages, sitemaps


def _gunzipped(body: bytes) -> bytes:
    if not body.startswith(b"\x1f\x8b"):
        return body
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(body, MAX_SITEMAP_BYTES)
    except zlib.error:
        return b""


def _text_sitemap(body: bytes) -> list[str]:
    lines = body.decode("utf-8", errors="replace").splitlines()[:MAX_SITEMAP_URLS]
    return [url for url in (normalize_url(line) for line in lines if line.strip()) if url]
