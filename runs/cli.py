"""The run commands' side of the command line (fetch, extract, agent, search, runs, query): the options every run
command shares, validating a spec typed as options, executing a run here or handing it to the workers, and following
it on the terminal as it happens (a line per step, a spinner while waiting). The layer under every command (exit
codes, argument types, terminal-safe text) is service/kernel/cli.py.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import signal
import threading
import time
from collections.abc import Callable
from typing import TextIO

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Count

from runs import services
from runs.models import CrawlFrontier, Event, Run
from runs.serializers import RunDetailSerializer
from runs.stream import GapGuard, needs_gap_guard, read_events
from service.kernel.cli import CliCommand, first_line, positive_int, printable
from service.kernel.errors import ServiceError

POLL_SECONDS = 0.1
# Silent (not a terminal, --quiet, --json), a follower only waits for the run to end: it reads no events, and looks
# less often (a crawl's events are many, and reading them every POLL_SECONDS took a few % of the crawl's CPU).
SILENT_POLL_SECONDS = 0.25
# A run still queued after this long usually means no workers are running.
QUEUED_HINT_SECONDS = 15
SPINNER = "|/-\\"
PROGRESS_WIDTH = 24  # characters of a crawl's progress bar
PROGRESS_SECONDS = 0.5

# API field names as the options that carry them, so a message points at what the user typed.
OPTION_NAMES = {
    "url": "<url>",
    "schema": "--schema",
    "instruction": "--instruction",
    "goal": "--goal",
    "cred": "--cred",
    "saveProfile": "--save-profile",
    "overwriteProfile": "--overwrite-profile",
    "profile": "--profile",
    "storageStatePath": "--storage-state",
    "options.maxSteps": "--max-steps",
    "options.timeoutMs": "--timeout-ms",
    "options.render": "--render",
    "crawl.maxPages": "--max-pages",
    "crawl.maxDepth": "--max-depth",
    "crawl.include": "--include",
    "crawl.exclude": "--exclude",
    "crawl.scope": "--scope",
    "crawl.sitemap": "--sitemap",
    "crawl.delayMs": "--delay-ms",
    "crawl.perHostConcurrency": "--per-host-concurrency",
    "crawl.render": "--render",
}


def step_line(step: dict) -> str:
    """One step as the commands print it (step dicts and step frames share these keys)."""
    line = f"  #{step['index']:<3} {step['action']:<12} {step['url']}  {first_line(step['observation'])}".rstrip()
    return printable(line)


def error_text(error: dict | None) -> str:
    error = error or {}
    return f"{error.get('code', 'error')}: {error.get('message', 'no message')}"


def drift_line(drift: dict | None) -> str | None:
    """What changed since the previous successful replay of the same saved query, if anything did."""
    if not drift:
        return None
    parts = [f"{key} {', '.join(drift[key])}" for key in ("changed", "emptied", "appeared") if drift.get(key)]
    return f"drift since run {drift.get('comparedWith')}: {'; '.join(parts)}" if parts else None


class RunCommand(CliCommand):
    """A command that takes a run spec as options: validation messages name those options."""

    option_names = OPTION_NAMES
    follower: RunFollower

    def run_spec(self, spec: dict, options: dict) -> Run | None:
        """execute() with the run options add_run_options gave; self.follower prints progress, here and after."""
        self.follower = progress(self, as_json=options["as_json"], quiet=options["quiet"])
        return execute(
            self,
            spec,
            queue=options["queue"],
            wait=options["wait"],
            as_json=options["as_json"],
            quiet=options["quiet"],
            follower=self.follower,
        )


def crawl_progress(run: Run, waited: float) -> str | None:
    """A crawl's progress bar: pages done of those found so far (done, running, queued), the rate since it
    started, the pages that failed. None before the crawl has a frontier."""
    state = CrawlFrontier.objects.filter(run=run).values_list("state", flat=True).first()
    if state is None:
        return None
    by_status = dict(Run.objects.filter(parent=run).values_list("status").annotate(count=Count("id")))
    final = (Run.Status.SUCCEEDED, Run.Status.FAILED, Run.Status.CANCELLED)
    done = sum(by_status.get(status, 0) for status in final)
    # The frontier as last saved (at most a second old): what is done and what waits (in flight included).
    found = max(len(state.get("done", {})) + len(state.get("queue", [])), done, 1)
    filled = round(PROGRESS_WIDTH * min(done / found, 1))
    bar = "#" * filled + "-" * (PROGRESS_WIDTH - filled)
    rate = done / waited if waited > 0 else 0.0
    failed = by_status.get(Run.Status.FAILED, 0)
    return f"[{bar}] {done}/{found} pages  {rate:.1f} pages/s  {failed} failed  {waited:.0f} s"


class RunFollower:
    """Prints a run's events from the outbox as they are written (the frames of /api/events), until it is final.

    Progress goes to `progress` (standard error), so standard output keeps only the result; it is silent when
    that is not a terminal, and shows a spinner with the elapsed time while nothing happens.
    """

    def __init__(self, progress: TextIO, *, enabled: bool):
        self.progress = progress
        self.enabled = enabled
        self.tty = enabled and progress.isatty()
        self._spinner = itertools.cycle(SPINNER)
        self._spinning = False
        self._progress: str | None = None  # a crawl's progress bar, read at most every PROGRESS_SECONDS
        self._progress_at = -PROGRESS_SECONDS

    def say(self, line: str) -> None:
        if not self.enabled:
            return
        self._clear_spinner()
        self.progress.write(printable(line) + "\n")
        self.progress.flush()

    def _spin(self, run: Run, waited: float) -> None:
        if self.tty:
            line = None
            if run.kind == Run.Kind.CRAWL:
                if waited - self._progress_at >= PROGRESS_SECONDS:
                    self._progress_at, self._progress = waited, crawl_progress(run, waited)
                line = self._progress
            # A progress bar may come out shorter than the one before it: erase what is left of that.
            shown = f"{line}\033[K" if line else f"{run.status} {waited:5.1f} s"
            self.progress.write(f"\r{next(self._spinner)} {shown}")
            self.progress.flush()
            self._spinning = True

    def _clear_spinner(self) -> None:
        if self._spinning:
            self.progress.write("\r\033[K")
            self._spinning = False

    def show(self, frame: dict) -> None:
        if frame["type"] == "step":
            self.say(step_line(frame))
        elif frame["type"] == "run-started":
            again = " (its previous worker stopped)" if frame.get("attempt", 1) > 1 else ""
            self.say(f"run {frame['runId']} started, attempt {frame.get('attempt', 1)}{again}")
        elif frame["type"] == "run-queued":
            self.say(f"run {frame['runId']} queued again: its worker stopped")

    def follow(self, run: Run, *, timeout: float | None = None, hint_workers: bool = True) -> Run:
        """Show the run's frames until it is final; the finished run, with its steps."""
        guard = GapGuard() if needs_gap_guard() else None
        # Start after the run's own run-queued event: nothing of this run comes before it.
        cursor = Event.objects.filter(run_id=run.pk).order_by("id").values_list("id", flat=True).first() or 0
        started = time.monotonic()
        hinted = not hint_workers
        while True:
            frames, cursor = read_events(cursor=cursor, run_id=str(run.pk), guard=guard) if self.enabled else ([], 0)
            for frame in frames:
                self.show(frame)
            if any(frame["type"] == "run-finished" for frame in frames):
                break
            run.refresh_from_db(fields=["status"])
            if run.is_final:  # it finished after our last read: show the rest once more
                if self.enabled:
                    self._drain(run, cursor)
                break
            waited = time.monotonic() - started
            if timeout is not None and waited >= timeout:
                self._clear_spinner()
                raise CommandError(
                    f"run {run.id} is still {run.status} after {timeout:g} s; it goes on: runs show {run.id}",
                    returncode=1,
                )
            if not hinted and run.status == Run.Status.QUEUED and waited >= QUEUED_HINT_SECONDS:
                hinted = True
                self.say(
                    f"run {run.id} is still queued after {QUEUED_HINT_SECONDS} s: is `manage.py serve` running on "
                    "this data directory?"
                )
            self._spin(run, waited)
            time.sleep(POLL_SECONDS if self.enabled else SILENT_POLL_SECONDS)
        self._clear_spinner()
        return Run.objects.prefetch_related("steps").get(pk=run.pk)

    def _drain(self, run: Run, cursor: int) -> None:
        """This run's remaining frames; read_events scans a bounded number of ids per call."""
        while True:
            frames, after = read_events(cursor=cursor, run_id=str(run.pk), guard=None)
            for frame in frames:
                self.show(frame)
            if after == cursor:
                return
            cursor = after


