"""GET /api/events: the live event stream. The consumer only authenticates, reads the outbox and forwards."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from runs import stream
from runs.wakeup import GROUP
from service.auth import authenticate_key

log = logging.getLogger(__name__)

TICK_SECONDS = 0.05

CLOSE_BAD_REQUEST = 4400
CLOSE_UNAUTHENTICATED = 4401


class Ticker:
    """One per ASGI process: polls the newest event id and wakes local consumers when it changes.

    This is what makes the embedded default live: workers in other processes commit Event rows to SQLite and
    the in-memory channel layer cannot carry their wake-ups. With Redis, workers also wake consumers directly.
    """

    def __init__(self) -> None:
        self.consumers: set[EventsConsumer] = set()
        self._task: asyncio.Task | None = None
        self._latest = 0

    def add(self, consumer: EventsConsumer) -> None:
        self.consumers.add(consumer)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def remove(self, consumer: EventsConsumer) -> None:
        self.consumers.discard(consumer)

    async def _run(self) -> None:
        read_latest = database_sync_to_async(stream.latest_event_id)
        while self.consumers:
            try:
                latest = await read_latest()
            except Exception:  # the database may be briefly busy; try again next tick
                log.exception("event ticker could not read the newest event id")
                latest = self._latest
            if latest != self._latest:
                self._latest = latest
                for consumer in list(self.consumers):
                    consumer.wake()
            await asyncio.sleep(TICK_SECONDS)


ticker = Ticker()


def _header(scope: dict, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return None


@database_sync_to_async
def _authenticate(scope: dict) -> bool:
    """A header key (scripts), or a signed-in playground session (browsers, whose Origin was validated)."""
    header = _header(scope, b"authorization")
    if header:
        scheme, _, raw = header.partition(" ")
        return scheme.lower() == "bearer" and authenticate_key(raw.strip()) is not None
    session = scope.get("session")
    has_origin = _header(scope, b"origin") is not None
    return bool(has_origin and session is not None and session.get("api_key_name"))


class EventsConsumer(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        query = parse_qs(self.scope.get("query_string", b"").decode())
        self.cursor = 0
        self.run_id: str | None = None
        self._wake = asyncio.Event()
        self._sender: asyncio.Task | None = None
        self._guard = None
        await self.accept()
        if not await _authenticate(self.scope):
            await self.close(code=CLOSE_UNAUTHENTICATED, reason="unauthenticated")
            return
        try:
            after = query.get("after", [None])[0]
            self.cursor = int(after) if after is not None else None
            if self.cursor is not None and self.cursor < 0:
                raise ValueError
            run_id = query.get("runId", [None])[0]
            self.run_id = str(uuid.UUID(run_id)) if run_id else None
        except ValueError:
            await self.close(code=CLOSE_BAD_REQUEST, reason="after must be an event id, runId a run id")
            return
        if self.channel_layer is not None:
            await self.channel_layer.group_add(GROUP, self.channel_name)
        self._guard = stream.GapGuard() if await database_sync_to_async(stream.needs_gap_guard)() else None
        if self.cursor is None:
            # No cursor: start from now.
            self.cursor = await database_sync_to_async(stream.latest_event_id)()
        else:
            oldest = await database_sync_to_async(stream.oldest_event_id)()
            if oldest is not None and self.cursor + 1 < oldest:
                await self.send_json({"type": "resync", "oldestEventId": oldest})
        ticker.add(self)
        self._sender = asyncio.get_running_loop().create_task(self._send_loop())
        self.wake()

    async def disconnect(self, code: int) -> None:
        ticker.remove(self)
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
        if self.channel_layer is not None:
            await self.channel_layer.group_discard(GROUP, self.channel_name)

    def wake(self) -> None:
        self._wake.set()

    async def events_wake(self, message: dict) -> None:
        """A wake-up from the channel layer (workers publish these when Redis is configured)."""
        self.wake()

    async def receive(self, text_data=None, bytes_data=None) -> None:
        """The stream is one-way; anything a client sends is ignored."""

    async def send_json(self, frame: dict) -> None:
        await self.send(text_data=json.dumps(frame))

    async def _send_loop(self) -> None:
        """Drain the outbox from our cursor on every wake-up; one task per connection, so a slow client
        only ever waits on itself."""
        read = database_sync_to_async(stream.read_events)
        while True:
            await self._wake.wait()
            self._wake.clear()
            while True:
                frames, cursor = await read(cursor=self.cursor, run_id=self.run_id, guard=self._guard)
                if cursor == self.cursor:
                    if self._guard is not None and self._guard.first_seen:
                        # Waiting on a hole in the ids (PostgreSQL): look again shortly.
                        await asyncio.sleep(TICK_SECONDS)
                        self.wake()
                    break
                for frame in frames:
                    await self.send_json(frame)
                self.cursor = cursor
