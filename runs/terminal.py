"""What the commands people type share: one rule for errors and exit codes, validating a spec typed as options,
executing a run here or handing it to the workers, and following it on the terminal as it happens (a line per step,
a spinner while waiting).

Exit codes (README, CLI): 0 success; 1 it was tried and did not work (a run failed or was cancelled, SearXNG or the
page did not answer, the queue was full, a profile looks logged out, --wait --timeout ran out); 2 nothing was done
because of what was typed or configured (bad usage or option value, an unknown name or id, an unreadable or invalid
file, a name already taken, a model or SearXNG not configured, a database never migrated).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import math
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from django.core.management.base import BaseCommand, CommandError, SystemCheckError
from django.db import OperationalError, ProgrammingError
from rest_framework.exceptions import ValidationError

from runs import services
from runs.models import Event, Run
from runs.serializers import RunDetailSerializer, RunSpecSerializer
from runs.stream import GapGuard, needs_gap_guard, read_events
from service.errors import ServiceError, flatten_fields

POLL_SECONDS = 0.1
OBSERVATION_WIDTH = 100
# A run still queued after this long usually means no workers are running.
QUEUED_HINT_SECONDS = 15
SPINNER = "|/-\\"

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
}


# What a page's text must not send to a terminal: C0 controls but line feed and tab (ESC starts the sequences that
# move the cursor, retitle the window, write the clipboard), DEL, C1 controls (U+009B is a one-byte CSI), and the
# bidirectional overrides that make text read otherwise than it is.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """Text from pages (titles, Markdown, observations, results) as it may be shown on a terminal: ESC becomes a
    visible ␛, every other control character U+FFFD."""
    return _UNPRINTABLE.sub(lambda match: "\u241b" if match[0] == "\x1b" else "\ufffd", text)


def for_terminal(text: str, stream) -> str:
    """printable(text) when stream is a terminal; as it is otherwise (a file or a pipe gets the page's own text)."""
    return printable(text) if stream.isatty() else text


def first_line(text: str, width: int = OBSERVATION_WIDTH) -> str:
    """The first non-blank line, cut to fit one terminal line. Pretty-printed JSON starts with a lone bracket,
    which says nothing: then the whole text, squeezed onto one line."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(line) == 1:
        line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


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


# A database that was never migrated, as SQLite and PostgreSQL say it.
MISSING_TABLE = re.compile(r"no such table|relation \S+ does not exist")

# An API field name written inside a message (camelCase, so never an ordinary word such as "url" or "schema").
API_NAME_IN_TEXT = re.compile(r"\b[a-z]+(?:[A-Z][a-z]+)+\b")


def problems_line(errors: object, names: dict[str, str] | None = None) -> str:
    """Validation errors as one line naming the options the user typed, in the label and in the message."""
    names = {**OPTION_NAMES, **(names or {})}

    def as_option(match: re.Match) -> str:
        return names.get(match.group(), match.group())

    problems = []
    for field, messages in flatten_fields(errors).items():
        message = API_NAME_IN_TEXT.sub(as_option, " ".join(messages).replace("\n", " "))
        option = names.get(field, names.get(field.split(".")[0], field))
        if field in ("request", "non_field_errors") or message.startswith(option + " "):
            problems.append(message)
        else:
            problems.append(f"{option}: {message}")
    return "; ".join(problems)


def exit_code(error: ServiceError) -> int:
    """The service's verdict as an exit code: what it refused because of the input or the configuration (4xx, and
    503: not configured) is 2; what it tried and could not do (a page or SearXNG that failed, 502/504) or could not
    do right now (429: the queue is full, try again) is 1."""
    if error.status_code == 429:
        return 1
    return 2 if error.status_code < 500 or error.status_code == 503 else 1


def positive_number(value: str) -> float:
    """argparse type: a finite number above 0 (seconds)."""
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number <= 0:
        raise argparse.ArgumentTypeError(f"give a number of seconds above 0, not {value!r}")
    return number


def positive_int(value: str) -> int:
    """argparse type: a whole number of at least 1."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"give a whole number of at least 1, not {value!r}")
    return number


def check_writable(path: str, option: str = "--out") -> None:
    """Refuse (exit 2) a file that could not be written, before any work whose result it would receive; nothing is
    created here, so a refused command leaves no empty file behind."""
    target = Path(path).expanduser()
    folder = target.parent
    if target.is_dir():
        raise CommandError(f"{option} {path} is a directory; give a file name.", returncode=2)
    if not folder.is_dir():
        raise CommandError(f"{option} {path}: the folder {folder} does not exist.", returncode=2)
    if target.exists() and not os.access(target, os.W_OK):
        raise CommandError(f"{option} {path}: the file is not writable.", returncode=2)
    if not target.exists() and not os.access(folder, os.W_OK | os.X_OK):
        raise CommandError(f"{option} {path}: the folder {folder} is not writable.", returncode=2)


