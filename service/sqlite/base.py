"""Django's SQLite backend, with the writers of one process taking turns on a lock of the process.

SQLite lets one writer at a time in; the others wait in its busy handler, which sleeps 1, 2, 5 … up to 100 ms between
tries whatever happens meanwhile. Threads of one process that write often (a crawl's pages, each a run recording its
steps) then spend most of their time asleep while the database is free. Here a writer of this process first takes a
threading lock, held from BEGIN IMMEDIATE to COMMIT or ROLLBACK (or around one statement that writes outside a
transaction): the writers of a process queue on it and are woken the moment it is free. Writers of other processes
(workers, web processes) still meet in SQLite's busy handler, as before. Reads never take it (WAL).
"""

from __future__ import annotations

import threading

from django.db.backends.sqlite3 import base

_writing = threading.RLock()
_READS = ("SELECT", "PRAGMA", "EXPLAIN", "WITH")


class DatabaseWrapper(base.DatabaseWrapper):
    def _start_transaction_under_autocommit(self) -> None:
        _writing.acquire()
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            _writing.release()
            raise
        self._holds_write_lock = True

    def _release_write_lock(self) -> None:
        if getattr(self, "_holds_write_lock", False):
            self._holds_write_lock = False
            _writing.release()

    def _commit(self) -> None:
        try:
            super()._commit()
        finally:
            self._release_write_lock()

    def _rollback(self) -> None:
        try:
            super()._rollback()
        finally:
            self._release_write_lock()

    def _close(self) -> None:
        try:
            super()._close()
        finally:
            self._release_write_lock()

    def create_cursor(self, name=None):
        return LockingCursor(self, super().create_cursor(name))


class LockingCursor:
    """A cursor whose statements that write, outside a transaction, hold the process's write lock."""

    def __init__(self, wrapper: DatabaseWrapper, cursor) -> None:
        self._wrapper = wrapper
        self._cursor = cursor

    def _writes(self, sql: str) -> bool:
        return not self._wrapper.in_atomic_block and not sql.lstrip()[:7].upper().startswith(_READS)

    def execute(self, sql, params=None):
        if not self._writes(sql):
            return self._cursor.execute(sql, params)
        with _writing:
            return self._cursor.execute(sql, params)

    def executemany(self, sql, param_list):
        if not self._writes(sql):
            return self._cursor.executemany(sql, param_list)
        with _writing:
            return self._cursor.executemany(sql, param_list)

    def __getattr__(self, name):
        return getattr(self._cursor, name)

    def __iter__(self):
        return iter(self._cursor)
