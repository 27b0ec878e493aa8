"""Fetch without a browser: one HTTP GET (following redirects) through the network guard, and the test for
pages that need a browser after all (JavaScript shells)."""

from __future__ import annotations

import json
import re
import time
from http.cookiejar import DefaultCookiePolicy
from urllib.parse import urljoin

import lxml.html
import requests
from requests.cookies import create_cookie

from runs.engine.html_tree import base_url
from runs.engine.netguard import REFUSED_HEADER, guarded_session, network_guard
from runs.engine.spec import EngineError, FetchSpec, LoadedPage, PageCopy, Recorder, checked_url

USER_AGENT = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
HTML_TYPES = ("text/html", "application/xhtml+xml")
MAX_BODY_BYTES = 20 * 1024 * 1024
MAX_REDIRECTS = 10
# A page whose readable text is shorter than this, and that shows signs of client-side rendering, is a shell.
SHELL_TEXT_CHARS = 200
_ROOT_IDS = {"root", "app", "__next", "__nuxt", "svelte", "main-app", "react-root", "ember-app"}
_META_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([\w.:-]+)""", re.IGNORECASE)
_NOSCRIPT_WARNING = re.compile(r"(enable|turn on|requires?|need)\W+(?:\w+\W+){0,3}javascript", re.IGNORECASE)


# Host-only cookies (a storage state's domain without a leading dot, a Set-Cookie without Domain) go to their own
# host only, as in a browser; the cookie jar's default policy sends them to every subdomain too.
_BROWSER_COOKIE_POLICY = DefaultCookiePolicy(strict_ns_domain=DefaultCookiePolicy.DomainStrictNonDomain)


class _Session(requests.Session):
    """requests builds each request's Cookie header from a fresh jar with the default policy (and keeps that jar
    across redirects): the header is built again with the browser's policy."""

    def prepare_request(self, request: requests.Request) -> requests.PreparedRequest:
        prepared = super().prepare_request(request)
        prepared._cookies.set_policy(_BROWSER_COOKIE_POLICY)
        prepared.headers.pop("Cookie", None)
        prepared.prepare_cookies(prepared._cookies)
        return prepared


def _session(spec: FetchSpec) -> requests.Session:
    session = guarded_session(spec.network, _Session())
    session.max_redirects = MAX_REDIRECTS
    session.headers.update({"User-Agent": USER_AGENT, "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"})
    session.cookies.set_policy(_BROWSER_COOKIE_POLICY)
    if spec.storage_state_path:
        for cookie in _storage_state_cookies(spec.storage_state_path):
            session.cookies.set_cookie(cookie)
    return session


def _storage_state_cookies(path: str) -> list:
    """The profile's cookies as requests cookies; the jar applies domain, path, secure and expiry rules. Playwright
    writes a host-only cookie's domain without a leading dot and a domain cookie's with one."""
    with open(path, encoding="utf-8") as file:
        state = json.load(file)
    cookies = []
    for cookie in state.get("cookies") or []:
        domain = cookie.get("domain") or ""
        expires = cookie.get("expires")
        cookies.append(
            create_cookie(
                cookie["name"],
                cookie.get("value", ""),
                domain=domain,
                path=cookie.get("path") or "/",
                secure=bool(cookie.get("secure")),
                expires=int(expires) if isinstance(expires, (int, float)) and expires > 0 else None,
                rest={"HttpOnly": None} if cookie.get("httpOnly") else {},
            )
        )
        cookies[-1].domain_specified = domain.startswith(".")  # host-only otherwise (create_cookie sets it True)
    return cookies


def _refused(response: requests.Response) -> EngineError | None:
    code = response.headers.get(REFUSED_HEADER)
    if code is None:
        return None
    return EngineError(code if code in ("url_not_allowed", "dns_error") else "url_not_allowed", response.text)


def _connection_error(spec: FetchSpec, error: requests.RequestException, started: float) -> EngineError:
    if spec.network.enforced:
        refusal = network_guard(spec.network).refusal_since(started)
        if refusal:
            return EngineError(*refusal)
    text = str(error)
    if isinstance(error, requests.Timeout):
        return EngineError("timeout", f"The page did not answer within timeoutMs ({spec.options.timeout_ms} ms).")
    if isinstance(error, requests.TooManyRedirects):
        return EngineError("too_many_redirects", "The page redirected too many times.")
    if isinstance(error, requests.exceptions.SSLError):
        return EngineError("tls_error", "The TLS handshake with the server failed.")
    if "NameResolutionError" in text or "Name or service not known" in text or "getaddrinfo" in text:
        return EngineError("dns_error", "The host name could not be resolved.")
    if "Connection refused" in text:
        return EngineError("connection_refused", "The server refused the connection.")
    return EngineError("connection_error", "The connection to the server failed.")


