"""Each replay of a saved query is compared with the previous successful one: run.drift says what changed."""

from __future__ import annotations

import json

import pytest

from runs.drift import result_drift
from runs.jobs import execute_run

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": ["string", "null"], "x-selector": "h1.name"},
        "price": {"type": ["string", "null"], "x-selector": "p.price"},
        "title": {"type": ["string", "null"], "x-selector": "title"},
    },
}


def test_drift_names_changed_emptied_and_appeared_fields():
    previous = {"name": "Shoe", "price": "10", "stock": 3, "tags": ["a"], "seller": {"name": "Kim"}, "gone": None}
    current = {"name": "Shoe", "price": "12", "stock": None, "tags": [], "seller": {"name": "Kim"}, "new": "x"}
    assert result_drift(previous, current) == {
        "changed": ["price"],
        "emptied": ["stock", "tags.0"],
        "appeared": ["new"],
    }


def test_drift_of_list_results_goes_by_position():
    previous = [{"sku": "A", "price": 1}, {"sku": "B", "price": 2}]
    current = [{"sku": "A", "price": 1}, {"sku": "B", "price": 3}]
    assert result_drift(previous, current) == {"changed": ["1.price"], "emptied": [], "appeared": []}
    assert result_drift(previous, previous[:1]) == {"changed": [], "emptied": ["1.price", "1.sku"], "appeared": []}


@pytest.mark.django_db(transaction=True)
def test_replays_record_drift_against_the_previous_success(api, site):
    created = api.post(
        "/api/queries",
        data=json.dumps({"name": "shoe", "url": site.url("/product"), "schema": SCHEMA}),
        content_type="application/json",
    )
    assert created.status_code == 201, created.content

    def replay(**overrides) -> dict:
        run = api.post("/api/queries/shoe/run", data=json.dumps(overrides), content_type="application/json").json()
        execute_run(run["id"])
        return api.get(f"/api/runs/{run['id']}").json()

    first = replay()
    assert first["status"] == "succeeded", first["error"]
    assert first["result"]["name"] == "Trail shoe"
    assert first["drift"] is None  # nothing to compare with yet

    same = replay()
    assert same["drift"] == {"comparedWith": first["id"], "changed": [], "emptied": [], "appeared": []}

    failed = replay(url=site.url("/missing"))
    assert failed["status"] == "failed" and failed["drift"] is None

    other = replay(url=site.url("/static"))
    assert other["status"] == "succeeded", other["error"]
    assert other["drift"] == {
        "comparedWith": same["id"],
        "changed": ["title"],
        "emptied": ["name", "price"],
        "appeared": [],
    }

    back = replay()
    assert back["drift"] == {
        "comparedWith": other["id"],
        "changed": ["title"],
        "emptied": [],
        "appeared": ["name", "price"],
    }


@pytest.mark.django_db(transaction=True)
def test_a_new_query_under_a_deleted_ones_name_does_not_compare_with_its_runs(api, site):
    def save() -> None:
        body = {"name": "shoe", "url": site.url("/product"), "schema": SCHEMA}
        assert api.post("/api/queries", data=json.dumps(body), content_type="application/json").status_code == 201

    def replay() -> dict:
        run = api.post("/api/queries/shoe/run", data="{}", content_type="application/json").json()
        execute_run(run["id"])
        return api.get(f"/api/runs/{run['id']}").json()

    save()
    replay()
    assert api.delete("/api/queries/shoe").status_code == 204
    save()
    assert replay()["drift"] is None
