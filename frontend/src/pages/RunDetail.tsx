import { useEffect, useState, type FormEvent } from "react";
import { Link, useNavigate, useParams } from "react-router";
import { ApiError } from "../api/client";
import { exportUrl, queries, runs } from "../api/endpoints";
import { isFinal, type Drift, type RunDetail as RunDetailType } from "../api/types";
import { DriftSummary } from "../components/Drift";
import { JsonView } from "../components/JsonTree";
import { Modal } from "../components/Modal";
import { Reextract, hasArchivedPage } from "../components/Reextract";
import { CrawlProgress, CrawlSummaryView } from "../components/CrawlProgress";
import { ResultView } from "../components/ResultView";
import { StepList } from "../components/Steps";
import {
  describedBy,
  ErrorBanner,
  ExtractedByBadge,
  Field,
  KindBadge,
  Loading,
  PageHeader,
  RunErrorBanner,
  StatusBadge,
  Time,
} from "../components/ui";
import { downloadText } from "../lib/download";
import { formatDuration, runDurationMs, shortId } from "../lib/format";
import type { LiveStep } from "../lib/liveRun";
import { useResource } from "../lib/useResource";

function DriftDetail({ drift }: { drift: Drift }) {
  const groups: [string, string[]][] = [
    ["Changed", drift.changed],
    ["Emptied", drift.emptied],
    ["Appeared", drift.appeared],
  ];
  return (
    <div className="drift-detail">
      <p>
        Compared with{" "}
        {drift.comparedWith ? <Link to={`/runs/${drift.comparedWith}`}>run {shortId(drift.comparedWith)}</Link> : "—"}:{" "}
        <DriftSummary drift={drift} />
      </p>
      <dl className="facts">
        {groups
          .filter(([, fields]) => fields.length > 0)
          .map(([label, fields]) => (
            <div key={label} className="wide">
              <dt>{label}</dt>
              <dd>
                {fields.map((field) => (
                  <code key={field} className="field-path">
                    {field}
                  </code>
                ))}
              </dd>
            </div>
          ))}
      </dl>
    </div>
  );
}

function SaveAsQuery({ runId, onClose }: { runId: string; onClose(): void }) {
  const navigate = useNavigate();
  const [name, setName] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const local = name && !/^[a-z0-9_-]{1,64}$/.test(name) ? "Use 1-64 lowercase letters, digits, - and _." : null;
  const fieldError = local ?? (error instanceof ApiError ? (error.field("name") ?? null) : null);

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (!name) {
      setError(new ApiError(400, "invalid_request", "Enter a name.", { name: ["Enter a name."] }));
      return;
    }
    if (local) return;
    setBusy(true);
    setError(null);
    try {
      const saved = await queries.fromRun(name, runId);
      navigate(`/queries/${encodeURIComponent(saved.name)}`, { state: { created: true } });
    } catch (reason) {
      setError(reason);
      setBusy(false);
    }
  }

  return (
    <Modal title="Save as query" onClose={onClose}>
      <form onSubmit={submit} className="modal-body" noValidate>
        <p>The run's URL, schema and instruction become a saved query you can run again by name.</p>
        <Field id="query-name" label="Query name" hint="Lowercase letters, digits, - and _." error={fieldError}>
          <input
            id="query-name"
            value={name}
            autoFocus
            autoComplete="off"
            onChange={(event) => setName(event.target.value.trim())}
            aria-invalid={fieldError ? true : undefined}
            aria-describedby={describedBy("query-name", true, fieldError)}
          />
        </Field>
        {error !== null && !(error instanceof ApiError && error.field("name")) && <ErrorBanner error={error} />}
        <div className="modal-actions">
          <button type="button" className="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="button primary" disabled={busy}>
            {busy ? "Saving…" : "Save query"}
          </button>
        </div>
      </form>
    </Modal>
  );
}

function toLiveSteps(run: RunDetailType): LiveStep[] {
  return run.steps.map((step) => ({ ...step, truncated: false }));
}

