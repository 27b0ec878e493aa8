"""A service running with ALLOW_PRIVATE_NETWORKS=false reaches no private address, however the URL is written,
wherever it redirects, whatever the page embeds: a canary listener on loopback must see zero requests.

The test site is allowlisted (NETWORK_ALLOWLIST=127.0.0.1:<its port>), standing in for a public site.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import pytest

from tests.live import LiveService
from tests.ssrf_forms import BAD_SCHEMES, refused_urls


class Canary:
    def __init__(self):
        hits = self.hits = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                hits.append(self.path)
                self.send_response(200)
                self.send_header("Content-Length", "6")
                self.end_headers()
                self.wfile.write(b"secret")

            do_POST = do_GET

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def canary():
    watched = Canary()
    yield watched
    watched.server.shutdown()


@pytest.fixture(scope="module")
def guarded(site, canary, tmp_path_factory):
    site_port = site.server.server_address[1]
    service = LiveService(
        tmp_path_factory.mktemp("guarded"), ALLOW_PRIVATE_NETWORKS="false", NETWORK_ALLOWLIST=f"127.0.0.1:{site_port}"
    ).start()
    yield service
    service.stop()


def fetch(service: LiveService, url: str, render: str):
    return service.session.post(f"{service.base_url}/api/fetch", json={"url": url, "render": render}, timeout=60)


def test_the_allowlisted_site_is_reachable_through_the_guard(guarded, site, canary):
    for render in ("http", "browser"):
        response = fetch(guarded, site.url("/static"), render)
        assert response.status_code == 200, response.text
        assert response.json()["render"] == render


@pytest.mark.parametrize("render", ["http", "browser"])
def test_every_address_form_is_refused_by_sync_fetch(guarded, canary, render):
    for url in refused_urls(canary.port):
        response = fetch(guarded, url, render)
        assert response.status_code == 400, (url, response.text)
        assert response.json()["error"]["code"] == "url_not_allowed", url
    for url in BAD_SCHEMES:
        assert fetch(guarded, url, render).status_code == 400, url
    assert canary.hits == []


@pytest.mark.parametrize("render", ["http", "browser"])
def test_redirects_to_private_addresses_are_refused(guarded, site, canary, render):
    for target in refused_urls(canary.port)[::4]:
        response = fetch(guarded, site.url(f"/redirect?to={quote(target, safe='')}"), render)
        assert response.status_code == 400, (target, response.text)
        assert response.json()["error"]["code"] == "url_not_allowed", target
    assert canary.hits == []


def test_embedded_private_resources_are_not_loaded(guarded, site, canary):
    src = quote(f"http://127.0.0.1:{canary.port}/embedded", safe="")
    response = fetch(guarded, site.url(f"/embed?src={src}"), "browser")
    assert response.status_code == 200, response.text
    assert "secret" not in response.json()["markdown"]
    assert canary.hits == []


def test_runs_are_refused_at_submit_or_fail_with_url_not_allowed(guarded, site, canary):
    runs = []
    for url in refused_urls(canary.port):
        response = guarded.post("/api/runs", {"kind": "fetch", "url": url})
        if response.status_code == 400:
            assert response.json()["error"]["fields"]["url"], url
        else:
            assert response.status_code == 201, response.text
            runs.append(response.json()["id"])
    redirect = site.url("/redirect?to=" + quote(f"http://0x7f000001:{canary.port}/", safe=""))
    runs.append(guarded.submit({"kind": "fetch", "url": redirect})["id"])
    runs.append(guarded.submit({"kind": "fetch", "url": redirect, "options": {"render": "http"}})["id"])
    for run_id in runs:
        run = guarded.wait(run_id)
        assert run["status"] == "failed", run
        assert run["error"]["code"] == "url_not_allowed", run
    assert canary.hits == []
