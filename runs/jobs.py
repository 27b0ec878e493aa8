"""The django-q2 job: execute_run(run_id) claims the run, drives the engine and records everything."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import connection
from django.utils import timezone

from profiles.credentials import CredentialNotFound, CredentialStore
from profiles.store import ProfileExists, ProfileStore
from runs import archive, queue, services, signals
from runs.crawl import run_crawl
from runs.engine.agent import AgentSpec, run_agent
from runs.engine.browser import Browser, BrowserThread, process_browser
from runs.engine.compile import Compiled
from runs.engine.extract import ExtractSpec, SchemaMismatch, extract
from runs.engine.fetch import fetch
from runs.engine.llm import ModelSettings, make_model
from runs.engine.spec import EngineError, PageCopy, RunAborted
from runs.models import Run
from runs.resources import page_spec
from service.kernel import logs

log = logging.getLogger(__name__)

# How often a running run renews its lease and looks for a cancel (seconds).
CHECKPOINT_INTERVAL = 1.0

# Set by `manage.py work` (a multiprocessing Event shared by its workers) once the cluster is told to stop.
# django-q2 hands each worker the tasks it has prefetched before the stop; those runs are not started but put back
# on the queue, so a stop waits only for the runs already running and the next start picks the rest up at once.
DRAINING = None


def allow_orm_beside_playwright() -> None:
    """Playwright's sync API keeps its own asyncio loop registered as running on its thread, and Django then refuses
    ORM calls there as "async unsafe". A worker is a plain synchronous process: nothing else runs on that loop while
    we block, so the check does not protect anything here."""
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def worker_browser() -> Browser:
    """The Chromium of this worker process, started on first use and closed when the process exits."""
    allow_orm_beside_playwright()
    return process_browser(settings.BROWSER_EXECUTABLE, settings.BROWSER_ARGS, settings.BROWSER_SANDBOX)


class RunRecorder:
    """The engine's Recorder for one attempt of a persisted run.

    A heartbeat thread renews the lease every CHECKPOINT_INTERVAL whatever the engine is doing: a browser that
    takes seconds to start, or a long blocking call, must not look like a dead worker. When a renewal fails (the
    run was cancelled, or the reaper gave it to another attempt), the engine's next checkpoint stops the run.
    """

    def __init__(self, run: Run):
        self.run = run
        self.next_index = 0
        self._lost = threading.Event()
        self._done = threading.Event()
        self._heartbeat = threading.Thread(target=self._beat, name=f"lease-{run.pk}", daemon=True)
        self._heartbeat.start()

    def _beat(self) -> None:
        try:
            while not self._done.wait(CHECKPOINT_INTERVAL):
                if not Run.objects.renew_lease(
                    run_id=self.run.pk, attempt=self.run.attempts, lease_seconds=settings.RUN_LEASE_SECONDS
                ):
                    self._lost.set()
                    return
        except Exception:  # the database may be briefly busy; the step writes still fence the attempt
            log.exception("run %s: lease heartbeat stopped", self.run.pk)
        finally:
            connection.close()  # this thread's own connection

    def close(self) -> None:
        self._done.set()
        self._heartbeat.join(timeout=5)

    def step(
        self,
        *,
        action: str,
        url: str,
        observation: str,
        screenshot: bytes | None,
        duration_ms: int,
        page: PageCopy | None = None,
    ) -> None:
        recorded = services.run_record_step(
            run=self.run,
            index=self.next_index,
            action=action,
            url=url,
            observation=observation,
            screenshot=screenshot,
            duration_ms=duration_ms,
            page=page,
        )
        if not recorded:
            raise RunAborted()
        self.next_index += 1

    def checkpoint(self) -> None:
        if self._lost.is_set():
            raise RunAborted()


def model_settings(spec: dict) -> ModelSettings | None:
    """The configured provider, with the run's options.model overriding the model name."""
    if not settings.MODEL_PROVIDER:
        return None
    openai = settings.MODEL_PROVIDER == "openai"
    return ModelSettings(
        provider=settings.MODEL_PROVIDER,
        name=(spec.get("options") or {}).get("model") or settings.MODEL_NAME,
        api_key=settings.OPENAI_API_KEY if openai else settings.ANTHROPIC_API_KEY,
        base_url=settings.OPENAI_BASE_URL if openai else settings.ANTHROPIC_BASE_URL,
    )


@dataclass(frozen=True)
class Outcome:
    """What a run produced: its result, the model tokens it used, who extracted it, what its answer compiled into."""

    result: object
    input_tokens: int = 0
    output_tokens: int = 0
    extracted_by: str = ""
    compiled: Compiled | None = None


def archived_source(spec: dict) -> dict:
    """A re-extraction's archived page (ExtractSpec's archived and archived_from), or nothing for a page to load."""
    source = spec.get("source")
    if not source:
        return {}
    step = archive.source_step(source)
    copy = archive.read_page(step) if step is not None else None
    if copy is None:
        raise EngineError(
            "archive_missing", f"The archived page of {archive.describe_source(source)} is gone (pruned since submit)."
        )
    return {"archived": copy, "archived_from": archive.describe_source(source)}


