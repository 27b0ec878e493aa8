from __future__ import annotations

import json
import re

from django.core.management.base import CommandError, CommandParser

from queries import services
from queries.models import SavedQuery
from queries.schedule import describe
from queries.serializers import SavedQuerySerializer
from runs.cli import OPTION_NAMES, RunCommand, RunFollower, drift_line, error_text
from runs.models import Run
from runs.serializers import RunDetailSerializer, RunSerializer
from service.kernel.cli import positive_number, read_json_option

# API field names as the options that carry them, so a validation message points at what the user typed.
OPTIONS = {"fromRun": "--from-run", "url": "--url"}


_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def interval_seconds(text: str) -> int:
    """--every's value: a whole number of seconds, minutes (m), hours (h) or days (d)."""
    found = re.fullmatch(r"\s*(\d+)\s*([smhd]?)\s*", text)
    if found is None:
        raise CommandError(f"--every: {text!r} is not an interval such as 90s, 15m, 1h or 1d.", returncode=2)
    return int(found[1]) * _UNITS[found[2]]


def compiled_line(compiled: dict) -> str:
    """What a query's compiled rules fill: every field, or which ones (the rest is the model's)."""
    rules = sorted(path for path, who in compiled["fields"].items() if who == "rule")
    model = sorted(path for path, who in compiled["fields"].items() if who == "model")
    told = (
        "every field by rules, replays without a model"
        if not model
        else (f"{', '.join(rules)} by rules; {', '.join(model)} by the model")
    )
    return f"{told} (from run {compiled.get('fromRun')}, verified {compiled.get('verifiedAt')})"


