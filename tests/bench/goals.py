"""The goals the issues named for each benchmark figure, and the one table that sets each figure next to its goal.

A figure with no goal here had none in any issue: the table says "no goal" rather than inventing one. The source
of each goal is the issue that named it (`issues show N`).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

_COMPARE = {">=": operator.ge, "<=": operator.le, "<": operator.lt, "==": operator.eq}

Value = float | int | str | None


@dataclass(frozen=True)
class Goal:
    op: str
    target: float
    source: str

    def holds(self, value: Value) -> bool | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return _COMPARE[self.op](value, self.target)

    def __str__(self) -> str:
        return f"{self.op} {self.target:g} ({self.source})"


def at_least(target: float, source: str) -> Goal:
    return Goal(">=", target, source)


def at_most(target: float, source: str) -> Goal:
    return Goal("<=", target, source)


def below(target: float, source: str) -> Goal:
    return Goal("<", target, source)


def exactly(target: float, source: str) -> Goal:
    return Goal("==", target, source)


@dataclass
class Result:
    """What one benchmark measured: a short description of the sample, and its figures by name."""

    sample: str
    figures: dict[str, Value] = field(default_factory=dict)


# Benchmark module -> figure -> goal (None: no issue named one). The order is the table's order. A module may report
# figures not listed here (shown with "no goal"); a listed figure it did not report shows as "not measured".
GOALS: dict[str, dict[str, Goal | None]] = {
    "markdown_quality": {
        "main-content F1 (article-extraction)": at_least(0.957, "issue 23; issue 2 asked >= 0.95"),
        "precision": None,
        "recall": None,
        "conversion p50 ms/page": None,
        "wcxb-dev F1 overall, ours": at_least(0.87, "issue 23"),
        **{
            f"wcxb-dev F1 {kind}, ours": at_least(0.75, "issue 23: no page type below")
            for kind in ("collection", "documentation", "forum", "listing", "product", "service")
        },
        "wcxb-dev F1 article, ours": at_least(0.934, "issue 23: not below today's, 0.934 before page types"),
        "wcxb-dev conversion p50 ms/page": at_most(60, "issue 23"),
    },
    "compiled_replay": {
        **{
            figure: goal
            for template in ("jsonld", "microdata", "plain")
            for figure, goal in {
                f"{template}: field accuracy": at_least(0.99, "issue 20"),
                f"{template}: model calls": at_most(2, "issue 20"),
                f"{template}: model path / compiled p50": at_least(5, "issue 20"),
            }.items()
        },
        "restyled: first replay falls back to the model": at_least(1, "issue 20"),
        "restyled: recompiled from that replay": at_least(1, "issue 20"),
        "restyled: model calls in the following replays": at_most(0, "issue 20"),
        "product-extraction: fields compiled and verified": None,
    },
    "product_extraction": {
        "price F1, ours": at_least(0.85, "issue 23"),
        "sku F1, ours": at_least(0.70, "issue 23"),
        "availability F1, ours": at_least(0.80, "issue 23"),
        "price F1, extruct baseline (same scorer, same run)": None,
        "sku F1, extruct baseline (same scorer, same run)": None,
        "availability F1, extruct baseline (same scorer, same run)": None,
        "ms/page p50, ours": None,
    },
    "fetch_throughput": {
        "real pages, guard on: plain Playwright pages/s": None,
        "real pages, guard on: service pages/s": None,
        "real pages, guard on: service/plain": at_least(0.90, "issue 17"),
        "real pages, guard on: pages > 3x their plain time": exactly(0, "issue 17"),
        "real pages, guard on: pages failed that plain loaded": exactly(0, "issue 17"),
        "real pages, guard off: service/plain": at_least(0.95, "issue 17"),
        "real pages, guard off: pages failed that plain loaded": exactly(0, "issue 17"),
        "tiny pages, guard off: service/plain": at_least(0.85, "issue 2"),
    },
    "crawl": {
        "render=http: Scrapy pages/s": None,
        "render=http: service pages/s": None,
        # Judged on distinct pages, as the issue-24 notes measured it: Scrapy's plain CrawlSpider also fetches the
        # site's tracking-parameter duplicates (about half of its fetches), which the service collapses.
        "render=http: service/Scrapy (worst round)": None,
        "render=http: service/Scrapy distinct pages (worst round)": at_least(0.5, "issue 24"),
        "pages found / expected": exactly(1, "issue 24"),
        "pages with Markdown / pages succeeded": exactly(1, "issue 24"),
        "disallowed pages fetched": exactly(0, "issue 24"),
        "URLs fetched twice": exactly(0, "issue 24"),
        "calendar trap pages fetched": at_most(50, "issue 24: bounded (maxDepth, the trap cap)"),
        "render=browser: plain Playwright pages/s": None,
        "render=browser: service pages/s": None,
        "render=browser: service/plain": at_least(0.9, "issue 24"),
        "render=browser: plain Playwright in one tab pages/s": None,
        "render=browser: service/plain in one tab": None,
    },
    "queue_pickup": {
        "pickup p50 ms": at_most(100, "issue 2"),
        "pickup p99 ms": at_most(300, "issue 2"),
    },
    "event_latency": {
        "embedded, 1 client: p50 ms": at_most(50, "issue 3"),
        "embedded, 1 client: p99 ms": at_most(200, "issue 3"),
        "embedded, 100 clients: p50 ms": at_most(50, "issue 3"),
        "embedded, 100 clients: p99 ms": at_most(300, "issue 3, fan-out"),
        "Redis layer, 1 client: p50 ms": at_most(50, "issue 3"),
        "Redis layer, 1 client: p99 ms": at_most(200, "issue 3"),
        "Redis layer, 100 clients: p50 ms": at_most(50, "issue 3"),
        "Redis layer, 100 clients: p99 ms": at_most(300, "issue 3, fan-out"),
    },
    "agent_overhead": {
        "step overhead p50 ms (act + settle + observe + screenshot)": at_most(300, "issue 5"),
        "step to step p50 ms (loopback model included)": None,
    },
    "batch_submit": {
        "1,000 specs accepted, median ms": below(2000, "issue 6"),
        "max ms": None,
    },
    "sync_fetch": {
        "service overhead p50 ms (guard off)": at_most(15, "issue 6"),
        "service overhead p50 ms (guard on, default)": at_most(15, "issue 6"),
        "service req/s (guard on, sequential)": None,
    },
    "export_throughput": {
        "json inprocess rows/s": at_least(20_000, "issue 6"),
        "json inprocess RSS growth MB": at_most(50, "issue 6"),
        "csv inprocess rows/s": at_least(20_000, "issue 6"),
        "csv inprocess RSS growth MB": at_most(50, "issue 6"),
        "json live rows/s": at_least(20_000, "issue 6"),
        "json live RSS growth MB": at_most(50, "issue 6"),
        "csv live rows/s": at_least(20_000, "issue 6"),
        "csv live RSS growth MB": at_most(50, "issue 6"),
    },
    "worker_death": {
        "killed runs not finished exactly once": exactly(0, "issue 11"),
        "always-killed run failed after RUN_MAX_ATTEMPTS (1 = yes)": exactly(1, "issue 11"),
        "cluster takes work afterwards (1 = yes)": exactly(1, "issue 11"),
        "Chromium processes left after stop": exactly(0, "issue 11"),
    },
    "contention": {
        '"database is locked" (responses + log)': exactly(0, "issue 11"),
        "runs lost (not final)": exactly(0, "issue 11"),
        "HTTP 5xx": None,
        "requests/s": None,
    },
    "load": {
        "HTTP errors": exactly(0, "issue 11"),
        "HTTP req/s": None,
        "HTTP p99 ms": None,
        "WebSocket clients missing a frame": exactly(0, "issue 3: lossless"),
        "WebSocket frame p99 ms": None,
    },
    "web_tier": {
        "default, list: req/s": at_least(200, "issue 21: 4x the 50 req/s measured before"),
        "default, list: p99 ms": at_most(500, "issue 21"),
        "default vs WEB_PROCESSES=1, detail: ratio": at_least(1.6, "issue 21"),
        "default vs WEB_PROCESSES=1, health: ratio": at_least(1.6, "issue 21"),
        "default, list: errors": exactly(0, "issue 21"),
        "default, detail: errors": exactly(0, "issue 21"),
        "default, health: errors": exactly(0, "issue 21"),
        "rate limit 100/min, 200 requests from 4 clients: passed": exactly(100, "issue 21"),
    },
    "schedules": {
        "SCHEDULE_CHECK_SECONDS=5, every 6 s: lateness max s": at_most(15, "issue 22: a due replay starts within 15 s"),
        "SCHEDULE_CHECK_SECONDS=5, every 6 s: lateness p50 s": None,
        "SCHEDULE_CHECK_SECONDS=5, every 6 s: lateness p99 s": None,
        "SCHEDULE_CHECK_SECONDS=1, every 2 s: lateness p50 s": None,
        "SCHEDULE_CHECK_SECONDS=1, every 2 s: lateness p99 s": None,
        "webhook delivery after run-finished: p50 ms": None,
        "webhook delivery after run-finished: p99 ms": None,
    },
    "scale_workers": {
        "sqlite, 1 worker: runs/s": None,
        "sqlite, 2 workers: runs/s": None,
        "sqlite, 4 workers: runs/s": None,
        "postgres, 1 worker: runs/s": None,
        "postgres, 2 workers: runs/s": None,
        "postgres, 4 workers: runs/s": None,
    },
    "soak": {
        "python RSS growth %": at_most(10, "issue 11"),
        "Chromium processes growth %": at_most(10, "issue 11"),
        "open fds growth %": at_most(10, "issue 11"),
        "WAL size growth %": at_most(10, "issue 11"),
    },
}

NOT_RUN_QUICK = "not run (full mode)"


def format_value(value: Value) -> str:
    if value is None:
        return "not measured"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return f"{value:,}"
    if abs(value) < 1:  # F1s and ratios: enough digits to see why a goal like >= 0.957 does or does not hold
        return f"{value:.4f}"
    if abs(value) < 10:
        return f"{value:.3f}"
    if abs(value) < 1000:
        return f"{value:.1f}"
    return f"{value:,.0f}"


def rows(benchmark: str, result: Result | str) -> list[tuple[str, str, str, str, str]]:
    """Table rows of one benchmark: its Result, or a text standing for every figure (an error, not run)."""
    goals = GOALS.get(benchmark, {})
    if isinstance(result, str):
        return [(benchmark, name, result, str(goal) if goal else "no goal", "-") for name, goal in goals.items()]
    label = f"{benchmark} ({result.sample})" if result.sample else benchmark
    names = list(goals) + [name for name in result.figures if name not in goals]
    table = []
    for name in names:
        value, goal = result.figures.get(name), goals.get(name)
        if goal is None:
            holds = "-"
        else:
            verdict = goal.holds(value)
            holds = "?" if verdict is None else ("yes" if verdict else "no")
        table.append((label, name, format_value(value), str(goal) if goal else "no goal", holds))
    return table


def print_table(table: list[tuple[str, str, str, str, str]]) -> None:
    header = ("benchmark", "figure", "value", "goal", "holds")
    widths = [max(len(row[i]) for row in [header, *table]) for i in range(len(header))]
    line = "  ".join(f"{{:<{width}}}" for width in widths)
    print(line.format(*header))
    print(line.format(*("-" * w for w in widths)))
    for row in table:
        print(line.format(*row))
