"""GET /api/events: the live event stream. Consumers authenticate, read the outbox and forward."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from runs import stream
from runs.feed import TICK_SECONDS, EventBatch, process_feed
from service.kernel import daphne, metrics
from service.kernel.auth import bearer_key, key_identity, origin_if_foreign, session_identity

log = logging.getLogger(__name__)


CLOSE_BAD_REQUEST = 4400
CLOSE_UNAUTHENTICATED = 4401
CLOSE_TOO_FAR_BEHIND = 4408
CLOSE_DRAIN_SECONDS = 30
# A client whose unread data stays above EVENTS_MAX_SEND_BUFFER_BYTES this long is too far behind.
SEND_STALL_SECONDS = 5.0
SEND_POLL_SECONDS = 0.01
RESUME = "reconnect with ?after=<the last eventId you received>"
BACKLOG_REASON = f"too far behind: EVENTS_MAX_BACKLOG events were waiting; {RESUME}"
SEND_BUFFER_REASON = f"too far behind: EVENTS_MAX_SEND_BUFFER_BYTES unread for {SEND_STALL_SECONDS:g} s; {RESUME}"
YIELD_EVERY_FRAMES = 50


def _header(scope: dict, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return None


def _foreign_origin(scope: dict) -> str | None:
    """The Origin of a browser page that is neither this service's own (scheme, host and port) nor one of
    CSRF_TRUSTED_ORIGINS: the same rule as for the HTTP API's sessions. (The handshake's origin check only matches
    host names, so a page on another port of the same host would pass it.)"""
    own = f"{'https' if scope.get('scheme') == 'wss' else 'http'}://{_header(scope, b'host')}"
    return origin_if_foreign(_header(scope, b"origin"), own)


@database_sync_to_async
def _authenticate(scope: dict) -> tuple[str, str] | None:
    """The (key name, key hash) of a header key (scripts) or of a signed-in playground session (browsers, whose
    Origin was validated); None when neither is valid."""
    header = _header(scope, b"authorization")
    if header:
        raw = bearer_key(header)
        return key_identity(raw) if raw is not None else None
    if _header(scope, b"origin") is None:
        return None
    return session_identity(scope.get("session"))


class EventsConsumer(AsyncWebsocketConsumer):
    """Frames after the client's cursor, in id order, with no gap and no duplicate within a connection."""

    # No channel of its own on the channel layer: wake-ups reach the process's EventFeed, once per process. (With
    # channels_redis, a per-connection channel also meant a Redis read per connection, whose timeout could kill
    # the connection while it was busy replaying.)
    channel_layer_alias = None

    async def connect(self) -> None:
        self.identity: tuple[str, str] | None = None
        self.cursor = 0
        self.run_id: str | None = None
        self._inbox: asyncio.Queue[EventBatch | None] = asyncio.Queue()
        self._sender: asyncio.Task | None = None
        self._guard: stream.GapGuard | None = None
        self._dropped = False
        self._counted = False  # in the open-connections gauge
        self._sent = 0
        self._waiting = 0  # events offered to this connection that its sender has not taken yet
        # The handshake completes only for a client that may read the stream: others get an HTTP answer (403 for
        # a session used from a foreign origin, 401 without a valid key or session) and no connection.
        foreign = _foreign_origin(self.scope) if _header(self.scope, b"authorization") is None else None
        if foreign is not None:
            await self.refuse(403, f"forbidden: a session does not work from {foreign}")
            return
        self.identity = await _authenticate(self.scope)
        if self.identity is None:
            await self.refuse(401, "unauthenticated")
            return
        # "From now" means from before the handshake completes: a client that submits right after connecting
        # must see its run's first event.
        now = await database_sync_to_async(stream.latest_event_id)()
        await self.accept()
        self._counted = True
        metrics.WEBSOCKETS.inc()
        query = parse_qs(self.scope.get("query_string", b"").decode())
        try:
            after = query.get("after", [None])[0]
            cursor = int(after) if after is not None else None
            if cursor is not None and cursor < 0:
                raise ValueError
            run_id = query.get("runId", [None])[0]
            self.run_id = str(uuid.UUID(run_id)) if run_id else None
        except ValueError:
            await self.close_with_reason(CLOSE_BAD_REQUEST, "after must be an event id and runId a run id")
            return
        if await database_sync_to_async(stream.needs_gap_guard)():
            self._guard = stream.GapGuard()
        if cursor is None:
            self.cursor = now
        else:
            self.cursor = cursor
            oldest = await database_sync_to_async(stream.oldest_event_id)()
            if oldest is not None and cursor + 1 < oldest:
                await self.send(text_data=json.dumps({"type": "resync", "oldestEventId": oldest}))
        process_feed.add(self)
        self._sender = asyncio.get_running_loop().create_task(self._send_loop())
        self._inbox.put_nowait(None)  # replay from the cursor first

    async def disconnect(self, code: int) -> None:
        process_feed.remove(self)
        if self._counted:
            self._counted = False
            metrics.WEBSOCKETS.dec()
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender

    async def refuse(self, status: int, reason: str) -> None:
        """Answer the handshake with an HTTP error: daphne answers a close before accept with 403 "Access denied",
        so the status and reason are given to its handshake directly when that is the server."""
        if not daphne.deny_handshake(self.base_send, status, reason):
            await self.close()

    async def close_with_reason(self, code: int, reason: str) -> None:
        """Close with a reason the client can read: daphne drops the reason of an ASGI close, so it is given to
        daphne's protocol directly when that is the server."""
        if not daphne.close_with_reason(self.base_send, code, reason):
            await self.close(code=code, reason=reason)

    def offer(self, batch: EventBatch) -> None:
        if self._waiting >= settings.EVENTS_MAX_BACKLOG:
            # EVENTS_MAX_BACKLOG events already wait for this connection (its client reads too slowly, or not at
            # all): close it rather than hold more. Counted in events, as the README says, not in batches.
            self._stop_with(CLOSE_TOO_FAR_BEHIND, BACKLOG_REASON)
            return
        self._waiting += len(batch[1])
        self._inbox.put_nowait(batch)

    def revoked(self) -> None:
        """Its key was revoked: stop sending and close as an unauthenticated connect would have been."""
        self._stop_with(CLOSE_UNAUTHENTICATED, "unauthenticated: the key was revoked")

    def _drop(self) -> None:
        """Disconnect a client that left too much unread; it resumes from the last eventId it received."""
        self._stop_with(CLOSE_TOO_FAR_BEHIND, SEND_BUFFER_REASON)

    def _stop_with(self, code: int, reason: str) -> None:
        if self._dropped:
            return
        self._dropped = True
        process_feed.remove(self)
        # The close frame queues behind what the client has not read yet; give it time to read that far
        # (autobahn's default of 1 s would cut the connection before a slow reader sees the reason).
        daphne.allow_close_handshake(self.base_send, CLOSE_DRAIN_SECONDS)
        asyncio.get_running_loop().create_task(self.close_with_reason(code, reason))
        if self._sender is not None and self._sender is not asyncio.current_task():
            self._sender.cancel()

    async def _forward(self, text: str) -> None:
        """Send one frame; past the buffer limit, pause this connection's sender until the client has read
        enough, and drop the client if it has not within SEND_STALL_SECONDS (other connections never wait)."""
        await self.send(text_data=text)
        self._sent += 1
        if self._sent % YIELD_EVERY_FRAMES == 0:
            await asyncio.sleep(0)  # daphne's send never yields: let other connections (and the reactor) run
        limit = settings.EVENTS_MAX_SEND_BUFFER_BYTES
        if daphne.unsent_bytes(self.base_send) <= limit:
            return
        deadline = time.monotonic() + SEND_STALL_SECONDS
        while daphne.unsent_bytes(self.base_send) > limit:
            if time.monotonic() > deadline:
                self._drop()
                raise asyncio.CancelledError  # stop this connection's sender; the close frame is on its way
            await asyncio.sleep(SEND_POLL_SECONDS)

    async def receive(self, text_data=None, bytes_data=None) -> None:
        """The stream is one-way; anything a client sends is ignored."""

    async def _send_loop(self) -> None:
        while True:
            batch = await self._inbox.get()
            if batch is not None:
                before, frames, after = batch
                self._waiting -= len(frames)
                if after <= self.cursor:
                    continue
                if before == self.cursor:
                    for frame, text in frames:
                        if self.run_id is None or frame["runId"] == self.run_id:
                            await self._forward(text)
                    self.cursor = after
                    continue
            await self._catch_up()

    async def _catch_up(self) -> None:
        """Read the outbox from our own cursor until it has nothing newer."""
        read = database_sync_to_async(stream.read_events)
        while True:
            frames, cursor = await read(cursor=self.cursor, run_id=self.run_id, guard=self._guard)
            if cursor == self.cursor:
                if self._guard is not None and self._guard.first_seen:
                    await asyncio.sleep(TICK_SECONDS)  # a hole in the ids (PostgreSQL): look again shortly
                    continue
                return
            for frame in frames:
                await self._forward(json.dumps(frame))
            self.cursor = cursor
