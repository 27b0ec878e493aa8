"""Bad input to the CLI, typed as a new user would: one plain line on standard error, the exit code of the README's
rule (2: nothing was done because of what was typed; 1: it was tried and did not work), and nothing left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import get_commands, load_command_class

from queries.models import SavedQuery
from runs.models import Run
from tests.live import ROOT

pytestmark = pytest.mark.django_db(transaction=True)

RULES = {"type": "object", "properties": {"name": {"type": "string", "x-selector": "h1.name"}}}
NO_RUN = "00000000-0000-0000-0000-000000000000"


def typed(capsys, *argv: str) -> tuple[int, str, str]:
    """The command as a shell runs it: through run_from_argv, Django's entry point for a typed command (manage.py
    calls it), in this process. Returns the exit code, standard output and standard error."""
    command = load_command_class(get_commands()[argv[0]], argv[0])
    try:
        command.run_from_argv(["manage.py", *argv])
        code = 0
    except SystemExit as exit:
        code = exit.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def inputs(data_dir, tmp_path_factory):
    """What the cases refer to: a saved query, storage-state files inside the data dir, schema files, a folder."""
    SavedQuery.objects.create(name="shoe", url="https://shop.example/p/1", schema=RULES)
    states = data_dir / "states"
    states.mkdir()
    for name, content in (("bad.json", "not json"), ("foo.json", json.dumps({"foo": 1}))):
        fd = os.open(states / name, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, content.encode())
        os.close(fd)
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "schema.json").write_text(json.dumps(RULES))
    return {"{elsewhere}": str(elsewhere), "{run}": NO_RUN}


def expand(args: tuple[str, ...], site, inputs: dict[str, str]) -> list[str]:
    values = {"{site}": site.base_url, **inputs}
    expanded = []
    for arg in args:
        for key, value in values.items():
            arg = arg.replace(key, value)
        expanded.append(arg)
    return expanded


# (argv, the whole of standard error). Every one is refused before anything happens: exit 2.
REFUSED = [
    # --out is checked before the run or the export starts (the fetch used to save a run whose Markdown was lost).
    (
        ("runs", "export", "--format", "csv", "--out", "/nonexistent/x.csv"),
        "error: --out /nonexistent/x.csv: the folder /nonexistent does not exist.",
    ),
    (
        ("fetch", "{site}/static", "--out", "/nonexistent/x.md"),
        "error: --out /nonexistent/x.md: the folder /nonexistent does not exist.",
    ),
    (
        ("fetch", "{site}/static", "--out", "{elsewhere}"),
        "error: --out {elsewhere} is a directory; give a file name.",
    ),
    (
        ("fetch", "{site}/static", "--queue", "--out", "{elsewhere}/page.md"),
        "error: --out needs the run's Markdown: with --queue, add --wait.",
    ),
    # Options that mean nothing alone.
    (
        ("fetch", "{site}/static", "--wait"),
        "error: --wait goes with --queue (without --queue the run executes here and is followed anyway).",
    ),
    (
        ("query", "run", "shoe", "--timeout", "5"),
        "error: --timeout goes with --wait (it bounds how long the replay is followed).",
    ),
    # Values the serializer refuses, named as options.
    (
        ("fetch", "{site}/static", "--timeout-ms", "500"),
        "error: --timeout-ms: Ensure this value is greater than or equal to 1000.",
    ),
    (("runs", "list", "--batch", "x"), "error: --batch: Must be a valid UUID."),
    (("runs", "export", "--format", "json", "--since", "yesterday"), None),  # --since: DRF's date-time message
    # Unknown names and ids.
    (
        ("fetch", "{site}/static", "--profile", "a", "--storage-state", "b.json"),
        "error: Give --profile or --storage-state, not both.",
    ),
    (("fetch", "{site}/static", "--profile", "nosuch"), "error: --profile: There is no profile named 'nosuch'."),
    (("query", "run", "shoe", "--profile", "nosuch"), "error: --profile: There is no profile named 'nosuch'."),
    (
        ("agent", "{site}/login", "--goal", "x", "--cred", "nosuch"),
        "error: --cred: There is no credential named 'nosuch'; create it with `manage.py cred set`.",
    ),
    (("query", "show", "nope"), "error: There is no saved query named 'nope'."),
    (("query", "run", "nope", "--wait"), "error: There is no saved query named 'nope'."),
    (("query", "delete", "nope"), "error: There is no saved query named 'nope'."),
    (("runs", "show", "nope"), "error: There is no run nope."),
    (("runs", "show", "{run}"), "error: There is no run {run}."),
    (("query", "save", "x", "--from-run", "{run}"), "error: There is no run {run}."),
    (("profile", "delete", "nosuch"), "error: There is no profile named 'nosuch'."),
    (("apikey", "revoke", "nosuch"), "error: There is no active key named 'nosuch'."),
    # Schema files and schemas: the same mistake, the same answer, in extract and in query save.
    (
        ("extract", "{site}/product", "--schema", "@{elsewhere}/missing.json"),
        "error: Could not read the schema file {elsewhere}/missing.json: No such file or directory.",
    ),
    (
        ("query", "save", "x", "--url", "{site}/product", "--schema", "@{elsewhere}/missing.json"),
        "error: Could not read the schema file {elsewhere}/missing.json: No such file or directory.",
    ),
    (
        ("extract", "{site}/product", "--schema", '{"type": "object"'),
        "error: --schema is not valid JSON: Expecting ',' delimiter at line 1, column 18 (give inline JSON, or "
        "@file to read it from a file).",
    ),
    (
        ("query", "save", "x", "--url", "{site}/product", "--schema", '{"type": "object"'),
        "error: --schema is not valid JSON: Expecting ',' delimiter at line 1, column 18 (give inline JSON, or "
        "@file to read it from a file).",
    ),
    (
        ("extract", "{site}/product", "--schema", '{"type": "strng"}'),
        "error: --schema: This is not a valid JSON schema: 'strng' is not valid under any of the given schemas",
    ),
    (
        ("query", "save", "x", "--url", "{site}/product", "--schema", '{"type": "strng"}'),
        "error: --schema: This is not a valid JSON schema: 'strng' is not valid under any of the given schemas",
    ),
    # query save names its options, never the API's fields.
    (
        ("query", "save", "x"),
        "error: --url and --schema are required (or give --from-run with a past extract run's id).",
    ),
    (
        ("query", "save", "x", "--url", "{site}/product"),
        "error: --schema is required (or give --from-run with a past extract run's id).",
    ),
    (
        ("query", "save", "x", "--from-run", "{run}", "--url", "{site}/product"),
        "error: Give --from-run, or --url and --schema (with --instruction), not both.",
    ),
    (
        ("query", "save", "shoe", "--url", "{site}/product", "--schema", "@{elsewhere}/schema.json"),
        "error: A saved query named 'shoe' already exists.",
    ),
    # What the service needs is not configured.
    (("search", "anything"), None),  # names SEARXNG_URL
    (("agent", "{site}/login", "--goal", "x"), None),  # names MODEL_PROVIDER
]


@pytest.mark.parametrize(("args", "message"), REFUSED, ids=[" ".join(args) for args, _ in REFUSED])
def test_bad_input_is_one_line_exit_2_and_nothing_is_created(capsys, site, inputs, data_dir, settings, args, message):
    settings.SEARXNG_URL = None
    settings.MODEL_PROVIDER = None
    before = sorted(path.relative_to(data_dir) for path in data_dir.rglob("*") if "test-db" not in path.name)
    code, out, err = typed(capsys, *expand(args, site, inputs))
    assert (code, out) == (2, ""), err
    assert err.startswith("error: ") and err.endswith("\n") and err.count("\n") == 1, err
    if message is not None:
        assert err == expand((message,), site, inputs)[0] + "\n"
    assert Run.objects.count() == 0
    assert list(SavedQuery.objects.values_list("name", flat=True)) == ["shoe"]
    after = sorted(path.relative_to(data_dir) for path in data_dir.rglob("*") if "test-db" not in path.name)
    assert after == before
    assert not Path(inputs["{elsewhere}"], "page.md").exists()


def test_unconfigured_search_and_model_name_the_variable_to_set(capsys, site, settings):
    settings.SEARXNG_URL = None
    settings.MODEL_PROVIDER = None
    code, _, err = typed(capsys, "search", "anything")
    assert (code, err) == (
        2,
        "error: Search needs a SearXNG instance: set SEARXNG_URL (for example http://127.0.0.1:8888) and enable its "
        "json format.\n",
    )
    code, _, err = typed(capsys, "agent", site.url("/login"), "--goal", "x")
    assert code == 2 and err.startswith("error: Agent runs need a model: set MODEL_PROVIDER"), err


@pytest.mark.parametrize("state", ["bad.json", "foo.json"])
def test_a_storage_state_file_that_is_not_a_state_is_refused_before_the_run(capsys, site, inputs, state):
    """`not json` used to fail the run with a Playwright traceback; `{"foo": 1}` used to be silently ignored."""
    for command in (("fetch", site.url("/static")), ("query", "run", "shoe")):
        code, out, err = typed(capsys, *command, "--storage-state", f"states/{state}")
        assert (code, out) == (2, ""), err
        assert err.startswith("error: --storage-state ") and err.count("\n") == 1, err
        assert "storageStatePath" not in err and "not json" not in err
    assert Run.objects.count() == 0


@pytest.mark.parametrize(
    ("args", "last_line"),
    [
        (
            ("query", "run", "shoe", "--wait", "--timeout", "-3"),
            "argument --timeout: give a number of seconds above 0, not '-3'",
        ),
        (
            ("query", "run", "shoe", "--wait", "--timeout", "nan"),
            "argument --timeout: give a number of seconds above 0, not 'nan'",
        ),
        (
            ("query", "run", "shoe", "--wait", "--timeout", "0"),
            "argument --timeout: give a number of seconds above 0, not '0'",
        ),
        (
            ("fetch", "{site}/static", "--timeout-ms", "-3"),
            "argument --timeout-ms: give a whole number of at least 1, not '-3'",
        ),
        (
            ("agent", "{site}/login", "--goal", "x", "--max-steps", "0"),
            "argument --max-steps: give a whole number of at least 1, not '0'",
        ),
        (("runs", "list", "--limit", "0"), "argument --limit: give a whole number of at least 1, not '0'"),
        (
            ("fetch", "{site}/static", "--render", "magic"),
            "argument --render: invalid choice: 'magic' (choose from 'auto', 'browser', 'http')",
        ),
    ],
)
def test_bad_option_values_are_usage_errors_before_anything_is_queued(capsys, site, inputs, args, last_line):
    argv = expand(args, site, inputs)
    code, out, err = typed(capsys, *argv)
    assert (code, out) == (2, ""), err
    assert err.startswith("usage: manage.py "), err
    subcommand = " ".join(argv[:2]) if argv[0] in ("query", "runs") else argv[0]
    assert err.splitlines()[-1] == f"manage.py {subcommand}: error: {last_line}"
    assert Run.objects.count() == 0
    assert SavedQuery.objects.get(name="shoe").run_count == 0


def test_a_failed_run_exits_1_with_its_error_and_stays_in_the_history(capsys, site):
    code, out, err = typed(capsys, "fetch", site.url("/missing"))
    run = Run.objects.get()
    assert (code, out, err) == (1, "", f"error: run {run.pk} failed: http_error: The page answered HTTP 404.\n")
    assert run.status == "failed"


def test_a_full_queue_is_exit_1_try_again_and_nothing_is_queued(capsys, site, inputs, settings):
    """Not the user's mistake, and not done: the same code as any attempt that did not work."""
    settings.QUEUE_MAX_DEPTH = 0
    for command in (("fetch", site.url("/static"), "--queue"), ("query", "run", "shoe")):
        code, out, err = typed(capsys, *command)
        assert (code, out) == (1, ""), err
        assert err == "error: The queue is full (0 runs waiting, QUEUE_MAX_DEPTH=0); try again later.\n"
    assert Run.objects.count() == 0


