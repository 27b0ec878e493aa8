"""Webhooks: runs that end, told to a URL in signed deliveries (the Standard Webhooks specification).

- Events: run.finished (every run that ends), run.succeeded, run.failed, query.drifted (a saved query's replay whose
  drift lists a change). A webhook may name a saved query: then only its replays count.
- `run_ended` (called where every run that ends passes, runs/events.py) writes one Delivery per matching webhook in
  the same transaction as the run's end, and queues its first attempt after the commit: nothing is sent inside a
  request or a worker's run.
- `deliver` (a django-q2 task) takes the delivery with a lease, POSTs the body with the headers webhook-id (the same
  on every attempt), webhook-timestamp and webhook-signature (v1, HMAC-SHA256 by the standardwebhooks package),
  through the network guard as runs are, and records the attempt. 2xx: delivered. A 4xx other than 408 and 429, or
  a refused address: failed. Otherwise (5xx, 408, 429, timeout, connection error) it is tried again after a delay
  that grows from 5 s to an hour, for 24 hours.
- `sweep` (`work`'s loop, with the scheduler) queues the retries that are due, and gives back deliveries whose
  worker died while sending (its lease ran out): at least once, never lost.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import secrets
import socket
import time
from datetime import timedelta
from pathlib import Path

import requests
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_q.tasks import async_task
from standardwebhooks.webhooks import Webhook as Signer

from profiles.store import ensure_private_dir, write_private_file
from runs.engine.netguard import REFUSED_HEADER, guarded_session
from runs.engine.netpolicy import Refused
from runs.models import Delivery, DeliveryAttempt, Run, Webhook
from runs.resources import network_policy
from runs.serializers import RunSummarySerializer, WebhookCreateSerializer
from service.kernel.errors import ServiceError

log = logging.getLogger(__name__)

JOB = "runs.webhooks.deliver"
GIVE_UP_AFTER = timedelta(hours=24)
# A sending worker holds its delivery this long past the request's own timeout; then the sweep gives it back.
LEASE_MARGIN_SECONDS = 5
# A queued delivery whose task has not started after this long is queued again (its task was lost).
REQUEUE_AFTER = timedelta(minutes=10)
ATTEMPTS_LISTED = 100
USER_AGENT = "web-data-service-webhooks/1"


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def _secret_path(webhook_id) -> Path:
    return Path(settings.DATA_DIR) / "webhooks" / f"{webhook_id}.secret"


def read_secret(webhook_id) -> str:
    """The webhook's signing secret, from its private file (never the database: secrets stay out of it)."""
    fd = os.open(_secret_path(webhook_id), os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        return handle.read().decode()


def unsubscribe(webhook: Webhook) -> None:
    """The webhook goes, with its deliveries and its secret."""
    secret = _secret_path(webhook.pk)
    webhook.delete()
    secret.unlink(missing_ok=True)


def subscribe(request: object) -> Webhook:
    """A new webhook from POST /api/webhooks' body (or `webhook add`), its URL checked by the network guard now (and
    again at every delivery: a name may come to resolve elsewhere). Its secret is written to a private file (0600)
    and set on the returned object as `secret`, for the answer that shows it once."""
    body = WebhookCreateSerializer(data=request)
    body.is_valid(raise_exception=True)
    data = body.validated_data
    try:
        network_policy().check_url(data["url"])
    except Refused as refused:
        raise ServiceError("url_not_allowed", f"url: {refused}", fields={"url": [str(refused)]}) from None
    hook = Webhook(url=data["url"], events=data["events"], query=data.get("query"))
    secret = new_secret()
    ensure_private_dir(_secret_path(hook.pk).parent)
    write_private_file(_secret_path(hook.pk), secret.encode())
    hook.save()
    hook.secret = secret
    return hook


def recent_attempts(webhook: Webhook) -> list[DeliveryAttempt]:
    return list(webhook.attempts.select_related("delivery").order_by("-at", "-id")[:ATTEMPTS_LISTED])


def retry_delay(attempts: int) -> timedelta:
    """After the n-th failed attempt: 5 s, 20 s, 80 s, 320 s, 1280 s, then every hour."""
    return timedelta(seconds=min(3600, 5 * 4 ** max(0, attempts - 1)))


def events_of(run: Run) -> list[str]:
    found = ["run.finished"]
    if run.status == Run.Status.SUCCEEDED:
        found.append("run.succeeded")
    if run.status == Run.Status.FAILED:
        found.append("run.failed")
    if run.query and run.drift and any(run.drift.get(part) for part in ("changed", "emptied", "appeared")):
        found.append("query.drifted")
    return found


def run_link(run_id) -> str:
    base = settings.SERVICE_PUBLIC_URL or f"http://{settings.SERVICE_HOST}:{settings.SERVICE_PORT}"
    return f"{base.rstrip('/')}/api/runs/{run_id}"


def run_ended(run: Run) -> list[Delivery]:
    """A Delivery for every webhook that wants one of this run's events, in the caller's transaction; each first
    attempt is queued after the commit."""
    happened = events_of(run)
    hooks = [
        hook
        for hook in Webhook.objects.all()
        if (hook.query is None or hook.query == run.query) and set(hook.events) & set(happened)
    ]
    if not hooks:
        return []
    summary = RunSummarySerializer(Run.objects.summaries().get(pk=run.pk)).data
    now = timezone.now()
    deliveries = []
    for hook in hooks:
        for event in (event for event in happened if event in hook.events):
            payload = {
                "type": event,
                "timestamp": summary["finishedAt"],
                "data": {"run": summary, "drift": run.drift, "link": run_link(run.pk)},
            }
            body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
            deliveries.append(Delivery(webhook=hook, event=event, run_id=run.pk, body=body, queued_at=now))
    Delivery.objects.bulk_create(deliveries)
    ids = [str(delivery.pk) for delivery in deliveries]
    transaction.on_commit(lambda: [async_task(JOB, delivery_id) for delivery_id in ids])
    return deliveries


def _claim(delivery_id: str) -> Delivery | None:
    lease = timezone.now() + timedelta(seconds=settings.WEBHOOK_TIMEOUT_SECONDS + LEASE_MARGIN_SECONDS)
    taken = Delivery.objects.filter(pk=delivery_id, status=Delivery.Status.QUEUED).update(
        status=Delivery.Status.SENDING, lease_expires_at=lease, worker=f"{socket.gethostname()}:{os.getpid()}"
    )
    return Delivery.objects.select_related("webhook").get(pk=delivery_id) if taken else None


def headers_for(delivery: Delivery, body: str) -> dict[str, str]:
    message_id = f"msg_{delivery.pk.hex}"
    now = timezone.now()
    signature = Signer(read_secret(delivery.webhook_id)).sign(message_id, now, body)
    return {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": message_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature,
    }


def _send(delivery: Delivery) -> tuple[int | None, str]:
    """(status code or None, error) of one POST through the network guard."""
    try:
        headers = headers_for(delivery, delivery.body)
    except FileNotFoundError:
        return None, "secret_missing: the webhook's secret file is gone from the data directory; add it again"
    session = guarded_session(network_policy())
    try:
        response = session.post(
            delivery.webhook.url,
            data=delivery.body.encode(),
            headers=headers,
            timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
            allow_redirects=False,
        )
    except requests.Timeout:
        return None, f"timeout: no answer within WEBHOOK_TIMEOUT_SECONDS ({settings.WEBHOOK_TIMEOUT_SECONDS:g} s)"
    except requests.RequestException as error:
        return None, f"connection_error: {type(error).__name__}"
    finally:
        session.close()
    refused = response.headers.get(REFUSED_HEADER)
    if refused:
        return None, f"url_not_allowed: {response.text[:300]}"
    return response.status_code, "" if response.ok else f"HTTP {response.status_code}"


def deliver(delivery_id: str) -> str:
    """One attempt of one delivery (the queue's task). Returns its outcome."""
    delivery = _claim(delivery_id)
    if delivery is None:
        return "taken"  # another task has it, or it is done
    started = time.monotonic()
    status_code, error = _send(delivery)
    took = int((time.monotonic() - started) * 1000)
    now = timezone.now()
    attempts = delivery.attempts + 1
    DeliveryAttempt.objects.create(
        delivery=delivery, webhook=delivery.webhook, event=delivery.event, status_code=status_code, duration_ms=took,
        error=error,
    )  # fmt: skip
    if status_code is not None and 200 <= status_code < 300:
        outcome = Delivery.Status.DELIVERED
    elif (
        error.startswith("url_not_allowed")
        or (status_code is not None and 400 <= status_code < 500 and status_code not in (408, 429))
        or now - delivery.created_at >= GIVE_UP_AFTER
    ):
        outcome = Delivery.Status.FAILED
    else:
        outcome = Delivery.Status.PENDING
    changes = {"status": outcome, "attempts": attempts, "lease_expires_at": None}
    if outcome == Delivery.Status.PENDING:
        changes["next_attempt_at"] = now + retry_delay(attempts)
    else:
        changes["finished_at"] = now
    Delivery.objects.filter(pk=delivery.pk, status=Delivery.Status.SENDING).update(**changes)
    if outcome != Delivery.Status.DELIVERED:
        log.info("webhook %s: %s of run %s, attempt %d: %s", delivery.webhook_id, delivery.event, delivery.run_id,
                 attempts, error or status_code)  # fmt: skip
    return f"{outcome} ({error or status_code})"


def sweep() -> int:
    """Queue the deliveries whose next attempt is due, and give back those whose worker died while sending (or whose
    task never started). Returns how many were queued."""
    now = timezone.now()
    lost = Delivery.objects.filter(status=Delivery.Status.SENDING, lease_expires_at__lt=now)
    for delivery in lost:
        if Delivery.objects.filter(pk=delivery.pk, status=Delivery.Status.SENDING, lease_expires_at__lt=now).update(
            status=Delivery.Status.PENDING, next_attempt_at=now, lease_expires_at=None
        ):
            log.warning("webhook delivery %s: its worker stopped while sending; it is tried again", delivery.pk)
    Delivery.objects.filter(status=Delivery.Status.QUEUED, queued_at__lt=now - REQUEUE_AFTER).update(
        status=Delivery.Status.PENDING, next_attempt_at=now
    )
    queued = 0
    for delivery_id in Delivery.objects.filter(status=Delivery.Status.PENDING, next_attempt_at__lte=now).values_list(
        "pk", flat=True
    )[:500]:
        if Delivery.objects.filter(pk=delivery_id, status=Delivery.Status.PENDING).update(
            status=Delivery.Status.QUEUED, queued_at=now
        ):
            async_task(JOB, str(delivery_id))
            queued += 1
    return queued
