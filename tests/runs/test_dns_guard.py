"""The network guard and DNS names that change their answer or stand for several addresses (README, "Network
safety": the guard "resolves the host itself, refuses forbidden addresses and connects to the address it checked, so
... DNS names that change their answer are covered too").

A real DNS server on 127.0.0.1 (UDP, RFC 1035 wire format) answers the guard's lookups, given to the policy as its
nameserver, with a TTL of 0: nothing may be kept. One port number is served twice on loopback: 127.0.0.2:<port> is
allowlisted and stands for a public site, 127.0.0.1:<port> is the private address a rebinding name tries to reach.
Whatever the DNS says, the private listener must see no request.
"""

from __future__ import annotations

import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from runs.engine.fetch import fetch
from runs.engine.netpolicy import NetworkPolicy, Refused
from runs.engine.resolver import LOOKUP_TIMEOUT_S
from runs.engine.spec import EngineError, FetchOptions, FetchSpec, NullRecorder
from tests.fake_dns import A, FakeDns

PUBLIC, PRIVATE = "127.0.0.2", "127.0.0.1"
LOOKUP_MARGIN_S = 3.0
PUBLIC_PAGE = """<!doctype html><html><head><title>Public</title></head><body><main><h1>Public page</h1>
<p>Served from the allowlisted address, standing in for a public site.</p>
<img src="/pixel.png"><iframe src="/frame"></iframe><script>fetch('/data.json').catch(() => 0)</script>
</main></body></html>"""


