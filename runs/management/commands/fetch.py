from __future__ import annotations

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs import services
from runs.jobs import execute_run
from runs.models import Run
from runs.serializers import RunSpecSerializer
from service.errors import flatten_fields


class Command(BaseCommand):
    help = (
        "Fetch a URL in Chromium as a persisted run and print its Markdown. The run executes in this process "
        "(it shows in the history like any other); exit 0 on success, 1 if the run failed, 2 on bad usage."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("url", help="The page to fetch (http or https).")
        content = parser.add_mutually_exclusive_group()
        content.add_argument(
            "--main-content",
            dest="main_content",
            action="store_true",
            default=True,
            help="Only the main content (the default).",
        )
        content.add_argument("--full", dest="main_content", action="store_false", help="The whole page.")
        parser.add_argument(
            "--render",
            choices=["auto", "browser", "http"],
            default="auto",
            help="How to load the page (runs always use the browser for now).",
        )
        parser.add_argument("--profile", help="Start logged in with this stored profile.")
        parser.add_argument(
            "--storage-state",
            dest="storage_state",
            help="Start from a storage-state file inside the data directory (mode 0600).",
        )
        parser.add_argument("--timeout-ms", type=int, default=60_000, help="Give up after this long.")
        parser.add_argument("--out", help="Write the Markdown to this file instead of standard output.")
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print the whole run as JSON.")

    def handle(
        self,
        *args,
        url: str,
        main_content: bool,
        render: str,
        profile: str | None,
        storage_state: str | None,
        timeout_ms: int,
        out: str | None,
        as_json: bool,
        **options,
    ) -> None:
        if profile and storage_state:
            raise CommandError("Give --profile or --storage-state, not both.", returncode=2)
        spec: dict = {
            "kind": "fetch",
            "url": url,
            "options": {"mainContent": main_content, "render": render, "timeoutMs": timeout_ms},
        }
        if profile:
            spec["profile"] = profile
        if storage_state:
            spec["storageStatePath"] = storage_state
        validated = RunSpecSerializer(data=spec)
        if not validated.is_valid():
            problems = "; ".join(f"{k}: {v[0]}" for k, v in flatten_fields(validated.errors).items())
            raise CommandError(problems, returncode=2)
        run = services.run_submit(spec=validated.validated_data, enqueue=False)
        if sys.stderr.isatty():
            self.stderr.write(f"run {run.id}: fetching {url}")
        execute_run(str(run.id))
        run = Run.objects.get(pk=run.pk)
        if as_json:
            self.stdout.write(
                json.dumps(
                    {"id": str(run.id), "status": run.status, "result": run.result, "error": run.error}, indent=2
                )
            )
        elif run.status == Run.Status.SUCCEEDED:
            if out:
                Path(out).write_text(run.result["markdown"])
                self.stderr.write(f"wrote {out} ({len(run.result['markdown'])} characters)")
            else:
                self.stdout.write(run.result["markdown"], ending="")
        if run.status != Run.Status.SUCCEEDED:
            error = run.error or {}
            raise CommandError(f"run {run.id} {run.status}: {error.get('code')}: {error.get('message')}")
