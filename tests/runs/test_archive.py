"""The page archive and re-extraction: every page a run loads is kept (the HTML the snapshot saw), served as a
download that no browser renders in the service's origin, cut and pruned by the settings; a re-extraction reads it
instead of the network and says how its result differs from the source run's."""

from __future__ import annotations

import gzip
import json
from datetime import timedelta

import pytest
from django.utils import timezone

from runs.archive import prune_archives
from runs.jobs import execute_run
from runs.models import Run
from tests.fake_models import FakeOpenAI

pytestmark = pytest.mark.django_db(transaction=True)

RULES = {
    "type": "object",
    "properties": {"name": {"type": "string", "x-selector": "h1.name"}},
    "required": ["name"],
}
MORE_RULES = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "x-selector": "h1.name"},
        "price": {"type": "string", "x-selector": "p.price"},
    },
    "required": ["name", "price"],
}


def run_now(api, spec: dict) -> dict:
    created = api.post("/api/runs", spec, format="json")
    assert created.status_code == 201, created.content
    execute_run(created.json()["id"])
    return api.get(f"/api/runs/{created.json()['id']}").json()


def archived_step(run: dict) -> dict:
    (step,) = [step for step in run["steps"] if step["page"]]
    return step


@pytest.mark.parametrize("render", ["browser", "http"])
def test_a_fetch_run_archives_the_page_it_read_and_serves_it_as_a_download(api, site, data_dir, render):
    path = "/js" if render == "browser" else "/static"
    run = run_now(api, {"kind": "fetch", "url": site.url(path), "options": {"render": render}})
    assert run["status"] == "succeeded", run["error"]
    step = archived_step(run)
    assert step["action"] == "navigate"
    page = step["page"]
    assert (page["url"], page["status"], page["contentType"], page["truncated"]) == (
        site.url(path),
        200,
        "text/html",
        False,
    )
    assert page["href"] == f"/api/runs/{run['id']}/steps/{step['index']}/page"
    assert [s["index"] for s in run["steps"] if not s["page"]] == [1]  # the snapshot loaded nothing

    download = api.get(page["href"])
    assert download.status_code == 200
    assert download["Content-Type"] == "text/html; charset=utf-8"
    assert download["Content-Disposition"] == f'attachment; filename="run-{run["id"]}-step-{step["index"]}.html"'
    assert download["Content-Security-Policy"] == "sandbox"
    assert download["X-Content-Type-Options"] == "nosniff"
    html = download.content.decode()
    assert len(download.content) == page["bytes"]
    if render == "browser":  # what the snapshot saw: the DOM after the page's scripts ran and settled
        assert "This paragraph was written by JavaScript." in html
        assert "A late paragraph appended after load." in html
    else:
        assert "Flood at the mill" in html
    (kept,) = (data_dir / "archives" / run["id"]).glob("*.html.gz")
    assert kept.name == f"1-{step['index']}.html.gz"  # attempt 1
    assert gzip.decompress(kept.read_bytes()) == download.content

    exported = b"".join(api.get(f"/api/export?format=json&id={run['id']}").streaming_content)
    assert json.loads(exported)[0]["result"] == run["result"]  # the run's Markdown, not its archived HTML
    assert b"<p>" not in exported and b"html.gz" not in exported and page["href"].encode() not in exported


def test_each_agent_step_archives_the_page_with_the_status_of_the_document_it_shows(api, site, settings, data_dir):
    script = [
        {"tool": "goto", "args": {"url": site.url("/missing")}},
        {"tool": "goto", "args": {"url": site.url("/r/2")}},  # two redirects, then /static
        {"tool": "done", "args": {"output": {}}},
    ]
    with FakeOpenAI(script) as server:
        settings.MODEL_PROVIDER, settings.MODEL_NAME = "openai", "scripted"
        settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = server.base_url + "/v1", "sk-test"
        run = run_now(api, {"kind": "agent", "url": site.url("/static"), "goal": "Look around"})
    assert run["status"] == "succeeded", run["error"]
    pages = [(step["page"]["url"], step["page"]["status"], step["page"]["contentType"]) for step in run["steps"][:3]]
    assert pages == [
        (site.url("/static"), 200, "text/html"),
        (site.url("/missing"), 404, "text/html"),
        (site.url("/static"), 200, "text/html"),
    ]
    assert "<h1>404</h1>" in api.get(run["steps"][1]["page"]["href"]).content.decode()


def test_an_archived_page_is_cut_past_archive_max_bytes_and_says_so(api, site, settings):
    settings.ARCHIVE_MAX_BYTES = 10_000
    run = run_now(api, {"kind": "fetch", "url": site.url("/long"), "options": {"render": "http"}})
    page = archived_step(run)["page"]
    assert page["truncated"] is True and 9_990 <= page["bytes"] <= 10_000
    assert len(api.get(page["href"]).content) == page["bytes"]


def test_archives_older_than_the_retention_are_pruned_and_none_are_kept_at_zero(api, site, settings, data_dir):
    old = run_now(api, {"kind": "fetch", "url": site.url("/static"), "options": {"render": "http"}})
    recent = run_now(api, {"kind": "fetch", "url": site.url("/static"), "options": {"render": "http"}})
    Run.objects.filter(pk=old["id"]).update(created_at=timezone.now() - timedelta(days=31))

    assert prune_archives() == 1
    assert not (data_dir / "archives" / old["id"]).exists()
    old_page = archived_step(old)["page"]["href"]
    assert api.get(old_page).status_code == 404
    assert all(step["page"] is None for step in api.get(f"/api/runs/{old['id']}").json()["steps"])
    assert api.get(archived_step(recent)["page"]["href"]).status_code == 200

    settings.ARCHIVE_RETENTION_DAYS = 0
    unkept = run_now(api, {"kind": "fetch", "url": site.url("/static"), "options": {"render": "http"}})
    assert unkept["status"] == "succeeded"
    assert all(step["page"] is None for step in unkept["steps"])
    assert prune_archives() == 1  # at 0, what was kept goes too
    assert not (data_dir / "archives" / recent["id"]).exists()


