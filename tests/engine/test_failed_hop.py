"""A page that sends itself somewhere that does not load (article set p72: a script moves the page to its real host,
which does not resolve here) keeps what it showed: the run succeeds with that document, and the navigate step says
where the page tried to go. With the network guard on (the default configuration), both ways the redirect can fail:
an http:// target the guard answers with its refusal, an https:// one whose tunnel it refuses (Chromium's error
page)."""

from __future__ import annotations

import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from runs.engine.fetch import fetch
from runs.engine.netpolicy import NetworkPolicy
from runs.engine.spec import FetchOptions, FetchSpec
from tests.engine.recorder import ListRecorder
from tests.fake_dns import FakeDns

TEXT = "The council approved the new bridge after a long debate about its cost and the river's wildlife."


def leaving_page(target: str) -> bytes:
    # The redirect comes 300 ms after load, while the service waits for the page to settle and reads it.
    if "at-once" in target:
        return upgrading_page()
    return (
        "<!doctype html><html><head><title>Bridge approved</title></head><body><main><article>"
        f"<h1>Bridge approved</h1><p>{TEXT}</p></article></main>"
        "<script>window.addEventListener('load', () => setTimeout(() => { location.href = "
        f"'{target}'; }}, 300));</script></body></html>"
    ).encode()


def upgrading_page() -> bytes:
    # Article set p56: a script in the head moves the page to https:// before the body is even parsed, and the
    # server speaks no TLS. (A plain script's goto gets the http document's load; then Chromium's error page.)
    return (
        "<!doctype html><html><head><title>Bridge approved</title><script>if (location.protocol != 'https:') "
        "{ document.location = document.URL.replace(/^http:/i, 'https:'); }</script></head><body><main><article>"
        f"<h1>Bridge approved</h1><p>{TEXT}</p></article></main></body></html>"
    ).encode()


@pytest.fixture(scope="module")
def site():
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            target = self.path.split("to=", 1)[1] if "to=" in self.path else ""
            body = leaving_page(target)
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def nameserver():
    server = FakeDns()  # every name is NXDOMAIN
    yield server.nameserver
    server.close()


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_page_that_redirects_itself_to_a_host_that_does_not_resolve_keeps_its_own_content(
    site, nameserver, browser, scheme
):
    target = f"{scheme}://gone-{uuid.uuid4().hex[:10]}.test/cc.html"
    url = f"http://127.0.0.1:{site}/article?to={target}"
    spec = FetchSpec(
        url=url,
        options=FetchOptions(render="browser", main_content=False, timeout_ms=30_000),
        network=NetworkPolicy(allowlist=(f"127.0.0.1:{site}",), nameservers=(nameserver,)),
    )
    recorder = ListRecorder()
    result = fetch(spec, recorder, browser)
    assert (result.status, result.title, result.final_url) == (200, "Bridge approved", url)
    assert TEXT in result.markdown
    navigate = recorder.steps[0]
    assert navigate["url"] == url
    assert f"the page then navigated itself to {target}, which did not load" in navigate["observation"]


def test_a_page_that_moves_itself_to_https_while_it_is_parsed_keeps_its_whole_document(site, browser):
    url = f"http://127.0.0.1:{site}/article?to=at-once"
    spec = FetchSpec(
        url=url,
        options=FetchOptions(render="browser", main_content=False, timeout_ms=30_000),
        network=NetworkPolicy(allowlist=(f"127.0.0.1:{site}",)),
    )
    recorder = ListRecorder()
    result = fetch(spec, recorder, browser)
    assert (result.status, result.title, result.final_url) == (200, "Bridge approved", url)
    assert TEXT in result.markdown  # the body too, parsed after the script had asked to leave
    target = url.replace("http:", "https:", 1)
    assert f"the page then navigated itself to {target}, which did not load" in recorder.steps[0]["observation"]
