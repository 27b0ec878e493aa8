"""The `query` and `runs` commands as users type them: in this process, and against a live service's workers."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command, execute_from_command_line
from django.utils import timezone
from rest_framework import serializers

from queries.models import SavedQuery
from runs.models import Run
from tests.live import ROOT, LiveService, help_entries, readme_cli_options
from tests.recording import record_steps

db = pytest.mark.django_db(transaction=True)
README_OPTIONS = readme_cli_options()

URL = "https://shop.example/product"
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "x-selector": "h1.name"},
        "price": {"type": "string", "x-selector": "p.price"},
    },
}
PRODUCT = {"name": "Trail shoe", "price": "89,90 €"}


def run_command(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def run_json(*args: str) -> object:
    return json.loads(run_command(*args, "--json")[0])


def iso(value) -> str | None:
    return serializers.DateTimeField().to_representation(value) if value else None


def query_body(name: str, **changes) -> dict:
    query = SavedQuery.objects.get(name=name)
    return {
        "name": name,
        "url": URL,
        "schema": SCHEMA,
        "instruction": "",
        "compile": True,
        "compiled": None,
        "mcpTool": False,
        "schedule": None,
        "nextRunAt": None,
        "skippedTicks": 0,
        "runCount": 0,
        "lastRunAt": None,
        "createdAt": iso(query.created_at),
        "updatedAt": iso(query.updated_at),
        **changes,
    }


def failure(*args: str) -> CommandError:
    with pytest.raises(CommandError) as raised:
        run_command(*args)
    return raised.value


@db
def test_save_inline_and_from_a_file_then_list_and_show_as_json(tmp_path):
    out, _ = run_command("query", "save", "shoe", "--url", URL, "--schema", json.dumps(SCHEMA))
    assert out == "Saved query shoe: https://shop.example/product\n"
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(SCHEMA, indent=2))
    saved = run_json("query", "save", "boot", "--url", URL, "--schema", f"@{schema_file}", "--instruction", "Price")
    assert saved == query_body("boot", instruction="Price")

    assert run_json("query", "list") == [query_body("boot", instruction="Price"), query_body("shoe")]
    assert run_json("query", "show", "shoe") == query_body("shoe")
    listing, _ = run_command("query", "list")
    assert listing.splitlines()[1:] == [
        f"boot                          0  never                {URL}",
        f"shoe                          0  never                {URL}",
    ]
    shown, _ = run_command("query", "show", "boot")
    assert "instruction: Price" in shown
    assert shown.split("schema:\n", 1)[1] == json.dumps(SCHEMA, indent=2) + "\n"


@db
def test_save_from_an_extract_run_copies_its_url_schema_and_instruction():
    spec = {"kind": "extract", "url": URL, "schema": SCHEMA, "instruction": "The name and price."}
    run = Run.objects.create(kind="extract", url=URL, spec=spec)
    saved = run_json("query", "save", "promoted", "--from-run", str(run.pk))
    assert saved == query_body("promoted", instruction="The name and price.")
    assert run_json("query", "show", "promoted") == saved


@db
def test_replay_without_wait_queues_a_linked_run_and_counts_it():
    run_command("query", "save", "shoe", "--url", URL, "--schema", json.dumps(SCHEMA))
    queued = run_json("query", "run", "shoe", "--url", "https://shop.example/other", "--instruction", "Once.")
    run = Run.objects.get()
    assert queued == {
        "id": str(run.pk),
        "kind": "extract",
        "status": "queued",
        "url": "https://shop.example/other",
        "spec": {
            "kind": "extract",
            "url": "https://shop.example/other",
            "schema": SCHEMA,
            "instruction": "Once.",
            "compile": True,
            "options": {
                "mainContent": True,
                "render": "auto",
                "timeoutMs": 60000,
                "maxSteps": 25,
                "screenshots": True,
            },
        },
        "query": "shoe",
        "batch": None,
        "parent": None,
        "attempts": 0,
        "result": None,
        "error": None,
        "drift": None,
        "usage": {},
        "extractedBy": None,
        "stepCount": 0,
        "createdAt": iso(run.created_at),
        "startedAt": None,
        "finishedAt": None,
    }
    query = SavedQuery.objects.get(name="shoe")
    # The one-off overrides live on the run only.
    assert run_json("query", "show", "shoe") == query_body("shoe", runCount=1, lastRunAt=iso(query.last_run_at))
    out, _ = run_command("query", "run", "shoe")
    assert out.startswith("Queued run ") and out.endswith(
        f"(shoe: {URL}). Follow it: runs show {Run.objects.first().pk}\n"
    )


@db
def test_wait_with_a_timeout_gives_up_following_but_leaves_the_run_queued():
    run_command("query", "save", "shoe", "--url", URL, "--schema", json.dumps(SCHEMA))
    error = failure("query", "run", "shoe", "--wait", "--timeout", "0.3")
    run = Run.objects.get()
    assert (str(error), error.returncode) == (
        f"run {run.pk} is still queued after 0.3 s; it goes on: runs show {run.pk}",
        1,
    )
    assert run.status == "queued"


@db
def test_delete_removes_the_query_and_keeps_its_runs():
    run_command("query", "save", "shoe", "--url", URL, "--schema", json.dumps(SCHEMA))
    queued = run_json("query", "run", "shoe")
    out, _ = run_command("query", "delete", "shoe")
    assert out == "Deleted query shoe; its 1 run(s) stay in the history.\n"
    assert run_json("query", "list") == []
    assert [run["id"] for run in run_json("runs", "list", "--query", "shoe")] == [queued["id"]]


@db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("query", "show", "nope"), "There is no saved query named 'nope'."),
        (("query", "run", "nope", "--wait"), "There is no saved query named 'nope'."),
        (("query", "delete", "nope"), "There is no saved query named 'nope'."),
        (
            ("query", "save", "x", "--url", URL, "--schema", "@/nonexistent/schema.json"),
            "Could not read the schema file /nonexistent/schema.json: No such file or directory.",
        ),
        (
            ("query", "save", "x", "--url", URL, "--schema", '{"type": "object",}'),
            "--schema is not valid JSON: Expecting property name enclosed in double quotes at line 1, column 19 "
            "(give inline JSON, or @file to read it from a file).",
        ),
        (
            ("query", "save", "x", "--url", URL, "--schema", '{"type": "strng"}'),
            "--schema: This is not a valid JSON schema: 'strng' is not valid under any of the given schemas",
        ),
        (("query", "save", "x", "--url", URL, "--schema", "[]"), "--schema: A saved query needs a JSON schema object."),
        (
            ("query", "save", "x", "--url", URL),
            "--schema is required (or give --from-run with a past extract run's id).",
        ),
        (
            ("query", "save", "x", "--url", "file:///etc/passwd", "--schema", "{}"),
            "--url: Only http:// and https:// URLs can be fetched.",
        ),
        (
            ("query", "save", "Bad Name", "--url", URL, "--schema", "{}"),
            "name: A saved query name is 1 to 64 characters of a-z, 0-9, '-' and '_'.",
        ),
        (("runs", "show", "not-a-run"), "There is no run not-a-run."),
        (
            ("runs", "show", "00000000-0000-0000-0000-000000000000"),
            "There is no run 00000000-0000-0000-0000-000000000000.",
        ),
    ],
)
def test_errors_are_one_line_and_exit_2(args, message):
    # README: exit 2 "for an unknown query or run, an unreadable or invalid schema, a name already taken, `query save`
    # without `--url` and `--schema` (or `--from-run`)": nothing was done.
    error = failure(*args)
    assert (str(error), error.returncode) == (message, 2)


@db
def test_bad_schema_file_contents_and_taken_names_and_fetch_runs_are_refused(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"type": "object"')
    error = failure("query", "save", "x", "--url", URL, "--schema", f"@{broken}")
    assert str(error) == f"{broken} is not valid JSON: Expecting ',' delimiter at line 1, column 18."
    error = failure("query", "save", "x", "--url", URL, "--schema", f"@{tmp_path}")
    assert str(error) == f"Could not read the schema file {tmp_path}: Is a directory."

    run_command("query", "save", "shoe", "--url", URL, "--schema", json.dumps(SCHEMA))
    error = failure("query", "save", "shoe", "--url", URL, "--schema", json.dumps(SCHEMA))
    assert (str(error), error.returncode) == ("A saved query named 'shoe' already exists.", 2)

    fetch = Run.objects.create(kind="fetch", url=URL, spec={"kind": "fetch", "url": URL})
    error = failure("query", "save", "fetched", "--from-run", str(fetch.pk))
    assert (str(error), error.returncode) == (
        f"Only extract runs can become saved queries; run {fetch.pk} is a fetch run.",
        2,
    )
    error = failure("query", "run", "shoe", "--profile", "nobody")
    assert (str(error), error.returncode) == ("--profile: There is no profile named 'nobody'.", 2)
    assert SavedQuery.objects.count() == 1 and Run.objects.count() == 1


def make_run(kind: str, status: str, *, query: str | None = None, age_minutes: int = 0) -> Run:
    spec = {"kind": kind, "url": URL, **({"schema": SCHEMA} if kind == "extract" else {})}
    return Run.objects.create(
        kind=kind,
        status=status,
        url=URL,
        spec=spec,
        query=query,
        created_at=timezone.now() - timedelta(minutes=age_minutes),
    )


@db
def test_runs_list_is_newest_first_filtered_and_limited():
    oldest = make_run("fetch", "succeeded", age_minutes=30)
    failed = make_run("extract", "failed", query="shoe", age_minutes=20)
    replay = make_run("extract", "succeeded", query="shoe", age_minutes=10)
    newest = make_run("fetch", "queued")
    record_steps(replay, {"action": "navigate", "url": URL, "observation": "HTTP 200"})

    def ids(*args: str) -> list[str]:
        return [run["id"] for run in run_json("runs", "list", *args)]

    assert ids() == [str(newest.pk), str(replay.pk), str(failed.pk), str(oldest.pk)]
    assert ids("--query", "shoe") == [str(replay.pk), str(failed.pk)]
    assert ids("--kind", "fetch") == [str(newest.pk), str(oldest.pk)]
    assert ids("--status", "succeeded") == [str(replay.pk), str(oldest.pk)]
    assert ids("--query", "shoe", "--status", "failed") == [str(failed.pk)]
    assert ids("--limit", "2") == [str(newest.pk), str(replay.pk)]
    assert ids("--query", "other") == []
    (listed,) = run_json("runs", "list", "--query", "shoe", "--status", "succeeded")
    assert listed == {
        "id": str(replay.pk),
        "kind": "extract",
        "status": "succeeded",
        "url": URL,
        "spec": {"kind": "extract", "url": URL, "schema": SCHEMA},
        "query": "shoe",
        "batch": None,
        "parent": None,
        "attempts": 0,
        "result": None,
        "error": None,
        "drift": None,
        "usage": {},
        "extractedBy": None,
        "stepCount": 1,
        "createdAt": iso(replay.created_at),
        "startedAt": None,
        "finishedAt": None,
    }
    table, _ = run_command("runs", "list", "--kind", "extract")
    assert [line.split()[:4] for line in table.splitlines()] == [
        ["ID", "KIND", "STATUS", "STEPS"],
        [str(replay.pk), "extract", "succeeded", "1"],
        [str(failed.pk), "extract", "failed", "0"],
    ]
    assert run_command("runs", "list", "--query", "other")[0] == "No runs match.\n"
    error = failure("runs", "list", "--batch", "not-a-batch")
    assert str(error) == "--batch: Must be a valid UUID."


@db
def test_runs_show_prints_status_error_result_and_a_line_per_step():
    run = make_run("extract", "failed", query="shoe")
    Run.objects.filter(pk=run.pk).update(
        attempts=1,
        result={"name": "Trail shoe"},
        error={"code": "schema_mismatch", "message": "price: 'x' is not a number"},
    )
    record_steps(
        run,
        {"action": "navigate", "url": URL, "observation": "HTTP 200\nTitle: Trail shoe"},
        {"action": "extract", "url": URL, "observation": json.dumps(PRODUCT, indent=2, ensure_ascii=False)},
    )
    shown, _ = run_command("runs", "show", str(run.pk))
    assert shown.splitlines()[0] == f"run {run.pk}  extract  failed  attempt 1  query shoe"
    assert f"url:      {URL}" in shown.splitlines()
    assert "error:    schema_mismatch: price: 'x' is not a number" in shown.splitlines()
    assert shown.split("steps:    2\n", 1)[1] == (
        f"  #0   navigate     {URL}  HTTP 200\n"
        f'  #1   extract      {URL}  {{ "name": "Trail shoe", "price": "89,90 €" }}\n'
        "result:\n"
        '{\n  "name": "Trail shoe"\n}\n'
    )
    run.refresh_from_db()
    steps = list(run.steps.all())
    assert run_json("runs", "show", str(run.pk)) == {
        "id": str(run.pk),
        "kind": "extract",
        "status": "failed",
        "url": URL,
        "spec": {"kind": "extract", "url": URL, "schema": SCHEMA},
        "query": "shoe",
        "batch": None,
        "parent": None,
        "attempts": 1,
        "result": {"name": "Trail shoe"},
        "error": {"code": "schema_mismatch", "message": "price: 'x' is not a number"},
        "drift": None,
        "usage": {},
        "extractedBy": None,
        "stepCount": 2,
        "createdAt": iso(run.created_at),
        "startedAt": None,
        "finishedAt": None,
        "steps": [
            {
                "index": step.index,
                "action": step.action,
                "url": URL,
                "observation": step.observation,
                "screenshot": None,
                "page": None,
                "at": iso(step.at),
                "durationMs": 0,
            }
            for step in steps
        ],
    }


def manage(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize(
    "command",
    ["query save", "query run", "query list", "query show", "query compile", "query delete", "runs list", "runs show"],
)
def test_every_subcommand_explains_the_options_the_readme_documents(command, capsys):
    documented = README_OPTIONS[command]
    with pytest.raises(SystemExit) as exited:
        execute_from_command_line(["manage.py", *command.split(), "--help"])
    assert exited.value.code == 0
    shown = help_entries(capsys.readouterr().out)
    assert sorted(set(documented) - set(shown)) == [], f"{command} --help lacks options the README's examples use"
    for option in documented:
        explanation = shown[option][1]
        assert len(explanation.split()) >= 2 and explanation.endswith("."), (option, explanation)


# Against the whole service: `manage.py serve` with its workers, and the CLI as a second process on its database.


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    live = LiveService(tmp_path_factory.mktemp("live-cli")).start()
    yield live
    live.stop()


@pytest.fixture(scope="module")
def product_query(service, site) -> str:
    created = service.post("/api/queries", {"name": "product", "url": site.url("/product"), "schema": SCHEMA})
    assert created.status_code == 201, created.text
    return "product"


@pytest.mark.live
def test_run_wait_follows_the_replay_step_by_step_and_prints_the_result(service, product_query, site):
    result = manage("query", "run", product_query, "--wait", env=service.env)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    run_id = lines[0].split()[1]
    assert lines[0] == f"run {run_id} queued (product: {site.url('/product')})"
    assert lines[1] == f"run {run_id} started, attempt 1"
    assert [line.split()[:2] for line in lines[2:5]] == [["#0", "navigate"], ["#1", "extract"], ["#2", "validate"]]
    assert lines[3].endswith('{ "name": "Trail shoe", "price": "89,90 €" }')
    assert lines[4].endswith("valid")
    assert "\n".join(lines[5:]) == json.dumps(PRODUCT, indent=2, ensure_ascii=False)
    assert service.get(f"/api/runs/{run_id}").json()["status"] == "succeeded"


@pytest.mark.live
def test_run_wait_json_is_the_finished_run_as_the_api_shows_it(service, product_query):
    result = manage("query", "run", product_query, "--wait", "--json", env=service.env)
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout)
    assert (run["status"], run["query"], run["result"]) == ("succeeded", "product", PRODUCT)
    assert [step["action"] for step in run["steps"]] == ["navigate", "extract", "validate"]
    assert run == service.get(f"/api/runs/{run['id']}").json()


@pytest.mark.live
def test_run_wait_exits_1_with_the_error_when_the_replay_fails(service, product_query, site):
    result = manage("query", "run", product_query, "--url", site.url("/missing"), "--wait", env=service.env)
    assert result.returncode == 1
    run_id = result.stdout.splitlines()[0].split()[1]
    assert result.stderr.splitlines() == [f"error: run {run_id} failed: http_error: The page answered HTTP 404."]
    assert service.get(f"/api/runs/{run_id}").json()["url"] == site.url("/missing")
    # The stored query keeps its own URL.
    assert service.get("/api/queries/product").json()["url"] == site.url("/product")


@pytest.mark.live
def test_list_json_matches_the_api_and_bad_input_exits_2(service, product_query, tmp_path):
    listed = manage("query", "list", "--json", env=service.env)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == service.get("/api/queries").json()

    missing = manage("query", "show", "nope", env=service.env)
    assert (missing.returncode, missing.stderr) == (2, "error: There is no saved query named 'nope'.\n")
    unreadable = manage(
        "query", "save", "x", "--url", "https://a.example/", "--schema", "@/no/such.json", env=service.env
    )
    assert unreadable.returncode == 2
    assert unreadable.stderr == "error: Could not read the schema file /no/such.json: No such file or directory.\n"
    both = manage("query", "run", product_query, "--profile", "a", "--storage-state", "b.json", env=service.env)
    assert both.returncode == 2
    assert both.stderr.splitlines()[-1] == (
        "manage.py query run: error: argument --storage-state: not allowed with argument --profile"
    )
    assert manage("runs", "list", "--limit", "0", env=service.env).returncode == 2
