import { useCallback, useEffect, useReducer, useRef, useState } from "react";
import { Link, useLocation, useParams } from "react-router";
import { ApiError, api, notifyUnauthorized } from "../api/client";
import { runs } from "../api/endpoints";
import { RunStream, type StreamState } from "../api/events";
import { isFinal, type Run, type RunDetail, type RunFrame } from "../api/types";
import { CrawlProgress, CrawlSummaryView } from "../components/CrawlProgress";
import { ResultView } from "../components/ResultView";
import { StepList } from "../components/Steps";
import { ErrorBanner, KindBadge, Loading, PageHeader, RunErrorBanner, StatusBadge } from "../components/ui";
import { formatDuration } from "../lib/format";
import { applyFrame, applySnapshot, initialLiveState, type LiveState } from "../lib/liveRun";
import { useNow } from "../lib/useResource";

type Action = { type: "frame"; frame: RunFrame } | { type: "snapshot"; run: RunDetail };

function reducer(state: LiveState, action: Action): LiveState {
  return action.type === "frame" ? applyFrame(state, action.frame) : applySnapshot(state, action.run);
}

const CONNECTION_LABELS: Record<StreamState, string> = {
  connecting: "Connecting…",
  live: "Live",
  reconnecting: "Reconnecting…",
  closed: "Stream closed",
  unauthorized: "Signed out",
};

export function LiveRun() {
  const { id = "" } = useParams();
  const location = useLocation();
  const submitted = (location.state as { run?: Run } | null)?.run;
  const [run, setRun] = useState<Run | RunDetail | null>(submitted?.id === id ? submitted : null);
  const [live, dispatch] = useReducer(reducer, initialLiveState);
  const [connection, setConnection] = useState<StreamState>("connecting");
  const [loadError, setLoadError] = useState<unknown>(null);
  const [cancelError, setCancelError] = useState<unknown>(null);
  const [cancelling, setCancelling] = useState(false);
  const stream = useRef<RunStream | null>(null);
  const readFinished = useRef(false);

  const readRun = useCallback(async () => {
    try {
      const detail = await runs.get(id);
      setRun(detail);
      dispatch({ type: "snapshot", run: detail });
      setLoadError(null);
      if (isFinal(detail.status)) readFinished.current = true;
    } catch (error) {
      setLoadError(error);
    }
  }, [id]);

  useEffect(() => {
    const current = new RunStream({
      runId: id,
      signedIn: async () => (await api<{ signedIn: boolean }>("/api/session")).signedIn,
      handlers: {
        onFrame: (frame) => dispatch({ type: "frame", frame }),
        onState: (state) => {
          setConnection(state);
          if (state === "unauthorized") notifyUnauthorized();
        },
        // Without a cursor the stream starts "now": a read of the run covers everything before it.
        onOpen: (resumed) => {
          if (!resumed) void readRun();
        },
        onResync: () => void readRun(),
      },
    });
    stream.current = current;
    current.start();
    const online = () => current.reconnectNow();
    window.addEventListener("online", online);
    return () => {
      window.removeEventListener("online", online);
      current.stop();
    };
  }, [id, readRun]);

  const finished = live.status !== null && isFinal(live.status);
  useEffect(() => {
    if (!finished) return;
    stream.current?.stop();
    if (!readFinished.current) void readRun(); // the result, usage and complete observations
  }, [finished, readRun]);

  // While the stream is down (a proxy that refuses WebSockets, a long outage), read the run every few seconds.
  const streamDown = connection === "reconnecting" || connection === "closed";
  useEffect(() => {
    if (finished || !streamDown) return;
    const timer = setInterval(() => void readRun(), 3000);
    return () => clearInterval(timer);
  }, [finished, streamDown, readRun]);

  const now = useNow(!finished && live.startedAt !== null);
  const status = live.status ?? run?.status ?? "queued";
  const startedAt = live.startedAt ?? run?.startedAt ?? null;
  const finishedAt = live.finishedAt ?? run?.finishedAt ?? null;
  const elapsed = startedAt ? Math.max(0, (finishedAt ? Date.parse(finishedAt) : now) - Date.parse(startedAt)) : null;

  async function cancel() {
    setCancelling(true);
    setCancelError(null);
    try {
      const answer = await runs.cancel(id);
      setRun((current) => (current ? { ...current, ...answer } : answer));
    } catch (error) {
      setCancelError(error);
    } finally {
      setCancelling(false);
    }
  }

  if (loadError instanceof ApiError && loadError.status === 404) {
    return (
      <div className="page">
        <PageHeader title="Run not found" />
        <ErrorBanner error={loadError} />
        <Link to="/history">Back to the history</Link>
      </div>
    );
  }

  const detail = run && "steps" in run ? run : null;

  return (
    <div className="page live-run">
      <PageHeader
        title={<>Live run {run && <KindBadge kind={run.kind} />}</>}
        subtitle={run ? <span className="break">{run.url}</span> : <span className="muted">{id}</span>}
        actions={
          <>
            {!finished && (
              <button type="button" className="button danger-outline" onClick={cancel} disabled={cancelling}>
                {cancelling ? "Cancelling…" : "Cancel run"}
              </button>
            )}
            <Link className={`button${finished ? " primary" : ""}`} to={`/runs/${id}`}>
              {finished ? "Open run detail" : "Run detail"}
            </Link>
          </>
        }
      />
      <div className="live-status">
        <span aria-live="polite">
          <StatusBadge status={status} />
        </span>
        <span className="live-elapsed">
          {elapsed === null
            ? "Waiting for a worker…"
            : `${finished ? "Took" : "Running for"} ${formatDuration(elapsed)}`}
        </span>
        {live.attempt > 1 && <span className="muted">attempt {live.attempt}</span>}
        {!finished && (
          <span className={`connection connection-${connection}`}>
            <span className="dot" aria-hidden="true" />
            {CONNECTION_LABELS[connection]}
          </span>
        )}
      </div>
      {cancelError !== null && <ErrorBanner error={cancelError} title="The run could not be cancelled" />}
      {loadError !== null && !(loadError instanceof ApiError && loadError.status === 404) && (
        <ErrorBanner error={loadError} />
      )}
      {live.error && <RunErrorBanner error={live.error} />}

      {run?.kind === "crawl" && (
        <CrawlProgress
          run={run}
          steps={live.steps}
          status={status}
          startedAt={startedAt}
          finishedAt={finishedAt}
          now={now}
        />
      )}

      <section className="section" aria-labelledby="steps-title">
        <h2 id="steps-title">
          Steps <span className="count">{live.steps.length}</span>
        </h2>
        {run === null && live.steps.length === 0 && !loadError ? (
          <Loading label="Waiting for the first step…" />
        ) : (
          <StepList
            steps={live.steps}
            live
            emptyText={finished ? "This run recorded no steps." : "Steps appear here as the worker executes them."}
          />
        )}
        {!finished && live.steps.length > 0 && (
          <p className="working" role="status">
            <span className="spinner" aria-hidden="true" /> Working on the next step…
          </p>
        )}
      </section>

      {finished && detail && detail.status === "succeeded" && (
        <section className="section" aria-labelledby="result-title">
          <h2 id="result-title">Result</h2>
          {detail.kind === "crawl" ? (
            <CrawlSummaryView result={detail.result} />
          ) : (
            <ResultView kind={detail.kind} result={detail.result} />
          )}
        </section>
      )}
    </div>
  );
}
