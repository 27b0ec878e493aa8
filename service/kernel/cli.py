"""The command-line layer every command people type shares: one rule for errors and exit codes, argument types,
JSON options, and text from pages made safe for a terminal.

Exit codes (README, CLI): 0 success; 1 it was tried and did not work (a run failed or was cancelled, SearXNG or the
page did not answer, the queue was full, a profile looks logged out, --wait --timeout ran out); 2 nothing was done
because of what was typed or configured (bad usage or option value, an unknown name or id, an unreadable or invalid
file, a name already taken, a model or SearXNG not configured, a database never migrated).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, SystemCheckError
from django.db import OperationalError, ProgrammingError
from rest_framework.exceptions import ValidationError

from service.kernel.errors import ServiceError, flatten_fields

LINE_WIDTH = 100


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


def first_line(text: str, width: int = LINE_WIDTH) -> str:
    """The first non-blank line, cut to fit one terminal line. Pretty-printed JSON starts with a lone bracket,
    which says nothing: then the whole text, squeezed onto one line."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(line) == 1:
        line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


# A database that was never migrated, as SQLite and PostgreSQL say it.
MISSING_TABLE = re.compile(r"no such table|relation \S+ does not exist")

# An API field name written inside a message (camelCase, so never an ordinary word such as "url" or "schema").
API_NAME_IN_TEXT = re.compile(r"\b[a-z]+(?:[A-Z][a-z]+)+\b")


def problems_line(errors: object, names: dict[str, str] | None = None) -> str:
    """Validation errors as one line naming the options the user typed, in the label and in the message: names maps
    API field names to the command's options (a command's option_names; a run command's include the run options)."""
    names = names or {}

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
