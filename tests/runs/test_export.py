"""GET /api/export: every run matching the filters, streamed as one JSON array or a CSV file."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import async_to_sync
from asgiref.testing import ApplicationCommunicator
from django.db import connection

from runs import export
from runs.models import Batch, Run

pytestmark = pytest.mark.django_db

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
HEADER = ["runId", "kind", "url", "status", "createdAt"]


def make_run(n: int, **fields) -> Run:
    fields.setdefault("kind", "extract")
    fields.setdefault("status", "succeeded")
    url = f"https://shop.example/item/{n}"
    return Run.objects.create(
        url=url,
        spec={"kind": fields["kind"], "url": url},
        created_at=START + timedelta(minutes=n, microseconds=n),
        **fields,
    )


def fetch_result(n: int, markdown: str) -> dict:
    url = f"https://shop.example/item/{n}"
    return {"url": url, "finalUrl": url + "/", "status": 200, "title": f"Item {n}", "markdown": markdown, "links": []}


def body(response) -> str:
    assert response.status_code == 200, response.content
    assert response.streaming
    return b"".join(response.streaming_content).decode()


def export_json(api, **params) -> list[dict]:
    return json.loads(body(api.get("/api/export", {"format": "json", **params})))


def export_csv(api, **params) -> tuple[list[str], list[dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(body(api.get("/api/export", {"format": "csv", **params})), newline=""))
    return list(reader.fieldnames or []), list(reader)


def result_columns(header: list[str]) -> list[str]:
    """The columns after the run's own. They come in the order the database keeps a result's keys in, which
    Postgres's jsonb changes, so they are compared sorted."""
    assert header[: len(HEADER)] == HEADER
    return sorted(header[len(HEADER) :])


def run_cells(run: Run) -> dict[str, str]:
    created = run.created_at.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return {"runId": str(run.id), "kind": run.kind, "url": run.url, "status": run.status, "createdAt": created}


def test_json_is_an_array_of_runs_with_the_fields_of_the_runs_api(api):
    batch = Batch.objects.create()
    fetch = make_run(1, kind="fetch", result=fetch_result(1, "# Caf\u00e9 \u2615\n\nText."), query="menu")
    failed = make_run(
        2,
        status="failed",
        batch=batch,
        attempts=2,
        result={"price": None},
        error={"code": "schema_mismatch", "message": "price is null"},
        drift={"changed": ["price"], "comparedWith": "00000000-0000-0000-0000-000000000001"},
        usage={"inputTokens": 10, "outputTokens": 3, "browserMs": 812},
        extracted_by="model",
        started_at=START + timedelta(minutes=2, seconds=1),
        finished_at=START + timedelta(minutes=2, seconds=3, microseconds=500),
    )
    queued = make_run(3, status="queued")

    runs = export_json(api)

    assert runs == [
        {
            "id": str(fetch.id),
            "kind": "fetch",
            "status": "succeeded",
            "url": "https://shop.example/item/1",
            "spec": {"kind": "fetch", "url": "https://shop.example/item/1"},
            "query": "menu",
            "batch": None,
            "parent": None,
            "attempts": 0,
            "result": fetch_result(1, "# Caf\u00e9 \u2615\n\nText."),
            "error": None,
            "drift": None,
            "usage": {},
            "extractedBy": None,
            "createdAt": "2026-03-01T12:01:00.000001Z",
            "startedAt": None,
            "finishedAt": None,
        },
        {
            "id": str(failed.id),
            "kind": "extract",
            "status": "failed",
            "url": "https://shop.example/item/2",
            "spec": {"kind": "extract", "url": "https://shop.example/item/2"},
            "query": None,
            "batch": str(batch.id),
            "parent": None,
            "attempts": 2,
            "result": {"price": None},
            "error": {"code": "schema_mismatch", "message": "price is null"},
            "drift": {"changed": ["price"], "comparedWith": "00000000-0000-0000-0000-000000000001"},
            "usage": {"inputTokens": 10, "outputTokens": 3, "browserMs": 812},
            "extractedBy": "model",
            "createdAt": "2026-03-01T12:02:00.000002Z",
            "startedAt": "2026-03-01T12:02:01Z",
            "finishedAt": "2026-03-01T12:02:03.000500Z",
        },
        {
            "id": str(queued.id),
            "kind": "extract",
            "status": "queued",
            "url": "https://shop.example/item/3",
            "spec": {"kind": "extract", "url": "https://shop.example/item/3"},
            "query": None,
            "batch": None,
            "parent": None,
            "attempts": 0,
            "result": None,
            "error": None,
            "drift": None,
            "usage": {},
            "extractedBy": None,
            "createdAt": "2026-03-01T12:03:00.000003Z",
            "startedAt": None,
            "finishedAt": None,
        },
    ]
    # The same objects GET /api/runs?include=result gives (whole runs), less stepCount (counting steps would defeat
    # streaming).
    whole = api.get("/api/runs?include=result").json()["results"]
    listed = [{k: v for k, v in run.items() if k != "stepCount"} for run in whole]
    assert runs == listed[::-1]


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_filters_are_those_of_the_runs_api_plus_since_and_until(api, fmt):
    batch = Batch.objects.create()
    fetch = make_run(1, kind="fetch")
    failed = make_run(2, status="failed")
    saved = make_run(3, query="prices")
    batched = make_run(4, batch=batch)
    agent = make_run(5, kind="agent")

    def ids(**params) -> list[str]:
        if fmt == "json":
            return [run["id"] for run in export_json(api, **params)]
        return [row["runId"] for row in export_csv(api, **params)[1]]

    assert ids() == [str(run.id) for run in (fetch, failed, saved, batched, agent)]
    assert ids(kind="fetch") == [str(fetch.id)]
    assert ids(status="failed") == [str(failed.id)]
    assert ids(query="prices") == [str(saved.id)]
    assert ids(batch=str(batch.id)) == [str(batched.id)]
    # since is inclusive, until exclusive, both on createdAt.
    assert ids(since=batched.created_at.isoformat()) == [str(batched.id), str(agent.id)]
    assert ids(until=failed.created_at.isoformat()) == [str(fetch.id)]
    assert ids(since="2026-03-01T12:02:00Z", until="2026-03-01T12:04:00Z") == [str(failed.id), str(saved.id)]
    assert ids(kind="extract", status="succeeded") == [str(saved.id), str(batched.id)]
    assert ids(kind="agent", status="failed") == []
    # One run, as the playground's "Export CSV" of a run asks for it.
    assert ids(id=str(saved.id)) == [str(saved.id)]
    assert ids(id=str(saved.id), kind="fetch") == []