def _execute(run: Run, recorder: RunRecorder, lane: BrowserThread | None = None) -> Outcome:
    """lane: the browser of a run executed off this process's browser thread (a crawl's page), and how its browser
    work is handed to that browser's thread."""
    if run.kind == Run.Kind.CRAWL:
        return Outcome(run_crawl(run, recorder, execute_run))
    # A crawl's page keeps render auto as the engine's (plain HTTP, Chromium for a JavaScript shell): a crawl asks
    # for screenshots with render browser. A run of its own has a screenshot in its trace: auto means the browser.
    page = page_spec(run.spec, run=run.parent_id is None)
    if lane:
        allow_orm_beside_playwright()
    browser, in_browser_thread = (lane.browser, lane.call) if lane else (worker_browser(), None)
    if run.kind == Run.Kind.FETCH:
        return Outcome(fetch(page, recorder, browser, in_browser_thread=in_browser_thread).to_dict())
    if run.kind == Run.Kind.EXTRACT:
        model_config = model_settings(run.spec)
        spec = ExtractSpec(
            page=page,
            schema=run.spec["schema"],
            instruction=run.spec.get("instruction", ""),
            compiled=run.spec.get("compiled"),
            compile=bool(run.spec.get("compile")),
            plain_http=(run.spec.get("options") or {}).get("render", "auto") == "auto",
            **archived_source(run.spec),
        )
        done = extract(
            spec,
            recorder,
            browser,
            make_model(model_config) if model_config else None,
            in_browser_thread=in_browser_thread,
        )
        return Outcome(done.data, done.input_tokens, done.output_tokens, done.method, done.compiled)
    return _execute_agent(run, recorder)


def _execute_agent(run: Run, recorder: RunRecorder) -> Outcome:
    model_config = model_settings(run.spec)
    if model_config is None:
        raise EngineError("model_not_configured", "Agent runs need a model, and no MODEL_PROVIDER is set.")
    credential = None
    if run.spec.get("cred"):
        try:
            credential = CredentialStore(settings.DATA_DIR).read(run.spec["cred"])
        except CredentialNotFound:
            raise EngineError("unknown_credential", f"The credential {run.spec['cred']!r} no longer exists.") from None
    options = run.spec.get("options") or {}
    spec = AgentSpec(
        page=page_spec(run.spec, run=True),
        goal=run.spec["goal"],
        max_steps=options.get("maxSteps", 25),
        credential=credential,
        output_schema=options.get("outputSchema"),
        keep_storage_state=bool(run.spec.get("saveProfile")),
    )
    done = run_agent(spec, recorder, worker_browser(), make_model(model_config))
    if done.storage_state is not None:
        name = run.spec["saveProfile"]
        try:
            ProfileStore(settings.DATA_DIR).write(
                name, done.storage_state, overwrite=bool(run.spec.get("overwriteProfile"))
            )
        except ProfileExists:
            raise EngineError(
                "profile_exists",
                f"A profile named {name!r} was created while the run ran; it was kept, and this session not saved "
                "(give overwriteProfile: true to replace it).",
            ) from None
    return Outcome(done.output, done.input_tokens, done.output_tokens)


def execute_run(run_id: str, lane: BrowserThread | None = None) -> str:
    """Entry point for django-q2. Safe to call twice for one run: only one claim can succeed. in_browser_thread: see
    _execute."""
    if DRAINING is not None and DRAINING.is_set():
        queue.hand_back(run_id)
        return "handed back"
    run = services.run_claim(run_id=run_id, worker=f"{socket.gethostname()}:{os.getpid()}")
    if run is None:
        return "skipped"
    recorder = RunRecorder(run)
    try:
        with logs.running(run_id, run.attempts):
            log.info("run %s (%s) started, attempt %d", run_id, run.kind, run.attempts)
            outcome = _execute_claimed(run, recorder, lane)
            log.info("run %s %s", run_id, outcome)
            return outcome
    finally:
        recorder.close()


def _execute_claimed(run: Run, recorder: RunRecorder, lane: BrowserThread | None = None) -> str:
    run_id = str(run.pk)
    started = time.monotonic()

    def usage(input_tokens: int = 0, output_tokens: int = 0) -> dict:
        elapsed = int((time.monotonic() - started) * 1000)
        return {"inputTokens": input_tokens, "outputTokens": output_tokens, "browserMs": elapsed}

    try:
        outcome = _execute(run, recorder, lane)
    except RunAborted:
        log.info("run %s stopped: cancelled or taken over", run_id)
        return "aborted"
    except SchemaMismatch as error:
        services.run_finish(
            run=run,
            result=error.last_output,
            error={"code": error.code, "message": error.message},
            usage=usage(error.input_tokens, error.output_tokens),
        )
        return "failed"
    except EngineError as error:
        # An agent that failed had still spent tokens (AgentFailed carries them).
        spent = usage(getattr(error, "input_tokens", 0), getattr(error, "output_tokens", 0))
        services.run_finish(run=run, error={"code": error.code, "message": error.message, **error.details}, usage=spent)
        return "failed"
    except Exception:
        log.exception("run %s crashed", run_id)
        services.run_finish(
            run=run,
            error={"code": "internal_error", "message": "The run hit an unexpected error; see the worker log."},
            usage=usage(),
        )
        return "failed"
    finished = services.run_finish(
        run=run,
        result=outcome.result,
        usage=usage(outcome.input_tokens, outcome.output_tokens),
        extracted_by=outcome.extracted_by,
    )
    if finished and outcome.compiled is not None:
        compiled = {
            "schema": outcome.compiled.schema,
            "fields": outcome.compiled.fields,
            "render": outcome.compiled.render,
            "fromRun": run_id,
            "verifiedAt": timezone.now().isoformat(),
        }
        signals.answer_compiled.send(sender=Run, run=run, compiled=compiled)
    return "succeeded"
