from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.models import Run
from runs.terminal import (
    CliCommand,
    RunFollower,
    check_writable,
    checked_spec,
    failed,
    for_terminal,
    positive_int,
    run_and_follow,
    run_json,
)


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
    run = run_and_follow(checked_spec(spec), follower, queue=queue, wait=wait)
    if queue and not wait:
        command.stdout.write(run_json(run) if as_json else str(run.id))
        return None
    if as_json:
        command.stdout.write(run_json(run))
    if run.status != Run.Status.SUCCEEDED:
        raise failed(run)
    return run


class Command(CliCommand):
    help = (
        "Fetch a page as Markdown. The run executes in this process and shows in the history like any other "
        "(--queue hands it to the workers). Exit 0 on success, 1 if the run failed, 2 on bad usage or input "
        "(nothing is run); Ctrl-C cancels."
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
            help="auto (the default; for a run it means the browser, so the trace keeps a screenshot), browser, "
            "or http (plain HTTP, no browser).",
        )
        parser.add_argument(
            "--out", help="Write the Markdown to this file instead of standard output (checked before the run)."
        )
        add_run_options(parser)

    def handle(self, *args, url: str, main_content: bool, render: str, out: str | None, **options) -> None:
        if out:
            if options["queue"] and not options["wait"]:
                raise CommandError("--out needs the run's Markdown: with --queue, add --wait.", returncode=2)
            check_writable(out)
        spec = {
            "kind": "fetch",
            "url": url,
            "options": {"mainContent": main_content, "render": render, "timeoutMs": options["timeout_ms"]},
            **state_fields(options["profile"], options["storage_state"]),
        }
        follower = progress(self, as_json=options["as_json"], quiet=options["quiet"])
        run = execute(
            self,
            spec,
            queue=options["queue"],
            wait=options["wait"],
            as_json=options["as_json"],
            quiet=options["quiet"],
            follower=follower,
        )
        if run is None:
            return
        markdown = run.result["markdown"]
        if out:
            try:
                Path(out).expanduser().write_text(markdown, encoding="utf-8")
            except OSError as error:  # it went away during the run
                raise CommandError(
                    f"Could not write {out}: {error.strerror}; the run kept the Markdown: runs show {run.id}",
                    returncode=1,
                ) from None
            follower.say(f"wrote {out} ({len(markdown)} characters)")
        elif not options["as_json"]:
            self.stdout.write(for_terminal(markdown, self.stdout), ending="" if markdown.endswith("\n") else "\n")