def _cancel_on_interrupt(run: Run) -> Callable[[], None]:
    """Make Ctrl-C cancel the run: a thread of its own writes the cancel (never from inside the signal handler,
    which may interrupt an ORM call); the engine notices at its next checkpoint, within about a second.
    Returns the function that restores the previous handler."""
    interrupted = threading.Event()

    def cancel() -> None:
        with contextlib.suppress(ServiceError):  # it finished meanwhile
            services.run_cancel(run=Run.objects.get(pk=run.pk))

    def on_interrupt(signum, frame) -> None:
        if interrupted.is_set():
            raise KeyboardInterrupt  # a second Ctrl-C: stop now
        interrupted.set()
        threading.Thread(target=cancel, name="cancel", daemon=True).start()

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.signal(signal.SIGINT, on_interrupt)
    return lambda: signal.signal(signal.SIGINT, previous)


def run_and_follow(spec: dict, follower: RunFollower, *, queue: bool, wait: bool) -> Run:
    """Execute the run here (the default) or hand it to the workers (queue), following it unless queue
    without wait. Ctrl-C cancels the run and waits for it to stop."""
    if queue:
        run = services.run_submit(spec=spec)
        follower.say(f"run {run.id} queued for the workers ({run.kind} {run.url})")
        if not wait:
            return Run.objects.get(pk=run.pk)
        restore = _cancel_on_interrupt(run)
        try:
            return follower.follow(run, hint_workers=True)
        finally:
            restore()
    from runs.jobs import execute_run  # the engine (Playwright) only where a run executes here

    run = services.run_submit(spec=spec, enqueue=False)
    follower.say(f"run {run.id}: {run.kind} {run.url}")
    # The run executes on this thread (Playwright's sync API stays on the thread that started it); the
    # follower prints its steps from the outbox meanwhile. A silent one (--quiet) would only poll the run: none.
    following = threading.Thread(target=follower.follow, args=(run,), kwargs={"hint_workers": False}, daemon=True)
    if follower.enabled:
        following.start()
    restore = _cancel_on_interrupt(run)
    try:
        execute_run(str(run.pk))
    finally:
        restore()
        if follower.enabled:
            following.join(timeout=10)
    return Run.objects.prefetch_related("steps").get(pk=run.pk)


