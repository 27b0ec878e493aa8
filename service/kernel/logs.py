"""Which run a log line is about: the worker sets it while it runs one (`running`), and every record logged
meanwhile in that thread or task carries runId and attempt (LOG_FORMAT=json shows them as fields)."""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator

_current: contextvars.ContextVar[tuple[str, int] | None] = contextvars.ContextVar("run", default=None)


@contextlib.contextmanager
def running(run_id: str, attempt: int) -> Iterator[None]:
    token = _current.set((run_id, attempt))
    try:
        yield
    finally:
        _current.reset(token)


class RunContext(logging.Filter):
    """Adds runId and attempt to the records logged while a run is being run (the logging filter of settings)."""

    def filter(self, record: logging.LogRecord) -> bool:
        current = _current.get()
        if current is not None:
            record.runId, record.attempt = current
        return True
