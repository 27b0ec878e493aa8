"""Runs as a streamed JSON array or CSV file (one row per result record)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from runs.models import Run


def json_chunks(runs: Iterable[Run]) -> Iterator[str]:
    raise NotImplementedError


def csv_chunks(runs: Iterable[Run]) -> Iterator[str]:
    raise NotImplementedError


FORMATS = {"json": json_chunks, "csv": csv_chunks}
CONTENT_TYPES = {"json": "application/json", "csv": "text/csv; charset=utf-8"}
