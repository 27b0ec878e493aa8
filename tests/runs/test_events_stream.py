"""GET /api/events over a real daphne and a real WebSocket client, with real worker processes.

Runs twice: on the embedded default (SQLite, in-memory channel layer, ticker wake-ups), and on the machine's
PostgreSQL with Redis as the channel layer.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest
import requests
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from tests.live import (
    KEY,
    REDIS_URL,
    ROOT,
    SHORT_LEASE_SECONDS,
    LiveService,
    ProbeSite,
    ScratchPostgres,
    browser_sign_in,
    postgres_available,
    redis_available,
)

pytestmark = pytest.mark.live
AUTH = {"Authorization": f"Bearer {KEY}"}
BACKENDS = ["embedded", "postgres-redis"]

# README: open connections on a revoked key are "closed (4401) within 5 s" of the revocation.
REVOKED_CLOSE_SECONDS = 5
# Counted from when `apikey revoke` has returned (its change is committed): one key check (a database query) and
# the close frame's way to the client, on a loaded 2-core machine.
REVOKED_CLOSE_MARGIN_SECONDS = 2


@contextlib.contextmanager
def backend_service(backend: str, data_dir, **options) -> Iterator[LiveService]:
    if backend == "embedded":
        live = LiveService(data_dir, **options).start()
        try:
            yield live
        finally:
            live.stop()
        return
    if not (postgres_available() and redis_available()):
        pytest.skip("PostgreSQL on 127.0.0.1:5432 and Redis on 127.0.0.1:6379 are needed for this variant")
    with ScratchPostgres() as database:
        live = LiveService(data_dir, DATABASE_URL=database.url, REDIS_URL=REDIS_URL, **options).start()
        try:
            yield live
        finally:
            live.stop()


@pytest.fixture(scope="module", params=BACKENDS)
def service(request, tmp_path_factory):
    with backend_service(request.param, tmp_path_factory.mktemp(request.param)) as live:
        yield live


@pytest.fixture(params=BACKENDS)
def short_lease_service(request, tmp_path):
    """For the test that kills a worker: a lease short enough to wait out (the other tests keep the production one),
    and one worker, which the cluster must replace."""
    with backend_service(request.param, tmp_path, lease_seconds=SHORT_LEASE_SECONDS, WORKERS="1") as live:
        yield live


def frames_until(ws, done, timeout: float = 60) -> list[dict]:
    frames: list[dict] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            frame = json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic())))
        except TimeoutError:
            break
        frames.append(frame)
        if done(frame):
            return frames
    raise AssertionError(f"stream ended early: {frames}")


def finished(run_id: str):
    return lambda frame: frame["type"] == "run-finished" and frame["runId"] == run_id


def test_frames_of_a_fetch_run_arrive_in_order(service, site):
    with connect(service.events_url, additional_headers=AUTH) as ws:
        run = service.submit({"kind": "fetch", "url": site.url("/static")})
        frames = [f for f in frames_until(ws, finished(run["id"])) if f["runId"] == run["id"]]
    assert [f["type"] for f in frames] == ["run-queued", "run-started", "step", "screenshot", "step", "run-finished"]
    ids = [f["eventId"] for f in frames]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    queued, started, navigate, screenshot, snapshot, done = frames
    assert queued["kind"] == "fetch" and started["attempt"] == 1
    assert (navigate["index"], navigate["action"], navigate["truncated"]) == (0, "navigate", False)
    assert screenshot["url"] == f"/api/runs/{run['id']}/steps/0/screenshot"
    assert service.get(screenshot["url"]).content[:3] == b"\xff\xd8\xff"
    assert snapshot["action"] == "snapshot" and done["status"] == "succeeded"
    detail = service.get(f"/api/runs/{run['id']}").json()
    assert snapshot["observation"] == detail["steps"][1]["observation"]


def test_long_observation_is_cut_in_the_frame_and_complete_in_the_detail(service, site):
    with connect(service.events_url, additional_headers=AUTH) as ws:
        run = service.submit({"kind": "fetch", "url": site.url("/long")})
        frames = frames_until(ws, finished(run["id"]))
    snapshot = next(f for f in frames if f["type"] == "step" and f["action"] == "snapshot")
    full = service.get(f"/api/runs/{run['id']}").json()["steps"][1]["observation"]
    assert len(full) > 10_000
    assert snapshot["truncated"] is True
    assert snapshot["observation"] == full[:2000]


def test_a_killed_worker_gives_two_run_started_frames_for_one_run(short_lease_service):
    service = short_lease_service
    with ProbeSite() as probe, connect(service.events_url, additional_headers=AUTH) as ws:
        # The first load of the page hangs, so the run surely runs when its worker is killed; the retry is quick.
        run = service.submit({"kind": "fetch", "url": probe.url("/hang-once/killed")})
        probe.wait_until_requested("/hang-once/killed")
        os.kill(service.worker_pid(run["id"]), signal.SIGKILL)
        frames = [f for f in frames_until(ws, finished(run["id"])) if f["runId"] == run["id"]]
    assert [(f["type"], f.get("attempt")) for f in frames] == [
        ("run-queued", None),
        ("run-started", 1),
        ("run-queued", None),  # the reaper put it back on the queue
        ("run-started", 2),
        ("step", None),
        ("screenshot", None),
        ("step", None),
        ("run-finished", None),
    ]
    assert frames[-1]["status"] == "succeeded"


def test_reconnecting_with_after_replays_exactly_the_missed_events(service, site):
    with connect(service.events_url, additional_headers=AUTH) as ws:
        run = service.submit({"kind": "fetch", "url": site.url("/static")})
        queued = frames_until(ws, lambda f: f["type"] == "run-queued" and f["runId"] == run["id"])[-1]
    service.wait(run["id"])  # everything else happens while we are away
    other = service.submit({"kind": "fetch", "url": site.url("/page/1")})
    service.wait(other["id"])
    url = f"{service.events_url}?after={queued['eventId']}&runId={run['id']}"
    with connect(url, additional_headers=AUTH) as ws:
        missed = frames_until(ws, finished(run["id"]))
        with pytest.raises(TimeoutError):
            ws.recv(timeout=0.5)  # nothing more for this run
    assert [f["type"] for f in missed] == ["run-started", "step", "screenshot", "step", "run-finished"]
    assert all(f["runId"] == run["id"] and f["eventId"] > queued["eventId"] for f in missed)
    # Without the filter the same cursor replays the other run too, still in order and without duplicates.
    with connect(f"{service.events_url}?after={queued['eventId']}", additional_headers=AUTH) as ws:
        everything = frames_until(ws, finished(other["id"]))
    ids = [f["eventId"] for f in everything]
    assert ids == sorted(set(ids))
    assert {f["runId"] for f in everything} == {run["id"], other["id"]}


def refused_handshake(service, headers: dict, origin: str | None = None) -> tuple[int, str]:
    """(HTTP status, reason) of a WebSocket handshake the service refused: the key is checked before the
    connection is accepted."""
    with pytest.raises(InvalidStatus) as refused:
        connect(service.events_url, additional_headers=headers, origin=origin)
    return refused.value.response.status_code, refused.value.response.reason_phrase


def test_unauthenticated_and_wrong_key_are_refused_at_the_handshake_with_401(service):
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        assert refused_handshake(service, headers) == (401, "unauthenticated")


def test_a_foreign_origin_is_refused(service):
    with pytest.raises(InvalidStatus) as refused:
        connect(service.events_url, additional_headers=AUTH, origin="http://evil.example")
    assert refused.value.response.status_code == 403
    with connect(service.events_url, additional_headers=AUTH, origin=f"http://127.0.0.1:{service.port}") as ws:
        run_id = service.submit({"kind": "fetch", "url": "http://127.0.0.1:9/"})["id"]
        assert frames_until(ws, lambda f: f["runId"] == run_id)[-1]["type"] == "run-queued"


def test_a_bad_cursor_is_closed_with_4400(service):
    with (
        connect(f"{service.events_url}?after=abc", additional_headers=AUTH) as ws,
        pytest.raises(ConnectionClosed) as closed,
    ):
        ws.recv(timeout=5)
    assert closed.value.rcvd.code == 4400
    assert closed.value.rcvd.reason == "after must be an event id and runId a run id"


def test_a_cursor_older_than_the_kept_events_gets_resync_first(service, site):
    run = service.submit({"kind": "fetch", "url": site.url("/static")})
    service.wait(run["id"])
    env = {**service.env, "EVENT_RETENTION_HOURS": "0"}
    subprocess.run([sys.executable, "manage.py", "reap"], cwd=ROOT, env=env, check=True, capture_output=True)
    fresh = service.submit({"kind": "fetch", "url": site.url("/static")})
    with connect(f"{service.events_url}?after=0", additional_headers=AUTH) as ws:
        first = json.loads(ws.recv(timeout=5))
        rest = frames_until(ws, finished(fresh["id"]))
    assert first["type"] == "resync"
    assert first["oldestEventId"] == rest[0]["eventId"]
    assert {f["runId"] for f in rest} == {fresh["id"]}


def signed_in_session(service: LiveService, key: str = KEY) -> str:
    """The session cookie the playground gets from POST /api/session."""
    browser = requests.Session()
    response = browser_sign_in(service.base_url, key, browser)
    assert response.json()["signedIn"] is True
    return browser.cookies["sessionid"]


def apikey(service: LiveService, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", "apikey", *args],
        cwd=ROOT,
        env=service.env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def closed_before(ws, deadline: float):
    """The close a connection gets before deadline (time.monotonic()); frames before it are read and dropped."""
    with pytest.raises(ConnectionClosed) as closed:
        while time.monotonic() < deadline:
            with contextlib.suppress(TimeoutError):
                ws.recv(timeout=0.5)
    return closed.value.rcvd


def test_a_revoked_key_and_its_session_are_closed_with_4401(service):
    raw = apikey(service, "create", "revoked-ws")
    bearer = {"Authorization": f"Bearer {raw}"}
    cookie = {"Cookie": f"sessionid={signed_in_session(service, raw)}"}
    bootstrap = {"Authorization": f"Bearer {KEY}"}
    origin = f"http://127.0.0.1:{service.port}"
    with contextlib.ExitStack() as stack:
        sockets = [
            stack.enter_context(connect(service.events_url, additional_headers=headers, origin=origin))
            for headers in (bearer, cookie, bootstrap)
        ]
        run_id = service.submit({"kind": "fetch", "url": "http://127.0.0.1:9/"})["id"]
        for ws in sockets:
            assert frames_until(ws, lambda f: f["runId"] == run_id)[-1]["type"] == "run-queued"

        apikey(service, "revoke", "revoked-ws")
        deadline = time.monotonic() + REVOKED_CLOSE_SECONDS + REVOKED_CLOSE_MARGIN_SECONDS
        # Connections already open on the revoked key are closed in time; the others stay open.
        for ws in sockets[:2]:
            close = closed_before(ws, deadline)
            assert (close.code, close.reason) == (4401, "unauthenticated: the key was revoked")
        run_id = service.submit({"kind": "fetch", "url": "http://127.0.0.1:9/"})["id"]
        assert frames_until(sockets[2], lambda f: f["runId"] == run_id)[-1]["type"] == "run-queued"
    # New connections with it are refused at the handshake.
    for headers in (bearer, cookie):
        assert refused_handshake(service, headers, origin) == (401, "unauthenticated")


def test_a_browser_session_cookie_works_only_with_our_origin(service):
    cookie = {"Cookie": f"sessionid={signed_in_session(service)}"}
    origin = f"http://127.0.0.1:{service.port}"
    with connect(service.events_url, additional_headers=cookie, origin=origin) as ws:
        run_id = service.submit({"kind": "fetch", "url": "http://127.0.0.1:9/"})["id"]
        assert frames_until(ws, lambda f: f["runId"] == run_id)[-1]["type"] == "run-queued"
    # The same cookie without an Origin (not a browser) is not enough.
    assert refused_handshake(service, cookie) == (401, "unauthenticated")


def _add_events(database_url: str, count: int, *, rolled_back: bool = False) -> None:
    """count step events written as a worker writes them, in one transaction; rolled back (a hole in the ids)."""
    import psycopg

    with psycopg.connect(database_url) as db:
        db.cursor().executemany(
            "insert into runs_event (run_id, type, payload, at) values (%s, 'step', %s, now())",
            [
                (str(uuid.uuid4()), json.dumps({"index": n, "action": "navigate", "url": "https://x"}))
                for n in range(count)
            ],
        )
        if rolled_back:
            db.rollback()


@pytest.mark.skipif(not postgres_available(), reason="needs PostgreSQL on :5432")
def test_a_client_that_replayed_across_a_hole_in_the_ids_streams_on_without_being_cut(tmp_path):
    """PostgreSQL leaves a hole in the ids where an insert was rolled back; a replay waits at it a moment, then goes
    on. Once past it, the connection takes the live batches again: it is not held in its catch-up, its batches
    piling up unread until EVENTS_MAX_BACKLOG closes it as too far behind (it did, after the first hole)."""
    with ScratchPostgres() as database:
        live = LiveService(tmp_path, DATABASE_URL=database.url, EVENTS_MAX_BACKLOG="50").start()
        try:
            _add_events(database.url, 5)
            _add_events(database.url, 1, rolled_back=True)
            _add_events(database.url, 5)
            with connect(f"ws://127.0.0.1:{live.port}/api/events?after=0", additional_headers=AUTH) as ws:
                replayed = [json.loads(ws.recv(timeout=30))["eventId"] for _ in range(10)]
                assert replayed == [1, 2, 3, 4, 5, 7, 8, 9, 10, 11]
                for _ in range(6):  # 120 live events, more than EVENTS_MAX_BACKLOG, in batches as runs write them
                    _add_events(database.url, 20)
                    time.sleep(0.2)
                streamed = [json.loads(ws.recv(timeout=30))["eventId"] for _ in range(120)]
            assert streamed == list(range(12, 132))
        finally:
            live.stop()
