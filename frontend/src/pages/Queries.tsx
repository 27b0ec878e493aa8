import { useState } from "react";
import { Link, useNavigate } from "react-router";
import { queries } from "../api/endpoints";
import type { Run, SavedQuery } from "../api/types";
import { ConfirmDialog } from "../components/Modal";
import { QueryEditor, RunQueryDialog } from "../components/QueryForms";
import { CompiledBadge, EmptyState, ErrorBanner, Loading, Notice, PageHeader, Time } from "../components/ui";
import { useResource } from "../lib/useResource";

export function QueuedNotice({ run, onDismiss }: { run: Run; onDismiss(): void }) {
  return (
    <Notice tone="success">
      <p>
        Run queued. <Link to={`/runs/${run.id}/live`}>Watch it live</Link>
        <button type="button" className="link-button dismiss" onClick={onDismiss} aria-label="Dismiss">
          ×
        </button>
      </p>
    </Notice>
  );
}

export function Queries() {
  const navigate = useNavigate();
  const list = useResource(() => queries.list(), []);
  const [running, setRunning] = useState<SavedQuery | null>(null);
  const [deleting, setDeleting] = useState<SavedQuery | null>(null);
  const [creating, setCreating] = useState(false);
  const [queued, setQueued] = useState<Run | null>(null);

  return (
    <div className="page queries">
      <PageHeader
        title="Saved queries"
        subtitle="Named extract specs you can run again; each replay records what drifted."
        actions={
          !creating && (
            <button type="button" className="button" onClick={() => setCreating(true)}>
              New query
            </button>
          )
        }
      />
      {creating && (
        <QueryEditor
          onCancel={() => setCreating(false)}
          onSaved={(saved) => navigate(`/queries/${encodeURIComponent(saved.name)}`)}
        />
      )}
      {queued && <QueuedNotice run={queued} onDismiss={() => setQueued(null)} />}
      {list.error !== null && <ErrorBanner error={list.error} />}
      {list.loading && !list.data ? (
        <Loading />
      ) : list.data && list.data.length === 0 ? (
        <EmptyState title="No saved queries yet.">
          Open a finished extract run and choose <strong>Save as query</strong>, or create one here.
        </EmptyState>
      ) : (
        <div className="table-wrap">
          <table className="queries-table">
            <caption className="visually-hidden">Saved queries</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">URL</th>
                <th scope="col" className="num">
                  Runs
                </th>
                <th scope="col">Last run</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {(list.data ?? []).map((query) => (
                <tr key={query.name} data-query={query.name}>
                  <td data-label="Name">
                    <Link to={`/queries/${encodeURIComponent(query.name)}`} className="query-name">
                      {query.name}
                    </Link>{" "}
                    <CompiledBadge query={query} />
                  </td>
                  <td data-label="URL" className="url-cell" title={query.url}>
                    {query.url}
                  </td>
                  <td data-label="Runs" className="num run-count">
                    {query.runCount.toLocaleString()}
                  </td>
                  <td data-label="Last run">
                    <Time iso={query.lastRunAt} />
                  </td>
                  <td className="row-actions">
                    <button type="button" className="button small primary" onClick={() => setRunning(query)}>
                      Run now
                    </button>
                    <Link
                      className="button small"
                      to={`/queries/${encodeURIComponent(query.name)}`}
                      state={{ edit: true }}
                      aria-label={`Edit ${query.name}`}
                    >
                      Edit
                    </Link>
                    <button
                      type="button"
                      className="button small danger-outline"
                      onClick={() => setDeleting(query)}
                      aria-label={`Delete ${query.name}`}
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {running && (
        <RunQueryDialog
          query={running}
          onClose={() => setRunning(null)}
          onQueued={(run) => {
            setQueued(run);
            list.reload();
          }}
        />
      )}
      {deleting && (
        <ConfirmDialog
          title="Delete query"
          message={
            <p>
              Delete the saved query <strong>{deleting.name}</strong>? Its runs stay in the history.
            </p>
          }
          confirmLabel="Delete query"
          onConfirm={async () => {
            await queries.remove(deleting.name);
            list.reload();
          }}
          onClose={() => setDeleting(null)}
        />
      )}
    </div>
  );
}
