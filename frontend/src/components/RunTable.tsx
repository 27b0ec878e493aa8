import { Link, useNavigate } from "react-router";
import { isFinal, type Run, type RunSummary } from "../api/types";
import { formatDuration, runDurationMs, runSubject } from "../lib/format";
import { ExtractedByBadge, KindBadge, StatusBadge, Time } from "./ui";
import { DriftSummary } from "./Drift";

export function runPath(run: Pick<Run, "id" | "status">): string {
  return isFinal(run.status) ? `/runs/${run.id}` : `/runs/${run.id}/live`;
}

interface Props {
  runs: RunSummary[];
  showDrift?: boolean;
  caption: string;
}

/** Runs as a table (cards on narrow screens); a click anywhere on a row opens the run. */
export function RunTable({ runs, showDrift, caption }: Props) {
  const navigate = useNavigate();
  const now = Date.now();
  return (
    <div className="table-wrap">
      <table className="runs-table">
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Created</th>
            <th scope="col">Kind</th>
            <th scope="col">Status</th>
            <th scope="col">URL</th>
            <th scope="col">{showDrift ? "Drift" : "Query"}</th>
            <th scope="col" className="num">
              Duration
            </th>
          </tr>
        </thead>
        <tbody>
          {runs.map((run) => {
            const subject = runSubject(run);
            return (
              <tr
                key={run.id}
                className="clickable"
                data-run-id={run.id}
                onClick={(event) => {
                  if ((event.target as HTMLElement).closest("a, button")) return;
                  navigate(runPath(run));
                }}
              >
                <td data-label="Created">
                  <Link to={runPath(run)} className="row-link" aria-label={`Open ${run.kind} run of ${run.url}`}>
                    <Time iso={run.createdAt} />
                  </Link>
                </td>
                <td data-label="Kind">
                  <KindBadge kind={run.kind} /> <ExtractedByBadge by={run.extractedBy} />
                </td>
                <td data-label="Status">
                  <StatusBadge status={run.status} />
                </td>
                <td data-label="URL" className="url-cell" title={run.url}>
                  {run.url}
                </td>
                <td data-label={showDrift ? "Drift" : "Query"} className="subject-cell">
                  {showDrift ? (
                    <DriftSummary drift={run.drift} baseline={run.status === "succeeded"} />
                  ) : subject ? (
                    <span className={run.query ? "query-name" : "muted"} title={subject}>
                      {subject}
                    </span>
                  ) : (
                    <span className="muted">—</span>
                  )}
                </td>
                <td data-label="Duration" className="num">
                  {formatDuration(runDurationMs(run, now))}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
