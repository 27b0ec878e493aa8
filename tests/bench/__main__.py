"""`python -m tests.bench`: see tests/bench/run_all.py (the runner lives in an importable module so that the
processes it spawns can find its functions)."""

from __future__ import annotations

from tests.bench.run_all import main

main()
