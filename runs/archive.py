"""The page archive: the HTML each page load of a run read (after the settle wait: what the snapshot saw; for an
agent, the page as each step left it, scrubbed of the credential's secrets like its observations), gzipped
under `<dataDir>/archives/<run>/<attempt>-<step>.html.gz`; a step's `page` holds where it is and what it was (final
URL, status, content type, size, whether it was cut). Kept ARCHIVE_RETENTION_DAYS (0: nothing is archived), cut
past ARCHIVE_MAX_BYTES of HTML. Re-extraction reads it instead of the network; `GET …/steps/:index/page` serves it
as a download, never as a page of the service's origin."""

from __future__ import annotations

import gzip
import logging
import shutil
from datetime import timedelta
from pathlib import Path
from typing import IO

from django.conf import settings
from django.utils import timezone

from runs.engine.spec import PageCopy
from runs.models import Step

log = logging.getLogger(__name__)

COMPRESS_LEVEL = 6


def archive_dir(run_id: object) -> Path:
    return settings.DATA_DIR / "archives" / str(run_id)


def page_url(run_id: object, index: int) -> str:
    return f"/api/runs/{run_id}/steps/{index}/page"


def put_aside(run_id: object, attempt: int, index: int, page: PageCopy) -> tuple[Path, Path, dict] | None:
    """The page compressed into a file beside its final place: (that file, the final path, the step's `page`).
    The caller moves it in place while its attempt holds the run (or deletes it). None when archiving is off."""
    if settings.ARCHIVE_RETENTION_DAYS <= 0:
        return None
    encoded = page.html.encode("utf-8", errors="replace")
    truncated = len(encoded) > settings.ARCHIVE_MAX_BYTES
    if truncated:  # cut at a character boundary
        encoded = encoded[: settings.ARCHIVE_MAX_BYTES].decode("utf-8", errors="ignore").encode("utf-8")
    folder = archive_dir(run_id)
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{attempt}-{index}.html.gz"
    aside = folder / f".{name}.tmp"
    with gzip.open(aside, "wb", compresslevel=COMPRESS_LEVEL) as out:
        out.write(encoded)
    meta = {
        "file": name,
        "url": page.url,
        "status": page.status,
        "contentType": page.content_type,
        "bytes": len(encoded),
        "truncated": truncated,
    }
    return aside, folder / name, meta


def open_page(step: Step) -> IO[bytes] | None:
    """The archived HTML of a step as a readable file (decompressed), or None when it has none (any more)."""
    if not step.page:
        return None
    path = archive_dir(step.run_id) / step.page["file"]
    if not path.is_file():
        return None
    return gzip.open(path, "rb")


def read_page(step: Step) -> PageCopy | None:
    """A step's archived page as the engine reads pages, or None."""
    archived = open_page(step)
    if archived is None:
        return None
    with archived:
        html = archived.read().decode("utf-8", errors="replace")
    return PageCopy(step.page["url"], step.page["status"], step.page["contentType"], html)


def source_step(source: dict) -> Step | None:
    """The step a re-extraction's `source` ({"archivedRun", "step"}) names, if it has an archived page on disk."""
    step = Step.objects.filter(run_id=source["archivedRun"], index=source["step"]).first()
    if step is None or not step.page or not (archive_dir(step.run_id) / step.page["file"]).is_file():
        return None
    return step


def describe_source(source: dict) -> str:
    return f"run {source['archivedRun']}, step {source['step']}"


def prune_archives() -> int:
    """Delete the archives of runs created more than ARCHIVE_RETENTION_DAYS ago (all of them when archiving is off);
    their steps no longer say they have a page. Returns how many runs' archives went."""
    steps = Step.objects.filter(page__isnull=False)
    if settings.ARCHIVE_RETENTION_DAYS > 0:
        cutoff = timezone.now() - timedelta(days=settings.ARCHIVE_RETENTION_DAYS)
        steps = steps.filter(run__created_at__lt=cutoff)
    run_ids = set(steps.values_list("run_id", flat=True).distinct())
    for run_id in run_ids:
        shutil.rmtree(archive_dir(run_id), ignore_errors=True)
    if run_ids:
        Step.objects.filter(run_id__in=run_ids, page__isnull=False).update(page=None)
        log.info("pruned the page archives of %d runs (ARCHIVE_RETENTION_DAYS)", len(run_ids))
    return len(run_ids)