class CliCommand(BaseCommand):
    """A command people type. Errors of the services become one line with the exit code of the rule above; typed at
    a shell, an error prints as `error: <sentence>` (no traceback, no exception name), and log records below
    WARNING stay off standard error unless LOG_LEVEL asks for them (the progress lines are the terminal's story)."""

    # API field names as this command's options, for validation messages.
    option_names: dict[str, str] = {}
    _typed = False

    def run_from_argv(self, argv: list[str]) -> None:
        self._typed = True
        root = logging.getLogger()
        level = root.level
        if "LOG_LEVEL" not in os.environ:
            root.setLevel(max(level, logging.WARNING))
        try:
            super().run_from_argv(argv)
        finally:
            root.setLevel(level)

    def execute(self, *args, **options):
        try:
            try:
                return super().execute(*args, **options)
            except ServiceError as error:
                raise CommandError(str(error.detail), returncode=exit_code(error)) from None
            except ValidationError as error:
                raise CommandError(problems_line(error.detail, self.option_names), returncode=2) from None
            except (OperationalError, ProgrammingError) as error:
                if not MISSING_TABLE.search(str(error)):
                    raise
                raise CommandError(
                    "The database has no tables yet (a fresh data directory?): run `manage.py migrate` first.",
                    returncode=2,
                ) from None
        except CommandError as error:
            if not self._typed or options.get("traceback") or isinstance(error, SystemCheckError):
                raise
            self.stderr.write(f"error: {error}")
            sys.exit(error.returncode)


def read_json_option(value: str, option: str) -> object:
    """An option holding JSON inline, or @path of a file holding it."""
    source, text, label = option, value, option.lstrip("-")
    if value.startswith("@"):
        path = Path(value[1:]).expanduser()
        source = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise CommandError(f"Could not read the {label} file {path}: {error.strerror}.", returncode=2) from None
        except UnicodeDecodeError:
            raise CommandError(f"The {label} file {path} is not UTF-8 text.", returncode=2) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        hint = "" if value.startswith("@") else " (give inline JSON, or @file to read it from a file)"
        raise CommandError(
            f"{source} is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}{hint}.", returncode=2
        ) from None


def checked_spec(spec: dict) -> dict:
    """The spec as the API would accept it; exit 2 otherwise (CliCommand turns a ServiceError into its code)."""
    validated = RunSpecSerializer(data=spec)
    if validated.is_valid():
        return validated.validated_data
    raise CommandError(problems_line(validated.errors), returncode=2)


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

    def say(self, line: str) -> None:
        if not self.enabled:
            return
        self._clear_spinner()
        self.progress.write(printable(line) + "\n")
        self.progress.flush()

    def _spin(self, run: Run, waited: float) -> None:
        if self.tty:
            self.progress.write(f"\r{next(self._spinner)} {run.status} {waited:5.1f} s")
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
            frames, cursor = read_events(cursor=cursor, run_id=str(run.pk), guard=guard)
            for frame in frames:
                self.show(frame)
            if any(frame["type"] == "run-finished" for frame in frames):
                break
            run.refresh_from_db(fields=["status"])
            if run.is_final:  # it finished after our last read: show the rest once more
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
            time.sleep(POLL_SECONDS)
        self._clear_spinner()
        return Run.objects.with_step_count().prefetch_related("steps").get(pk=run.pk)

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
            return Run.objects.with_step_count().get(pk=run.pk)
        restore = _cancel_on_interrupt(run)
        try:
            return follower.follow(run, hint_workers=True)
        finally:
            restore()
    from runs.jobs import execute_run  # the engine (Playwright) only where a run executes here

    run = services.run_submit(spec=spec, enqueue=False)
    follower.say(f"run {run.id}: {run.kind} {run.url}")
    # The run executes on this thread (Playwright's sync API stays on the thread that started it); the
    # follower prints its steps from the outbox meanwhile.
    following = threading.Thread(target=follower.follow, args=(run,), kwargs={"hint_workers": False}, daemon=True)
    following.start()
    restore = _cancel_on_interrupt(run)
    try:
        execute_run(str(run.pk))
    finally:
        restore()
        following.join(timeout=10)
    return Run.objects.with_step_count().prefetch_related("steps").get(pk=run.pk)


def run_json(run: Run) -> str:
    return json.dumps(RunDetailSerializer(run).data, indent=2, ensure_ascii=False)


def failed(run: Run) -> CommandError:
    return CommandError(f"run {run.id} {run.status}: {error_text(run.error)}", returncode=1)
