"""A client that stops reading is disconnected (4408, with a reason) once the server holds too much for it (more
than EVENTS_MAX_SEND_BUFFER_BYTES unread for 5 s, or EVENTS_MAX_BACKLOG events waiting); a client that reads receives
every event in order meanwhile, stays connected when the stalled one is cut and goes on receiving new events, and
the dropped one resumes by cursor without a gap."""

from __future__ import annotations

import json
import socket
import time
import uuid
from datetime import UTC, datetime

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from runs.consumers import BACKLOG_REASON, SEND_STALL_SECONDS
from tests.live import KEY, LiveService

pytestmark = pytest.mark.live
AUTH = {"Authorization": f"Bearer {KEY}"}
EVENTS = 6000
LATER_EVENTS = 10  # written after the stalled client was cut


def add_step_events(service: LiveService, count: int) -> None:
    """Write step events straight into the outbox, as workers would (one transaction), stamped now: events older than
    EVENT_RETENTION_HOURS are pruned by the service while it runs (a fixed date here made the stream lose them
    mid-test a week later)."""
    run_id = str(uuid.uuid4()) if "DATABASE_URL" in service.env else uuid.uuid4().hex
    at = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S+00")
    service.execute_many(
        "insert into runs_event (run_id, type, payload, at) values (?, 'step', ?, ?)",
        [
            (run_id, json.dumps({"index": n, "action": "navigate", "url": "https://x", "observation": "o" * 2000}), at)
            for n in range(count)
        ],
    )


def drain_stalled(stalled, wait: float = SEND_STALL_SECONDS + 1) -> tuple[list[int], str]:
    """Once the server has given up on it, read what the stalled client was sent: frames, then the close (whose
    reason is returned)."""
    time.sleep(wait)  # by default: it has not read for longer than the server waits
    got: list[int] = []
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            got.append(json.loads(stalled.recv(timeout=30))["eventId"])
    assert closed.value.rcvd is not None, (repr(closed.value), len(got))
    assert closed.value.rcvd.code == 4408
    assert closed.value.rcvd.reason.startswith("too far behind")
    return got, closed.value.rcvd.reason


def stalled_connection(service: LiveService, uri: str):
    """A WebSocket client that reads nothing: a small receive buffer, and max_queue=1 stops the client library
    reading the socket once one frame waits unread."""
    stalled_socket = socket.socket()
    stalled_socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled_socket.connect(("127.0.0.1", service.port))
    return connect(uri, sock=stalled_socket, additional_headers=AUTH, max_queue=1, close_timeout=1)


def test_a_stalled_client_is_dropped_with_a_reason_and_resumes_while_others_stream(tmp_path):
    service = LiveService(tmp_path, EVENTS_MAX_SEND_BUFFER_BYTES="65536").start()
    uri = f"ws://127.0.0.1:{service.port}/api/events"
    try:
        stalled_socket = socket.socket()
        stalled_socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled_socket.connect(("127.0.0.1", service.port))
        # max_queue=1: the client library stops reading the socket once one frame waits unread.
        with (
            connect(uri, sock=stalled_socket, additional_headers=AUTH, max_queue=1, close_timeout=1) as stalled,
            connect(uri, additional_headers=AUTH) as healthy,
        ):
            time.sleep(0.3)
            add_step_events(service, EVENTS)
            received = [json.loads(healthy.recv(timeout=30))["eventId"] for _ in range(EVENTS)]
            assert received == list(range(received[0], received[0] + EVENTS))
            got, _ = drain_stalled(stalled)
            # The stalled client has been cut; the one that reads is still connected and still streams live.
            add_step_events(service, LATER_EVENTS)
            received += [json.loads(healthy.recv(timeout=30))["eventId"] for _ in range(LATER_EVENTS)]
            assert received == list(range(received[0], received[0] + EVENTS + LATER_EVENTS))
        assert 0 < len(got) < EVENTS
        assert got == received[: len(got)]

        with connect(f"{uri}?after={got[-1]}", additional_headers=AUTH) as resumed:
            rest = [json.loads(resumed.recv(timeout=30))["eventId"] for _ in range(len(received) - len(got))]
        assert got + rest == received
    finally:
        service.stop()


def test_a_connection_with_events_max_backlog_events_waiting_is_closed_and_resumes_by_cursor(tmp_path):
    """EVENTS_MAX_BACKLOG=10: as soon as more events wait for a connection whose client stopped reading, it is
    closed, before the send-buffer rule (EVENTS_MAX_SEND_BUFFER_BYTES for SEND_STALL_SECONDS) would apply; the
    reason says which limit it hit."""
    service = LiveService(tmp_path, EVENTS_MAX_BACKLOG="10", EVENTS_MAX_SEND_BUFFER_BYTES="16384").start()
    uri = f"ws://127.0.0.1:{service.port}/api/events"
    try:
        with stalled_connection(service, uri) as stalled:
            time.sleep(0.3)
            add_step_events(service, EVENTS)
            # Read only after the feed has offered the events, and before the send-buffer rule could cut it.
            got, reason = drain_stalled(stalled, wait=SEND_STALL_SECONDS - 1)
        assert reason == BACKLOG_REASON
        assert 0 < len(got) < EVENTS
        with connect(f"{uri}?after={got[-1]}", additional_headers=AUTH) as resumed:
            rest = [json.loads(resumed.recv(timeout=30))["eventId"] for _ in range(EVENTS - len(got))]
        assert got + rest == list(range(got[0], got[0] + EVENTS))
    finally:
        service.stop()