class Listener:
    """An HTTP server on one loopback address that keeps the host name and path of every request it gets."""

    def __init__(self, address: str, port: int, page: str) -> None:
        requests = self.requests = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                requests.append(((self.headers.get("Host") or "").rsplit(":", 1)[0], self.path))
                body = page.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer((address, port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def hits(self, name: str | None = None) -> list[str]:
        """The paths asked for; of name's pages only when given (a page an earlier test loaded may still ask for its
        favicon after that test, on a busy machine)."""
        return [path for host, path in self.requests if name is None or host == name]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def listeners_on_one_port() -> tuple[Listener, Listener]:
    for _ in range(20):
        public = Listener(PUBLIC, 0, PUBLIC_PAGE)
        try:
            return public, Listener(PRIVATE, public.port, "<html><body>private secret</body></html>")
        except OSError:  # that port is taken on 127.0.0.1: try another
            public.close()
    raise RuntimeError("no port free on both loopback addresses")


@pytest.fixture(scope="module")
def world():
    dns = FakeDns()
    public, private = listeners_on_one_port()
    yield dns, public, private
    public.close()
    private.close()
    dns.close()


@pytest.fixture
def dns(world):
    dns, public, private = world
    public.requests.clear()
    private.requests.clear()
    return dns


@pytest.fixture
def public(world):
    return world[1]


@pytest.fixture
def private(world):
    return world[2]


def policy(dns: FakeDns, public: Listener) -> NetworkPolicy:
    return NetworkPolicy(allowlist=(f"{PUBLIC}:{public.port}",), nameservers=(dns.nameserver,))


def load(dns: FakeDns, public: Listener, name: str, render: str, browser) -> dict:
    spec = FetchSpec(
        url=f"http://{name}:{public.port}/",
        options=FetchOptions(render=render, timeout_ms=20_000),
        network=policy(dns, public),
    )
    return fetch(spec, NullRecorder(), browser).to_dict()


def refusal(name: str, address: str) -> str:
    return (
        f"{name} resolves to {address}, which is a private, loopback or otherwise non-public address; set "
        "ALLOW_PRIVATE_NETWORKS=true or list it in NETWORK_ALLOWLIST to reach it."
    )


@pytest.mark.parametrize("render", ["browser", "http"])
def test_a_name_that_stays_on_the_allowed_address_loads_through_the_guard(dns, public, private, browser, render):
    name = f"steady-{render}.test"  # a name per test: see test_a_name_that_answers_a_private_address...
    dns.answer(name, [PUBLIC], ttl=0)
    page = load(dns, public, name, render, browser)
    assert (page["status"], page["title"], page["finalUrl"]) == (200, "Public", f"http://{name}:{public.port}/")
    assert "Public page" in page["markdown"]
    assert public.hits(name)[0] == "/" and private.hits() == []
    assert dns.asked(name, A) >= 2  # the URL check, then the guard itself at connection time


@pytest.mark.parametrize("render", ["browser", "http"])
@pytest.mark.parametrize(
    ("script", "refused"),
    [
        # Checked as public, then private when the guard connects: DNS rebinding between check and use.
        ([[PUBLIC], [PRIVATE]], PRIVATE),
        # A public and a private address: either could be used, so the name is refused whatever the order.
        ([[PUBLIC, PRIVATE]], PRIVATE),
        ([[PRIVATE, PUBLIC]], PRIVATE),
        ([[PUBLIC], [PRIVATE, PUBLIC]], PRIVATE),
        ([[PUBLIC], [PUBLIC, PRIVATE]], PRIVATE),
        # A public IPv4 address with a loopback IPv6 one.
        ([[PUBLIC, "::1"]], "::1"),
        ([[PUBLIC], [PUBLIC, "::1"]], "::1"),
    ],
    ids=[
        "public-then-private",
        "public-and-private",
        "private-and-public",
        "public-then-private-and-public",
        "public-then-public-and-private",
        "public-v4-and-loopback-v6",
        "public-then-public-v4-and-loopback-v6",
    ],
)
def test_a_name_that_answers_a_private_address_at_any_lookup_is_refused(
    dns, public, private, browser, render, script, refused, request
):
    # A name per test: Chromium may ask for a refused page's favicon after its test is over, and with one name for all
    # that late lookup took the next test's first (public) answer and reached the public listener.
    name = f"{request.node.callspec.id}.test"
    dns.answer(name, *script, ttl=0)
    with pytest.raises(EngineError) as failed:
        load(dns, public, name, render, browser)
    assert (failed.value.code, failed.value.message) == ("url_not_allowed", refusal(name, refused))
    assert private.hits() == []
    assert public.hits(name) == []  # refused before any byte went anywhere
    # Every step of the script was asked for (Chromium may then ask again, for its favicon: refused too).
    assert dns.asked(name, A) >= len(script)


def test_a_name_that_turns_private_while_the_page_loads_reaches_nothing_private(dns, public, private, browser):
    # The URL check and the page's own connection see the public address; every later lookup (the page's image,
    # frame and fetch, each a connection of its own through the guard) answers the private one.
    dns.answer("turning.test", [PUBLIC], [PUBLIC], [PRIVATE], ttl=0)
    page = load(dns, public, "turning.test", "browser", browser)
    assert (page["status"], page["title"]) == (200, "Public")
    assert public.hits("turning.test") == ["/"]
    assert private.hits() == []
    assert dns.asked("turning.test", A) >= 3, "the page's subresources were looked up again, and refused"


class MisbehavingDns:
    """A nameserver on 127.0.0.1 that never gives a usable answer: `stray` floods the asker with datagrams carrying
    another query id (a spoofing attempt or a confused server); `cut` answers with the right id but a record cut off
    in the middle."""

    def __init__(self, how: str) -> None:
        self.how = how
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.stopped = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                query, client = self.socket.recvfrom(4096)
            except OSError:
                return
            if self.how == "cut":
                header = query[:2] + struct.pack("!HHHHH", 0x8180, 0, 1, 0, 0)
                self.socket.sendto(header + struct.pack("!HHH", 0xC00C, 1, 1), client)
                continue
            wrong_id = bytes([query[0] ^ 0xFF, query[1]])
            while not self.stopped.wait(0.2):
                self.socket.sendto(wrong_id + struct.pack("!HHHHH", 0x8180, 0, 0, 0, 0), client)

    def close(self) -> None:
        self.stopped.set()
        self.socket.close()


@pytest.mark.parametrize("how", ["stray", "cut"])
def test_a_nameserver_that_never_answers_properly_is_a_dns_error_not_a_hang_or_a_crash(how):
    server = MisbehavingDns(how)
    try:
        policy = NetworkPolicy(nameservers=(f"127.0.0.1:{server.port}",))
        outcome: list[BaseException | None] = []

        def lookup() -> None:
            try:
                policy.resolve("flaky.test")
                outcome.append(None)
            except BaseException as error:  # what the lookup ended with, whatever it was
                outcome.append(error)

        worker = threading.Thread(target=lookup, daemon=True)
        worker.start()
        # A and AAAA are asked at once, the lookup bounded by LOOKUP_TIMEOUT_S; the margin is for a loaded machine.
        worker.join(timeout=LOOKUP_TIMEOUT_S + LOOKUP_MARGIN_S)
        assert not worker.is_alive(), "the lookup never ended"
        [error] = outcome
        assert isinstance(error, Refused), error
        assert (error.code, str(error)) == ("dns_error", "The host name flaky.test could not be resolved.")
    finally:
        server.close()
