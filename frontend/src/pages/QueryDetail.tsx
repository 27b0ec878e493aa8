import { useEffect, useState } from "react";
import { Link, useLocation, useNavigate, useParams } from "react-router";
import { cursorOf } from "../api/client";
import { queries, runs } from "../api/endpoints";
import { isFinal, type Run } from "../api/types";
import { JsonView } from "../components/JsonTree";
import { ConfirmDialog } from "../components/Modal";
import { QueryEditor, RunQueryDialog } from "../components/QueryForms";
import { RunTable } from "../components/RunTable";
import { ScheduleEditor } from "../components/ScheduleEditor";
import { CompiledBadge, EmptyState, ErrorBanner, Loading, Notice, PageHeader, Time } from "../components/ui";
import { useResource } from "../lib/useResource";
import { QueuedNotice } from "./Queries";

const PAGE = 25;

export function QueryDetail() {
  const { name = "" } = useParams();
  const location = useLocation();
  const navigate = useNavigate();
  const flags = (location.state as { edit?: boolean; created?: boolean } | null) ?? {};
  const query = useResource(() => queries.get(name), [name]);
  const [cursor, setCursor] = useState<string | null>(null);
  const history = useResource((signal) => runs.list({ query: name }, cursor, PAGE, signal), [name, cursor]);
  const [editing, setEditing] = useState(Boolean(flags.edit));
  const [running, setRunning] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [queued, setQueued] = useState<Run | null>(null);
  const [created, setCreated] = useState(Boolean(flags.created));

  // While a replay of this query is queued or running, re-read its runs (and the counts) every 2 s.
  const unfinished = (history.data?.results ?? []).some((run) => !isFinal(run.status));
  const reloadHistory = history.reload;
  useEffect(() => {
    if (!unfinished) return;
    const timer = setInterval(reloadHistory, 2000);
    return () => clearInterval(timer);
  }, [unfinished, reloadHistory]);

  if (!query.data) {
    if (query.error) {
      return (
        <div className="page">
          <PageHeader title={name} />
          <ErrorBanner error={query.error} />
          <Link to="/queries">All saved queries</Link>
        </div>
      );
    }
    return <Loading />;
  }
  const saved = query.data;

  return (
    <div className="page query-detail">
      <nav className="breadcrumbs" aria-label="Breadcrumbs">
        <Link to="/queries">Saved queries</Link> <span aria-hidden="true">/</span> <span>{saved.name}</span>
      </nav>
      <PageHeader
        title={
          <>
            <span className="query-title">{saved.name}</span> <CompiledBadge query={saved} />
          </>
        }
        subtitle={<span className="break">{saved.url}</span>}
        actions={
          <>
            <button type="button" className="button primary" onClick={() => setRunning(true)}>
              Run now
            </button>
            {!editing && (
              <button type="button" className="button" onClick={() => setEditing(true)}>
                Edit
              </button>
            )}
            <button type="button" className="button danger-outline" onClick={() => setDeleting(true)}>
              Delete
            </button>
          </>
        }
      />
      {created && (
        <Notice tone="success">
          <p>
            Saved. Run it again any time with <strong>Run now</strong>, here or from the CLI:{" "}
            <code>manage.py query run {saved.name}</code>
            <button
              type="button"
              className="link-button dismiss"
              onClick={() => setCreated(false)}
              aria-label="Dismiss"
            >
              ×
            </button>
          </p>
        </Notice>
      )}
      {queued && <QueuedNotice run={queued} onDismiss={() => setQueued(null)} />}

      {editing ? (
        <QueryEditor
          query={saved}
          onCancel={() => setEditing(false)}
          onSaved={(updated) => {
            query.setData(updated);
            setEditing(false);
          }}
        />
      ) : (
        <>
          <dl className="facts summary">
            <div>
              <dt>Runs</dt>
              <dd className="run-count" data-testid="run-count">
                {saved.runCount.toLocaleString()}
              </dd>
            </div>
            <div>
              <dt>Last run</dt>
              <dd>
                <Time iso={saved.lastRunAt} />
              </dd>
            </div>
            <div>
              <dt>Created</dt>
              <dd>
                <Time iso={saved.createdAt} />
              </dd>
            </div>
            <div>
              <dt>Updated</dt>
              <dd>
                <Time iso={saved.updatedAt} />
              </dd>
            </div>
            <div className="wide">
              <dt>Instruction</dt>
              <dd>{saved.instruction || <span className="muted">none</span>}</dd>
            </div>
          </dl>
          <ScheduleEditor query={saved} onSaved={(updated) => query.setData(updated)} />
          <section className="section" aria-labelledby="schema-title">
            <h2 id="schema-title">Schema</h2>
            <JsonView value={saved.schema} label="Schema" />
          </section>
        </>
      )}

      <section className="section" aria-labelledby="query-runs-title">
        <div className="section-head">
          <h2 id="query-runs-title">Runs of this query</h2>
          <Link to={`/history?query=${encodeURIComponent(saved.name)}`}>Open in history</Link>
        </div>
        <p className="hint">
          Drift compares each successful replay with the previous one: fields that changed, emptied or appeared.
        </p>
        {history.error !== null && <ErrorBanner error={history.error} />}
        {history.data && history.data.results.length === 0 ? (
          <EmptyState title="This query has not run yet.">
            <button type="button" className="link-button" onClick={() => setRunning(true)}>
              Run it now
            </button>
          </EmptyState>
        ) : history.data ? (
          <RunTable runs={history.data.results} showDrift caption={`Runs of ${saved.name}`} />
        ) : (
          <Loading />
        )}
        {(history.data?.next || history.data?.previous) && (
          <nav className="pagination" aria-label="Pages of runs">
            <button
              type="button"
              className="button"
              onClick={() => setCursor(cursorOf(history.data?.previous ?? null))}
              disabled={!history.data?.previous}
            >
              ← Newer
            </button>
            <button
              type="button"
              className="button"
              onClick={() => setCursor(cursorOf(history.data?.next ?? null))}
              disabled={!history.data?.next}
            >
              Older →
            </button>
          </nav>
        )}
      </section>

      {running && (
        <RunQueryDialog
          query={saved}
          onClose={() => setRunning(false)}
          onQueued={(run) => {
            setQueued(run);
            query.reload();
            setCursor(null);
            history.reload();
          }}
        />
      )}
      {deleting && (
        <ConfirmDialog
          title="Delete query"
          message={
            <p>
              Delete the saved query <strong>{saved.name}</strong>? Its runs stay in the history.
            </p>
          }
          confirmLabel="Delete query"
          onConfirm={async () => {
            await queries.remove(saved.name);
            navigate("/queries", { replace: true });
          }}
          onClose={() => setDeleting(false)}
        />
      )}
    </div>
  );
}
