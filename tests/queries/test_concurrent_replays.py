"""Replays sent at the same moment to a live service all count: runCount is updated atomically."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from tests.live import KEY, LiveService

pytestmark = pytest.mark.live

SCHEMA = {"type": "object", "properties": {"name": {"type": ["string", "null"], "x-selector": "h1.name"}}}


def test_concurrent_replays_each_count_and_each_run(tmp_path, site):
    service = LiveService(tmp_path).start()
    try:
        created = service.post("/api/queries", {"name": "shoe", "url": site.url("/product"), "schema": SCHEMA})
        assert created.status_code == 201, created.text

        def replay(n: int) -> str:
            with requests.Session() as session:
                response = session.post(
                    f"{service.base_url}/api/queries/shoe/run",
                    json={"instruction": f"replay {n}"},
                    headers={"Authorization": f"Bearer {KEY}"},
                    timeout=30,
                )
            assert response.status_code == 201, response.text
            return response.json()["id"]

        with ThreadPoolExecutor(max_workers=8) as pool:
            run_ids = list(pool.map(replay, range(16)))
        assert len(set(run_ids)) == 16
        query = service.get("/api/queries/shoe").json()
        assert query["runCount"] == 16
        assert query["instruction"] == ""  # no override leaked into the stored query
        listed = service.get("/api/runs?query=shoe&limit=100").json()["results"]
        assert sorted(run["id"] for run in listed) == sorted(run_ids)
        finished = [service.wait(run_id) for run_id in run_ids[:3]]
        assert [run["result"]["name"] for run in finished] == ["Trail shoe"] * 3
    finally:
        service.stop()
