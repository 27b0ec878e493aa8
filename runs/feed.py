"""One feed per ASGI process: reads new events from the outbox once and offers them to every local consumer of
GET /api/events (runs/consumers.py), and closes the connections whose key no longer opens the API."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Protocol

from channels.db import database_sync_to_async
from channels.layers import InMemoryChannelLayer, get_channel_layer

from runs import stream
from runs.wakeup import GROUP
from service.kernel import metrics
from service.kernel.auth import key_still_valid

log = logging.getLogger(__name__)

TICK_SECONDS = 0.05
GROUP_REFRESH_SECONDS = 600.0
LISTEN_RETRY_SECONDS = 1.0  # after the channel layer failed, before joining the wake-up group again
# Open connections whose key was revoked (or whose bootstrap key changed) are closed within this long.
KEY_RECHECK_SECONDS = 5.0

# A batch of frames read once for every consumer of this process: (cursor before, [(frame, text)], cursor after).
EventBatch = tuple[int, list[tuple[dict, str]], int]


class Connection(Protocol):
    """What the feed needs of a connection (runs.consumers.EventsConsumer): the identity of its key, the id of the
    last event it has read, a batch offered (one that does not start at that id has it read the outbox itself), and
    word that its key was revoked."""

    identity: tuple[str, str] | None
    cursor: int

    def offer(self, batch: EventBatch) -> None: ...

    def revoked(self) -> None: ...


@database_sync_to_async
def _still_valid(identities: set[tuple[str, str]]) -> set[tuple[str, str]]:
    return {identity for identity in identities if key_still_valid(*identity)}


class EventFeed:
    """One per ASGI process: reads new events once and offers them to every local consumer.

    It polls the newest event id about every 50 ms, which is what makes the embedded default live (workers in
    other processes commit to SQLite; the in-memory channel layer cannot carry their wake-ups). With Redis,
    workers' wake-ups arrive on the feed's own channel in the group and poke it at once. A consumer that is caught
    up takes the shared batch; one that is behind (replaying, or just connected) reads the outbox itself.
    """

    def __init__(self) -> None:
        self.consumers: set[Connection] = set()
        self._task: asyncio.Task | None = None
        self._poke = asyncio.Event()

    def add(self, consumer: Connection) -> None:
        self.consumers.add(consumer)
        if self._task is None or self._task.done():
            self._poke = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run())

    def remove(self, consumer: Connection) -> None:
        self.consumers.discard(consumer)

    def poke(self) -> None:
        self._poke.set()

    async def _listen(self) -> None:
        """One channel per process in the wake-up group: a worker's wake-up costs one message per process,
        not one per connection. When the channel layer fails (Redis restarted, the connection cut, a read timed
        out while the loop was busy), it joins again after LISTEN_RETRY_SECONDS; the ticker keeps the stream live
        meanwhile, only slower."""
        layer = get_channel_layer()
        if layer is None or isinstance(layer, InMemoryChannelLayer):
            return  # nothing outside this process can reach an in-memory layer; the ticker covers it
        failing = False  # logged once per outage, not once per retry
        while self.consumers:
            channel = None
            try:
                channel = await layer.new_channel()
                joined = 0.0
                while self.consumers:
                    if time.monotonic() - joined > GROUP_REFRESH_SECONDS:
                        await layer.group_add(GROUP, channel)
                        joined = time.monotonic()
                        if failing:
                            failing = False
                            log.info("event feed has its channel-layer wake-ups again")
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(layer.receive(channel), GROUP_REFRESH_SECONDS)
                        metrics.EVENT_WAKEUPS.inc()
                        self.poke()
            except Exception:
                if not failing:
                    failing = True
                    log.warning(
                        "event feed lost its channel-layer wake-ups (the ticker still polls); joining again every %g s",
                        LISTEN_RETRY_SECONDS,
                        exc_info=True,
                    )
                await asyncio.sleep(LISTEN_RETRY_SECONDS)
            finally:
                if channel is not None:
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
            # Only the connections whose keys were looked at: one that connects during the lookup is checked
            # next time (judged against a set that never held its key, it would be closed as revoked).
            checked = list(self.consumers)
            try:
                valid = await _still_valid({consumer.identity for consumer in checked})
            except Exception:  # the database may be briefly busy; look again next time
                log.exception("event feed could not check the keys of its connections")
                continue
            for consumer in checked:
                if consumer.identity not in valid:
                    consumer.revoked()

    async def _poll(self) -> None:
        latest_id = database_sync_to_async(stream.latest_event_id)
        read = database_sync_to_async(stream.read_events)
        guard = stream.GapGuard() if await database_sync_to_async(stream.needs_gap_guard)() else None
        cursor = await latest_id()
        # The connection that started the feed read the outbox up to its cursor before this: an event committed in
        # between (a run that ended right after its live view connected) is behind the feed and past that read, and
        # reached the client only with the next event written anywhere, if one came (CI, stop 62: a live view left
        # at "running" for good). An empty batch that starts here has every connection behind it read the outbox
        # itself, at its own pace, as one just connected does (the feed reading from their cursors instead would
        # flood a resumed connection from far back past EVENTS_MAX_BACKLOG).
        for consumer in list(self.consumers):
            consumer.offer((cursor, [], cursor))
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


process_feed = EventFeed()