def test_csv_has_one_row_per_result_record_with_nested_fields_as_dotted_columns(api):
    single = make_run(
        1,
        result={
            "name": "Widget, large",
            "price": 12.5,
            "stock": 3,
            "inStock": True,
            "brand": {"name": "Acme", "address": {"country": "DE"}},
            "tags": ["tools", "garden"],
            "dimensions": {},
            "note": None,
        },
    )
    listed = make_run(
        2,
        result=[
            {"name": "First", "price": 1, "brand": {"name": "Bolt"}},
            {"name": "Second", "inStock": False},
            {"name": "Third", "sizes": [{"eu": 42}]},
        ],
    )

    header, rows = export_csv(api)

    assert result_columns(header) == sorted(
        [
            "name",
            "price",
            "stock",
            "inStock",
            "brand.name",
            "brand.address.country",
            "tags",
            "dimensions",
            "note",
            "sizes",
        ]
    )
    empty = dict.fromkeys(header[len(HEADER) :], "")
    assert rows == [
        {
            **run_cells(single),
            **empty,
            "name": "Widget, large",
            "price": "12.5",
            "stock": "3",
            "inStock": "true",
            "brand.name": "Acme",
            "brand.address.country": "DE",
            "tags": '["tools","garden"]',
            "dimensions": "{}",
        },
        {**run_cells(listed), **empty, "name": "First", "price": "1", "brand.name": "Bolt"},
        {**run_cells(listed), **empty, "name": "Second", "inStock": "false"},
        {**run_cells(listed), **empty, "name": "Third", "sizes": '[{"eu":42}]'},
    ]


def test_csv_fetch_runs_have_their_markdown_in_a_markdown_column_that_round_trips(api):
    markdown = (
        '# Prices, "best" offers\n\nA line with, commas;\r\nand a "quoted, comma" word.\n\n'
        '| a | b |\n|---|---|\n| 1,5 | "2" |\n\nCaf\u00e9 \u2615 \u00fcber\n'
    )
    run = make_run(1, kind="fetch", result=fetch_result(1, markdown) | {"links": ["https://a.example/x,y"]})
    failed = make_run(
        2, kind="fetch", status="failed", error={"code": "navigation_failed", "message": "net::ERR_NAME_NOT_RESOLVED"}
    )

    header, rows = export_csv(api, kind="fetch")

    # The fetch result's own url and HTTP status do not take the run's columns.
    assert result_columns(header) == sorted(["result.url", "finalUrl", "result.status", "title", "markdown", "links"])
    assert rows == [
        {
            **run_cells(run),
            "result.url": "https://shop.example/item/1",
            "finalUrl": "https://shop.example/item/1/",
            "result.status": "200",
            "title": "Item 1",
            "markdown": markdown,
            "links": '["https://a.example/x,y"]',
        },
        {
            **run_cells(failed),
            "result.url": "",
            "finalUrl": "",
            "result.status": "",
            "title": "",
            "markdown": "",
            "links": "",
        },
    ]


