"""Webhooks: subscribed through the API (guarded like run URLs), told about runs as they end in deliveries signed
per Standard Webhooks, retried with the same id after a 5xx or a timeout, not after a 400, each attempt listed."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from standardwebhooks.webhooks import Webhook as Verifier

from runs import events, webhooks
from runs.models import Delivery, DeliveryAttempt, Run, Webhook
from runs.stream import prune_events
from tests.webhook_receiver import Receiver

pytestmark = pytest.mark.django_db


def subscribe(api, url: str, events_: list[str], **extra) -> dict:
    response = api.post("/api/webhooks", {"url": url, "events": events_, **extra}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def end_run(status: str = "succeeded", *, query: str | None = None, drift: dict | None = None) -> Run:
    """A run that ends as a worker ends it: finish (or fail), then the one place every ending passes."""
    run = Run.objects.create(kind="extract", url="https://shop.example/p", spec={}, status="running", attempts=1,
                             query=query)  # fmt: skip
    error = {"code": "timeout", "message": "The page did not load in time."} if status == "failed" else None
    assert run.finish(result=None if error else {"price": 89.9}, error=error, drift=drift)
    events.event_run_finished(run)
    return run


def deliver_all() -> list[str]:
    return [webhooks.deliver(str(pk)) for pk in Delivery.objects.filter(status="queued").values_list("pk", flat=True)]


def make_due() -> None:
    """The retry's delay has passed (as if 5 s went by)."""
    Delivery.objects.filter(status="pending").update(next_attempt_at=timezone.now() - timedelta(seconds=1))


def test_subscribe_list_get_and_delete(api, data_dir):
    created = subscribe(api, "https://hooks.example/in", ["run.failed", "run.failed", "query.drifted"], query="price")
    assert created["secret"].startswith("whsec_")
    # The secret is a private file of the data directory, never in the database.
    secret_file = data_dir / "webhooks" / f"{created['id']}.secret"
    assert secret_file.read_text() == created["secret"] and secret_file.stat().st_mode & 0o777 == 0o600
    stored = json.dumps(list(Webhook.objects.values()), default=str) + json.dumps(list(Delivery.objects.values()))
    assert created["secret"] not in stored
    assert created["events"] == ["run.failed", "query.drifted"]
    listed = api.get("/api/webhooks").json()
    assert listed == [{key: value for key, value in created.items() if key != "secret"}]
    assert api.get(f"/api/webhooks/{created['id']}").json() == listed[0]
    assert api.delete(f"/api/webhooks/{created['id']}").status_code == 204
    assert api.get(f"/api/webhooks/{created['id']}").status_code == 404
    assert not secret_file.exists()
    assert api.get("/api/webhooks/nope/deliveries").json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "https://hooks.example/in", "events": ["run.done"]}, "events.0"),
        ({"url": "https://hooks.example/in", "events": []}, "events"),
        ({"url": "ftp://hooks.example/in", "events": ["run.finished"]}, "url"),
        ({"url": "https://hooks.example/in", "events": ["run.finished"], "query": "Not A Name"}, "query"),
        ({"url": "https://hooks.example/in", "events": ["run.finished"], "secret": "mine"}, "secret"),
    ],
)
def test_bad_subscriptions_are_400_and_nothing_is_kept(api, body, field):
    response = api.post("/api/webhooks", body, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]
    assert api.get("/api/webhooks").json() == []


def test_private_addresses_are_refused_with_the_guard_on(api, settings):
    settings.ALLOW_PRIVATE_NETWORKS = False
    for url in ("http://127.0.0.1:8080/hook", "http://10.0.0.7/hook", "http://[::1]/hook"):
        response = api.post("/api/webhooks", {"url": url, "events": ["run.finished"]}, format="json")
        assert response.status_code == 400, url
        assert response.json()["error"]["code"] == "url_not_allowed"
    assert api.get("/api/webhooks").json() == []


def test_the_guard_is_asked_again_at_delivery_time(api, settings):
    # Subscribed while private addresses were allowed (or while the name pointed elsewhere): refused when sending,
    # and not retried.
    with Receiver() as receiver:
        subscribe(api, receiver.url, ["run.finished"])
        settings.ALLOW_PRIVATE_NETWORKS = False
        end_run()
        (outcome,) = deliver_all()
        assert outcome.startswith("failed (url_not_allowed: ")
        assert receiver.received == []
    make_due()
    assert webhooks.sweep() == 0


def test_a_delivery_is_signed_and_carries_the_run(api):
    with Receiver() as receiver:
        hook = subscribe(api, receiver.url, ["run.finished", "run.failed"])
        run = end_run("failed")
        assert deliver_all() == ["delivered (200)", "delivered (200)"]
        received = receiver.wait_for(2)
    verifier = Verifier(hook["secret"])
    for delivery in received:
        verifier.verify(delivery.body, delivery.headers)  # raises if the signature does not match
    payloads = [json.loads(delivery.body) for delivery in received]
    assert sorted(payload["type"] for payload in payloads) == ["run.failed", "run.finished"]
    data = payloads[0]["data"]
    assert data["run"]["id"] == str(run.pk) and data["run"]["status"] == "failed"
    assert data["run"]["error"]["code"] == "timeout" and "result" not in data["run"]
    assert data["link"].endswith(f"/api/runs/{run.pk}")
    # A signature made with another secret does not verify.
    with pytest.raises(Exception, match="signature"):
        Verifier(webhooks.new_secret()).verify(received[0].body, received[0].headers)


