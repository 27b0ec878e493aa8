from __future__ import annotations

import multiprocessing
import signal

from django.core.management.base import BaseCommand
from django_q.cluster import Cluster

from runs import jobs, queue


class Command(BaseCommand):
    help = (
        "Start the run workers (a django-q2 cluster of WORKERS processes). SIGTERM or Ctrl-C drains them: running "
        "runs finish, runs already handed to a worker but not started go back on the queue for the next start. "
        "At start, tasks that an earlier cluster took but never finished are made deliverable again. While it runs, "
        "due schedules of saved queries are looked for every SCHEDULE_CHECK_SECONDS."
    )

    def handle(self, *args, **options) -> None:
        queue.release_taken_tasks()
        # Made before the cluster forks, so its sentinel and every worker (also those it recycles) share it.
        jobs.DRAINING = multiprocessing.get_context("fork").Event()
        cluster = Cluster()  # installs its own SIGTERM/SIGINT handlers, which stop the cluster

        def drain(signum, frame) -> None:
            jobs.DRAINING.set()
            cluster.sig_handler(signum, frame)

        signal.signal(signal.SIGTERM, drain)
        signal.signal(signal.SIGINT, drain)
        cluster.start()
        # This process only waits for the cluster: it looks for due schedules meanwhile.
        queue.run_scheduler(keep_going=lambda: cluster.sentinel.is_alive() and not jobs.DRAINING.is_set())
