from __future__ import annotations

import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from runs.archive import prune_archives
from runs.services import run_reap_expired
from runs.stream import prune_events


class Command(BaseCommand):
    help = (
        "Re-queue runs whose worker died (lease expired), or fail them after RUN_MAX_ATTEMPTS; prune old events and "
        "page archives. `serve` does this itself; run `reap --loop` once per installation when starting daphne and "
        "`work` apart."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--loop", action="store_true", help="Keep reaping every RUN_REAP_INTERVAL_SECONDS.")

    def handle(self, *args, loop: bool, **options) -> None:
        while True:
            counts = run_reap_expired()
            pruned = prune_events()
            archives = prune_archives()
            if not loop:
                self.stdout.write(
                    f"requeued {counts['requeued']}, failed {counts['failed']}, pruned {pruned} events and the page "
                    f"archives of {archives} runs"
                )
                return
            time.sleep(settings.RUN_REAP_INTERVAL_SECONDS)