def test_csv_results_that_are_not_objects_go_in_a_result_column_and_field_names_never_collide(api):
    text = make_run(1, kind="agent", result="The order was placed.")
    scalars = make_run(2, kind="agent", result=["a", "b"])
    nothing = make_run(3, kind="agent", result=[])
    number = make_run(4, kind="agent", result=42)
    colliding = make_run(
        5,
        result={"url": "u", "status": "in stock", "runId": "r", "result": "x", "result.kind": "y", "kind": {"a": 1}},
    )

    header, rows = export_csv(api)

    assert result_columns(header) == sorted(
        ["result", "result.url", "result.status", "result.runId", "result.result", "result.result.kind", "kind.a"]
    )
    empty = dict.fromkeys(header[len(HEADER) :], "")
    assert rows == [
        {**run_cells(text), **empty, "result": "The order was placed."},
        {**run_cells(scalars), **empty, "result": '["a","b"]'},
        {**run_cells(nothing), **empty, "result": "[]"},
        {**run_cells(number), **empty, "result": "42"},
        {
            **run_cells(colliding),
            **empty,
            "result.url": "u",
            "result.status": "in stock",
            "result.runId": "r",
            "result.result": "x",
            "result.result.kind": "y",
            "kind.a": "1",
        },
    ]


def test_csv_neutralises_formulas_in_text_cells(api):
    run = make_run(
        1,
        result={
            "sum": "=SUM(A1:A9)",
            "plus": "+1 555 0100",
            "minus": "-cmd|' /C calc'!A0",
            "at": "@SUM(1)",
            "tab": "\tx",
            "cr": "\rx",
            "fine": "a = b",
            "negative": -3,
            "list": ["=1"],
            "=HYPERLINK(1)": "header",
        },
    )

    text = body(api.get("/api/export", {"format": "csv"}))
    header, rows = export_csv(api)

    assert result_columns(header) == sorted(
        ["sum", "plus", "minus", "at", "tab", "cr", "fine", "negative", "list", "'=HYPERLINK(1)"]
    )
    assert rows == [
        {
            **run_cells(run),
            "sum": "'=SUM(A1:A9)",
            "plus": "'+1 555 0100",
            "minus": "'-cmd|' /C calc'!A0",
            "at": "'@SUM(1)",
            "tab": "'\tx",
            "cr": "'\rx",
            "fine": "a = b",
            "negative": "-3",
            "list": '["=1"]',
            "'=HYPERLINK(1)": "header",
        }
    ]
    # As written: a carriage return is quoted, a tab need not be; the JSON of a list is quoted, quotes doubled.
    for field in ("'\tx", '"\'\rx"', '"[""=1""]"'):
        assert re.search(rf",{re.escape(field)}(,|\r\n)", text), field


def test_csv_neutralises_formulas_for_spreadsheets_that_split_on_semicolons(api):
    make_run(1, result={"note": "a;=cmd|' /C calc'!A0", "more": 'x;+1;-2;@A1;"=1";ok', "fine": "a; b"})
    text = body(api.get("/api/export", {"format": "csv"}))
    # As a spreadsheet in a ;-separated locale reads the file: no cell it makes starts a formula.
    cells = [cell for row in csv.reader(io.StringIO(text), delimiter=";") for cell in row]
    assert len(cells) > 3
    assert not [cell for cell in cells if cell.startswith(("=", "+", "-", "@"))]
    # Read as written (comma-separated), the values keep their text, a ' before each risky piece.
    _, rows = export_csv(api)
    assert (rows[0]["note"], rows[0]["fine"]) == ("a;'=cmd|' /C calc'!A0", "a; b")
    assert rows[0]["more"] == "x;'+1;'-2;'@A1;'\"=1\";ok"


def test_empty_exports_are_an_empty_array_and_a_header(api):
    make_run(1)
    assert body(api.get("/api/export?format=json&kind=agent")) == "[]"
    assert body(api.get("/api/export?format=csv&kind=agent")) == "runId,kind,url,status,createdAt\r\n"


@pytest.mark.parametrize(("fmt", "content_type"), [("json", "application/json"), ("csv", "text/csv; charset=utf-8")])
def test_export_is_a_streamed_attachment(api, fmt, content_type):
    response = api.get(f"/api/export?format={fmt}")
    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == content_type
    assert re.fullmatch(rf'attachment; filename="runs-\d{{8}}-\d{{6}}\.{fmt}"', response["Content-Disposition"])
    run = make_run(1)
    one = api.get(f"/api/export?format={fmt}&id={run.id}")
    assert one["Content-Disposition"] == f'attachment; filename="run-{run.id}.{fmt}"'


