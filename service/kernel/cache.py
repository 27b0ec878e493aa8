"""The default cache without Redis: Django's file cache, whose cull deletes what has expired first.

Django's FileBasedCache culls once MAX_ENTRIES files are on disk by deleting a random third of them, live or expired;
an expired file is otherwise deleted only when its key is read again. The failed sign-in counters
(service/kernel/auth.py) are such files: one per address and minute, never read after their minute. Guesses spread
over many addresses (what the limit in all is for) would fill the directory with expired counters within minutes,
and every cull from then on could delete the live ones and give the guessing a fresh count.
"""

from __future__ import annotations

from django.core.cache.backends.filebased import FileBasedCache


class FileCache(FileBasedCache):
    def _cull(self) -> None:
        files = self._list_cache_files()
        if len(files) < self._max_entries:
            return
        for name in files:
            try:
                with open(name, "rb") as file:
                    self._is_expired(file)  # deletes the file when it has expired
            except FileNotFoundError:  # deleted meanwhile (another process's cull, or its key's own expiry)
                continue
        super()._cull()  # random, as Django's, only if the live entries alone still fill the cache


BACKEND = f"{FileCache.__module__}.{FileCache.__qualname__}"  # as settings.CACHES names it
