"""Agent overhead per step, model time excluded: observe + act + screenshot + persist.

    .venv/bin/python -m tests.bench.agent_overhead [--steps 30]

The whole service runs (serve, worker, Chromium); a scripted OpenAI-compatible server on loopback answers
each turn at once with "click the next link", walking local pages. Reported: the time between consecutive
recorded steps (which still includes the model round trip to the loopback server and the SDK's overhead,
so it is an upper bound on our overhead), and each step's own durationMs (act + settle + observe +
screenshot).
"""

from __future__ import annotations

import argparse
import itertools
import sqlite3
import statistics
import tempfile
from datetime import datetime
from pathlib import Path

from tests.bench.goals import Result, print_table, rows
from tests.fake_models import FakeOpenAI
from tests.live import LiveService
from tests.site import TestSite


def measure(steps: int) -> dict[str, float]:
    script = [{"tool": "click", "args": {"ref": 1}}] * steps + [{"tool": "done", "args": {"output": "ok"}}]
    with TestSite() as site, FakeOpenAI(script) as model, tempfile.TemporaryDirectory() as data_dir:
        service = LiveService(
            Path(data_dir),
            MODEL_PROVIDER="openai",
            MODEL_NAME="scripted",
            OPENAI_API_KEY="sk-bench",
            OPENAI_BASE_URL=model.base_url + "/v1",
        ).start()
        try:
            run = service.submit(
                {
                    "kind": "agent",
                    "url": site.url("/page/1"),
                    "goal": "walk the pages",
                    "options": {"maxSteps": steps + 5, "timeoutMs": 300_000},
                }
            )
            done = service.wait(run["id"], timeout=600)
        finally:
            service.stop()
        if done["status"] != "succeeded":
            raise SystemExit(f"the agent run {done['status']}: {done['error']}")
        with sqlite3.connect(Path(data_dir) / "db.sqlite3") as db:
            stamps = [
                datetime.fromisoformat(at)
                for (at,) in db.execute(
                    'select at from runs_step where run_id = ? order by "index"', (run["id"].replace("-", ""),)
                )
            ]
    gaps = [(b - a).total_seconds() * 1000 for a, b in itertools.pairwise(stamps[1:-1])]
    durations = [s["durationMs"] for s in done["steps"][1:-1]]
    print(f"agent, {len(gaps)} click steps on local pages")
    print(
        f"  step to step (model round trip on loopback included): p50 {statistics.median(gaps):.0f} ms  "
        f"p90 {sorted(gaps)[int(0.9 * len(gaps))]:.0f} ms"
    )
    print(
        f"  act + settle + observe + screenshot (durationMs): p50 {statistics.median(durations):.0f} ms  "
        f"(goal: overhead p50 <= 300 ms)"
    )
    return {
        "step overhead p50 ms (act + settle + observe + screenshot)": statistics.median(durations),
        "step to step p50 ms (loopback model included)": statistics.median(gaps),
    }


def figures(full: bool = False) -> Result:
    steps = 30 if full else 10
    return Result(f"{steps} steps", measure(steps))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    print_table(rows("agent_overhead", Result(f"{args.steps} steps", measure(args.steps))))


if __name__ == "__main__":
    main()