export function RunDetail() {
  const { id = "" } = useParams();
  const navigate = useNavigate();
  const resource = useResource((signal) => runs.get(id, signal), [id]);
  const [saving, setSaving] = useState(false);
  const [reextracting, setReextracting] = useState(false);
  const [actionError, setActionError] = useState<unknown>(null);
  const run = resource.data;
  const running = run ? !isFinal(run.status) : false;

  // A run that is still going is re-read every two seconds (the live view streams it).
  useEffect(() => {
    if (!running) return;
    const timer = setInterval(resource.reload, 2000);
    return () => clearInterval(timer);
  }, [running, resource.reload]);

  if (!run) {
    if (resource.error) {
      return (
        <div className="page">
          <PageHeader title="Run" />
          <ErrorBanner error={resource.error} />
          <Link to="/history">Back to the history</Link>
        </div>
      );
    }
    return <Loading />;
  }

  const exportName = `run-${run.id}`;

  async function cancel() {
    setActionError(null);
    try {
      await runs.cancel(run!.id);
      resource.reload();
    } catch (error) {
      setActionError(error);
    }
  }

  return (
    <div className="page run-detail">
      <PageHeader
        title={
          <>
            Run <span className="mono">{shortId(run.id)}</span> <KindBadge kind={run.kind} />{" "}
            <StatusBadge status={run.status} /> <ExtractedByBadge by={run.extractedBy} />
          </>
        }
        subtitle={<span className="break">{run.url}</span>}
        actions={
          <>
            <button
              type="button"
              className="button"
              onClick={() =>
                downloadText(`${exportName}.json`, JSON.stringify(run, null, 2) + "\n", "application/json")
              }
            >
              Export JSON
            </button>
            <a className="button" href={exportUrl("csv", { id: run.id })} download>
              Export CSV
            </a>
            {run.kind === "extract" && (
              <button type="button" className="button primary" onClick={() => setSaving(true)}>
                Save as query
              </button>
            )}
            {hasArchivedPage(run) && (
              <button type="button" className="button" onClick={() => setReextracting(true)}>
                Re-extract
              </button>
            )}
            <button type="button" className="button" onClick={() => navigate("/", { state: { spec: run.spec } })}>
              Run again
            </button>
          </>
        }
      />
      {saving && <SaveAsQuery runId={run.id} onClose={() => setSaving(false)} />}
      {reextracting && <Reextract run={run} onClose={() => setReextracting(false)} />}
      {actionError !== null && <ErrorBanner error={actionError} />}
      {running && (
        <div className="banner banner-info" role="status">
          <p>
            This run is {run.status}. <Link to={`/runs/${run.id}/live`}>Watch it live</Link> or{" "}
            <button type="button" className="link-button" onClick={cancel}>
              cancel it
            </button>
            .
          </p>
        </div>
      )}

      <dl className="facts summary">
        <div>
          <dt>Created</dt>
          <dd>
            <Time iso={run.createdAt} />
          </dd>
        </div>
        <div>
          <dt>Duration</dt>
          <dd>{formatDuration(runDurationMs(run))}</dd>
        </div>
        <div>
          <dt>Attempts</dt>
          <dd>{run.attempts}</dd>
        </div>
        <div>
          <dt>Steps</dt>
          <dd>{run.steps.length}</dd>
        </div>
        {run.query && (
          <div>
            <dt>Query</dt>
            <dd>
              <Link to={`/queries/${encodeURIComponent(run.query)}`}>{run.query}</Link>
            </dd>
          </div>
        )}
        {run.parent && (
          <div>
            <dt>Crawl</dt>
            <dd>
              <Link to={`/runs/${run.parent}`} className="mono">
                {shortId(run.parent)}
              </Link>
            </dd>
          </div>
        )}
        {run.batch && (
          <div>
            <dt>Batch</dt>
            <dd className="mono">{shortId(run.batch)}</dd>
          </div>
        )}
        <div>
          <dt>Browser time</dt>
          <dd>{formatDuration(run.usage.browserMs ?? null)}</dd>
        </div>
        <div>
          <dt>Model tokens</dt>
          <dd>
            {(run.usage.inputTokens ?? 0).toLocaleString()} in · {(run.usage.outputTokens ?? 0).toLocaleString()} out
          </dd>
        </div>
      </dl>

      {run.error && (
        <section className="section" aria-labelledby="error-title">
          <h2 id="error-title">Error</h2>
          <RunErrorBanner error={run.error} />
        </section>
      )}

      <section className="section" aria-labelledby="result-title">
        <h2 id="result-title">Result</h2>
        {run.status === "queued" || run.status === "running" ? (
          <p className="muted">The result appears when the run finishes.</p>
        ) : run.kind === "crawl" ? (
          <CrawlSummaryView result={run.result} />
        ) : (
          <ResultView kind={run.kind} result={run.result} />
        )}
      </section>

      {run.kind === "crawl" && (
        <CrawlProgress
          run={run}
          steps={run.steps}
          status={run.status}
          startedAt={run.startedAt}
          finishedAt={run.finishedAt}
          now={Date.now()}
        />
      )}

      {run.drift && (
        <section className="section" aria-labelledby="drift-title">
          <h2 id="drift-title">Drift</h2>
          <DriftDetail drift={run.drift} />
        </section>
      )}

      <section className="section" aria-labelledby="trace-title">
        <h2 id="trace-title">
          Trace <span className="count">{run.steps.length}</span>
        </h2>
        <StepList steps={toLiveSteps(run)} emptyText="No steps were recorded." />
      </section>

      <section className="section" aria-labelledby="spec-title">
        <details>
          <summary>
            <h2 id="spec-title" className="inline-heading">
              Spec
            </h2>
          </summary>
          <JsonView value={run.spec} label="Spec" />
        </details>
      </section>
      <p className="hint">
        Export JSON gives this run with its trace; Export CSV has the columns of the history export.
      </p>
    </div>
  );
}