class Command(RunCommand):
    help = (
        "Saved queries: named extract specs you replay. Save one (or promote a past extract run), replay it as a "
        "queued run for the workers of `manage.py serve` (--wait follows it), list, show, compile, schedule and "
        "delete them. Exit 0 on success, 1 if a followed replay failed (or --timeout ran out), 2 on bad usage or "
        "input (nothing is saved or queued)."
    )
    option_names = {**OPTION_NAMES, **OPTIONS}

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)

        save = actions.add_parser("save", help="Save a query from a URL and schema, or from a past extract run.")
        save.add_argument("name", help="Query name (a-z, 0-9, - and _; at most 64).")
        save.add_argument("--url", help="The page to extract from.")
        save.add_argument("--schema", help="The JSON schema of the result: inline JSON, or @file to read a file.")
        save.add_argument("--instruction", help="What to extract, in words (for model-driven extraction).")
        save.add_argument(
            "--from-run", dest="from_run", help="Copy url, schema and instruction from this extract run instead."
        )
        save.add_argument("--json", action="store_true", dest="as_json", help="Print the saved query as JSON.")

        run = actions.add_parser("run", help="Replay a saved query as a new queued run (the stored query is kept).")
        run.add_argument("name", help="The saved query.")
        run.add_argument("--url", help="Extract from this URL instead, for this replay only.")
        run.add_argument("--instruction", help="Use this instruction instead, for this replay only.")
        state = run.add_mutually_exclusive_group()
        state.add_argument("--profile", help="Start logged in with this stored profile.")
        state.add_argument(
            "--storage-state",
            dest="storage_state",
            help="Start from a Playwright storage-state file: a path relative to the data directory, mode 0600.",
        )
        run.add_argument(
            "--wait", action="store_true", help="Follow the run to its end, printing each step; exit 1 if it fails."
        )
        run.add_argument(
            "--timeout",
            type=positive_number,
            help="With --wait: stop following after this many seconds (exit 1; the run goes on).",
        )
        run.add_argument(
            "--json",
            action="store_true",
            dest="as_json",
            help="Print one JSON document: the queued run, or with --wait the finished run with its steps.",
        )

        listing = actions.add_parser("list", help="Saved queries with their replay counts.")
        listing.add_argument("--json", action="store_true", dest="as_json", help="Print the queries as a JSON list.")

        show = actions.add_parser("show", help="One saved query with its schema.")
        show.add_argument("name", help="The saved query.")
        show.add_argument("--json", action="store_true", dest="as_json", help="Print the query as JSON (as the API).")

        compiling = actions.add_parser(
            "compile",
            help="Compile a replay's model answer into rules verified on its archived page: later replays run them "
            "without a model (it falls back to the model when they find nothing).",
        )
        compiling.add_argument("name", help="The saved query.")
        compiling.add_argument(
            "--from-run", dest="from_run", help="Compile this run's answer (default: the last model replay)."
        )
        compiling.add_argument("--clear", action="store_true", help="Drop the compiled rules instead.")
        compiling.add_argument("--json", action="store_true", dest="as_json", help="Print the query as JSON.")

        scheduling = actions.add_parser(
            "schedule",
            help="Replay a saved query by itself: on a cron schedule in a time zone, or every so often; --off stops.",
        )
        scheduling.add_argument("name", help="The saved query.")
        when = scheduling.add_mutually_exclusive_group(required=True)
        when.add_argument("--cron", help='Five cron fields, e.g. "0 * * * *" (every hour on the hour).')
        when.add_argument("--every", help="An interval: 90, 90s, 15m, 1h or 1d (at least SCHEDULE_MIN_SECONDS).")
        when.add_argument("--off", action="store_true", help="Stop replaying by itself.")
        scheduling.add_argument("--timezone", default="UTC", help="With --cron: an IANA time zone (default UTC).")
        scheduling.add_argument("--json", action="store_true", dest="as_json", help="Print the query as JSON.")

        delete = actions.add_parser("delete", help="Delete a saved query; its runs stay in the history.")
        delete.add_argument("name", help="The saved query.")

    def handle(self, *args, action: str, **options) -> None:
        # Service errors and validation errors become one line with their exit code (CliCommand).
        getattr(self, f"_{action}")(**options)

    def _save(
        self,
        *,
        name: str,
        url: str | None,
        schema: str | None,
        instruction: str | None,
        from_run: str | None,
        as_json: bool,
        **_,
    ) -> None:
        if from_run is not None and (url, schema, instruction) != (None, None, None):
            raise CommandError("Give --from-run, or --url and --schema (with --instruction), not both.", returncode=2)
        if from_run is None and (url is None or schema is None):
            missing = " and ".join(option for option, value in (("--url", url), ("--schema", schema)) if value is None)
            raise CommandError(
                f"{missing} {'are' if ' and ' in missing else 'is'} required (or give --from-run with a past "
                "extract run's id).",
                returncode=2,
            )
        given = {"name": name, "url": url, "instruction": instruction, "fromRun": from_run}
        data = {key: value for key, value in given.items() if value is not None}
        if schema is not None:
            data["schema"] = read_json_option(schema, "--schema")
        query = services.query_save(data)
        if as_json:
            self.stdout.write(json.dumps(SavedQuerySerializer(query).data, indent=2))
        else:
            self.stdout.write(self.style.SUCCESS(f"Saved query {query.name}: {query.url}"))

    def _run(
        self,
        *,
        name: str,
        url: str | None,
        instruction: str | None,
        profile: str | None,
        storage_state: str | None,
        wait: bool,
        timeout: float | None,
        as_json: bool,
        **_,
    ) -> None:
        if timeout is not None and not wait:
            raise CommandError("--timeout goes with --wait (it bounds how long the replay is followed).", returncode=2)
        query = services.query_get(name=name)
        given = {"url": url, "instruction": instruction, "profile": profile, "storageStatePath": storage_state}
        run = services.query_replay(
            query=query, overrides={key: value for key, value in given.items() if value is not None}
        )
        if not wait:
            if as_json:
                self.stdout.write(json.dumps(RunSerializer(run).data, indent=2))
            else:
                self.stdout.write(f"Queued run {run.id} ({query.name}: {run.url}). Follow it: runs show {run.id}")
            return
        follower = RunFollower(self.stdout._out, enabled=not as_json)
        follower.say(f"run {run.id} queued ({query.name}: {run.url})")
        try:
            run = follower.follow(run, timeout=timeout)
        except KeyboardInterrupt:
            raise CommandError(
                f"Stopped following run {run.id}; it goes on: runs show {run.id}", returncode=130
            ) from None
        if as_json:
            self.stdout.write(json.dumps(RunDetailSerializer(run).data, indent=2))
        elif run.status == Run.Status.SUCCEEDED:
            self.stdout.write(json.dumps(run.result, indent=2, ensure_ascii=False))
            drift = drift_line(run.drift)
            if drift:
                self.stdout.write(self.style.WARNING(drift))
        if run.status != Run.Status.SUCCEEDED:
            raise CommandError(f"run {run.id} {run.status}: {error_text(run.error)}", returncode=1)

    def _list(self, *, as_json: bool, **_) -> None:
        queries = SavedQuery.objects.all()
        if as_json:
            self.stdout.write(json.dumps(SavedQuerySerializer(queries, many=True).data, indent=2))
            return
        if not queries:
            self.stdout.write("No saved queries yet: query save <name> --url <url> --schema @schema.json")
            return
        self.stdout.write(f"{'NAME':<24}  {'RUNS':>5}  {'LAST RUN':<19}  URL")
        for query in queries:
            last = f"{query.last_run_at:%Y-%m-%d %H:%M:%S}" if query.last_run_at else "never"
            self.stdout.write(f"{query.name:<24}  {query.run_count:>5}  {last:<19}  {query.url}")

    def _show(self, *, name: str, as_json: bool, **_) -> None:
        query = services.query_get(name=name)
        if as_json:
            self.stdout.write(json.dumps(SavedQuerySerializer(query).data, indent=2))
            return
        last = f"{query.last_run_at:%Y-%m-%d %H:%M:%S}" if query.last_run_at else "never"
        self.stdout.write(f"name:        {query.name}")
        self.stdout.write(f"url:         {query.url}")
        self.stdout.write(f"instruction: {query.instruction or '-'}")
        self.stdout.write(f"runs:        {query.run_count} (last {last}; list them: runs list --query {query.name})")
        self.stdout.write(f"updated:     {query.updated_at:%Y-%m-%d %H:%M:%S}")
        self.stdout.write(f"compiled:    {compiled_line(query.compiled) if query.compiled else 'no'}")
        if query.schedule:
            following = SavedQuerySerializer(query).data["nextRunAt"]
            skipped = f"; {query.skipped_ticks} due time(s) skipped" if query.skipped_ticks else ""
            self.stdout.write(f"schedule:    {describe(query.schedule)}, next at {following}{skipped}")
        else:
            self.stdout.write("schedule:    none (replays when asked: query schedule <name> --every 1h)")
        if not query.compile:
            self.stdout.write("             (compile is off: replays do not compile their answers)")
        self.stdout.write("schema:")
        self.stdout.write(json.dumps(query.schema, indent=2, ensure_ascii=False))

    def _compile(self, *, name: str, from_run: str | None, clear: bool, as_json: bool, **_) -> None:
        query = services.query_get(name=name)
        if clear:
            services.query_uncompile(query=query)
            self.stdout.write(self.style.SUCCESS(f"Dropped the compiled rules of {name}; replays use the model."))
            return
        query = services.query_compile(query=query, request={"fromRun": from_run} if from_run else {})
        if as_json:
            self.stdout.write(json.dumps(SavedQuerySerializer(query).data, indent=2))
            return
        self.stdout.write(self.style.SUCCESS(f"Compiled {name}: {compiled_line(query.compiled)}"))

    def _schedule(
        self, *, name: str, cron: str | None, every: str | None, off: bool, timezone: str, as_json: bool, **_
    ) -> None:
        query = services.query_get(name=name)
        if off:
            rule = None
        elif cron is not None:
            rule = {"cron": cron, "timezone": timezone}
        else:
            rule = {"everySeconds": interval_seconds(every)}
        query = services.query_schedule(query=query, schedule=rule)
        if as_json:
            self.stdout.write(json.dumps(SavedQuerySerializer(query).data, indent=2))
            return
        if query.schedule is None:
            self.stdout.write(self.style.SUCCESS(f"{name} no longer replays by itself."))
            return
        following = SavedQuerySerializer(query).data["nextRunAt"]
        self.stdout.write(self.style.SUCCESS(f"{name} replays {describe(query.schedule)}; next at {following}."))

    def _delete(self, *, name: str, **_) -> None:
        query = services.query_get(name=name)
        services.query_delete(query=query)
        kept = Run.objects.filter_by(query=name).count()
        self.stdout.write(self.style.SUCCESS(f"Deleted query {name}; its {kept} run(s) stay in the history."))
