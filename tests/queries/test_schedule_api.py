"""A saved query's schedule through the API and the CLI: stored with a django-q2 Schedule row kept in step (its
next due time shown as nextRunAt), refused when it cannot be read, gone with the query."""

from __future__ import annotations

import datetime as dt
import json
from zoneinfo import ZoneInfo

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django_q.models import Schedule

from queries.models import SavedQuery
from queries.schedule_rows import TICK_JOB
from queries.scheduling import replay_on_schedule

pytestmark = pytest.mark.django_db

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "x-selector": "h1.name"}}}


def send(client, method: str, path: str, body=None):
    return getattr(client, method)(path, data=json.dumps(body), content_type="application/json")


def seconds_from_now(text: str) -> float:
    return (dt.datetime.fromisoformat(text) - dt.datetime.now(dt.UTC)).total_seconds()


def rows() -> list[tuple[str, str | None]]:
    return list(Schedule.objects.filter(func=TICK_JOB).values_list("schedule_type", "cron"))


def test_a_schedule_is_kept_with_the_query_and_its_next_run_shown(api):
    body = {"name": "price", "url": "https://shop.example/p", "schema": SCHEMA, "schedule": {"everySeconds": 3600}}
    created = send(api, "post", "/api/queries", body)
    assert created.status_code == 201, created.content
    assert created.json()["schedule"] == {"everySeconds": 3600}
    assert 3590 < seconds_from_now(created.json()["nextRunAt"]) <= 3600
    assert rows() == [(Schedule.MINUTES, None)]

    paris = {"cron": "0 9 * * *", "timezone": "Europe/Paris"}
    changed = send(api, "patch", "/api/queries/price", {"schedule": paris})
    assert changed.status_code == 200, changed.content
    next_run = dt.datetime.fromisoformat(changed.json()["nextRunAt"])
    assert (next_run.astimezone(ZoneInfo("Europe/Paris")).hour, next_run.minute) == (9, 0)
    assert rows() == [(Schedule.CRON, "0 9 * * *")]  # the same row, changed

    stopped = send(api, "patch", "/api/queries/price", {"schedule": None})
    assert (stopped.json()["schedule"], stopped.json()["nextRunAt"]) == (None, None)
    assert rows() == []

    send(api, "patch", "/api/queries/price", {"schedule": {"everySeconds": 600}})
    assert api.delete("/api/queries/price").status_code == 204
    assert rows() == []


def test_a_schedule_row_left_by_a_query_deleted_without_the_api_goes_at_its_first_tick(api):
    body = {"name": "price", "url": "https://shop.example/p", "schema": SCHEMA, "schedule": {"everySeconds": 3600}}
    assert send(api, "post", "/api/queries", body).status_code == 201
    query_id = SavedQuery.objects.get(name="price").pk
    SavedQuery.objects.filter(pk=query_id).delete()  # as from a Django shell: the Schedule row stays behind
    assert rows() == [(Schedule.MINUTES, None)]
    due = dt.datetime.now(dt.UTC).isoformat()
    assert replay_on_schedule(str(query_id), due) == "gone"
    assert rows() == []


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ({"everySeconds": 5}, "everySeconds must be at least 60 (SCHEDULE_MIN_SECONDS)."),
        ({"cron": "every hour"}, "cron must have 5 fields"),
        ({"cron": "0 9 * * *", "timezone": "Mars/Olympus"}, "timezone 'Mars/Olympus' is not an IANA time zone"),
    ],
)
def test_a_schedule_that_cannot_be_read_is_400_and_nothing_is_saved(api, schedule, message):
    body = {"name": "price", "url": "https://shop.example/p", "schema": SCHEMA, "schedule": schedule}
    response = send(api, "post", "/api/queries", body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["fields"]["schedule"][0].startswith(message)
    assert api.get("/api/queries/price").status_code == 404 and rows() == []


def test_the_minimum_interval_is_a_setting(api, settings):
    settings.SCHEDULE_MIN_SECONDS = 2
    body = {"name": "fast", "url": "https://shop.example/p", "schema": SCHEMA, "schedule": {"everySeconds": 2}}
    assert send(api, "post", "/api/queries", body).status_code == 201


def test_query_schedule_on_the_command_line(api, capsys):
    send(api, "post", "/api/queries", {"name": "price", "url": "https://shop.example/p", "schema": SCHEMA})
    call_command("query", "schedule", "price", "--every", "1h")
    said = capsys.readouterr().out
    assert said.startswith("price replays every 3600 s; next at ")
    assert api.get("/api/queries/price").json()["schedule"] == {"everySeconds": 3600}
    call_command("query", "schedule", "price", "--cron", "30 7 * * 1-5", "--timezone", "Asia/Tokyo")
    assert api.get("/api/queries/price").json()["schedule"] == {"cron": "30 7 * * 1-5", "timezone": "Asia/Tokyo"}
    call_command("query", "show", "price")
    assert "schedule:    cron 30 7 * * 1-5 (Asia/Tokyo), next at " in capsys.readouterr().out
    with pytest.raises(CommandError, match="--every: 'often' is not an interval"):
        call_command("query", "schedule", "price", "--every", "often")
    with pytest.raises(CommandError, match="everySeconds must be at least 60"):
        call_command("query", "schedule", "price", "--every", "30s")
    call_command("query", "schedule", "price", "--off")
    assert capsys.readouterr().out == "price no longer replays by itself.\n"
    assert rows() == []
