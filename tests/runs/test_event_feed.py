"""The process's event feed closes the connections whose key was revoked, and only those: a connection that opens
while the feed looks the keys up is not judged against a lookup that never held its key (the CI of stop 37 saw a
resumed connection closed 4401 "revoked" on a valid key, right after the connections before it had closed). And an
event written between a connection's own read of the outbox and the feed's first read reaches it (the CI of stop 62
saw a live view left at "running": its run ended 11 ms after the view connected, the feed's only connection)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest

from runs import feed, services, stream
from service.kernel.auth import hash_key
from service.kernel.keys import ApiKey

pytestmark = pytest.mark.django_db(transaction=True)


class Connection:
    """What the feed needs of a connection: its key's identity, and a way to be told the key was revoked (upon
    which it leaves the feed, as runs.consumers.EventsConsumer does)."""

    def __init__(self, identity: tuple[str, str], process_feed: feed.EventFeed) -> None:
        self.identity = identity
        self.feed = process_feed
        self.revoked_calls = 0
        self.closed = asyncio.Event()

    def revoked(self) -> None:
        self.revoked_calls += 1
        self.feed.remove(self)
        self.closed.set()

    def offer(self, batch) -> None:  # no events are written in these tests
        pass


class ConnectionWhoseCheckLetsAnotherIn(Connection):
    """Reading its identity (when the feed collects the keys to look up) lets a new connection in at the next turn
    of the event loop: while the lookup runs in its database thread, as a WebSocket connecting then would."""

    def __init__(self, identity: tuple[str, str], process_feed: feed.EventFeed, newcomer: Connection) -> None:
        super().__init__(identity, process_feed)
        self._identity = identity
        self._newcomer = newcomer
        self.looked_up = asyncio.Event()

    @property
    def identity(self) -> tuple[str, str]:
        asyncio.get_running_loop().call_soon(self.feed.add, self._newcomer)
        self.looked_up.set()
        return self._identity

    @identity.setter
    def identity(self, value) -> None:
        pass


class Reader(Connection):
    """A connection that reads the outbox as runs.consumers.EventsConsumer does: its cursor is where its own read of
    the outbox stopped; a batch the feed offers that starts at its cursor is taken as it is, and one that starts
    elsewhere has it read the outbox itself from its cursor."""

    def __init__(self, identity: tuple[str, str], process_feed: feed.EventFeed, cursor: int) -> None:
        super().__init__(identity, process_feed)
        self.cursor = cursor
        self.batches: list = []
        self.offered = asyncio.Event()

    def offer(self, batch) -> None:
        self.batches.append(batch)
        self.offered.set()

    def frames(self) -> list[dict]:
        """The frames it would send for the batches it was offered (read in the test's thread, after the feed)."""
        sent = []
        for before, frames, after in self.batches:
            if after <= self.cursor:
                continue
            if before == self.cursor:
                sent += [frame for frame, _ in frames]
                self.cursor = after
                continue
            while (read := stream.read_events(cursor=self.cursor, run_id=None, guard=None))[1] != self.cursor:
                sent += read[0]
                self.cursor = read[1]
        return sent


def identity_of(name: str) -> tuple[tuple[str, str], ApiKey]:
    key, raw = ApiKey.issue(name)
    return (name, hash_key(raw)), key


async def run_feed_until(process_feed: feed.EventFeed, done: asyncio.Event, seconds: float = 10) -> None:
    try:
        await asyncio.wait_for(done.wait(), seconds)
        await asyncio.sleep(0.2)  # the lookup that started then has returned and been acted on
    finally:
        for connection in list(process_feed.consumers):
            process_feed.remove(connection)
        await asyncio.sleep(0.1)


def run_in_a_thread_of_its_own(scenario):
    """asyncio.run in a fresh thread, as an ASGI server's loop runs: the test's own thread may still have the event
    loop of Playwright's sync API (an earlier test's) registered as running."""
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, scenario()).result()


def test_a_connection_that_opens_during_the_key_lookup_is_not_closed_as_revoked(monkeypatch):
    monkeypatch.setattr(feed, "KEY_RECHECK_SECONDS", 0.05)
    first, _ = identity_of("first")
    second, _ = identity_of("second")

    async def scenario() -> Connection:
        process_feed = feed.EventFeed()
        newcomer = Connection(second, process_feed)
        present = ConnectionWhoseCheckLetsAnotherIn(first, process_feed, newcomer)
        process_feed.add(present)
        await run_feed_until(process_feed, present.looked_up)
        return newcomer

    newcomer = run_in_a_thread_of_its_own(scenario)
    assert newcomer.revoked_calls == 0


def test_a_connection_on_a_revoked_key_is_closed_and_one_on_a_valid_key_is_not(monkeypatch):
    monkeypatch.setattr(feed, "KEY_RECHECK_SECONDS", 0.05)
    kept_identity, _ = identity_of("kept")
    revoked_identity, revoked_key = identity_of("revoked")
    revoked_key.revoke()

    async def scenario() -> tuple[Connection, Connection]:
        process_feed = feed.EventFeed()
        kept, revoked = Connection(kept_identity, process_feed), Connection(revoked_identity, process_feed)
        process_feed.add(kept)
        process_feed.add(revoked)
        await run_feed_until(process_feed, revoked.closed)
        return kept, revoked

    kept, revoked = run_in_a_thread_of_its_own(scenario)
    assert (kept.revoked_calls, revoked.revoked_calls) == (0, 1)


def test_an_event_written_after_a_connection_read_the_outbox_and_before_the_feed_started_reaches_it():
    identity, _ = identity_of("reader")
    read_up_to = stream.latest_event_id()  # the connection's own read of the outbox, as it connected
    run = services.run_submit(spec={"kind": "fetch", "url": "https://shop.test/", "options": {}}, enqueue=False)

    async def scenario() -> Reader:
        process_feed = feed.EventFeed()
        reader = Reader(identity, process_feed, read_up_to)
        process_feed.add(reader)  # the feed starts now, after the event
        await run_feed_until(process_feed, reader.offered, seconds=5)
        return reader

    reader = run_in_a_thread_of_its_own(scenario)
    assert [(frame["type"], frame["runId"]) for frame in reader.frames()] == [("run-queued", str(run.pk))]
