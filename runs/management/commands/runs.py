from __future__ import annotations

import json
import uuid
from pathlib import Path

from django.core.management.base import CommandError, CommandParser

from runs import export, services
from runs.cli import OPTION_NAMES, RunCommand, add_run_options, drift_line, error_text, step_line
from runs.models import Run
from runs.serializers import RunDetailSerializer, RunFilterSerializer, RunSerializer
from service.kernel.cli import check_writable, for_terminal, positive_int, problems_line, read_json_option

FILTER_OPTIONS = {name: f"--{name}" for name in ("query", "kind", "status", "batch", "since", "until")}


class Command(RunCommand):
    help = (
        "Run history: list runs (newest first), show one run with its steps, re-extract from a run's archived page, "
        "export runs as JSON or CSV. Exit 0 on success, 1 if a re-extraction failed, 2 on bad usage or input (an "
        "unknown run, a bad filter, an --out that cannot be written)."
    )
    option_names = {**OPTION_NAMES, **FILTER_OPTIONS}

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        listing = actions.add_parser("list", help="Runs, newest first.")
        listing.add_argument("--query", help="Only replays of this saved query.")
        listing.add_argument("--kind", choices=Run.Kind.values, help="Only runs of this kind.")
        listing.add_argument("--status", choices=Run.Status.values, help="Only runs in this status.")
        listing.add_argument("--batch", help="Only runs of this batch (its id).")
        listing.add_argument("--limit", type=positive_int, default=20, help="At most this many runs (default 20).")
        listing.add_argument("--json", action="store_true", dest="as_json", help="Print the runs as a JSON list.")
        show = actions.add_parser("show", help="One run with its result or error and every step.")
        show.add_argument("id", help="The run's id.")
        show.add_argument("--json", action="store_true", dest="as_json", help="Print the run as JSON (as the API).")
        again = actions.add_parser(
            "reextract",
            help="Extract again from the page a run archived (no request is made): another schema, instruction or "
            "model; prints the JSON and how it differs from the run's result.",
        )
        again.add_argument("id", help="The run whose archived page to read.")
        again.add_argument("--schema", help="JSON schema of the result: inline JSON, or @file (default: the run's).")
        again.add_argument("--instruction", help="What to extract, in words (default: the run's).")
        again.add_argument("--model", help="The model for this extraction (default: the run's, or MODEL_NAME).")
        again.add_argument("--step", type=int, help="The step whose page to read (default: the last archived one).")
        add_run_options(again, state=False)
        dump = actions.add_parser("export", help="Runs and their results as a JSON array or a CSV file.")
        dump.add_argument("--format", required=True, choices=list(export.FORMATS), help="json or csv.")
        dump.add_argument("--query", help="Only replays of this saved query.")
        dump.add_argument("--kind", choices=Run.Kind.values, help="Only runs of this kind.")
        dump.add_argument("--status", choices=Run.Status.values, help="Only runs in this status.")
        dump.add_argument("--batch", help="Only runs of this batch (its id).")
        dump.add_argument("--since", help="Only runs created at or after this ISO 8601 time.")
        dump.add_argument("--until", help="Only runs created before this ISO 8601 time.")
        dump.add_argument(
            "--out", help="Write to this file instead of standard output (checked before anything is read)."
        )

    def handle(self, *args, action: str, **options) -> None:
        getattr(self, f"_{action}")(**options)

    def _list(
        self,
        *,
        query: str | None,
        kind: str | None,
        status: str | None,
        batch: str | None,
        limit: int,
        as_json: bool,
        **_,
    ) -> None:
        given = {"query": query, "kind": kind, "status": status, "batch": batch}
        filters = RunFilterSerializer(data={key: value for key, value in given.items() if value is not None})
        if not filters.is_valid():
            raise CommandError(problems_line(filters.errors, self.option_names), returncode=2)
        runs = list(Run.objects.filter_by(**filters.validated_data).order_by("-created_at")[:limit])
        if as_json:
            self.stdout.write(json.dumps(RunSerializer(runs, many=True).data, indent=2))
            return
        if not runs:
            self.stdout.write("No runs match.")
            return
        self.stdout.write(f"{'ID':<36}  {'KIND':<7}  {'STATUS':<9}  {'STEPS':>5}  {'CREATED':<19}  {'QUERY':<16}  URL")
        for run in runs:
            self.stdout.write(
                f"{run.id!s:<36}  {run.kind:<7}  {self._status(run.status, 9)}  {run.step_count:>5}  "
                f"{run.created_at:%Y-%m-%d %H:%M:%S}  {run.query or '-':<16}  {run.url}"
            )

    def _show(self, *, id: str, as_json: bool, **_) -> None:
        run = self._run(id)
        data = RunDetailSerializer(run).data
        if as_json:
            self.stdout.write(json.dumps(data, indent=2))
            return
        query = f"  query {run.query}" if run.query else ""
        self.stdout.write(f"run {run.id}  {run.kind}  {self._status(run.status)}  attempt {run.attempts}{query}")
        self.stdout.write(for_terminal(f"url:      {run.url}", self.stdout))
        times = {"created": run.created_at, "started": run.started_at, "finished": run.finished_at}
        self.stdout.write(
            "times:    " + ", ".join(f"{label} {value:%Y-%m-%d %H:%M:%S}" for label, value in times.items() if value)
        )
        if run.error:
            self.stdout.write(self.style.ERROR(f"error:    {error_text(run.error)}"))
        self.stdout.write(f"steps:    {len(data['steps'])}")
        for step in data["steps"]:
            self.stdout.write(step_line(step))
        drift = drift_line(run.drift)
        if drift:
            self.stdout.write(self.style.WARNING(drift))
        if run.result is not None:
            self.stdout.write("result:")
            self.stdout.write(for_terminal(json.dumps(run.result, indent=2, ensure_ascii=False), self.stdout))

    def _reextract(self, *, id: str, schema: str | None, instruction: str | None, model: str | None, step, **options):
        source = self._run(id)
        changes: dict = {"schema": read_json_option(schema, "--schema")} if schema else {}
        if instruction is not None:
            changes["instruction"] = instruction
        if model:
            changes["options"] = {"model": model}
        if step is not None:
            changes["step"] = step
        spec = services.reextract_spec(source=source, changes=changes)
        spec["options"] = {**spec.get("options", {}), "timeoutMs": options["timeout_ms"]}
        run = self.run_spec(spec, options)
        if run is not None and not options["as_json"]:
            self.stdout.write(for_terminal(json.dumps(run.result, indent=2, ensure_ascii=False), self.stdout))
            drift = drift_line(run.drift)
            if drift:
                self.follower.say(drift)

    def _run(self, id: str) -> Run:
        try:
            run_id = uuid.UUID(id)
        except ValueError:
            raise CommandError(f"There is no run {id}.", returncode=2) from None
        run = Run.objects.prefetch_related("steps").filter(pk=run_id).first()
        if run is None:
            raise CommandError(f"There is no run {id}.", returncode=2)
        return run

    def _export(self, *, format: str, out: str | None, **given) -> None:
        wanted = {key: given[key] for key in ("query", "kind", "status", "batch", "since", "until") if given[key]}
        filters = RunFilterSerializer(data=wanted)
        if not filters.is_valid():
            raise CommandError(problems_line(filters.errors, self.option_names), returncode=2)
        if out:
            check_writable(out)
        runs = Run.objects.filter_by(**filters.validated_data).order_by("created_at", "id")
        try:
            target = open(Path(out).expanduser(), "w", encoding="utf-8", newline="") if out else None  # noqa: SIM115
        except OSError as error:
            raise CommandError(f"Could not write {out}: {error.strerror}.", returncode=2) from None
        try:
            write = target.write if target else self.stdout._out.write
            for chunk in export.FORMATS[format](runs):
                write(chunk)
        finally:
            if target:
                target.close()
        if out:
            self.stderr.write(f"wrote {out}")

    def _status(self, status: str, width: int = 0) -> str:
        style = {
            Run.Status.SUCCEEDED: self.style.SUCCESS,
            Run.Status.FAILED: self.style.ERROR,
            Run.Status.CANCELLED: self.style.WARNING,
        }.get(status, str)
        return style(f"{status:<{width}}")
