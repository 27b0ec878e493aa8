from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError, CommandParser

from runs.cli import RunCommand, add_run_options, state_fields
from service.kernel.cli import check_writable, for_terminal


class Command(RunCommand):
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
        run = self.run_spec(spec, options)
        if run is None:
            return
        markdown = run.result["markdown"]
        if run.result.get("pageType"):
            self.follower.say(f"page type: {run.result['pageType']}")
        if out:
            try:
                Path(out).expanduser().write_text(markdown, encoding="utf-8")
            except OSError as error:  # it went away during the run
                raise CommandError(
                    f"Could not write {out}: {error.strerror}; the run kept the Markdown: runs show {run.id}",
                    returncode=1,
                ) from None
            self.follower.say(f"wrote {out} ({len(markdown)} characters)")
        elif not options["as_json"]:
            self.stdout.write(for_terminal(markdown, self.stdout), ending="" if markdown.endswith("\n") else "\n")
