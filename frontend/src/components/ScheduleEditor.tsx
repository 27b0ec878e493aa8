import { type FormEvent, useState } from "react";
import { queries } from "../api/endpoints";
import type { QuerySchedule, SavedQuery } from "../api/types";
import { ErrorBanner, Time } from "./ui";

const UNITS = { minutes: 60, hours: 3600, days: 86400 } as const;
type Unit = keyof typeof UNITS;

export function describeSchedule(schedule: QuerySchedule | null): string {
  if (!schedule) return "Only when asked";
  if ("everySeconds" in schedule) {
    const every = schedule.everySeconds;
    for (const unit of ["days", "hours", "minutes"] as Unit[]) {
      if (every % UNITS[unit] === 0) {
        const count = every / UNITS[unit];
        return `Every ${count === 1 ? "" : `${count} `}${count === 1 ? unit.slice(0, -1) : unit}`;
      }
    }
    return `Every ${every} s`;
  }
  return `Cron ${schedule.cron} (${schedule.timezone ?? "UTC"})`;
}

function initialInterval(schedule: QuerySchedule | null): { count: number; unit: Unit } {
  if (schedule && "everySeconds" in schedule) {
    for (const unit of ["days", "hours", "minutes"] as Unit[]) {
      if (schedule.everySeconds % UNITS[unit] === 0) return { count: schedule.everySeconds / UNITS[unit], unit };
    }
  }
  return { count: 1, unit: "hours" };
}

/** The query's schedule, its next run, and a form that sets or stops it (PATCH schedule). */
export function ScheduleEditor({ query, onSaved }: { query: SavedQuery; onSaved: (query: SavedQuery) => void }) {
  const [editing, setEditing] = useState(false);
  const current = query.schedule;
  const [mode, setMode] = useState<"off" | "every" | "cron">(
    !current ? "every" : "everySeconds" in current ? "every" : "cron",
  );
  const start = initialInterval(current);
  const [count, setCount] = useState(start.count);
  const [unit, setUnit] = useState<Unit>(start.unit);
  const [cron, setCron] = useState(current && "cron" in current ? current.cron : "0 * * * *");
  const [zone, setZone] = useState(
    current && "cron" in current ? (current.timezone ?? "UTC") : Intl.DateTimeFormat().resolvedOptions().timeZone,
  );
  const [error, setError] = useState<unknown>(null);
  const [saving, setSaving] = useState(false);

  async function save(event: FormEvent) {
    event.preventDefault();
    const schedule: QuerySchedule | null =
      mode === "off"
        ? null
        : mode === "every"
          ? { everySeconds: count * UNITS[unit] }
          : { cron: cron.trim(), timezone: zone.trim() || "UTC" };
    setSaving(true);
    setError(null);
    try {
      onSaved(await queries.schedule(query.name, schedule));
      setEditing(false);
    } catch (failure) {
      setError(failure);
    } finally {
      setSaving(false);
    }
  }

  return (
    <section className="section schedule" aria-labelledby="schedule-title">
      <div className="section-head">
        <h2 id="schedule-title">Schedule</h2>
        {!editing && (
          <button type="button" className="button" onClick={() => setEditing(true)}>
            {current ? "Change schedule" : "Schedule it"}
          </button>
        )}
      </div>
      <dl className="facts">
        <div>
          <dt>Replays</dt>
          <dd data-testid="schedule">{describeSchedule(current)}</dd>
        </div>
        <div>
          <dt>Next run</dt>
          <dd data-testid="next-run">
            {query.nextRunAt ? <Time iso={query.nextRunAt} /> : <span className="muted">—</span>}
          </dd>
        </div>
        {query.skippedTicks > 0 && (
          <div>
            <dt>Skipped</dt>
            <dd title="Due times that found a replay still queued or running">{query.skippedTicks}</dd>
          </div>
        )}
      </dl>
      {editing && (
        <form className="form schedule-form" onSubmit={save} aria-label="Schedule">
          <fieldset>
            <legend>Replay this query</legend>
            <div className="schedule-row">
              <label>
                <input type="radio" name="mode" checked={mode === "every"} onChange={() => setMode("every")} /> Every
              </label>
              <input
                type="number"
                min={1}
                aria-label="Interval"
                value={count}
                disabled={mode !== "every"}
                onChange={(event) => setCount(Math.max(1, Number(event.target.value) || 1))}
              />
              <select
                aria-label="Unit"
                value={unit}
                disabled={mode !== "every"}
                onChange={(event) => setUnit(event.target.value as Unit)}
              >
                <option value="minutes">minutes</option>
                <option value="hours">hours</option>
                <option value="days">days</option>
              </select>
            </div>
            <div className="schedule-row">
              <label>
                <input type="radio" name="mode" checked={mode === "cron"} onChange={() => setMode("cron")} /> On a cron
                schedule
              </label>
              <input
                aria-label="Cron"
                className="cron"
                value={cron}
                disabled={mode !== "cron"}
                onChange={(event) => setCron(event.target.value)}
                placeholder="0 9 * * 1-5"
              />
              <input
                aria-label="Time zone"
                value={zone}
                disabled={mode !== "cron"}
                onChange={(event) => setZone(event.target.value)}
                placeholder="Europe/Paris"
              />
            </div>
            <div className="schedule-row">
              <label>
                <input type="radio" name="mode" checked={mode === "off"} onChange={() => setMode("off")} /> Only when
                asked (no schedule)
              </label>
            </div>
          </fieldset>
          <p className="hint">
            A due time that finds a replay of this query still queued or running is skipped, never run twice at once.
          </p>
          <ErrorBanner error={error} title="The schedule was not saved" />
          <div className="actions">
            <button type="submit" className="button primary" disabled={saving}>
              Save schedule
            </button>
            <button type="button" className="button" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </div>
        </form>
      )}
    </section>
  );
}
