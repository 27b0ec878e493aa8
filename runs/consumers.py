"""GET /api/events: the live event stream. Consumers authenticate, read the outbox and forward."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import time
import uuid
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.conf import settings

from runs import stream
from runs.wakeup import GROUP
from service.auth import key_credential, key_still_valid, origin_if_foreign, session_credential

log = logging.getLogger(__name__)

TICK_SECONDS = 0.05
GROUP_REFRESH_SECONDS = 600.0
# Open connections whose key was revoked (or whose bootstrap key changed) are closed within this long.
KEY_RECHECK_SECONDS = 5.0

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

# A batch of frames read once for every consumer of this process: (cursor before, [(frame, text)], cursor after).
Batch = tuple[int, list[tuple[dict, str]], int]


class EventFeed:
    """One per ASGI process: reads new events once and offers them to every local consumer.

    It polls the newest event id about every 50 ms, which is what makes the embedded default live (workers in
    other processes commit to SQLite; the in-memory channel layer cannot carry their wake-ups). With Redis,
    workers' wake-ups arrive on the feed's own channel in the group and poke it at once. A consumer that is caught
    up takes the shared batch; one that is behind (replaying, or just connected) reads the outbox itself.
    """

    def __init__(self) -> None:
        self.consumers: set[EventsConsumer] = set()
        self._task: asyncio.Task | None = None
        self._poke = asyncio.Event()

    def add(self, consumer: EventsConsumer) -> None:
        self.consumers.add(consumer)
        if self._task is None or self._task.done():
            self._poke = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run())

    def remove(self, consumer: EventsConsumer) -> None:
        self.consumers.discard(consumer)

    def poke(self) -> None:
        self._poke.set()

    async def _listen(self) -> None:
        """One channel per process in the wake-up group: a worker's wake-up costs one message per process,
        not one per connection."""
        layer = get_channel_layer()
        if layer is None or isinstance(layer, InMemoryChannelLayer):
            return  # nothing outside this process can reach an in-memory layer; the ticker covers it
        channel = await layer.new_channel()
        joined = 0.0
        try:
            while self.consumers:
                if time.monotonic() - joined > GROUP_REFRESH_SECONDS:
                    await layer.group_add(GROUP, channel)
                    joined = time.monotonic()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(layer.receive(channel), GROUP_REFRESH_SECONDS)
                    self.poke()
        except Exception:  # Redis away: the ticker still polls, so the stream stays live, only slower
            log.warning("event feed lost its channel-layer wake-ups", exc_info=True)
        finally:
            with contextlib.suppress(Exception):
                await layer.group_discard(GROUP, channel)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        listener, keys = loop.create_task(self._listen()), loop.create_task(self._recheck_keys())
        try:
            await self._poll()
        finally:
            listener.cancel()
            keys.cancel()

    async def _recheck_keys(self) -> None:
        """Close connections whose key no longer opens the API: one query per distinct key, not per connection."""
        while self.consumers:
            await asyncio.sleep(KEY_RECHECK_SECONDS)
            try:
                valid = await _still_valid({consumer.credential for consumer in self.consumers})
            except Exception:  # the database may be briefly busy; look again next time
                log.exception("event feed could not check the keys of its connections")
                continue
            for consumer in list(self.consumers):
                if consumer.credential not in valid:
                    consumer.revoked()

    async def _poll(self) -> None:
        latest_id = database_sync_to_async(stream.latest_event_id)
        read = database_sync_to_async(stream.read_events)
        guard = stream.GapGuard() if await database_sync_to_async(stream.needs_gap_guard)() else None
        cursor = await latest_id()
        while self.consumers:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._poke.wait(), TICK_SECONDS)
            self._poke.clear()
            try:
                if await latest_id() == cursor:
                    continue
                while True:
                    frames, bound = await read(cursor=cursor, run_id=None, guard=guard)
                    if bound == cursor:
                        break
                    batch = (cursor, [(frame, json.dumps(frame)) for frame in frames], bound)
                    for consumer in list(self.consumers):
                        consumer.offer(batch)
                    cursor = bound
            except Exception:  # the database may be briefly busy; the next tick tries again
                log.exception("event feed could not read the outbox")


feed = EventFeed()


def _daphne_protocol(send):
    """The daphne protocol behind an ASGI send callable, through the middlewares that wrap send (channels'
    session middleware keeps the inner one as `real_send`)."""
    for _ in range(8):
        if isinstance(send, functools.partial):
            return next(iter(send.args), None)
        send = getattr(getattr(send, "__self__", None), "real_send", None)
        if send is None:
            return None
    return None


def unsent_bytes(send) -> int:
    """Bytes the server holds for this connection because the client is not reading them.

    daphne's send never blocks: what a client does not read piles up in Twisted's transport buffer (after the
    kernel's socket buffers are full). daphne hands each application `partial(server.handle_reply, protocol)`,
    so the transport is reachable from the send callable (_daphne_protocol); under another server this reports 0
    and only the inbox limit (EVENTS_MAX_BACKLOG) applies.
    """
    transport = getattr(_daphne_protocol(send), "transport", None)
    if transport is None:
        return 0
    buffered = len(getattr(transport, "dataBuffer", b"")) - getattr(transport, "offset", 0)
    return max(0, buffered) + getattr(transport, "_tempDataLen", 0)


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
        scheme, _, raw = header.partition(" ")
        return key_credential(raw.strip()) if scheme.lower() == "bearer" else None
    if _header(scope, b"origin") is None:
        return None
    return session_credential(scope.get("session"))


@database_sync_to_async
def _still_valid(credentials: set[tuple[str, str]]) -> set[tuple[str, str]]:
    return {credential for credential in credentials if key_still_valid(*credential)}


class EventsConsumer(AsyncWebsocketConsumer):
    """Frames after the client's cursor, in id order, with no gap and no duplicate within a connection."""

    # No channel of its own on the channel layer: wake-ups reach the process's EventFeed, once per process. (With
    # channels_redis, a per-connection channel also meant a Redis read per connection, whose timeout could kill
    # the connection while it was busy replaying.)
    channel_layer_alias = None

    async def connect(self) -> None:
        self.credential: tuple[str, str] | None = None
        self.cursor = 0
        self.run_id: str | None = None
        self._inbox: asyncio.Queue[Batch | None] = asyncio.Queue()
        self._sender: asyncio.Task | None = None
        self._guard: stream.GapGuard | None = None
        self._dropped = False
        self._sent = 0
        self._waiting = 0  # events offered to this connection that its sender has not taken yet
        # The handshake completes only for a client that may read the stream: others get an HTTP answer (403 for
        # a session used from a foreign origin, 401 without a valid key or session) and no connection.
        foreign = _foreign_origin(self.scope) if _header(self.scope, b"authorization") is None else None
        if foreign is not None:
            await self.refuse(403, f"forbidden: a session does not work from {foreign}")
            return
        self.credential = await _authenticate(self.scope)
        if self.credential is None:
            await self.refuse(401, "unauthenticated")
            return
        # "From now" means from before the handshake completes: a client that submits right after connecting
        # must see its run's first event.
        now = await database_sync_to_async(stream.latest_event_id)()
        await self.accept()
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
        feed.add(self)
        self._sender = asyncio.get_running_loop().create_task(self._send_loop())
        self._inbox.put_nowait(None)  # replay from the cursor first

    async def disconnect(self, code: int) -> None:
        feed.remove(self)
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender

    async def refuse(self, status: int, reason: str) -> None:
        """Answer the handshake with an HTTP error: daphne answers a close before accept with 403 "Access denied",
        so the status and reason are given to its handshake directly when that is the server."""
        protocol = _daphne_protocol(self.base_send)
        handshake = getattr(protocol, "handshake_deferred", None)
        if handshake is not None and not handshake.called:
            from autobahn.websocket.types import ConnectionDeny

            handshake.errback(ConnectionDeny(code=status, reason=reason))
        else:
            await self.close()

    async def close_with_reason(self, code: int, reason: str) -> None:
        """Close with a reason the client can read: daphne drops the reason of an ASGI close, so it is given to
        daphne's protocol directly when that is the server."""
        protocol = _daphne_protocol(self.base_send)
        if protocol is not None and hasattr(protocol, "sendClose"):
            protocol.sendClose(code=code, reason=reason)
        else:
            await self.close(code=code, reason=reason)

    def offer(self, batch: Batch) -> None:
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
        feed.remove(self)
        protocol = _daphne_protocol(self.base_send)
        if hasattr(protocol, "closeHandshakeTimeout"):
            # The close frame queues behind what the client has not read yet; give it time to read that far
            # (autobahn's default of 1 s would cut the connection before a slow reader sees the reason).
            protocol.closeHandshakeTimeout = CLOSE_DRAIN_SECONDS
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
        if unsent_bytes(self.base_send) <= limit:
            return
        deadline = time.monotonic() + SEND_STALL_SECONDS
        while unsent_bytes(self.base_send) > limit:
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