def test_a_500_and_a_timeout_are_retried_with_the_same_id(api, settings):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.5
    with Receiver((500, 0), (200, 2.0), (200, 0)) as receiver:
        hook = subscribe(api, receiver.url, ["run.succeeded"])
        end_run("succeeded")
        assert deliver_all() == ["pending (HTTP 500)"]
        delivery = Delivery.objects.get()
        assert 3 <= (delivery.next_attempt_at - timezone.now()).total_seconds() <= 10  # the first retry within 10 s
        assert webhooks.sweep() == 0  # not due yet
        make_due()
        assert webhooks.sweep() == 1
        assert deliver_all()[0].startswith("pending (timeout")
        make_due()
        webhooks.sweep()
        assert deliver_all() == ["delivered (200)"]
        received = receiver.wait_for(3)
    assert len({delivery.headers["webhook-id"] for delivery in received}) == 1
    assert len({delivery.body for delivery in received}) == 1
    attempts = api.get(f"/api/webhooks/{hook['id']}/deliveries").json()
    assert [(a["statusCode"], a["error"][:7], a["deliveryStatus"]) for a in attempts] == [
        (200, "", "delivered"),
        (None, "timeout", "delivered"),
        (500, "HTTP 50", "delivered"),
    ]
    assert attempts[0]["webhookId"] == received[0].headers["webhook-id"]


def test_a_400_is_not_retried(api):
    with Receiver((400, 0)) as receiver:
        subscribe(api, receiver.url, ["run.finished"])
        end_run()
        assert deliver_all() == ["failed (HTTP 400)"]
        make_due()
        assert webhooks.sweep() == 0
        assert len(receiver.wait_for(1)) == 1
    assert Delivery.objects.get().status == "failed"


def test_query_drifted_only_when_the_drift_lists_a_change_and_only_for_its_query(api):
    with Receiver() as receiver:
        subscribe(api, receiver.url, ["query.drifted"], query="price")
        end_run(query="price", drift={"changed": [], "emptied": [], "appeared": []})
        end_run(query="other", drift={"changed": ["price"], "emptied": [], "appeared": []})
        assert Delivery.objects.count() == 0
        changed = end_run(query="price", drift={"changed": ["price"], "emptied": [], "appeared": []})
        assert deliver_all() == ["delivered (200)"]
        (received,) = receiver.wait_for(1)
    payload = json.loads(received.body)
    assert payload["type"] == "query.drifted" and payload["data"]["run"]["id"] == str(changed.pk)
    assert payload["data"]["drift"]["changed"] == ["price"]


def test_a_sending_worker_that_died_gives_the_delivery_back(api):
    with Receiver() as receiver:
        subscribe(api, receiver.url, ["run.finished"])
        end_run()
        # A worker claimed it and died: its lease runs out, the sweep queues it again, another worker sends it.
        Delivery.objects.update(status="sending", lease_expires_at=timezone.now() - timedelta(seconds=1))
        assert webhooks.sweep() == 1
        assert deliver_all() == ["delivered (200)"]
        assert len(receiver.wait_for(1)) == 1


def test_ended_deliveries_go_with_old_events_and_pending_ones_stay(api, settings):
    settings.EVENT_RETENTION_HOURS = 1
    with Receiver((200, 0), (500, 0)) as receiver:
        subscribe(api, receiver.url, ["run.finished"])
        end_run()
        end_run()
        assert sorted(deliver_all()) == ["delivered (200)", "pending (HTTP 500)"]
    Delivery.objects.update(
        finished_at=timezone.now() - timedelta(hours=2), created_at=timezone.now() - timedelta(hours=2)
    )
    prune_events()
    assert list(Delivery.objects.values_list("status", flat=True)) == ["pending"]  # still to be retried
    assert DeliveryAttempt.objects.count() == 1


def test_webhook_on_the_command_line(api, capsys):
    call_command("webhook", "add", "https://hooks.example/in", "--event", "run.failed", "--query", "price")
    said = capsys.readouterr().out.splitlines()
    assert said[0].endswith(": https://hooks.example/in gets run.failed.")
    assert said[1].startswith("Its signing secret (shown this once): whsec_")
    hook_id = said[0].split()[1].rstrip(":")
    call_command("webhook", "list")
    assert capsys.readouterr().out == f"{hook_id}  https://hooks.example/in  run.failed  (query price)\n"
    assert "whsec_" not in json.dumps(api.get("/api/webhooks").json())
    call_command("webhook", "deliveries", hook_id)
    assert capsys.readouterr().out == "No delivery attempts yet.\n"
    call_command("webhook", "delete", hook_id)
    assert api.get("/api/webhooks").json() == []
