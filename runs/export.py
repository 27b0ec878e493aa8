"""Runs as a streamed JSON array or CSV file (one row per result record).

Both formats read the runs with `.values_list(...).iterator(...)`, so neither model instances nor the whole
result set are ever held: memory stays flat however many runs match. Many rows go into each yielded string
(about CHUNK_CHARS characters), because the per-chunk cost of the response machinery dominates otherwise.

The chunk generators are synchronous (the ORM is). Served by an ASGI server (daphne), Django's
StreamingHttpResponse would collect a synchronous iterator into one list before sending the first byte, so
the caller wraps them with `asynchronous()` there; WSGI servers and the test client take them as they are.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Iterator
from datetime import UTC, datetime, tzinfo

from asgiref.sync import sync_to_async
from django.db import connections
from django.db.models import QuerySet, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from runs.models import Run

# Rows fetched per database round trip; a fetch run's Markdown can be tens of kilobytes, so not more.
FETCH_ROWS = 500
# A chunk is yielded once this many characters are pending: big enough that the per-chunk cost of the
# response machinery is negligible, small enough that nobody holds more than a few rows' worth.
CHUNK_CHARS = 64 * 1024

# The fields of RunSerializer, in its order, less stepCount: counting steps needs a join and a GROUP BY over
# the whole export, which defeats streaming; GET /api/runs/:id has it. The JSON fields are read as the text
# the database holds and written as they are: decoding and re-encoding them took some 40% longer.
JSON_OBJECT = (
    '{"id":"%s","kind":%s,"status":%s,"url":%s,"spec":%s,"query":%s,"batch":%s,"parent":%s,"attempts":%d,'
    '"result":%s,"error":%s,"drift":%s,"usage":%s,"extractedBy":%s,"createdAt":%s,"startedAt":%s,"finishedAt":%s}'
)
JSON_FIELDS = (
    "id",
    "kind",
    "status",
    "url",
    Cast("spec", TextField()),
    "query",
    "batch_id",
    "parent_id",
    "attempts",
    Cast("result", TextField()),
    Cast("error", TextField()),
    Cast("drift", TextField()),
    Cast("usage", TextField()),
    "extracted_by",
)
TIMESTAMPS = ("created_at", "started_at", "finished_at")
json_string = json.encoder.encode_basestring  # a str as a JSON string, non-ASCII kept as it is (as DRF does)
compact_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

RUN_COLUMNS = ("runId", "kind", "url", "status", "createdAt")
# The column of a result that is one value rather than objects: a string, a number, a list of scalars.
VALUE_COLUMN = "result"
# A result field never shares a column with the run's own (see result_column): a fetch result's HTTP
# status is written as result.status, next to the run's status.
RESERVED_COLUMNS = frozenset((*RUN_COLUMNS, VALUE_COLUMN))
# OWASP's list of cell openings a spreadsheet may take for a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# After a ; inside a field (a cell start where ; separates cells): the formula openings, not the white space, so that
# a line break after a ; in Markdown stays as it was.
PIECE_FORMULA_STARTS = ("=", "+", "-", "@")


def timestamps(runs: QuerySet[Run], *names: str) -> list[str | Cast]:
    """Datetime columns to read for iso(). SQLite keeps them as UTC text, which Django would parse value by
    value in Python, a third of a JSON export's time; read as text, iso() parses them in C."""
    if connections[runs.db].vendor == "sqlite":
        return [Cast(name, TextField()) for name in names]
    return list(names)


def iso(value: datetime | str | None, zone: tzinfo) -> str | None:
    """A datetime as DRF renders it: ISO 8601 in the current time zone, UTC written as Z."""
    if value is None:
        return None
    if type(value) is str:  # see timestamps()
        value = datetime.fromisoformat(value)
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
    text = value.astimezone(zone).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _batched(pieces: Iterable[str]) -> Iterator[list[str]]:
    """The pieces in lists of about CHUNK_CHARS characters."""
    batch: list[str] = []
    size = 0
    for piece in pieces:
        batch.append(piece)
        size += len(piece)
        if size >= CHUNK_CHARS:
            yield batch
            batch = []
            size = 0
    if batch:
        yield batch


def json_object(row: tuple, zone: tzinfo) -> str:
    """One run as JSON, from a row of JSON_FIELDS and TIMESTAMPS."""
    id_, kind, status, url, spec, query, batch, parent, attempts, result, error, drift, usage, extracted_by, *times = (
        row
    )
    created, started, finished = times
    return JSON_OBJECT % (
        id_,
        json_string(kind),
        json_string(status),
        json_string(url),
        spec or "null",
        "null" if query is None else json_string(query),
        f'"{batch}"' if batch else "null",
        f'"{parent}"' if parent else "null",
        attempts,
        result or "null",
        error or "null",
        drift or "null",
        usage or "null",
        json_string(extracted_by) if extracted_by else "null",
        "null" if created is None else f'"{iso(created, zone)}"',
        "null" if started is None else f'"{iso(started, zone)}"',
        "null" if finished is None else f'"{iso(finished, zone)}"',
    )


def json_chunks(runs: QuerySet[Run]) -> Iterator[str]:
    """One JSON array of runs, each with the camelCase fields of RunSerializer (no stepCount)."""
    zone = timezone.get_current_timezone()
    rows = runs.values_list(*JSON_FIELDS, *timestamps(runs, *TIMESTAMPS)).iterator(chunk_size=FETCH_ROWS)
    opening = "["
    for batch in _batched(json_object(row, zone) for row in rows):
        yield opening + ",".join(batch)
        opening = ","
    yield "[]" if opening == "[" else "]"


