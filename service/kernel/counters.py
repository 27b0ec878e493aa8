"""Counters that every process of one installation shares, for limits that must hold across web processes.

A counter counts hits in a fixed window that starts with its first hit: `hit` adds one atomically and answers the
count so far in this window and the seconds until it ends. Where they live:
- with REDIS_URL, in Redis (one MULTI: SET NX EX starts the window, INCR counts, PTTL tells what is left);
- otherwise in one SQLite file in the data directory, which every process on the machine opens (one UPSERT ...
  RETURNING, under SQLite's write lock; not the service's database, whose writers must not queue behind it).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from django.conf import settings

_SCHEMA = "CREATE TABLE IF NOT EXISTS counters (key TEXT PRIMARY KEY, started REAL NOT NULL, n INTEGER NOT NULL)"
# Both CASEs read the row as it was (SQL evaluates every SET against the old row): a window that has ended starts
# again at this hit.
_HIT = """
INSERT INTO counters (key, started, n) VALUES (:key, :now, 1)
ON CONFLICT (key) DO UPDATE SET
    n = CASE WHEN started <= :now - :window THEN 1 ELSE n + 1 END,
    started = CASE WHEN started <= :now - :window THEN :now ELSE started END
RETURNING n, started
"""
# Rows of windows that ended this long ago are deleted now and then (windows are at most this long).
_FORGET_AFTER_SECONDS = 86400.0
_FORGET_EVERY_HITS = 1000

_local = threading.local()
_redis_clients: dict[str, object] = {}
_redis_lock = threading.Lock()


def hit(key: str, window_seconds: int) -> tuple[int, float]:
    """One more hit on key: (hits in the current window, this one included; seconds until that window ends)."""
    if settings.REDIS_URL:
        return _redis_hit(settings.REDIS_URL, key, window_seconds)
    return _sqlite_hit(Path(settings.DATA_DIR) / "counters.sqlite3", key, window_seconds)


def _redis_hit(url: str, key: str, window_seconds: int) -> tuple[int, float]:
    with _redis_lock:
        client = _redis_clients.get(url)
        if client is None:
            import redis  # channels-redis's dependency; only needed with REDIS_URL

            client = _redis_clients[url] = redis.Redis.from_url(url)
    name = f"service:counter:{key}"
    pipe = client.pipeline(transaction=True)
    pipe.set(name, 0, ex=window_seconds, nx=True)
    pipe.incr(name)
    pipe.pttl(name)
    _, count, left_ms = pipe.execute()
    return int(count), max(0.0, left_ms / 1000)


def _connection(path: Path) -> sqlite3.Connection:
    connections = getattr(_local, "connections", None)
    if connections is None:
        connections = _local.connections = {}
    connection = connections.get(path)
    if connection is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(path, timeout=10.0, isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=OFF")  # counters are not worth an fsync; a crash loses a minute's
        connection.execute(_SCHEMA)
        connections[path] = connection
        _local.hits = 0
    return connection


def _sqlite_hit(path: Path, key: str, window_seconds: int) -> tuple[int, float]:
    connection = _connection(path)
    now = time.time()
    count, started = connection.execute(_HIT, {"key": key, "now": now, "window": window_seconds}).fetchone()
    _local.hits += 1
    if _local.hits % _FORGET_EVERY_HITS == 0:
        connection.execute("DELETE FROM counters WHERE started < ?", (now - _FORGET_AFTER_SECONDS,))
    return int(count), max(0.0, started + window_seconds - now)
