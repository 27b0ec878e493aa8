from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from django.core.management.base import CommandError, CommandParser

from runs.cli import RunCommand, add_run_options, state_fields
from runs.models import Run
from service.kernel.cli import check_writable, read_json_option

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def page_file_name(url: str, taken: set[str]) -> str:
    """A file name for a page's Markdown from its URL path (and query), unique among those taken."""
    parts = urlsplit(url)
    stem = _UNSAFE.sub("-", f"{parts.path.strip('/')}{'-' + parts.query if parts.query else ''}").strip("-.")
    stem = (stem or "index")[:120]
    name, n = f"{stem}.md", 2
    while name in taken:
        name, n = f"{stem}-{n}.md", n + 1
    taken.add(name)
    return name


class Command(RunCommand):
    help = (
        "Crawl a site from a URL: every page in scope becomes a fetch run of its own (the crawl's pages). The crawl "
        "runs in this process and shows in the history like any run (--queue hands it to the workers). On a "
        "terminal a line per page. --out DIR writes each page's Markdown to a file and an index.md. Exit 0 on "
        "success, 1 if the crawl failed, 2 on bad usage or input (nothing is run); Ctrl-C cancels."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("url", help="Where the crawl starts (http or https).")
        parser.add_argument("--max-pages", type=int, default=100, help="Pages fetched at most (default 100).")
        parser.add_argument("--max-depth", type=int, default=3, help="Links away from the URL (default 3).")
        parser.add_argument("--include", action="append", default=[], help="A glob pages must match, e.g. /docs/**.")
        parser.add_argument("--exclude", action="append", default=[], help="A glob of pages never fetched.")
        parser.add_argument(
            "--scope",
            choices=["host", "domain", "path"],
            default="host",
            help="host (the default): the URL's host; domain: and its sibling subdomains; path: under the URL's path.",
        )
        parser.add_argument(
            "--sitemap",
            choices=["auto", "only", "off"],
            default="auto",
            help="auto (the default): also the sitemaps' pages; only: those pages, links not followed; off.",
        )
        parser.add_argument("--ignore-robots", action="store_true", help="Do not read or honour robots.txt.")
        parser.add_argument("--delay-ms", type=int, default=0, help="Pause between two pages of a host.")
        parser.add_argument(
            "--per-host-concurrency", type=int, default=2, help="Pages of one host loaded at a time (default 2)."
        )
        parser.add_argument(
            "--render",
            choices=["auto", "http", "browser"],
            default="auto",
            help="auto (the default): plain HTTP, Chromium for JavaScript shells; http: plain HTTP only; browser: "
            "Chromium for every page (a screenshot each).",
        )
        parser.add_argument(
            "--schema", help="Extract from every page: a JSON schema, inline or @file (each page an extract run)."
        )
        parser.add_argument("--instruction", help="With --schema: what to extract, in plain words.")
        parser.add_argument("--out", help="A directory to write the pages' Markdown to (created; checked first).")
        add_run_options(parser)

    def handle(self, *args, url: str, out: str | None, schema: str | None, instruction: str | None, **options) -> None:
        if out:
            if options["queue"] and not options["wait"]:
                raise CommandError("--out needs the pages: with --queue, add --wait.", returncode=2)
            directory = Path(out).expanduser()
            try:
                directory.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise CommandError(f"Cannot create {out}: {error.strerror}.", returncode=2) from None
            check_writable(str(directory / "index.md"))
        spec = {
            "kind": "crawl",
            "url": url,
            "crawl": {
                "maxPages": options["max_pages"],
                "maxDepth": options["max_depth"],
                "include": options["include"],
                "exclude": options["exclude"],
                "scope": options["scope"],
                "sitemap": options["sitemap"],
                "respectRobots": not options["ignore_robots"],
                "delayMs": options["delay_ms"],
                "perHostConcurrency": options["per_host_concurrency"],
                "render": options["render"],
            },
            "options": {"timeoutMs": options["timeout_ms"]},
            **state_fields(options["profile"], options["storage_state"]),
        }
        if schema is not None:
            spec["schema"] = read_json_option(schema, "--schema")
        if instruction is not None:
            spec["instruction"] = instruction
        run = self.run_spec(spec, options)
        if run is None:
            return
        if out:
            self._write_pages(run, Path(out).expanduser())
        elif not options["as_json"]:
            result = run.result or {}
            self.stdout.write(f"crawl {run.id}: {result.get('pages', 0)} pages {result.get('byStatus', {})}")

    def _write_pages(self, run: Run, directory: Path) -> None:
        taken: set[str] = {"index.md"}
        lines = [f"# Crawl of {run.url}", "", f"Run {run.id}, {run.status}.", ""]
        for page in Run.objects.filter(parent=run).order_by("created_at"):
            markdown = (page.result or {}).get("markdown") if isinstance(page.result, dict) else None
            if markdown is None:
                lines.append(f"- {page.url}: {page.status} ({(page.error or {}).get('code', 'no result')})")
                continue
            name = page_file_name(page.url, taken)
            (directory / name).write_text(markdown, encoding="utf-8")
            title = (page.result or {}).get("title") or page.url
            lines.append(f"- [{title}]({name}): {page.url}")
        (directory / "index.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        self.follower.say(f"wrote {len(taken) - 1} pages and index.md to {directory}")