def result_records(result: object) -> list[object]:
    """What one run's result is written as, one CSV row each: its objects, or one value.

    An object is one record, and a non-empty list of objects one record per object. Anything else — no
    result, a string, a number, a list of scalars, an empty list — is one record too, a value written in the
    "result" column (or nothing for no result), so that every run has at least one row.
    """
    if type(result) is list and result and all(type(item) is dict for item in result):
        return result
    return [result]


def leaves(record: dict, prefix: str = "", into: list | None = None) -> list[tuple[str, object]]:
    """(dotted name, value) of every field of a record: nested objects are walked (brand.name), lists and
    empty objects are values. {"a.b": 1} and {"a": {"b": 1}} both give a.b; a record with both keeps the
    last."""
    into = [] if into is None else into
    for key, item in record.items():
        if type(item) is dict and item:
            leaves(item, f"{prefix}{key}.", into)
        else:
            into.append((prefix + key, item))
    return into


def result_column(name: str) -> str:
    """The column of a result field's dotted name. Names that could be taken for the run's own columns get
    a "result." prefix, and so do names already starting with it: no two fields ever share a column."""
    return f"result.{name}" if name in RESERVED_COLUMNS or name.startswith("result.") else name


def text_cell(text: str) -> str:
    """Text as a CSV field a spreadsheet will not run as a formula: a risky first character gets a ' before
    it, and so does one right after a ; (a spreadsheet that splits on ; would start a cell there); a field
    with a comma, a quote or a line break is quoted, its quotes doubled (RFC 4180)."""
    if text.startswith(FORMULA_STARTS):
        text = "'" + text
    if ";" in text:  # where ; separates cells (many European locales), each piece after one starts a cell
        text = ";".join(
            "'" + piece if piece.lstrip(' "').startswith(PIECE_FORMULA_STARTS) else piece for piece in text.split(";")
        )
    if '"' in text or "," in text or "\n" in text or "\r" in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def cell(value: object) -> str:
    """One CSV field: null is empty, booleans true/false, lists and empty objects compact JSON in one field.

    Numbers are written as numbers, so -3 stays -3 (a spreadsheet reads it as a number, not a formula);
    strings, and the JSON of lists, go through text_cell.
    """
    kind = type(value)
    if kind is str:
        return text_cell(value)
    if value is None:
        return ""
    if kind is bool:
        return "true" if value else "false"
    if kind is int or kind is float:
        return repr(value)
    return text_cell(compact_json(value))


def csv_columns(runs: QuerySet[Run]) -> tuple[list[str], dict[str | None, int]]:
    """The header, and the column index of each dotted result field name (None: the value column)."""
    header = list(RUN_COLUMNS)
    index_of: dict[str | None, int] = {}
    for result in runs.values_list("result", flat=True).iterator(chunk_size=FETCH_ROWS):
        for record in result_records(result):
            if type(record) is dict:
                names: list[str | None] = [name for name, _ in leaves(record)]
            elif record is not None:
                names = [None]
            else:
                continue
            for name in names:
                if name not in index_of:
                    index_of[name] = len(header)
                    header.append(VALUE_COLUMN if name is None else result_column(name))
    return header, index_of


def csv_chunks(runs: QuerySet[Run]) -> Iterator[str]:
    """A CSV file (RFC 4180, CRLF line ends) with one row per result record (see result_records), in two
    passes over the runs.

    The header must name every result column before the first row, and the columns depend on every
    result: extract schemas differ from run to run and agents return whatever they like. Holding the rows
    until the last one is read would make memory grow with the export, so a first pass reads only the
    results and collects the column names (as many as there are distinct fields, however many runs), and
    a second pass writes the rows. Columns are the run's own, then the result's in order of first
    appearance (in the order the database keeps a result's keys: as written on SQLite, shortest first in
    Postgres's jsonb).

    A run that gains a result between the passes (it finished meanwhile) is written with the columns the
    header has; fields nobody had in the first pass are left out rather than breaking the file.

    Fields are quoted by text_cell rather than the csv module: its writer is three times slower on long
    Markdown, the bulk of a fetch export.
    """
    header, index_of = csv_columns(runs)
    zone = timezone.get_current_timezone()
    blank = [""] * (len(header) - len(RUN_COLUMNS))
    value_index = index_of.get(None)
    created_at = timestamps(runs, "created_at")
    rows = runs.values_list("id", "kind", "url", "status", *created_at, "result").iterator(chunk_size=FETCH_ROWS)

    def lines() -> Iterator[str]:
        yield ",".join(text_cell(name) for name in header)
        for id_, kind, url, status, created, result in rows:
            run_cells = [str(id_), kind, text_cell(url), status, iso(created, zone)]
            for record in result_records(result):
                row = run_cells + blank
                if type(record) is dict:
                    for name, value in leaves(record):
                        index = index_of.get(name)
                        if index is not None:
                            row[index] = cell(value)
                elif record is not None and value_index is not None:
                    row[value_index] = cell(record)
                yield ",".join(row)

    for batch in _batched(lines()):
        yield "\r\n".join(batch) + "\r\n"


async def asynchronous(chunks: Iterator[str]) -> AsyncIterator[str]:
    """The chunks for an ASGI server: each one is made in the request's worker thread (where the view ran
    and its database connection lives), one at a time, so the export still streams."""
    produce = sync_to_async(next, thread_sensitive=True)
    done = object()
    try:
        while (chunk := await produce(chunks, done)) is not done:
            yield chunk
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            await sync_to_async(close, thread_sensitive=True)()


FORMATS = {"json": json_chunks, "csv": csv_chunks}
CONTENT_TYPES = {"json": "application/json", "csv": "text/csv; charset=utf-8"}