def test_out_is_written_when_the_run_succeeds(capsys, site, tmp_path_factory):
    out_file = tmp_path_factory.mktemp("out") / "page.md"
    code, out, err = typed(capsys, "fetch", site.url("/static"), "--out", str(out_file))
    assert (code, out, err) == (0, "", "")  # "wrote …" is progress: only on a terminal
    run = Run.objects.get()
    assert out_file.read_text() == run.result["markdown"] and run.result["markdown"].startswith("# Flood at the mill")


def manage(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SERVICE_", "DATABASE_URL", "DJANGO_ALLOW"))}
    env.pop("LOG_LEVEL", None)
    env.update(SERVICE_DATA_DIR=str(data_dir), ALLOW_PRIVATE_NETWORKS="true")
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_typed_in_a_shell_an_error_is_one_plain_line_without_a_traceback(tmp_path_factory, site):
    """The same path through manage.py itself: no `CommandError:` prefix, no traceback, the exit code."""
    data_dir = tmp_path_factory.mktemp("typed")
    assert manage(data_dir, "migrate", "--no-input").returncode == 0
    fd = os.open(data_dir / "bad.json", os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"not json")
    os.close(fd)
    refused = manage(data_dir, "fetch", site.url("/static"), "--storage-state", "bad.json", "--out", "/nonexistent/x")
    assert (refused.returncode, refused.stdout, refused.stderr) == (
        2,
        "",
        "error: --out /nonexistent/x: the folder /nonexistent does not exist.\n",
    )
    refused = manage(data_dir, "fetch", site.url("/static"), "--storage-state", "bad.json")
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr.startswith("error: --storage-state ") and refused.stderr.count("\n") == 1, refused.stderr
    listed = manage(data_dir, "runs", "list", "--json")
    assert (listed.returncode, json.loads(listed.stdout)) == (0, [])


def test_a_data_directory_never_migrated_says_to_migrate(tmp_path_factory):
    fresh = manage(tmp_path_factory.mktemp("fresh"), "runs", "list")
    assert (fresh.returncode, fresh.stdout, fresh.stderr) == (
        2,
        "",
        "error: The database has no tables yet (a fresh data directory?): run `manage.py migrate` first.\n",
    )
