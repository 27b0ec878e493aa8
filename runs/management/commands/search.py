from __future__ import annotations

import json

from django.core.management.base import CommandError, CommandParser

from runs import direct
from runs.cli import RunCommand


class Command(RunCommand):
    help = (
        "Search the web through the SearXNG instance at SEARXNG_URL and print the results (title, URL, snippet); "
        "--fetch also fetches every result as Markdown (four at a time; a page that fails says why). Exit 0 on "
        "success, 1 when SearXNG does not answer, 2 on bad usage or without SEARXNG_URL."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query", help="What to search for.")
        parser.add_argument("--limit", type=int, default=10, help="At most this many results (1-50, default 10).")
        parser.add_argument("--categories", help="SearXNG categories, e.g. news or it.")
        parser.add_argument("--language", help="Result language, e.g. en or de-CH.")
        parser.add_argument(
            "--time-range",
            dest="time_range",
            choices=["day", "week", "month", "year"],
            help="Only results from the last day, week, month or year.",
        )
        parser.add_argument("--fetch", action="store_true", help="Also fetch every result's page as Markdown.")
        parser.add_argument("--json", action="store_true", dest="as_json", help='Print {"results": [...]} as JSON.')

    def handle(self, *args, query: str, limit: int, as_json: bool, fetch: bool, **options) -> None:
        if not 1 <= limit <= 50:
            raise CommandError("--limit must be between 1 and 50.", returncode=2)
        # A ServiceError becomes one line with its exit code (CliCommand).
        asked = {"query": query, "limit": limit, "fetch": fetch, "timeRange": options["time_range"]}
        asked.update({name: options[name] for name in ("categories", "language") if options[name] is not None})
        results = direct.search({name: value for name, value in asked.items() if value is not None})
        if as_json:
            self.stdout.write(json.dumps({"results": results}, indent=2, ensure_ascii=False))
            return
        if not results:
            self.stderr.write("no results")
        for number, result in enumerate(results, 1):
            self.stdout.write(f"{number}. {result['title']}\n   {result['url']}  [{result['engine']}]")
            if result["snippet"]:
                self.stdout.write(f"   {result['snippet']}")
            if "markdown" in result:
                self.stdout.write("\n" + result["markdown"].strip() + "\n")
            elif "error" in result:
                self.stdout.write(f"   (not fetched: {result['error']['code']}: {result['error']['message']})")
