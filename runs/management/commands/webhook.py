from __future__ import annotations

import json

from django.core.management.base import CommandError, CommandParser

from runs import webhooks
from runs.models import Webhook
from runs.serializers import WEBHOOK_EVENTS, DeliveryAttemptSerializer, WebhookCreatedSerializer, WebhookSerializer
from runs.views import is_uuid
from service.kernel.cli import CliCommand


class Command(CliCommand):
    help = (
        "Webhooks: URLs told about runs as they end, in signed deliveries (Standard Webhooks). Add one (its secret is "
        "printed once), list, delete, and read a webhook's last delivery attempts. Exit 0 on success, 2 on bad usage "
        "or input (an unknown webhook, a URL the network guard refuses)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        add = actions.add_parser("add", help="Subscribe a URL to events; prints the signing secret once.")
        add.add_argument("url", help="Where deliveries are POSTed.")
        add.add_argument(
            "--event",
            dest="events",
            action="append",
            required=True,
            help=f"An event to deliver (repeat for more): {', '.join(WEBHOOK_EVENTS)}.",
        )
        add.add_argument("--query", help="Only runs of this saved query.")
        add.add_argument("--json", action="store_true", dest="as_json", help="Print the webhook as JSON.")
        listing = actions.add_parser("list", help="The webhooks (never their secrets).")
        listing.add_argument("--json", action="store_true", dest="as_json", help="Print JSON.")
        delete = actions.add_parser("delete", help="Delete a webhook; nothing more is delivered to it.")
        delete.add_argument("id", help="The webhook's id.")
        deliveries = actions.add_parser("deliveries", help="A webhook's last 100 delivery attempts, newest first.")
        deliveries.add_argument("id", help="The webhook's id.")
        deliveries.add_argument("--json", action="store_true", dest="as_json", help="Print JSON.")

    def handle(self, *args, action: str, **options) -> None:
        getattr(self, f"_{action}")(**options)

    def _get(self, webhook_id: str) -> Webhook:
        hook = Webhook.objects.filter(pk=webhook_id).first() if is_uuid(webhook_id) else None
        if hook is None:
            raise CommandError(f"There is no webhook {webhook_id}: webhook list shows them.", returncode=2)
        return hook

    def _add(self, *, url: str, events: list[str], query: str | None, as_json: bool, **_) -> None:
        request = {"url": url, "events": events, **({"query": query} if query else {})}
        hook = webhooks.subscribe(request)
        if as_json:
            self.stdout.write(json.dumps(WebhookCreatedSerializer(hook).data, indent=2))
            return
        self.stdout.write(self.style.SUCCESS(f"Webhook {hook.pk}: {hook.url} gets {', '.join(hook.events)}."))
        self.stdout.write(f"Its signing secret (shown this once): {hook.secret}")

    def _list(self, *, as_json: bool, **_) -> None:
        hooks = Webhook.objects.all()
        if as_json:
            self.stdout.write(json.dumps(WebhookSerializer(hooks, many=True).data, indent=2))
            return
        if not hooks:
            self.stdout.write("No webhooks yet: webhook add <url> --event run.finished")
            return
        for hook in hooks:
            only = f"  (query {hook.query})" if hook.query else ""
            self.stdout.write(f"{hook.pk}  {hook.url}  {', '.join(hook.events)}{only}")

    def _delete(self, *, id: str, **_) -> None:
        webhooks.unsubscribe(self._get(id))
        self.stdout.write(self.style.SUCCESS(f"Deleted webhook {id}."))

    def _deliveries(self, *, id: str, as_json: bool, **_) -> None:
        attempts = webhooks.recent_attempts(self._get(id))
        if as_json:
            self.stdout.write(json.dumps(DeliveryAttemptSerializer(attempts, many=True).data, indent=2))
            return
        if not attempts:
            self.stdout.write("No delivery attempts yet.")
            return
        for attempt in attempts:
            answer = str(attempt.status_code) if attempt.status_code else "-"
            self.stdout.write(
                f"{attempt.at:%Y-%m-%d %H:%M:%S}  {attempt.event:<14}  {answer:>3}  {attempt.duration_ms:>6} ms  "
                f"msg_{attempt.delivery_id.hex}  {attempt.error}"
            )