def test_large_exports_arrive_in_several_chunks_that_join_up(api):
    markdown = 'Some text, with "quotes".\n' * 40
    runs = [make_run(n, kind="fetch", result=fetch_result(n, markdown)) for n in range(120)]

    json_parts = list(api.get("/api/export?format=json").streaming_content)
    csv_parts = list(api.get("/api/export?format=csv").streaming_content)

    assert len(json_parts) > 2 and len(csv_parts) > 2
    assert [run["id"] for run in json.loads(b"".join(json_parts))] == [str(run.id) for run in runs]
    rows = list(csv.DictReader(io.StringIO(b"".join(csv_parts).decode(), newline="")))
    assert [(row["runId"], row["markdown"]) for row in rows] == [(str(run.id), markdown) for run in runs]


@pytest.mark.django_db(transaction=True)  # read from a thread of its own, with its own connection
def test_the_asynchronous_wrapper_gives_the_same_chunks(api):
    for n in range(60):
        make_run(n, kind="fetch", result=fetch_result(n, "x" * 2000))
    runs = Run.objects.order_by("created_at", "id")

    async def collect(fmt: str) -> list[str]:
        return [chunk async for chunk in export.asynchronous(export.FORMATS[fmt](runs))]

    def collected(fmt: str) -> list[str]:
        try:
            return async_to_sync(collect)(fmt)
        finally:
            connection.close()

    # In a thread of its own, as an ASGI server's request thread: this one may hold a running event loop (Playwright's
    # sync API, started by an earlier test of this process, keeps one registered here).
    with ThreadPoolExecutor(1) as thread:
        for fmt in export.FORMATS:
            assert thread.submit(collected, fmt).result() == list(export.FORMATS[fmt](runs))


@pytest.mark.django_db(transaction=True)  # the view runs in the ASGI handler's own thread and connection
@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_served_over_asgi_the_export_is_streamed_not_collected_first(settings, recwarn, fmt):
    """Daphne serves the app over ASGI, where Django collects a synchronous iterator into one list (and says
    so with a warning) before sending a byte; the export must reach it as an asynchronous one."""
    from service.asgi import application

    settings.SERVICE_API_KEY = "asgi-test-key"
    runs = [make_run(n, kind="fetch", result=fetch_result(n, "x" * 2000)) for n in range(60)]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/api/export",
        "raw_path": b"/api/export",
        "query_string": f"format={fmt}".encode(),
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), (b"authorization", b"Bearer asgi-test-key")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 3470),
    }

    async def get() -> tuple[dict, list[bytes]]:
        communicator = ApplicationCommunicator(application, scope)
        await communicator.send_input({"type": "http.request", "body": b"", "more_body": False})
        start = await communicator.receive_output(10)
        parts = []
        while True:
            message = await communicator.receive_output(10)
            parts.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        await communicator.wait(10)
        return start, parts

    # On a thread of its own: Playwright's sync API (other tests in this process) leaves an event loop registered
    # on the main thread, where async_to_sync refuses to run.
    with ThreadPoolExecutor(max_workers=1) as pool:
        start, parts = pool.submit(asyncio.run, get()).result()

    assert start["status"] == 200
    assert not [warning for warning in recwarn if "consume synchronous iterators" in str(warning.message)]
    assert len(parts) > 2
    text = b"".join(parts).decode()
    if fmt == "json":
        assert [run["id"] for run in json.loads(text)] == [str(run.id) for run in runs]
    else:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
        assert [row["runId"] for row in rows] == [str(run.id) for run in runs]


@pytest.mark.parametrize(
    ("query", "fields"),
    [
        ("format=xml", {"format": ['"xml" is not a valid choice.']}),
        ("", {"format": ["Choose format=json or format=csv."]}),
        ("format=csv&kind=scrape", {"kind": ['"scrape" is not a valid choice.']}),
        ("format=csv&id=7", {"id": ["Must be a valid UUID."]}),
        (
            "format=json&since=yesterday",
            {
                "since": [
                    "Datetime has wrong format. Use one of these formats instead: "
                    "YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z]."
                ]
            },
        ),
    ],
)
def test_bad_parameters_are_400_with_the_error_shape(api, query, fields):
    response = api.get(f"/api/export?{query}")
    assert response.status_code == 400
    (name, messages), *_ = fields.items()
    assert response.json() == {
        "error": {"code": "invalid_request", "message": f"{name}: {messages[0]}", "fields": fields}
    }


def test_export_needs_auth(anonymous):
    response = anonymous.get("/api/export?format=json")
    assert response.status_code == 401
    assert response.json() == {
        "error": {"code": "unauthenticated", "message": "Authentication credentials were not provided."}
    }
