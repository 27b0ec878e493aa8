"""The network guard: a forward proxy on 127.0.0.1 through which the browser and the HTTP client reach the web.

Checking a URL before loading it is not enough: a public page can redirect to http://169.254.169.254/, embed
an iframe of http://10.0.0.1/admin, or use a DNS name that answers a public address to the check and a private
one to the browser a moment later. Playwright's request routing does not even see redirect hops. So every
connection goes through this proxy, which resolves the host itself, refuses any address the NetworkPolicy
forbids, and connects to exactly the address it checked. HTTPS and WebSockets arrive as CONNECT tunnels; plain
HTTP as absolute-form requests, which are forwarded one per connection (Connection: close both ways) so a
kept-alive client connection can never carry a second request to another host.

It runs on its own thread with its own asyncio loop; one per process (network_guard()).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from urllib.parse import urlsplit

import requests

from runs.engine.netpolicy import NetworkPolicy, Refused

REFUSED_HEADER = "X-Refused-By-Network-Policy"
HEAD_LIMIT = 64 * 1024
CONNECT_TIMEOUT_S = 30
_HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer", "upgrade"}


class NetworkGuard:
    def __init__(self, policy: NetworkPolicy):
        self.policy = policy
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._last_refusal: tuple[float, str, str] = (0.0, "", "")
        self._ready = threading.Event()
        self._server: asyncio.AbstractServer | None = None
        self._thread = threading.Thread(target=self._serve, name="network-guard", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> NetworkGuard:
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._loop.call_soon_threadsafe(self._server.close)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def refusal_since(self, since: float) -> tuple[str, str] | None:
        """(code, reason) of the guard's last refusal, if it came after `since` (time.monotonic()): turns the
        browser's bare net error (ERR_TUNNEL_CONNECTION_FAILED) or the guard's 403 into the reason."""
        when, code, reason = self._last_refusal
        return (code, reason) if reason and when >= since else None

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", 0, limit=HEAD_LIMIT)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            head = await client_r.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            client_w.close()
            return
        try:
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            method, target, version = request_line.split(" ", 2)
            if method.upper() == "CONNECT":
                host, _, port_text = target.rpartition(":")
                await self._tunnel(client_r, client_w, host, int(port_text))
            else:
                await self._forward(client_r, client_w, method, target, version, header_lines)
        except ValueError:
            await _answer(client_w, 400, "Bad Request", "The proxy could not parse the request.")
        except Exception:  # one bad connection must never take the guard down
            client_w.close()

    async def _connect(self, client_w: asyncio.StreamWriter, host: str, port: int):
        try:
            address = await self.policy.connect_address_async(host.strip("[]"), port)
        except Refused as refused:
            self._last_refusal = (time.monotonic(), refused.code, str(refused))
            await _answer(client_w, 403, "Forbidden", str(refused), refused=refused.code)
            return None
        try:
            return await asyncio.wait_for(asyncio.open_connection(address, port), CONNECT_TIMEOUT_S)
        except (TimeoutError, OSError) as error:
            await _answer(client_w, 502, "Bad Gateway", f"Could not connect to {host}:{port}: {error}.")
            return None

    async def _tunnel(self, client_r, client_w, host: str, port: int) -> None:
        upstream = await self._connect(client_w, host, port)
        if upstream is None:
            return
        client_w.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        await client_w.drain()
        await _splice(client_r, client_w, *upstream)

    async def _forward(self, client_r, client_w, method: str, target: str, version: str, header_lines) -> None:
        parts = urlsplit(target)
        if parts.scheme != "http" or not parts.hostname:
            await _answer(client_w, 400, "Bad Request", "Only absolute http:// requests are forwarded.")
            return
        upstream = await self._connect(client_w, parts.hostname, parts.port or 80)
        if upstream is None:
            return
        up_r, up_w = upstream
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        headers = [line for line in header_lines if line and line.split(":", 1)[0].strip().lower() not in _HOP_BY_HOP]
        up_w.write(f"{method} {path} {version}\r\n".encode("latin-1"))
        up_w.write("".join(f"{line}\r\n" for line in headers).encode("latin-1") + b"Connection: close\r\n\r\n")
        # The request body (a form POST) streams on while the answer is awaited.
        body = asyncio.ensure_future(_pipe(client_r, up_w))
        try:
            response_head = await up_r.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            body.cancel()
            up_w.close()
            await _answer(client_w, 502, "Bad Gateway", f"{parts.hostname} closed the connection without answering.")
            return
        status_line, *response_headers = response_head.decode("latin-1").split("\r\n")
        kept = [line for line in response_headers if line and line.split(":", 1)[0].strip().lower() not in _HOP_BY_HOP]
        client_w.write(f"{status_line}\r\n".encode("latin-1"))
        client_w.write("".join(f"{line}\r\n" for line in kept).encode("latin-1") + b"Connection: close\r\n\r\n")
        await _pipe(up_r, client_w)
        body.cancel()
        up_w.close()


async def _answer(writer: asyncio.StreamWriter, status: int, reason: str, message: str, *, refused: str = ""):
    body = message.encode()
    marker = f"{REFUSED_HEADER}: {refused}\r\n" if refused else ""
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
        f"{marker}Connection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(64 * 1024):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def _splice(client_r, client_w, up_r, up_w) -> None:
    """Copy both ways until either side closes, then close both."""
    tasks = [asyncio.ensure_future(_pipe(client_r, up_w)), asyncio.ensure_future(_pipe(up_r, client_w))]
    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for task in tasks:
        task.cancel()
    up_w.close()
    client_w.close()


_guards: dict[NetworkPolicy, NetworkGuard] = {}
_guards_lock = threading.Lock()


def network_guard(policy: NetworkPolicy) -> NetworkGuard:
    """This process's guard for the policy, started on first use."""
    with _guards_lock:
        guard = _guards.get(policy)
        if guard is None:
            guard = _guards[policy] = NetworkGuard(policy).start()
        return guard


def guarded_session(policy: NetworkPolicy, session: requests.Session | None = None) -> requests.Session:
    """A requests Session (a new one, or the given one) whose traffic goes where the network policy says: through
    this process's guard when the policy is enforced, never through the environment's proxies."""
    session = session if session is not None else requests.Session()
    session.trust_env = False
    if policy.enforced:
        proxy = network_guard(policy).url
        session.proxies = {"http": proxy, "https": proxy}
    return session
