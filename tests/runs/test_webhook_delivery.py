"""Webhooks on a live service: a run that ends is delivered through the queue, signed; a worker SIGKILLed while it
sends loses nothing (the delivery is sent again, with the same id, once its lease has run out)."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
from standardwebhooks.webhooks import Webhook as Verifier

from tests.live import LiveService
from tests.webhook_receiver import Receiver

pytestmark = pytest.mark.live


def test_a_run_that_ends_is_delivered_and_a_killed_sender_loses_nothing(tmp_path, site):
    # The first delivery is held by the receiver for 2.5 s (under the 3 s timeout): the worker is killed meanwhile.
    with Receiver((200, 2.5)) as receiver:
        service = LiveService(tmp_path, WORKERS="1", WEBHOOK_TIMEOUT_SECONDS="3", SCHEDULE_CHECK_SECONDS="0.2").start()
        try:
            hook = service.post("/api/webhooks", {"url": receiver.url, "events": ["run.succeeded"]}).json()
            run = service.submit({"kind": "fetch", "url": site.url("/static")})
            first = receiver.wait_for(1, timeout=60)[0]
            worker = service.scalar("select worker from runs_delivery")
            os.kill(int(worker.rsplit(":", 1)[1]), signal.SIGKILL)
            killed_at = time.monotonic()
            again = receiver.wait_for(2, timeout=60)[1]
            # Sent again once the lease (timeout + 5 s) ran out, by the worker the cluster started in its place.
            assert 3 <= again.at - killed_at <= 30
            assert again.headers["webhook-id"] == first.headers["webhook-id"] and again.body == first.body
            Verifier(hook["secret"]).verify(again.body, again.headers)
            payload = json.loads(again.body)
            assert (payload["type"], payload["data"]["run"]["id"]) == ("run.succeeded", run["id"])
            deadline = time.monotonic() + 20
            while service.scalar("select status from runs_delivery") != "delivered":
                assert time.monotonic() < deadline
                time.sleep(0.1)
            attempts = service.get(f"/api/webhooks/{hook['id']}/deliveries").json()
            assert [attempt["statusCode"] for attempt in attempts] == [200]  # the killed attempt left no record
        finally:
            service.stop()