def test_a_step_without_an_archived_page_is_404_in_the_error_shape(api, site):
    run = run_now(api, {"kind": "fetch", "url": site.url("/static"), "options": {"render": "http"}})
    response = api.get(f"/api/runs/{run['id']}/steps/1/page")  # the snapshot step
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert api.get(f"/api/runs/{run['id']}/steps/9/page").status_code == 404


def test_a_reextraction_reads_the_archive_makes_no_request_and_records_drift(api, site):
    source = run_now(api, {"kind": "extract", "url": site.url("/product"), "schema": RULES})
    assert source["status"] == "succeeded" and source["result"] == {"name": "Trail shoe"}
    hits = site.hits("/product")

    created = api.post(f"/api/runs/{source['id']}/reextract", {"schema": MORE_RULES}, format="json")
    assert created.status_code == 201, created.content
    spec = created.json()["spec"]
    assert spec["source"] == {"archivedRun": source["id"], "step": archived_step(source)["index"]}
    assert (created.json()["kind"], created.json()["status"], spec["url"]) == (
        "extract",
        "queued",
        site.url("/product"),
    )
    execute_run(created.json()["id"])
    run = api.get(f"/api/runs/{created.json()['id']}").json()

    assert run["status"] == "succeeded", run["error"]
    assert run["result"] == {"name": "Trail shoe", "price": "89,90 €"}
    assert site.hits("/product") == hits  # no request reached the page
    assert [step["action"] for step in run["steps"]] == ["load-archive", "extract", "validate"]
    assert f"read from the archive of run {source['id']}" in run["steps"][0]["observation"]
    assert run["steps"][0]["page"]["url"] == site.url("/product")  # archived again: it can be re-extracted too
    assert run["drift"] == {"comparedWith": source["id"], "changed": [], "emptied": [], "appeared": ["price"]}

    again = api.post(f"/api/runs/{source['id']}/reextract", {}, format="json")  # the source's schema
    execute_run(again.json()["id"])
    same = api.get(f"/api/runs/{again.json()['id']}").json()
    assert same["result"] == source["result"] and same["spec"]["schema"] == RULES
    assert same["drift"] == {"comparedWith": source["id"], "changed": [], "emptied": [], "appeared": []}


def test_reextraction_refuses_what_it_cannot_do_and_creates_nothing(api, site, data_dir):
    fetched = run_now(api, {"kind": "fetch", "url": site.url("/static"), "options": {"render": "http"}})
    queued = api.post("/api/runs", {"kind": "fetch", "url": site.url("/static")}, format="json").json()
    before = Run.objects.count()

    no_schema = api.post(f"/api/runs/{fetched['id']}/reextract", {}, format="json")
    assert no_schema.status_code == 400 and "schema" in no_schema.json()["error"]["fields"]
    not_loaded = api.post(f"/api/runs/{queued['id']}/reextract", {"schema": RULES}, format="json")
    assert not_loaded.status_code == 409 and not_loaded.json()["error"]["code"] == "no_archived_page"
    wrong_step = api.post(f"/api/runs/{fetched['id']}/reextract", {"schema": RULES, "step": 1}, format="json")
    assert wrong_step.status_code == 409
    bad_schema = api.post(f"/api/runs/{fetched['id']}/reextract", {"schema": [1]}, format="json")
    assert bad_schema.status_code == 400 and "schema" in bad_schema.json()["error"]["fields"]
    unknown = api.post(f"/api/runs/{fetched['id']}/reextract", {"schema": RULES, "url": "x"}, format="json")
    assert unknown.status_code == 400 and unknown.json()["error"]["fields"] == {"url": ["This field is not allowed."]}
    missing = api.post("/api/runs/00000000-0000-0000-0000-000000000000/reextract", {}, format="json")
    assert missing.status_code == 404
    assert Run.objects.count() == before

    # Submitted, then the archive went before a worker took it: the run fails with a code, not a crash.
    created = api.post(f"/api/runs/{fetched['id']}/reextract", {"schema": RULES}, format="json")
    assert created.status_code == 201
    for kept in (data_dir / "archives" / fetched["id"]).iterdir():
        kept.unlink()
    execute_run(created.json()["id"])
    run = api.get(f"/api/runs/{created.json()['id']}").json()
    assert run["status"] == "failed" and run["error"]["code"] == "archive_missing"


def test_a_source_is_an_archived_page_with_its_own_url(api, site):
    fetched = run_now(api, {"kind": "fetch", "url": site.url("/static"), "options": {"render": "http"}})
    source = {"archivedRun": fetched["id"], "step": 0}
    spec = {"kind": "extract", "url": site.url("/static"), "schema": RULES, "source": source}
    assert api.post("/api/runs", spec, format="json").status_code == 201
    elsewhere = api.post("/api/runs", {**spec, "url": site.url("/product")}, format="json")
    assert elsewhere.status_code == 400 and "url" in elsewhere.json()["error"]["fields"]
    nothing = api.post("/api/runs", {**spec, "source": {**source, "step": 1}}, format="json")
    assert nothing.status_code == 400 and "source" in nothing.json()["error"]["fields"]
    fetch_with_source = {"kind": "fetch", "url": site.url("/static"), "source": source}
    refused = api.post("/api/runs", fetch_with_source, format="json")
    assert refused.status_code == 400 and refused.json()["error"]["fields"] == {
        "source": ["Only extract runs take source."]
    }
