from __future__ import annotations

import functools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.archive import prune_archives
from runs.engine.browser import sandbox_state
from runs.services import run_reap_expired
from runs.stream import prune_events
from service.kernel import metrics
from service.processes import stop_when_parent_dies

MANAGE_PY = Path(settings.BASE_DIR) / "manage.py"
PRUNE_INTERVAL_SECONDS = 60.0


# What a client may send on the event stream: it only ever sends its cursor, so a frame or message over 64 KiB is
# refused (the connection dropped) instead of buffered (daphne's default is 1 MiB).
WEBSOCKET_MAX_BYTES = 64 * 1024
DAPHNE_LIMITS = (
    f"--websocket-max-message-size={WEBSOCKET_MAX_BYTES}",
    f"--websocket-max-frame-size={WEBSOCKET_MAX_BYTES}",
)


def listen(host: str, port: int) -> socket.socket:
    """The one listening socket every web process accepts on (bound here, once, so they cannot disagree; the
    kernel hands each connection to one of them). A busy port is reported here, before any child starts."""
    family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    listening = socket.socket(family, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind(address)
    except OSError as error:
        listening.close()
        raise CommandError(f"Cannot listen on {host}:{port}: {error.strerror}.") from None
    listening.listen(1024)
    listening.set_inheritable(True)
    return listening


class Command(BaseCommand):
    help = (
        "Start the service: WEB_PROCESSES daphne processes (API, events, UI) sharing one socket on "
        "SERVICE_HOST:SERVICE_PORT, the django-q2 workers and the run reaper. Ctrl-C or SIGTERM stops them all."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-migrate", action="store_true", help="Do not apply migrations at start.")
        parser.add_argument(
            "--grace", type=float, default=30.0, help="Seconds to let workers finish before they are killed."
        )

    def handle(self, *args, no_migrate: bool, grace: float, **options) -> None:
        if not no_migrate:
            call_command("migrate", interactive=False, verbosity=0)
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        host, port = settings.SERVICE_HOST, str(settings.SERVICE_PORT)
        sandboxed, why = sandbox_state(settings.BROWSER_SANDBOX)
        if settings.BROWSER_SANDBOX == "on" and not sandboxed:
            raise CommandError(f"BROWSER_SANDBOX=on, but Chromium's sandbox is {why}.")
        # Own sessions: a Ctrl-C in the terminal reaches only us, and we stop the children in order. If we are
        # killed outright, they get SIGTERM from the kernel.
        child = functools.partial(
            subprocess.Popen, start_new_session=True, preexec_fn=functools.partial(stop_when_parent_dies, os.getpid())
        )
        listening = listen(host, int(port))
        metrics.start_afresh()
        endpoint = f"fd:fileno={listening.fileno()}:domain={'INET6' if listening.family == socket.AF_INET6 else 'INET'}"
        web = [sys.executable, "-m", "service.web_server", "-e", endpoint, *DAPHNE_LIMITS, "service.asgi:application"]
        processes = settings.WEB_PROCESSES
        children = {
            f"web-{n}": child(web, pass_fds=(listening.fileno(),), env={**os.environ, "WEB_PROCESS": f"web-{n}"})
            for n in range(1, processes + 1)
        }
        children["workers"] = child([sys.executable, str(MANAGE_PY), "work"])
        listening.close()  # the web processes hold it
        self.stdout.write(
            self.style.SUCCESS(
                f"serving on http://{host}:{port} with {processes} web process(es) and {settings.WORKERS} "
                "worker(s); Ctrl-C stops"
            )
        )
        self.stdout.write(f"browser sandbox {why}")
        exit_code = 0
        next_prune = 0.0
        while not stop.wait(settings.RUN_REAP_INTERVAL_SECONDS):
            try:
                run_reap_expired()
                if time.monotonic() >= next_prune:
                    prune_events()
                    prune_archives()
                    next_prune = time.monotonic() + PRUNE_INTERVAL_SECONDS
            except Exception as error:  # the database may be briefly unavailable; try again next tick
                self.stderr.write(f"reaper: {error}")
            dead = [name for name, child in children.items() if child.poll() is not None]
            if dead:
                self.stderr.write(self.style.ERROR(f"{', '.join(dead)} exited; stopping"))
                exit_code = 1
                break
        self._stop(children, grace)
        if exit_code:
            sys.exit(exit_code)

    def _stop(self, children: dict[str, subprocess.Popen], grace: float) -> None:
        """SIGTERM to every child at once; whatever still runs when the one grace period ends is killed."""
        started = time.monotonic()
        deadline = started + grace
        self.stdout.write(f"stopping: running runs have {grace:g}s to finish")
        self.stdout.flush()
        for child in children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for name, child in children.items():
            try:
                child.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.stderr.write(f"{name} did not stop within {grace:g}s; killing it")
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
        self.stdout.write(f"stopped in {time.monotonic() - started:.1f}s")
