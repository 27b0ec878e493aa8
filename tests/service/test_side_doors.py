"""Load side doors (issue 18): a live service (daphne, as `serve` starts it) refuses request bodies over
API_MAX_BODY_BYTES with 413 on every HTTP route (the MCP endpoint included, which Django's parsers never see), and
closes an event-stream connection whose client sends a frame over 64 KiB."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest
import requests
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.live import KEY, LiveService

LIMIT = 4096


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    live = LiveService(tmp_path_factory.mktemp("side-doors"), API_MAX_BODY_BYTES=str(LIMIT), WORKERS="1").start()
    yield live
    live.stop()


TOO_LARGE = {"error": {"code": "too_large", "message": f"The request body is larger than the limit of {LIMIT} bytes."}}


@pytest.mark.live
@pytest.mark.parametrize("path", ["/api/mcp", "/api/runs"])
def test_a_body_over_the_limit_is_refused_on_every_route(service, path):
    body = b'{"jsonrpc": "2.0", "method": "ping", "id": 1, "pad": "' + b"x" * (LIMIT * 4) + b'"}'
    response = requests.post(
        service.base_url + path,
        data=body,
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json", "Accept": "application/json"},
        timeout=30,
    )
    assert (response.status_code, response.json()) == (413, TOO_LARGE)


def response_head(raw: socket.socket) -> bytes:
    """What the server sent until the end of its response's headers, or until it closed the connection."""
    answer = b""
    while b"\r\n\r\n" not in answer:
        data = raw.recv(65536)
        if not data:
            break
        answer += data
    return answer


@pytest.mark.live
def test_a_chunked_body_over_the_limit_is_refused(service):
    chunk = b"x" * 1024
    with socket.create_connection(("127.0.0.1", service.port), timeout=30) as raw:
        raw.sendall(
            f"POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {KEY}\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        )
        for _ in range(LIMIT // len(chunk) * 3):
            raw.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        raw.sendall(b"0\r\n\r\n")
        answer = response_head(raw)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def web_process(service: LiveService) -> int:
    """The pid of the web server `serve` started (the process serving service.asgi:application)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (proc / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if parent == service.process.pid and b"service.asgi:application" in command:
            return int(proc.name)
    raise AssertionError("no web server process under serve")


def largest_deleted_file(pid: int) -> int:
    """The size of the largest unlinked regular file the process holds open (where Twisted keeps a request body
    past 100 KB, a temporary file)."""
    largest = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(fd).endswith("(deleted)"):
                largest = max(largest, fd.stat().st_size)
        except OSError:
            continue
    return largest


@pytest.mark.live
def test_a_body_over_the_limit_is_never_stored_while_it_arrives(service):
    declared, sent_first = 2000 * LIMIT, 500 * LIMIT  # 8 MB announced, 2 MB of it sent before looking
    pid = web_process(service)
    with socket.create_connection(("127.0.0.1", service.port), timeout=30) as raw:
        raw.sendall(
            f"POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {KEY}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {declared}\r\n\r\n".encode()
        )
        raw.sendall(b"x" * sent_first)
        held, deadline = 0, time.monotonic() + 2
        while time.monotonic() < deadline:  # the server has had time to read what was sent
            held = max(held, largest_deleted_file(pid))
            time.sleep(0.05)
        raw.sendall(b"x" * (declared - sent_first))
        answer = response_head(raw)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert held <= LIMIT, f"the web process held {held} bytes of the body in a file"


@pytest.mark.live
def test_an_event_stream_frame_over_64_kib_closes_the_connection(service):
    with connect(service.events_url, additional_headers={"Authorization": f"Bearer {KEY}"}) as ws:
        ws.send("x" * 100)  # small frames are fine (and ignored)
        ws.send("x" * (64 * 1024 + 1))
        with pytest.raises(ConnectionClosed) as closed:
            for _ in range(100):
                ws.recv(timeout=10)
    # daphne (autobahn) drops the connection, or closes it with 1009 (message too big); under the old 1 MiB limit the
    # frame was taken and the connection stayed open (recv timed out instead).
    assert closed.value.rcvd is None or closed.value.rcvd.code == 1009


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    live = LiveService(tmp_path_factory.mktemp("mcp-rate"), API_RATE_LIMIT="3", WORKERS="1").start()
    yield live
    live.stop()


@pytest.mark.live
def test_mcp_spends_the_keys_api_rate_limit(limited):
    headers = {"Authorization": f"Bearer {KEY}", "Accept": "application/json, text/event-stream"}
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    mcp = limited.base_url + "/api/mcp"
    assert [requests.post(mcp, json=listing, headers=headers, timeout=10).status_code for _ in range(3)] == [200] * 3
    over = requests.post(mcp, json=listing, headers=headers, timeout=10)
    assert over.status_code == 429
    assert over.json()["error"]["code"] == "rate_limited"
    assert 0 < int(over.headers["Retry-After"]) <= 60
    # One budget per key: the HTTP API is refused too.
    api = requests.get(limited.base_url + "/api/runs", headers={"Authorization": f"Bearer {KEY}"}, timeout=10)
    assert api.status_code == 429
