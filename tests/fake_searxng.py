"""A SearXNG instance on 127.0.0.1 that answers GET <prefix>/search the way the real one does.

Modes (settable at any time through `.mode`):
- "json": 200 application/json with SearXNG's envelope around `results`.
- "html": what SearXNG does when `json` is missing from settings.yml `search.formats`: flask.abort(403), i.e.
  Werkzeug's 403 Forbidden HTML page.
- "html200": 200 text/html, as a proxy or a misconfigured instance would serve a results page.
- "error": 500 with SearXNG's JSON error body ({"error": "search error"}), as when the search itself crashes.
- "limited": 429 plain text, as SearXNG's limiter answers a client it considers a bot.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

# A trimmed but faithful SearXNG 2025 answer for q=python http server: SearXNG merges results from several
# engines (`engines`, `positions`), some lack `content`, and torrent engines give magnet: links. The duplicate URL is
# not something SearXNG normally emits, but proxies and older versions do; the client must cope.
CANNED_RESULTS: list[dict] = [
    {
        "url": "https://docs.python.org/3/library/http.server.html",
        "title": "http.server — HTTP servers — Python 3.13 documentation",
        "content": "This module defines classes for implementing HTTP servers. Availability: not WASI.",
        "engine": "duckduckgo",
        "engines": ["duckduckgo", "brave"],
        "positions": [1, 2],
        "score": 4.0,
        "category": "general",
        "publishedDate": None,
    },
    {
        "url": "https://en.wikipedia.org/wiki/Python_(programming_language)",
        "title": "Python (programming language) - Wikipedia",
        "content": "Python is a high-level, general-purpose programming language.",
        "engine": "wikipedia",
        "score": 1.0,
    },
    {
        # Brave sometimes returns a bare link; SearXNG then leaves `content` out altogether.
        "url": "https://realpython.com/python-http-server/",
        "title": "How to Launch an HTTP Server in One Line of Python Code",
        "engine": "brave",
        "score": 0.5,
        "publishedDate": "2024-02-14T00:00:00",
    },
    {
        "url": "https://docs.python.org/3/library/http.server.html",
        "title": "http.server (duplicate)",
        "content": "A second copy of the first result.",
        "engine": "duckduckgo",
        "score": 0.4,
    },
    {
        "url": "magnet:?xt=urn:btih:c9e15763f722f23e98a29decdfae341b98d53056&dn=python-http-server",
        "title": "python-http-server.tar.gz",
        "content": "",
        "engine": "solidtorrents",
        "category": "files",
        "template": "torrent.html",
        "score": 0.3,
    },
    {
        "url": "https://stackoverflow.com/questions/7943751/what-is-the-python-3-equivalent-of-python-m-simplehttpserver",
        "title": 'What is the Python 3 equivalent of "python -m SimpleHTTPServer"',
        "content": None,
        "engine": "brave",
        "score": 0.3,
    },
]

# Werkzeug's default page for flask.abort(403); SearXNG registers no handler of its own for 403.
FORBIDDEN_PAGE = (
    "<!doctype html>\n<html lang=en>\n<title>403 Forbidden</title>\n<h1>Forbidden</h1>\n"
    "<p>You don&#39;t have the permission to access the requested resource. "
    "It is either read-protected or not readable by the server.</p>\n"
)

RESULTS_PAGE = (
    '<!DOCTYPE html>\n<html class="no-js theme-auto center-alignment-no" lang="en-EN">\n<head>\n'
    '<meta charset="UTF-8">\n<title>{query} - SearXNG</title>\n</head>\n<body class="results_endpoint">\n'
    '<main id="main_results"><div id="urls" role="main">\n'
    '<article class="result result-default category-general">'
    '<a href="https://docs.python.org/3/library/http.server.html" class="url_header">docs.python.org</a>'
    "<h3>http.server — HTTP servers</h3></article>\n</div></main>\n</body>\n</html>\n"
)


def searxng_result(result: dict, position: int) -> dict:
    """`result` with the bookkeeping fields SearXNG adds to every result, where the caller did not set them."""
    url = result.get("url") or ""
    parts = urlsplit(url)
    full = {
        "template": "default.html",
        "parsed_url": [parts.scheme, parts.netloc, parts.path, "", parts.query, parts.fragment],
        "img_src": "",
        "thumbnail": "",
        "priority": "",
        "positions": [position],
        "score": 1.0,
        "category": "general",
        "publishedDate": None,
    }
    if "engine" in result:
        full["engines"] = [result["engine"]]
    full.update(result)
    return full


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        fake: FakeSearxng = self.server.owner
        url = urlsplit(self.path)
        if url.path != fake.prefix + "/search":
            self._send(404, "text/html; charset=utf-8", "<!doctype html><title>404 Not Found</title>")
            return
        query = {name: values[-1] for name, values in parse_qs(url.query, keep_blank_values=True).items()}
        fake.paths.append(url.path)
        fake.requests.append(query)
        fake.headers.append({name.lower(): value for name, value in self.headers.items()})
        mode = fake.mode
        if mode == "html":
            self._send(403, "text/html; charset=utf-8", FORBIDDEN_PAGE)
        elif mode == "html200":
            self._send(200, "text/html; charset=utf-8", RESULTS_PAGE.format(query=query.get("q", "")))
        elif mode == "error":
            self._send(500, "application/json", json.dumps({"error": "search error"}))
        elif mode == "limited":
            self._send(429, "text/plain; charset=utf-8", "Too Many Requests")
        elif mode == "json":
            self._send(200, "application/json", json.dumps(fake.envelope(query.get("q", ""))))
        else:
            raise ValueError(f"unknown FakeSearxng mode {mode!r}")

    def _send(self, status: int, content_type: str, body: str) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class FakeSearxng:
    """results: SearXNG result dicts (at least "url"; usually "title", "content", "engine"), CANNED_RESULTS when
    None. `prefix` mounts the instance under a path, as behind a reverse proxy ("/searxng")."""

    def __init__(self, results: list[dict] | None = None, *, mode: str = "json", prefix: str = ""):
        self.results = list(CANNED_RESULTS if results is None else results)
        self.mode = mode
        self.prefix = prefix.rstrip("/")
        self.requests: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []  # each search request's headers, names in lower case
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.http.daemon_threads = True
        self.http.owner = self
        # A short poll keeps shutdown (and so each test) fast.
        self._thread = threading.Thread(target=self.http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}{self.prefix}"

    def __enter__(self) -> FakeSearxng:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.http.shutdown()
        self.http.server_close()

    def envelope(self, query: str) -> dict:
        return {
            "query": query,
            # Most engines do not report a total; SearXNG then says 0 even with results.
            "number_of_results": 0,
            "results": [searxng_result(result, position) for position, result in enumerate(self.results, 1)],
            "answers": [],
            "corrections": [],
            "infoboxes": [],
            "suggestions": ["python http server example", "python simplehttpserver"],
            "unresponsive_engines": [["qwant", "access denied"]],
        }