def http_load(spec: FetchSpec, recorder: Recorder) -> LoadedPage:
    """GET spec.url with plain HTTP and record a navigate step (without a screenshot)."""
    checked_url(spec.network, spec.url)
    recorder.checkpoint()
    started = time.monotonic()
    timeout = spec.options.timeout_ms / 1000
    session = _session(spec)
    try:
        with session.get(spec.url, timeout=timeout, stream=True) as response:
            refused = _refused(response)
            if refused:
                raise refused
            body = response.raw.read(MAX_BODY_BYTES + 1, decode_content=True)
            if time.monotonic() - started > timeout:
                raise requests.Timeout()
    except requests.RequestException as error:
        raise _connection_error(spec, error, started) from None
    finally:
        session.close()
    final_url = response.url
    content_type = (response.headers.get("content-type") or "").split(";")[0].strip().lower()
    html = _decode(body[:MAX_BODY_BYTES], response.headers.get("content-type") or "")
    title, links = title_and_links(html, final_url)
    lines = [f"HTTP {response.status_code} {final_url} (plain HTTP, no browser)"]
    if final_url != spec.url:
        lines.append(f"redirected from {spec.url}")
    lines += [f"content-type: {content_type or 'unknown'}", f"title: {title}"]
    truncated = len(body) > MAX_BODY_BYTES
    if truncated:
        lines.append(f"the response is longer than {MAX_BODY_BYTES} bytes: only its beginning was read")
    recorder.step(
        action="navigate",
        url=final_url,
        observation="\n".join(lines),
        screenshot=None,
        duration_ms=int((time.monotonic() - started) * 1000),
        page=PageCopy(final_url, response.status_code, content_type, html),
    )
    if response.status_code >= 400:
        raise http_error(response.status_code, response.headers.get("retry-after"))
    if content_type and content_type not in HTML_TYPES:
        raise EngineError("not_html", f"The response is {content_type}, not an HTML page.")
    return LoadedPage(
        url=spec.url,
        final_url=final_url,
        status=response.status_code,
        title=title,
        html=html,
        links=links,
        render="http",
        truncated=truncated,
    )


def _decode(body: bytes, content_type: str) -> str:
    """The charset of the Content-Type header, else of a <meta> in the first bytes, else UTF-8."""
    declared = re.search(r"charset=[\"']?([\w.:-]+)", content_type, re.IGNORECASE) or _META_CHARSET.search(body[:4096])
    encoding = declared.group(1) if declared else "utf-8"
    if isinstance(encoding, bytes):
        encoding = encoding.decode("ascii", "replace")
    try:
        return body.decode(encoding, errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


def _document(html: str):
    try:
        return lxml.html.document_fromstring(html) if html.strip() else None
    except (ValueError, lxml.etree.ParserError):
        return None


def http_error(status: int, retry_after: str | None) -> EngineError:
    """The error of a page that answered 4xx/5xx, with the status and Retry-After for a crawl's back-off."""
    details: dict = {"httpStatus": status}
    if retry_after:
        details["retryAfter"] = retry_after[:100]
    return EngineError("http_error", f"The page answered HTTP {status}.", details)


def title_and_links(html: str, url: str) -> tuple[str, list[str]]:
    document = _document(html)
    if document is None:
        return "", []
    title = (document.findtext(".//title") or "").strip()
    base = base_url(document, url)
    links = [_resolved(base, href.strip()) for href in document.xpath("//a/@href")]
    return title, list(dict.fromkeys(link for link in links if link.startswith(("http://", "https://"))))


# What urljoin would change in an absolute http(s) URL (it drops an empty ";params", "?query" or "#fragment" and the
# tabs and newlines it ignores, and checks brackets and non-ASCII hosts) or refuse.
_RESPELT = re.compile(r"[\t\n\r;\[\]]|\?#|[?#]\Z")
_WITH_HOST = re.compile(r"https?://[^/?#]")  # without a host ("http://?q"), urljoin takes the base's


def _resolved(base_url: str, href: str) -> str:
    """urljoin(base_url, href): most links of a page are absolute http(s) URLs already, which urljoin returns as they
    are, after parsing both; those are spared the parsing."""
    if _WITH_HOST.match(href) and href.isascii() and not _RESPELT.search(href):
        return href
    return urljoin(base_url, href)


def is_js_shell(html: str) -> bool:
    """A page whose content is rendered by JavaScript: almost no readable text, and an empty mount point
    (div#root, #app, #__next…), a <noscript> asking for JavaScript, or scripts and nothing else."""
    document = _document(html)
    if document is None:
        return True
    body = document.find("body")
    if body is None:
        return True
    noscript_text = " ".join(node.text_content() for node in body.iter("noscript"))
    scripts = len(document.xpath("//script"))
    for node in body.xpath(".//script|.//style|.//noscript|.//template"):
        node.drop_tree()
    text = " ".join(body.text_content().split())
    if len(text) >= SHELL_TEXT_CHARS:
        return False
    empty_root = any(
        (element.get("id") or "").lower() in _ROOT_IDS and not " ".join(element.text_content().split())
        for element in body.iter("div", "main", "section", "app-root")
    )
    return empty_root or bool(_NOSCRIPT_WARNING.search(noscript_text)) or (scripts > 0 and len(text) < 50)
