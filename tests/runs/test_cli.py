"""The run commands as users type them: separate processes on a temporary data directory."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime

import pytest
from django.core.management import execute_from_command_line

from tests.fake_models import FakeOpenAI
from tests.fake_searxng import FakeSearxng
from tests.live import ROOT, LiveService, help_entries, readme_cli_options

pytestmark = pytest.mark.live
README_OPTIONS = readme_cli_options()
RULES = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "x-selector": "h1.name"},
        "price": {"type": "string", "x-selector": "p.price"},
    },
}


def environment(data_dir, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SERVICE_", "DATABASE_URL", "DJANGO_ALLOW"))}
    return {
        **env,
        "SERVICE_DATA_DIR": str(data_dir),
        "ALLOW_PRIVATE_NETWORKS": "true",
        "BROWSER_ARGS": "'--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'",
        "LOG_LEVEL": "WARNING",
        **extra,
    }


def manage(data_dir, *args: str, timeout: float = 90, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment(data_dir, **env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """One data directory (and database) for the module's commands, set up as `make run` does."""
    directory = tmp_path_factory.mktemp("cli")
    assert manage(directory, "migrate", "--no-input").returncode == 0
    return directory


def test_fetch_prints_markdown_and_keeps_the_run(data_dir, site):
    done = manage(data_dir, "fetch", site.url("/static"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# Flood at the mill")
    assert done.stderr == ""  # progress is for terminals only
    listed = json.loads(manage(data_dir, "runs", "list", "--kind", "fetch", "--json").stdout)
    assert listed[0]["status"] == "succeeded" and listed[0]["url"] == site.url("/static")


def test_fetch_render_http_and_out_file(data_dir, site, tmp_path):
    out = tmp_path / "page.md"
    done = manage(data_dir, "fetch", site.url("/static"), "--render", "http", "--full", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "Flood at the mill" in out.read_text()


def test_extract_with_a_selector_schema_prints_json(data_dir, site, tmp_path):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(RULES))
    done = manage(data_dir, "extract", site.url("/product"), "--schema", f"@{schema}")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"name": "Trail shoe", "price": "89,90 €"}


def test_json_output_is_the_whole_run(data_dir, site):
    done = manage(data_dir, "extract", site.url("/product"), "--schema", json.dumps(RULES), "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert (run["kind"], run["status"], run["result"]) == (
        "extract",
        "succeeded",
        {"name": "Trail shoe", "price": "89,90 €"},
    )
    assert [step["action"] for step in run["steps"]] == ["navigate", "extract", "validate"]


def test_agent_reaches_its_goal_with_a_scripted_model(data_dir, site):
    answers = [{"tool": "done", "args": {"output": {"title": "Sign in"}}}]
    with FakeOpenAI(answers) as model:
        done = manage(
            data_dir,
            "agent",
            site.url("/login"),
            "--goal",
            "Tell me the page title",
            "--max-steps",
            "3",
            MODEL_PROVIDER="openai",
            MODEL_NAME="scripted",
            OPENAI_BASE_URL=model.base_url + "/v1",
            OPENAI_API_KEY="sk-test",
        )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"title": "Sign in"}


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("fetch", "{site}/missing"), 1),
        (("fetch", "file:///etc/passwd"), 2),
        (("fetch", "{site}/static", "--profile", "a", "--storage-state", "b.json"), 2),
        (("fetch", "{site}/static", "--render", "magic"), 2),
        (("extract", "{site}/product"), 2),  # --schema is required
        (("extract", "{site}/product", "--schema", '{"type": "object"'), 2),  # not JSON: a bad option value
        (("agent", "{site}/login"), 2),  # --goal is required
        (("agent", "{site}/login", "--goal", "x"), 2),  # no model configured
    ],
)
def test_exit_codes(data_dir, site, args, code):
    done = manage(data_dir, *(arg.replace("{site}", site.base_url) for arg in args))
    assert done.returncode == code, (done.stdout, done.stderr)
    last = done.stderr.strip().splitlines()[-1]  # argparse prints its usage first; the reason is the last line
    assert "Error" in last or "error" in last, done.stderr


def test_queue_hands_the_run_to_the_workers_and_wait_follows_it(tmp_path, site):
    service = LiveService(tmp_path).start()
    try:
        env = {k: v for k, v in service.env.items() if k.startswith(("SERVICE_DATA_DIR", "DATABASE_URL"))}
        queued = manage(tmp_path, "fetch", site.url("/page/3"), "--queue", **env)
        assert queued.returncode == 0, queued.stderr
        run = service.wait(queued.stdout.strip())
        assert run["status"] == "succeeded"

        followed = manage(tmp_path, "fetch", site.url("/page/4"), "--queue", "--wait", "--json", **env)
        assert followed.returncode == 0, followed.stderr
        assert json.loads(followed.stdout)["status"] == "succeeded"
    finally:
        service.stop()


