"""Web search through a SearXNG instance's JSON API (GET /search?format=json)."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import requests

from runs.engine.spec import EngineError

# SearXNG answers 403 when `format=json` is not listed in settings.yml `search.formats` (the default lists only html).
ENABLE_JSON = "enable the json format in its settings.yml (search: formats: [html, json])"


@dataclass(frozen=True)
class SearchHit:
    title: str
    url: str
    snippet: str
    engine: str

    def to_dict(self) -> dict:
        return {"title": self.title, "url": self.url, "snippet": self.snippet, "engine": self.engine}


def searxng_search(
    base_url: str,
    query: str,
    *,
    limit: int = 10,
    categories: str | None = None,
    language: str | None = None,
    time_range: str | None = None,
    timeout: float = 10.0,
    session: requests.Session | None = None,
) -> list[SearchHit]:
    """The first `limit` distinct http(s) results of one SearXNG results page, in SearXNG's order.

    Raises EngineError: `search_unavailable` (not reachable, too slow, 404, 429, 5xx), `search_bad_response` (JSON
    format disabled, or an answer that is not SearXNG JSON), `search_rejected` (another 4xx, e.g. SearXNG's 400 for a
    language or time_range it does not accept).
    """
    shown = _display_url(base_url)
    params = {"q": query, "format": "json"}
    for name, value in (("categories", categories), ("language", language), ("time_range", time_range)):
        if value:
            params[name] = value
    get = session.get if session is not None else requests.get
    try:
        response = get(
            base_url.rstrip("/") + "/search", params=params, timeout=timeout, headers={"Accept": "application/json"}
        )
    except requests.Timeout:
        raise EngineError("search_unavailable", f"SearXNG at {shown} did not answer within {timeout:g} s.") from None
    except requests.RequestException as error:
        raise EngineError("search_unavailable", f"SearXNG at {shown} is not reachable ({_reason(error)}).") from None

    status = response.status_code
    if status == 403:
        raise EngineError(
            "search_bad_response", f"SearXNG at {shown} refused the JSON format (HTTP 403 Forbidden): {ENABLE_JSON}."
        )
    if status == 404:
        raise EngineError(
            "search_unavailable",
            f"SearXNG at {shown} has no search endpoint (HTTP 404 for {shown}/search): check the configured URL.",
        )
    body = _json_body(response)
    if status >= 400:
        detail = f"HTTP {status}"
        if isinstance(body, dict) and isinstance(body.get("error"), str):
            detail += f": {body['error']}"
        code = "search_unavailable" if status >= 500 or status == 429 else "search_rejected"
        raise EngineError(code, f"SearXNG at {shown} failed the search ({detail}).")
    if body is None:
        kind = _content_kind(response)
        raise EngineError(
            "search_bad_response", f"SearXNG at {shown} answered with {kind} instead of JSON: {ENABLE_JSON}."
        )
    if not isinstance(body, dict) or not isinstance(body.get("results"), list):
        raise EngineError("search_bad_response", f"SearXNG at {shown} answered JSON without a results list.")
    return _hits(body["results"], limit)


def _hits(results: list, limit: int) -> list[SearchHit]:
    hits: list[SearchHit] = []
    seen: set[str] = set()
    for result in results:
        if len(hits) >= limit:
            break
        if not isinstance(result, dict):
            continue
        url = result.get("url")
        # Answers from some engines (torrents, maps) carry magnet:, geo: or relative links nobody can fetch.
        if not isinstance(url, str) or urlsplit(url).scheme.lower() not in ("http", "https") or url in seen:
            continue
        seen.add(url)
        engines = result.get("engines")
        engine = result.get("engine") or (engines[0] if isinstance(engines, list) and engines else "")
        hits.append(
            SearchHit(
                title=_text(result.get("title")), url=url, snippet=_text(result.get("content")), engine=_text(engine)
            )
        )
    return hits


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _json_body(response: requests.Response) -> object | None:
    try:
        return json.loads(response.content)
    except ValueError:
        return None


def _content_kind(response: requests.Response) -> str:
    content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if content_type in ("text/html", "application/xhtml+xml") or response.content.lstrip()[:1] == b"<":
        return "HTML"
    if not response.content.strip():
        return "an empty body"
    return content_type or "a body that is not JSON"


def _display_url(base_url: str) -> str:
    """The base URL without any user:password@ part, fit for messages and logs."""
    parts = urlsplit(base_url.rstrip("/"))
    if parts.username is None and parts.password is None:
        return base_url.rstrip("/")
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _reason(error: BaseException) -> str:
    """A short cause for a failed connection, found anywhere in the requests -> urllib3 -> socket chain."""
    pending: list[object] = [error]
    visited: set[int] = set()
    while pending:
        current = pending.pop(0)
        if not isinstance(current, BaseException) or id(current) in visited:
            continue
        visited.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return "connection refused"
        if isinstance(current, socket.gaierror):
            return "its host name could not be resolved"
        if isinstance(current, ConnectionResetError):
            return "connection reset"
        pending.extend([getattr(current, "reason", None), current.__cause__, current.__context__, *current.args])
    if isinstance(error, requests.exceptions.SSLError):
        return "TLS handshake failed"
    if isinstance(
        error, requests.exceptions.InvalidURL | requests.exceptions.MissingSchema | requests.exceptions.InvalidSchema
    ):
        return "the URL is not valid"
    return type(error).__name__
