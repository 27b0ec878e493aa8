"""Wake-ups over the channel layer after an event commits, when a shared layer (Redis) is configured.

Without Redis the ASGI process's ticker notices new events by itself (runs/feed.py). Workers run
Playwright's sync API, whose loop makes async_to_sync unusable on their main thread, so wake-ups are sent
from one background thread with its own event loop; requests are coalesced while one is in flight.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from channels.layers import get_channel_layer

log = logging.getLogger(__name__)

GROUP = "run-events"


class Waker:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._scheduled = False

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="event-waker", daemon=True).start()
            return self._loop

    def request(self) -> None:
        with self._lock:
            if self._scheduled:
                return
            self._scheduled = True
        asyncio.run_coroutine_threadsafe(self._send(), self._ensure_loop())

    async def _send(self) -> None:
        with self._lock:
            self._scheduled = False
        try:
            await get_channel_layer().group_send(GROUP, {"type": "events.wake"})
        except Exception:  # the stream still catches up through the ticker; never fail a run over this
            log.warning("could not send an event wake-up over the channel layer", exc_info=True)


waker = Waker()