def run_status(data_dir, url: str) -> str | None:
    """The status of the run on url in the commands' database (None before it exists)."""
    with sqlite3.connect(data_dir / "db.sqlite3", timeout=30) as db:
        row = db.execute("select status from runs_run where url = ?", (url,)).fetchone()
    return row[0] if row else None


def test_ctrl_c_cancels_the_run_cleanly(data_dir, site):
    url = site.url("/hang?s=30&for=ctrl-c")
    process = subprocess.Popen(
        [sys.executable, "manage.py", "fetch", url, "--json"],
        cwd=ROOT,
        env=environment(data_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    while run_status(data_dir, url) != "running":  # the page never loads, so the run stays running until Ctrl-C
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 1, (out, err)
    run = json.loads(out)
    assert run["status"] == "cancelled"
    assert run["error"] == {"code": "cancelled", "message": "The run was cancelled."}
    assert "cancelled" in err


def test_search_prints_results_and_json(data_dir):
    with FakeSearxng() as searxng:
        plain = manage(data_dir, "search", "python http server", "--limit", "2", SEARXNG_URL=searxng.base_url)
        as_json = manage(data_dir, "search", "python http server", "--json", SEARXNG_URL=searxng.base_url)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.startswith("1. http.server — HTTP servers — Python 3.13 documentation\n")
    assert "2. Python (programming language) - Wikipedia" in plain.stdout and "\n3. " not in plain.stdout
    assert [r["engine"] for r in json.loads(as_json.stdout)["results"]][:2] == ["duckduckgo", "wikipedia"]
    unconfigured = manage(data_dir, "search", "x")
    assert unconfigured.returncode == 2  # README: "no MODEL_PROVIDER or SEARXNG_URL where one is needed"
    assert unconfigured.stderr.startswith("error: ") and "SEARXNG_URL" in unconfigured.stderr


def test_runs_export_writes_csv_and_json(data_dir, site, tmp_path):
    since = datetime.now(UTC).isoformat()  # the module's other tests made runs before: export only this one
    extracted = manage(data_dir, "extract", site.url("/product"), "--schema", json.dumps(RULES), "--json")
    assert extracted.returncode == 0, extracted.stderr
    run_id = json.loads(extracted.stdout)["id"]
    out = tmp_path / "runs.csv"
    done = manage(
        data_dir, "runs", "export", "--format", "csv", "--kind", "extract", "--since", since, "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(out.read_text(), newline="")))
    assert [(row["runId"], row["kind"], row["name"], row["price"]) for row in rows] == [
        (run_id, "extract", "Trail shoe", "89,90 €")
    ]
    exported = manage(data_dir, "runs", "export", "--format", "json", "--kind", "extract", "--since", since)
    assert exported.returncode == 0, exported.stderr
    assert [(run["id"], run["status"], run["result"]) for run in json.loads(exported.stdout)] == [
        (run_id, "succeeded", {"name": "Trail shoe", "price": "89,90 €"})
    ]
    bad = manage(data_dir, "runs", "export", "--format", "json", "--since", "yesterday")
    assert bad.returncode == 2 and "--since" in bad.stderr


def test_runs_reextract_reads_the_archive_and_prints_the_new_json(data_dir, site, tmp_path):
    first = {"type": "object", "properties": {"name": RULES["properties"]["name"]}}
    extracted = manage(data_dir, "extract", site.url("/product"), "--schema", json.dumps(first), "--json")
    run_id = json.loads(extracted.stdout)["id"]
    hits = site.hits("/product")
    schema = tmp_path / "more.json"
    schema.write_text(json.dumps(RULES))
    done = manage(data_dir, "runs", "reextract", run_id, "--schema", f"@{schema}")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"name": "Trail shoe", "price": "89,90 €"}
    assert site.hits("/product") == hits
    as_json = manage(data_dir, "runs", "reextract", run_id, "--json")
    again = json.loads(as_json.stdout)
    assert again["spec"]["source"]["archivedRun"] == run_id and again["result"] == {"name": "Trail shoe"}
    assert again["drift"]["comparedWith"] == run_id
    nothing = manage(data_dir, "runs", "reextract", "00000000-0000-0000-0000-000000000000")
    assert nothing.returncode == 2 and nothing.stderr.startswith("error: There is no run")


@pytest.mark.parametrize("command", ["fetch", "crawl", "extract", "agent", "search", "runs export", "runs reextract"])
def test_help_explains_every_option_the_readme_documents(command, capsys):
    documented = README_OPTIONS[command]
    with pytest.raises(SystemExit) as exited:
        execute_from_command_line(["manage.py", *command.split(), "--help"])
    assert exited.value.code == 0
    shown = help_entries(capsys.readouterr().out)
    assert sorted(set(documented) - set(shown)) == [], f"{command} --help lacks options its README row documents"
    for option, values in documented.items():
        invocation, explanation = shown[option]
        assert len(explanation.split()) >= 2, (option, explanation)  # an explanation, not just a word
        assert set(values) <= set(re.findall(r"[a-z]+", invocation.removeprefix(option))), (option, invocation)
