from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.models import Run
from runs.terminal import RunFollower, checked_spec, failed, run_and_follow, run_json


def add_run_options(parser: CommandParser, *, state: bool = True) -> None:
    """The options every run command shares."""
    if state:
        parser.add_argument("--profile", help="Start logged in with this stored profile.")
        parser.add_argument(
            "--storage-state",
            dest="storage_state",
            help="Start from a storage-state file inside the data directory (mode 0600); not with --profile.",
        )
    parser.add_argument("--timeout-ms", type=int, default=60_000, help="Give up after this long (default 60000).")
    parser.add_argument(
        "--queue",
        action="store_true",
        help="Hand the run to the workers of `manage.py serve` instead of running it here.",
    )
    parser.add_argument("--wait", action="store_true", help="With --queue: follow the run to its end.")
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


def execute(command: BaseCommand, spec: dict, *, queue: bool, wait: bool, as_json: bool, quiet: bool) -> Run | None:
    """Validate, run (here or by the workers) and follow; print --json output. The finished run, or None when it
    was only queued."""
    progress = command.stderr._out
    # Progress is for a person watching: none when standard error is a pipe or a file.
    follower = RunFollower(progress, enabled=not quiet and not as_json and progress.isatty())
    run = run_and_follow(checked_spec(spec), follower, queue=queue, wait=wait)
    if queue and not wait:
        command.stdout.write(run_json(run) if as_json else str(run.id))
        return None
    if as_json:
        command.stdout.write(run_json(run))
    if run.status != Run.Status.SUCCEEDED:
        raise failed(run)
    return run


class Command(BaseCommand):
    help = (
        "Fetch a page as Markdown. The run executes in this process and shows in the history like any other "
        "(--queue hands it to the workers). Exit 0 on success, 1 if the run failed, 2 on bad usage; Ctrl-C cancels."
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
            help="browser (default for runs: the trace keeps a screenshot) or http (plain HTTP, no browser).",
        )
        parser.add_argument("--out", help="Write the Markdown to this file instead of standard output.")
        add_run_options(parser)

    def handle(self, *args, url: str, main_content: bool, render: str, out: str | None, **options) -> None:
        spec = {
            "kind": "fetch",
            "url": url,
            "options": {"mainContent": main_content, "render": render, "timeoutMs": options["timeout_ms"]},
            **state_fields(options["profile"], options["storage_state"]),
        }
        run = execute(
            self, spec, queue=options["queue"], wait=options["wait"], as_json=options["as_json"], quiet=options["quiet"]
        )
        if run is None or options["as_json"]:
            return
        markdown = run.result["markdown"]
        if out:
            Path(out).write_text(markdown, encoding="utf-8")
            self.stderr.write(f"wrote {out} ({len(markdown)} characters)")
        else:
            self.stdout.write(markdown, ending="" if markdown.endswith("\n") else "\n")
