"""When a saved query's schedule is due: `{"cron": "<5 fields>", "timezone": "<IANA zone>"}` or
`{"everySeconds": N}`. Pure: no database, no clock of its own.

Cron is read in the schedule's own time zone, on wall-clock time, so "0 9 * * *" in Europe/Paris is 09:00 in Paris
in winter and in summer. Around a change of the clocks:
- a time that does not exist (02:30 on the night the clocks go forward) is taken at the offset before the change,
  so it comes an hour later on the wall clock (03:30), as cron daemons run a job the gap skipped;
- a time that happens twice (02:30 on the night the clocks go back) is due once, the first time.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo, available_timezones

from croniter import CroniterBadCronError, croniter

UTC = dt.UTC


class BadSchedule(ValueError):
    """A schedule that cannot be read; the message says why, in a user's words."""


def check_rule(rule: object, *, min_seconds: int) -> dict:
    """The rule as stored (timezone defaulted to UTC), or BadSchedule."""
    if not isinstance(rule, dict):
        raise BadSchedule('A schedule is {"cron": "...", "timezone": "..."} or {"everySeconds": N}, or null.')
    keys = set(rule)
    if keys == {"everySeconds"}:
        every = rule["everySeconds"]
        if not isinstance(every, int) or isinstance(every, bool):
            raise BadSchedule("everySeconds must be a whole number of seconds.")
        if every < min_seconds:
            raise BadSchedule(f"everySeconds must be at least {min_seconds} (SCHEDULE_MIN_SECONDS).")
        return {"everySeconds": every}
    if "cron" in keys and keys <= {"cron", "timezone"}:
        expression, zone = rule["cron"], rule.get("timezone", "UTC")
        if not isinstance(expression, str) or len(expression.split()) != 5:
            raise BadSchedule("cron must have 5 fields: minute hour day-of-month month day-of-week.")
        try:
            croniter(expression)
        except (CroniterBadCronError, ValueError) as error:
            raise BadSchedule(f"cron {expression!r} cannot be read: {error}") from None
        if not isinstance(zone, str) or zone not in _zones():
            raise BadSchedule(f"timezone {zone!r} is not an IANA time zone (such as Europe/Paris or UTC).")
        _check_spacing(expression, min_seconds)
        return {"cron": expression, "timezone": zone}
    raise BadSchedule('A schedule is {"cron": "...", "timezone": "..."} or {"everySeconds": N}, or null.')


def next_due(rule: dict, *, after: dt.datetime, previous: dt.datetime | None = None) -> dt.datetime:
    """The first due time strictly after `after` (aware, in UTC). everySeconds keeps the beat of `previous` (the last
    due time), so a late tick does not shift the ones after it; without one it is `after` + N."""
    if "everySeconds" in rule:
        step = dt.timedelta(seconds=rule["everySeconds"])
        if previous is None or previous > after:
            return after + step
        missed = (after - previous) // step
        return previous + (missed + 1) * step
    zone = ZoneInfo(rule["timezone"])
    wall = after.astimezone(zone).replace(tzinfo=None)
    times = croniter(rule["cron"], wall)
    while True:
        # fold=0: a wall time that happens twice is taken the first time; one that does not exist, at the offset
        # before the change.
        due = times.get_next(dt.datetime).replace(tzinfo=zone).astimezone(UTC)
        if due > after:
            return due


def _check_spacing(expression: str, min_seconds: int) -> None:
    """Cron fires at most once a minute; below SCHEDULE_MIN_SECONDS, two consecutive times must be far enough apart."""
    if min_seconds <= 60:
        return
    start = dt.datetime(2026, 1, 5)
    times = croniter(expression, start)
    previous = times.get_next(dt.datetime)
    for _ in range(50):
        current = times.get_next(dt.datetime)
        if (current - previous).total_seconds() < min_seconds:
            raise BadSchedule(
                f"cron {expression!r} is due more often than every {min_seconds} s (SCHEDULE_MIN_SECONDS)."
            )
        previous = current


_ZONES: frozenset[str] | None = None


def _zones() -> frozenset[str]:
    global _ZONES
    if _ZONES is None:
        _ZONES = frozenset(available_timezones()) | {"UTC"}
    return _ZONES


def describe(rule: dict) -> str:
    if "everySeconds" in rule:
        return f"every {rule['everySeconds']} s"
    return f"cron {rule['cron']} ({rule['timezone']})"


__all__ = ["BadSchedule", "check_rule", "describe", "next_due"]
