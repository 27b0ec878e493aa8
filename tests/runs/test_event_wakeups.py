"""With Redis, the event feed of a web process is woken over the channel layer when events commit; when its
connection to Redis fails (Redis restarted, the connection killed), it joins the wake-up group again and is woken
again, instead of living on its 50 ms ticker from then on."""

from __future__ import annotations

import asyncio
import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
from channels_redis.core import RedisChannelLayer
from websockets.sync.client import connect

from runs.wakeup import GROUP
from tests.live import KEY, LiveService, redis_available

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(not redis_available(), reason="needs Redis on :6379"),
]
AUTH = {"Authorization": f"Bearer {KEY}"}
# A Redis database of its own (the other tests use 5 and 7): its clients are this service's alone, and only they are
# cut, whatever else runs beside.
REDIS_DB = 9
REDIS_URL = f"redis://127.0.0.1:6379/{REDIS_DB}"
_WAKEUPS = re.compile(r"^service_event_wakeups_total (\S+)$", re.MULTILINE)


def wakeups(service: LiveService) -> float:
    found = _WAKEUPS.search(service.get("/api/metrics").text)
    return float(found[1]) if found else 0.0


def send_wakeup() -> None:
    """A wake-up to the group, as a worker sends one after a commit: from a thread of its own, with its own event loop
    and layer (the test process's main thread may have a running loop already: Playwright's)."""

    def send() -> None:
        asyncio.run(RedisChannelLayer(hosts=[REDIS_URL]).group_send(GROUP, {"type": "events.wake"}))

    with ThreadPoolExecutor(1) as pool:
        pool.submit(send).result(timeout=10)


def woken(service: LiveService, before: float, deadline_seconds: float = 30) -> bool:
    """Send wake-ups until the service counts one more than before."""
    deadline = time.monotonic() + deadline_seconds
    while time.monotonic() < deadline:
        send_wakeup()
        if wakeups(service) > before:
            return True
        time.sleep(0.5)
    return False


def cut_connections() -> int:
    """Close every connection to REDIS_URL's database but this one (as a Redis restart would); how many."""
    client = redis.Redis.from_url(REDIS_URL)
    mine = client.client_id()
    ids = [c["id"] for c in client.client_list() if int(c["db"]) == REDIS_DB and c["id"] != str(mine)]
    for client_id in ids:
        client.client_kill_filter(_id=client_id)
    return len(ids)


def test_the_event_feed_is_woken_over_redis_again_after_its_connection_was_killed(tmp_path):
    service = LiveService(tmp_path, REDIS_URL=REDIS_URL).start()
    try:
        with connect(f"ws://127.0.0.1:{service.port}/api/events", additional_headers=AUTH):
            assert woken(service, 0.0)
            assert cut_connections() >= 1
            assert woken(service, wakeups(service))
    finally:
        service.stop()