def run_json(run: Run) -> str:
    return json.dumps(RunDetailSerializer(run).data, indent=2, ensure_ascii=False)


def failed(run: Run) -> CommandError:
    return CommandError(f"run {run.id} {run.status}: {error_text(run.error)}", returncode=1)


def add_run_options(parser: CommandParser, *, state: bool = True) -> None:
    """The options every run command shares."""
    if state:
        parser.add_argument("--profile", help="Start logged in with this stored profile.")
        parser.add_argument(
            "--storage-state",
            dest="storage_state",
            help=(
                "Start from a Playwright storage-state file: a path relative to the data directory, mode 0600; "
                "not with --profile."
            ),
        )
    parser.add_argument(
        "--timeout-ms", type=positive_int, default=60_000, help="Give up after this many milliseconds (default 60000)."
    )
    parser.add_argument(
        "--queue",
        action="store_true",
        help="Hand the run to the workers of `manage.py serve` instead of running it here.",
    )
    parser.add_argument(
        "--wait",
        action="store_true",
        help="With --queue: follow the run to its end (without --queue the run is always followed).",
    )
    parser.add_argument("--json", action="store_true", dest="as_json", help="Print the run (with its steps) as JSON.")
    parser.add_argument("--quiet", action="store_true", help="No progress lines, only the result.")


def state_fields(profile: str | None, storage_state: str | None) -> dict:
    if profile and storage_state:
        raise CommandError("Give --profile or --storage-state, not both.", returncode=2)
    fields = {}
    if profile:
        fields["profile"] = profile
    if storage_state:
        fields["storageStatePath"] = storage_state
    return fields


def progress(command: BaseCommand, *, as_json: bool, quiet: bool) -> RunFollower:
    """Progress is for a person watching: on standard error, and none when that is a pipe or a file."""
    stream = command.stderr._out
    return RunFollower(stream, enabled=not quiet and not as_json and stream.isatty())


def execute(
    command: BaseCommand,
    spec: dict,
    *,
    queue: bool,
    wait: bool,
    as_json: bool,
    quiet: bool,
    follower: RunFollower | None = None,
) -> Run | None:
    """Validate, run (here or by the workers) and follow; print --json output. The finished run, or None when it
    was only queued. Every check comes before the run exists: a refused command leaves nothing behind."""
    if wait and not queue:
        raise CommandError(
            "--wait goes with --queue (without --queue the run executes here and is followed anyway).", returncode=2
        )
    follower = follower or progress(command, as_json=as_json, quiet=quiet)
    run = run_and_follow(spec, follower, queue=queue, wait=wait)
    if queue and not wait:
        command.stdout.write(run_json(run) if as_json else str(run.id))
        return None
    if as_json:
        command.stdout.write(run_json(run))
    if run.status != Run.Status.SUCCEEDED:
        raise failed(run)
    return run
