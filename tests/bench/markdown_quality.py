"""Main-content Markdown quality on shared/datasets/article-extraction, and conversion time per page.

    .venv/bin/python -m tests.bench.markdown_quality [--whole-page]

Metric (the dataset README's): 4-word shingles of the plain text of our Markdown against the ground truth's
articleBody; mean per-page precision, recall and F1 (a page with nothing extracted scores 0).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import time
from pathlib import Path

from runs.engine.markdown import to_markdown
from tests.bench.goals import Result, print_table, rows

DATASET = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "article-extraction"

_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MARKS = re.compile(r"[*_#>`|]")
_WORD = re.compile(r"\w+")


def plain_text(markdown: str) -> str:
    """Strip image syntax, link targets, emphasis and heading marks, as the dataset README asks."""
    return _MARKS.sub(" ", _LINK.sub(r"\1", _IMAGE.sub("", markdown)))


def shingles(text: str, size: int = 4) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


def score(extracted: str, truth: str) -> tuple[float, float, float]:
    got, want = shingles(extracted), shingles(truth)
    if not got or not want:
        return 0.0, 0.0, 0.0
    common = len(got & want)
    if not common:
        return 0.0, 0.0, 0.0
    precision, recall = common / len(got), common / len(want)
    return precision, recall, 2 * precision * recall / (precision + recall)


def measure(*, whole_page: bool = False) -> dict[str, float]:
    truth = json.loads((DATASET / "ground-truth.json").read_text())
    scores, timings = [], []
    for page_id, expected in truth.items():
        page_html = gzip.decompress((DATASET / "html" / f"{page_id}.html.gz").read_bytes()).decode("utf-8", "replace")
        started = time.perf_counter()
        markdown = to_markdown(page_html, main_content=not whole_page, url=expected.get("url"))
        timings.append((time.perf_counter() - started) * 1000)
        scores.append(score(plain_text(markdown), expected["articleBody"]))
    n = len(scores)
    precision, recall, f1 = (sum(s[i] for s in scores) / n for i in range(3))
    mode = "whole page" if whole_page else "main content"
    print(f"article-extraction, {n} pages, {mode}")
    print(f"  precision {precision:.3f}  recall {recall:.3f}  F1 {f1:.3f}")
    print(
        f"  conversion ms/page: mean {statistics.mean(timings):.1f}  p50 {statistics.median(timings):.1f}  "
        f"p95 {sorted(timings)[int(0.95 * n)]:.1f}"
    )
    name = "main-content F1 (article-extraction)" if not whole_page else "whole-page F1 (article-extraction)"
    return {name: f1, "precision": precision, "recall": recall, "conversion p50 ms/page": statistics.median(timings)}


def figures(full: bool = False) -> Result:
    return Result("181 pages", measure())  # the whole set takes seconds: the same in both modes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--whole-page", action="store_true", help="Score the whole page instead of main content.")
    args = parser.parse_args()
    found = measure(whole_page=args.whole_page)
    print()
    print_table(rows("markdown_quality", Result("181 pages", found)))


if __name__ == "__main__":
    main()
