"""WebRTC cannot go around the network guard: the guard is an HTTP proxy and sees TCP only, so the browser is
launched with non-proxied UDP off. A page that gathers ICE candidates against a STUN server on a loopback UDP port
(a canary standing for any private address) gets nothing through, whatever the network policy."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from runs.engine.fetch import fetch
from runs.engine.netpolicy import NetworkPolicy
from runs.engine.spec import FetchOptions, FetchSpec, NullRecorder

GATHERING_MS = 1500


def stun_page(port: int) -> bytes:
    # ICE gathering starts with setLocalDescription: a STUN binding request to every server, host candidates too.
    return f"""<!doctype html><html><head><title>Peer</title></head><body><p id="state">starting</p><script>
const pc = new RTCPeerConnection({{iceServers: [{{urls: 'stun:127.0.0.1:{port}'}}]}});
pc.createDataChannel('x');
pc.createOffer().then(offer => pc.setLocalDescription(offer))
  .then(() => {{
    const state = document.getElementById('state');
    state.textContent = 'gathering';
    state.className = 'on';
  }});
</script></body></html>""".encode()


class Canary:
    """A UDP socket on loopback that counts the datagrams it gets."""

    def __init__(self) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.received = 0
        threading.Thread(target=self._count, daemon=True).start()

    def _count(self) -> None:
        while True:
            try:
                self.socket.recvfrom(2048)
            except OSError:
                return
            self.received += 1


@pytest.fixture
def canary():
    found = Canary()
    yield found
    found.socket.close()


@pytest.fixture
def site(canary):
    body = stun_page(canary.port)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("guard", ["on", "off"])
def test_a_page_doing_stun_to_a_private_address_gets_nothing_through(browser, site, canary, guard):
    port = int(site.rsplit(":", 1)[1].strip("/"))
    policy = NetworkPolicy(allowlist=(f"127.0.0.1:{port}",)) if guard == "on" else NetworkPolicy(allow_private=True)
    # The offer is made after the load event: the fetch waits for it, or on a busy machine it could read "starting".
    options = FetchOptions(render="browser", main_content=False, wait_for="#state.on")
    spec = FetchSpec(url=site, options=options, network=policy)
    result = fetch(spec, NullRecorder(), browser)
    assert "gathering" in result.markdown  # the page did start ICE gathering
    context = browser.launched().new_context()
    try:  # and kept at it a while longer, in a page left open
        page = context.new_page()
        page.goto(site)
        page.wait_for_function("document.getElementById('state').textContent === 'gathering'")
        page.wait_for_timeout(GATHERING_MS)
    finally:
        context.close()
    assert canary.received == 0
