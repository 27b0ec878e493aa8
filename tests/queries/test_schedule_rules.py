"""When a schedule is due (queries/schedule.py): cron read in its own time zone, around changes of the clocks, and
intervals that keep their beat."""

from __future__ import annotations

import datetime as dt

import pytest

from queries.schedule import BadSchedule, check_rule, next_due

UTC = dt.UTC


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).astimezone(UTC)


def dues(rule: dict, start: str, count: int) -> list[str]:
    found, after = [], at(start)
    for _ in range(count):
        after = next_due(rule, after=after)
        found.append(after.strftime("%Y-%m-%d %H:%M"))
    return found


def test_nine_in_paris_is_eight_utc_in_winter_and_seven_in_summer():
    # Europe/Paris moves to summer time at 01:00 UTC on Sunday 29 March 2026.
    rule = {"cron": "0 9 * * *", "timezone": "Europe/Paris"}
    assert dues(rule, "2026-03-27T12:00:00+00:00", 3) == ["2026-03-28 08:00", "2026-03-29 07:00", "2026-03-30 07:00"]


def test_a_time_the_clocks_skip_comes_an_hour_later_that_day_only():
    # 02:30 does not exist in Paris on 29 March 2026 (02:00 becomes 03:00): taken at the winter offset, 01:30 UTC,
    # which is 03:30 on the wall clock. The day before and after, 02:30 local as usual.
    rule = {"cron": "30 2 * * *", "timezone": "Europe/Paris"}
    assert dues(rule, "2026-03-27T12:00:00+00:00", 3) == ["2026-03-28 01:30", "2026-03-29 01:30", "2026-03-30 00:30"]


def test_a_time_that_happens_twice_is_due_once():
    # On 25 October 2026 Paris goes back from 03:00 to 02:00: 02:30 happens at 00:30 UTC and again at 01:30 UTC.
    rule = {"cron": "30 2 * * *", "timezone": "Europe/Paris"}
    assert dues(rule, "2026-10-24T12:00:00+00:00", 3) == ["2026-10-25 00:30", "2026-10-26 01:30", "2026-10-27 01:30"]
    # Asked between the two: the next one is the next day's.
    assert next_due(rule, after=at("2026-10-25T01:00:00+00:00")) == at("2026-10-26T01:30:00+00:00")


def test_hourly_cron_in_a_zone_fires_every_hour_through_the_change():
    rule = {"cron": "0 * * * *", "timezone": "America/New_York"}
    # 8 March 2026: New York skips from 02:00 to 03:00 local (07:00 UTC).
    assert dues(rule, "2026-03-08T05:30:00+00:00", 3) == ["2026-03-08 06:00", "2026-03-08 07:00", "2026-03-08 08:00"]


def test_an_interval_keeps_its_beat_and_does_not_catch_up_in_a_burst():
    rule = {"everySeconds": 60}
    previous = at("2026-01-01T10:00:00+00:00")
    # On time: the next beat.
    assert next_due(rule, after=at("2026-01-01T10:00:02+00:00"), previous=previous) == at("2026-01-01T10:01:00+00:00")
    # Down for ten minutes: one beat after now, not ten in a row.
    assert next_due(rule, after=at("2026-01-01T10:10:30+00:00"), previous=previous) == at("2026-01-01T10:11:00+00:00")
    # A first schedule: N seconds from now.
    assert next_due(rule, after=at("2026-01-01T10:00:00+00:00")) == at("2026-01-01T10:01:00+00:00")


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"everySeconds": 30}, "everySeconds must be at least 60 (SCHEDULE_MIN_SECONDS)."),
        ({"everySeconds": "1h"}, "everySeconds must be a whole number of seconds."),
        ({"cron": "0 9 * *"}, "cron must have 5 fields: minute hour day-of-month month day-of-week."),
        ({"cron": "0 25 * * *"}, "cron '0 25 * * *' cannot be read"),
        ({"cron": "0 9 * * *", "timezone": "Paris"}, "timezone 'Paris' is not an IANA time zone"),
        ({"cron": "* * * * *"}, None),
        ({"cron": "0 9 * * *", "everySeconds": 60}, "A schedule is"),
        ("hourly", "A schedule is"),
    ],
)
def test_bad_schedules_say_what_is_wrong(rule, message):
    if message is None:
        assert check_rule(rule, min_seconds=60) == {"cron": "* * * * *", "timezone": "UTC"}
        with pytest.raises(BadSchedule, match="more often than every 120 s"):
            check_rule(rule, min_seconds=120)
        return
    with pytest.raises(BadSchedule) as raised:
        check_rule(rule, min_seconds=60)
    assert str(raised.value).startswith(message)
