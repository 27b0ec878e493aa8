import { useState } from "react";
import { Link, useSearchParams } from "react-router";
import { exportUrl, type RunFilter } from "../api/endpoints";
import { RunFilterFields, SavedQueryNames } from "../components/RunFilterFields";
import { PageHeader } from "../components/ui";
import { describeFilter, filterFromSearch, historySearch, searchFromFilter } from "../lib/historyFilter";

/** ISO time <-> the value of <input type="datetime-local"> (local time, minutes). */
function toLocalInput(iso: string | undefined): string {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  const offset = date.getTimezoneOffset() * 60000;
  return new Date(date.getTime() - offset).toISOString().slice(0, 16);
}

function fromLocalInput(value: string): string {
  if (!value) return "";
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? "" : date.toISOString();
}

export function Export() {
  const [params, setParams] = useSearchParams();
  const initial = params.toString() ? params : new URLSearchParams(historySearch());
  const [filter, setFilter] = useState<RunFilter>(() => filterFromSearch(initial));

  // `filter` is the newest: React draws a change made in an input's event before the next event comes (the history
  // differs: its filter is in the address, which the router draws later).
  function change(part: Partial<RunFilter>) {
    const next = { ...filter, ...part };
    setFilter(next);
    setParams(searchFromFilter(next), { replace: true });
  }

  const search = searchFromFilter(filter).toString();

  return (
    <div className="page export">
      <PageHeader
        title="Export"
        subtitle="Download runs and their results. The filter starts as the history's current one."
      />
      <div className="form-card">
        <div className="filters">
          <RunFilterFields idPrefix="export" filter={filter} onChange={change} />
          <div className="field grow">
            <label htmlFor="export-query">Query name</label>
            <input
              id="export-query"
              list="export-query-names"
              placeholder="Any"
              value={filter.query ?? ""}
              onChange={(event) => change({ query: event.target.value })}
            />
            <SavedQueryNames id="export-query-names" />
          </div>
          <div className="field">
            <label htmlFor="export-since">Created from</label>
            <input
              id="export-since"
              type="datetime-local"
              value={toLocalInput(filter.since)}
              onChange={(event) => change({ since: fromLocalInput(event.target.value) })}
            />
          </div>
          <div className="field">
            <label htmlFor="export-until">Created before</label>
            <input
              id="export-until"
              type="datetime-local"
              value={toLocalInput(filter.until)}
              onChange={(event) => change({ until: fromLocalInput(event.target.value) })}
            />
          </div>
        </div>
        <p className="export-summary">
          Exporting <strong>{describeFilter(filter)}</strong>, oldest first.{" "}
          <Link to={`/history${search ? `?${search}` : ""}`}>See these runs in the history</Link>
        </p>
        <div className="download-buttons">
          <a className="button primary" href={exportUrl("csv", filter)} download>
            Download CSV
          </a>
          <a className="button" href={exportUrl("json", filter)} download>
            Download JSON
          </a>
        </div>
        <p className="hint">
          JSON: one array of runs with their spec, result, error and usage. CSV: one row per result record, the run's
          columns first, then one column per result field (nested fields as <code>a.b</code>). Cells that a spreadsheet
          would take for a formula start with <code>'</code>.
        </p>
      </div>
    </div>
  );
}
